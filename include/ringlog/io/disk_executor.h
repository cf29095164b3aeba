#pragma once
// Asynchronous disk work for one event loop (design.md section 2): fdatasync and linked
// write+fdatasync. The uring backend owns one io_uring and signals an eventfd when completions
// are ready, so an Asio loop can wait on it; the posix backend runs the queued operations in
// poll(); both deliver callbacks only from poll(), on the owning thread.

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "ringlog/io/file.h"

namespace ringlog::io {

enum class backend_kind { automatic, uring, posix };

/// Parses "uring" | "posix" | "auto". Errors name the accepted values.
result<backend_kind> parse_backend_kind(std::string_view text);

/// Whether io_uring can be used here: sets up a small ring and checks that IORING_OP_FSYNC,
/// IORING_OP_WRITE and IORING_OP_READ are supported. `reason` says why not (e.g. "io_uring_setup:
/// Operation not permitted", typical under container seccomp profiles).
struct uring_probe {
  bool available = false;
  std::string reason;
};
uring_probe probe_uring();

/// Latency of completed fdatasyncs (submission to completion, including a linked write), for
/// /metrics. Written by the owning shard, read by any thread (relaxed atomics: a scrape may see
/// one observation half-counted, never a torn value).
class latency_histogram {
 public:
  /// Upper bounds of the buckets, seconds; one more bucket (+Inf) follows.
  static constexpr std::array<double, 12> bounds_s = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                      0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  struct snapshot {
    std::array<uint64_t, bounds_s.size() + 1> counts{};  // not cumulative; last = above 1 s
    uint64_t count = 0;
    double sum_s = 0;
    snapshot& operator+=(const snapshot& o);
  };
  void observe(std::chrono::nanoseconds elapsed);
  [[nodiscard]] snapshot read() const;

 private:
  std::array<std::atomic<uint64_t>, bounds_s.size() + 1> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

class disk_executor {
 public:
  using callback = std::function<void(result<void>)>;
  virtual ~disk_executor() = default;

  /// Queues fdatasync(f) (a full fsync when f.is_directory(): file_system::open_directory);
  /// `done` runs from a later poll(). `f` must outlive the completion.
  virtual void submit_datasync(file& f, callback done) = 0;
  /// Queues write of `data` at `position` linked to an fdatasync (IOSQE_IO_LINK on io_uring):
  /// `done` gets the first failure, or ok when both completed. `data` must stay valid until then.
  virtual void submit_write_datasync(file& f, model::file_position position, std::span<const std::byte> data,
                                     callback done) = 0;
  /// Runs completions that are ready, waiting up to `wait` for the first if none is. Returns how
  /// many callbacks ran.
  virtual size_t poll(std::chrono::milliseconds wait) = 0;
  /// Operations submitted and not yet completed.
  [[nodiscard]] virtual size_t in_flight() const = 0;
  /// An eventfd that becomes readable when poll() has work, or -1 (posix: work is always ready
  /// when in_flight() > 0).
  [[nodiscard]] virtual int event_fd() const = 0;
  /// "uring" or "posix".
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// Latency of the fdatasyncs this executor completed successfully.
  [[nodiscard]] const latency_histogram& datasync_latency() const { return datasync_latency_; }
  /// While poll() runs a callback: when that callback's operation was submitted (steady clock),
  /// so a caller can tell its wait for a sync from the sync itself (/metrics' produce breakdown).
  [[nodiscard]] std::chrono::steady_clock::time_point running_submitted_at() const { return running_submitted_at_; }

 protected:
  latency_histogram datasync_latency_;
  std::chrono::steady_clock::time_point running_submitted_at_{};
};

/// Builds the executor: `automatic` tries io_uring and falls back to posix, writing the reason to
/// `note` (one log line's worth); `uring` fails with `unsupported` when the probe fails.
result<std::unique_ptr<disk_executor>> make_disk_executor(backend_kind kind, std::string* note);

/// The portable executor, also used with sim_file_system (it only calls file methods).
std::unique_ptr<disk_executor> make_posix_disk_executor();

}  // namespace ringlog::io
