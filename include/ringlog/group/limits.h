#pragma once
// Fixed bounds of the group coordinator, each with the reason for its value (style.md "Limits").
// A refusal because of one of these names the limit in its message.

#include <cstddef>
#include <cstdint>

namespace ringlog::group::limits {

/// Members of one group. Kafka's group.max.size defaults to unbounded; the assignors are
/// O(members x partitions) per rebalance and every member is in the group metadata record.
inline constexpr size_t group_members_max = 1'000;
/// Groups one coordinator (one shard) holds: each costs a map entry plus its committed offsets.
inline constexpr size_t groups_per_coordinator_max = 10'000;
/// Partitions in one commit / reset request: one request must stay a bounded amount of work
/// (matches model's topic_partitions_max, so a whole topic always fits).
inline constexpr size_t commit_partitions_max = 10'000;
/// Topics in one topic-list subscription: bounds the work of resolving it on every rebalance.
inline constexpr size_t subscription_topics_max = 1'000;
/// Bytes of a subscription pattern: std::regex compiles and matches recursively, so a long
/// pattern could exhaust the stack; real patterns are short ("orders-.*").
inline constexpr size_t pattern_bytes_max = 256;
/// Bytes of commit metadata: Kafka's offset.metadata.max.bytes default.
inline constexpr size_t offset_metadata_bytes_max = 4'096;
/// Bytes of a group id, client name or instance id: they are int16-length strings in the
/// __consumer_offsets key/value encoding and end up in HTTP paths.
inline constexpr size_t group_id_bytes_max = 1'000;
/// Session timeout bounds, ms: Kafka's group.min.session.timeout.ms / group.max.session.timeout.ms
/// defaults. Also applied to the rebalance timeout (Kafka's max.poll.interval.ms may be larger;
/// an HTTP consumer that does not poll for 30 minutes is gone).
inline constexpr int64_t session_timeout_ms_min = 6'000;
inline constexpr int64_t session_timeout_ms_max = 1'800'000;
/// Partitions of __consumer_offsets: Kafka's offsets.topic.num.partitions default.
inline constexpr int32_t offsets_topic_partitions_default = 50;
/// Kafka's offsets.retention.minutes default (7 days, KIP-186) and offsets.retention.check.interval.ms
/// default (10 minutes): committed offsets of a group without members live this long after the
/// group became empty and after its last commit (group_coordinator::expire_offsets).
inline constexpr int64_t offsets_retention_minutes_default = 10'080;
inline constexpr int64_t offsets_retention_check_interval_ms_default = 600'000;
/// Attempts to generate a member id not already in use (ids come from a seeded counter; a
/// replayed group may already hold the next ids). One per existing member plus one suffices.
inline constexpr size_t member_id_attempts_max = group_members_max + 1;

/// Protocols (assignors) one classic member offers in a JoinGroup: clients list one per
/// partition.assignment.strategy entry (Java's default lists two); each is kept per member.
inline constexpr size_t classic_protocols_max = 32;
/// Bytes of one classic member's metadata or assignment (a subscription of 1,000 topics is about
/// 30 KiB): both are kept per member and persisted
/// in the group's record (Kafka bounds them only by the request size).
inline constexpr size_t classic_metadata_bytes_max = 256 << 10;

}  // namespace ringlog::group::limits
