#include <doctest.h>

#include <cstdint>

#include "ringlog/replication/throttle.h"

using namespace ringlog;
using replication::throttle_bucket;

namespace {
constexpr int64_t mib = 1024 * 1024;
}

TEST_CASE("throttle bucket: unbounded by default, nothing held back or counted") {
  throttle_bucket b;
  CHECK(b.unbounded());
  CHECK(b.acquire(0) == 0);
  b.record(100 * mib, 0);
  CHECK(b.acquire(1) == 0);
  CHECK(b.throttled_bytes_total() == 0);
  CHECK(b.throttle_time_ms_total() == 0);
  b.set_rate(constants::replication_throttled_rate_unbounded, 5);   // unchanged: still nothing
  CHECK(b.acquire(6) == 0);
}

TEST_CASE("throttle bucket: starts full with one second of its rate, then a debt is repaid at the rate") {
  throttle_bucket b;
  b.set_rate(1000, 1000);         // 1000 bytes/s: a 1000-byte bucket, 1 byte per ms
  CHECK(b.available_bytes() == doctest::Approx(1000.0));
  CHECK(b.acquire(1000) == 0);
  b.record(600, 1000);
  CHECK(b.acquire(1000) == 0);    // 400 left
  b.record(400, 1000);
  // Exactly empty: a transfer needs more than zero bytes held; 1 ms brings 1 byte.
  CHECK(b.acquire(1000) == 1);
  CHECK(b.acquire(1001) == 0);
  b.record(500, 1001);            // one transfer larger than what is held: a debt of 499 bytes
  CHECK(b.acquire(1001) == 500);  // 499 ms to repay, plus 1 to be above zero
  CHECK(b.acquire(1500) == 1);
  CHECK(b.acquire(1501) == 0);
  CHECK(b.throttled_bytes_total() == 1500);
}

TEST_CASE("throttle bucket: the bytes moved over a span stay within rate x span plus one burst and one transfer") {
  // A follower fetching 1 MiB whenever the bucket lets it, for 20 simulated seconds at 2 MiB/s.
  throttle_bucket b;
  const int64_t rate = 2 * mib, transfer = 1 * mib, start = 0, end = 20'000;
  b.set_rate(rate, start);
  int64_t now = start, moved = 0, refusals = 0;
  while (now < end) {
    const int64_t wait = b.acquire(now);
    if (wait > 0) {
      ++refusals;
      now += wait;
      continue;
    }
    b.record(transfer, now);
    moved += transfer;
    now += 5;   // a round trip
  }
  const int64_t bound = rate * (end - start) / 1000 + rate + transfer;
  CHECK(moved <= bound);
  CHECK(moved >= rate * (end - start) / 1000 - transfer);   // and not much less: the rate is used
  CHECK(refusals > 0);
  // Held back for most of the time, never longer than the span.
  CHECK(b.throttle_time_ms_total() > (end - start) / 2);
  CHECK(b.throttle_time_ms_total() <= end - start + constants::replication_throttle_wait_max_ms);
}

TEST_CASE("throttle bucket: throttle time is the union of the waits, not their sum") {
  throttle_bucket b;
  b.set_rate(1000, 0);            // 1000 bytes/s, a 1000-byte bucket
  b.record(1300, 0);              // 300 bytes of debt: 301 ms to be above zero
  CHECK(b.acquire(0) == 301);
  CHECK(b.acquire(0) == 301);     // a second partition held back over the same span
  CHECK(b.throttle_time_ms_total() == 301);
  CHECK(b.acquire(100) == 201);   // still the same span
  CHECK(b.throttle_time_ms_total() == 301);
  CHECK(b.acquire(301) == 0);
  b.record(500, 301);             // 499 bytes of debt after 1 byte held
  CHECK(b.acquire(301) == 500);
  CHECK(b.throttle_time_ms_total() == 801);
}

TEST_CASE("throttle bucket: waits are capped, rate 0 moves nothing, a changed rate applies at once") {
  throttle_bucket b;
  b.set_rate(0, 0);
  CHECK(b.acquire(0) == constants::replication_throttle_wait_max_ms);
  CHECK(b.acquire(60'000) == constants::replication_throttle_wait_max_ms);   // never refills
  // A big debt at a small rate: one wait is at most the cap (a raised rate is seen within it).
  b.set_rate(10, 61'000);
  b.record(1'000'000, 61'000);
  CHECK(b.acquire(61'000) == constants::replication_throttle_wait_max_ms);
  const int64_t counted = b.throttle_time_ms_total();
  // Raised mid-wait: the rest of the wait handed out under the old rate is not counted.
  b.set_rate(100 * mib, 61'500);
  CHECK(b.throttle_time_ms_total() == counted - 500);
  CHECK(b.acquire(61'520) == 0);   // 100 MiB/s repays a ~1 MB debt within 10 ms
  // Lowered: what is held is cut to the new capacity.
  b.set_rate(1000, 70'000);
  CHECK(b.available_bytes() <= 1000.0);
  // Back to unbounded: nothing is held back.
  b.record(1'000'000, 70'000);
  b.set_rate(constants::replication_throttled_rate_unbounded, 70'000);
  CHECK(b.acquire(70'000) == 0);
}
