#pragma once
// Fixed limits of the Kafka wire codec, each with the reason for its value (style.md "Limits").

#include <cstddef>
#include <cstdint>

namespace ringlog::protocol::limits {

/// Longest unsigned varint of a 32-bit value, bytes: ceil(32 / 7). Kafka's readUnsignedVarint
/// rejects a 6th byte, and so do we.
inline constexpr size_t varint32_bytes_max = 5;
/// Longest varint of a 64-bit value, bytes: ceil(64 / 7).
inline constexpr size_t varint64_bytes_max = 10;
/// Longest classic (int16-prefixed) string, bytes: the length prefix is a signed int16.
inline constexpr size_t string_bytes_max = 32767;
/// Longest bytes/records/compact value and largest array count: the prefix is an int32 (or an
/// unsigned varint of length + 1 that must still fit an int32 in Kafka's readers).
inline constexpr size_t bytes_max = 2147483647;
/// Smallest encoding of one tagged field, bytes: a 1-byte tag plus a 1-byte size. A tagged field
/// count is bounded by remaining bytes / this, so a forged count never allocates.
inline constexpr size_t tagged_field_bytes_min = 2;
/// Largest request or response frame (after the 4-byte size) the codec accepts, bytes: Kafka's
/// socket.request.max.bytes default (100 MiB). Transports check it before buffering a frame.
inline constexpr int32_t frame_bytes_max = 104857600;

}  // namespace ringlog::protocol::limits
