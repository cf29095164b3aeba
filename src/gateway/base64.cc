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
  model::bytes out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int8_t v = reverse[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;  // includes '=' in the middle
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::byte>((acc >> bits) & 0xff));
    }
  }
  // Leftover bits must be zero (canonical encoding), as strict decoders require.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace ringlog::gateway
