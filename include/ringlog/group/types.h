#pragma once
// Vocabulary of the group coordinator: generations, partition sets, subscriptions, offsets.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ringlog/base/named_type.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"

namespace ringlog::group {

using model::offset;
using model::partition_id;
using model::topic_partition;

/// Group generation (Kafka's generation id / KIP-848 group epoch): bumped by every rebalance
/// that changes membership or the target assignment. 0 = a group that never had members.
using generation_id = base::named_type<int32_t, struct generation_id_tag>;

/// Orders topic-partitions by (topic, partition): Kafka's assignors iterate in this order.
struct topic_partition_less {
  bool operator()(const topic_partition& a, const topic_partition& b) const {
    if (a.topic != b.topic) return a.topic < b.topic;
    return a.partition < b.partition;
  }
};
using partition_set = std::set<topic_partition, topic_partition_less>;
template <typename V>
using partition_map = std::map<topic_partition, V, topic_partition_less>;

/// Topic name -> partition count, as the caller's metadata knows it (set_topics()).
using topic_map = std::map<std::string, int32_t>;

/// Group states, Kafka's names. With server-side cooperative assignment they mean:
///   empty                 no members (committed offsets may still exist);
///   preparing_rebalance   some member still owns a partition it must give up (revocation phase);
///   completing_rebalance  nothing left to revoke, some member still waits for a partition;
///   stable                owned == target for every member;
///   dead                  no such group (deleted, or never existed: what describe() reports).
enum class group_state { empty, preparing_rebalance, completing_rebalance, stable, dead };
std::string_view to_string(group_state);

/// auto.offset.reset: where to start when a partition has neither a position nor a commit.
enum class offset_reset : uint8_t { earliest = 0, latest = 1, none = 2 };

/// Server-side assignors (Kafka's partition.assignment.strategy names without the class).
enum class assignor_kind : uint8_t { range = 0, round_robin = 1, cooperative_sticky = 2 };
std::string_view to_string(assignor_kind);

/// What a member consumes: nothing yet, a topic list, a pattern (full match, like Java's
/// Matcher.matches(), against non-internal topics), or a manual assignment (Kafka's assign()).
/// Only one kind at a time per member; switching needs unsubscribe() first (Kafka's rule).
enum class subscription_kind : uint8_t { none = 0, topics = 1, pattern = 2, manual = 3 };
struct subscription {
  subscription_kind kind = subscription_kind::none;
  std::vector<std::string> topics;  // kind == topics
  std::string pattern;              // kind == pattern (ECMAScript std::regex syntax)
  partition_set partitions;         // kind == manual
  bool operator==(const subscription&) const = default;
};

/// A committed offset as Kafka stores it: `committed_offset` is the NEXT offset to read.
struct committed_offset {
  offset committed{0};
  std::string metadata;
  int64_t commit_timestamp_ms = 0;
  bool operator==(const committed_offset&) const = default;
};

/// One record for the compacted internal topic __consumer_offsets. value == nullopt is a
/// tombstone. The layout is documented in offsets_codec.h.
struct offsets_topic_record {
  model::bytes key;
  std::optional<model::bytes> value;
  bool operator==(const offsets_topic_record&) const = default;
};
using record_list = std::vector<offsets_topic_record>;

}  // namespace ringlog::group
