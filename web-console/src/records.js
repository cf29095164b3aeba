// Decoding record keys, values and headers for display. Pure: no DOM (unit-tested under node).

/** base64 text -> Uint8Array; null stays null. Throws on malformed base64. */
export function fromBase64(text) {
  if (text === null || text === undefined) return null;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Uint8Array -> base64 text. */
export function toBase64(bytes) {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** UTF-8 text -> base64 (header values are base64 in the API). */
export function textToBase64(text) {
  return toBase64(new TextEncoder().encode(text));
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Whether every code point is printable text (tabs and newlines allowed). */
function printable(text) {
  // Control characters other than \t \n \r, and U+FFFD left by lossy decoding.
  return !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/.test(text);
}

/** "00000000  7b 22 61 22  ...  {"a"..." lines, 16 bytes a line (xxd's layout). */
export function hexDump(bytes) {
  const lines = [];
  for (let at = 0; at < bytes.length; at += 16) {
    const row = bytes.subarray(at, at + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${at.toString(16).padStart(8, '0')}  ${hex.padEnd(47, ' ')}  ${ascii}`);
  }
  return lines.join('\n');
}

/**
 * How to show some bytes: {kind: 'null'|'json'|'text'|'hex', text, size}.
 * JSON (objects and arrays, or any JSON value) is pretty-printed; other UTF-8 text is shown as
 * is; anything else as a hex dump.
 */
export function decodePayload(bytes) {
  if (bytes === null) return { kind: 'null', text: 'null', size: 0 };
  let text;
  try {
    text = utf8.decode(bytes);
  } catch (e) {
    return { kind: 'hex', text: hexDump(bytes), size: bytes.length };
  }
  if (!printable(text)) return { kind: 'hex', text: hexDump(bytes), size: bytes.length };
  const trimmed = text.trim();
  if (trimmed !== '' && /^[[{"\-0-9tfn]/.test(trimmed)) {
    try {
      return { kind: 'json', text: JSON.stringify(JSON.parse(trimmed), null, 2), size: bytes.length };
    } catch (e) {
      // not JSON: plain text below
    }
  }
  return { kind: 'text', text, size: bytes.length };
}

/**
 * A record of the API (base64 key, value and header values) decoded for display and filtering:
 * {partition, offset, timestamp, key, value, headers: [{key, value}]} with key/value as
 * decodePayload() results and header values as text (or hex).
 */
export function decodeRecord(r) {
  return {
    topic: r.topic,
    partition: r.partition,
    offset: r.offset,
    timestamp: r.timestamp,
    key: decodePayload(fromBase64(r.key)),
    value: decodePayload(fromBase64(r.value)),
    headers: (r.headers || []).map((h) => ({ key: h.key, value: decodePayload(fromBase64(h.value)) })),
  };
}

/** Whether a decoded record matches a filter: {key, header, value} substrings (case-insensitive;
 *  empty ones match anything). `header` matches "name" or "name=value" text. */
export function recordMatches(record, filter) {
  const has = (text, needle) => !needle || (text || '').toLowerCase().includes(needle.toLowerCase());
  if (!has(record.key.text, filter.key)) return false;
  if (!has(record.value.text, filter.value)) return false;
  if (filter.header) {
    return record.headers.some((h) => has(`${h.key}=${h.value.text}`, filter.header));
  }
  return true;
}

/** The shown records as exported JSON: readable values (JSON embedded, text as strings, other
 *  bytes as base64 under *_base64) so the file can be read and replayed. */
export function exportRecords(decoded, raw) {
  return decoded.map((d, i) => {
    const r = raw[i];
    const payload = (p, base64) => {
      if (p.kind === 'null') return {};
      if (p.kind === 'json') return { json: JSON.parse(p.text) };
      if (p.kind === 'text') return { text: p.text };
      return { base64 };
    };
    return {
      topic: d.topic,
      partition: d.partition,
      offset: d.offset,
      timestamp: d.timestamp,
      key: r.key === null ? null : payload(d.key, r.key),
      value: r.value === null ? null : payload(d.value, r.value),
      headers: (r.headers || []).map((h) => ({ key: h.key, value: h.value })),
    };
  });
}
