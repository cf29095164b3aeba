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
#include "ringlog/broker/quotas.h"
#include "ringlog/broker/users.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"
#include "ringlog/rpc/cluster_transport.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/security/acl.h"
#include "ringlog/controller/rebalance_planner.h"

namespace ringlog::io {
class file_system;
}

namespace ringlog::broker {

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

/// Where a config's value comes from (Kafka's DescribeConfigs sources, KIP-226), highest
/// precedence first: set on the topic, a dynamic value for this broker, the cluster-wide dynamic
/// default, the node's properties file / --set, the built-in default.
enum class config_source {
  dynamic_topic_config,
  dynamic_broker_config,
  dynamic_default_broker_config,
  static_broker_config,
  default_config
};

/// Kafka's name of a source, e.g. "DYNAMIC_BROKER_CONFIG".
std::string_view to_string(config_source source);

/// A consumer instance's retry settings when it gives none: the broker's defaults.
inline delay::retry_policy retry_defaults_of(const broker_config& c) {
  return delay::retry_policy{c.max_delivery_attempts, c.retry_backoff_ms,     c.retry_backoff_multiplier,
                             c.retry_backoff_max_ms,  c.retry_topic_template, c.dead_letter_topic_template};
}

struct config_synonym {
  std::string name;
  std::string value;
  config_source source = config_source::default_config;
};

struct topic_config_entry {
  std::string name;
  std::string value;
  bool is_default = true;   // not set on the topic (inherited from the brokers or the default; `source` says which)
  bool read_only = false;
  /// Where the value comes from: dynamic_topic_config when set on the topic, else where its
  /// broker-level default comes from (log.retention.ms for retention.ms, ...).
  config_source source = config_source::default_config;
  /// Every value of it in precedence order, the effective one first: the topic's own, then the
  /// broker-level default's (KIP-226 synonyms, named as the broker names them).
  std::vector<config_synonym> synonyms;
};

struct partition_description {
  model::partition_id partition{0};
  int32_t leader = 0;                 // node id of the leader
  std::vector<int32_t> replicas;
  std::vector<int32_t> in_sync_replicas;
  model::leader_epoch leader_epoch{0};
  model::offset log_start_offset{0};
  model::offset high_watermark{0};
  model::offset log_end_offset{0};
  /// False only on a new leader whose high watermark has not yet reached the log end at its
  /// election (KIP-207): until then the figure may be below the one its predecessor reported, and
  /// reads at it are answered "retry".
  bool high_watermark_established = true;
  uint64_t size_bytes = 0;
  /// This node holds an open replica of the partition: the figures above and below are its own
  /// (/metrics shows only these partitions; a replica removed here takes its series with it).
  bool replica_here = false;
  /// The log cleaner's figures (compacted topics; zero and -1 otherwise).
  struct cleaner_figures {
    double dirty_ratio = 0.0;            // dirty / (clean + dirty) bytes of the cleanable range
    uint64_t bytes_read_total = 0;       // bytes of segments rewritten
    uint64_t bytes_written_total = 0;    // bytes of cleaned segments written
    uint64_t passes_total = 0;
    uint64_t tombstones_removed_total = 0;   // tombstones dropped past their delete horizon (KIP-534)
    uint64_t time_ms_total = 0;
    int64_t last_clean_ms = -1;          // broker clock at the end of the last pass, -1: never
  } cleaner;
};

struct topic_description {
  std::string name;
  std::string topic_id;               // 22-char base64 UUID, like Kafka's topic ids
  bool is_internal = false;
  int16_t replication_factor = 1;
  std::vector<partition_description> partitions;
  std::vector<topic_config_entry> configs;   // every supported topic config, set or default
};

struct create_topic_request {
  std::string name;
  std::optional<int32_t> partitions_count;      // default num.partitions
  std::optional<int16_t> replication_factor;    // default default.replication.factor
  std::map<std::string, std::string> configs;   // topic-level overrides (retention.ms, ...)
  bool validate_only = false;
  /// Who asks (issue 29): the authorizer of issue 30 checks CREATE on the topic for it.
  security::kafka_principal principal{};
};

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
};

