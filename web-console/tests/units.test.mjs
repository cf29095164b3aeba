// Units of the console's pure modules (no DOM): formatting, record decoding, filters, export,
// Prometheus parsing and rates, routes. Run: node --test tests/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brokerRole, controllerLabel, isDedicatedController, linkPieces, dueBucketLabel, formatBytes, formatCount, formatDue, formatDurationMs, formatRate, formatTimestamp, parseJsonExact, parseUtcDateTime, quorumAnsweredByFollower, quorumMembers } from '../src/format.js';
import { decodePayload, decodeRecord, exportRecords, fromBase64, hexDump, recordMatches, textToBase64 } from '../src/records.js';
import { mergeLagHistory, parsePrometheus, rates, summarize } from '../src/metrics.js';
import { filterAcls, missingPermission } from '../src/acls.js';
import { entityText, formEntity, quotaRows, quotaValue } from '../src/quotas.js';
import {
  brokerRows, brokerState, decommissionBlock, formatByteRate, formatBytesExact, formatChange, moveRows, parseTolerance,
  planBrokerRows, planSummary, reassignmentRows, replicaCounts, startRebalanceBlock, taskRows, throttledRates,
} from '../src/brokers.js';

const b64 = (s) => Buffer.from(s).toString('base64');

test('formatting: bytes, rates, durations, timestamps', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1536), '1.50 KiB');
  assert.equal(formatBytes(5 * 1024 * 1024 * 1024), '5.00 GiB');
  assert.equal(formatBytes(null), '-');
  assert.equal(formatRate(0), '0');
  assert.equal(formatRate(0.25), '0.25');
  assert.equal(formatRate(1234.5), '1,235');
  assert.equal(formatDurationMs('604800000'), '7 d');
  assert.equal(formatDurationMs(90000), '90 s');
  assert.equal(formatDurationMs(-1), 'unlimited');
  assert.equal(formatTimestamp(0), '1970-01-01 00:00:00.000');
  assert.equal(parseUtcDateTime('1970-01-01T00:00:01'), 1000);
  assert.equal(parseUtcDateTime('nonsense'), null);
});

test('payloads: JSON pretty-printed, else text, else hex; null stays null', () => {
  assert.deepEqual(decodePayload(null), { kind: 'null', text: 'null', size: 0 });
  const json = decodePayload(fromBase64(b64('{"a":[1,2]}')));
  assert.equal(json.kind, 'json');
  assert.equal(json.text, '{\n  "a": [\n    1,\n    2\n  ]\n}');
  assert.equal(decodePayload(fromBase64(b64('hello, wörld'))).kind, 'text');
  assert.equal(decodePayload(fromBase64(b64('{not json'))).kind, 'text');
  const binary = decodePayload(new Uint8Array([0, 1, 2, 0xff, 0x41]));
  assert.equal(binary.kind, 'hex');
  assert.equal(binary.text, `00000000  ${'00 01 02 ff 41'.padEnd(47)}  ....A`);   // xxd's columns
  assert.equal(decodePayload(new Uint8Array([0x61, 0x00])).kind, 'hex');   // a NUL is not text
  assert.equal(hexDump(new Uint8Array(17)).split('\n').length, 2);
});

test('records: filter by key, header and value text; export keeps what was shown', () => {
  const raw = [
    { topic: 't', partition: 0, offset: 7, timestamp: 1, key: b64('user-1'), value: b64('{"amount":42}'),
      headers: [{ key: 'source', value: b64('console') }] },
    { topic: 't', partition: 0, offset: 8, timestamp: 2, key: null, value: Buffer.from([0, 1]).toString('base64'), headers: [] },
  ];
  const d = raw.map(decodeRecord);
  assert.ok(recordMatches(d[0], { key: 'USER', header: '', value: '' }));
  assert.ok(recordMatches(d[0], { key: '', header: 'source=cons', value: '"amount": 42' }));
  assert.ok(!recordMatches(d[0], { key: '', header: 'other', value: '' }));
  assert.ok(!recordMatches(d[1], { key: 'user', header: '', value: '' }));
  assert.ok(recordMatches(d[1], { key: '', header: '', value: '' }));
  const out = exportRecords(d, raw);
  assert.deepEqual(out[0].key, { text: 'user-1' });
  assert.deepEqual(out[0].value, { json: { amount: 42 } });
  assert.deepEqual(out[0].headers, [{ key: 'source', value: b64('console') }]);
  assert.equal(out[1].key, null);
  assert.deepEqual(out[1].value, { base64: 'AAE=' });
  assert.equal(textToBase64('é'), 'w6k=');
});

