#pragma once
// Standard base64 (RFC 4648 section 4, '+' and '/'), as the REST proxy's binary embedded format
// uses it. Decoding is strict about the alphabet; the trailing '=' padding may be omitted.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ringlog/model/record.h"

namespace ringlog::codec {

/// Appends the encoding of `data` (4 characters per 3 bytes, '=' padded) to `out`. Uses AVX2 for
/// long inputs when the CPU has it.
void base64_encode_append(std::string& out, std::span<const std::byte> data);
std::string base64_encode(std::span<const std::byte> data);
/// The same without SIMD, for tests that compare the two.
std::string base64_encode_portable(std::span<const std::byte> data);
inline std::string base64_encode(std::string_view s) {
  return base64_encode(std::span(reinterpret_cast<const std::byte*>(s.data()), s.size()));
}
/// nullopt on a character outside the alphabet, misplaced padding or an impossible length.
/// Uses AVX2 for long inputs when the CPU has it.
std::optional<model::bytes> base64_decode(std::string_view text);
/// The same without SIMD, for tests that compare the two.
std::optional<model::bytes> base64_decode_portable(std::string_view text);

}  // namespace ringlog::codec
