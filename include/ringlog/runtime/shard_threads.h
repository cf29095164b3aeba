#pragma once
// The shard runtime (design.md section 2): one thread per shard, each running one Asio
// io_context that also drives that shard's disk executor. Asio stays behind this header (pimpl),
// so the app can own a runtime without compiling Asio; modules that own sockets and timers on a
// shard (gateway, the cluster transport) reach the io_context through asio_context.h.

#include <cstddef>
#include <memory>

#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/io/disk_executor.h"

namespace ringlog::runtime {

class shard_threads final : public shard_runtime {
 public:
  /// Builds `shard_count` shards (>= 1), each with a disk executor of `kind`
  /// (io::make_disk_executor). `note` receives the executor's fallback reason, if any.
  /// Threads start only in start().
  static io::result<std::unique_ptr<shard_threads>> create(size_t shard_count, io::backend_kind kind,
                                                           std::string* note);
  ~shard_threads() override;
  shard_threads(const shard_threads&) = delete;
  shard_threads& operator=(const shard_threads&) = delete;

  /// Starts one thread per shard. Tasks posted before start() run once it is called.
  void start();
  /// Lets every queued task run, stops the loops and joins the threads. Idempotent.
  void stop();

  [[nodiscard]] size_t shard_count() const override;
  [[nodiscard]] size_t current_shard() const override;
  void post(size_t shard, task t) override;
  [[nodiscard]] bool admits(size_t shard) const override;
  /// Tasks posted to `shard` and not yet run (timers not counted).
  [[nodiscard]] size_t queued_tasks(size_t shard) const;
  void post_after(size_t shard, int64_t delay_ms, task t) override;
  io::disk_executor& disk(size_t shard) override;
  /// Name of the disk backend in use ("uring" or "posix").
  [[nodiscard]] std::string_view disk_backend_name() const;

  struct impl;
  /// For asio_context.h: the shard's io_context lives here.
  impl& internals() { return *impl_; }

 private:
  explicit shard_threads(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace ringlog::runtime
