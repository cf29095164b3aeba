#include <doctest.h>

#include "ringlog/storage/index.h"

using namespace ringlog;
using namespace ringlog::storage;

TEST_CASE("offset index entries round-trip in Kafka's 8-byte layout") {
  std::vector<std::byte> file(16);
  encode_offset_index_entry({5, 4100}, std::span<std::byte, 8>(file.data(), 8));
  encode_offset_index_entry({9, 8300}, std::span<std::byte, 8>(file.data() + 8, 8));
  CHECK(file[3] == std::byte{5});  // big-endian
  auto entries = decode_offset_index(file);
  REQUIRE(entries.size() == 2);
  CHECK(entries[1] == offset_index_entry{9, 8300});
  file.push_back(std::byte{1});  // a torn trailing entry is ignored
  CHECK(decode_offset_index(file).size() == 2);
}

TEST_CASE("time index entries round-trip in Kafka's 12-byte layout") {
  std::vector<std::byte> file(12);
  encode_time_index_entry({1'700'000'000'123, 42}, std::span<std::byte, 12>(file.data(), 12));
  auto entries = decode_time_index(file);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0] == time_index_entry{1'700'000'000'123, 42});
}

TEST_CASE("floor lookups") {
  std::vector<offset_index_entry> offsets{{10, 100}, {20, 200}, {30, 300}};
  CHECK(!floor_offset(offsets, 9));
  CHECK(floor_offset(offsets, 10)->file_position == 100);
  CHECK(floor_offset(offsets, 29)->file_position == 200);
  CHECK(floor_offset(offsets, 1000)->file_position == 300);
  std::vector<time_index_entry> times{{100, 1}, {200, 5}, {300, 9}};
  CHECK(!last_before_timestamp(times, 100));
  CHECK(last_before_timestamp(times, 101)->relative_offset == 1);
  CHECK(last_before_timestamp(times, 300)->relative_offset == 5);
  CHECK(last_before_timestamp(times, 301)->relative_offset == 9);
}
