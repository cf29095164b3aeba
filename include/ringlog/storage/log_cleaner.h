#pragma once
// Log compaction: Kafka's log cleaner (LogCleaner / Cleaner, KIP-58 lag bounds, KIP-354 max lag)
// as a deterministic core. A shard owns one log_cleaner and calls clean() on its compacted
// partitions; time comes from the log's clock, the disk from the log's io::file_system.
//
// One pass over a log:
//   1. The cleanable range [first_dirty_offset, first_uncleanable_offset): first_dirty_offset is
//      the cleaner checkpoint (file `cleaner-offset-checkpoint` in the partition directory,
//      Kafka's text layout); first_uncleanable_offset is the base of the first segment that is
//      the active one, reaches above the last stable offset (so past the high watermark, and
//      never into an open transaction: KIP-98, Kafka's firstUncleanableDirtyOffset), or holds a
//      record newer than min.compaction.lag.ms. The active segment is never cleaned.
//   2. Due when dirty bytes / (clean + dirty bytes) >= min.cleanable.dirty.ratio, when the
//      oldest dirty record is older than max.compaction.lag.ms, or when a tombstone or marker
//      kept by an earlier pass has reached its delete horizon (then the clean section alone is
//      rewritten).
//   3. An offset map (offset_map.h, bounded by log.cleaner.dedupe.buffer.size) of key -> latest
//      offset over the dirty range; a full map ends the range early (map_end_offset). Records of
//      aborted transactions never enter it (an aborted value must not hide a committed older
//      one), nor do control records (their key is the marker type, not a record key).
//   4. Every segment below map_end_offset is rewritten, in groups of consecutive segments whose
//      sizes add up to at most segment.bytes, keeping a record when no later offset of its key is
//      in the map. Dropped: superseded records, records without a key, records of aborted
//      transactions, tombstones (null value) that are their key's latest and whose batch's delete
//      horizon has passed, and transaction markers under the rule below. A batch keeps its base
//      offset, last_offset_delta, producer id/epoch/sequence and leader epoch; every kept record
//      keeps its offset, so offsets are never renumbered and the log has gaps. The last batch of
//      each rewritten segment stays even when all its records go (an empty header), so every
//      segment still ends at its last offset and a restart never shrinks the log end offset.
//      Delete horizon (KIP-534): the first pass that keeps a tombstone (or a marker that may go)
//      writes its batch with attribute bit 6 set and base_timestamp = pass time +
//      delete.retention.ms; a later pass removes the tombstone (marker) once its time passes that
//      horizon. The horizon is in the batch on disk, so it survives restarts and travels to
//      followers with the batch. A rewritten batch left without a tombstone or marker loses the
//      bit, so every flagged batch holds something waiting for its horizon.
//      Transaction markers (KIP-98; Kafka's CleanedTransactionMetadata): walking the log in
//      offset order with the aborted transactions of the txn index, an abort marker stays while
//      the pass met any data batch of its transaction (that data is removed by this pass, so the
//      next one finds none), a commit marker stays while the pass met a data batch of its
//      transaction; once a marker may go it gets a delete horizon and goes after it, so a reader
//      that has read part of a transaction still meets its marker within delete.retention.ms.
//      The txn index (.txnindex) of a rewritten group keeps exactly the aborted transactions
//      whose abort marker is still stored. Empty batch headers (records_count 0) count as no
//      data of their transaction, so they never pin a marker.
//   5. Each group is swapped in crash-safely (Kafka's .cleaned / .swap steps):
//        a. write `<base>.log.cleaned`, fdatasync it;
//        b. rename it to `<base>.log.swap`, fsync the directory  <- the commit point;
//        c. remove the group's old `.log/.index/.timeindex` files;
//        d. rewrite the group's txn index: `<base>.txnindex` holds the entries of the group's old
//           index files whose abort marker is in the swap file, the other files go;
//        e. rename `<base>.log.swap` to `<base>.log`, fsync the directory, rebuild its indexes.
//      complete_interrupted_swaps() (called by partition_log::open) deletes every `.cleaned`
//      file (a pass cut before its commit point: the old segments are untouched) and finishes
//      every `.swap` (removes the segments whose base lies inside the swap file's offsets, redoes
//      step d from the swap file's markers, then renames it), so a crash at any step leaves the
//      old group or the new one, never neither, with a txn index that matches it.
//   6. The checkpoint moves to map_end_offset. Under compact,delete, leading segments past
//      retention.ms / retention.bytes are then deleted only when they hold no record at all
//      (compaction already removed everything superseded), so retention never removes the only
//      copy of a key's latest value.
// Steps: a pass runs as begin() then step() calls, each reading at most about
// cleaner_step_bytes of segment data (or doing one part of a group's swap), so the shard that
// owns the log serves produce and fetch between steps (design.md section 5: nothing
// unbounded). The log may change between steps only by appends (to the active segment, above
// the cleaned range); any other change to its segments (retention, truncation, close) ends the
// pass at its next step, leaving the log as the groups already swapped made it (each is
// complete). A change that comes while a group's `.swap` file exists but its old segments are
// still all there (between steps b and c) first removes the `.swap` file and syncs the
// directory (partition_log::roll_back_pending_swap), so the directory never holds a swap over
// segments that changed under it.
// Disk syncs: given a disk executor (cleaner_io), the swap's three syncs (the `.cleaned`
// fdatasync of step a, the directory fsyncs of steps b and e) go through it, the shard's ring:
// the step that needs one submits it and returns waiting_for_io, and the pass goes on when the
// executor's poll() reports it done, so the shard serves produce and fetch while the disk
// syncs. Without an executor they run inside step() (tests, tools), and a whole swap is one
// step. So do the cleaner checkpoint's fdatasync and directory fsync at the end of a pass. Step
// d's txn index file (written only for groups holding aborted transactions) and the segment
// deletions of compact,delete still sync inside their step.
// After a restart, the first pass over a log begins by reading the delete horizons (KIP-534)
// back from the clean section's batch headers, in steps of the same bound (at most about
// cleaner_step_bytes of segments covered each), before it decides whether to clean.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "ringlog/io/disk_executor.h"
#include "ringlog/io/file.h"
#include "ringlog/model/types.h"
#include "ringlog/storage/errc.h"
#include "ringlog/storage/offset_map.h"