struct list_offsets_response {
  std::optional<model::offset> found_offset;   // nullopt: no record at/after the timestamp
  model::timestamp_ms timestamp = model::no_timestamp;
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

/// One broker config as DescribeConfigs reports it (Kafka's names, KIP-226).
struct broker_config_entry {
  std::string name;
  std::string value;
  config_source source = config_source::default_config;
  bool is_read_only = true;      // false: may be set dynamically (alter_broker_configs)
  bool is_sensitive = false;     // never true yet: no secrets among the broker configs
  /// Every value of this name in precedence order, the effective one first (KIP-226 synonyms).
  std::vector<config_synonym> synonyms;
};

/// node id of the cluster-wide dynamic broker defaults in describe/alter_broker_configs (Kafka's
/// empty broker resource name).
inline constexpr int32_t cluster_default_broker = -1;

/// A Kafka client listener of a broker as advertised (listeners=NAME://HOST:PORT).
struct kafka_listener_endpoint {
  std::string listener_name;   // PLAINTEXT, SSL, CLIENT, ...
  std::string host;
  int32_t port = -1;
};

struct broker_description {
  int32_t node_id = 0;
  std::string host;   // the HTTP listener as advertised
  int32_t port = 0;
  std::string rack;   // "" = none
  std::string kafka_host;   // the kafka:// listener as advertised ("" and -1: none registered)
  int32_t kafka_port = -1;
  /// Every Kafka client listener, by name: Metadata answers a client with the brokers' endpoints
  /// of the listener name it connected on (Kafka's rule), so an SSL client never hears a
  /// PLAINTEXT port.
  std::vector<kafka_listener_endpoint> kafka_endpoints;
  /// The endpoint of listener `name`, or nullptr when the broker has none of that name.
  [[nodiscard]] const kafka_listener_endpoint* kafka_endpoint(std::string_view name) const {
    for (const auto& e : kafka_endpoints) {
      if (e.listener_name == name) return &e;
    }
    return nullptr;
  }
  /// Kafka's broker registration states: "unfenced" (serving), "fenced" (missed its heartbeats or
  /// not caught up), "controlled_shutdown" (stopping, its leaderships moving away).
  std::string state = "unfenced";
  bool decommissioning = false;   // being decommissioned (issue 33): takes no new replicas
  int64_t broker_epoch = -1;
  bool is_controller = false;   // the active controller (the metadata quorum's leader)
};

/// The metadata quorum as `kafka-metadata-quorum describe --status` shows it.
struct quorum_status {
  struct voter {
    int32_t replica_id = -1;
    int64_t log_end_offset = -1;          // -1: not known here (only the leader knows others')
    int64_t lag = -1;                     // leader's log end offset minus the voter's; -1 unknown
    int64_t last_fetch_timestamp_ms = -1; // wall clock ms of its last fetch seen by the leader
  };
  int32_t node_id = -1;          // this node
  int32_t leader_id = -1;        // -1: no leader known
  int32_t leader_epoch = 0;
  int64_t high_watermark = 0;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t applied_offset = -1;   // the metadata image's offset on this node
  std::string role;              // leader, follower, candidate, prospective, unattached, resigned
  std::vector<voter> voters;
  std::vector<voter> observers;  // process.roles=broker nodes fetching the metadata log (leader only)
  bool observer = false;         // this node is not a voter (process.roles=broker)
};

/// One partition's outcome of a leader election.
struct leader_election_result {
  std::string topic;
  int32_t partition = 0;
  int32_t leader = -1;          // its leader after the call (-1: none)
  std::optional<error> refused;   // election_not_needed, preferred_leader_not_available, unknown_topic_or_partition
};

/// One partition of a reassignment call (KIP-455): its target replicas, or a cancel.
struct partition_reassignment_target {
  std::string topic;
  int32_t partition = 0;
  std::optional<std::vector<int32_t>> replicas;   // the first is the preferred leader; nullopt: cancel
};

/// One partition's outcome of a reassignment call: accepted (the move is under way, or done
/// when nothing had to catch up), or refused.
struct partition_reassignment_result {
  std::string topic;
  int32_t partition = 0;
  /// unknown_topic_or_partition, invalid_replica_assignment, no_reassignment_in_progress.
  std::optional<error> refused;
};

/// A partition being reassigned, as the metadata image says (Kafka's OngoingPartitionReassignment).
struct partition_reassignment {
  std::string topic;
  int32_t partition = 0;
  std::vector<int32_t> replicas;            // the target replicas, then the ones being removed
  std::vector<int32_t> adding_replicas;     // in the target, not yet in the original replicas
  std::vector<int32_t> removing_replicas;   // in the original replicas, not in the target
};

/// A rebalance call (issue 33): plan, and unless a dry run, start the plan's moves.
struct rebalance_request {
  double tolerance = 0.1;   // 0.0 to 1.0 inclusive (rebalance_planner.h)
  bool dry_run = true;
  /// Each partition's size in bytes as its replicas report it (the front end asks every broker);
  /// a partition not listed counts 0 bytes.
  controller::partition_sizes sizes;
};

/// The partition autobalancer as this node sees it (issue 33, controller/autobalancer.h).
struct autobalancer_status {
  std::string mode = "off";   // partition.autobalancer.mode: off | node_add | continuous
  /// Continuous mode: brokers unavailable longer than
  /// partition.autobalancer.node.availability.timeout.ms that still hold replicas (moving off), by id.
  std::vector<int32_t> unavailable_brokers_draining;
};

/// Partition reassignments the autobalancer started since this node started, by why (it starts
/// them only while it is the active controller); for /metrics. Any thread.
struct autobalancer_figures {
  int64_t node_add = 0;      // a broker holding no replica got its share
  int64_t balance = 0;       // continuous mode's periodic balance
  int64_t unavailable = 0;   // replicas moved off brokers unavailable past the timeout
};

struct rebalance_result {
  controller::rebalance_plan plan;
  int32_t started = 0;   // partition reassignments committed (0 on a dry run)
  autobalancer_status autobalancer;
};

/// A broker's decommission (issue 33; Confluent's remove-broker task).
struct broker_decommission {
  int32_t broker_id = -1;
  /// "IN_PROGRESS" (its replicas are moving off), "SUCCESS" (it holds none and is unregistered),
  /// "CANCELED" (only in the answer of the cancel).
  std::string status;
  int32_t partitions_remaining = 0;        // partitions that still list it as a replica
  int32_t reassignments_in_progress = 0;   // of those, the ones being reassigned now
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

