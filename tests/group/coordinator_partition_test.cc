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
  // Utils.abs(MIN_VALUE) is 0, not MIN_VALUE: must not go negative.
  CHECK(coordinator_partition_for("polygenelubricants", 50) == 0);
  CHECK(coordinator_partition_for("hello", 50) == 99162322 % 50);
  // A negative hash: Math.abs (negation), not masking with 0x7fffffff (Utils.toPositive), which
  // would put these groups on other partitions than Kafka's coordinators use.
  CHECK(java_string_hash_code("eos-grp-2") == -1615207546);
  CHECK(coordinator_partition_for("eos-grp-2", 50) == 46);    // masking: 2
  CHECK(coordinator_partition_for("eos-grp-2", 10) == 6);     // masking: 2
  CHECK(java_string_hash_code("neg-id-1001") == -1526723947);
  CHECK(coordinator_partition_for("neg-id-1001", 8) == 3);    // masking: 5
  for (int32_t n : {1, 7, 50}) {
    const int32_t p = coordinator_partition_for("g", n);
    CHECK(p >= 0);
    CHECK(p < n);
  }
}
