#include <doctest.h>

#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "ringlog/codec/crc32c.h"

using namespace ringlog;

namespace {

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("crc32c known vectors") {
  CHECK(codec::crc32c(as_bytes("123456789")) == 0xE3069283u);
  CHECK(codec::crc32c_portable(as_bytes("123456789")) == 0xE3069283u);
  CHECK(codec::crc32c(as_bytes("")) == 0u);
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of 0xff, ascending and descending.
  std::vector<std::byte> buf(32, std::byte{0});
  CHECK(codec::crc32c(buf) == 0x8A9136AAu);
  CHECK(codec::crc32c_portable(buf) == 0x8A9136AAu);
  std::fill(buf.begin(), buf.end(), std::byte{0xff});
  CHECK(codec::crc32c(buf) == 0x62A8AB43u);
  for (size_t i = 0; i < 32; ++i) buf[i] = static_cast<std::byte>(i);
  CHECK(codec::crc32c(buf) == 0x46DD794Eu);
  for (size_t i = 0; i < 32; ++i) buf[i] = static_cast<std::byte>(31 - i);
  CHECK(codec::crc32c(buf) == 0x113FDB5Cu);
  CHECK(codec::crc32c_portable(buf) == 0x113FDB5Cu);
}

TEST_CASE("crc32c continues across pieces") {
  const auto all = as_bytes("The quick brown fox jumps over the lazy dog");
  const uint32_t whole = codec::crc32c(all);
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    CHECK(codec::crc32c(all.subspan(cut), codec::crc32c(all.first(cut))) == whole);
    CHECK(codec::crc32c_portable(all.subspan(cut), codec::crc32c_portable(all.first(cut))) == whole);
  }
}

TEST_CASE("hardware crc32c equals the portable one on random buffers") {
  MESSAGE("crc32c uses the CPU instruction: " << codec::crc32c_hardware());
  std::mt19937_64 rng(20240611);
  std::vector<std::byte> buf(4096 + 16);
  for (auto& b : buf) b = static_cast<std::byte>(rng());
  for (size_t alignment = 0; alignment < 16; ++alignment) {
    for (size_t length = 0; length <= 300; ++length) {
      auto piece = std::span<const std::byte>(buf).subspan(alignment, length);
      REQUIRE(codec::crc32c(piece) == codec::crc32c_portable(piece));
    }
    for (size_t length : {1023u, 1024u, 1025u, 4095u, 4096u}) {
      auto piece = std::span<const std::byte>(buf).subspan(alignment, length);
      const uint32_t seed = static_cast<uint32_t>(rng());
      REQUIRE(codec::crc32c(piece, seed) == codec::crc32c_portable(piece, seed));
    }
  }
}

TEST_CASE("three-way interleaved crc32c equals the portable one across its block boundaries") {
  // 768 = 3 short blocks, 24576 = 3 long blocks: lengths around both, with a seed (continuation).
  std::mt19937_64 rng(20261129);
  std::vector<std::byte> buf(3 * 24576 + 4096 + 16);
  for (auto& b : buf) b = static_cast<std::byte>(rng());
  for (size_t alignment : {0u, 1u, 7u, 8u}) {
    for (size_t length : {767u, 768u, 769u, 1536u, 24575u, 24576u, 24577u, 25344u, 49152u, 3u * 24576u + 1000u}) {
      auto piece = std::span<const std::byte>(buf).subspan(alignment, length);
      const uint32_t seed = static_cast<uint32_t>(rng());
      REQUIRE(codec::crc32c(piece, seed) == codec::crc32c_portable(piece, seed));
    }
  }
}