  // ---- admin (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs, Metadata)
  virtual void create_topic(create_topic_request request, std::function<void(result<topic_description>)> done) = 0;
  virtual void delete_topic(std::string topic, std::function<void(result<void>)> done) = 0;
  /// Raises the partition count to `partitions_count` (never lowers: invalid_partitions).
  virtual void create_partitions(std::string topic, int32_t partitions_count,
                                 std::function<void(result<topic_description>)> done) = 0;
  /// Sets (value) or resets to default (nullopt) topic configs; validate_only checks only.
  virtual void alter_topic_configs(std::string topic, std::map<std::string, std::optional<std::string>> changes,
                                   bool validate_only, std::function<void(result<topic_description>)> done) = 0;
  /// Current topics (internal ones only when include_internal).
  [[nodiscard]] virtual std::vector<std::string> list_topics(bool include_internal) const = 0;
  /// Whether a topic of this name exists (internal topics included): one lookup, no copy of the
  /// topic list, so error paths may ask it once per record.
  [[nodiscard]] virtual bool topic_exists(const std::string& name) const = 0;
  /// Runs `then` (on the controller shard) once this node has applied every metadata entry the
  /// quorum had committed when the call arrived (the metadata barrier: Raft's read index through
  /// DescribeQuorum, src/broker/metadata_barrier.cc; at once on the active controller or a single
  /// node; after metadata_barrier_timeout_ms against this image when the controller does not
  /// answer). The HTTP routes that name a topic this node does not know pass it first, so a topic
  /// created a moment ago through another node is described and served here too.
  virtual void await_metadata_barrier(std::function<void()> then) = 0;
  /// Whether the topic exists and has the partition (Kafka's metadataCache.contains(tp), which
  /// KafkaApis asks before an OffsetCommit stores an offset). Errors: unknown_topic_or_partition,
  /// naming the topic or the partition count.
  [[nodiscard]] virtual result<void> check_partition_exists(const model::topic_partition& tp) const = 0;
  virtual void describe_topic(std::string topic, std::function<void(result<topic_description>)> done) = 0;
  /// Every registered broker, by node id (this node alone before it has registered).
  [[nodiscard]] virtual std::vector<broker_description> list_brokers() const = 0;
  /// The active controller's node id, -1 while the quorum has no leader.
  [[nodiscard]] virtual int32_t controller_id() const = 0;
  /// The broker that coordinates `group_id` now: the leader of its __consumer_offsets partition
  /// (-1: none now, or the topic does not exist yet). Kafka clients find it with FindCoordinator.
  [[nodiscard]] virtual int32_t group_coordinator_id(const std::string& group_id) const = 0;
  [[nodiscard]] virtual quorum_status describe_quorum() const = 0;
  /// DescribeConfigs of a broker (KIP-226): for a node id, every broker config it reports, its
  /// effective value and where it comes from; for cluster_default_broker, only the cluster-wide
  /// dynamic defaults that are set. Errors: invalid_request naming an unknown node id.
  [[nodiscard]] virtual result<std::vector<broker_config_entry>> describe_broker_configs(int32_t node_id) const = 0;
  /// IncrementalAlterConfigs of a broker or (cluster_default_broker) the cluster-wide defaults:
  /// sets (value) or removes (nullopt) dynamic broker configs. They are ConfigRecords (resource
  /// type BROKER) in the metadata log, so they survive restarts; topics without their own
  /// override take the new value at once. validate_only checks only. Errors: invalid_config
  /// naming an unknown name, a read-only config or a bad value; invalid_request naming an
  /// unknown node id.
  virtual void alter_broker_configs(int32_t node_id, std::map<std::string, std::optional<std::string>> changes,
                                    bool validate_only, std::function<void(result<void>)> done) = 0;
  [[nodiscard]] virtual const broker_config& config() const = 0;
  // ---- SCRAM users (KIP-554; users.h)
  /// Users with SCRAM credentials, by name; `users` empty = all of them. A named user without any
  /// credential is listed with none (the Kafka handler answers RESOURCE_NOT_FOUND for it).
  [[nodiscard]] virtual std::vector<user_description> describe_users(const std::vector<std::string>& users) const = 0;
  /// Sets or deletes SCRAM credentials, all valid ones in one metadata entry (applied on every
  /// node). One result per change, in order. Errors per change: unacceptable_credential (empty
  /// user name, iterations outside 4096..16384, an empty salt or key), duplicate_resource (the user
  /// appears twice in `changes`), resource_not_found (deleting a credential that does not exist);
  /// of the whole commit (each valid change gets it): not_controller, request_timed_out,
  /// broker_not_available.
  virtual void alter_user_scram_credentials(std::vector<scram_credential_alteration> changes,
                                            std::function<void(std::vector<result<void>>)> done) = 0;
  /// The SCRAM store of the image the calling thread sees (its shard's), for the SASL mechanisms.
  [[nodiscard]] virtual security::scram_lookup scram_lookup() const = 0;
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
  /// Preferred leader election (Kafka's ElectLeaders with PREFERRED, KIP-460; KIP-183's rule):
  /// each of `partitions` (topic, partition; empty = every partition whose preferred replica is
  /// available and does not lead) is led by its first replica, in a new leader epoch, when that
  /// replica is registered, unfenced, not stopping and in the ISR. One result per partition.
  /// Errors of the whole call: not_controller (no quorum now), invalid_request (a change raced
  /// with another; retry), broker_not_available.
  virtual void elect_preferred_leaders(std::vector<std::pair<std::string, int32_t>> partitions,
                                       std::function<void(result<std::vector<leader_election_result>>)> done) = 0;
  /// Partition reassignment (Kafka's AlterPartitionReassignments, KIP-455; reassignment.h has
  /// the steps): each target partition gets its new replicas added, they catch up and join the
  /// ISR, the leadership moves off a removed leader, then the removed replicas leave and delete
  /// their log. Answered once the starting change is committed and applied here (not when the
  /// move completes: list_partition_reassignments shows it until then). One result per target,
  /// in order. Errors of the whole call: not_controller (no quorum leader: retry),
  /// request_timed_out, broker_not_available (stopping).
  virtual void alter_partition_reassignments(
      std::vector<partition_reassignment_target> targets,
      std::function<void(result<std::vector<partition_reassignment_result>>)> done) = 0;
  /// The reassignments under way in this node's image, by topic then partition; `topic` empty:
  /// of every topic, else of that topic only.
  [[nodiscard]] virtual std::vector<partition_reassignment> list_partition_reassignments(
      const std::string& topic) const = 0;
  /// Plans a rebalance from the newest metadata (the active controller's image, with each
  /// partition's size from its leader) and, unless request.dry_run, starts its moves as partition
  /// reassignments (KIP-455: add, catch up, then remove). Errors: reassignment_in_progress (a
  /// rebalance waits until the reassignments under way end or are cancelled), invalid_request (a
  /// tolerance outside 0..1), not_controller, request_timed_out.
  virtual void rebalance(rebalance_request request, std::function<void(result<rebalance_result>)> done) = 0;
  /// Cancels every partition reassignment under way (KIP-455's cancel: back to the original
  /// replicas) but a decommission's drain (cancel that decommission). Answers how many were.
  virtual void cancel_reassignments(std::function<void(result<int32_t>)> done) = 0;
  /// Decommissions broker `node_id` (issue 33): it takes no new replicas, its replicas move to the
  /// others (a rebalance with it excluded), then the active controller unregisters it and refuses
  /// its id from then on. `cancel`: stops a decommission under way (the moves under way are
  /// cancelled; what moved stays). Errors: resource_not_found (no such registered broker); invalid_request naming why it
  /// is refused (a controller quorum voter; the other brokers cannot hold a replication factor; a
  /// cancel with no decommission under way); not_controller, request_timed_out.
  virtual void decommission_broker(int32_t node_id, bool cancel, std::function<void(result<broker_decommission>)> done) = 0;
  /// The decommissions under way or done, in this node's image, by broker id.
  [[nodiscard]] virtual std::vector<broker_decommission> list_decommissions() const = 0;
  /// message.max.bytes now: the static value with the dynamic broker configs applied (KIP-226),
  /// for front ends that bound a record before it reaches the broker.
  [[nodiscard]] virtual int32_t message_max_bytes() const = 0;

