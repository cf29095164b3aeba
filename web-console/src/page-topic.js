// One topic: per partition leader, replicas, in-sync replicas, log_start_offset,
// high_watermark, log_end_offset and size, and on a compacted topic the log cleaner's figures
// (dirty ratio, bytes cleaned, cleaner time, last clean) for the topic and each partition; add
// partitions; edit configs; delete. With an authorizer (issue 30) the controls the signed-in
// principal may not use are disabled, their title naming the permission (the v3 topic's
// authorized_operations: ALTER to add partitions, ALTER_CONFIGS to edit configs, DELETE to delete).
import { missingPermission } from './acls.js';
import { api } from './api.js';
import { confirmButton, field, fill, h, link, statusLine, table, tile } from './dom.js';
import { formatBytes, formatCount } from './format.js';
import { METRICS_POLL_MS } from './limits.js';
import { metricsNote, metricsSummary } from './page-overview.js';
import { lastCleanText } from './page-topics.js';

/** Partitions are re-read every this many ms while the page is open (offsets move). */
const REFRESH_MS = METRICS_POLL_MS * 2;

function replicaList(p) {
  return h('span', {}, p.replicas.map((r, i) => [i ? ', ' : '', h('span', { class: r.leader ? 'badge good' : '' }, String(r.broker))]));
}

/** The log cleaner's columns of a compacted topic's partitions (`cleaner`: partition -> figures). */
function cleanerColumns(cleaner) {
  const of = (p) => cleaner?.[String(p.partition_id)];
  return [
    { title: 'dirty', num: true, cell: (p) => (of(p) ? `${Math.round(of(p).dirty_ratio * 100)}%` : '-') },
    { title: 'cleaned', num: true, cell: (p) => (of(p) ? formatBytes(of(p).bytes_cleaned) : '-') },
    { title: 'last clean', cell: (p) => lastCleanText(of(p)) },
  ];
}

function partitionsTable(v3parts, v2parts, cleaner) {
  const byId = new Map(v2parts.map((p) => [p.partition, p]));
  return table([
    { title: 'partition', num: true, cell: (p) => String(p.partition_id) },
    { title: 'leader', num: true, cell: (p) => String(byId.get(p.partition_id)?.leader ?? '-') },
    { title: 'replicas', cell: (p) => (byId.get(p.partition_id) ? replicaList(byId.get(p.partition_id)) : '-') },
    { title: 'in_sync_replicas', cell: (p) => {
      const v2 = byId.get(p.partition_id);
      if (!v2) return '-';
      const isr = v2.replicas.filter((r) => r.in_sync).map((r) => r.broker);
      const under = isr.length < v2.replicas.length;
      return h('span', { class: `badge ${under ? 'bad' : 'good'}` }, isr.join(', ') || 'none');
    } },
    { title: 'leader_epoch', num: true, cell: (p) => String(p.leader_epoch) },
    { title: 'log_start_offset', num: true, cell: (p) => formatCount(p.log_start_offset) },
    // Not the partition's end while its leader establishes it (KIP-207) or did not answer: a
    // follower's figure lags the leader's, and a smaller number would read as an end going back.
    { title: 'high_watermark', num: true, cell: (p) => (p.high_watermark_established === false
      ? h('span', { class: 'muted', title: `not known yet (this node's replica: ${p.high_watermark})` }, 'not available')
      : formatCount(p.high_watermark)) },
    { title: 'log_end_offset', num: true, cell: (p) => formatCount(p.log_end_offset) },
    // Offsets, not records: transaction markers and compaction gaps sit in this range too
    // (issue 16: markers are not records), and counting records would mean reading the log.
    { title: 'offsets', num: true, cell: (p) => formatCount(p.high_watermark - p.log_start_offset) },
    { title: 'size', num: true, cell: (p) => formatBytes(p.size_bytes) },
    ...(cleaner ? cleanerColumns(cleaner) : []),
    { title: '', cell: (p) => link(`/messages?topic=${encodeURIComponent(p.topic_name)}&partition=${p.partition_id}`, 'browse') },
  ], v3parts, { testid: 'partitions-table' });
}

