// Brokers (issue 33): every broker with its state, rack, replicas, leaders, bytes on disk and
// throttled replication rates; a rebalance preview (a dry run: the moves, the bytes to move and
// each broker before and after) with "Start rebalance"; the moves under way (partition
// reassignments and decommissions) with decommission, cancel-decommission and cancel-all.
// Controls the signed-in principal may not use (ALTER on the cluster) are disabled and say why;
// a refusal of the server (a decommission the other brokers cannot hold, a rebalance while moves
// are under way) is shown as it came.
import { api, mapLimited } from './api.js';
import { confirmButton, errorBox, fill, h, statusLine, table } from './dom.js';
import { missingPermission } from './acls.js';
import {
  brokerRows, decommissionBlock, formatByteRate, formatBytesExact, moveRows, parseTolerance, planBrokerRows,
  planSummary, reassignmentRows, replicaCounts, startRebalanceBlock, taskRows, throttledRates,
} from './brokers.js';
import { formatCount, plural } from './format.js';
import { BROKERS_REFRESH_MS, DESCRIBE_CONCURRENCY_MAX } from './limits.js';

/** {value} or {error}: each part of the page shows what it could read, and why not the rest. */
async function settled(promise) {
  try {
    return { value: await promise };
  } catch (error) {
    return { error };
  }
}

/** Fills `el` only when `value` differs from the last one shown there, and not while a confirm
 *  button in it waits for its second click: a refresh keeps the DOM (an armed confirm, a
 *  selection) as it is; the next one after the confirm shows the change. */
const shown = new WeakMap();   // element -> the JSON text of what it shows
function renderIfChanged(el, value, draw) {
  const key = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Error ? v.message : v));
  if (shown.get(el) === key || el.querySelector('[data-armed]')) return;
  shown.set(el, key);
  fill(el, draw());
}

