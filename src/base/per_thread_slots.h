#pragma once
// Lock-free counters kept per thread (issues 32 and 33: latency_stages.cc, cpu_accounting.cc):
// each thread adds to its own slot - a T on a cache line no other thread writes, updated with
// relaxed atomics - and a reader (a /metrics scrape) sums every slot. A scrape may see an update
// half-done; nothing is ever lost.

#include <array>
#include <atomic>
#include <cstddef>

namespace ringlog::base {

/// `slots_max` slots of T (T holds atomics and is zero-initialised). Threads beyond slots_max
/// share slots (still correct: the counters are atomic, only their cache lines are then shared);
/// 32 covers one shard per core plus a few helper threads on the machines we run on.
/// One object per T in a program: a thread's slot is remembered per T (a thread_local of own()).
template <typename T>
class per_thread_slots {
 public:
  static constexpr size_t slots_max = 32;

  /// This thread's slot (chosen on its first call, round robin).
  T& own() {
    thread_local T* mine = &slots_[next_slot_.fetch_add(1, std::memory_order_relaxed) % slots_max].value;
    return *mine;
  }

  /// Calls `f(const T&)` for every slot, in order.
  template <typename F>
  void for_each(F&& f) const {
    for (const slot& s : slots_) f(s.value);
  }

 private:
  struct alignas(64) slot {
    T value;
  };
  std::array<slot, slots_max> slots_{};
  std::atomic<size_t> next_slot_{0};
};

}  // namespace ringlog::base
