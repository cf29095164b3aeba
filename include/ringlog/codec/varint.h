#pragma once
// Zig-zag varints as in Kafka's record format v2 (the protobuf encoding): at most 5 bytes for
// int32 and 10 for int64.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ringlog/codec/errc.h"

namespace ringlog::codec {

/// Appends the zig-zag varint encoding of v to out.
void put_varint(std::vector<std::byte>& out, int64_t v);
/// Bytes put_varint(v) writes, 1..10.
size_t varint_size(int64_t v) noexcept;

/// Reads a zig-zag varint at `in[pos]`, advancing pos. Errors: truncated, invalid_varint
/// (more than 10 bytes). Never reads past in.size().
result<int64_t> get_varint(std::span<const std::byte> in, size_t& pos);

/// Longest zig-zag varint encodings, bytes: ceil(64 / 7) and ceil(32 / 7).
inline constexpr size_t varint64_bytes_max = 10;
inline constexpr size_t varint32_bytes_max = 5;

/// Reads a zig-zag varint of an int32 field (Kafka's "varint", e.g. offset_delta, lengths) at
/// `in[pos]`, advancing pos. Errors: truncated, invalid_varint (more than 5 bytes or beyond
/// int32). Never reads past in.size().
result<int32_t> get_varint32(std::span<const std::byte> in, size_t& pos);

}  // namespace ringlog::codec
