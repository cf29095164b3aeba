// Kafka's murmur2 partitioner. Expected hashes are Kafka's own (UtilsTest.testMurmur2); the
// integration suite also compares 10,000 keys with kafka-python's murmur2 (tests/integration).
#include <doctest.h>

#include <string_view>

#include "ringlog/broker/partitioner.h"

using ringlog::broker::murmur2;
using ringlog::broker::partition_for_key;

namespace {
std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
}  // namespace

TEST_CASE("murmur2 matches Kafka's Utils.murmur2") {
  CHECK(murmur2(as_bytes("21")) == -973932308);
  CHECK(murmur2(as_bytes("foobar")) == -790332482);
  CHECK(murmur2(as_bytes("a-little-bit-long-string")) == -985981536);
  CHECK(murmur2(as_bytes("a-little-bit-longer-string")) == -1486304829);
  CHECK(murmur2(as_bytes("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8")) == -58897971);
  CHECK(murmur2(as_bytes("abc")) == 479470107);
}

TEST_CASE("partition_for_key is in range and stable") {
  for (int32_t n : {1, 2, 3, 7, 100}) {
    int32_t p = partition_for_key(as_bytes("some-key"), n);
    CHECK(p >= 0);
    CHECK(p < n);
    CHECK(p == partition_for_key(as_bytes("some-key"), n));
  }
  CHECK(partition_for_key(as_bytes(""), 1) == 0);
}
