#include "ringlog/base/latency_stages.h"

#include <doctest/doctest.h>

#include <thread>

namespace ringlog::base {

TEST_CASE("latency stages: samples land in their bucket, from every thread, summed on read") {
  const latency_stage_snapshot before = read_latency(latency_stage::produce_fsync_wait);
  observe_latency(latency_stage::produce_fsync_wait, 30'000);        // 30 us: the (25 us, 50 us] bucket
  std::thread other([] { observe_latency(latency_stage::produce_fsync_wait, 2'000'000'000); });   // 2 s: +Inf
  other.join();
  observe_latency(latency_stage::produce_fsync_wait, -5);            // a clock step back counts as 0
  const latency_stage_snapshot after = read_latency(latency_stage::produce_fsync_wait);
  CHECK(after.count == before.count + 3);
  CHECK(after.counts[0] == before.counts[0] + 1);     // <= 10 us
  CHECK(after.counts[2] == before.counts[2] + 1);     // (25 us, 50 us]
  CHECK(after.counts.back() == before.counts.back() + 1);
  CHECK(after.sum_s - before.sum_s == doctest::Approx(2.00003));
  // Other stages are untouched.
  CHECK(read_latency(latency_stage::fetch_wakeup).count == 0);
}

TEST_CASE("latency stages: an unstamped start observes nothing") {
  const uint64_t before = read_latency(latency_stage::produce_queue).count;
  observe_latency_since(latency_stage::produce_queue, 0);
  CHECK(read_latency(latency_stage::produce_queue).count == before);
  observe_latency_since(latency_stage::produce_queue, monotonic_ns());
  CHECK(read_latency(latency_stage::produce_queue).count == before + 1);
  CHECK(latency_stage_label(latency_stage::produce_replication_wait) == "replication_wait");
  CHECK(latency_stage_label(latency_stage::kafka_read_paused) == "read_paused");
  CHECK(latency_stage_label(latency_stage::shard_loop_lag) == "loop_lag");
}

}  // namespace ringlog::base