test('metrics: Prometheus text parsed, per-topic sums and per-second rates', () => {
  const before = summarize(parsePrometheus([
    '# TYPE ringlog_topic_records_in_total counter',
    'ringlog_topic_records_in_total{topic="a"} 10',
    'ringlog_topic_bytes_in_total{topic="a"} 1000',
    'ringlog_partition_size_bytes{topic="a",partition="0"} 50',
    'ringlog_partition_size_bytes{topic="a",partition="1"} 70',
    'ringlog_http_requests_total{route="GET /x",status="200"} 3',
  ].join('\n')));
  assert.equal(before.topics.a.size_bytes, 120);
  const compacted = summarize(parsePrometheus([
    'ringlog_log_cleaner_dirty_ratio{topic="t",partition="0"} 0.25',
    'ringlog_log_cleaner_dirty_ratio{topic="t",partition="1"} 0.5',
    'ringlog_log_cleaner_bytes_read_total{topic="t",partition="0"} 100',
    'ringlog_log_cleaner_bytes_read_total{topic="t",partition="1"} 20',
    'ringlog_log_cleaner_seconds_total{topic="t",partition="0"} 1.5',
    'ringlog_log_cleaner_seconds_total{topic="t",partition="1"} 0.25',
    'ringlog_log_cleaner_last_clean_timestamp_seconds{topic="t",partition="0"} -1',
    'ringlog_log_cleaner_last_clean_timestamp_seconds{topic="t",partition="1"} 1796163164',
  ].join('\n')));
  assert.deepEqual(compacted.cleaner.t, { dirty_ratio: 0.5, bytes_cleaned: 120, cleaner_s: 1.75, last_clean_s: 1796163164 });
  // Each partition's own figures, for a compacted topic's page.
  assert.deepEqual(compacted.cleanerPartitions.t, {
    0: { dirty_ratio: 0.25, bytes_cleaned: 100, cleaner_s: 1.5, last_clean_s: -1 },
    1: { dirty_ratio: 0.5, bytes_cleaned: 20, cleaner_s: 0.25, last_clean_s: 1796163164 },
  });
  assert.equal(before.totals.records_in, 10);
  const after = summarize(parsePrometheus('ringlog_topic_records_in_total{topic="a"} 30\n'
    + 'ringlog_topic_records_in_total{topic="q\\"b"} 4\nringlog_topic_bytes_in_total{topic="a"} 3000\n'));
  const r = rates(before, after, 2);
  assert.equal(r.totals.records_in, 12);
  assert.equal(r.topics.a.bytes_in, 1000);
  assert.equal(r.topics['q"b'].records_in, 2);
  const restarted = rates(after, before, 1);   // counters went down: count from zero
  assert.equal(restarted.topics.a.records_in, 10);
});

test('clusterHealth reads the broker\'s partition health counts, null when it reports none', async () => {
  const { clusterHealth } = await import('../src/page-overview.js');
  assert.deepEqual(clusterHealth({ under_replicated_partitions_count: 2, offline_partitions_count: 1 }),
    { underReplicated: 2, offline: 1 });
  assert.deepEqual(clusterHealth({ under_replicated_partitions_count: 0, offline_partitions_count: 0 }),
    { underReplicated: 0, offline: 0 });
  assert.equal(clusterHealth({ cluster_id: 'c' }), null);
  assert.equal(clusterHealth(null), null);
});

test('quorum: voters then observers (broker-only nodes), and the role of each broker', () => {
  const q = {
    voters: [{ replica_id: 1, log_end_offset: 40, lag: 0 }, { replica_id: 2, log_end_offset: null, lag: null }],
    observers: [{ replica_id: 4, log_end_offset: 38, lag: 2 }],
  };
  assert.deepEqual(quorumMembers(q), [
    { replica_id: 1, kind: 'voter', log_end_offset: 40, lag: 0, leader_only: false },
    { replica_id: 2, kind: 'voter', log_end_offset: null, lag: null, leader_only: false },
    { replica_id: 4, kind: 'observer', log_end_offset: 38, lag: 2, leader_only: false },
  ]);
  assert.deepEqual(quorumMembers({ voters: [{ replica_id: 0 }] }),
    [{ replica_id: 0, kind: 'voter', log_end_offset: null, lag: null, leader_only: false }]);
  assert.equal(brokerRole(1, 1, q), 'broker, voter, active controller');
  assert.equal(brokerRole(2, 1, q), 'broker, voter');
  assert.equal(brokerRole(4, 1, q), 'broker only (observer)');
  assert.equal(brokerRole(5, 1, q), 'broker');
});

