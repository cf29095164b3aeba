#pragma once
// The log cleaner of each shard (storage/log_cleaner.h): on each maintenance tick a shard looks
// at each of its compacted partitions in turn and runs a pass over each one that is due (one pass
// at a time per shard, as a Kafka cleaner thread cleans one log at a time; the next log is looked
// at when a pass ends, not at the next tick, so a log is never left waiting behind others for
// ticks: partition_manager::clean_next). Due includes a log with nothing dirty whose earliest delete
// horizon (KIP-534) has passed: its tombstones go within a tick of their horizon, with no new
// write needed (Kafka cleans only a dirty log). Each pass runs in bounded steps
// (storage::cleaner_step_bytes each), each a task of its own on the shard's loop, so produce and
// fetch work queued meanwhile runs between steps. A swap's fdatasync and directory fsyncs go
// through the shard's disk executor (its io_uring ring): the pass waits for them without
// holding the loop, and resumes as a new task when the executor reports them done. After a
// restart the first pass over a log reads its delete horizons back in steps of the same bound
// before it decides whether to clean. Steps are paced by
// log.cleaner.io.max.bytes.per.second; log.cleaner.dedupe.buffer.size is shared out over the
// shards (Kafka shares it over log.cleaner.threads). The broker owns one for all shards; each
// shard's partition_manager drives its own shard's passes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ringlog/io/disk_executor.h"
#include "ringlog/partition/partition.h"
#include "ringlog/storage/log_cleaner.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::partition {

/// Compacted logs one task of the shard looks at (compaction::begin, an inspect each) before the
/// rest of the tick's queue waits for a task of its own: a shard with thousands of compacted
/// partitions (every __consumer_offsets one is) then never holds its loop for all of them at once.
inline constexpr size_t cleaner_looks_per_task = 64;

class compaction {
 public:
  /// The static broker configs of the cleaner.
  struct settings {
    bool enabled = true;                    ///< log.cleaner.enable
    int64_t dedupe_buffer_size = 0;         ///< log.cleaner.dedupe.buffer.size, shared out over the shards
    int64_t io_max_bytes_per_second = 0;    ///< log.cleaner.io.max.bytes.per.second, per shard
  };
  compaction(const settings& config, size_t shard_count);

  /// What one step did, for the caller that schedules the next.
  struct step_outcome {
    bool done = true;              // the pass ended (or failed): schedule no further step
    bool records_changed = false;  // a group was swapped in: kept reads of the log are stale
    int64_t wait_ms = 0;           // pacing: run the next step no sooner than this from now
    bool waiting_for_io = false;   // a sync is in flight: the begin()'s `resume` schedules the next step
  };

  /// On `shard`'s thread. Starts a pass over `log` when it is compacted and due, the shard runs
  /// no pass yet and its pacing allows; publishes the dirty ratio into `stats` either way.
  /// Returns true when a pass started: the caller then runs step() until it says done. The
  /// pass's syncs go through `disk`; `resume` is called from disk.poll() when one completed.
  bool begin(size_t shard, storage::partition_log& log, partition_stats& stats, int64_t now_ms,
             io::disk_executor& disk, std::function<void()> resume);
  /// On `shard`'s thread: one step of the shard's pass over `log` (the log given to begin).
  /// When the pass ends, publishes the cleaner figures into `stats`. A pass that fails leaves
  /// the log to report kafka_storage_error to its next caller (as a failed append does).
  step_outcome step(size_t shard, storage::partition_log& log, partition_stats& stats, int64_t now_ms);
  /// On `shard`'s thread: ends the shard's pass without finishing it (its partition is being
  /// deleted, or the broker stops).
  void abandon(size_t shard);
  /// On `shard`'s thread, before `log` is destroyed (its partition deleted or moved away): ends
  /// a pass over it, also one waiting for a sync (whose resume then finds nothing to resume).
  void forget(size_t shard, const storage::partition_log& log);
  /// Time the steps of every shard's cleaner held their loop (broker::cleaner_step_time). Any thread.
  [[nodiscard]] io::latency_histogram::snapshot step_time() const;
  /// Pacing of `shard`'s cleaner: milliseconds from `now_ms` until its next step may run.
  [[nodiscard]] int64_t wait_ms(size_t shard, int64_t now_ms) const;
  /// Whether `shard`'s cleaner runs a pass (also one waiting for a sync).
  [[nodiscard]] bool in_progress(size_t shard) const;

 private:
  struct shard_cleaner {
    std::unique_ptr<storage::log_cleaner> cleaner;   // created on the first compacted partition
    storage::cleaner_throttle throttle{0};
    std::chrono::steady_clock::duration pass_time{};  // wall time of the pass's steps so far
    io::latency_histogram step_time;                   // each begin() and step() on the shard's thread
  };
  bool enabled_;
  size_t dedupe_bytes_per_shard_;
  double io_bytes_per_second_;
  std::vector<shard_cleaner> shards_;
};

}  // namespace ringlog::partition
