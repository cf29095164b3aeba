// Brokers, rebalance and decommission helpers without a DOM (issue 33): the rows of the Brokers
// page, the rebalance plan's summary and tables, and why a button is disabled. Shapes are the
// v3 routes' (http-api/openapi.yaml): KafkaBroker, KafkaReplicaList, KafkaBrokerConfigList,
// KafkaRebalancePlan, KafkaBrokerTask and KafkaReassignment.
import { missingPermission } from './acls.js';
import { formatBytes, formatCount, plural } from './format.js';

/** The broker configs bounding reassignment and catch-up traffic (Kafka's names), bytes/s. */
export const THROTTLE_CONFIGS = ['leader.replication.throttled.rate', 'follower.replication.throttled.rate'];

/**
 * A broker's state in words, from its registration `state` (unfenced, fenced,
 * controlled_shutdown) and `decommission` (null or DECOMMISSIONING, which wins: the broker is
 * still registered while its replicas move off). {text, good}: good only for a running broker.
 */
export function brokerState(b) {
  if (b.decommission === 'DECOMMISSIONING') return { text: 'decommissioning', good: false };
  switch (b.state) {
    case 'unfenced': return { text: 'running', good: true };
    case 'fenced': return { text: 'fenced', good: false };
    case 'controlled_shutdown': return { text: 'in controlled shutdown', good: false };
    default: return { text: b.state == null ? 'unknown' : String(b.state), good: false };
  }
}

/** {replicas, leaders} of a broker's KafkaReplicaList data (GET .../brokers/{id}/partition-replicas). */
export function replicaCounts(replicas) {
  return { replicas: replicas.length, leaders: replicas.filter((r) => r.is_leader).length };
}

/**
 * The throttle configs set on each broker, from KafkaBrokerConfigList data (GET
 * .../brokers/-/configs or one broker's): Map broker_id -> [{name, value}] in THROTTLE_CONFIGS
 * order, only those set (not the default, value not null). A broker with none is not in the map.
 */
export function throttledRates(configs) {
  const out = new Map();
  for (const name of THROTTLE_CONFIGS) {
    for (const c of configs) {
      if (c.name !== name || c.is_default || c.value === null || c.value === undefined) continue;
      if (!out.has(c.broker_id)) out.set(c.broker_id, []);
      out.get(c.broker_id).push({ name, value: c.value });
    }
  }
  return out;
}

/** A difference of two integers (Numbers, or BigInts beyond 2^53 from parseJsonExact), exact. */
function minus(a, b) {
  if (typeof a === 'bigint' || typeof b === 'bigint') {
    const d = BigInt(a) - BigInt(b);
    return Number.isSafeInteger(Number(d)) ? Number(d) : d;
  }
  return a - b;
}

/** A byte count exactly, and in binary units past 1 KiB: 1536 -> "1,536 bytes (1.50 KiB)"; null -> "-". */
export function formatBytesExact(n) {
  if (n === null || n === undefined) return '-';
  const exact = `${formatCount(n)} byte${n === 1 ? '' : 's'}`;
  return Math.abs(Number(n)) < 1024 ? exact : `${exact} (${formatBytes(Number(n))})`;
}

/**
 * A rate config's value (a string of bytes/s) exactly: "10485760" -> "10,485,760 bytes/s
 * (10.0 MiB/s)". A value that is not a whole number is shown as it is.
 */
export function formatByteRate(value) {
  const text = String(value).trim();
  if (!/^\d+$/.test(text)) return text;
  const n = BigInt(text);
  const exact = `${formatCount(n)} bytes/s`;
  return n < 1024n ? exact : `${exact} (${formatBytes(Number(n))}/s)`;
}

/**
 * "before → after (+d)" of one plan figure {before, after}; "before (no change)" when equal.
 * `fmt` formats each number (formatCount by default).
 */
