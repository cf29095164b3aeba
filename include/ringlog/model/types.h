#pragma once
// Kafka's vocabulary as strong types (style.md "Names"). An offset is a logical record number
// inside one partition; a file_position is a byte position inside one file. Never mix them.

#include <cstdint>
#include <string>
#include <string_view>

#include "ringlog/base/named_type.h"

namespace ringlog::model {

/// Logical record offset inside a partition, 0-based, dense and monotonic.
using offset = base::named_type<int64_t, struct offset_tag>;
/// Leader epoch of a partition (KIP-101); -1 means "unknown".
using leader_epoch = base::named_type<int32_t, struct leader_epoch_tag>;
/// Producer id (KIP-98); -1 means "no producer id" (non-idempotent producer).
using producer_id = base::named_type<int64_t, struct producer_id_tag>;
/// Producer epoch (KIP-98); -1 means "none".
using producer_epoch = base::named_type<int16_t, struct producer_epoch_tag>;
/// Per-partition sequence number of the first record of a batch (KIP-98); -1 means "none".
using sequence = base::named_type<int32_t, struct sequence_tag>;
/// Partition number inside a topic, 0-based.
using partition_id = base::named_type<int32_t, struct partition_id_tag>;
/// Byte position inside one file, 0-based.
using file_position = base::named_type<uint64_t, struct file_position_tag>;

/// Milliseconds since the Unix epoch (Kafka record timestamps); -1 means "no timestamp".
using timestamp_ms = int64_t;

inline constexpr int64_t no_producer_id = -1;
inline constexpr int16_t no_producer_epoch = -1;
inline constexpr int32_t no_sequence = -1;
inline constexpr int64_t no_timestamp = -1;

/// Whether `topic` is one of the broker's own topics: every name starting with "__"
/// (__consumer_offsets, __transaction_state, the delay and retry topics). Producers cannot write
/// to them, clients cannot create or delete them. Kafka's Topic.isInternal names only
/// __consumer_offsets and __transaction_state; ringlog reserves the whole prefix.
inline bool is_internal_topic(std::string_view topic) { return topic.starts_with("__"); }

/// A topic-partition pair; `<topic>-<partition>` is also the partition's directory name.
struct topic_partition {
  std::string topic;
  partition_id partition{0};
  bool operator==(const topic_partition&) const = default;
  [[nodiscard]] std::string directory_name() const { return topic + "-" + std::to_string(partition.value()); }
};

}  // namespace ringlog::model
