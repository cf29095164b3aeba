#include <doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "ringlog/codec/varint.h"

using namespace ringlog;
using codec::errc;

namespace {

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

}  // namespace

TEST_CASE("varint round trip, including int64 and int32 extremes") {
  const std::vector<int64_t> values = {0,
                                       1,
                                       -1,
                                       63,
                                       -64,
                                       64,
                                       -65,
                                       300,
                                       std::numeric_limits<int32_t>::max(),
                                       std::numeric_limits<int32_t>::min(),
                                       int64_t{1} << 40,
                                       -(int64_t{1} << 40),
                                       std::numeric_limits<int64_t>::max(),
                                       std::numeric_limits<int64_t>::min()};
  for (int64_t v : values) {
    std::vector<std::byte> out;
    codec::put_varint(out, v);
    CHECK(out.size() == codec::varint_size(v));
    size_t pos = 0;
    auto r = codec::get_varint(out, pos);
    REQUIRE(r.ok());
    CHECK(*r == v);
    CHECK(pos == out.size());
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
      pos = 0;
      auto r32 = codec::get_varint32(out, pos);
      REQUIRE(r32.ok());
      CHECK(*r32 == v);
      CHECK(pos == out.size());
    } else {
      pos = 0;
      auto r32 = codec::get_varint32(out, pos);
      REQUIRE_FALSE(r32.ok());
      CHECK(r32.error().code == errc::invalid_varint);
    }
  }
  std::vector<std::byte> max_bytes;
  codec::put_varint(max_bytes, std::numeric_limits<int64_t>::min());
  CHECK(max_bytes.size() == 10);
  CHECK(codec::varint_size(0) == 1);
  CHECK(codec::varint_size(-1) == 1);
}

TEST_CASE("known zig-zag encodings") {
  std::vector<std::byte> out;
  codec::put_varint(out, -1);
  codec::put_varint(out, 1);
  codec::put_varint(out, 150);
  CHECK(out == bytes_of({0x01, 0x02, 0xac, 0x02}));
}

TEST_CASE("a sequence of varints decodes in order") {
  std::vector<std::byte> out;
  for (int64_t v = -1000; v <= 1000; v += 7) codec::put_varint(out, v * 1'000'003);
  size_t pos = 0;
  for (int64_t v = -1000; v <= 1000; v += 7) {
    auto r = codec::get_varint(out, pos);
    REQUIRE(r.ok());
    CHECK(*r == v * 1'000'003);
  }
  CHECK(pos == out.size());
}

TEST_CASE("overlong varints are invalid_varint") {
  // 10 bytes all with the continuation bit: an 11th byte would be needed.
  auto ten_continued = bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00});
  size_t pos = 0;
  auto r = codec::get_varint(ten_continued, pos);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::invalid_varint);
  CHECK(pos == 0);
  // 12 bytes.
  auto twelve = bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  pos = 0;
  CHECK(codec::get_varint(twelve, pos).error().code == errc::invalid_varint);
  // 10th byte carrying more than bit 63 overflows int64.
  auto overflow = bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02});
  pos = 0;
  CHECK(codec::get_varint(overflow, pos).error().code == errc::invalid_varint);
  // A 10-byte non-canonical encoding of 0 is accepted (Kafka accepts it too).
  auto zero10 = bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00});
  pos = 0;
  auto z = codec::get_varint(zero10, pos);
  REQUIRE(z.ok());
  CHECK(*z == 0);
  CHECK(pos == 10);
  // int32: 6 bytes, or a 5th byte above 0x0f.
  auto six = bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x00});
  pos = 0;
  CHECK(codec::get_varint32(six, pos).error().code == errc::invalid_varint);
  auto big5 = bytes_of({0xff, 0xff, 0xff, 0xff, 0x1f});
  pos = 0;
  CHECK(codec::get_varint32(big5, pos).error().code == errc::invalid_varint);
}

TEST_CASE("truncated varints never read past the end") {
  std::vector<std::byte> out;
  codec::put_varint(out, std::numeric_limits<int64_t>::min());
  for (size_t n = 0; n < out.size(); ++n) {
    std::vector<std::byte> clipped(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
    size_t pos = 0;
    auto r = codec::get_varint(clipped, pos);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::truncated);
    CHECK(pos == 0);
    pos = 0;
    auto r32 = codec::get_varint32(clipped, pos);
    REQUIRE_FALSE(r32.ok());
    CHECK((r32.error().code == errc::truncated || r32.error().code == errc::invalid_varint));
  }
  // pos already at or past the end.
  size_t pos = out.size();
  CHECK(codec::get_varint(out, pos).error().code == errc::truncated);
  pos = out.size() + 5;
  CHECK(codec::get_varint(out, pos).error().code == errc::truncated);
}