test('quorum: a voter that is not a registered broker is a dedicated controller', () => {
  const q = { voters: [{ replica_id: 1 }, { replica_id: 2 }], observers: [{ replica_id: 4 }] };
  assert.deepEqual(quorumMembers(q, [2, 4]).map((m) => m.kind), ['voter, controller only', 'voter', 'observer']);
  assert.equal(controllerLabel(1, [2, 4]), 'node 1 (dedicated controller)');
  assert.equal(controllerLabel(2, [2, 4]), 'broker 2');
  assert.equal(controllerLabel(null, [2, 4]), 'electing');
});

test('quorum: a voter the leader never heard from is not reachable, not a dedicated controller', () => {
  // Answered by the leader (node 2): voter 1 fetched, voter 3 never did (not started, or cut off).
  const q = {
    node_id: 2, leader_id: 2,
    voters: [{ replica_id: 1, last_fetch_timestamp: 1700000000000 }, { replica_id: 2, last_fetch_timestamp: null },
      { replica_id: 3, last_fetch_timestamp: null }],
  };
  assert.deepEqual(quorumMembers(q, [2]).map((m) => m.kind),
    ['voter, controller only', 'voter', 'voter, not reachable (never fetched)']);
  assert.deepEqual(quorumMembers(q).map((m) => m.kind), ['voter', 'voter', 'voter, not reachable (never fetched)']);
  // A follower does not know who fetched: no such claim.
  assert.deepEqual(quorumMembers({ ...q, node_id: 1 }, [2]).map((m) => m.kind),
    ['voter, controller only', 'voter', 'voter, controller only']);
});

test('quorum served by a follower: what it replicates is shown, the leader-only figures say so', () => {
  // Node 2 answers, node 1 leads: every voter's offsets are null in its answer (KIP-595: the
  // leader tracks them). The table showed "-" for all of them, read as "nothing".
  const q = {
    node_id: 2, leader_id: 1, leader_epoch: 7, high_watermark: 120, log_end_offset: 118,
    voters: [{ replica_id: 1, log_end_offset: null, lag: null }, { replica_id: 2, log_end_offset: null, lag: null },
      { replica_id: 3, log_end_offset: null, lag: null }],
    observers: [],
  };
  assert.equal(quorumAnsweredByFollower(q), true);
  assert.deepEqual(quorumMembers(q), [
    { replica_id: 1, kind: 'voter', log_end_offset: null, lag: null, leader_only: true },
    { replica_id: 2, kind: 'voter', log_end_offset: 118, lag: null, leader_only: true },   // its own: known
    { replica_id: 3, kind: 'voter', log_end_offset: null, lag: null, leader_only: true },
  ]);
  // The leader itself, and an election (no leader): nothing is labelled leader-only.
  assert.equal(quorumAnsweredByFollower({ ...q, node_id: 1 }), false);
  assert.equal(quorumMembers({ ...q, node_id: 1 }).some((m) => m.leader_only), false);
  assert.equal(quorumAnsweredByFollower({ ...q, leader_id: null }), false);
  assert.equal(quorumMembers({ ...q, leader_id: null }).some((m) => m.leader_only), false);
});

test('delayed delivery: histogram bucket labels and due times in words', () => {
  assert.equal(dueBucketLabel(null, 0), 'due now');
  assert.equal(dueBucketLabel(0, 1000), 'within 1 s');
  assert.equal(dueBucketLabel(60000, 600000), 'in 1 min to 10 min');
  assert.equal(dueBucketLabel(86400000, null), 'in more than 1 d');
  assert.equal(formatDue(null, 0), '-');
  assert.equal(formatDue(10500, 9000), 'in 1.5 s');
  assert.equal(formatDue(1000, 3000), '2.0 s ago');
  assert.equal(formatDue(250, 0), 'in 250 ms');
  assert.equal(formatDue(3 * 3600000, 0), 'in 3.0 h');
});

