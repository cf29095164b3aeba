#pragma once
// How work runs on shards (design.md section 2: thread per core, no locks on the data path).
// The runtime module provides the implementation (shard_threads: one Asio io_context per shard
// thread); the broker, the controller and the cluster transport post tasks and timers to shards
// by number. Tests provide deterministic ones (tests/broker/test_runtime.h).

#include <cstddef>
#include <cstdint>
#include <functional>

#include "ringlog/io/disk_executor.h"

namespace ringlog::runtime {

class shard_runtime {
 public:
  using task = std::function<void()>;
  virtual ~shard_runtime() = default;
  [[nodiscard]] virtual size_t shard_count() const = 0;
  /// The shard the calling thread runs, or shard_count() when called from outside any shard.
  [[nodiscard]] virtual size_t current_shard() const = 0;
  /// Runs `t` on shard `shard`'s thread, in FIFO order per (sender, shard). Never refuses:
  /// continuations of work already admitted (replies, completions) must not be dropped. The
  /// queue is bounded at admission instead: new client work is posted only when admits().
  virtual void post(size_t shard, task t) = 0;
  /// Admission of new work: whether shard `shard` holds fewer than cross_shard_queue_tasks_max
  /// queued tasks (constants.h), so a new client call may be posted to it. When not, the caller
  /// answers its client "retry later" (Kafka's THROTTLING_QUOTA_EXCEEDED, HTTP 429) without
  /// queueing anything. Approximate under concurrency (a few callers may pass at once), which a
  /// bound of this size absorbs. Default: always (runtimes without a queue of their own).
  [[nodiscard]] virtual bool admits(size_t shard) const {
    (void)shard;
    return true;
  }
  /// Runs `t` on shard `shard` after `delay_ms` milliseconds.
  virtual void post_after(size_t shard, int64_t delay_ms, task t) = 0;
  /// The disk executor owned by shard `shard` (its io_uring); use it only on that shard's thread.
  /// The runtime calls its poll() whenever its event_fd() is readable, and after every task
  /// when event_fd() is -1 and in_flight() > 0.
  virtual io::disk_executor& disk(size_t shard) = 0;
};

}  // namespace ringlog::runtime