namespace ringlog::storage {

class partition_log;

/// Segment bytes one cleaning step reads at most (it always reads at least one batch, so a step
/// with one batch larger than this reads that batch). At the ~60-80 MiB/s one core cleans
/// (docs/benchmarks.md), 256 KiB is about 3-4 ms of work: a produce or fetch that arrives
/// during a pass waits for at most one step, not for the ~0.2 s a whole pass took.
inline constexpr size_t cleaner_step_bytes = 256 * 1024;

struct cleaner_config {
  /// log.cleaner.dedupe.buffer.size: bytes of the offset map, per shard (Kafka: 128 MiB over all
  /// cleaner threads). 24 bytes / 0.75 load = 32 bytes per distinct key of a pass.
  size_t dedupe_buffer_bytes = 128 * 1024 * 1024;
};

/// The cleaner's view of one log.
struct cleanable_state {
  model::offset first_dirty_offset{0};        // inclusive start of the dirty range
  model::offset first_uncleanable_offset{0};  // exclusive end of what may be cleaned now
  uint64_t clean_bytes = 0;                   // segments wholly below first_dirty_offset
  uint64_t dirty_bytes = 0;                   // segments in the dirty range
  double dirty_ratio = 0.0;                   // dirty / (clean + dirty), 0 when both are 0
  bool max_lag_passed = false;                // a dirty record is older than max.compaction.lag.ms
  bool tombstones_due = false;                // a tombstone kept by an earlier pass may now go (KIP-534)
  bool due = false;                           // compacted and (ratio or max lag) say clean now
};

/// What one pass did.
struct clean_stats {
  bool cleaned = false;                 // false: not compacted, not due, or nothing to clean
  model::offset first_dirty_offset{0};  // range covered: [first_dirty_offset, map_end_offset)
  model::offset map_end_offset{0};
  double dirty_ratio = 0.0;             // before the pass
  uint64_t bytes_read = 0;              // bytes of the segments rewritten
  uint64_t bytes_written = 0;           // bytes of the cleaned segments
  uint64_t records_read = 0;
  uint64_t records_kept = 0;
  uint64_t tombstones_removed = 0;
  uint64_t aborted_records_removed = 0; // records of aborted transactions dropped
  uint64_t markers_removed = 0;         // transaction markers dropped past their delete horizon
  uint64_t horizons_set = 0;            // batches given a delete horizon by this pass (KIP-534)
  size_t keys_in_map = 0;
  size_t segments_before = 0;           // segments rewritten
  size_t segments_after = 0;            // cleaned segments written
  size_t segments_deleted = 0;          // compact,delete: empty segments past retention
  size_t steps = 0;                     // step() calls the pass took
};

/// What one step of a pass did.
struct clean_step {
  bool done = false;             // the pass ended (stats() says how); step() may not be called again
  bool abandoned = false;        // it ended because the log's segments changed under it (not an error)
  bool records_changed = false;  // a group was swapped in by this step: kept reads of the log are stale
  uint64_t bytes_read = 0;       // segment bytes read (or, reading horizons, covered) by this step (for pacing)
  bool waiting_for_io = false;   // a sync is in flight: call step() again once cleaner_io::resume ran
};

/// Where a pass sends its fdatasync and directory fsyncs (log_cleaner.h, "Disk syncs").
struct cleaner_io {
  /// The shard's executor; nullptr: the syncs run inside step().
  io::disk_executor* executor = nullptr;
  /// Called from executor->poll() (on the owning thread) when a sync the pass waits for has
  /// completed, also when it failed (the next step() reports the failure). Not called when the
  /// pass ended meanwhile.
  std::function<void()> resume;
};

/// Tagged bool for clean(): clean even when the dirty ratio and lag bounds say not yet.
enum class force_clean : bool { no = false, yes = true };

class log_cleaner {
 public:
  explicit log_cleaner(cleaner_config config);
  ~log_cleaner();
  log_cleaner(const log_cleaner&) = delete;
  log_cleaner& operator=(const log_cleaner&) = delete;

