#pragma once
// The metadata image (topics, partitions, configs) and the records of the metadata log that
// build it (design.md section 6: the future Raft log; today one voter, this node).
//
// The metadata log is the partition log `__cluster_metadata-0` in the log directory. Each
// record's key names its type and its value is text, one "field=value" per line:
//   key "topic":        name, topic_id, partitions, replication_factor, leader_epoch,
//                        config.<name>=<value> per override; a full upsert of the topic.
//   key "remove_topic": name, topic_id.
// Replaying the log in order rebuilds the image.

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/broker/broker.h"
#include "ringlog/model/record.h"

namespace ringlog::broker {

/// Figures the owning shard publishes for readers on other threads (describe, metrics).
struct partition_stats {
  std::atomic<int64_t> log_start_offset{0};
  std::atomic<int64_t> high_watermark{0};
  std::atomic<int64_t> log_end_offset{0};
  std::atomic<uint64_t> size_bytes{0};
};

struct topic_record {
  std::string name;
  std::string topic_id;
  int32_t partitions_count = 1;
  int16_t replication_factor = 1;
  int32_t leader_epoch = 0;
  std::map<std::string, std::string> configs;
};

struct topic_state {
  topic_record record;
  bool is_internal = false;
  std::vector<std::shared_ptr<partition_stats>> partitions;
  std::atomic<uint32_t> next_keyless_partition{0};
};

struct metadata_change {
  std::optional<topic_record> upsert;
  std::optional<std::string> removed_topic;
};

/// A metadata log record (key + value) for an upsert or a removal.
model::record encode_topic_upsert(const topic_record& topic);
model::record encode_topic_removal(const std::string& name, const std::string& topic_id);
/// Errors: invalid_request naming the bad field (the log is then refused at start).
result<metadata_change> decode_metadata_record(const model::record& record);

}  // namespace ringlog::broker
