// Number, size and time formatting. Pure: no DOM (unit-tested under node).

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** 1536 -> "1.5 KiB"; null/undefined -> "-". */
export function formatBytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '-';
  let v = Number(n);
  let u = 0;
  while (Math.abs(v) >= 1024 && u < BYTE_UNITS.length - 1) {
    v /= 1024;
    u += 1;
  }
  return `${u === 0 ? v.toFixed(0) : v.toFixed(v < 10 ? 2 : 1)} ${BYTE_UNITS[u]}`;
}

/** 1234567 -> "1,234,567"; null -> "-". */
export function formatCount(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '-';
  return Number(n).toLocaleString('en-US');
}

/** A per-second rate: 0.25 -> "0.25", 1234.5 -> "1,235"; null -> "-". */
export function formatRate(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '-';
  if (n === 0) return '0';
  if (Math.abs(n) < 10) return n.toFixed(2);
  return Math.round(n).toLocaleString('en-US');
}

/** ms since the epoch -> "2026-11-29 10:20:31.123" in UTC (the broker's logs are UTC too). */
export function formatTimestamp(ms) {
  if (ms === null || ms === undefined || ms < 0) return '-';
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return String(ms);
  return d.toISOString().replace('T', ' ').replace('Z', '');
}

/** A duration in ms as the largest fitting unit: 604800000 -> "7 d", -1 -> "unlimited". */
export function formatDurationMs(ms) {
  const n = Number(ms);
  if (!Number.isFinite(n)) return String(ms);
  if (n < 0) return 'unlimited';
  const units = [['d', 86400000], ['h', 3600000], ['min', 60000], ['s', 1000]];
  for (const [name, size] of units) {
    if (n >= size && n % size === 0) return `${n / size} ${name}`;
  }
  return `${n} ms`;
}

/** "2026-11-29T10:20" (a datetime-local input, read as UTC) -> ms, or null when malformed. */
export function parseUtcDateTime(text) {
  if (!text) return null;
  const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`);
  return Number.isNaN(ms) ? null : ms;
}

/** (1, 'record') -> "1 record", (3, 'record') -> "3 records" (counts formatted). */
export function plural(n, noun) {
  return `${formatCount(n)} ${noun}${n === 1 ? '' : 's'}`;
}