  /// The dirty ratio and whether a pass is due. Errors: kafka_storage_error.
  result<cleanable_state> inspect(partition_log& log);

  /// Starts a pass over `log` when it is compacted and due (or forced): true when one started.
  /// Precondition: no pass is in progress (one log at a time, as a Kafka cleaner thread).
  /// Errors: kafka_storage_error.
  /// With `io.executor`, the pass's syncs go through it (cleaner_io). After a restart the
  /// pass first reads the log's delete horizons back (horizons_known()), and then cleans only
  /// when due (or forced); it may thus end without cleaning.
  result<bool> begin(partition_log& log, force_clean force = force_clean::no, cleaner_io io = {});
  /// Runs the pass in progress on by one step: batches until about `budget_bytes` of segment
  /// data were read (at least one batch), or one group's swap up to its next sync, or the final
  /// checkpoint. While a sync is in flight it does nothing and says waiting_for_io. `log` must
  /// be the log given to begin(). Errors: as clean(); the pass then ends.
  result<clean_step> step(partition_log& log, size_t budget_bytes = cleaner_step_bytes);
  /// Ends the pass in progress without finishing it (its partition is going away or stopping);
  /// removes its `.cleaned` file when the log is still usable. Groups already swapped stay.
  void abandon();
  /// `log` is going away (its partition deleted or moved off this broker): ends a pass over it
  /// (abandon) and forgets what this cleaner cached of its directory, so a new log there (a topic
  /// re-created under the same name) starts from its own checkpoint.
  void forget(const partition_log& log);
  [[nodiscard]] bool in_progress() const { return pass_ != nullptr; }
  /// The log of the pass in progress, nullptr when none.
  [[nodiscard]] const partition_log* cleaning() const;
  /// Figures of the pass in progress, or of the last one that ended.
  [[nodiscard]] const clean_stats& stats() const;

  /// One whole pass (begin, then steps until done) over `log` when it is compacted and due (or
  /// forced). Errors: kafka_storage_error (the log then refuses further use when the failure
  /// came after a swap's commit point, as after a failed append), corrupt_message (a stored
  /// batch failed to decode: nothing was changed).
  result<clean_stats> clean(partition_log& log, force_clean force = force_clean::no);

