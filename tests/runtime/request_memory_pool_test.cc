// request_memory_pool (queued.max.request.bytes): frames that fit are reserved at once, the
// others wait and are granted as room is given back (every one that fits, oldest first), a
// cancelled waiter never runs, a frame larger than the pool can never fit.

#include "ringlog/runtime/request_memory_pool.h"

#include <doctest/doctest.h>

#include <vector>

namespace ringlog::runtime {
namespace {

using outcome = request_memory_pool::reserve_outcome;

TEST_CASE("frames that fit are reserved; the next waits until room is given back") {
  request_memory_pool pool(100);
  std::vector<int> granted;
  CHECK(pool.reserve(60, [&] { granted.push_back(0); }).outcome == outcome::reserved);
  auto second = pool.reserve(50, [&] { granted.push_back(1); });
  CHECK(second.outcome == outcome::queued);
  CHECK(pool.reserved_bytes() == 60);
  CHECK(pool.waiters() == 1);
  pool.release(60);
  CHECK(granted == std::vector<int>{1});
  CHECK(pool.reserved_bytes() == 50);
  CHECK(pool.waiters() == 0);
  CHECK_FALSE(pool.cancel(second.ticket));   // granted already: its owner holds the bytes
  pool.release(50);
  CHECK(pool.reserved_bytes() == 0);
}

TEST_CASE("room goes to every waiter that fits, oldest first: a small frame is not held behind a large one") {
  request_memory_pool pool(100);
  std::vector<int> granted;
  REQUIRE(pool.reserve(70, [] {}).outcome == outcome::reserved);
  REQUIRE(pool.reserve(90, [&] { granted.push_back(1); }).outcome == outcome::queued);
  // 20 bytes fit beside the 70 although the 90-byte frame waits (a heartbeat behind a produce).
  CHECK(pool.reserve(20, [&] { granted.push_back(2); }).outcome == outcome::reserved);
  REQUIRE(pool.reserve(40, [&] { granted.push_back(3); }).outcome == outcome::queued);
  REQUIRE(pool.reserve(10, [&] { granted.push_back(4); }).outcome == outcome::reserved);
  pool.release(70);   // 10 + 20 reserved: 90 does not fit yet, 40 does
  CHECK(granted == std::vector<int>{3});
  pool.release(40);
  pool.release(20);   // 10 reserved: the 90-byte frame fits now
  CHECK(granted == std::vector<int>{3, 1});
  CHECK(pool.reserved_bytes() == 100);
  CHECK(pool.waiters() == 0);
}

TEST_CASE("a cancelled waiter never runs") {
  request_memory_pool pool(100);
  std::vector<int> granted;
  REQUIRE(pool.reserve(50, [] {}).outcome == outcome::reserved);
  auto large = pool.reserve(80, [&] { granted.push_back(1); });
  REQUIRE(large.outcome == outcome::queued);
  CHECK(pool.cancel(large.ticket));     // its connection closed while it waited
  CHECK_FALSE(pool.cancel(large.ticket));
  pool.release(50);
  CHECK(granted.empty());
  CHECK(pool.reserved_bytes() == 0);
  CHECK(pool.waiters() == 0);
}

TEST_CASE("a frame larger than the pool can never fit and takes nothing") {
  request_memory_pool pool(100);
  CHECK(pool.reserve(101, [] { FAIL("never granted"); }).outcome == outcome::too_large);
  CHECK(pool.reserve(100, [] {}).outcome == outcome::reserved);
  CHECK(pool.waiters() == 0);
  pool.release(100);
}

}  // namespace
}  // namespace ringlog::runtime
