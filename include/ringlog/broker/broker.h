#pragma once
// The broker API every front end calls (design.md section 3): typed produce, fetch,
// list-offsets and admin calls named after Kafka's requests. Calls are asynchronous: `done`
// runs exactly once, on some shard thread (never inside the caller's stack for disk waits); the
// caller hops back to its own executor. Calls may be made from any thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/broker/errc.h"
#include "ringlog/broker/groups.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"

namespace ringlog::io {
class file_system;
}

namespace ringlog::broker {

/// Broker-wide settings, Kafka key names in comments. Parsed and bounds-checked by the config module.
struct broker_config {
  int32_t node_id = 0;                               // node.id
  std::string cluster_id = "ringlog-cluster";        // cluster id reported by /v3/clusters
  std::string log_dir = "./ringlog-data";            // log.dirs (first entry)
  int32_t num_partitions = 1;                        // num.partitions: default for new topics
  int16_t default_replication_factor = 1;            // default.replication.factor
  bool auto_create_topics_enable = true;             // auto.create.topics.enable
  int32_t message_max_bytes = 1048588;               // message.max.bytes: largest record batch
  int64_t log_segment_bytes = 1024 * 1024 * 1024;    // log.segment.bytes
  int64_t log_roll_ms = 7LL * 24 * 3600 * 1000;      // log.roll.ms
  int64_t log_retention_ms = 7LL * 24 * 3600 * 1000; // log.retention.ms (-1 unlimited)
  int64_t log_retention_bytes = -1;                  // log.retention.bytes
  int64_t log_retention_check_interval_ms = 300000;  // log.retention.check.interval.ms
  int32_t log_index_interval_bytes = 4096;           // log.index.interval.bytes
  std::string log_flush_policy = "fsync";            // log.flush.policy: fsync (before ack) | replication
  bool log_direct_io = false;                        // log.direct.io (ringlog): O_DIRECT segment appends
  int32_t min_insync_replicas = 1;                   // min.insync.replicas
  int32_t produce_records_max = 10000;               // ringlog: records per produce request
  int32_t partitions_max = 10000;                    // broker.partitions.max (ringlog): all partitions of all
                                                     // topics; each holds open files, so the default
                                                     // follows the process's open-file limit
  int64_t fetch_wait_max_ms = 60000;                 // ringlog: longest long-poll of a fetch
  int32_t fetch_waiters_per_partition_max = 10000;   // ringlog: parked long-polls per partition
  int32_t offsets_topic_num_partitions = 8;          // offsets.topic.num.partitions: of __consumer_offsets at creation
  int64_t group_expiry_interval_ms = 1000;           // ringlog: how often lapsed consumer sessions are swept
};

struct topic_config_entry {
  std::string name;
  std::string value;
  bool is_default = true;   // not set on the topic: inherited from the broker
  bool read_only = false;
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
  uint64_t size_bytes = 0;
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
};

/// One record to produce. `partition` unset: keyed records by murmur2, keyless spread.
struct produce_record {
  std::optional<model::partition_id> partition;
  std::optional<model::bytes> key;
  std::optional<model::bytes> value;
  std::vector<model::record_header> headers;
  std::optional<model::timestamp_ms> timestamp;  // unset: broker time
};

enum class acks_mode : int8_t { none = 0, leader = 1, all = -1 };

struct produce_request {
  std::string topic;
  std::vector<produce_record> records;
  acks_mode acks = acks_mode::all;
  int64_t timeout_ms = 30000;
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

struct fetch_request {
  model::topic_partition partition;
  model::offset fetch_offset{0};
  int32_t max_bytes = 1024 * 1024;   // about; at least one record is always returned if any
  int64_t max_wait_ms = 0;           // long-poll up to this when nothing is there (capped by config)
  int32_t min_bytes = 1;
  /// Kafka Fetch (the kafka module): answer with the stored batches (fetch_response::batches)
  /// instead of decoded records; `max_bytes` then bounds whole batches (at least one is returned
  /// when any exists below the high watermark, as Kafka's KIP-74 does).
  bool raw_batches = false;
};

struct fetch_response {
  std::vector<model::record> records;   // records >= fetch_offset, < high_watermark
  model::offset high_watermark{0};
  model::offset log_start_offset{0};
  model::offset log_end_offset{0};
  /// Names the log read the records came from (0 when there are none): responses with the same
  /// read_id hold the same records, because fetches of a partition at the same offset with the
  /// same max_bytes share a read while its high watermark and log start offset stay put (100
  /// subscribers of one partition after each append). A front end may encode such records once.
  uint64_t read_id = 0;
  /// With fetch_request::raw_batches: whole v2 batches as stored, concatenated (the first may
  /// start below fetch_offset; none starts at or above high_watermark). `records` is empty then.
  model::bytes batches;
};

/// Kafka Produce of one partition (the kafka module): the client's record batches appended as
/// sent, after validation (codec::validate_batch and every record decoded), with offsets assigned
/// by the log and, for topics with message.timestamp.type=LogAppendTime, the broker's time.
struct produce_batches_request {
  model::topic_partition partition;
  std::vector<model::bytes> batches;   // each exactly one whole v2 batch, in append order
  acks_mode acks = acks_mode::all;
  int64_t timeout_ms = 30000;
};

struct produce_batches_response {
  model::offset base_offset{-1};        // of the first batch; -1 with acks=none
  model::timestamp_ms log_append_time = model::no_timestamp;  // -1 unless LogAppendTime
  model::offset log_start_offset{-1};
};

enum class offset_spec { earliest, latest, timestamp };

struct list_offsets_request {
  model::topic_partition partition;
  offset_spec spec = offset_spec::latest;
  model::timestamp_ms timestamp = 0;   // for offset_spec::timestamp
};

struct list_offsets_response {
  std::optional<model::offset> found_offset;   // nullopt: no record at/after the timestamp
  model::timestamp_ms timestamp = model::no_timestamp;
};

struct broker_description {
  int32_t node_id = 0;
  std::string host;
  int32_t port = 0;
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
  virtual void describe_topic(std::string topic, std::function<void(result<topic_description>)> done) = 0;
  [[nodiscard]] virtual std::vector<broker_description> list_brokers() const = 0;
  [[nodiscard]] virtual const broker_config& config() const = 0;

