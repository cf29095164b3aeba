// Overview: brokers and controller, topic and partition counts, under-replicated and offline
// partitions, and live bytes/records in and out per second from /metrics deltas.
import { api, mapLimited } from './api.js';
import { lineChart, pushPoint } from './chart.js';
import { fill, h, statusLine, table, tile } from './dom.js';
import { brokerRole, controllerLabel, formatBytes, formatCount, formatRate, isDedicatedController, quorumAnsweredByFollower, quorumMembers } from './format.js';
import { CHART_POINTS_MAX, DESCRIBE_CONCURRENCY_MAX, METRICS_POLL_MS, OVERVIEW_TOPICS_DESCRIBED_MAX } from './limits.js';
import { parsePrometheus, rates, summarize } from './metrics.js';

/** Metadata (topics, ISR) changes slowly: described every this many metrics samples. */
const METADATA_EVERY_SAMPLES = 5;

// Kept while the console is open, so leaving and coming back keeps the charts.
const history = { bytes_in: [], bytes_out: [], records_in: [], records_out: [] };
let lastSample = null;

/**
 * /metrics summarized (metrics.js summarize), or null when the broker refuses it to the signed-in
 * principal: with http.metrics.authentication=true it needs DESCRIBE on the cluster (403). Its
 * figures are then unknown ("-") with metricsNote(), not an error: the rest of a page still works.
 */
export async function metricsSummary() {
  try {
    return summarize(parsePrometheus(await api.metrics()));
  } catch (e) {
    if (e.status === 403) return null;
    throw e;
  }
}

/** The quiet line where /metrics figures show "-" because the broker refused /metrics (403). */
export function metricsNote() {
  return h('p', { class: 'muted', 'data-testid': 'metrics-unavailable' },
    'Sizes and rates are not available: /metrics needs DESCRIBE on the cluster (http.metrics.authentication=true).');
}

/** One /metrics sample: pushes rates since the previous one onto the chart history. {summary: null,
 *  rates: null} when /metrics is refused (metricsSummary). */
export async function sampleMetrics() {
  const now = Date.now();
  const summary = await metricsSummary();
  if (summary === null) return { summary: null, rates: null };
  let r = null;
  if (lastSample) {
    r = rates(lastSample.summary, summary, (now - lastSample.t) / 1000);
    for (const k of Object.keys(history)) pushPoint(history[k], now, r.totals[k], CHART_POINTS_MAX);
  }
  lastSample = { t: now, summary };
  return { summary, rates: r };
}

/** The cluster's partition health as the broker counts it from the cluster's metadata, every topic
 *  (internal ones too): GET /v3/clusters/{id} under_replicated_partitions_count and
 *  offline_partitions_count. null when the broker does not report them. */
/**
 * A member's log end offset or lag in the quorum table: the number, or, where only the quorum
 * leader tracks it and a follower answered, "on leader N" (not a bare "-", which read as "none").
 */
function quorumFigure(member, value, q) {
  if (value !== null) return formatCount(value);
  if (!member.leader_only) return '-';
  return h('span', { class: 'muted', title: `tracked by the quorum leader (node ${q.leader_id}) only` },
    `on leader ${q.leader_id}`);
}

export function clusterHealth(cluster) {
  if (cluster == null || typeof cluster.under_replicated_partitions_count !== 'number') return null;
  return { underReplicated: cluster.under_replicated_partitions_count, offline: cluster.offline_partitions_count };
}

/** Partition health of v2 topic descriptions: {partitions, underReplicated, offline} (a fallback
 *  for a broker that does not count them itself; at most OVERVIEW_TOPICS_DESCRIBED_MAX topics). */
export function partitionHealth(described, brokerIds) {
  let partitions = 0;
  let underReplicated = 0;
  let offline = 0;
  for (const t of described) {
    for (const p of t.partitions) {
      partitions += 1;
      const inSync = p.replicas.filter((r) => r.in_sync).length;
      if (inSync < p.replicas.length) underReplicated += 1;
      if (p.leader < 0 || !brokerIds.includes(p.leader)) offline += 1;
    }
  }
  return { partitions, underReplicated, offline };
}

/** Shown above the brokers when the cluster has no active controller (the CLI's words). */
export const NO_ACTIVE_CONTROLLER_NOTE = 'no active controller: broker states are as last known';

