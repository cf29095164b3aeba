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
  if (typeof n === 'bigint') return n.toLocaleString('en-US');   // exact (parseJsonExact)
  return Number(n).toLocaleString('en-US');
}

// A string no server text holds (it starts with NUL): marks an integer literal parseJsonExact
// turns into a BigInt; written into the JSON text escaped.
const BIG_INTEGER_MARK = '\u0000int64:';
const BIG_INTEGER_MARK_JSON = '\\u0000int64:';

/**
 * JSON.parse, except that an integer beyond Number.MAX_SAFE_INTEGER (2^53 - 1) in either sign -
 * 64-bit offsets, timestamps and sentinels such as 9223372036854775807 (Long.MAX_VALUE) - becomes
 * a BigInt holding its exact value instead of the nearest double (9223372036854775807 read as
 * 9223372036854775808). Every other value is what JSON.parse gives. Fractions and exponents are
 * left to JSON.parse. Throws SyntaxError as JSON.parse does.
 */
export function parseJsonExact(text) {
  let marked = null;   // the text with big integer literals turned into marked strings, when any
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {   // skip a string, escapes included
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < text.length && text[j] >= '0' && text[j] <= '9') j += 1;
      const fraction = j < text.length && (text[j] === '.' || text[j] === 'e' || text[j] === 'E');
      const literal = text.slice(i, j);
      if (!fraction && literal.replace('-', '').length >= 16 && !Number.isSafeInteger(Number(literal))) {
        marked = (marked ?? '') + text.slice(from, i) + '"' + BIG_INTEGER_MARK_JSON + literal + '"';
        from = j;
      }
      i = j;
      continue;
    }
    i += 1;
  }
  if (marked === null) return JSON.parse(text);
  return JSON.parse(marked + text.slice(from), (_key, value) =>
    (typeof value === 'string' && value.startsWith(BIG_INTEGER_MARK) ? BigInt(value.slice(BIG_INTEGER_MARK.length)) : value));
}

/** A per-second rate: 0.25 -> "0.25", 1234.5 -> "1,235"; null -> "-". */
export function formatRate(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '-';
  if (n === 0) return '0';
  if (Math.abs(n) < 10) return n.toFixed(2);
  return Math.round(n).toLocaleString('en-US');
}

/** A BigInt, or an integer's text, beyond 2^53 in either sign as a BigInt; null for anything else. */
function exactInteger(v) {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? null : v;
  if (typeof v !== 'string' || !/^-?\d+$/.test(v.trim()) || Number.isSafeInteger(Number(v))) return null;
  return BigInt(v.trim());
}

/** ms since the epoch -> "2026-11-29 10:20:31.123" in UTC (the broker's logs are UTC too). */
export function formatTimestamp(ms) {
  if (ms === null || ms === undefined || ms < 0) return '-';
  if (typeof ms === 'bigint') return String(ms);   // beyond 2^53: past any date, shown exactly
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return String(ms);
  return d.toISOString().replace('T', ' ').replace('Z', '');
}