test('the Messages page counts a partition in offsets (compaction gaps and markers sit in the range), not records', async () => {
  const { partitionLabel } = await import('../src/page-messages.js');
  assert.equal(partitionLabel({ partition_id: 0, log_start_offset: 0, high_watermark: 7 }), '0 (7 offsets)');
  assert.equal(partitionLabel({ partition_id: 2, log_start_offset: 4, high_watermark: 5 }), '2 (1 offset)');
});

test('a dedicated controller: told from its /quorum answer, and the brokers its 421 names are links', () => {
  const q = { node_id: 1, voters: [{ replica_id: 1 }, { replica_id: 2 }], observers: [{ replica_id: 4 }] };
  assert.equal(isDedicatedController(q, [4, 5]), true);
  assert.equal(isDedicatedController({ ...q, node_id: 2 }, [2, 4]), false);   // a combined voter
  assert.equal(isDedicatedController({ ...q, node_id: 4 }, [4, 5]), false);   // a broker-only node
  assert.equal(isDedicatedController(null, [4]), false);
  const message = 'node 1 is a dedicated controller (process.roles=controller) and serves no records; '
    + 'send GET /topics/t/records to a broker: http://127.0.0.1:8184, http://127.0.0.1:8185.';
  const pieces = linkPieces(message, '#/messages');
  assert.deepEqual(pieces.filter((p) => p.url), [
    { text: 'http://127.0.0.1:8184', url: 'http://127.0.0.1:8184/console/#/messages' },
    { text: 'http://127.0.0.1:8185', url: 'http://127.0.0.1:8185/console/#/messages' },
  ]);
  assert.equal(pieces.map((p) => p.text).join(''), message);   // nothing lost or added
  assert.deepEqual(linkPieces('see http://h:1/v3/clusters (x)'), [
    { text: 'see ' }, { text: 'http://h:1/v3/clusters', url: 'http://h:1/v3/clusters' }, { text: ' (x)' }]);
  assert.deepEqual(linkPieces('no links here'), [{ text: 'no links here' }]);
});

test('64-bit integers: parsed and shown exactly, beyond 2^53 (Long.MAX_VALUE sentinels, offsets)', () => {
  const text = '{"retention_ms":9223372036854775807,"low":-9223372036854775808,"small":42,"big_text":"9223372036854775807 \\" 12345678901234567890",' +
    '"f":1.5e300,"list":[9007199254740993,9007199254740991],"neg":-1}';
  const v = parseJsonExact(text);
  assert.equal(v.retention_ms, 9223372036854775807n);
  assert.equal(v.low, -9223372036854775808n);
  assert.equal(v.small, 42);
  assert.equal(v.big_text, '9223372036854775807 " 12345678901234567890');
  assert.equal(v.f, 1.5e300);
  assert.deepEqual(v.list, [9007199254740993n, 9007199254740991]);
  assert.equal(v.neg, -1);
  assert.equal(formatCount(v.retention_ms), '9,223,372,036,854,775,807');
  assert.equal(String(v.retention_ms), '9223372036854775807');
  assert.deepEqual(parseJsonExact('[1,"a"]'), [1, 'a']);
});

test('64-bit durations: Long.MAX_VALUE ms shown exactly, in text or parsed', () => {
  assert.equal(formatDurationMs('9223372036854775807'), '9223372036854775807 ms');
  assert.equal(formatDurationMs(9223372036854775807n), '9223372036854775807 ms');
  assert.equal(formatDurationMs('-1'), 'unlimited');
  assert.equal(formatDurationMs('604800000'), '7 d');
  assert.equal(formatTimestamp(9223372036854775807n), '9223372036854775807');
});

test('ACLs: a missing permission titles the disabled button; the list filters by principal and resource', () => {
  assert.equal(missingPermission(['DESCRIBE', 'ALTER'], 'ALTER'), null);
  assert.equal(missingPermission(['DESCRIBE'], 'ALTER'),
    'needs ALTER on the cluster (an ACL ALLOW ALTER on CLUSTER kafka-cluster)');
  assert.equal(missingPermission(undefined, 'DELETE', 'TOPIC orders'), 'needs DELETE on the topic (an ACL ALLOW DELETE on TOPIC orders)');
  const acls = [
    { principal: 'User:alice', resource_type: 'TOPIC', resource_name: 'orders' },
    { principal: 'User:bob', resource_type: 'GROUP', resource_name: 'billing' },
  ];
  assert.deepEqual(filterAcls(acls, { principal: 'ALICE' }).map((a) => a.principal), ['User:alice']);
  assert.deepEqual(filterAcls(acls, { resource: 'group' }).map((a) => a.principal), ['User:bob']);
  assert.equal(filterAcls(acls).length, 2);
});

