#include "ringlog/codec/base64.h"

#include <array>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ringlog::codec {

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

namespace {

/// Three bytes at `in` -> four characters at `out`.
inline void encode_group(const unsigned char* in, char* out) {
  const uint32_t v = (uint32_t{in[0]} << 16) | (uint32_t{in[1]} << 8) | uint32_t{in[2]};
  out[0] = alphabet[(v >> 18) & 63];
  out[1] = alphabet[(v >> 12) & 63];
  out[2] = alphabet[(v >> 6) & 63];
  out[3] = alphabet[v & 63];
}

#if defined(__x86_64__)
bool have_avx2();

/// 24 bytes -> 32 characters with AVX2 (Wojciech Mula's method, as in aklomp/base64: spread
/// each 3-byte group over 4 bytes with a shuffle, cut the 6-bit fields with multiplies, then
/// translate 0..63 to the alphabet with a 16-entry offset table). Reads 28 bytes at `in`.
__attribute__((target("avx2"))) void encode_block_avx2(const unsigned char* in, char* out) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 12));
  const __m256i input = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
  // Each lane holds 12 input bytes; every output dword takes bytes (b1, b0, b2, b1) of a group.
  const __m256i spread = _mm256_shuffle_epi8(
      input, _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
                              1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10));
  const __m256i t0 = _mm256_and_si256(spread, _mm256_set1_epi32(0x0fc0fc00));
  const __m256i t1 = _mm256_mulhi_epu16(t0, _mm256_set1_epi32(0x04000040));
  const __m256i t2 = _mm256_and_si256(spread, _mm256_set1_epi32(0x003f03f0));
  const __m256i t3 = _mm256_mullo_epi16(t2, _mm256_set1_epi32(0x01000010));
  const __m256i sextets = _mm256_or_si256(t1, t3);
  // Ranges: 0..25 -> 'A'.. (+65), 26..51 -> 'a'.. (+71), 52..61 -> '0'.. (-4), 62 -> '+' (-19),
  // 63 -> '/' (-16). Index = saturating (v - 51), plus one for every v > 25.
  const __m256i lut = _mm256_setr_epi8(65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0,
                                       65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0);
  __m256i indices = _mm256_subs_epu8(sextets, _mm256_set1_epi8(51));
  indices = _mm256_sub_epi8(indices, _mm256_cmpgt_epi8(sextets, _mm256_set1_epi8(25)));
  const __m256i chars = _mm256_add_epi8(sextets, _mm256_shuffle_epi8(lut, indices));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), chars);
}
#endif

void encode_append(std::string& out, std::span<const std::byte> data, bool allow_simd) {
  const size_t start = out.size();
  out.resize(start + (data.size() + 2) / 3 * 4);
  const auto* in = reinterpret_cast<const unsigned char*>(data.data());
  char* o = out.data() + start;
  size_t i = 0;
#if defined(__x86_64__)
  if (allow_simd && have_avx2()) {
    for (; i + 28 <= data.size(); i += 24, o += 32) encode_block_avx2(in + i, o);
  }
#else
  (void)allow_simd;
#endif
  for (; i + 3 <= data.size(); i += 3, o += 4) encode_group(in + i, o);
  const size_t rest = data.size() - i;
  if (rest > 0) {
    const unsigned char last[3] = {in[i], rest == 2 ? in[i + 1] : uint8_t{0}, 0};
    encode_group(last, o);
    o[3] = '=';
    if (rest == 1) o[2] = '=';
  }
}

}  // namespace

void base64_encode_append(std::string& out, std::span<const std::byte> data) { encode_append(out, data, true); }

std::string base64_encode(std::span<const std::byte> data) {
  std::string out;
  encode_append(out, data, true);
  return out;
}

std::string base64_encode_portable(std::span<const std::byte> data) {
  std::string out;
  encode_append(out, data, false);
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
    // Leftover bits of the last character are ignored (RFC 4648 section 3.5 allows decoders to
    // refuse them; Java's decoder, which the Confluent REST Proxy uses, and Python's accept them,
    // and so does ringlog: "QR==" is "A", as there).
  }
  return out;
}

}  // namespace

}  // namespace ringlog::codec
