// Delayed delivery (issue 18, docs/delayed-delivery.md): the delay schedulers' pending records by
// due time (a histogram), the next due time, the lag behind due time, and each scheduler (one per
// delay partition, on its leader). GET /v3/clusters/{c}/delayed-records, refreshed every
// DELAYED_REFRESH_MS; the lag and pending counts are kept as small live charts.
import { api } from './api.js';
import { barRows, lineChart, pushPoint } from './chart.js';
import { fill, h, statusLine, table, tile } from './dom.js';
import { dueBucketLabel, formatCount, formatDue, formatTimestamp } from './format.js';
import { CHART_POINTS_MAX, DELAYED_REFRESH_MS } from './limits.js';

const formatMs = (ms) => `${formatCount(Math.round(ms))} ms`;

export async function render(view, route, ctx) {
  const status = statusLine();
  const tiles = h('div', { class: 'tiles', 'data-testid': 'delayed-tiles' });
  const histogram = h('div', { class: 'panel' });
  const charts = h('div', { class: 'charts' });
  const schedulers = h('div');
  fill(view, h('h1', {}, 'Delayed delivery'),
    h('p', { class: 'muted' }, 'Records produced with deliver_at or delay_ms (or a ringlog-deliver-at header) wait in the '
      + 'internal delay topics until they are due; nacked records wait there for their retry. Each delay partition\'s '
      + 'scheduler runs on its leader and holds a window of up to 20,000 pending records; records past the window are '
      + 'counted as not read yet (their due times are known once read).'),
    status.el, tiles, h('h2', {}, 'Pending records by due time (read into the windows)'), histogram, charts,
    h('h2', {}, 'Schedulers'), schedulers);

  const pendingPoints = [];
  const lagPoints = [];
  ctx.every(DELAYED_REFRESH_MS, async () => {
    try {
      const d = await api.delayedRecords();
      if (!ctx.alive) return;
      status.clear();
      const unanswered = d.metadata?.unanswered_brokers ?? [];
      fill(tiles,
        tile('pending records', formatCount(d.pending_records), { testid: 'tile-delayed-pending' }),
        tile('read into the windows', formatCount(d.window_records), { testid: 'tile-delayed-window' }),
        tile('not read yet', formatCount(d.unread_records), { testid: 'tile-delayed-unread' }),
        tile(`next due${d.next_due_ms === null ? '' : ` (${formatDue(d.next_due_ms, d.now_ms)})`}`,
          d.next_due_ms === null ? 'none' : `${formatTimestamp(d.next_due_ms)} UTC`, { testid: 'tile-delayed-next-due', text: true }),
        tile('lag behind due time', formatMs(d.lag_ms), { testid: 'tile-delayed-lag', warn: d.lag_ms > 1000 }),
        tile('moved (since leadership)', formatCount(d.moved_records), { testid: 'tile-delayed-moved' }),
        unanswered.length ? tile('brokers not answering', unanswered.join(', '), { warn: true, text: true }) : null);
      fill(histogram, barRows(d.due_histogram.map((b) => ({ label: dueBucketLabel(b.due_after_ms, b.due_within_ms), count: b.records })),
        formatCount, { testid: 'delayed-histogram' }));
      const t = d.now_ms;
      pushPoint(pendingPoints, t, d.pending_records, CHART_POINTS_MAX);
      pushPoint(lagPoints, t, d.lag_ms, CHART_POINTS_MAX);
      fill(charts,
        lineChart('pending records', [{ name: 'pending', points: pendingPoints, cls: 'a' }], formatCount, { testid: 'chart-delayed-pending' }),
        lineChart('lag behind due time', [{ name: 'lag', points: lagPoints, cls: 'b' }], formatMs, { testid: 'chart-delayed-lag' }));
      fill(schedulers, table([
        { title: 'delay partition', cell: (s) => `${s.topic_name}-${s.partition_id}` },
        { title: 'broker', num: true, cell: (s) => String(s.broker_id) },
        { title: 'in window', num: true, cell: (s) => formatCount(s.window_records) },
        { title: 'not read yet', num: true, cell: (s) => formatCount(s.unread_records) },
        { title: 'next due', cell: (s) => (s.next_due_ms === null ? '-' : formatDue(s.next_due_ms, d.now_ms)) },
        { title: 'lag', num: true, cell: (s) => formatMs(s.lag_ms) },
        { title: 'moved', num: true, cell: (s) => formatCount(s.moved_records) },
        { title: 'position', num: true, cell: (s) => formatCount(s.position) },
        { title: 'high watermark', num: true, cell: (s) => formatCount(s.high_watermark) },
      ], d.schedulers, { testid: 'delayed-schedulers', empty: 'no delay partition yet: nothing was delayed on this cluster' }));
    } catch (e) {
      status.show(e);
    }
  });
}
