#pragma once
// The broker API every front end calls (design.md section 3): typed produce, fetch,
// list-offsets and admin calls named after Kafka's requests. Calls are asynchronous: `done`
// runs exactly once, on some shard thread (never inside the caller's stack for disk waits); the
// caller hops back to its own executor. Calls may be made from any thread.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/base/random.h"
#include "ringlog/io/disk_executor.h"
#include "ringlog/io/file.h"
#include "ringlog/broker/errc.h"
#include "ringlog/partition/requests.h"
#include "ringlog/security/principal.h"
#include "ringlog/broker/groups.h"
#include "ringlog/broker/transactions.h"
#include "ringlog/broker/admin.h"
#include "ringlog/broker/security.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"
#include "ringlog/rpc/cluster_transport.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/security/acl.h"
#include "ringlog/storage/log_dir_failure.h"
#include "ringlog/storage/segment_file_budget.h"
#include "ringlog/controller/rebalance_planner.h"

namespace ringlog::io {
class file_system;
}

namespace ringlog::broker {

/// One key of the properties file as set and as its built-in default (broker_config::static_config_values).
struct static_config_value {
  std::string value;
  std::string default_value;
};

/// Broker-wide settings, Kafka key names in comments. Parsed and bounds-checked by the config module.
struct broker_config {
  int32_t node_id = 0;                               // node.id
  /// process.roles names broker. False: a dedicated controller (process.roles=controller, KIP-631):
  /// a voter of the metadata quorum and, when it leads, the active controller, but never a
  /// registered broker: it hosts no partitions and serves no records or consumer groups.
  bool process_role_broker = true;
  std::string cluster_id = "ringlog-cluster";        // cluster id reported by /v3/clusters
  std::string log_dir = "./ringlog-data";            // log.dirs (first entry)
  int32_t num_partitions = 1;                        // num.partitions: default for new topics
  int16_t default_replication_factor = -1;           // default.replication.factor (-1: 3 with >= 3 brokers, else all)
  bool auto_create_topics_enable = true;             // auto.create.topics.enable
  /// authorizer.class.name names the StandardAuthorizer: ACLs are kept and the ACL APIs served.
  bool authorizer_enabled = false;
  std::vector<std::string> super_users;              // super.users, parsed (User:admin, ...)
  bool allow_everyone_if_no_acl_found = false;       // allow.everyone.if.no.acl.found
  int32_t message_max_bytes = 1048588;               // message.max.bytes: largest record batch
  int64_t log_segment_bytes = 1024 * 1024 * 1024;    // log.segment.bytes
  int64_t log_roll_ms = 7LL * 24 * 3600 * 1000;      // log.roll.ms
  int64_t log_retention_ms = 7LL * 24 * 3600 * 1000; // log.retention.ms (-1 unlimited)
  int64_t log_retention_bytes = -1;                  // log.retention.bytes
  int64_t log_retention_check_interval_ms = 300000;  // log.retention.check.interval.ms
  int32_t log_index_interval_bytes = 4096;           // log.index.interval.bytes
  std::string log_flush_policy = "fsync";            // log.flush.policy: fsync (before ack) | replication
  bool log_direct_io = false;                        // log.direct.io (ringlog): O_DIRECT segment appends
  bool log_cleaner_enable = true;                    // log.cleaner.enable
  int64_t log_cleaner_dedupe_buffer_size = 128LL << 20;  // log.cleaner.dedupe.buffer.size, split over the shards
  int64_t log_cleaner_io_max_bytes_per_second = INT64_MAX;  // log.cleaner.io.max.bytes.per.second, per shard
  int64_t log_cleaner_backoff_ms = 15000;            // log.cleaner.backoff.ms
  // Broker-level defaults of the compaction topic configs (topic_config_default; Kafka's names).
  std::string log_cleanup_policy = "delete";          // log.cleanup.policy: cleanup.policy
  std::string compression_type = "producer";          // compression.type: the topic config of that name
  // KIP-390 levels, the topic configs of the same names (bounds and defaults: codec/compression.h).
  int32_t compression_gzip_level = -1;                // compression.gzip.level
  int32_t compression_lz4_level = 9;                  // compression.lz4.level
  int32_t compression_zstd_level = 3;                 // compression.zstd.level
  double log_cleaner_min_cleanable_ratio = 0.5;       // log.cleaner.min.cleanable.ratio: min.cleanable.dirty.ratio
  int64_t log_cleaner_delete_retention_ms = 86400000; // log.cleaner.delete.retention.ms: delete.retention.ms
  int64_t log_cleaner_min_compaction_lag_ms = 0;      // log.cleaner.min.compaction.lag.ms: min.compaction.lag.ms
  int64_t log_cleaner_max_compaction_lag_ms = INT64_MAX;  // log.cleaner.max.compaction.lag.ms: max.compaction.lag.ms
  int32_t min_insync_replicas = 1;                   // min.insync.replicas
  int32_t produce_records_max = 10000;               // ringlog: records per produce request
  int32_t partitions_max = 10000;                    // broker.partitions.max (ringlog): all partitions of all
                                                     // topics; each holds open files, so the default
                                                     // follows the process's open-file limit
  int64_t fetch_wait_max_ms = 60000;                 // ringlog: longest long-poll of a fetch
  int32_t fetch_waiters_per_partition_max = 10000;   // ringlog: parked long-polls per partition
  int32_t offsets_topic_num_partitions = 8;          // offsets.topic.num.partitions: of __consumer_offsets at creation
  int32_t transaction_state_log_num_partitions = 8;  // transaction.state.log.num.partitions: of __transaction_state at creation
  int64_t transaction_max_timeout_ms = 900000;       // transaction.max.timeout.ms: longest transaction.timeout.ms
  int64_t transactional_id_expiration_ms = 604800000;  // transactional.id.expiration.ms: idle transactional ids are forgotten
  int64_t transaction_abort_timed_out_transaction_cleanup_interval_ms = 10000;  // how often timed-out transactions are aborted
  int64_t group_expiry_interval_ms = 1000;           // ringlog: how often lapsed consumer sessions are swept
  int64_t group_initial_rebalance_delay_ms = 3000;   // group.initial.rebalance.delay.ms (Kafka's key and default)
  int32_t offsets_retention_minutes = 10080;         // offsets.retention.minutes (KIP-211; Kafka's default, 7 days)
  int64_t offsets_retention_check_interval_ms = 600000;  // offsets.retention.check.interval.ms (Kafka's default)
  int64_t delay_max_ms = 7LL * 24 * 3600 * 1000;     // delay.max.ms (ringlog): longest delayed delivery (issue 18)
  /// Defaults of a consumer instance's retry settings (max.delivery.attempts, retry.backoff.ms,
  /// retry.backoff.multiplier, retry.backoff.max.ms; issue 18, delay/retry.h).
  int32_t max_delivery_attempts = 5;
  int64_t retry_backoff_ms = 1'000;
  double retry_backoff_multiplier = 2.0;
  int64_t retry_backoff_max_ms = 30'000;
  std::string retry_topic_template = "<topic>.<group>.retry";        // retry.topic.template
  std::string dead_letter_topic_template = "<topic>.<group>.dlq";    // dead.letter.topic.template
  // ---- the cluster (design.md section 6)
  int64_t controller_quorum_election_timeout_ms = 1000;     // controller.quorum.election.timeout.ms
  int64_t controller_quorum_fetch_timeout_ms = 1000;        // controller.quorum.fetch.timeout.ms
  int64_t controller_quorum_election_backoff_max_ms = 500;  // controller.quorum.election.backoff.max.ms
  int64_t broker_heartbeat_interval_ms = 500;               // broker.heartbeat.interval.ms
  int64_t broker_session_timeout_ms = 3000;                 // broker.session.timeout.ms
  std::string broker_rack;                                  // broker.rack ("" = none)
  int64_t replica_lag_time_max_ms = 30000;                  // replica.lag.time.max.ms: a follower not caught up this long leaves the ISR
  int64_t producer_id_expiration_ms = 86'400'000;           // producer.id.expiration.ms: idle idempotent producers are forgotten (KIP-98)
  int64_t replica_fetch_wait_max_ms = 500;                  // replica.fetch.wait.max.ms: a follower's long-poll at its leader
  int32_t replica_fetch_max_bytes = 1024 * 1024;            // replica.fetch.max.bytes: batches per follower fetch (at least one)
  int64_t replica_fetch_backoff_ms = 100;                   // replica.fetch.backoff.ms: after a failed follower fetch
  /// leader.replication.throttled.rate / follower.replication.throttled.rate (KIP-73, dynamic):
  /// bytes/s of replication to or by replicas outside a partition's ISR, broker-wide; the default
  /// (Kafka's Long.MAX_VALUE) bounds nothing (replication/throttle.h has the rule).
  int64_t leader_replication_throttled_rate = INT64_MAX;
  int64_t follower_replication_throttled_rate = INT64_MAX;
  /// The partition autobalancer (issue 33, controller/autobalancer.h; dynamic): its mode ("off",
  /// "node_add" or "continuous"), how long a broker may be unavailable before continuous mode
  /// moves its replicas off (ms), and how often continuous mode checks the balance (ms).
  std::string partition_autobalancer_mode = "off";
  int64_t partition_autobalancer_node_availability_timeout_ms = 900'000;
  int64_t partition_autobalancer_tick_interval_ms = 30'000;
  bool unclean_leader_election_enable = false;              // unclean.leader.election.enable
  bool auto_leader_rebalance_enable = true;                 // auto.leader.rebalance.enable
  int64_t leader_imbalance_check_interval_seconds = 30;     // leader.imbalance.check.interval.seconds
  int32_t leader_imbalance_per_broker_percentage = 10;      // leader.imbalance.per.broker.percentage
  /// How long start-up waits for the metadata quorum to elect a leader and for this node to
  /// catch up with the metadata log before it gives up (the other voters may start later); the
  /// same bound for the registration and the internal topics. initial.broker.registration.timeout.ms.
  int64_t metadata_catch_up_timeout_ms = 300000;
  /// quota.window.num and quota.window.size.seconds (Kafka's keys and defaults, 11 x 1 s): the
  /// samples every client quota rate is measured over (security/quota.h).
  security::quota_window_config quota_window;
  /// Every key of the properties file with its value and its built-in default, as the config
  /// module writes them (config::key_value; secrets "[hidden]"). DescribeConfigs and the REST v3
  /// broker configs show the Kafka broker configs among them that no field above carries
  /// (broker_configs.cc names them), read-only, as Kafka shows every config it defines.
  std::map<std::string, static_config_value> static_config_values;
};

/// Replication throttling of one side since start (replication/throttle.h): the bytes of
/// throttled replication moved (to followers outside the ISR on the leader side, by this broker
/// as such a follower on the follower side) and the wall time throttled transfers were held back.
struct replication_throttle_side_figures {
  int64_t throttled_bytes_total = 0;
  int64_t throttle_time_ms_total = 0;
};
struct replication_throttle_figures {
  replication_throttle_side_figures leader;
  replication_throttle_side_figures follower;
};

/// A consumer instance's retry settings when it gives none: the broker's defaults.
inline delay::retry_policy retry_defaults_of(const broker_config& c) {
  return delay::retry_policy{c.max_delivery_attempts, c.retry_backoff_ms,     c.retry_backoff_multiplier,
                             c.retry_backoff_max_ms,  c.retry_topic_template, c.dead_letter_topic_template};
}

/// An idempotent producer's identity (KIP-98): InitProducerId's answer.
struct producer_identity {
  model::producer_id producer_id{model::no_producer_id};
  model::producer_epoch producer_epoch{model::no_producer_epoch};
  /// Set in a produce_request: the producer is the transactional producer of this id (HTTP and
  /// WebSocket transactions, issue 16; producer id and epoch as POST .../transactions or the last
  /// commit/abort answered them). The broker adds every record's partition to the transaction
  /// (AddPartitionsToTxn, as Kafka clients send it before they produce) and then appends
  /// transactional batches (attribute bit 4), which read_committed readers see only once the
  /// transaction commits. Each epoch numbers a partition's records from sequence 0 (the epoch
  /// is bumped at every commit and abort, KIP-890). Unset in InitProducerId answers.
  std::optional<std::string> transactional_id{};
};

/// One producer of a partition as DescribeProducers reports it (Kafka's ProducerState, KIP-664).
struct producer_description {
  model::producer_id producer_id{model::no_producer_id};
  int32_t producer_epoch = -1;
  int32_t last_sequence = -1;                  // of its last retained batch; -1: none (known by a marker)
  int64_t last_timestamp = -1;                 // of its last batch or marker, ms
  int32_t coordinator_epoch = -1;              // of the last marker; -1: none
  int64_t current_txn_start_offset = -1;       // first offset of its open transaction; -1: none
};

/// One record to produce. `partition` unset: keyed records by murmur2, keyless spread.
struct produce_record {
  std::optional<model::partition_id> partition;
  std::optional<model::bytes> key;
  std::optional<model::bytes> value;
  std::vector<model::record_header> headers;
  std::optional<model::timestamp_ms> timestamp;  // unset: broker time
  /// With produce_request::producer: this record's sequence in its partition (KIP-98), >= 0.
  std::optional<model::sequence> sequence{};
};

using ::ringlog::partition::acks_mode;

/// Who wrote a produce_request's records: a client (every door), or the delay scheduler moving
/// due records to their target (broker/delay.cc), each with its ringlog-delay-source header
/// beside its delivery time, which is never delayed again.
enum class record_origin : bool { client, delay_scheduler };

struct produce_request {
  std::string topic;
  std::vector<produce_record> records;
  acks_mode acks = acks_mode::all;
  int64_t timeout_ms = 30000;
  /// Idempotent produce (the HTTP producer sessions): every record then names its partition and
  /// its sequence in that partition (produce_record::sequence), and each partition's records are
  /// cut into batches at the same places for the same request (by sequence runs and
  /// max.message.bytes), so a resent request repeats the same batches and is answered with the
  /// original offsets instead of being stored again.
  std::optional<producer_identity> producer{};
  /// Who produces (issue 29): the authorizer of issue 30 checks WRITE on the topic for it.
  security::kafka_principal principal{};
  /// The caller's address as ACL hosts name it ("127.0.0.1", "::1"). With an authorizer, a
  /// produce to a missing topic auto-creates it only for a caller with CREATE on the cluster or
  /// on the topic (Kafka's rule for auto-creation, KafkaApis.handleTopicMetadataRequest); else it
  /// is answered as with auto.create.topics.enable=false, naming the permission.
  std::string host{};
  /// delay_scheduler only on a scheduler's moves: a client's delayed record that carries
  /// ringlog-delay-source is refused (invalid_record), as the header would cancel its delay.
  record_origin origin = record_origin::client;
};

/// Per record, in request order. With acks=none the offset is -1 (unknown).
struct produce_record_result {
  model::partition_id partition{-1};
  model::offset record_offset{-1};
  model::timestamp_ms timestamp = model::no_timestamp;
  std::optional<error> failure;
};

struct produce_response {
  std::vector<produce_record_result> results;
};

using ::ringlog::partition::aborted_transaction;
using ::ringlog::partition::epoch_end_offset;
using ::ringlog::partition::fetch_params;
using ::ringlog::partition::fetch_response;
using ::ringlog::partition::isolation_level;
using ::ringlog::partition::produce_batches_request;
using ::ringlog::partition::produce_batches_response;
using ::ringlog::partition::to_string;   // isolation_level's

/// A fetch of one partition: what the partition serves (fetch_params) and who reads.
struct fetch_request : fetch_params {
  /// Who reads (issue 29): the authorizer of issue 30 checks READ on the topic for it.
  security::kafka_principal principal{};
};

enum class offset_spec { earliest, latest, timestamp };

struct list_offsets_request {
  model::topic_partition partition;
  offset_spec spec = offset_spec::latest;
  model::timestamp_ms timestamp = 0;   // for offset_spec::timestamp
  /// read_committed: `latest` is the last stable offset instead of the high watermark, and a
  /// timestamp lookup finds nothing at or above it (Kafka's ListOffsets IsolationLevel, KIP-98).
  isolation_level isolation = isolation_level::read_uncommitted;
  /// ListOffsets v4+'s CurrentLeaderEpoch (KIP-320; partition::check_current_leader_epoch);
  /// -1: not checked.
  int32_t current_leader_epoch = -1;
};

struct list_offsets_response {
  std::optional<model::offset> found_offset;   // nullopt: no record at/after the timestamp
  model::timestamp_ms timestamp = model::no_timestamp;
  /// Kafka's ListOffsets LeaderEpoch (v4+, KIP-320): latest, the leader's current epoch;
  /// earliest and a timestamp, the epoch of the record found (from the log's epoch cache); -1
  /// when nothing was found or the cache does not cover it.
  model::leader_epoch leader_epoch{-1};
};

/// An OffsetForLeaderEpoch of one partition (Kafka API 23; KIP-101, KIP-279, KIP-320).
struct epoch_end_offset_request {
  model::topic_partition partition;
  /// The epoch whose end the client asks (its last fetched record's partition leader epoch).
  model::leader_epoch leader_epoch{-1};
  /// The partition's leader epoch as the client believes it (CurrentLeaderEpoch, v2+); -1:
  /// not checked.
  int32_t current_leader_epoch = -1;
};

/// A DeleteRecords of one partition (Kafka API 21, KIP-107).
struct delete_records_request {
  model::topic_partition partition;
  /// The partition's new log start offset: records below it go. -1
  /// (replication::delete_records_high_watermark): the high watermark.
  int64_t offset = -1;
  /// How long to wait for every live replica to raise its log start offset (ms; the request's
  /// TimeoutMs, at most 5 minutes: the broker's delete_records_wait_max_ms).
  int64_t timeout_ms = 30000;
};

struct delete_records_response {
  /// The least log start offset over the leader and its live followers (Kafka's low watermark),
  /// >= the offset asked (or the log start offset, when that was higher already).
  model::offset low_watermark{-1};
};

/// A transaction marker to write (Kafka's WriteTxnMarkers request, KIP-98): the transaction
/// coordinator ends producer `producer_id`'s transaction on each of `partitions` with a commit
/// (`committed`) or abort control batch. `producer_epoch` is the epoch that ends the transaction
/// (KIP-890: the coordinator bumps it at every transaction end); `coordinator_epoch` is the
/// coordinator's epoch (the leader epoch of its __transaction_state partition), stored in the
/// marker's value so a marker of a deposed coordinator is recognised.
struct txn_marker {
  model::producer_id producer_id{model::no_producer_id};
  model::producer_epoch producer_epoch{model::no_producer_epoch};
  bool committed = false;
  int32_t coordinator_epoch = 0;
  std::vector<model::topic_partition> partitions;
};

/// The outcome of one partition of one marker: no failure = the marker is stored and committed
/// (the high watermark passed it). Failures: unknown_topic_or_partition, not_leader_or_follower
/// (no leader now: retry), invalid_producer_epoch (Kafka's: the partition knows a newer epoch of
/// the producer), not_enough_replicas, request_timed_out, kafka_storage_error,
/// broker_not_available, invalid_request (a bad producer id/epoch).
struct txn_marker_partition_result {
  model::topic_partition partition;
  std::optional<error> failure;
};

/// One per txn_marker, in request order; its partitions in the marker's order.
struct txn_marker_result {
  model::producer_id producer_id{model::no_producer_id};
  std::vector<txn_marker_partition_result> partitions;
};

/// Upper bounds (ms until due, inclusive) of the buckets of delay_scheduler_description::due_counts
/// (the console's histogram of pending delayed records): due already (<= 0), within 1 s, 10 s,
/// 1 min, 10 min, 1 h, 1 day; the last bucket (delay_due_buckets - 1) counts the rest. Fixed
/// bounds, so the buckets of every scheduler in the cluster add up.
inline constexpr std::array<int64_t, 7> delay_due_bucket_bounds_ms = {0,      1'000,     10'000,    60'000,
                                                                      600'000, 3'600'000, 86'400'000};
inline constexpr size_t delay_due_buckets = delay_due_bucket_bounds_ms.size() + 1;

/// One delay partition's scheduler (delayed delivery, issue 18) on this broker, its leader.
struct delay_scheduler_description {
  std::string topic;                 // a delay topic (__delay-10s, ...)
  int32_t partition = 0;
  int32_t broker_id = 0;             // this node
  int64_t position = 0;              // first offset not yet moved (the checkpoint's position)
  int64_t read_offset = 0;           // next offset the scheduler reads into its window
  int64_t high_watermark = 0;
  int64_t window_records = 0;        // pending records read into the window (due times known)
  /// Offsets in [read_offset, high_watermark): pending records not read yet (their due times are
  /// unknown until read; checkpoint records among them are counted too, so an upper bound).
  int64_t unread_records = 0;
  std::optional<int64_t> next_due_ms;   // earliest due time in the window (ms since the epoch)
  /// How far the scheduler is behind due time, ms: now - the earliest due time of a window record
  /// not moved yet, 0 when none is due.
  int64_t lag_ms = 0;
  uint64_t moved_total = 0;          // moved since this broker became the leader
  uint64_t dropped_total = 0;        // dropped (target gone) since then
  std::array<int64_t, delay_due_buckets> due_counts{};   // window records by time until due
  int64_t now_ms = 0;                // the broker time these were taken at
};

class broker {
 public:
  virtual ~broker() = default;

  // ---- metadata and the static config
  /// Runs `then` (on the controller shard) once this node has applied every metadata entry the
  /// quorum had committed when the call arrived (the metadata barrier: Raft's read index through
  /// DescribeQuorum, src/broker/metadata_barrier.cc; at once on the active controller or a single
  /// node; after metadata_barrier_timeout_ms against this image when the controller does not
  /// answer). The HTTP routes that name a topic this node does not know pass it first, so a topic
  /// created a moment ago through another node is described and served here too.
  virtual void await_metadata_barrier(std::function<void()> then) = 0;
  /// The __cluster_metadata offset the calling thread's image has applied (its shard's view; the
  /// offset of the last entry with records in it, -1 before any). A call this node passes on to a
  /// peer carries it, so the peer authorizes it against an image at least as new as the one this
  /// node answered the caller's earlier calls from (read-your-writes across nodes).
  [[nodiscard]] virtual int64_t applied_metadata_offset() const = 0;
  /// Runs `then(true)` (on the controller shard) once this node has applied every metadata entry
  /// up to `offset` (inclusive) and published it to every shard, at once when it has; or
  /// `then(false)` after `timeout_ms` (ms) when it has not by then.
  virtual void await_metadata_applied(int64_t offset, int64_t timeout_ms, std::function<void(bool applied)> then) = 0;
  /// The broker that coordinates `group_id` now: the leader of its __consumer_offsets partition
  /// (-1: none now, or the topic does not exist yet). Kafka clients find it with FindCoordinator.
  [[nodiscard]] virtual int32_t group_coordinator_id(const std::string& group_id) const = 0;
  [[nodiscard]] virtual const broker_config& config() const = 0;
  /// message.max.bytes now: the static value with the dynamic broker configs applied (KIP-226),
  /// for front ends that bound a record before it reaches the broker.
  [[nodiscard]] virtual int32_t message_max_bytes() const = 0;

  // ---- data (Produce, Fetch, ListOffsets)
  virtual void produce(produce_request request, std::function<void(result<produce_response>)> done) = 0;
  virtual void fetch(fetch_request request, std::function<void(result<fetch_response>)> done) = 0;
  virtual void list_offsets(list_offsets_request request, std::function<void(result<list_offsets_response>)> done) = 0;
  /// Kafka OffsetForLeaderEpoch of one partition (partition_runtime::end_offset_for_leader_epoch:
  /// the end of the largest leader epoch <= the one asked, from the leader's epoch cache), on its
  /// leader only, never forwarded: KIP-320 consumers validate their position with it after a
  /// leader change, and an undefined answer for an epoch the log holds reads as truncation.
  /// Errors: unknown_topic_or_partition, fenced_leader_epoch, unknown_leader_epoch,
  /// not_leader_or_follower (another broker leads it, or this node has no replica of it),
  /// broker_not_available, throttling_quota_exceeded (the shard's queue is full).
  virtual void end_offset_for_leader_epoch(epoch_end_offset_request request,
                                           std::function<void(result<epoch_end_offset>)> done) = 0;
  /// Kafka Produce of one partition's batches (produce_batches_request). Errors:
  /// unknown_topic_or_partition, topic_authorization_failed (internal topic), corrupt_message
  /// (CRC, sizes, record count, a record that does not decode; names the batch), message_too_large
  /// (max.message.bytes), invalid_request (a control batch: only write_txn_markers writes them),
  /// not_enough_replicas, kafka_storage_error, throttling_quota_exceeded.
  virtual void produce_batches(produce_batches_request request,
                               std::function<void(result<produce_batches_response>)> done) = 0;

  /// Kafka InitProducerId without a transactional.id (KIP-98): a new producer id, never handed
  /// out before in this cluster, with epoch 0. Ids come in blocks from the active controller
  /// (AllocateProducerIds, committed as ProducerIdsRecord). Errors: not_controller (no active
  /// controller now: retry), broker_not_available, throttling_quota_exceeded.
  virtual void init_producer_id(std::function<void(result<producer_identity>)> done) = 0;

  /// Kafka WriteTxnMarkers (KIP-98), the transaction coordinator's call: appends each marker's
  /// control batch on each of its partitions' leaders (a partition led by another broker is
  /// forwarded over the cluster listener with Kafka's WriteTxnMarkers request) and answers each
  /// partition once its marker is committed (the high watermark passed it, like acks=all; the
  /// wait is bounded by internal_append_timeout_ms). A marker ends the producer's open
  /// transaction on that partition: its records become readable by read_committed readers
  /// (commit) or are skipped by them (abort: the transaction goes to the partition's
  /// aborted-transaction index). A marker for a producer with no open transaction there is
  /// stored all the same (Kafka does: the coordinator retries markers). A marker with a producer
  /// epoch below the partition's is refused (invalid_producer_epoch). One result per marker, one
  /// partition result each; the call itself fails only when the broker is stopping
  /// (broker_not_available).
  virtual void write_txn_markers(std::vector<txn_marker> markers,
                                 std::function<void(result<std::vector<txn_marker_result>>)> done) = 0;
  /// DescribeProducers (Kafka API 61, KIP-664): the producers partition `partition` knows (its
  /// producer state, producer id ascending), on its leader. Errors: unknown_topic_or_partition,
  /// not_leader_or_follower (another broker leads it: Kafka's admin client asks the leader).
  virtual void describe_producers(model::topic_partition partition,
                                  std::function<void(result<std::vector<producer_description>>)> done) = 0;
  /// Kafka DeleteRecords of one partition (API 21, KIP-107; Kafka's ReplicaManager.deleteRecords
  /// and DelayedDeleteRecords), on its leader: raises the leader's log start offset to
  /// `request.offset` (replication::delete_records_offset: -1 is the high watermark; below the
  /// current log start nothing changes), deleting the segments wholly below it durably
  /// (partition_log::advance_log_start_offset); reads below it then answer offset_out_of_range and
  /// ListOffsets earliest finds it. Followers raise theirs as their fetch answers tell them (the
  /// leader wakes their parked fetches). Answers with the low watermark once it reaches the
  /// offset on every live replica; request_timed_out after `timeout_ms` (the leader's start is
  /// raised all the same, as Kafka's). Errors: unknown_topic_or_partition,
  /// not_leader_or_follower (another broker leads it: Kafka clients ask the leader; or this
  /// node's leadership lease lapsed), offset_not_available (a new leader still establishing its
  /// high watermark: retry),
  /// offset_out_of_range (above the high watermark, or negative but -1), invalid_topic_exception
  /// (an internal "__" topic, as Kafka refuses its internal topics), policy_violation
  /// (cleanup.policy without delete), kafka_storage_error, broker_not_available. The caller
  /// authorizes (DELETE on the topic).
  virtual void delete_records(delete_records_request request,
                              std::function<void(result<delete_records_response>)> done) = 0;
  /// The delay schedulers this broker runs (one per delay partition it leads), by topic and
  /// partition; empty when it leads none. Each broker reports its own: the gateway gathers them.
  virtual void describe_delay_schedulers(std::function<void(std::vector<delay_scheduler_description>)> done) = 0;
  /// Whether `id` was handed out by this cluster (below the metadata image's next producer id):
  /// the HTTP producer sessions accept no other. Errors: unknown_producer_id naming the id.
  [[nodiscard]] virtual result<void> check_producer_id(model::producer_id id) const = 0;
  /// The cluster's forwarding secret (users.h forwarding_secret_user; security/forwarded_call.h)
  /// in the image the calling thread sees; empty until the active controller committed it. The
  /// HTTP front end signs the calls it passes on to a peer with it and believes a peer's claims
  /// only when they verify.
  [[nodiscard]] virtual security::bytes forwarding_secret() const = 0;
  /// KIP-890 part 1's AddPartitionsToTxn VerifyOnly at `transactional_id`'s coordinator (this
  /// node, or another over the cluster listener): whether `partition` is in the producer's
  /// ongoing transaction; changes nothing. Errors: invalid_producer_id_mapping,
  /// invalid_producer_epoch (fenced), invalid_txn_state; not_enough_replicas when the
  /// coordinator cannot answer now (retriable).
  virtual void verify_txn_partition(const std::string& transactional_id, model::producer_id producer_id,
                                    model::producer_epoch producer_epoch, const model::topic_partition& partition,
                                    std::function<void(result<void>)> done) = 0;

  /// First step of a graceful stop: new calls are refused (broker_not_available) and parked
  /// long-poll fetches are answered now with what they have, so front ends can drain quickly.
  virtual void begin_shutdown() = 0;
  /// How long each log cleaner step held its shard's event loop (a step reads about
  /// cleaner_step_bytes, or does one part of a swap between two syncs), every shard added
  /// together; for /metrics. Any thread.
  [[nodiscard]] virtual io::latency_histogram::snapshot cleaner_step_time() const = 0;
  /// What replication throttling held back since start, per side; for /metrics. Any thread.
  [[nodiscard]] virtual replication_throttle_figures replication_throttling() const = 0;
  /// Reassignments the partition autobalancer started since start, by reason; for /metrics. Any thread.
  [[nodiscard]] virtual autobalancer_figures autobalancer_moves() const = 0;

  // ---- consumer groups (groups.h)
  virtual group_api& groups() = 0;
  // ---- transactions (transactions.h)
  virtual txn_api& transactions() = 0;
  // ---- topics, brokers, configs and partition placement (admin.h; Kafka's admin manager)
  virtual admin_api& admin() = 0;
  [[nodiscard]] virtual const admin_api& admin() const = 0;
  // ---- users, ACLs and client quotas (security.h; Kafka's authorizer and quota managers)
  virtual security_api& security() = 0;
  [[nodiscard]] virtual const security_api& security() const = 0;

  /// Stops accepting work, completes in-flight calls, flushes and closes every log cleanly.
  virtual void shutdown(std::function<void()> done) = 0;
};

struct broker_dependencies {
  io::file_system& fs;
  const base::clock& clock;
  runtime::shard_runtime& runtime;
  /// The HTTP listener as advertised (REST, WebSocket, console): registered as the endpoint
  /// "http" (or "https") that peers pass group calls on to. A negative port: this node has no
  /// HTTP listener (listeners without http:// or https://, a Kafka-only broker), and registers no
  /// HTTP endpoint; peers then serve its groups' HTTP calls as NOT_COORDINATOR naming why.
  std::string advertised_host = "127.0.0.1";
  int32_t advertised_port = 8082;
  /// The advertised HTTP door is https:// (no http:// listener): registered as the endpoint
  /// "https", so peers pass group calls on over TLS (http_endpoint_of).
  bool advertised_http_tls = false;
  /// controller.quorum.voters (node id -> cluster listener); empty: this node is the only voter.
  std::map<int32_t, rpc::peer_address> controller_quorum_voters{};
  /// The cluster listener's transport (shard 0); nullptr on a single node. Handlers are
  /// registered by open_broker, so start the transport's server after it.
  rpc::transport* cluster_transport = nullptr;
  /// Starts the cluster transport's server; called by open_broker once every handler is set and
  /// before it waits for the quorum (which needs the transport). Empty on a single node.
  std::function<void()> start_cluster_transport{};
  std::string advertised_kafka_host{};     // "" = no Kafka listener; else the first one's (below)
  int32_t advertised_kafka_port = -1;
  /// Every Kafka client listener as advertised, registered as endpoints named by listener name.
  std::vector<kafka_listener_endpoint> advertised_kafka_listeners{};
  std::string advertised_cluster_host{};   // "" = no cluster listener
  int32_t advertised_cluster_port = -1;
  /// Where the broker reports events an operator wants to see (leadership, ISR changes,
  /// divergence, fencing): info (true) or error (false), one line each. Empty: not reported.
  std::function<void(bool info, const std::string& message)> log{};
  /// Where a failed write, fdatasync, segment roll or checkpoint in log.dirs is reported, by any
  /// replica's log or the metadata log (storage/log_dir_failure.h, Kafka's LogDirFailureChannel).
  /// Its owner decides what follows: `ringlog serve` halts the process (exit code 74). nullptr:
  /// failures are only returned to the request that met them.
  storage::log_dir_failure_channel* log_dir_failures = nullptr;
  /// The budget of sealed segments' open files every replica's log charges
  /// (storage/segment_file_budget.h; `ringlog serve` sizes it from the open-file limit).
  /// nullptr: segments are not bounded but by segments_per_partition_max.
  storage::segment_file_budget* segment_budget = nullptr;
  /// Where topic, incarnation and ACL ids come from (issue 28 stage F: a simulation hands in a
  /// seeded source and replays the same ids).
  base::random_source& random = base::system_random_source();
};

/// Opens the broker on `config.log_dir`, replaying the metadata log and recovering every partition
/// on its owning shard. Errors: kafka_storage_error (names the path), invalid_config.
/// Blocks until the start ends: call it outside the runtime's shards (open_broker_async's wrapper).
result<std::unique_ptr<broker>> open_broker(broker_config config, broker_dependencies deps);

/// open_broker without blocking (issue 28 stage F: a simulation runs every node's shards on one
/// thread, where a start that waited would wait for itself). The start is a chain of tasks on the
/// runtime's shards; `done` runs once: with the broker once it serves, on its controller shard
/// (shard 0); or with the error, on the controller shard after the broker stopped its quorum and
/// was destroyed - or at once on the caller's thread for a configuration refused before anything
/// starts (invalid_config). Errors as open_broker's; not_controller when the metadata quorum had
/// no leader to catch up with or register at within metadata_catch_up_timeout_ms. Every
/// dependency must outlive the broker; the runtime must run its tasks until `done`.
void open_broker_async(broker_config config, broker_dependencies deps,
                       std::function<void(result<std::unique_ptr<broker>>)> done);

/// Kafka's topic name rules: [a-zA-Z0-9._-], 1..249 chars, not "." or "..". Message says why.
result<void> validate_topic_name(std::string_view name);

}  // namespace ringlog::broker
