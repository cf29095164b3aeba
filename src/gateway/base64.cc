#include "base64.h"

#include <array>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

namespace {

#if defined(__x86_64__)
/// 32 characters -> 24 bytes with AVX2 (Wojciech Mula's and Daniel Lemire's method: classify by
/// nibbles, translate with a per-class offset, pack with multiply-adds). Writes 32 bytes at `out`
/// (the last 8 are scratch). Returns false when a character is outside the alphabet.
__attribute__((target("avx2"))) bool decode_block_avx2(const unsigned char* in, std::byte* out) {
  const __m256i input = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  const __m256i lut_lo = _mm256_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A,
                                          0x1B, 0x1B, 0x1B, 0x1A, 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                          0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
  const __m256i lut_hi = _mm256_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10,
                                          0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
                                          0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
  const __m256i lut_roll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 19, 4,
                                            -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i mask_2f = _mm256_set1_epi8(0x2f);
  const __m256i hi_nibbles = _mm256_and_si256(_mm256_srli_epi32(input, 4), mask_2f);
  const __m256i lo_nibbles = _mm256_and_si256(input, mask_2f);
  const __m256i lo = _mm256_shuffle_epi8(lut_lo, lo_nibbles);
  const __m256i hi = _mm256_shuffle_epi8(lut_hi, hi_nibbles);
  if (!_mm256_testz_si256(lo, hi)) return false;
  const __m256i eq_2f = _mm256_cmpeq_epi8(input, mask_2f);
  const __m256i roll = _mm256_shuffle_epi8(lut_roll, _mm256_add_epi8(eq_2f, hi_nibbles));
  const __m256i values = _mm256_add_epi8(input, roll);
  const __m256i pairs = _mm256_maddubs_epi16(values, _mm256_set1_epi32(0x01400140));
  __m256i packed = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00011000));
  packed = _mm256_shuffle_epi8(packed, _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0,
                                                        6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
  packed = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, -1, -1));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
  return true;
}

bool have_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#endif

std::optional<model::bytes> decode(std::string_view text, bool allow_simd);

}  // namespace

std::optional<model::bytes> base64_decode(std::string_view text) { return decode(text, true); }
std::optional<model::bytes> base64_decode_portable(std::string_view text) { return decode(text, false); }

namespace {

std::optional<model::bytes> decode(std::string_view text, bool allow_simd) {
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
  size_t g = 0;
#if defined(__x86_64__)
  // 8 groups per AVX2 step, while at least 8 more output bytes follow (its 32-byte store).
  if (allow_simd && have_avx2()) {
    for (; g + 11 <= whole; g += 8, in += 32, o += 24) {
      if (!decode_block_avx2(in, o)) return std::nullopt;
    }
  }
#else
  (void)allow_simd;
#endif
  // Four characters -> three bytes per step; any invalid character (including '=' in the
  // middle) sets the sign bit of one table entry, checked once per group.
  for (; g < whole; ++g, in += 4, o += 3) {
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

}  // namespace

}  // namespace ringlog::gateway
