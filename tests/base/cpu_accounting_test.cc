#include "ringlog/base/cpu_accounting.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

namespace ringlog::base {

namespace {

/// Burns at least `ns` of this thread's CPU time.
void spin_cpu_ns(int64_t ns) {
  const int64_t until = thread_cpu_ns() + ns;
  volatile uint64_t sink = 0;
  while (thread_cpu_ns() < until) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

}  // namespace

TEST_CASE("cpu scope: counts this thread's CPU time, not the wall time it slept") {
  const cpu_activity_snapshot before = read_cpu_activity(cpu_activity::produce);
  {
    cpu_scope scope(cpu_activity::produce);
    spin_cpu_ns(20'000'000);                                      // 20 ms of CPU
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // 100 ms asleep: no CPU
  }
  const cpu_activity_snapshot after = read_cpu_activity(cpu_activity::produce);
  CHECK(after.scopes == before.scopes + 1);
  const uint64_t counted_ns = after.cpu_ns - before.cpu_ns;
  CHECK(counted_ns >= 20'000'000);
  CHECK(counted_ns < 60'000'000);   // the sleep did not count (it would be >= 100 ms)
}

TEST_CASE("cpu scope: a nested scope's time goes to its own activity only") {
  const cpu_activity_snapshot outer_before = read_cpu_activity(cpu_activity::replicate_leader);
  const cpu_activity_snapshot inner_before = read_cpu_activity(cpu_activity::replicate_follower);
  const int64_t started_ns = thread_cpu_ns();
  {
    cpu_scope outer(cpu_activity::replicate_leader);
    spin_cpu_ns(10'000'000);
    {
      cpu_scope inner(cpu_activity::replicate_follower);
      spin_cpu_ns(30'000'000);
    }
  }
  const int64_t total_ns = thread_cpu_ns() - started_ns;
  const uint64_t outer_ns = read_cpu_activity(cpu_activity::replicate_leader).cpu_ns - outer_before.cpu_ns;
  const uint64_t inner_ns = read_cpu_activity(cpu_activity::replicate_follower).cpu_ns - inner_before.cpu_ns;
  CHECK(inner_ns >= 30'000'000);
  CHECK(outer_ns >= 10'000'000);
  CHECK(outer_ns < 30'000'000);   // the inner 30 ms were taken out of the outer scope
  CHECK(outer_ns + inner_ns <= static_cast<uint64_t>(total_ns));   // no nanosecond twice
}

TEST_CASE("cpu accounting: bytes and time from every thread are summed on read") {
  const cpu_activity_snapshot before = read_cpu_activity(cpu_activity::fetch);
  count_activity_bytes(cpu_activity::fetch, 1000);
  std::thread other([] {
    cpu_scope scope(cpu_activity::fetch);
    spin_cpu_ns(5'000'000);
    count_activity_bytes(cpu_activity::fetch, 24);
  });
  other.join();
  const cpu_activity_snapshot after = read_cpu_activity(cpu_activity::fetch);
  CHECK(after.bytes == before.bytes + 1024);
  CHECK(after.scopes == before.scopes + 1);
  CHECK(after.cpu_ns - before.cpu_ns >= 5'000'000);
  CHECK(read_cpu_activity(cpu_activity::produce).bytes == 0);   // other activities untouched
  CHECK(cpu_activity_label(cpu_activity::replicate_follower) == "replicate_follower");
}

}  // namespace ringlog::base