test('client quotas: rows by entity, the entity and value of the form', () => {
  const rows = quotaRows([
    { entity: { user: 'alice', 'client-id': '<default>' }, quotas: { producer_byte_rate: 1048576, consumer_byte_rate: 10 } },
    { entity: { 'client-id': 'app' }, quotas: { request_percentage: 50 } },
  ]);
  assert.deepEqual(rows.map((r) => `${entityText(r.entity)} ${r.key}=${r.value}`), [
    'client-id=app request_percentage=50',
    'user=alice,client-id=<default> consumer_byte_rate=10',
    'user=alice,client-id=<default> producer_byte_rate=1048576',
  ]);
  assert.deepEqual(formEntity({ user: ' alice ', 'client-id': 'x' }, { 'client-id': true }), { user: 'alice', 'client-id': '<default>' });
  assert.throws(() => formEntity({ user: '' }), /name a user, a client id or an ip/);
  assert.equal(quotaValue('producer_byte_rate', '1024'), 1024);
  assert.throws(() => quotaValue('producer_byte_rate', '0'), /producer_byte_rate must be a number above 0, got "0"/);
  assert.throws(() => quotaValue('producer_byte_rate', 'abc'), /must be a number above 0/);
});

test('brokers: state in words, replica and leader counts, throttled rates set, rows by id', () => {
  assert.deepEqual(brokerState({ state: 'unfenced', decommission: null }), { text: 'running', good: true });
  assert.deepEqual(brokerState({ state: 'fenced' }), { text: 'fenced', good: false });
  assert.deepEqual(brokerState({ state: 'controlled_shutdown' }), { text: 'in controlled shutdown', good: false });
  assert.deepEqual(brokerState({ state: 'unfenced', decommission: 'DECOMMISSIONING' }), { text: 'decommissioning', good: false });
  assert.deepEqual(brokerState({ state: null }), { text: 'unknown', good: false });
  assert.deepEqual(replicaCounts([{ is_leader: true }, { is_leader: false }, { is_leader: true }]), { replicas: 3, leaders: 2 });
  const throttles = throttledRates([
    { broker_id: 2, name: 'follower.replication.throttled.rate', value: '2048', is_default: false },
    { broker_id: 2, name: 'leader.replication.throttled.rate', value: '10485760', is_default: false },
    { broker_id: 1, name: 'leader.replication.throttled.rate', value: '9223372036854775807', is_default: true },
    { broker_id: 1, name: 'num.io.threads', value: '8', is_default: false },
    { broker_id: 3, name: 'follower.replication.throttled.rate', value: null, is_default: false },
  ]);
  assert.deepEqual([...throttles.entries()], [[2, [
    { name: 'leader.replication.throttled.rate', value: '10485760' },
    { name: 'follower.replication.throttled.rate', value: '2048' }]]]);
  assert.equal(formatByteRate('10485760'), '10,485,760 bytes/s (10.0 MiB/s)');
  assert.equal(formatByteRate('512'), '512 bytes/s');
  assert.equal(formatByteRate('9223372036854775807'), '9,223,372,036,854,775,807 bytes/s (8192.0 PiB/s)');
  assert.equal(formatByteRate('1e6'), '1e6');
  const plan = { brokers: [
    { broker_id: 1, replicas: { before: 9, after: 8 }, leaders: { before: 4, after: 4 }, size_bytes: { before: 1536, after: 1024 } },
    { broker_id: 2, replicas: { before: 7, after: 8 }, leaders: { before: 4, after: 4 }, size_bytes: { before: 9007199254740993n, after: 0 } }] };
  const rows = brokerRows([
    { broker_id: 2, host: 'b', port: 9, rack: 'r2', state: 'fenced', is_controller: false, decommission: null },
    { broker_id: 1, host: 'a', port: 8, rack: null, state: 'unfenced', is_controller: true, decommission: null },
    { broker_id: 3, host: null, port: null, rack: null, state: 'unfenced' }],
  { replicas: new Map([[1, { replicas: 10, leaders: 5 }]]), plan, throttles });
  assert.deepEqual(rows.map((r) => [r.broker_id, r.address, r.rack, r.state.text, r.is_controller, r.replicas, r.leaders, r.size_bytes, r.throttles.length]), [
    [1, 'a:8', null, 'running', true, 10, 5, 1536, 0],   // counts from partition-replicas first
    [2, 'b:9', 'r2', 'fenced', false, 7, 4, 9007199254740993n, 2],   // else the plan's "before"
    [3, '-', null, 'running', false, null, null, null, 0],   // nobody answered: null, shown '-'
  ]);
});