export function formatChange(figure, fmt = formatCount) {
  if (!figure) return '-';
  const d = minus(figure.after, figure.before);
  if (d === 0 || d === 0n) return `${fmt(figure.before)} (no change)`;
  const sign = d > 0 ? '+' : '−';
  const abs = d > 0 ? d : minus(0, d);
  return `${fmt(figure.before)} → ${fmt(figure.after)} (${sign}${fmt(abs)})`;
}

/**
 * The Brokers page's rows, by broker id: [{broker_id, address, rack, state, is_controller,
 * replicas, leaders, size_bytes, throttles}]. `replicas`: Map broker_id -> {replicas, leaders}
 * (replicaCounts); `plan`: a KafkaRebalancePlan whose per-broker size_bytes.before are the bytes
 * on disk (and its replica and leader counts the fallback); `throttles`: throttledRates' map.
 * A figure nobody answered is null.
 */
export function brokerRows(brokers, { replicas = new Map(), plan = null, throttles = new Map() } = {}) {
  const planned = new Map((plan?.brokers ?? []).map((p) => [p.broker_id, p]));
  return [...brokers].sort((a, b) => a.broker_id - b.broker_id).map((b) => {
    const counts = replicas.get(b.broker_id);
    const p = planned.get(b.broker_id);
    return {
      broker_id: b.broker_id,
      address: b.host == null ? '-' : `${b.host}:${b.port}`,
      rack: b.rack ?? null,
      state: brokerState(b),
      is_controller: Boolean(b.is_controller),
      replicas: counts ? counts.replicas : (p?.replicas?.before ?? null),
      leaders: counts ? counts.leaders : (p?.leaders?.before ?? null),
      size_bytes: p?.size_bytes?.before ?? null,
      throttles: throttles.get(b.broker_id) ?? [],
    };
  });
}

/**
 * One line saying what a rebalance plan does: "balanced: nothing to move (tolerance 0.1)",
 * "3 moves bring every broker within the tolerance 0.1: 12,345 bytes (12.1 KiB) to move", or what stays
 * out of balance. A plan that was applied (dry_run false) says how many moves started.
 */
export function planSummary(plan) {
  const tolerance = `tolerance ${plan.tolerance ?? 'of the server'}`;
  const moves = plan.moves ?? [];
  const bytes = formatBytesExact(plan.bytes_to_move ?? 0);
  const skipped = (plan.skipped ?? []).length;
  const skippedText = skipped ? `; ${plural(skipped, 'partition')} skipped` : '';
  let text;
  if (moves.length === 0) {
    text = plan.balanced ? `balanced: nothing to move (${tolerance})${skippedText}`
      : `not balanced within the ${tolerance}, and no move would help${skippedText}`;
  } else if (plan.balanced) {
    text = `${plural(moves.length, 'move')} ${moves.length === 1 ? 'brings' : 'bring'} every broker within the ${tolerance}: ${bytes} to move${skippedText}`;
  } else {
    text = `${plural(moves.length, 'move')} (${bytes} to move) still ${moves.length === 1 ? 'leaves' : 'leave'} the brokers outside the ${tolerance}${skippedText}`;
  }
  if (plan.dry_run === false) text += `; ${plural(plan.started ?? 0, 'move')} started`;
  return text;
}

/** A replica list as text: [1, 2] -> "1, 2"; [] -> "-". */
export function replicaList(ids) {
  return ids && ids.length ? ids.join(', ') : '-';
}

/** The plan's per-broker table rows, by broker id: [{broker_id, rack, excluded, excluded_reason, replicas, leaders, size_bytes}] as text. */
export function planBrokerRows(plan) {
  return [...(plan.brokers ?? [])].sort((a, b) => a.broker_id - b.broker_id).map((b) => ({
    broker_id: b.broker_id,
    rack: b.rack ?? '-',
    excluded: Boolean(b.excluded),
    excluded_reason: b.excluded_reason ?? null,
    replicas: formatChange(b.replicas),
    leaders: formatChange(b.leaders),
    size_bytes: formatChange(b.size_bytes, formatBytesExact),
  }));
}