  // ---- authorization (issue 30): the one rule set every door asks (Kafka's StandardAuthorizer)
  /// Whether authorizer.class.name names an authorizer: ACLs are then kept and enforced.
  [[nodiscard]] virtual bool authorizer_enabled() const = 0;
  /// May `principal`, connected from `host` (the peer's IP address as ACL hosts name it,
  /// e.g. "127.0.0.1" or "::1"), do `action`? Without an authorizer: always allowed (by
  /// no_acl_default). Else super.users, then the ACLs of this node's metadata view (DENY wins,
  /// implied DESCRIBE/DESCRIBE_CONFIGS, allow.everyone.if.no.acl.found): see security/acl.h.
  /// Reads the shard's view: no lock, costs O(matching ACLs); callable on any shard.
  [[nodiscard]] virtual security::authorization_decision authorize(const security::kafka_principal& principal,
                                                                  std::string_view host,
                                                                  const security::acl_action& action) const = 0;

  // ---- ACLs (issue 30; Kafka's CreateAcls, DescribeAcls, DeleteAcls; security/acl.h has the model)
  // Kept as AccessControlEntryRecords in the metadata log, so every node holds them. Errors of a
  // whole call: security_disabled (no authorizer.class.name), not_controller (no quorum leader:
  // retry), request_timed_out, broker_not_available (stopping).
  /// Stores `acls`; one result per ACL, in order: nullopt = stored (one stored already counts,
  /// unchanged, as in Kafka), else why not (invalid_request naming the field: see
  /// security::validate_acl).
  virtual void create_acls(std::vector<security::acl_binding> acls,
                           std::function<void(result<std::vector<std::optional<error>>>)> done) = 0;
  /// The stored ACLs `filter` selects, from this node's image (sorted by resource type, name,
  /// pattern, principal, host, operation, permission). Errors: security_disabled,
  /// invalid_request (the filter: see security::validate_acl_filter).
  [[nodiscard]] virtual result<std::vector<security::acl_binding>> describe_acls(
      const security::acl_filter& filter) const = 0;
  /// Deletes every ACL any of `filters` selects; one result per filter, in order: the ACLs it
  /// selected (all deleted), or invalid_request for a bad filter (the others still apply).
  virtual void delete_acls(std::vector<security::acl_filter> filters,
                           std::function<void(result<std::vector<result<std::vector<security::acl_binding>>>>)> done) = 0;

