// The console's only door to the broker: the documented HTTP API (http-api/openapi.yaml) and
// the /v1/ws WebSocket (http-api/ws-protocol.md). Same origin, so no CORS is involved.
import { parseJsonExact } from './format.js';

const V2 = 'application/vnd.kafka.v2+json';
const V2_BINARY = 'application/vnd.kafka.binary.v2+json';
const JSON_TYPE = 'application/json';

/** A failed call: the server's {error_code, message}, or what went wrong on the way. */
export class ApiError extends Error {
  constructor(what, status, errorCode, message) {
    super(`${what}: ${errorCode ? `error_code ${errorCode}: ` : ''}${message}`);
    this.what = what;
    this.status = status;
    this.errorCode = errorCode;
    this.serverMessage = message;
  }
}

/**
 * `f()`, or `fallback` when the server says the group has no committed offsets yet: the lag routes
 * answer 404 with error_code 404 then (an unknown group is 40404, still an error), and a live group
 * that has not committed is not a failure to show.
 */
async function withoutCommits(f, fallback) {
  try {
    return await f();
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && e.errorCode === 404) return fallback;
    throw e;
  }
}

/**
 * One HTTP call. Returns the parsed JSON body (null for 204), or the text for text answers.
 * Throws ApiError carrying the server's error_code and message (or the HTTP status and body).
 */