/** The plan's moves as table rows: [{partition: "t-0", from, to, adding, removing, size}] in the plan's order. */
export function moveRows(plan) {
  return (plan.moves ?? []).map((m) => ({
    partition: `${m.topic_name}-${m.partition_id}`,
    from: replicaList(m.replicas),
    to: replicaList(m.target_replicas),
    adding: replicaList(m.adding_replicas),
    removing: replicaList(m.removing_replicas),
    size: formatBytesExact(m.size_bytes),
  }));
}

/**
 * Why "Start rebalance" is disabled, or null when it may be pressed. `authorized`: the v3
 * cluster's authorized_operations (ALTER on the cluster is what POST .../rebalance needs);
 * `plan`: the last dry run (null when none could be made); `reassignments`: how many partition
 * reassignments are under way (the server answers 409 then).
 */
export function startRebalanceBlock(authorized, plan, reassignments = 0) {
  const denied = missingPermission(authorized, 'ALTER');
  if (denied) return denied;
  const underWay = Math.max(reassignments, plan?.reassignments_in_progress ?? 0);
  if (underWay > 0) {
    return `${plural(underWay, 'partition reassignment')} under way: wait for ${underWay === 1 ? 'it' : 'them'} or cancel ${underWay === 1 ? 'it' : 'them'} first`;
  }
  if (!plan) return 'no plan: the dry run did not answer';
  if ((plan.moves ?? []).length === 0) return 'nothing to move';
  return null;
}

/** Why a broker's "Decommission" is disabled, or null. The server refuses the rest with its reason. */
export function decommissionBlock(authorized, broker) {
  const denied = missingPermission(authorized, 'ALTER');
  if (denied) return denied;
  if (broker.decommission === 'DECOMMISSIONING') return `broker ${broker.broker_id} is being decommissioned`;
  return null;
}

const TASK_STATUS = { IN_PROGRESS: 'in progress', SUCCESS: 'done', CANCELED: 'cancelled' };

/**
 * The remove-broker tasks as rows, by broker id: [{broker_id, status, in_progress,
 * partitions_remaining, reassignments_in_progress, error}] (error: the server's code and message,
 * or null).
 */
export function taskRows(tasks) {
  return tasks.filter((t) => t.task_type === 'remove-broker').sort((a, b) => a.broker_id - b.broker_id).map((t) => ({
    broker_id: t.broker_id,
    status: TASK_STATUS[t.task_status] ?? String(t.task_status),
    in_progress: t.task_status === 'IN_PROGRESS',
    partitions_remaining: t.partitions_remaining ?? null,
    reassignments_in_progress: t.reassignments_in_progress ?? null,
    error: t.error_code == null && t.error_message == null ? null
      : `${t.error_code != null ? `error_code ${t.error_code}: ` : ''}${t.error_message ?? ''}`,
  }));
}

/** The partition reassignments under way (KafkaReassignmentList data) as rows, by topic then partition. */
export function reassignmentRows(reassignments) {
  return [...reassignments]
    .sort((a, b) => a.topic_name.localeCompare(b.topic_name) || a.partition_id - b.partition_id)
    .map((r) => ({
      partition: `${r.topic_name}-${r.partition_id}`,
      replicas: replicaList(r.replica_ids),
      adding: replicaList(r.adding_replicas),
      removing: replicaList(r.removing_replicas),
    }));
}

/**
 * The tolerance field of the preview: null when empty (the server's default), else a number at
 * least 0. Throws naming the text otherwise; the server checks its upper bound.
 */
export function parseTolerance(text) {
  const t = String(text ?? '').trim();
  if (!t) return null;
  const v = Number(t);
  if (!Number.isFinite(v) || v < 0) throw new Error(`the tolerance must be a number of at least 0, got "${text}"`);
  return v;
}
