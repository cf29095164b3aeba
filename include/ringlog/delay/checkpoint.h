#pragma once
// A delay scheduler's committed position, stored as a record of its own delay partition (the
// partition's leader writes it with acks=all, so it is replicated with the partition and moves
// with its leadership; nothing else has to be reachable to commit). The latest checkpoint in the
// partition is the scheduler's state.
//
// Value layout (version 0), Kafka zig-zag varints (codec/varint.h):
//   version          varint  (0)
//   position         varint  every offset below it is moved or is not a delay record
//   moved_count      varint  then moved_count deltas: offsets > position moved already, ascending
//                            (first delta from position, each next from the previous offset)
//   in_flight_count  varint  then in_flight_count deltas likewise: moves that may or may not be in
//                            their target (an intent); a restarted scheduler looks them up first
//   intent_ms        varint  broker time (ms) before which none of the in-flight moves was sent; -1 none

#include <cstdint>
#include <span>
#include <vector>

#include "ringlog/delay/errc.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"

namespace ringlog::delay {

struct checkpoint {
  model::offset position{0};
  std::vector<model::offset> moved_ahead;   // ascending, each > position
  std::vector<model::offset> in_flight;     // ascending, each >= position, none in moved_ahead
  int64_t intent_ms = -1;
  bool operator==(const checkpoint&) const = default;
};

inline constexpr int64_t checkpoint_version = 0;

model::bytes encode_checkpoint(const checkpoint& c);
/// Errors: corrupt_message (truncated, trailing bytes, offsets not ascending or below position,
/// counts past the window), unsupported_version.
result<checkpoint> decode_checkpoint(std::span<const std::byte> value);

}  // namespace ringlog::delay
