#include "ringlog/base/cpu_accounting.h"

#include <atomic>
#include <ctime>

#include "per_thread_slots.h"

namespace ringlog::base {

namespace {

struct counters {
  std::atomic<uint64_t> cpu_ns{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> scopes{0};
};

using activity_counters = std::array<counters, cpu_activity_count>;

per_thread_slots<activity_counters> slots;

counters& own(cpu_activity activity) { return slots.own()[static_cast<size_t>(activity)]; }

/// The innermost open scope of this thread (nullptr: none).
thread_local cpu_scope* innermost = nullptr;

}  // namespace

std::string_view cpu_activity_label(cpu_activity activity) {
  switch (activity) {
    case cpu_activity::produce: return "produce";
    case cpu_activity::replicate_leader: return "replicate_leader";
    case cpu_activity::replicate_follower: return "replicate_follower";
    case cpu_activity::fetch: return "fetch";
  }
  return "unknown";
}

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void count_activity_bytes(cpu_activity activity, uint64_t bytes) {
  own(activity).bytes.fetch_add(bytes, std::memory_order_relaxed);
}

cpu_activity_snapshot read_cpu_activity(cpu_activity activity) {
  cpu_activity_snapshot out;
  slots.for_each([&out, activity](const activity_counters& s) {
    const counters& c = s[static_cast<size_t>(activity)];
    out.cpu_ns += c.cpu_ns.load(std::memory_order_relaxed);
    out.bytes += c.bytes.load(std::memory_order_relaxed);
    out.scopes += c.scopes.load(std::memory_order_relaxed);
  });
  return out;
}

cpu_scope::cpu_scope(std::optional<cpu_activity> activity) : activity_(activity) {
  if (!activity_) return;
  started_ns_ = thread_cpu_ns();
  enclosing_ = innermost;
  innermost = this;
}

cpu_scope::~cpu_scope() {
  if (!activity_) return;
  const int64_t elapsed_ns = thread_cpu_ns() - started_ns_;
  innermost = enclosing_;
  if (enclosing_ != nullptr) enclosing_->nested_ns_ += elapsed_ns;
  const int64_t own_ns = elapsed_ns - nested_ns_;
  counters& c = own(*activity_);
  c.cpu_ns.fetch_add(own_ns > 0 ? static_cast<uint64_t>(own_ns) : 0, std::memory_order_relaxed);
  c.scopes.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ringlog::base
