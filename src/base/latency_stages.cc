#include "ringlog/base/latency_stages.h"

#include <atomic>
#include <chrono>

#include "per_thread_slots.h"

namespace ringlog::base {

namespace {

struct histogram {
  std::array<std::atomic<uint64_t>, latency_stage_bounds_s.size() + 1> counts{};
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> sum_ns{0};
};

using stage_histograms = std::array<histogram, latency_stage_count>;

per_thread_slots<stage_histograms> slots;

}  // namespace

std::string_view latency_stage_label(latency_stage stage) {
  switch (stage) {
    case latency_stage::produce_queue: return "queue";
    case latency_stage::produce_append: return "append";
    case latency_stage::produce_fsync_wait: return "fsync_wait";
    case latency_stage::produce_fsync: return "fsync";
    case latency_stage::produce_replication_wait: return "replication_wait";
    case latency_stage::produce_total: return "total";
    case latency_stage::produce_order_wait: return "order_wait";
    case latency_stage::produce_sent: return "sent";
    case latency_stage::fetch_wakeup: return "wakeup";
    case latency_stage::kafka_read_paused: return "read_paused";
    case latency_stage::shard_loop_lag: return "loop_lag";
  }
  return "unknown";
}

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void observe_latency(latency_stage stage, int64_t elapsed_ns) {
  const uint64_t ns = elapsed_ns > 0 ? static_cast<uint64_t>(elapsed_ns) : 0;
  const double seconds = static_cast<double>(ns) / 1e9;
  size_t bucket = 0;
  while (bucket < latency_stage_bounds_s.size() && seconds > latency_stage_bounds_s[bucket]) ++bucket;
  histogram& h = slots.own()[static_cast<size_t>(stage)];
  h.counts[bucket].fetch_add(1, std::memory_order_relaxed);
  h.count.fetch_add(1, std::memory_order_relaxed);
  h.sum_ns.fetch_add(ns, std::memory_order_relaxed);
}

void observe_latency_since(latency_stage stage, int64_t since_ns) {
  if (since_ns != 0) observe_latency(stage, monotonic_ns() - since_ns);
}

latency_stage_snapshot read_latency(latency_stage stage) {
  latency_stage_snapshot out;
  uint64_t sum_ns = 0;
  slots.for_each([&out, &sum_ns, stage](const stage_histograms& s) {
    const histogram& h = s[static_cast<size_t>(stage)];
    for (size_t i = 0; i < h.counts.size(); ++i) out.counts[i] += h.counts[i].load(std::memory_order_relaxed);
    out.count += h.count.load(std::memory_order_relaxed);
    sum_ns += h.sum_ns.load(std::memory_order_relaxed);
  });
  out.sum_s = static_cast<double>(sum_ns) / 1e9;
  return out;
}

}  // namespace ringlog::base