export async function render(view, route, ctx) {
  const status = statusLine();
  const tiles = h('div', { class: 'tiles', 'data-testid': 'overview-tiles' });
  const charts = h('div', { class: 'charts' });
  const brokers = h('div');
  const quorum = h('div');
  const refusedMetrics = h('div');
  fill(view, h('h1', {}, 'Overview'), status.el, tiles, refusedMetrics, h('h2', {}, 'Throughput'), charts, h('h2', {}, 'Brokers'), brokers,
    h('h2', {}, 'Metadata quorum'), quorum);

  let meta = null;
  let samples = 0;
  const drawCharts = () => fill(charts,
    lineChart('Bytes per second', [
      { name: 'in', points: history.bytes_in, cls: 'a' },
      { name: 'out', points: history.bytes_out, cls: 'b' }], (v) => `${formatBytes(v)}/s`, { testid: 'chart-bytes' }),
    lineChart('Records per second', [
      { name: 'in', points: history.records_in, cls: 'a' },
      { name: 'out', points: history.records_out, cls: 'b' }], formatRate, { testid: 'chart-records' }));

  const loadMetadata = async () => {
    // A part the signed-in principal may not see (403 with an authorizer: the quorum needs
    // DESCRIBE on the cluster) leaves its section empty with the reason; the rest still shows.
    const refusedAs = (fallback) => (e) => { if (e.status === 403) { denied.push(e.message); return fallback; } throw e; };
    const denied = [];
    const [brokerList, cluster, topicList, groupList, quorum] = await Promise.all([
      api.brokersV3(), api.cluster(), api.topics(), api.groups().catch(refusedAs([])), api.quorum().catch(refusedAs(null))]);
    // null while the metadata quorum elects a leader
    const controller = cluster.controller ? Number(cluster.controller.related.split('/').pop()) : null;
    const checked = topicList.slice(0, OVERVIEW_TOPICS_DESCRIBED_MAX);
    const described = await mapLimited(checked, DESCRIBE_CONCURRENCY_MAX, (t) => api.topicV2(t.topic_name));
    const brokerById = new Map(brokerList.map((b) => [b.broker_id, b]));
    return { brokerIds: brokerList.map((b) => b.broker_id), brokerById, controller, quorum, topicList,
      checked: checked.length, described, groupList, clusterHealth: clusterHealth(cluster), denied };
  };

  drawCharts();
  ctx.every(METRICS_POLL_MS, async () => {
    try {
      if (samples % METADATA_EVERY_SAMPLES === 0 || !meta) meta = await loadMetadata();
      samples += 1;
      const { summary } = await sampleMetrics();
      if (!ctx.alive) return;
      status.clear();
      fill(refusedMetrics, summary === null ? metricsNote() : null);
      // The broker's own counts cover every topic; the described ones only the first checked.
      const health = meta.clusterHealth ?? partitionHealth(meta.described, meta.brokerIds);
      const notChecked = meta.clusterHealth ? 0 : meta.topicList.length - meta.checked;
      fill(tiles,
        tile('brokers', formatCount(meta.brokerIds.length), { testid: 'tile-brokers' }),
        tile('controller', controllerLabel(meta.controller, meta.brokerIds),
          { testid: 'tile-controller', warn: meta.controller === null, text: true }),
        tile('topics', formatCount(meta.topicList.length), { testid: 'tile-topics' }),
        tile('partitions', formatCount(meta.topicList.reduce((n, t) => n + t.partitions_count, 0)), { testid: 'tile-partitions' }),
        tile(`under-replicated partitions${notChecked > 0 ? ` (${notChecked} topics not checked)` : ''}`,
          formatCount(health.underReplicated), { testid: 'tile-under-replicated', warn: health.underReplicated > 0 }),
        tile('offline partitions', formatCount(health.offline), { testid: 'tile-offline', warn: health.offline > 0 }),
        tile('consumer groups', formatCount(meta.groupList.length), { testid: 'tile-groups' }),
        // A dedicated controller holds no partition: its own figure is always 0, so none is shown.
        isDedicatedController(meta.quorum, meta.brokerIds) ? null
          : tile('stored (all topics)', formatBytes(summary?.totals.size_bytes), { testid: 'tile-size' }));
      drawCharts();
      // No active controller (an election, or no majority of voters): nothing fences or unfences a
      // broker, so a dead broker keeps its last state; `ringlog cluster status` says the same.
      fill(brokers, meta.controller === null ? h('p', { class: 'muted', 'data-testid': 'brokers-stale' },
        NO_ACTIVE_CONTROLLER_NOTE) : null, table([
        { title: 'broker', cell: (id) => String(id), num: true },
        { title: 'role', cell: (id) => {
          const role = brokerRole(id, meta.controller, meta.quorum);
          return h('span', { class: id === meta.controller ? 'badge good' : null, 'data-testid': `broker-role-${id}` }, role);
        } },
        { title: 'state', cell: (id) => {
          const state = meta.brokerById.get(id)?.state ?? 'unfenced';
          return h('span', { class: `badge ${state === 'unfenced' ? 'good' : 'bad'}`, 'data-testid': `broker-state-${id}` }, state);
        } },
        { title: 'address', cell: (id) => { const b = meta.brokerById.get(id); return b == null ? '' : b.host == null ? 'no HTTP listener' : `${b.host}:${b.port}`; } },
        { title: 'partition leaderships', num: true,
          cell: (id) => formatCount(meta.described.reduce((n, t) => n + t.partitions.filter((p) => p.leader === id).length, 0)) },
      ], meta.brokerIds, { testid: 'brokers-table' }));
      const q = meta.quorum;
      if (!q) {
        fill(quorum, h('p', { class: 'muted', 'data-testid': 'quorum-summary' }, meta.denied.join('; ') || 'not available'));
        return;
      }
      fill(quorum,
        h('p', { 'data-testid': 'quorum-summary' },
          `leader ${q.leader_id ?? 'none (electing)'} · epoch ${q.leader_epoch} · high watermark ${q.high_watermark} · `
          + `answered by node ${q.node_id} (${q.role}, applied offset ${q.applied_offset})`),
        table([
          { title: 'node', cell: (v) => String(v.replica_id), num: true },
          { title: 'member', cell: (v) => h('span', { 'data-testid': `quorum-member-${v.replica_id}` }, v.kind) },
          { title: 'log end offset', cell: (v) => quorumFigure(v, v.log_end_offset, q), num: true },
          { title: 'lag', cell: (v) => quorumFigure(v, v.lag, q), num: true },
        ], quorumMembers(q, meta.brokerIds), { testid: 'quorum-table' }),
        quorumAnsweredByFollower(q)
          ? h('p', { class: 'muted', 'data-testid': 'quorum-note' },
            `Served by node ${q.node_id}, a follower of the quorum: leader, epoch, high watermark, voters and its own `
            + `log end offset are what it replicates; each member's lag (and the other members' log end offsets, `
            + `and the observers) are tracked by the leader, node ${q.leader_id}, only - open the console there for them.`)
          : null);
    } catch (e) {
      status.show(e);
    }
  });
}
