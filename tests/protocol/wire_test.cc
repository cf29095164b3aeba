// Primitive types (protocol guide, "Protocol Primitive Types"): values, boundaries, and every
// way a length can lie.
#include <doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_bytes.h"
#include "ringlog/protocol/wire.h"

using namespace ringlog;
using namespace ringlog::protocol;

namespace {

using test::bytes_of;

}  // namespace

TEST_CASE("fixed-width integers are big-endian and round-trip at their limits") {
  writer w;
  w.write_int8(-1);
  w.write_int16(std::numeric_limits<int16_t>::min());
  w.write_uint16(0xfffe);
  w.write_int32(0x01020304);
  w.write_uint32(0xfffffffe);
  w.write_int64(std::numeric_limits<int64_t>::min());
  w.write_float64(-2.5);
  w.write_bool(true);
  CHECK(bytes(w.buffer().begin(), w.buffer().begin() + 9) == bytes_of({0xff, 0x80, 0x00, 0xff, 0xfe, 1, 2, 3, 4}));
  reader r(w.buffer());
  CHECK(*r.read_int8() == -1);
  CHECK(*r.read_int16() == std::numeric_limits<int16_t>::min());
  CHECK(*r.read_uint16() == 0xfffe);
  CHECK(*r.read_int32() == 0x01020304);
  CHECK(*r.read_uint32() == 0xfffffffeu);
  CHECK(*r.read_int64() == std::numeric_limits<int64_t>::min());
  CHECK(*r.read_float64() == -2.5);
  CHECK(*r.read_bool());
  CHECK(r.remaining() == 0);
  auto e = r.read_int32();
  CHECK(e.error().code == errc::truncated);
  CHECK(e.error().message == "truncated at byte 34 of 30");
}

TEST_CASE("varints: unsigned, zig-zag 32 and 64 bit, and their overlong forms") {
  writer w;
  w.write_unsigned_varint(300);
  CHECK(w.buffer() == bytes_of({0xac, 0x02}));
  for (int32_t v : {0, -1, 1, 63, -64, 64, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}) {
    writer x;
    x.write_varint(v);
    reader r(x.buffer());
    CHECK(*r.read_varint() == v);
    CHECK(r.remaining() == 0);
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    writer x;
    x.write_varlong(v);
    reader r(x.buffer());
    CHECK(*r.read_varlong() == v);
  }
  writer m;
  m.write_unsigned_varint(0xffffffff);
  CHECK(m.buffer() == bytes_of({0xff, 0xff, 0xff, 0xff, 0x0f}));
  const bytes six = bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  reader r6(six);
  CHECK(r6.read_unsigned_varint().error().code == errc::invalid_varint);
  const bytes unterminated = bytes_of({0x80, 0x80});
  reader ru(unterminated);
  CHECK(ru.read_unsigned_varint().error().code == errc::truncated);
  const bytes eleven = bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  reader r11(eleven);
  CHECK(r11.read_varlong().error().code == errc::invalid_varint);
}

TEST_CASE("strings: classic and compact, null only where nullable, lengths checked") {
  writer w;
  REQUIRE(w.write_string("ab", false).ok());
  REQUIRE(w.write_string("ab", true).ok());
  REQUIRE(w.write_nullable_string(std::nullopt, false).ok());
  REQUIRE(w.write_nullable_string(std::nullopt, true).ok());
  CHECK(w.buffer() == bytes_of({0, 2, 'a', 'b', 3, 'a', 'b', 0xff, 0xff, 0}));
  reader r(w.buffer());
  CHECK(*r.read_string(false) == "ab");
  CHECK(*r.read_string(true) == "ab");
  CHECK(!r.read_nullable_string(false)->has_value());
  CHECK(!r.read_nullable_string(true)->has_value());

  const bytes null_classic = bytes_of({0xff, 0xff});
  reader rn(null_classic);
  CHECK(rn.read_string(false).error().code == errc::null_value);
  const bytes minus_two = bytes_of({0xff, 0xfe});
  reader rm(minus_two);
  CHECK(rm.read_nullable_string(false).error().code == errc::invalid_length);
  const bytes too_long = bytes_of({0x00, 0x05, 'a', 'b'});
  reader rl(too_long);
  auto e = rl.read_string(false);
  CHECK(e.error().code == errc::invalid_length);
  CHECK(e.error().message == "length 5 at byte 0 exceeds the 2 bytes left");
  writer big;
  CHECK(big.write_string(std::string(40000, 'x'), false).error().code == errc::invalid_length);
  CHECK(big.write_string(std::string(40000, 'x'), true).ok());
}

TEST_CASE("bytes and arrays: nulls, and a forged count never allocates past the frame") {
  writer w;
  REQUIRE(w.write_bytes(bytes_of({1, 2, 3}), false).ok());
  REQUIRE(w.write_nullable_bytes(std::nullopt, true).ok());
  CHECK(w.buffer() == bytes_of({0, 0, 0, 3, 1, 2, 3, 0}));
  reader r(w.buffer());
  CHECK(*r.read_bytes(false) == bytes_of({1, 2, 3}));
  CHECK(!r.read_nullable_bytes(true)->has_value());

  // 2^31 - 1 int32 elements claimed with 8 bytes left: refused before any allocation.
  const bytes huge = bytes_of({0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 2});
  reader rh(huge);
  CHECK(rh.read_array_length(false, false, 4).error().code == errc::invalid_length);
  reader rh2(huge);
  CHECK(rh2.read_array_length(false, false, 1).error().code == errc::invalid_length);
  // Two int32 elements fit in 8 bytes; three do not.
  const bytes two = bytes_of({0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2});
  reader r2(two);
  CHECK(*r2.read_array_length(false, false, 4) == 2);
  const bytes three = bytes_of({0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2});
  reader r3(three);
  CHECK(r3.read_array_length(false, false, 4).error().code == errc::invalid_length);
  const bytes null_array = bytes_of({0xff, 0xff, 0xff, 0xff});
  reader rn(null_array);
  CHECK(*rn.read_array_length(false, true, 4) == -1);
  reader rn2(null_array);
  CHECK(rn2.read_array_length(false, false, 4).error().code == errc::null_value);
  const bytes compact_null = bytes_of({0x00});
  reader rc(compact_null);
  CHECK(*rc.read_array_length(true, true, 1) == -1);
  // Tagged field count: each field takes at least 2 bytes.
  const bytes tags = bytes_of({0x02, 0x00, 0x00, 0x01});
  reader rt(tags);
  CHECK(rt.read_tagged_field_count().error().code == errc::invalid_length);
}

TEST_CASE("uuid is 16 raw bytes and sub readers keep frame positions") {
  uuid u;
  for (size_t i = 0; i < 16; ++i) {
    u.value[i] = static_cast<uint8_t>(i);
  }
  writer w;
  w.write_int8(9);
  w.write_uuid(u);
  reader r(w.buffer());
  REQUIRE(r.read_int8().ok());
  auto sub = r.sub_reader(4);
  REQUIRE(sub.ok());
  CHECK(sub->position() == 1);
  REQUIRE(sub->read_int32().ok());
  auto e = sub->read_int8();
  CHECK(e.error().message == "truncated at byte 6 of 5");
  CHECK(r.position() == 5);
  CHECK(r.sub_reader(13).error().code == errc::invalid_length);
  reader r2(w.buffer());
  REQUIRE(r2.read_int8().ok());
  CHECK(*r2.read_uuid() == u);
  CHECK(uuid{}.is_zero());
}
