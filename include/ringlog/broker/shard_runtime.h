#pragma once
// How the broker runs work on shards (design.md section 2: thread per core, no locks on the
// data path). The app provides the implementation (one Asio io_context per shard thread); the
// broker only posts tasks and timers to shards by number.

#include <cstddef>
#include <cstdint>
#include <functional>

#include "ringlog/io/disk_executor.h"

namespace ringlog::broker {

class shard_runtime {
 public:
  using task = std::function<void()>;
  virtual ~shard_runtime() = default;
  [[nodiscard]] virtual size_t shard_count() const = 0;
  /// The shard the calling thread runs, or shard_count() when called from outside any shard.
  [[nodiscard]] virtual size_t current_shard() const = 0;
  /// Runs `t` on shard `shard`'s thread, in FIFO order per (sender, shard).
  virtual void post(size_t shard, task t) = 0;
  /// Runs `t` on shard `shard` after `delay_ms` milliseconds.
  virtual void post_after(size_t shard, int64_t delay_ms, task t) = 0;
  /// The disk executor owned by shard `shard` (its io_uring); use it only on that shard's thread.
  /// The runtime calls its poll() whenever its event_fd() is readable, and after every task
  /// when event_fd() is -1 and in_flight() > 0.
  virtual io::disk_executor& disk(size_t shard) = 0;
};

}  // namespace ringlog::broker
