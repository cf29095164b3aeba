#include "ringlog/codec/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ringlog::codec {
namespace {

/// Reflected Castagnoli polynomial (0x1EDC6F41 bit-reversed).
constexpr uint32_t castagnoli_reflected = 0x82F63B78;
/// Slicing-by-8: 8 tables of 256 entries; table[k][b] is the CRC of byte b followed by k zero bytes.
constexpr size_t slices = 8;

using crc_tables = std::array<std::array<uint32_t, 256>, slices>;

constexpr crc_tables make_tables() {
  crc_tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1) ? castagnoli_reflected : 0);
    t[0][b] = c;
  }
  for (size_t k = 1; k < slices; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr crc_tables tables = make_tables();

uint64_t load_le64(const std::byte* p) noexcept {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

/// Raw (not inverted) slicing-by-8 update.
uint32_t update_portable(uint32_t crc, const std::byte* p, size_t n) noexcept {
  while (n >= 8) {
    const uint64_t word = load_le64(p) ^ crc;
    crc = tables[7][word & 0xff] ^ tables[6][(word >> 8) & 0xff] ^ tables[5][(word >> 16) & 0xff] ^
          tables[4][(word >> 24) & 0xff] ^ tables[3][(word >> 32) & 0xff] ^ tables[2][(word >> 40) & 0xff] ^
          tables[1][(word >> 48) & 0xff] ^ tables[0][word >> 56];
    p += 8;
    n -= 8;
  }
  for (size_t i = 0; i < n; ++i) crc = (crc >> 8) ^ tables[0][(crc ^ static_cast<uint32_t>(p[i])) & 0xff];
  return crc;
}

#if defined(__x86_64__)
/// Raw (not inverted) update with the SSE4.2 crc32 instruction: bytes up to 8-byte alignment,
/// then 8 bytes per instruction, then the tail.
__attribute__((target("sse4.2"))) uint32_t update_hardware(uint32_t crc, const std::byte* p, size_t n) noexcept {
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    crc = _mm_crc32_u8(crc, static_cast<uint8_t>(*p));
    ++p;
    --n;
  }
  uint64_t crc64 = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));  // aligned here, memcpy keeps it free of aliasing UB
    crc64 = _mm_crc32_u64(crc64, word);
    p += 8;
    n -= 8;
  }
  crc = static_cast<uint32_t>(crc64);
  for (size_t i = 0; i < n; ++i) crc = _mm_crc32_u8(crc, static_cast<uint8_t>(p[i]));
  return crc;
}

bool detect_hardware() noexcept { return __builtin_cpu_supports("sse4.2"); }
#else
uint32_t update_hardware(uint32_t crc, const std::byte* p, size_t n) noexcept { return update_portable(crc, p, n); }
bool detect_hardware() noexcept { return false; }
#endif

/// CPU check done once, at the first call (a function-local static, so static initialisation
/// order across files cannot observe it unset).
bool use_hardware() noexcept {
  static const bool hardware = detect_hardware();
  return hardware;
}

}  // namespace

uint32_t crc32c(std::span<const std::byte> data, uint32_t crc) noexcept {
  if (use_hardware()) return ~update_hardware(~crc, data.data(), data.size());
  return ~update_portable(~crc, data.data(), data.size());
}

uint32_t crc32c_portable(std::span<const std::byte> data, uint32_t crc) noexcept {
  return ~update_portable(~crc, data.data(), data.size());
}

bool crc32c_hardware() noexcept { return use_hardware(); }

}  // namespace ringlog::codec