/** A duration in ms as the largest fitting unit: 604800000 -> "7 d", -1 -> "unlimited". */
export function formatDurationMs(ms) {
  const exact = exactInteger(ms);
  if (exact !== null) {   // beyond 2^53 (Long.MAX_VALUE is a common "forever"): BigInt arithmetic
    if (exact < 0n) return 'unlimited';
    const units = [['d', 86400000n], ['h', 3600000n], ['min', 60000n], ['s', 1000n]];
    for (const [name, size] of units) {
      if (exact >= size && exact % size === 0n) return `${exact / size} ${name}`;
    }
    return `${exact} ms`;
  }
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

/**
 * The members of the metadata quorum as the overview lists them: every voter, then every observer
 * (a broker-only node, process.roles=broker: it fetches the metadata log but never votes; KIP-595),
 * each {replica_id, kind: 'voter' | 'voter, controller only' | 'voter, not reachable (never fetched)' |
 * 'observer', log_end_offset, lag, leader_only}
 * (offsets null when the node answering does not know them - only the quorum leader tracks them;
 * leader_only is then true when a follower answered while a leader is known, so the page says
 * where they are instead of a bare "-"; a follower's own log end offset is known to it and shown).
 * `q` is /v3/.../quorum; `brokerIds`, when given, the registered brokers: a voter not among them is
 * a dedicated controller (process.roles=controller, KIP-631).
 */
export function quorumMembers(q, brokerIds = null) {
  const answeredByFollower = quorumAnsweredByFollower(q);
  const row = (kind) => (v) => {
    const own = answeredByFollower && v.replica_id === q.node_id && typeof q.log_end_offset === 'number';
    const logEndOffset = v.log_end_offset ?? (own ? q.log_end_offset : null);
    const lag = v.lag ?? null;
    return { replica_id: v.replica_id, kind, log_end_offset: logEndOffset, lag,
      leader_only: answeredByFollower && (logEndOffset === null || lag === null) };
  };
  // The quorum leader (q answered by it) knows which voters ever fetched from it: one that never
  // did (not started, or cut off) is not reachable, its roles unknown - not a dedicated controller.
  const answeredByLeader = q.leader_id != null && q.leader_id === q.node_id;
  const neverFetched = (v) => answeredByLeader && v.replica_id !== q.leader_id && v.last_fetch_timestamp == null;
  const voterKind = (v) => {
    if (brokerIds && brokerIds.includes(v.replica_id)) return 'voter';
    if (neverFetched(v)) return 'voter, not reachable (never fetched)';
    return brokerIds ? 'voter, controller only' : 'voter';
  };
  return [...(q.voters ?? []).map((v) => row(voterKind(v))(v)), ...(q.observers ?? []).map(row('observer'))];
}

/**
 * True when `q` (/v3/.../quorum) was answered by a node that is not the quorum leader while a
 * leader is known: it knows the leader, epoch, high watermark, voters and its own log end offset
 * (the state it replicates), not the members' log end offsets and lag (leader-only, KIP-595).
 */
export function quorumAnsweredByFollower(q) {
  return q != null && q.leader_id != null && typeof q.node_id === 'number' && q.node_id !== q.leader_id;
}

/** The controller tile: a broker that also controls, or a dedicated controller (not a broker). */
export function controllerLabel(controllerId, brokerIds) {
  if (controllerId === null) return 'electing';
  return brokerIds.includes(controllerId) ? `broker ${controllerId}` : `node ${controllerId} (dedicated controller)`;
}

/**
 * A broker's roles in the overview: a voter (broker and controller), also the active controller
 * when it leads the quorum, or an observer (broker only).
 */
export function brokerRole(id, controllerId, q) {
  if (id === controllerId) return 'broker, voter, active controller';
  if ((q?.observers ?? []).some((o) => o.replica_id === id)) return 'broker only (observer)';
  if ((q?.voters ?? []).some((v) => v.replica_id === id)) return 'broker, voter';
  return 'broker';
}

/**
 * A bucket of the delayed-records histogram (GET /v3/clusters/{c}/delayed-records, due_histogram:
 * records due in (due_after_ms, due_within_ms] from now, either bound null = open) as a label:
 * (null, 0) -> "due now", (0, 1000) -> "within 1 s", (86400000, null) -> "in more than 1 d".
 */
export function dueBucketLabel(afterMs, withinMs) {
  if (afterMs === null || afterMs === undefined) return 'due now';
  if (afterMs === 0 && withinMs !== null && withinMs !== undefined) return `within ${formatDurationMs(withinMs)}`;
  if (withinMs === null || withinMs === undefined) return `in more than ${formatDurationMs(afterMs)}`;
  return `in ${formatDurationMs(afterMs)} to ${formatDurationMs(withinMs)}`;
}

/** A time relative to `nowMs` in words: 1500 ms ahead -> "in 1.5 s", 2000 behind -> "2.0 s ago". */
export function formatDue(dueMs, nowMs) {
  if (dueMs === null || dueMs === undefined) return '-';
  const d = dueMs - nowMs;
  const abs = Math.abs(d);
  const text = abs < 1000 ? `${abs} ms` : abs < 120000 ? `${(abs / 1000).toFixed(1)} s`
    : abs < 7200000 ? `${(abs / 60000).toFixed(1)} min` : `${(abs / 3600000).toFixed(1)} h`;
  return d >= 0 ? `in ${text}` : `${text} ago`;
}

/**
 * A node's own role as its /quorum answer says: true for a dedicated controller
 * (process.roles=controller, KIP-631), a voter that is not a registered broker. It holds no
 * partition, so its "stored" figure is always 0 and its records pages answer 421.
 */
export function isDedicatedController(q, brokerIds) {
  if (!q || typeof q.node_id !== 'number') return false;
  return (q.voters ?? []).some((v) => v.replica_id === q.node_id) && !brokerIds.includes(q.node_id);
}

/** http(s) URLs in a message, without the punctuation that ends a sentence or a list. */
const URL_IN_TEXT = /https?:\/\/[^\s,;'"()<>]+[^\s,;'"()<>.:]/g;

/**
 * A message cut into text and URL pieces, [{text}, {text, url}, ...], so an error box can make
 * the URLs links (a dedicated controller's 421 names the brokers to use). A bare origin
 * (http://host:port, as the 421 names a broker) links to that node's console at `hash`, the page
 * being looked at; any other URL links to itself.
 */
export function linkPieces(message, hash = '') {
  const out = [];
  let at = 0;
  for (const m of String(message).matchAll(URL_IN_TEXT)) {
    if (m.index > at) out.push({ text: message.slice(at, m.index) });
    const url = m[0];
    const bareOrigin = /^https?:\/\/[^/]+\/?$/.test(url);
    out.push({ text: url, url: bareOrigin ? `${url.replace(/\/$/, '')}/console/${hash}` : url });
    at = m.index + url.length;
  }
  if (at < String(message).length) out.push({ text: String(message).slice(at) });
  return out;
}
