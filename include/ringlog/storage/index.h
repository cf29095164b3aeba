#pragma once
// Sparse segment indexes in Kafka's on-disk layout (big-endian, fixed-size entries, no header):
//
//   .index      entry = relative_offset int32 (offset - segment base) + file_position int32
//               The offset is the LAST offset of the batch that starts at file_position (Kafka's
//               LogSegment.append). One entry each time more than index.interval.bytes were
//               appended since the previous entry. Both columns strictly increase.
//   .timeindex  entry = timestamp int64 + relative_offset int32: the largest timestamp seen so far
//               in the segment and the offset of the record that has it. Timestamps strictly
//               increase from entry to entry.
//
// Both are kept in memory (vectors) and appended to their file; they are rebuilt by scanning the
// segment when recovery cannot trust them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ringlog/model/types.h"

namespace ringlog::storage {

struct offset_index_entry {
  int32_t relative_offset = 0;
  uint32_t file_position = 0;
  bool operator==(const offset_index_entry&) const = default;
};

struct time_index_entry {
  model::timestamp_ms timestamp = 0;
  int32_t relative_offset = 0;
  bool operator==(const time_index_entry&) const = default;
};

/// 8 bytes per entry. Precondition: out has room.
void encode_offset_index_entry(const offset_index_entry& e, std::span<std::byte, 8> out);
/// 12 bytes per entry.
void encode_time_index_entry(const time_index_entry& e, std::span<std::byte, 12> out);

/// Decodes every whole entry of an index file; a trailing partial entry is ignored (torn write).
std::vector<offset_index_entry> decode_offset_index(std::span<const std::byte> file_bytes);
std::vector<time_index_entry> decode_time_index(std::span<const std::byte> file_bytes);

/// The last entry whose relative_offset <= `relative_offset`, or nullopt (start at position 0).
/// Entries must be sorted by relative_offset. O(log n).
std::optional<offset_index_entry> floor_offset(std::span<const offset_index_entry> entries, int32_t relative_offset);
/// The last entry whose timestamp < `timestamp`, or nullopt. O(log n).
std::optional<time_index_entry> last_before_timestamp(std::span<const time_index_entry> entries,
                                                      model::timestamp_ms timestamp);

}  // namespace ringlog::storage