  // ---- client quotas (issue 31; Kafka's DescribeClientQuotas, AlterClientQuotas; the model and
  // its rules are in security/quota.h). Kept as ClientQuotaRecords in the metadata log, so every
  // node holds them; each broker enforces them on its own traffic, as Kafka does.
  /// The stored quotas `filter` selects, from this node's image, sorted by entity. Errors:
  /// invalid_request naming the bad component (security::validate_client_quota_filter).
  [[nodiscard]] virtual result<std::vector<client_quota_entry>> describe_client_quotas(
      const security::client_quota_filter& filter) const = 0;
  /// Applies `alterations`; one result per alteration, in order: nullopt = applied (or, with
  /// `validate_only`, would be), else invalid_request naming the entity, key and value
  /// (security::validate_client_quota). Errors of the whole call: not_controller (no quorum
  /// leader: retry), request_timed_out, broker_not_available (stopping), invalid_request (more
  /// than client_quota_changes_per_call_max keys, or the cluster past client_quota_entities_max).
  virtual void alter_client_quotas(std::vector<client_quota_alteration> alterations, bool validate_only,
                                   std::function<void(result<std::vector<std::optional<error>>>)> done) = 0;
  /// Records `value` (bytes produced or fetched; for request_percentage, the request-handling time
  /// in ms, counted as Kafka's percent of one thread: 100 x ms / 1000) against the quota of `key` for a client of
  /// `user` (principal name, "ANONYMOUS" without authentication) and `client_id` ("" when none)
  /// on this broker, and answers the throttle time of KIP-219 in ms: 0 when no quota sets `key`
  /// for the client or the client is within it. Callable on any thread; costs one lookup in the
  /// view's quota index and, when a quota applies, a short lock.
  virtual int64_t record_client_quota(security::quota_key key, std::string_view user, std::string_view client_id,
                                      double value) = 0;
  /// The throttle time (KIP-219, ms) a client of `user`/`client_id` is in now for `key`: what its
  /// sensor's rate asks, the sensor every client of the matched quota entity shares (a user
  /// quota's sensor is the user's, whatever client id a request names), without recording
  /// anything; 0 when it is within its quota or none applies. The HTTP doors refuse (429) while
  /// it is not 0.
  [[nodiscard]] virtual int64_t client_quota_throttle_ms(security::quota_key key, std::string_view user,
                                                         std::string_view client_id) const = 0;
  /// The most a client of `user`/`client_id` may move in one quota window under `key`: the bound
  /// x (quota.window.num - 1) x quota.window.size.seconds, as Kafka caps a fetch's max bytes with
  /// it (KafkaApis.handleFetchRequest, ClientQuotaManager.getMaxValueInQuotaWindow), so one read
  /// cannot take many windows' worth; nullopt when no quota sets `key` for the client.
  [[nodiscard]] virtual std::optional<int64_t> client_quota_window_value_max(security::quota_key key,
                                                                             std::string_view user,
                                                                             std::string_view client_id) const = 0;
  /// KIP-599, controller_mutation_rate: the ms a client of `user`/`client_id` must wait before
  /// it may create or delete partitions again (0: it may now; `partitions` are then taken from
  /// its bucket). With `strict` (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) a
  /// non-zero answer means refuse with throttling_quota_exceeded and take nothing; without, the
  /// partitions are taken all the same and the answer is only the throttle time to report.
  virtual int64_t charge_controller_mutations(std::string_view user, std::string_view client_id, double partitions,
                                              bool strict) = 0;
  /// connection_creation_rate of the quota entity ip=`ip`, else ip=<default>; nullopt: none set
  /// (max.connection.creation.rate and its overrides apply alone).
  [[nodiscard]] virtual std::optional<double> connection_creation_rate_for(std::string_view ip) const = 0;
  /// What each live quota sensor has counted (at most client_quota_metrics_sensors_max, those
  /// with the most throttle time first), for /metrics.
  [[nodiscard]] virtual std::vector<client_quota_usage> client_quota_usages() const = 0;

