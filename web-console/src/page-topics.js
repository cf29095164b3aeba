// Topics: every topic with partitions, replication factor, size, cleanup policy (compacted topics
// marked, with the log cleaner's dirty ratio, bytes cleaned, cleaner time and last clean),
// retention, records/s and its under-replicated and offline partitions (the broker's counts from the cluster's metadata);
// create and delete.
import { missingPermission } from './acls.js';
import { api, mapLimited } from './api.js';
import { confirmButton, field, fill, h, link, statusLine, table } from './dom.js';
import { formatBytes, formatCount, formatDurationMs, formatRate, formatTimestamp } from './format.js';
import { DESCRIBE_CONCURRENCY_MAX, METRICS_POLL_MS } from './limits.js';
import { metricsNote, sampleMetrics } from './page-overview.js';

/** The topic list and configs are reloaded every this many metrics samples. */
const LIST_EVERY_SAMPLES = 5;

/** "a=1\nb=2" -> [{name: 'a', value: '1'}, ...]; throws naming a malformed line. */
export function parseConfigLines(text) {
  const out = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const at = line.indexOf('=');
    if (at <= 0) throw new Error(`configs line ${i + 1} is not name=value: "${line}"`);
    out.push({ name: line.slice(0, at).trim(), value: line.slice(at + 1).trim() });
  }
  return out;
}

/** How long the name field rests before a dry run asks whether a principal without CREATE on the
 *  cluster may create that one topic (CREATE on the topic), ms: one ask per pause, not per key. */
const CREATE_DRY_RUN_DELAY_MS = 300;

/**
 * The create form: {el, permit(authorized)} where `authorized` is the cluster's
 * authorized_operations. Kafka's CreateTopics needs CREATE on the cluster, else CREATE on the topic:
 * without the first, Create is disabled with a title naming it, and a dry run (validate_only) of
 * the typed name enables it when CREATE on that topic allows it.
 */
function createForm(onCreated) {
  const status = statusLine();
  const name = h('input', { name: 'topic_name', required: true, placeholder: 'orders', autocomplete: 'off' });
  const partitions = h('input', { name: 'partitions_count', type: 'number', min: 1, value: 3 });
  const rf = h('input', { name: 'replication_factor', type: 'number', min: 1, value: 1 });
  const retention = h('input', { name: 'retention.ms', placeholder: 'default (broker log.retention.ms)' });
  const configs = h('textarea', { name: 'configs', placeholder: 'segment.bytes=1073741824\ncleanup.policy=delete' });
  const submit = h('button', { type: 'submit', 'data-testid': 'create-topic-submit' }, 'Create topic');
  let clusterRefusal = null;   // null: CREATE on the cluster (or not known yet)
  let dryRun = null;
  const refuse = (title) => { submit.disabled = title !== null; submit.title = title || ''; };
  const checkName = () => {
    clearTimeout(dryRun);
    const topic = name.value.trim();
    if (clusterRefusal === null || !topic) return refuse(clusterRefusal);
    refuse(clusterRefusal);
    dryRun = setTimeout(async () => {
      try {
        await api.createTopic({ topic_name: topic, validate_only: true });
        refuse(null);
      } catch (e) {
        // Only a 403 is a missing permission; any other refusal is shown when really creating.
        refuse(e.status === 403 ? `${clusterRefusal}, or CREATE on the topic ${topic}` : null);
      }
    }, CREATE_DRY_RUN_DELAY_MS);
  };
  name.addEventListener('input', checkName);
  const form = h('form', {
    'data-testid': 'create-topic',
    onsubmit: async (ev) => {
      ev.preventDefault();
      status.clear();
      try {
        const body = { topic_name: name.value.trim(), partitions_count: Number(partitions.value),
          replication_factor: Number(rf.value), configs: parseConfigLines(configs.value) };
        if (retention.value.trim()) body.configs.push({ name: 'retention.ms', value: retention.value.trim() });
        await api.createTopic(body);
        status.ok(`created topic ${body.topic_name}`);
        name.value = '';
        checkName();
        onCreated();
      } catch (e) {
        status.show(e);
      }
    },
  },
  field('name', name), field('partitions', partitions), field('replication factor', rf),
  field('retention.ms', retention), field('other configs (name=value lines)', configs, null),
  h('div', { class: 'actions' }, submit));
  return {
    el: h('details', { class: 'panel' }, h('summary', {}, 'Create a topic'), form, status.el),
    permit(authorized) {
      const refusal = missingPermission(authorized, 'CREATE');
      if (refusal === clusterRefusal) return;
      clusterRefusal = refusal;
      checkName();
    },
  };
}

/** A partition-health count of one topic (GET /v3/.../topics: under_replicated_partitions_count,
 *  offline_partitions_count, from the cluster's metadata): a red badge when above 0. */
function healthCell(count, testid) {
  if (typeof count !== 'number') return '-';
  return h('span', { class: `badge ${count > 0 ? 'bad' : 'good'}`, 'data-testid': testid }, formatCount(count));
}

