#pragma once
// The broker-wide budget of sealed segments' open files. A sealed (rolled) segment keeps one
// file open, its .log (reads and zero-copy fetches use it; release_write_files closed its
// .index, .timeindex and O_DIRECT handle); the active segment of each partition keeps three or
// four (.log, O_DIRECT .log, .index, .timeindex) and is covered by the partition's own share of
// the open-file limit (broker.partitions.max, 8 files each). Without a bound, a topic with
// segment.ms=1 rolled a segment per batch until the process met its open-file limit (EMFILE)
// and halted, and then halted again while loading (breaker of session 31).
//
// Every partition log of the broker charges its sealed segments here (partition_log::
// charge_segments_to). A roll that would pass the limit is not made: a roll for age
// (segment.ms) is skipped, the active segment keeps growing; a roll the log needs (segment.bytes,
// a full offset index) refuses the append with too_many_segments, retriable, and nothing stored
// is lost. Retention, deletion and compaction give room back. Segments found on disk at start-up
// are charged even past the limit: the broker starts and rolls nothing until room returns.
//
// Thread-safe: the shards share one budget.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace ringlog::storage {

class segment_file_budget {
 public:
  /// `warn` gets the refusal line (at most one per `warn_interval_ms`); may be empty.
  explicit segment_file_budget(int64_t limit, std::function<void(const std::string&)> warn = {},
                               int64_t warn_interval_ms = 60'000)
      : limit_(limit), warn_(std::move(warn)), warn_interval_ms_(warn_interval_ms) {}
  segment_file_budget(const segment_file_budget&) = delete;
  segment_file_budget& operator=(const segment_file_budget&) = delete;

  /// Takes one file if the limit allows it.
  bool try_acquire() {
    int64_t used = used_.load(std::memory_order_relaxed);
    while (used < limit_) {
      if (used_.compare_exchange_weak(used, used + 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }
  /// Takes `n` files whatever the limit (segments already on disk at start-up).
  void force_acquire(int64_t n) { used_.fetch_add(n, std::memory_order_acq_rel); }
  void release(int64_t n) { used_.fetch_sub(n, std::memory_order_acq_rel); }

  /// A roll was not made (try_acquire failed): counts it and, at most once per interval
  /// broker-wide, hands `what` (names the partition) to the warn function. True when warned.
  bool refused(const std::string& what, int64_t now_ms) {
    refusals_.fetch_add(1, std::memory_order_relaxed);
    int64_t last = last_warn_ms_.load(std::memory_order_relaxed);
    if (last >= 0 && now_ms - last < warn_interval_ms_) return false;
    if (!last_warn_ms_.compare_exchange_strong(last, now_ms, std::memory_order_acq_rel)) return false;
    if (warn_) warn_(what);
    return true;
  }

  [[nodiscard]] int64_t limit() const { return limit_; }
  [[nodiscard]] int64_t used() const { return used_.load(std::memory_order_acquire); }
  [[nodiscard]] uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

 private:
  const int64_t limit_;
  const std::function<void(const std::string&)> warn_;
  const int64_t warn_interval_ms_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> last_warn_ms_{-1};
  std::atomic<uint64_t> refusals_{0};
};

}  // namespace ringlog::storage
