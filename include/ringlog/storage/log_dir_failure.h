#pragma once
// The log directory's failure channel: where a failed write, fdatasync, segment roll, checkpoint,
// truncation or deletion in log.dirs is reported, once, to whoever decides what happens next.
// Kafka's LogDirFailureChannel: an IOException in a log directory takes the directory offline;
// with a single log directory the broker halts (ReplicaManager: "Stopping serving logs in dir
// ...", "Halting broker because dir ... is offline"), so its leaderships move at once to the
// in-sync replicas instead of the broker serving errors (or a page cache it cannot trust:
// style.md "Errors") until someone restarts it.
//
// Storage and the modules above it only report; the composition root (src/app) owns the channel
// and its handler, which logs and stops the process. Tests and simulations hand in a handler
// that records the failure instead. Read failures of stored data (a batch that does not decode)
// are not reported: they answer kafka_storage_error for that read and the directory stays
// served.

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "ringlog/storage/errc.h"

namespace ringlog::storage {

/// One failure of the log directory, as reported.
struct log_dir_failure {
  std::string log_dir;     ///< log.dirs (the directory that is offline now)
  std::string operation;   ///< what the log was doing: "append", "fdatasync", "segment roll", "checkpoint", ...
  std::string error;       ///< the I/O error: the system call, the file's path and strerror (io::from_errno)
};

/// Thread-safe: every shard reports to the same channel. The handler runs on the thread of the
/// first report, once for the channel's life; later reports are only counted (the first one
/// already decided: Kafka takes a directory offline once).
class log_dir_failure_channel {
 public:
  using handler = std::function<void(const log_dir_failure&)>;

  /// `log_dir`: log.dirs. `on_failure` may be empty (reports are then only counted).
  log_dir_failure_channel(std::string log_dir, handler on_failure)
      : log_dir_(std::move(log_dir)), on_failure_(std::move(on_failure)) {}
  log_dir_failure_channel(const log_dir_failure_channel&) = delete;
  log_dir_failure_channel& operator=(const log_dir_failure_channel&) = delete;

  /// Reports that `operation` failed with `e` (a kafka_storage_error from a write path). The
  /// first report calls the handler; every report counts.
  void report(std::string_view operation, const error& e);

  /// Some report arrived: the directory is offline.
  [[nodiscard]] bool offline() const { return reports_.load(std::memory_order_acquire) > 0; }
  /// Reports so far (the first one called the handler).
  [[nodiscard]] uint64_t reports() const { return reports_.load(std::memory_order_acquire); }
  [[nodiscard]] const std::string& log_dir() const { return log_dir_; }

 private:
  const std::string log_dir_;
  const handler on_failure_;
  std::atomic<uint64_t> reports_{0};
};

}  // namespace ringlog::storage