test('bytes and changes exactly: counts beyond 2^53 stay exact', () => {
  assert.equal(formatBytesExact(1), '1 byte');
  assert.equal(formatBytesExact(1023), '1,023 bytes');
  assert.equal(formatBytesExact(1536), '1,536 bytes (1.50 KiB)');
  assert.equal(formatBytesExact(9007199254740993n), '9,007,199,254,740,993 bytes (8.00 PiB)');
  assert.equal(formatBytesExact(null), '-');
  assert.equal(formatChange({ before: 10, after: 8 }), '10 → 8 (−2)');
  assert.equal(formatChange({ before: 1000, after: 1200 }), '1,000 → 1,200 (+200)');
  assert.equal(formatChange({ before: 5, after: 5 }), '5 (no change)');
  assert.equal(formatChange({ before: 9007199254740993n, after: 0 }), '9,007,199,254,740,993 → 0 (−9,007,199,254,740,993)');
  assert.equal(formatChange({ before: 9007199254740993n, after: 9007199254740995n }), '9,007,199,254,740,993 → 9,007,199,254,740,995 (+2)');
  assert.equal(formatChange(undefined), '-');
});

test('rebalance plan: summary, per-broker before/after, moves; why Start is disabled', () => {
  const balanced = { tolerance: 0.1, balanced: true, dry_run: true, started: 0, bytes_to_move: 0, moves: [], skipped: [],
    brokers: [{ broker_id: 0, rack: null, excluded: false, replicas: { before: 3, after: 3 }, leaders: { before: 3, after: 3 },
      size_bytes: { before: 0, after: 0 } }], reassignments_in_progress: 0 };
  assert.equal(planSummary(balanced), 'balanced: nothing to move (tolerance 0.1)');
  assert.deepEqual(planBrokerRows(balanced), [{ broker_id: 0, rack: '-', excluded: false, excluded_reason: null, replicas: '3 (no change)',
    leaders: '3 (no change)', size_bytes: '0 bytes (no change)' }]);
  const fenced = { ...balanced, brokers: [{ ...balanced.brokers[0], excluded: true, excluded_reason: 'fenced' }] };
  assert.equal(planBrokerRows(fenced)[0].excluded_reason, 'fenced');
  const moving = { ...balanced, bytes_to_move: 2048,
    moves: [{ topic_name: 'orders', partition_id: 1, replicas: [1, 2], target_replicas: [2, 3], adding_replicas: [3],
      removing_replicas: [1], size_bytes: 2048 }],
    skipped: [{ topic_name: 'x', partition_id: 0, reason: 'would fall below min.insync.replicas' }] };
  assert.equal(planSummary(moving), '1 move brings every broker within the tolerance 0.1: 2,048 bytes (2.00 KiB) to move; 1 partition skipped');
  assert.equal(planSummary({ ...moving, moves: [moving.moves[0], moving.moves[0]] }).startsWith('2 moves bring every broker'), true);
  assert.equal(planSummary({ ...moving, balanced: false }),
    '1 move (2,048 bytes (2.00 KiB) to move) still leaves the brokers outside the tolerance 0.1; 1 partition skipped');
  assert.equal(planSummary({ ...balanced, balanced: false, skipped: [] }), 'not balanced within the tolerance 0.1, and no move would help');
  assert.equal(planSummary({ ...moving, dry_run: false, started: 1 }).endsWith('; 1 move started'), true);
  assert.deepEqual(moveRows(moving), [{ partition: 'orders-1', from: '1, 2', to: '2, 3', adding: '3', removing: '1', size: '2,048 bytes (2.00 KiB)' }]);
  const all = ['DESCRIBE', 'ALTER'];
  assert.equal(startRebalanceBlock(all, moving, 0), null);
  assert.equal(startRebalanceBlock(['DESCRIBE'], moving, 0), 'needs ALTER on the cluster (an ACL ALLOW ALTER on CLUSTER kafka-cluster)');
  assert.equal(startRebalanceBlock(all, moving, 2), '2 partition reassignments under way: wait for them or cancel them first');
  assert.equal(startRebalanceBlock(all, { ...moving, reassignments_in_progress: 1 }, 0),
    '1 partition reassignment under way: wait for it or cancel it first');
  assert.equal(startRebalanceBlock(all, balanced, 0), 'nothing to move');
  assert.equal(startRebalanceBlock(all, null, 0), 'no plan: the dry run did not answer');
  assert.equal(parseTolerance(''), null);
  assert.equal(parseTolerance(' 0.25 '), 0.25);
  assert.throws(() => parseTolerance('-1'), /the tolerance must be a number of at least 0, got "-1"/);
  assert.throws(() => parseTolerance('lots'), /got "lots"/);
});