export async function call(method, path, { body, accept = JSON_TYPE, contentType = JSON_TYPE } = {}) {
  const what = `${method} ${path}`;
  // X-Requested-With: a 401 then names the Session scheme, not Basic (no browser password dialog).
  const init = { method, headers: { Accept: accept, 'X-Requested-With': 'ringlog-console' } };
  // The login session's CSRF token (docs/security.md): every state-changing call carries it.
  const csrf = csrfToken();
  if (csrf && method !== 'GET' && method !== 'HEAD') init.headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) {
    init.headers['Content-Type'] = contentType;
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(what, 0, null, `the broker did not answer (${e.message})`);
  }
  const text = await response.text();
  const type = (response.headers.get('Content-Type') || '').split(';')[0];
  let parsed = null;
  if (text && type.endsWith('json')) {
    try {
      parsed = parseJsonExact(text);   // 64-bit integers exact (format.js)
    } catch (e) {
      throw new ApiError(what, response.status, null, `HTTP ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
  }
  if (!response.ok) {
    // Not logged in (or the session ended): the shell shows the login page (app.js).
    if (response.status === 401 && typeof window !== 'undefined') window.dispatchEvent(new Event('ringlog-login-required'));
    if (parsed && typeof parsed === 'object' && 'error_code' in parsed) {
      throw new ApiError(what, response.status, parsed.error_code, parsed.message);
    }
    throw new ApiError(what, response.status, null, `HTTP ${response.status} ${text.slice(0, 200)}`);
  }
  if (response.status === 204) return null;
  return parsed !== null ? parsed : text;
}

const enc = encodeURIComponent;

/** The readable ringlog_csrf cookie the login sets beside the HttpOnly session cookie; '' when none. */
export function csrfToken() {
  if (typeof document === 'undefined') return '';
  const pair = document.cookie.split('; ').find((c) => c.startsWith('ringlog_csrf='));
  return pair ? decodeURIComponent(pair.slice('ringlog_csrf='.length)) : '';
}

/** Who the console is logged in as: {principal, authentication, methods, via}; throws 401 when not. */
export const whoami = () => call('GET', '/v1/whoami');
/** POST /v1/login: sets the session cookie (HttpOnly, SameSite=Strict) and the CSRF cookie. */
export const login = (user, password) => call('POST', '/v1/login', { body: { user, password } });
export const logout = () => call('POST', '/v1/logout');

let clusterPromise = null;
/** This broker's cluster id (GET /v3/clusters: the one cluster). */
export function clusterId() {
  if (!clusterPromise) {
    clusterPromise = call('GET', '/v3/clusters').then((r) => r.data[0].cluster_id);
    clusterPromise.catch(() => { clusterPromise = null; });
  }
  return clusterPromise;
}
async function v3(path) {
  return `/v3/clusters/${enc(await clusterId())}${path}`;
}

export const api = {
  health: () => call('GET', '/v1/health'),
  metrics: () => call('GET', '/metrics', { accept: 'text/plain' }),
  brokers: () => call('GET', '/brokers', { accept: V2 }),
  cluster: async () => call('GET', await v3('')),
  /** v3 brokers: broker_id, host, port, rack, state (unfenced, fenced, controlled_shutdown), is_controller,
   *  decommission (null or DECOMMISSIONING). */
  brokersV3: async () => (await call('GET', await v3('/brokers'))).data,
  /** The metadata quorum: leader_id (null during an election), leader_epoch, high_watermark, voters' lag. */
  quorum: async () => call('GET', await v3('/quorum')),

  // -- topics
  topics: async () => (await call('GET', await v3('/topics'))).data,
  /** v2 describe: configs as an object and per partition leader and replicas with in_sync. */
  topicV2: (topic) => call('GET', `/topics/${enc(topic)}`, { accept: V2 }),
  /** v3 partitions: log_start_offset, high_watermark, log_end_offset, size_bytes, leader_epoch. */
  partitions: async (topic) => (await call('GET', await v3(`/topics/${enc(topic)}/partitions`))).data,
  configs: async (topic) => (await call('GET', await v3(`/topics/${enc(topic)}/configs`))).data,
  createTopic: async (body) => call('POST', await v3('/topics'), { body }),
  deleteTopic: async (topic) => call('DELETE', await v3(`/topics/${enc(topic)}`)),
  setPartitionCount: async (topic, count) =>
    call('PATCH', await v3(`/topics/${enc(topic)}`), { body: { partitions_count: count } }),
  /** data: [{name, value}] to SET, [{name, operation: 'DELETE'}] to go back to the default. */
  alterConfigs: async (topic, data) => call('POST', await v3(`/topics/${enc(topic)}/configs:alter`), { body: { data } }),

  // -- records
  /** {beginning_offset, end_offset} of a partition. */
  offsets: (topic, partition) => call('GET', `/topics/${enc(topic)}/partitions/${partition}/offsets`, { accept: V2 }),
  /** {offset, timestamp}: the earliest offset whose timestamp is >= ms (nulls when none). */
  offsetForTime: (topic, partition, ms) =>
    call('GET', `/topics/${enc(topic)}/partitions/${partition}/offsets?timestamp=${ms}`, { accept: V2 }),
  /** Records from `offset`, keys and values base64 (the binary format keeps any bytes). */
  records: (topic, partition, offset, maxBytes) =>
    call('GET', `/topics/${enc(topic)}/partitions/${partition}/records?offset=${offset}&max_bytes=${maxBytes}`,
      { accept: V2_BINARY }),
  /** v3 produce of one record; answers the delivery report (error_code 200) or throws. */
  produce: async (topic, record) => {
    const report = await call('POST', await v3(`/topics/${enc(topic)}/records`), { body: record });
    if (report.error_code !== 200) {
      throw new ApiError(`POST /v3/.../topics/${topic}/records`, 200, report.error_code, report.message);
    }
    return report;
  },

  // -- consumer groups
  groups: async () => (await call('GET', await v3('/consumer-groups'))).data,
  group: async (g) => call('GET', await v3(`/consumer-groups/${enc(g)}`)),
  consumers: async (g) => (await call('GET', await v3(`/consumer-groups/${enc(g)}/consumers`))).data,
  /** [] while the group has committed nothing (the server's 404 with error_code 404, as Confluent's). */
  lags: async (g) => withoutCommits(async () => (await call('GET', await v3(`/consumer-groups/${enc(g)}/lags`))).data, []),
  lagSummary: async (g) => withoutCommits(async () => call('GET', await v3(`/consumer-groups/${enc(g)}/lag-summary`)),
    { total_lag: 0, max_lag: 0 }),
  /** {interval_ms, samples_max, data: [{timestamp, total_lag}]}: the broker's samples, oldest first. */
  lagHistory: async (g) => call('GET', await v3(`/consumer-groups/${enc(g)}/lag-history`)),
  /** body: {to, value?, timestamp?, topics?, dry_run} (Kafka's reset-offsets). */
  resetOffsets: async (g, body) => call('POST', await v3(`/consumer-groups/${enc(g)}/offsets:reset`), { body }),

  // -- delayed delivery (docs/delayed-delivery.md)
  /** {now_ms, pending_records, window_records, unread_records, next_due_ms, lag_ms, moved_records,
   *  due_histogram: [{due_after_ms, due_within_ms, records}], schedulers: [...]} */
  delayedRecords: async () => call('GET', await v3('/delayed-records')),
  // ACLs (issue 30): the list, one ACL added, the ACLs one exact filter selects deleted.
  acls: async () => (await call('GET', await v3('/acls'))).data,
  createAcl: async (acl) => call('POST', await v3('/acls'), { body: acl }),
  deleteAcls: async (filter) => call('DELETE', await v3(`/acls?${new URLSearchParams(filter)}`)),
  // Client quotas (issue 31): every stored entity; one entity's keys set (or removed: null).
  clientQuotas: async () => (await call('GET', await v3('/client-quotas'))).data,
  alterClientQuotas: async (body) => call('PUT', await v3('/client-quotas'), { body }),

  // -- brokers, rebalance and decommission (issue 33)
  /** Every replica one broker holds: [{topic_name, partition_id, is_leader, is_in_sync}]. */
  brokerReplicas: async (id) => (await call('GET', await v3(`/brokers/${id}/partition-replicas`))).data,
  /** Every broker's configs: [{broker_id, name, value, is_default, source}]. */
  brokerConfigs: async () => (await call('GET', await v3('/brokers/-/configs'))).data,
  /** The partition reassignments under way: [{topic_name, partition_id, replica_ids, adding_replicas, removing_replicas}]. */
  reassignments: async () => (await call('GET', await v3('/topics/-/partitions/-/reassignment'))).data,
  /** A rebalance dry run (KafkaRebalancePlan; nothing changes); tolerance null: the server's default. */
  rebalancePlan: async (tolerance) =>
    call('GET', await v3(`/rebalance${tolerance === null ? '' : `?tolerance=${encodeURIComponent(tolerance)}`}`)),
  /** Starts the rebalance: the plan with `started` moves (202); 409 while reassignments are under way. */
  startRebalance: async (tolerance) =>
    call('POST', await v3('/rebalance'), { body: tolerance === null ? { dry_run: false } : { tolerance, dry_run: false } }),
  /** Cancels every partition reassignment under way: {cancelled}. */
  cancelReassignments: async () => call('DELETE', await v3('/rebalance')),
  /** Starts decommissioning a broker: its remove-broker task (202); refused with the reason (400 40002). */
  decommission: async (id) => call('DELETE', await v3(`/brokers/${id}`)),
  /** Every broker task (KafkaBrokerTask: remove-broker with partitions_remaining). */
  brokerTasks: async () => (await call('GET', await v3('/brokers/-/tasks'))).data,
  /** Cancels a broker's decommission: its task, task_status CANCELED. */
  cancelDecommission: async (id) => call('DELETE', await v3(`/brokers/${id}/tasks/remove-broker`)),

  // -- dead letters (docs/retries.md)
  /** [{topic_name, original_topic_name, partitions_count, dead_letters, redriven, pending}] */
  deadLetterTopics: async (g) => (await call('GET', await v3(`/consumer-groups/${enc(g)}/dead-letters`))).data,
  /** Dead letters of one dead-letter topic: [{partition_id, offset, original_*, attempts, reasons, redriven, ...}] */
  deadLetters: async (g, topic, { limit = 100, filter = '' } = {}) =>
    (await call('GET', await v3(`/consumer-groups/${enc(g)}/dead-letters/${enc(topic)}/records`
      + `?limit=${limit}${filter ? `&filter=${encodeURIComponent(filter)}` : ''}`))).data,
  /** body: {to: original|retry, offsets?: [{partition, offset}]}; answers {selected, redriven, already_redriven, failures}. */
  redrive: async (g, topic, body) =>
    call('POST', await v3(`/consumer-groups/${enc(g)}/dead-letters/${enc(topic)}/redrive`), { body }),
};

/** ws://host/v1/ws for the page's own origin. */
export function webSocketUrl() {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/v1/ws`;
}

/** Runs fn over items with at most `limit` in flight; results in item order. */
export async function mapLimited(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