/** Disables `button` with `title` (a missingPermission text), or enables it. */
function allow(button, title, enabledTitle = '') {
  if (!button) return;
  button.disabled = title !== null;
  button.title = title || enabledTitle;
}

/** Kafka's config sources (DescribeConfigs) as the topic page labels them. Only DYNAMIC_TOPIC_CONFIG
 *  is the topic's own override (a badge, with Reset); the others are inherited, the same for every
 *  topic, and are changed on the Brokers page, not here. */
const SOURCE_LABELS = {
  DYNAMIC_TOPIC_CONFIG: 'topic',
  DYNAMIC_BROKER_CONFIG: 'broker',
  DYNAMIC_DEFAULT_BROKER_CONFIG: 'cluster-wide broker default',
  STATIC_BROKER_CONFIG: 'broker (static)',
  DEFAULT_CONFIG: 'default',
};

const isOverride = (c) => c.source === 'DYNAMIC_TOPIC_CONFIG';

/** The source cell of config `c`: its label, and for an inherited value the broker config it comes from. */
function sourceCell(c) {
  const label = SOURCE_LABELS[c.source] || c.source || 'default';
  const from = (c.synonyms || [])[0];
  const title = isOverride(c) || !from || c.source === 'DEFAULT_CONFIG'
    ? c.source || '' : `inherited from ${from.name}=${from.value ?? ''} (${c.source})`;
  return h('span', { class: isOverride(c) ? 'badge' : 'muted', title, 'data-testid': `source-${c.name}` }, label);
}

function configsTable(topic, configs, status, reload) {
  return table([
    { title: 'config', cell: (c) => h('code', {}, c.name) },
    { title: 'value', cell: (c) => (c.is_read_only ? String(c.value ?? '') : h('input', {
      value: c.value ?? '', 'aria-label': c.name, 'data-config': c.name, class: 'mono' })) },
    { title: 'source', cell: sourceCell },
    { title: '', cell: (c) => (c.is_read_only ? '' : h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', 'data-testid': `save-${c.name}`, onclick: async (ev) => {
        const input = ev.target.closest('tr').querySelector('input');
        try {
          await api.alterConfigs(topic, [{ name: c.name, value: input.value }]);
          status.ok(`${c.name} set to ${input.value}`);
          await reload();
        } catch (e) {
          status.show(e);
        }
      } }, 'Save'),
      isOverride(c) ? h('button', { type: 'button', class: 'secondary', 'data-testid': `reset-${c.name}`, onclick: async () => {
        try {
          await api.alterConfigs(topic, [{ name: c.name, operation: 'DELETE' }]);
          status.ok(`${c.name}: the topic override is removed`);
          await reload();
        } catch (e) {
          status.show(e);
        }
      } }, 'Reset') : null)) },
  ], configs, { testid: 'configs-table' });
}