  // ---- data (Produce, Fetch, ListOffsets)
  virtual void produce(produce_request request, std::function<void(result<produce_response>)> done) = 0;
  virtual void fetch(fetch_request request, std::function<void(result<fetch_response>)> done) = 0;
  virtual void list_offsets(list_offsets_request request, std::function<void(result<list_offsets_response>)> done) = 0;
  /// Kafka Produce of one partition's batches (produce_batches_request). Errors:
  /// unknown_topic_or_partition, topic_authorization_failed (internal topic), corrupt_message
  /// (CRC, sizes, record count, a record that does not decode; names the batch), message_too_large
  /// (max.message.bytes), invalid_request (a transactional or control batch: not served yet),
  /// not_enough_replicas, kafka_storage_error, throttling_quota_exceeded.
  virtual void produce_batches(produce_batches_request request,
                               std::function<void(result<produce_batches_response>)> done) = 0;

  /// First step of a graceful stop: new calls are refused (broker_not_available) and parked
  /// long-poll fetches are answered now with what they have, so front ends can drain quickly.
  virtual void begin_shutdown() = 0;

  // ---- consumer groups (groups.h)
  virtual group_api& groups() = 0;

  /// Stops accepting work, completes in-flight calls, flushes and closes every log cleanly.
  virtual void shutdown(std::function<void()> done) = 0;
};

struct broker_dependencies {
  io::file_system& fs;
  const base::clock& clock;
  runtime::shard_runtime& runtime;
  std::string advertised_host = "127.0.0.1";
  int32_t advertised_port = 8082;
};

/// Opens the broker on `config.log_dir`, replaying the metadata log and recovering every partition
/// on its owning shard. Errors: kafka_storage_error (names the path), invalid_config.
result<std::unique_ptr<broker>> open_broker(broker_config config, broker_dependencies deps);

/// Kafka's topic name rules: [a-zA-Z0-9._-], 1..249 chars, not "." or "..". Message says why.
result<void> validate_topic_name(std::string_view name);

}  // namespace ringlog::broker
