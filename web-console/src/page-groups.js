// Consumer groups: every group with state, members and lag.
import { api, mapLimited } from './api.js';
import { fill, h, link, statusLine, table } from './dom.js';
import { formatCount } from './format.js';
import { GROUP_REFRESH_MS, GROUP_SUMMARY_CONCURRENCY_MAX } from './limits.js';
import { stateBadge } from './page-group.js';


export async function render(view, route, ctx) {
  const status = statusLine();
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading groups…'));
  fill(view, h('h1', {}, 'Consumer groups'), status.el, list);

  ctx.every(GROUP_REFRESH_MS, async () => {
    try {
      const groups = await api.groups();
      const summaries = await mapLimited(groups, GROUP_SUMMARY_CONCURRENCY_MAX,
        (g) => api.lagSummary(g.consumer_group_id).catch(() => null));
      if (!ctx.alive) return;
      status.clear();
      const rows = groups.map((g, i) => ({ g, s: summaries[i] }));
      fill(list, table([
        { title: 'group', cell: ({ g }) => link(`/groups/${encodeURIComponent(g.consumer_group_id)}`, g.consumer_group_id) },
        { title: 'state', cell: ({ g }) => stateBadge(g.state) },
        { title: 'members', num: true, cell: ({ g }) => String(g.member_count) },
        { title: 'total lag', num: true, cell: ({ s }) => (s ? formatCount(s.total_lag) : '-') },
        { title: 'largest lag', cell: ({ s }) => (s && s.max_lag_topic_name
          ? `${formatCount(s.max_lag)} on ${s.max_lag_topic_name}-${s.max_lag_partition_id}` : '-') },
      ], rows, { empty: 'no consumer groups you may see (a group is listed only to those with DESCRIBE on it)', testid: 'groups-table' }));
    } catch (e) {
      status.show(e);
    }
  });
}
