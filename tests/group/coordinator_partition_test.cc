#include <doctest.h>

#include "ringlog/group/coordinator_partition.h"

using namespace ringlog::group;

TEST_CASE("java String.hashCode over UTF-16 code units") {
  CHECK(java_string_hash_code("") == 0);
  CHECK(java_string_hash_code("hello") == 99162322);
  CHECK(java_string_hash_code("\xC3\xA9") == 233);                      // U+00E9, one UTF-16 unit
  CHECK(java_string_hash_code("\xF0\x9F\x98\x80") == 31 * 0xD83D + 0xDE00);  // U+1F600, surrogate pair
  CHECK(java_string_hash_code("polygenelubricants") == INT32_MIN);     // the famous MIN_VALUE hash
}

TEST_CASE("coordinator partition follows Kafka's Utils.abs(hashCode) % partitions") {
  // Utils.abs(MIN_VALUE) is 0 (h & 0x7fffffff), not MIN_VALUE: must not go negative.
  CHECK(coordinator_partition_for("polygenelubricants", 50) == 0);
  CHECK(coordinator_partition_for("hello", 50) == 99162322 % 50);
  // A negative hash: abs via masking, not negation.
  const int32_t h = java_string_hash_code("my-consumer-group-with-a-long-name");
  const int32_t expect = static_cast<int32_t>((static_cast<uint32_t>(h) & 0x7fffffffU) % 50U);
  CHECK(coordinator_partition_for("my-consumer-group-with-a-long-name", 50) == expect);
  for (int32_t n : {1, 7, 50}) {
    const int32_t p = coordinator_partition_for("g", n);
    CHECK(p >= 0);
    CHECK(p < n);
  }
}
