#include "ringlog/delay/checkpoint.h"

#include <string>

#include "ringlog/codec/varint.h"
#include "ringlog/delay/constants.h"

namespace ringlog::delay {

namespace {

void put_offsets(model::bytes& out, model::offset from, const std::vector<model::offset>& offsets) {
  codec::put_varint(out, static_cast<int64_t>(offsets.size()));
  int64_t previous = from.value();
  for (auto o : offsets) {
    codec::put_varint(out, o.value() - previous);
    previous = o.value();
  }
}

/// Reads a count and that many deltas; each offset must be > the previous (the first >= `from`
/// when `first_may_equal`, else > it). Bounded by `count_max` so a corrupt count cannot allocate.
result<std::vector<model::offset>> get_offsets(std::span<const std::byte> in, size_t& pos, model::offset from,
                                               bool first_may_equal, size_t count_max, const char* what) {
  auto count = codec::get_varint(in, pos);
  if (!count.ok()) return error{errc::corrupt_message, std::string("checkpoint: ") + what + " count: " + count.error().message};
  if (*count < 0 || static_cast<uint64_t>(*count) > count_max) {
    return error{errc::corrupt_message, std::string("checkpoint: ") + what + " count " + std::to_string(*count) +
                                            " is outside [0, " + std::to_string(count_max) + "]"};
  }
  std::vector<model::offset> out;
  out.reserve(static_cast<size_t>(*count));
  int64_t previous = from.value();
  for (int64_t i = 0; i < *count; ++i) {
    auto delta = codec::get_varint(in, pos);
    if (!delta.ok()) return error{errc::corrupt_message, std::string("checkpoint: ") + what + ": " + delta.error().message};
    const bool first = i == 0;
    if (*delta < 0 || (*delta == 0 && !(first && first_may_equal)) || previous > INT64_MAX - *delta) {
      return error{errc::corrupt_message, std::string("checkpoint: ") + what + " offsets are not ascending above the position"};
    }
    previous += *delta;
    out.push_back(model::offset{previous});
  }
  return out;
}

}  // namespace

model::bytes encode_checkpoint(const checkpoint& c) {
  model::bytes out;
  codec::put_varint(out, checkpoint_version);
  codec::put_varint(out, c.position.value());
  put_offsets(out, c.position, c.moved_ahead);
  put_offsets(out, c.position, c.in_flight);
  codec::put_varint(out, c.intent_ms);
  return out;
}

result<checkpoint> decode_checkpoint(std::span<const std::byte> value) {
  size_t pos = 0;
  auto version = codec::get_varint(value, pos);
  if (!version.ok()) return error{errc::corrupt_message, "checkpoint: version: " + version.error().message};
  if (*version != checkpoint_version) {
    return error{errc::unsupported_version, "checkpoint version " + std::to_string(*version) + " (this broker reads " +
                                                std::to_string(checkpoint_version) + ")"};
  }
  checkpoint c;
  auto position = codec::get_varint(value, pos);
  if (!position.ok() || *position < 0) return error{errc::corrupt_message, "checkpoint: position is missing or negative"};
  c.position = model::offset{*position};
  // moved_ahead holds moved offsets above the position (never the position itself, which is the
  // first unmoved one); in_flight ones are unmoved, so the first may be the position.
  auto moved = get_offsets(value, pos, c.position, false, moved_ahead_max, "moved");
  if (!moved.ok()) return moved.error();
  c.moved_ahead = std::move(moved).value();
  auto in_flight = get_offsets(value, pos, c.position, true, window_records_max, "in-flight");
  if (!in_flight.ok()) return in_flight.error();
  c.in_flight = std::move(in_flight).value();
  auto intent = codec::get_varint(value, pos);
  if (!intent.ok() || *intent < -1) return error{errc::corrupt_message, "checkpoint: intent time is missing or below -1"};
  c.intent_ms = *intent;
  if (pos != value.size()) {
    return error{errc::corrupt_message, "checkpoint: " + std::to_string(value.size() - pos) + " trailing bytes"};
  }
  return c;
}

}  // namespace ringlog::delay