test('decommission and reassignment progress: tasks, moves under way, why Decommission is disabled', () => {
  assert.equal(decommissionBlock(['ALTER'], { broker_id: 1, decommission: null }), null);
  assert.equal(decommissionBlock(['ALTER'], { broker_id: 1, decommission: 'DECOMMISSIONING' }), 'broker 1 is being decommissioned');
  assert.match(decommissionBlock([], { broker_id: 1 }), /needs ALTER on the cluster/);
  assert.deepEqual(taskRows([
    { task_type: 'remove-broker', broker_id: 3, task_status: 'IN_PROGRESS', partitions_remaining: 12, reassignments_in_progress: 4,
      error_code: null, error_message: null },
    { task_type: 'remove-broker', broker_id: 1, task_status: 'CANCELED', partitions_remaining: 2, reassignments_in_progress: 0,
      error_code: 40002, error_message: 'cancelled by User:admin' },
    { task_type: 'add-broker', broker_id: 2, task_status: 'IN_PROGRESS' }]), [
    { broker_id: 1, status: 'cancelled', in_progress: false, partitions_remaining: 2, reassignments_in_progress: 0,
      error: 'error_code 40002: cancelled by User:admin' },
    { broker_id: 3, status: 'in progress', in_progress: true, partitions_remaining: 12, reassignments_in_progress: 4, error: null },
  ]);
  assert.deepEqual(reassignmentRows([
    { topic_name: 'b', partition_id: 0, replica_ids: [2, 3, 1], adding_replicas: [3], removing_replicas: [1] },
    { topic_name: 'a', partition_id: 10, replica_ids: [1], adding_replicas: [], removing_replicas: [] },
    { topic_name: 'a', partition_id: 2, replica_ids: [1, 2], adding_replicas: [2], removing_replicas: [] }]).map((r) => Object.values(r).join(' | ')), [
    'a-2 | 1, 2 | 2 | -', 'a-10 | 1 | - | -', 'b-0 | 2, 3, 1 | 3 | 1']);
});

test('lag history: the samples shown are kept when the coordinator moves and its history starts empty', () => {
  const before = [{ t: 1000, v: 5 }, { t: 6000, v: 7 }];
  let shown = mergeLagHistory([], before, 720);
  assert.deepEqual(shown, before);
  // The old coordinator's next answer: one more sample, the older ones again.
  shown = mergeLagHistory(shown, [...before, { t: 11000, v: 9 }], 720);
  assert.deepEqual(shown.map((p) => p.t), [1000, 6000, 11000]);
  // The coordinator moved: the new one has one sample of its own; the ones shown stay.
  shown = mergeLagHistory(shown, [{ t: 17000, v: 2 }], 720);
  assert.deepEqual(shown, [{ t: 1000, v: 5 }, { t: 6000, v: 7 }, { t: 11000, v: 9 }, { t: 17000, v: 2 }]);
  // Bounded to the coordinator's own samples_max, the oldest dropped; an answer's value wins.
  shown = mergeLagHistory(shown, [{ t: 17000, v: 3 }, { t: 22000, v: 4 }], 3);
  assert.deepEqual(shown, [{ t: 11000, v: 9 }, { t: 17000, v: 3 }, { t: 22000, v: 4 }]);
});