  /// Tests only: called at each crash-relevant step of a pass with its name; returning false
  /// ends the pass there with kafka_storage_error, as a crash at that point would.
  std::function<bool(std::string_view step)> step_hook;

  [[nodiscard]] const offset_map& map() const { return map_; }

  /// Whether this cleaner has read `log`'s delete horizons back (KIP-534) since it first met the
  /// log; until then inspect() cannot tell tombstones_due, and begin() starts with reading them.
  [[nodiscard]] bool horizons_known(const partition_log& log) const;

 private:
  struct pass;
  struct pending_sync;
  result<void> seed_step(pass& p, size_t budget_bytes, clean_step& out);
  result<void> plan_pass(pass& p, const cleanable_state& state);
  /// Syncs `files` (at once, in any order) through the pass's executor (p.waiting set, done when
  /// all completed) or inline (the first failure in p.sync_failure).
  void start_sync(pass& p, const std::vector<std::shared_ptr<io::file>>& files);
  result<void> swap_substep(pass& p, clean_step& out);
  result<void> hook(std::string_view name);
  result<void> build_map_step(pass& p, size_t budget_bytes, clean_step& out);
  result<void> plan_groups(pass& p);
  result<void> rewrite_step(pass& p, size_t budget_bytes, clean_step& out);
  /// The pass's end (step 6) up to its next sync; sets out.done when the pass is complete.
  result<void> finish(pass& p, clean_step& out);
  /// The cleaner checkpoint of `log` (read once, then cached), inside the log's offsets.
  result<model::offset> checkpointed_first_dirty(partition_log& log);

  offset_map map_;
  std::unique_ptr<pass> pass_;
  clean_stats last_stats_;
  /// Per log directory: the earliest delete horizon (KIP-534) of a tombstone or marker kept by
  /// the last pass, so a log with no new dirty bytes is still cleaned once it passes. The
  /// horizons themselves are in the batches on disk: after a restart the first pass over a
  /// log reads them back from the clean section's batch headers (seed_step).
  std::map<std::string, int64_t> tombstone_due_ms_;
  /// Log directories whose horizons are known (read back, or set by a pass of this cleaner).
  std::set<std::string> horizons_known_;
  /// Per log directory: the cleaner checkpoint as last read or written, so inspect() reads the
  /// file once per log (it runs every maintenance tick).
  std::map<std::string, model::offset> first_dirty_cache_;
};

/// Paces the cleaner to log.cleaner.io.max.bytes.per.second: after a step (or pass) that read
/// `bytes`, the next may start once bytes / rate seconds have passed (Kafka's Throttler).
class cleaner_throttle {
 public:
  /// `bytes_per_second` <= 0 or infinite: no pacing.
  explicit cleaner_throttle(double bytes_per_second) : bytes_per_second_(bytes_per_second) {}
  [[nodiscard]] bool may_start(int64_t now_ms) const { return now_ms >= next_start_ms_; }
  /// Milliseconds from `now_ms` until the next step or pass may start (0: now).
  [[nodiscard]] int64_t wait_ms(int64_t now_ms) const { return next_start_ms_ > now_ms ? next_start_ms_ - now_ms : 0; }
  void record(int64_t now_ms, uint64_t bytes);

 private:
  double bytes_per_second_;
  int64_t next_start_ms_ = 0;
};

/// Recovery of the swap steps above for one partition directory: removes `*.cleaned` files,
/// completes every `<base>.log.swap`. Called by partition_log::open before segments are listed.
/// A `.swap` that is not whole (empty, a torn or corrupt batch, bytes after the last batch,
/// offsets not ascending) was never committed by a cleaner, which fdatasyncs it whole before the
/// rename: it is removed and the segments it would have replaced stay, with one line in
/// `warnings` naming it and why. Returns the number of swaps completed. Errors: kafka_storage_error.
result<size_t> complete_interrupted_swaps(io::file_system& fs, const std::string& directory,
                                          std::vector<std::string>* warnings = nullptr);

/// Name of the cleaner checkpoint file in a partition directory.
inline constexpr const char* cleaner_checkpoint_file = "cleaner-offset-checkpoint";

}  // namespace ringlog::storage
