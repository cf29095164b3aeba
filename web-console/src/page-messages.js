// Message browser: records of a partition from an offset, a time, or the last N; key and value
// shown as pretty JSON, else text, else hex; headers and timestamps; a filter; JSON export;
// and a form that produces one record.
import { api } from './api.js';
import { download, field, fill, h, statusLine } from './dom.js';
import { formatCount, formatTimestamp, parseUtcDateTime, plural } from './format.js';
import { BROWSE_FETCHES_MAX, BROWSE_FETCH_BYTES, BROWSE_RECORDS_MAX, VALUE_PREVIEW_BYTES } from './limits.js';
import { decodeRecord, exportRecords, recordMatches, textToBase64 } from './records.js';

function payloadView(p, testid) {
  const long = p.text.length > VALUE_PREVIEW_BYTES;
  const pre = h('pre', { 'data-testid': testid }, long ? `${p.text.slice(0, VALUE_PREVIEW_BYTES)}…` : p.text);
  const more = long ? h('button', { type: 'button', class: 'secondary', onclick: (ev) => { pre.textContent = p.text; ev.target.remove(); } },
    `show all ${formatCount(p.text.length)} characters`) : null;
  return h('div', {}, h('span', { class: 'kind' }, p.kind === 'null' ? 'null' : `${p.kind}, ${formatCount(p.size)} B`), pre, more);
}

function recordView(r) {
  return h('article', { class: 'record', 'data-testid': 'record', dataset: { offset: r.offset } },
    h('div', { class: 'meta' },
      h('div', {}, 'partition ', h('b', {}, String(r.partition)), ' offset ', h('b', { 'data-testid': 'record-offset' }, String(r.offset))),
      h('div', {}, formatTimestamp(r.timestamp), ' UTC'),
      r.headers.length ? h('div', { class: 'headers' }, 'headers:', h('ul', {}, r.headers.map(
        (x) => h('li', {}, h('code', {}, x.key), ' = ', h('code', {}, x.value.text))))) : null),
    h('div', {}, h('div', { class: 'label muted' }, 'key'), payloadView(r.key, 'record-key')),
    h('div', {}, h('div', { class: 'label muted' }, 'value'), payloadView(r.value, 'record-value')));
}

/** "a=1\nb=2" -> v3 headers [{name, value: base64}]. */
function parseHeaderLines(text) {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).map((line) => {
    const at = line.indexOf('=');
    if (at <= 0) throw new Error(`header line is not name=value: "${line}"`);
    return { name: line.slice(0, at), value: textToBase64(line.slice(at + 1)) };
  });
}

/** A partition in the picker: its id and offset range (high watermark - log start), as the topic
 *  page counts it: offsets, not records (compaction gaps and transaction markers sit in it too). */
export function partitionLabel(p) {
  return `${p.partition_id} (${plural(p.high_watermark - p.log_start_offset, 'offset')})`;
}

/** The v3 value (or key) of a form field: JSON when asked, or "auto" and it parses. */
export function typedData(text, type) {
  if (type === 'JSON' || (type === 'auto' && text.trim() !== '')) {
    try {
      return { type: 'JSON', data: JSON.parse(text) };
    } catch (e) {
      if (type === 'JSON') throw new Error(`value is not JSON: ${e.message}`);
    }
  }
  return { type: 'STRING', data: text };
}

