#include "base64.h"

#include <array>

namespace ringlog::gateway {

namespace {
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_reverse() {
  std::array<int8_t, 256> r{};
  for (auto& v : r) v = -1;
  for (size_t i = 0; i < alphabet.size(); ++i) r[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return r;
}
constexpr auto reverse = make_reverse();
}  // namespace

std::string base64_encode(std::span<const std::byte> data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t v = (std::to_integer<uint32_t>(data[i]) << 16) | (std::to_integer<uint32_t>(data[i + 1]) << 8) |
                 std::to_integer<uint32_t>(data[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  size_t rest = data.size() - i;
  if (rest == 1) {
    uint32_t v = std::to_integer<uint32_t>(data[i]) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    uint32_t v = (std::to_integer<uint32_t>(data[i]) << 16) | (std::to_integer<uint32_t>(data[i + 1]) << 8);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<model::bytes> base64_decode(std::string_view text) {
  size_t padding = 0;
  while (!text.empty() && text.back() == '=' && padding < 2) {
    text.remove_suffix(1);
    ++padding;
  }
  if (text.size() % 4 == 1) return std::nullopt;                 // no whole byte in 6 bits
  if (padding > 0 && (text.size() + padding) % 4 != 0) return std::nullopt;
  const size_t whole = text.size() / 4;
  const size_t rest = text.size() % 4;  // 0, 2 or 3 characters: 0, 1 or 2 more bytes
  model::bytes out(whole * 3 + (rest == 0 ? 0 : rest - 1));
  const auto* in = reinterpret_cast<const unsigned char*>(text.data());
  std::byte* o = out.data();
  // Four characters -> three bytes per step; any invalid character (including '=' in the
  // middle) sets the sign bit of one table entry, checked once per group.
  for (size_t g = 0; g < whole; ++g, in += 4, o += 3) {
    const int32_t a = reverse[in[0]], b = reverse[in[1]], c = reverse[in[2]], d = reverse[in[3]];
    if ((a | b | c | d) < 0) return std::nullopt;
    const uint32_t v = (static_cast<uint32_t>(a) << 18) | (static_cast<uint32_t>(b) << 12) |
                       (static_cast<uint32_t>(c) << 6) | static_cast<uint32_t>(d);
    o[0] = static_cast<std::byte>(v >> 16);
    o[1] = static_cast<std::byte>(v >> 8);
    o[2] = static_cast<std::byte>(v);
  }
  if (rest >= 2) {
    const int32_t a = reverse[in[0]], b = reverse[in[1]], c = rest == 3 ? reverse[in[2]] : 0;
    if ((a | b | c) < 0) return std::nullopt;
    const uint32_t v = (static_cast<uint32_t>(a) << 18) | (static_cast<uint32_t>(b) << 12) | (static_cast<uint32_t>(c) << 6);
    o[0] = static_cast<std::byte>(v >> 16);
    if (rest == 3) o[1] = static_cast<std::byte>(v >> 8);
    // Leftover bits must be zero (canonical encoding), as strict decoders require.
    const uint32_t leftover = rest == 2 ? (v >> 12) & 0xf : (v >> 6) & 0x3;
    if (leftover != 0) return std::nullopt;
  }
  return out;
}

}  // namespace ringlog::gateway
