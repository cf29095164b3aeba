#pragma once
// Which partition of __consumer_offsets (and so which coordinator) owns a group.

#include <cstdint>
#include <string_view>

namespace ringlog::group {

/// Java's String.hashCode() of `s`: s is UTF-8, decoded to UTF-16 code units (code points above
/// U+FFFF become surrogate pairs, invalid UTF-8 bytes become U+FFFD as Java's decoder does), then
/// h = 31*h + unit with int32 wrap-around.
int32_t java_string_hash_code(std::string_view s);

/// Kafka's GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % offsets_topic_partitions,
/// where Kafka's Utils.abs(h) is Math.abs(h) except that Integer.MIN_VALUE maps to 0 (not to itself).
/// (Not `h & 0x7fffffff`, Utils.toPositive, which the record partitioner uses: the two differ for
/// every negative h.)
/// Result in [0, offsets_topic_partitions). offsets_topic_partitions must be >= 1.
int32_t coordinator_partition_for(std::string_view group_id, int32_t offsets_topic_partitions);

}  // namespace ringlog::group
