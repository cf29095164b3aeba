// One consumer group: state, members and their assignment, lag per partition and in total, a
// lag-over-time chart, and Kafka's reset-offsets with a dry run.
//
// The lag chart is the broker's own lag history (GET .../lag-history, sampled every 5 s), so it
// covers the time no console was open and survives a reload. The coordinator keeps it in memory:
// when the group's coordinator moves, the new one starts empty, so the page keeps the samples it
// has shown while it is open and adds the new coordinator's to them (mergeLagHistory).
import { api } from './api.js';
import { deadLettersPanel } from './page-dead-letters.js';
import { lineChart } from './chart.js';
import { field, fill, h, statusLine, table, tile } from './dom.js';
import { formatCount, parseUtcDateTime } from './format.js';
import { GROUP_REFRESH_MS } from './limits.js';
import { mergeLagHistory } from './metrics.js';

/** The group state as a coloured badge (STABLE good; rebalancing or DEAD bad). */
export function stateBadge(state) {
  const good = state === 'STABLE';
  const bad = state === 'DEAD' || state === 'PREPARING_REBALANCE' || state === 'COMPLETING_REBALANCE';
  return h('span', { class: `badge ${good ? 'good' : bad ? 'bad' : ''}` }, state);
}

function resetForm(group, lagsNow) {
  const status = statusLine();
  const to = h('select', { name: 'to', 'data-testid': 'reset-to' },
    ['earliest', 'latest', 'offset', 'shift', 'timestamp'].map((v) => h('option', { value: v }, v)));
  const value = h('input', { name: 'value', type: 'number', placeholder: 'offset, or signed shift', 'data-testid': 'reset-value' });
  const time = h('input', { name: 'timestamp', type: 'datetime-local', step: 1 });
  const topics = h('input', { name: 'topics', placeholder: 'all the group committed' });
  const result = h('div', { 'data-testid': 'reset-result' });

  const run = async (dryRun) => {
    status.clear();
    const body = { to: to.value, dry_run: dryRun };
    if (to.value === 'offset' || to.value === 'shift') body.value = Number(value.value);
    if (to.value === 'timestamp') {
      const ms = parseUtcDateTime(time.value);
      if (ms === null) return status.show('choose a time');
      body.timestamp = ms;
    }
    const names = topics.value.split(',').map((s) => s.trim()).filter(Boolean);
    if (names.length) body.topics = names;
    try {
      const r = await api.resetOffsets(group, body);
      const before = new Map(lagsNow().map((l) => [`${l.topic_name}-${l.partition_id}`, l.current_offset]));
      fill(result, h('p', {}, r.dry_run ? 'Dry run: nothing was changed. These offsets would be committed:' : 'Committed:'),
        table([
          { title: 'topic', cell: (o) => o.topic_name },
          { title: 'partition', num: true, cell: (o) => String(o.partition_id) },
          { title: 'committed now', num: true, cell: (o) => formatCount(before.get(`${o.topic_name}-${o.partition_id}`)) },
          { title: r.dry_run ? 'would become' : 'new offset', num: true, cell: (o) => formatCount(o.offset) },
        ], r.offsets, { testid: 'reset-table', empty: 'no committed offsets to reset' }));
    } catch (e) {
      fill(result);
      status.show(e);
    }
  };
  return h('div', { class: 'panel' },
    h('p', { class: 'muted' }, 'Kafka\'s reset-offsets: the group must have no members. Offsets are clamped to [log_start_offset, high_watermark].'),
    h('div', { class: 'form' }, field('reset to', to), field('value', value), field('time (UTC)', time), field('topics (comma separated)', topics),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'secondary', 'data-testid': 'reset-dry-run', onclick: () => run(true) }, 'Dry run'),
        h('button', { type: 'button', class: 'danger', 'data-testid': 'reset-execute', onclick: () => run(false) }, 'Reset offsets'))),
    status.el, result);
}