/** When the log cleaner last ended a pass ({last_clean_s}: -1 never). */
export function lastCleanText(cleaner) {
  return cleaner && cleaner.last_clean_s >= 0 ? formatTimestamp(cleaner.last_clean_s * 1000) : 'never';
}

/** cleanup.policy, and for a compacted topic the log cleaner's figures: the dirtiest partition's
 *  dirty ratio, the bytes cleaned and the cleaner's time so far, and when the last pass ended. */
function cleanupCell(policy, cleaner) {
  if (policy === undefined) return '-';
  if (!policy.includes('compact')) return policy;
  const figures = cleaner ? ` · dirty ${Math.round(cleaner.dirty_ratio * 100)}% · cleaned ${formatBytes(cleaner.bytes_cleaned)}`
    + ` in ${cleaner.cleaner_s.toFixed(1)} s · last clean ${lastCleanText(cleaner)}` : '';
  return h('span', { class: 'compacted', title: 'log compaction keeps the latest value of every key', 'data-testid': 'compacted' },
    `${policy}${figures}`);
}

export async function render(view, route, ctx) {
  const status = statusLine();
  const showInternal = h('input', { type: 'checkbox', 'data-testid': 'show-internal' });
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading topics…'));
  const refusedMetrics = h('div');
  let topics = null;
  let configs = new Map();
  let lastRates = null;
  let lastSummary = null;
  let samples = 0;

  /** Delete, disabled naming the missing permission when the topic's authorized_operations (the
   *  v3 list's, for the caller) lack DELETE, as on the topic's own page. */
  const deleteButton = (t) => {
    const button = confirmButton('Delete', `Delete ${t.topic_name}?`, async () => {
      try {
        await api.deleteTopic(t.topic_name);
        status.ok(`deleted topic ${t.topic_name}`);
        samples = 0;
        await refreshList();
      } catch (e) {
        status.show(e);
      }
    }, { 'data-testid': `delete-${t.topic_name}` });
    const missing = Array.isArray(t.authorized_operations)
      ? missingPermission(t.authorized_operations, 'DELETE', `TOPIC ${t.topic_name}`) : null;
    if (missing) {
      button.disabled = true;
      button.title = missing;
    }
    return button;
  };

  const draw = () => {
    if (!topics) return;
    const shown = topics.filter((t) => showInternal.checked || !t.is_internal);
    fill(list, table([
      { title: 'topic', cell: (t) => link(`/topics/${encodeURIComponent(t.topic_name)}`, t.topic_name) },
      { title: 'partitions', num: true, cell: (t) => String(t.partitions_count) },
      { title: 'replication', num: true, cell: (t) => String(t.replication_factor) },
      { title: 'under-replicated', num: true, cell: (t) => healthCell(t.under_replicated_partitions_count, `under-replicated-${t.topic_name}`) },
      { title: 'offline', num: true, cell: (t) => healthCell(t.offline_partitions_count, `offline-${t.topic_name}`) },
      // No /metrics sample (not read yet, or refused: http.metrics.authentication): unknown, not 0 B.
      { title: 'size', num: true, cell: (t) => (t.is_internal || !lastSummary ? '-' : formatBytes(lastSummary.topics[t.topic_name]?.size_bytes ?? 0)) },
      { title: 'cleanup', cell: (t) => cleanupCell(configs.get(t.topic_name)?.['cleanup.policy'], lastSummary?.cleaner?.[t.topic_name]) },
      { title: 'retention.ms', cell: (t) => { const v = configs.get(t.topic_name)?.['retention.ms']; return v === undefined ? '-' : formatDurationMs(v); } },
      { title: 'records in/s', num: true, cell: (t) => formatRate(lastRates ? (lastRates.topics[t.topic_name]?.records_in ?? 0) : null) },
      { title: '', cell: (t) => (t.is_internal ? '' : deleteButton(t)) },
    ], shown, { empty: 'no topics you may see: create one above (a topic is listed only to those with DESCRIBE on it)', testid: 'topics-table' }));
  };

  const refreshList = async () => {
    const [fresh, cluster] = await Promise.all([api.topics(), api.cluster()]);
    create.permit(cluster.authorized_operations);
    const described = await mapLimited(fresh, DESCRIBE_CONCURRENCY_MAX, (t) => api.topicV2(t.topic_name).catch(() => null));
    configs = new Map(described.filter(Boolean).map((d) => [d.name, d.configs]));
    topics = fresh;
    draw();
  };

  const create = createForm(() => { samples = 0; refreshList().catch((e) => status.show(e)); });
  showInternal.addEventListener('change', draw);
  fill(view, h('h1', {}, 'Topics'), create.el, status.el,
    h('div', { class: 'toolbar' }, h('label', {}, showInternal, ' show internal topics')), refusedMetrics, list);

  ctx.every(METRICS_POLL_MS, async () => {
    try {
      if (samples % LIST_EVERY_SAMPLES === 0) await refreshList();
      samples += 1;
      const s = await sampleMetrics();
      lastSummary = s.summary;
      lastRates = s.summary === null ? null : s.rates ?? lastRates;
      fill(refusedMetrics, s.summary === null ? metricsNote() : null);
      if (ctx.alive) draw();
    } catch (e) {
      status.show(e);
    }
  });
}