export async function render(view, route, ctx) {
  const name = route.path[1];
  const status = statusLine();
  const tiles = h('div', { class: 'tiles' });
  const parts = h('div', {}, h('p', { class: 'muted' }, 'Loading partitions…'));
  const configsBox = h('div');
  const count = h('input', { type: 'number', min: 1, name: 'partitions_count', 'data-testid': 'partitions-count' });
  const grow = h('form', {
    class: 'form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        await api.setPartitionCount(name, Number(count.value));
        status.ok(`${name} now has ${count.value} partitions`);
        await loadPartitions();
      } catch (e) {
        status.show(e);
      }
    },
  }, field('partition count (only grows)', count), h('button', { type: 'submit', 'data-testid': 'add-partitions' }, 'Add partitions'));

  const encoded = encodeURIComponent(name);
  const deleteButton = confirmButton('Delete topic', `Really delete ${name}?`, async () => {
    try {
      await api.deleteTopic(name);
      location.hash = '#/topics';
    } catch (e) {
      status.show(e);
    }
  }, { 'data-testid': 'delete-topic' });
  // The topic's authorized_operations once known (null: not yet read).
  let operations = null;
  const applyPermissions = () => {
    if (!operations) return;
    const resource = `TOPIC ${name}`;
    allow(deleteButton, missingPermission(operations, 'DELETE', resource));
    allow(grow.querySelector('button'), missingPermission(operations, 'ALTER', resource));
    const configTitle = missingPermission(operations, 'ALTER_CONFIGS', resource);
    configsBox.querySelectorAll('button').forEach((b) => allow(b, configTitle));
  };
  fill(view,
    h('h1', {}, 'Topic ', h('span', { 'data-testid': 'topic-name' }, name)),
    h('div', { class: 'actions' }, link(`/messages?topic=${encoded}`, 'Browse messages'), link(`/tail?topic=${encoded}`, 'Live tail'),
      h('span', { class: 'grow' }),
      deleteButton),
    status.el, tiles, h('h2', {}, 'Partitions'), parts, h('div', { class: 'panel' }, grow), h('h2', {}, 'Configs'), configsBox);

  const loadPartitions = async () => {
    const [v3parts, v2topic, v3topic] = await Promise.all([api.partitions(name), api.topicV2(name), api.topics().then(
      (all) => all.find((t) => t.topic_name === name))]);
    const policy = v2topic.configs?.['cleanup.policy'] ?? '';
    const compacted = policy.includes('compact');
    // The cleaner's figures are per partition in /metrics (a broker that has cleaned nothing yet
    // reports zeros: "never" cleaned).
    const summary = compacted ? await metricsSummary() : null;
    if (!ctx.alive) return;
    const size = v3parts.reduce((n, p) => n + p.size_bytes, 0);
    const offsets = v3parts.reduce((n, p) => n + (p.high_watermark - p.log_start_offset), 0);
    const cleaner = summary?.cleaner[name];
    // /metrics refused (403): the cleaner's figures are unknown, not 0.
    const refused = compacted && summary === null;
    const figure = (text) => (refused ? '-' : text);
    fill(tiles,
      tile('partitions', String(v3parts.length), { testid: 'tile-partitions' }),
      tile('replication factor', String(v3topic?.replication_factor ?? '-')),
      tile('offsets', formatCount(offsets), { testid: 'tile-offsets' }),
      tile('size', formatBytes(size)),
      tile('internal', v3topic?.is_internal ? 'yes' : 'no'),
      compacted ? [
        tile('cleanup.policy', policy, { testid: 'tile-cleanup-policy', text: true }),
        tile('dirty (dirtiest partition)', figure(`${Math.round((cleaner?.dirty_ratio ?? 0) * 100)}%`), { testid: 'tile-dirty' }),
        tile('bytes cleaned', figure(formatBytes(cleaner?.bytes_cleaned ?? 0)), { testid: 'tile-cleaned' }),
        tile('cleaner time', figure(`${(cleaner?.cleaner_s ?? 0).toFixed(1)} s`), { testid: 'tile-cleaner-time' }),
        tile('last clean', figure(lastCleanText(cleaner)), { testid: 'tile-last-clean', text: true }),
      ] : null, refused ? metricsNote() : null);
    operations = v3topic?.authorized_operations ?? null;
    applyPermissions();
    if (!count.value) count.value = v3parts.length + 1;
    fill(parts, partitionsTable(v3parts, v2topic.partitions, summary ? (summary.cleanerPartitions[name] ?? {}) : null));
  };
  const loadConfigs = async () => {
    const configs = await api.configs(name);
    if (ctx.alive) fill(configsBox, configsTable(name, configs, status, loadConfigs));
    applyPermissions();
  };

  try {
    await Promise.all([loadPartitions(), loadConfigs()]);
  } catch (e) {
    status.show(e);
    // Not "Loading…" forever: a topic the principal may not DESCRIBE (403) shows nothing more.
    fill(parts, h('p', { class: 'muted' }, 'not available'));
    return;
  }
  ctx.every(REFRESH_MS, () => loadPartitions().catch((e) => status.show(e)), { now: false });
}
