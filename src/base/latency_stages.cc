#include "ringlog/base/latency_stages.h"

#include <atomic>
#include <chrono>

namespace ringlog::base {

namespace {

/// Threads that get a slot of their own; more share slots (still correct: the counters are
/// atomic, only their cache lines are then shared). Shards are one per core, plus a few helpers.
constexpr size_t latency_slots_max = 32;

struct histogram {
  std::array<std::atomic<uint64_t>, latency_stage_bounds_s.size() + 1> counts{};
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> sum_ns{0};
};

struct alignas(64) slot {
  std::array<histogram, latency_stage_count> stages;
};

std::array<slot, latency_slots_max> slots;
std::atomic<size_t> next_slot{0};

slot& own_slot() {
  thread_local slot* mine = &slots[next_slot.fetch_add(1, std::memory_order_relaxed) % latency_slots_max];
  return *mine;
}

}  // namespace

std::string_view latency_stage_label(latency_stage stage) {
  switch (stage) {
    case latency_stage::produce_queue: return "queue";
    case latency_stage::produce_append: return "append";
    case latency_stage::produce_fsync_wait: return "fsync_wait";
    case latency_stage::produce_fsync: return "fsync";
    case latency_stage::produce_replication_wait: return "replication_wait";
    case latency_stage::produce_total: return "total";
    case latency_stage::produce_sent: return "sent";
    case latency_stage::fetch_wakeup: return "wakeup";
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
  histogram& h = own_slot().stages[static_cast<size_t>(stage)];
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
  for (const slot& s : slots) {
    const histogram& h = s.stages[static_cast<size_t>(stage)];
    for (size_t i = 0; i < h.counts.size(); ++i) out.counts[i] += h.counts[i].load(std::memory_order_relaxed);
    out.count += h.count.load(std::memory_order_relaxed);
    sum_ns += h.sum_ns.load(std::memory_order_relaxed);
  }
  out.sum_s = static_cast<double>(sum_ns) / 1e9;
  return out;
}

}  // namespace ringlog::base