export async function render(view, route, ctx) {
  const group = route.path[1];
  const status = statusLine();
  const tiles = h('div', { class: 'tiles' });
  const chart = h('div');
  const members = h('div');
  const lags = h('div');
  let lastLags = [];
  let shownHistory = [];   // every lag sample shown so far, kept across a coordinator move
  const historyNote = h('p', { class: 'muted' });
  fill(view, h('h1', {}, 'Consumer group ', h('span', { 'data-testid': 'group-name' }, group)), status.el, tiles,
    h('h2', {}, 'Lag over time'), chart,
    historyNote,
    h('h2', {}, 'Lag per partition'), lags, h('h2', {}, 'Members'), members,
    h('h2', {}, 'Reset offsets'), resetForm(group, () => lastLags),
    h('h2', {}, 'Dead letters'), deadLettersPanel(group));

  ctx.every(GROUP_REFRESH_MS, async () => {
    try {
      const [g, consumers, partitionLags, summary, history] = await Promise.all([
        api.group(group), api.consumers(group), api.lags(group), api.lagSummary(group), api.lagHistory(group)]);
      if (!ctx.alive) return;
      lastLags = partitionLags;
      fill(tiles,
        tile('state', stateBadge(g.state), { testid: 'tile-state' }),
        tile('members', String(g.member_count), { testid: 'tile-members' }),
        tile('total lag', formatCount(summary.total_lag), { testid: 'tile-total-lag', warn: summary.total_lag > 0 }),
        tile('generation', String(g.generation ?? '-')),
        tile('assignor', g.partition_assignor ?? '-', { text: true }),
        tile('coordinator partition', `__consumer_offsets-${g.coordinator_partition ?? '?'}`, { text: true }));
      const fresh = history.data.map((x) => ({ t: x.timestamp, v: x.total_lag }));
      shownHistory = mergeLagHistory(shownHistory, fresh, history.samples_max);
      fill(chart, lineChart('Total lag (records)', [{ name: 'lag', points: shownHistory, cls: 'a' }], formatCount,
        { testid: 'lag-chart' }));
      historyNote.textContent = `Sampled by the group's coordinator every ${history.interval_ms / 1000} s; it keeps `
        + `the last ${history.samples_max} samples in memory (since it started). When the coordinator moves, this `
        + 'page keeps the samples it has shown (until it is left or reloaded) and adds the new coordinator\'s.';
      fill(lags, table([
        { title: 'topic', cell: (l) => l.topic_name },
        { title: 'partition', num: true, cell: (l) => String(l.partition_id) },
        { title: 'committed offset', num: true, cell: (l) => (l.current_offset === null ? 'none' : formatCount(l.current_offset)) },
        // null: the partition's leader did not tell its end yet (KIP-207): not a smaller number
        { title: 'high_watermark', num: true, cell: (l) => (l.log_end_offset === null ? 'not available' : formatCount(l.log_end_offset)) },
        { title: 'lag', num: true, cell: (l) => (l.lag === null ? '-' : formatCount(l.lag)) },
        { title: 'consumer', cell: (l) => l.consumer_id ?? '-' },
      ], partitionLags, { testid: 'lags-table', empty: 'the group has committed no offsets' }));
      fill(members, table([
        { title: 'consumer_id', cell: (m) => h('code', {}, m.consumer_id) },
        { title: 'client_id', cell: (m) => m.client_id },
        { title: 'instance_id', cell: (m) => m.instance_id ?? '-' },
        { title: 'generation', num: true, cell: (m) => String(m.generation) },
        { title: 'assigned partitions', cell: (m) => m.assigned_partitions.map((a) => `${a.topic_name}-${a.partition_id}`).join(', ') || 'none' },
      ], consumers, { testid: 'members-table', empty: 'no members (offsets can be reset)' }));
      status.clear();
    } catch (e) {
      status.show(e);
    }
  });
}
