#include "ringlog/codec/varint.h"

#include <string>

namespace ringlog::codec {
namespace {

uint64_t zigzag_encode(int64_t v) noexcept {
  // Shift as unsigned: left-shifting a negative signed value is UB before C++20 and obscure after.
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

int64_t zigzag_decode(uint64_t u) noexcept {
  return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

/// Reads an unsigned base-128 varint of at most `max_bytes` bytes whose last byte may carry at
/// most `last_byte_max` (so the value fits 64 or 32 bits). Never reads past in.size().
result<uint64_t> get_unsigned(std::span<const std::byte> in, size_t& pos, size_t max_bytes,
                              uint8_t last_byte_max) {
  uint64_t value = 0;
  for (size_t i = 0; i < max_bytes; ++i) {
    if (pos + i >= in.size()) {
      return error{errc::truncated, "varint: input ends after " + std::to_string(i) + " bytes"};
    }
    const auto b = static_cast<uint8_t>(in[pos + i]);
    if (i + 1 == max_bytes && b > last_byte_max) {
      return error{errc::invalid_varint, "varint: longer than " + std::to_string(max_bytes) +
                                             " bytes or overflowing (last byte " + std::to_string(b) + ")"};
    }
    value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      pos += i + 1;
      return value;
    }
  }
  // Unreachable: the last byte either ends the varint or fails the last_byte_max check above.
  return error{errc::invalid_varint, "varint: too long"};
}

}  // namespace

void put_varint(std::vector<std::byte>& out, int64_t v) {
  uint64_t u = zigzag_encode(v);
  while (u >= 0x80) {
    out.push_back(static_cast<std::byte>((u & 0x7f) | 0x80));
    u >>= 7;
  }
  out.push_back(static_cast<std::byte>(u));
}

size_t varint_size(int64_t v) noexcept {
  uint64_t u = zigzag_encode(v);
  size_t n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}

result<int64_t> get_varint(std::span<const std::byte> in, size_t& pos) {
  // 10 bytes carry 70 bits; the 10th holds only bit 63, so it may be 0 or 1.
  auto u = get_unsigned(in, pos, varint64_bytes_max, 0x01);
  if (!u.ok()) return u.error();
  return zigzag_decode(*u);
}

result<int32_t> get_varint32(std::span<const std::byte> in, size_t& pos) {
  // 5 bytes carry 35 bits; the 5th holds bits 28-31, so it may be at most 0x0f (Kafka's
  // ByteUtils.readVarint refuses a 5th byte with more bits set).
  auto u = get_unsigned(in, pos, varint32_bytes_max, 0x0f);
  if (!u.ok()) return u.error();
  const auto v32 = static_cast<uint32_t>(*u);
  return static_cast<int32_t>((v32 >> 1) ^ (~(v32 & 1) + 1));
}

}  // namespace ringlog::codec