function produceForm(getTopic, onProduced) {
  const status = statusLine();
  const partition = h('input', { name: 'partition', type: 'number', min: 0, placeholder: 'by key (murmur2) or spread' });
  const key = h('input', { name: 'key', placeholder: 'no key', autocomplete: 'off' });
  const value = h('textarea', { name: 'value', placeholder: '{"hello": "world"}' });
  const type = h('select', { name: 'value_type' }, h('option', { value: 'auto' }, 'JSON if it parses, else text'),
    h('option', { value: 'JSON' }, 'JSON'), h('option', { value: 'STRING' }, 'text'));
  const headers = h('textarea', { name: 'headers', placeholder: 'source=console' });
  const form = h('form', {
    'data-testid': 'produce-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      status.clear();
      const topic = getTopic();
      try {
        if (!topic) throw new Error('choose a topic first');
        const record = { value: typedData(value.value, type.value), headers: parseHeaderLines(headers.value) };
        if (key.value !== '') record.key = { type: 'STRING', data: key.value };
        if (partition.value !== '') record.partition_id = Number(partition.value);
        const report = await api.produce(topic, record);
        status.ok(`produced to ${topic} partition ${report.partition_id} at offset ${report.offset}`);
        onProduced(report);
      } catch (e) {
        status.show(e);
      }
    },
  }, field('partition', partition), field('key', key), field('value type', type),
  h('div', { class: 'field wide' }, field('value', value,
    h('span', { 'data-testid': 'tombstone-hint' }, 'A tombstone (a null value: on a compacted topic it deletes the key): '
      + 'a key, the value ', h('code', {}, 'null'), ' and the value type "JSON" or "JSON if it parses". '
      + 'An empty value is an empty string, not null.'))), h('div', { class: 'field wide' }, field('headers (name=value lines)', headers)),
  h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Produce')));
  // The form produces to the topic chosen in the browse form below: the summary names it.
  const summary = h('summary', { 'data-testid': 'produce-summary' }, 'Produce a record');
  const panel = h('details', { class: 'panel', 'data-testid': 'produce-panel' }, summary, form, status.el);
  panel.refreshTopic = () => {
    const topic = getTopic();
    summary.textContent = topic ? `Produce a record to ${topic}` : 'Produce a record';
  };
  return panel;
}