export async function render(view, route, ctx) {
  const brokerStatus = statusLine();
  const rebalanceStatus = statusLine();
  const progressStatus = statusLine();
  const brokersArea = h('div', {}, h('p', { class: 'muted' }, 'Loading brokers…'));
  const planArea = h('div', {}, h('p', { class: 'muted' }, 'Planning…'));
  const progressArea = h('div');
  const tolerance = h('input', { name: 'tolerance', inputmode: 'decimal', placeholder: '0.1 (the server\'s default)',
    'data-testid': 'rebalance-tolerance' });
  const startReason = h('small', { class: 'muted', 'data-testid': 'start-rebalance-reason' });
  let last = null;   // the last load, for the actions' tolerance and reasons

  const load = async () => {
    let tol = null;
    let toleranceError = null;
    try {
      tol = parseTolerance(tolerance.value);
    } catch (e) {
      toleranceError = e;
    }
    const [brokers, cluster, configs, plan, tasks, reassignments] = await Promise.all([
      settled(api.brokersV3()), settled(api.cluster()), settled(api.brokerConfigs()),
      toleranceError ? { error: toleranceError } : settled(api.rebalancePlan(tol)),
      settled(api.brokerTasks()), settled(api.reassignments())]);
    const replicas = brokers.value
      ? await mapLimited(brokers.value, DESCRIBE_CONCURRENCY_MAX, (b) => settled(api.brokerReplicas(b.broker_id)))
      : [];
    return { tol, brokers, cluster, configs, plan, tasks, reassignments, replicas };
  };

  const drawBrokers = (d, authorized) => {
    if (d.brokers.error) return errorBox(d.brokers.error);
    const counts = new Map();
    d.replicas.forEach((r, i) => { if (r.value) counts.set(d.brokers.value[i].broker_id, replicaCounts(r.value)); });
    const rows = brokerRows(d.brokers.value, { replicas: counts, plan: d.plan.value ?? null,
      throttles: d.configs.value ? throttledRates(d.configs.value) : new Map() });
    const byId = new Map(d.brokers.value.map((b) => [b.broker_id, b]));
    // Why a column shows '-': the first refusal of each part (a 403 names the permission).
    const notes = [d.replicas.find((r) => r.error)?.error, d.configs.error,
      d.plan.error ? new Error(`bytes on disk come from the rebalance dry run, which failed (below)`) : null].filter(Boolean);
    return [
      table([
        { title: 'broker', num: true, cell: (r) => `${r.broker_id}${r.is_controller ? ' (controller)' : ''}` },
        { title: 'state', cell: (r) => h('span', { class: `badge ${r.state.good ? 'good' : 'bad'}`,
          'data-testid': `broker-state-${r.broker_id}` }, r.state.text) },
        { title: 'rack', cell: (r) => r.rack ?? '-' },
        { title: 'address', cell: (r) => r.address },
        { title: 'replicas', num: true, cell: (r) => h('span', { 'data-testid': `broker-replicas-${r.broker_id}` }, formatCount(r.replicas)) },
        { title: 'leaders', num: true, cell: (r) => h('span', { 'data-testid': `broker-leaders-${r.broker_id}` }, formatCount(r.leaders)) },
        { title: 'bytes on disk', num: true, cell: (r) => h('span', { 'data-testid': `broker-bytes-${r.broker_id}` }, formatBytesExact(r.size_bytes)) },
        { title: 'throttled rates', cell: (r) => (r.throttles.length
          ? h('span', { 'data-testid': `broker-throttles-${r.broker_id}` },
            r.throttles.map((t, i) => [i ? h('br') : null, `${t.name} = ${formatByteRate(t.value)}`]))
          : h('span', { class: 'muted' }, 'none')) },
        { title: '', cell: (r) => {
          const blocked = decommissionBlock(authorized, byId.get(r.broker_id));
          const button = confirmButton('Decommission', `Really decommission broker ${r.broker_id}?`, () => decommission(r.broker_id),
            { 'data-testid': `decommission-${r.broker_id}`, title: blocked || `move every replica off broker ${r.broker_id}, then unregister it` });
          button.disabled = blocked !== null;
          return button;
        } },
      ], rows, { empty: 'no brokers registered', testid: 'brokers-table' }),
      notes.map((e) => h('p', { class: 'muted', 'data-testid': 'brokers-note' }, e.message)),
    ];
  };

  const drawPlan = (d) => {
    if (d.plan.error) return errorBox(d.plan.error);
    const plan = d.plan.value;
    const skipped = plan.skipped ?? [];
    return [
      h('p', { 'data-testid': 'plan-summary' }, planSummary(plan)),
      table([
        { title: 'broker', num: true, cell: (b) => `${b.broker_id}${b.excluded ? ` (takes no replicas${b.excluded_reason ? `: ${b.excluded_reason}` : ''})` : ''}` },
        { title: 'rack', cell: (b) => b.rack },
        { title: 'replicas', num: true, cell: (b) => b.replicas },
        { title: 'leaders', num: true, cell: (b) => b.leaders },
        { title: 'bytes', num: true, cell: (b) => b.size_bytes },
      ], planBrokerRows(plan), { empty: 'no brokers in the plan', testid: 'plan-brokers-table' }),
      (plan.moves ?? []).length ? [h('h3', {}, `Moves (${formatCount(plan.moves.length)})`), table([
        { title: 'partition', cell: (m) => m.partition },
        { title: 'replicas', cell: (m) => m.from },
        { title: 'target replicas', cell: (m) => m.to },
        { title: 'adding', cell: (m) => m.adding },
        { title: 'removing', cell: (m) => m.removing },
        { title: 'bytes', num: true, cell: (m) => m.size },
      ], moveRows(plan), { testid: 'plan-moves-table' })] : null,
      skipped.length ? [h('h3', {}, `Skipped (${formatCount(skipped.length)})`), table([
        { title: 'partition', cell: (s) => `${s.topic_name}-${s.partition_id}` },
        { title: 'reason', cell: (s) => s.reason },
      ], skipped, { testid: 'plan-skipped-table' })] : null,
    ];
  };

  const drawProgress = (d, authorized) => {
    const moving = d.reassignments.value ?? [];
    const alterTitle = missingPermission(authorized, 'ALTER');
    const cancelAll = confirmButton('Cancel all reassignments', `Really cancel ${plural(moving.length, 'reassignment')}?`,
      cancelReassignments, { 'data-testid': 'cancel-reassignments',
        title: alterTitle || (moving.length ? 'cancel every partition reassignment under way (KIP-455)' : 'no reassignment is under way') });
    cancelAll.disabled = alterTitle !== null || moving.length === 0;
    return [
      h('h3', {}, 'Decommissions'),
      d.tasks.error ? errorBox(d.tasks.error) : table([
        { title: 'broker', num: true, cell: (t) => String(t.broker_id) },
        { title: 'status', cell: (t) => h('span', { 'data-testid': `task-status-${t.broker_id}` }, t.status) },
        { title: 'partitions remaining', num: true, cell: (t) => formatCount(t.partitions_remaining) },
        { title: 'reassignments under way', num: true, cell: (t) => formatCount(t.reassignments_in_progress) },
        { title: 'error', cell: (t) => t.error ?? '' },
        { title: '', cell: (t) => (t.in_progress ? h('button', { type: 'button', class: 'danger', disabled: alterTitle !== null,
          title: alterTitle || `stop decommissioning broker ${t.broker_id}`, 'data-testid': `cancel-decommission-${t.broker_id}`,
          onclick: () => cancelDecommission(t.broker_id) }, 'Cancel decommission') : '') },
      ], taskRows(d.tasks.value), { empty: 'no broker is being decommissioned', testid: 'tasks-table' }),
      h('h3', {}, 'Partition reassignments under way'),
      d.reassignments.error ? errorBox(d.reassignments.error) : table([
        { title: 'partition', cell: (r) => r.partition },
        { title: 'replicas', cell: (r) => r.replicas },
        { title: 'adding', cell: (r) => r.adding },
        { title: 'removing', cell: (r) => r.removing },
      ], reassignmentRows(moving), { empty: 'no partition is being moved', testid: 'reassignments-table' }),
      h('div', { class: 'actions' }, cancelAll),
    ];
  };

  const refresh = async () => {
    const d = await load();
    if (!ctx.alive) return;
    last = d;
    const authorized = d.cluster.value?.authorized_operations;
    renderIfChanged(brokersArea, [d, authorized], () => drawBrokers(d, authorized));
    renderIfChanged(planArea, d.plan, () => drawPlan(d));
    renderIfChanged(progressArea, [d.tasks, d.reassignments, authorized], () => drawProgress(d, authorized));
    const blocked = startRebalanceBlock(authorized, d.plan.value ?? null, d.reassignments.value?.length ?? 0);
    start.disabled = blocked !== null;
    start.title = blocked || 'apply the plan previewed above as partition reassignments';
    startReason.textContent = blocked ? `Start rebalance is disabled: ${blocked}` : '';
  };

  const act = (status, fn) => async () => {
    try {
      await fn();
    } catch (e) {
      status.show(e);
    }
    await refresh();
  };

  const decommission = (id) => act(brokerStatus, async () => {
    const task = await api.decommission(id);
    brokerStatus.ok(`decommissioning broker ${id}: ${plural(task.partitions_remaining ?? 0, 'partition')} to move off it`);
  })();
  const cancelDecommission = (id) => act(progressStatus, async () => {
    await api.cancelDecommission(id);
    progressStatus.ok(`cancelled the decommission of broker ${id}`);
  })();
  const cancelReassignments = () => act(progressStatus, async () => {
    const r = await api.cancelReassignments();
    progressStatus.ok(`cancelled ${plural(r.cancelled ?? 0, 'partition reassignment')}`);
  })();

  const start = h('button', { type: 'button', disabled: true, 'data-testid': 'start-rebalance', onclick: act(rebalanceStatus, async () => {
    // The tolerance of the plan shown (the previewed one), not what was typed since.
    const plan = await api.startRebalance(last ? last.tol : parseTolerance(tolerance.value));
    rebalanceStatus.ok(planSummary(plan));
  }) }, 'Start rebalance');
  const preview = h('button', { type: 'submit', class: 'secondary', 'data-testid': 'rebalance-preview' }, 'Preview');
  const form = h('form', { 'data-testid': 'rebalance-form', onsubmit: async (ev) => {
    ev.preventDefault();
    rebalanceStatus.clear();
    await refresh();
  } }, h('label', {}, 'Tolerance ', tolerance), preview, start, startReason);

  fill(view, h('h1', {}, 'Brokers'), brokerStatus.el, brokersArea,
    h('h2', {}, 'Rebalance'),
    h('p', { class: 'muted' }, 'A dry run: the moves that would bring every broker\'s replicas, leaders and bytes within the ' +
      'tolerance of the others (racks respected, fewest bytes moved). Nothing changes until "Start rebalance".'),
    form, rebalanceStatus.el, planArea,
    h('h2', {}, 'Moves under way'), progressStatus.el, progressArea);
  ctx.every(BROKERS_REFRESH_MS, refresh);
}