  // ---- data (Produce, Fetch, ListOffsets)
  virtual void produce(produce_request request, std::function<void(result<produce_response>)> done) = 0;
  virtual void fetch(fetch_request request, std::function<void(result<fetch_response>)> done) = 0;
  virtual void list_offsets(list_offsets_request request, std::function<void(result<list_offsets_response>)> done) = 0;
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
  /// The delay schedulers this broker runs (one per delay partition it leads), by topic and
  /// partition; empty when it leads none. Each broker reports its own: the gateway gathers them.
  virtual void describe_delay_schedulers(std::function<void(std::vector<delay_scheduler_description>)> done) = 0;
  /// Whether `id` was handed out by this cluster (below the metadata image's next producer id):
  /// the HTTP producer sessions accept no other. Errors: unknown_producer_id naming the id.
  [[nodiscard]] virtual result<void> check_producer_id(model::producer_id id) const = 0;

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

  /// Stops accepting work, completes in-flight calls, flushes and closes every log cleanly.
  virtual void shutdown(std::function<void()> done) = 0;
};

struct broker_dependencies {
  io::file_system& fs;
  const base::clock& clock;
  runtime::shard_runtime& runtime;
  std::string advertised_host = "127.0.0.1";
  int32_t advertised_port = 8082;
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