export async function render(view, route, ctx) {
  const q = route.query;
  const status = statusLine();
  const topicSel = h('select', { name: 'topic', 'data-testid': 'topic' });
  const partSel = h('select', { name: 'partition', 'data-testid': 'partition' });
  const mode = h('select', { name: 'from', 'data-testid': 'from' },
    h('option', { value: 'last' }, 'the last N records'), h('option', { value: 'offset' }, 'an offset'),
    h('option', { value: 'time' }, 'a time (UTC)'));
  const offset = h('input', { name: 'offset', type: 'number', min: 0, value: q.get('offset') ?? '0' });
  const time = h('input', { name: 'time', type: 'datetime-local', step: 1 });
  const limit = h('input', { name: 'limit', type: 'number', min: 1, max: BROWSE_RECORDS_MAX, value: 50 });
  const fKey = h('input', { name: 'filter_key', placeholder: 'key contains' });
  const fHeader = h('input', { name: 'filter_header', placeholder: 'header name=value contains' });
  const fValue = h('input', { name: 'filter_value', placeholder: 'value contains', 'data-testid': 'filter-value' });
  const summary = h('span', { class: 'muted', 'data-testid': 'browse-summary' });
  const list = h('div', { class: 'records', 'data-testid': 'records' });
  let raw = [];
  let decoded = [];
  let shown = [];

  const offsetField = field('offset', offset);
  const timeField = field('time', time);
  const syncMode = () => {
    offsetField.hidden = mode.value !== 'offset';
    timeField.hidden = mode.value !== 'time';
  };
  mode.addEventListener('change', syncMode);

  const redraw = () => {
    const filter = { key: fKey.value, header: fHeader.value, value: fValue.value };
    shown = decoded.map((d, i) => [d, i]).filter(([d]) => recordMatches(d, filter));
    fill(list, shown.length ? shown.map(([d]) => recordView(d)) : h('p', { class: 'muted' }, raw.length ? 'no record matches the filter' : 'no records'));
    summary.textContent = `${shown.length} of ${raw.length} loaded records shown`;
  };
  for (const f of [fKey, fHeader, fValue]) f.addEventListener('input', redraw);

  const fillPartitions = async (wanted) => {
    const topic = topicSel.value;
    if (!topic) return;
    const parts = await api.partitions(topic);
    fill(partSel, parts.map((p) => h('option', { value: p.partition_id }, partitionLabel(p))));
    if (wanted !== null && wanted !== undefined && parts.some((p) => String(p.partition_id) === String(wanted))) partSel.value = String(wanted);
  };

  const load = async () => {
    status.clear();
    const topic = topicSel.value;
    const partition = Number(partSel.value);
    const want = Math.min(Math.max(1, Number(limit.value) || 1), BROWSE_RECORDS_MAX);
    history.replaceState(null, '', `#/messages?topic=${encodeURIComponent(topic)}&partition=${partition}`);
    try {
      let start;
      if (mode.value === 'offset') {
        start = Number(offset.value);
      } else if (mode.value === 'time') {
        const ms = parseUtcDateTime(time.value);
        if (ms === null) throw new Error('choose a time');
        const found = await api.offsetForTime(topic, partition, ms);
        if (found.offset === null) {
          raw = [];
          decoded = [];
          redraw();
          summary.textContent = `no record at or after ${formatTimestamp(ms)} UTC`;
          return;
        }
        start = found.offset;
      } else {
        const o = await api.offsets(topic, partition);
        start = Math.max(o.beginning_offset, o.end_offset - want);
      }
      const got = [];
      for (let i = 0; i < BROWSE_FETCHES_MAX && got.length < want; i++) {
        const batch = await api.records(topic, partition, start, BROWSE_FETCH_BYTES);
        if (batch.length === 0) break;
        got.push(...batch);
        start = batch[batch.length - 1].offset + 1;
      }
      raw = got.slice(0, want);
      decoded = raw.map(decodeRecord);
      redraw();
    } catch (e) {
      // What an earlier load showed must not stay under this load's error as if it answered it.
      raw = [];
      decoded = [];
      redraw();
      summary.textContent = 'nothing loaded: see the error above';
      status.show(e);
    }
  };

  /** The page of `limit` records before the first or after the last one shown. */
  const turnPage = async (direction) => {
    if (!raw.length) return;
    const want = Math.min(Math.max(1, Number(limit.value) || 1), BROWSE_RECORDS_MAX);
    let start = direction > 0 ? raw[raw.length - 1].offset + 1 : raw[0].offset - want;
    try {
      if (direction < 0) start = Math.max((await api.offsets(topicSel.value, Number(partSel.value))).beginning_offset, start);
    } catch (e) {
      return status.show(e);
    }
    mode.value = 'offset';
    offset.value = String(start);
    syncMode();
    await load();
  };
  const earlier = h('button', { type: 'button', class: 'secondary', 'data-testid': 'earlier', onclick: () => turnPage(-1) }, '◀ earlier');
  const later = h('button', { type: 'button', class: 'secondary', 'data-testid': 'later', onclick: () => turnPage(1) }, 'later ▶');

  const exportButton = h('button', { type: 'button', class: 'secondary', 'data-testid': 'export', onclick: () => {
    const rows = shown.map(([, i]) => i);
    const text = JSON.stringify(exportRecords(rows.map((i) => decoded[i]), rows.map((i) => raw[i])), null, 2);
    download(`${topicSel.value}-${partSel.value}-records.json`, text);
  } }, 'Export shown as JSON');

  const producePanel = produceForm(() => topicSel.value, async (report) => {
    await fillPartitions(report.partition_id);
    mode.value = 'last';
    syncMode();
    await load();
  });
  fill(view, h('h1', {}, 'Messages'),
    producePanel,
    h('form', { class: 'panel form', 'data-testid': 'browse-form', onsubmit: (ev) => { ev.preventDefault(); load(); } },
      field('topic', topicSel), field('partition', partSel), field('from', mode), offsetField, timeField,
      field(`records (at most ${BROWSE_RECORDS_MAX})`, limit), h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Load'))),
    status.el,
    h('div', { class: 'panel form' }, field('filter: key', fKey), field('filter: header', fHeader), field('filter: value', fValue)),
    h('div', { class: 'toolbar' }, summary, h('span', { class: 'grow' }), earlier, later, exportButton),
    list);
  syncMode();

  try {
    const topics = (await api.topics()).filter((t) => !t.is_internal);
    fill(topicSel, topics.map((t) => h('option', { value: t.topic_name }, t.topic_name)));
    if (topics.length === 0) {
      list.append(h('p', { class: 'muted' }, 'No topics you may see: create one on the Topics page (a topic is listed only to those with DESCRIBE on it).'));
      return;
    }
    if (q.get('topic')) topicSel.value = q.get('topic');
    producePanel.refreshTopic();
    topicSel.addEventListener('change', async () => {
      producePanel.refreshTopic();
      await fillPartitions(0).catch((e) => status.show(e));
      load();
    });
    await fillPartitions(q.get('partition') ?? 0);
    if (q.get('offset') !== null) {
      mode.value = 'offset';
      syncMode();
    }
    await load();
  } catch (e) {
    status.show(e);
  }
}
