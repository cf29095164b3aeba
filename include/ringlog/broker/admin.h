#pragma once
// The administration calls of the broker: topics (CreateTopics, DeleteTopics, CreatePartitions,
// IncrementalAlterConfigs, Metadata), the cluster (DescribeCluster, DescribeQuorum, broker
// configs, KIP-226) and partition placement (ElectLeaders, AlterPartitionReassignments, issue
// 33's rebalance and decommission). A facet of the broker API like groups.h and transactions.h
// (Kafka's KafkaApis hands these to its admin manager and the controller): broker::admin()
// returns it. Every change is a metadata-log entry committed through the active controller and
// answered once applied and published on this node; reads come from this node's image.
//
// Calls are asynchronous like broker.h: `done` runs exactly once on some shard thread.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringlog/broker/errc.h"
#include "ringlog/controller/rebalance_planner.h"
#include "ringlog/model/types.h"
#include "ringlog/security/principal.h"

namespace ringlog::broker {

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
  /// Why this node's replica is offline (its files did not open: partition_stats::open_failure),
  /// empty otherwise. When this node is the leader the partition has none that serves: `leader`
  /// is -1 (Kafka's Metadata says LEADER_NOT_AVAILABLE, REST counts it offline).
  std::string offline_reason;
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

/// The REST v3 name of a topic's partition count (create_topic_request, create_partitions): the
/// default field name in their errors.
inline constexpr std::string_view partitions_count_field = "partitions_count";

struct create_topic_request {
  std::string name;
  std::optional<int32_t> partitions_count;      // default num.partitions
  std::optional<int16_t> replication_factor;    // default default.replication.factor
  std::map<std::string, std::string> configs;   // topic-level overrides (retention.ms, ...)
  bool validate_only = false;
  /// The request field partitions_count came in, as the errors name it: REST v3's
  /// "partitions_count", Kafka's CreateTopics "num_partitions" (replication_factor is the same
  /// word in both).
  std::string_view partitions_field = partitions_count_field;
  /// Who asks (issue 29): the authorizer of issue 30 checks CREATE on the topic for it.
  security::kafka_principal principal{};
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
  std::string host;   // the HTTP listener as advertised; "" (and port 0) when the node has none
  int32_t port = 0;
  bool http_tls = false;   // that listener is https:// (a node whose only HTTP door is TLS)
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

class admin_api {
 public:
  virtual ~admin_api() = default;

  // ---- topics (CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs, Metadata)
  virtual void create_topic(create_topic_request request, std::function<void(result<topic_description>)> done) = 0;
  virtual void delete_topic(std::string topic, std::function<void(result<void>)> done) = 0;
  /// Deletes `topic` only while its id is `topic_id` (KIP-516: DeleteTopics v6 names a topic by
  /// id): a topic deleted and created again under that name since the caller resolved the id is
  /// left alone. Errors: unknown_topic_or_partition (no topic of that name and id), as delete_topic.
  virtual void delete_topic_of_id(std::string topic, controller::uuid topic_id,
                                  std::function<void(result<void>)> done) = 0;
  /// Raises the partition count to `partitions_count` (never lowers: invalid_partitions; at most
  /// topic_partitions_max: invalid_partitions). `count_field`: the request field the count came
  /// in, as the errors name it (REST v3's partitions_count, Kafka's CreatePartitions "count").
  virtual void create_partitions(std::string topic, int32_t partitions_count, std::string_view count_field,
                                 std::function<void(result<topic_description>)> done) = 0;
  /// Sets (value) or resets to default (nullopt) topic configs; validate_only checks only.
  virtual void alter_topic_configs(std::string topic, std::map<std::string, std::optional<std::string>> changes,
                                   bool validate_only, std::function<void(result<topic_description>)> done) = 0;
  /// Current topics (internal ones only when include_internal).
  [[nodiscard]] virtual std::vector<std::string> list_topics(bool include_internal) const = 0;
  /// Whether a topic of this name exists (internal topics included): one lookup, no copy of the
  /// topic list, so error paths may ask it once per record.
  [[nodiscard]] virtual bool topic_exists(const std::string& name) const = 0;
  /// The names of the current topics (internal ones included) whose ids are `topic_ids`, in
  /// order: nullopt for an id no current topic has, the zero id included (KIP-516: Metadata v12
  /// names topics by id). One pass over the topics, whatever the number of ids.
  [[nodiscard]] virtual std::vector<std::optional<std::string>> topic_names_of_ids(
      const std::vector<controller::uuid>& topic_ids) const = 0;
  /// Whether the topic exists and has the partition (Kafka's metadataCache.contains(tp), which
  /// KafkaApis asks before an OffsetCommit stores an offset). Errors: unknown_topic_or_partition,
  /// naming the topic or the partition count.
  [[nodiscard]] virtual result<void> check_partition_exists(const model::topic_partition& tp) const = 0;
  virtual void describe_topic(std::string topic, std::function<void(result<topic_description>)> done) = 0;
  // ---- the cluster (DescribeCluster, DescribeQuorum, broker configs)
  /// Every registered broker, by node id (this node alone before it has registered).
  [[nodiscard]] virtual std::vector<broker_description> list_brokers() const = 0;
  /// The active controller's node id, -1 while the quorum has no leader.
  [[nodiscard]] virtual int32_t controller_id() const = 0;
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
  // ---- partition placement (ElectLeaders, AlterPartitionReassignments, issue 33)
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
};

}  // namespace ringlog::broker
