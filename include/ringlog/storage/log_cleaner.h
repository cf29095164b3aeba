#pragma once
// Log compaction: Kafka's log cleaner (LogCleaner / Cleaner, KIP-58 lag bounds, KIP-354 max lag)
// as a deterministic core. A shard owns one log_cleaner and calls clean() on its compacted
// partitions; time comes from the log's clock, the disk from the log's io::file_system.
//
// One pass over a log:
//   1. The cleanable range [first_dirty_offset, first_uncleanable_offset): first_dirty_offset is
//      the cleaner checkpoint (file `cleaner-offset-checkpoint` in the partition directory,
//      Kafka's text layout); first_uncleanable_offset is the base of the first segment that is
//      the active one, reaches above the high watermark, or holds a record newer than
//      min.compaction.lag.ms. The active segment is never cleaned.
//   2. Due when dirty bytes / (clean + dirty bytes) >= min.cleanable.dirty.ratio, when the
//      oldest dirty record is older than max.compaction.lag.ms, or when a tombstone kept by an
//      earlier pass has passed delete.retention.ms (then the clean section alone is rewritten).
//   3. An offset map (offset_map.h, bounded by log.cleaner.dedupe.buffer.size) of key -> latest
//      offset over the dirty range; a full map ends the range early (map_end_offset).
//   4. Every segment below map_end_offset is rewritten, in groups of consecutive segments whose
//      sizes add up to at most segment.bytes, keeping a record when no later offset of its key is
//      in the map. Dropped: superseded records, records without a key, and tombstones (null
//      value) that are their key's latest and whose segment's newest timestamp is older than
//      delete.retention.ms. Kept as they are: control batches. A batch keeps its base offset,
//      last_offset_delta, producer id/epoch/sequence and leader epoch; every kept record keeps
//      its offset, so offsets are never renumbered and the log has gaps. The last batch of each
//      rewritten segment stays even when all its records go (an empty header), so every segment
//      still ends at its last offset and a restart never shrinks the log end offset.
//   5. Each group is swapped in crash-safely (Kafka's .cleaned / .swap steps):
//        a. write `<base>.log.cleaned`, fdatasync it;
//        b. rename it to `<base>.log.swap`, fsync the directory  <- the commit point;
//        c. remove the group's old `.log/.index/.timeindex` files;
//        d. rename `<base>.log.swap` to `<base>.log`, fsync the directory, rebuild its indexes.
//      complete_interrupted_swaps() (called by partition_log::open) deletes every `.cleaned`
//      file (a pass cut before its commit point: the old segments are untouched) and finishes
//      every `.swap` (removes the segments whose base lies inside the swap file's offsets, then
//      renames it), so a crash at any step leaves the old group or the new one, never neither.
//   6. The checkpoint moves to map_end_offset. Under compact,delete, leading segments past
//      retention.ms / retention.bytes are then deleted only when they hold no record at all
//      (compaction already removed everything superseded), so retention never removes the only
//      copy of a key's latest value.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "ringlog/io/file.h"
#include "ringlog/model/types.h"
#include "ringlog/storage/errc.h"
#include "ringlog/storage/offset_map.h"

namespace ringlog::storage {

class partition_log;

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
  size_t keys_in_map = 0;
  size_t segments_before = 0;           // segments rewritten
  size_t segments_after = 0;            // cleaned segments written
  size_t segments_deleted = 0;          // compact,delete: empty segments past retention
};

/// Tagged bool for clean(): clean even when the dirty ratio and lag bounds say not yet.
enum class force_clean : bool { no = false, yes = true };

class log_cleaner {
 public:
  explicit log_cleaner(cleaner_config config);

  /// The dirty ratio and whether a pass is due. Errors: kafka_storage_error.
  result<cleanable_state> inspect(partition_log& log);
  /// One pass over `log` when it is compacted and due (or forced). Errors: kafka_storage_error
  /// (the log then refuses further use, as after a failed append), corrupt_message (a stored
  /// batch failed to decode: nothing was changed).
  result<clean_stats> clean(partition_log& log, force_clean force = force_clean::no);

  /// Tests only: called at each crash-relevant step of a pass with its name; returning false
  /// ends the pass there with kafka_storage_error, as a crash at that point would.
  std::function<bool(std::string_view step)> step_hook;

  [[nodiscard]] const offset_map& map() const { return map_; }

 private:
  result<void> step(std::string_view name);

  offset_map map_;
  /// Per log directory: when a tombstone kept by the last pass passes delete.retention.ms, so a
  /// log with no new dirty bytes is still cleaned to drop it (Kafka 3.1, KIP-534). Kept in memory
  /// only: after a restart such tombstones go with the next pass that new writes make due.
  std::map<std::string, int64_t> tombstone_due_ms_;
  /// Per log directory: the cleaner checkpoint as last read or written, so inspect() reads the
  /// file once per log (it runs every maintenance tick).
  std::map<std::string, model::offset> first_dirty_cache_;
};

/// Paces the cleaner to log.cleaner.io.max.bytes.per.second: after a pass that read `bytes`, the
/// next may start once bytes / rate seconds have passed (Kafka's Throttler, between passes).
class cleaner_throttle {
 public:
  /// `bytes_per_second` <= 0 or infinite: no pacing.
  explicit cleaner_throttle(double bytes_per_second) : bytes_per_second_(bytes_per_second) {}
  [[nodiscard]] bool may_start(int64_t now_ms) const { return now_ms >= next_start_ms_; }
  void record(int64_t now_ms, uint64_t bytes);

 private:
  double bytes_per_second_;
  int64_t next_start_ms_ = 0;
};

/// Recovery of the swap steps above for one partition directory: removes `*.cleaned` files,
/// completes every `<base>.log.swap`. Called by partition_log::open before segments are listed.
/// Returns the number of swaps completed. Errors: kafka_storage_error.
result<size_t> complete_interrupted_swaps(io::file_system& fs, const std::string& directory);

/// Name of the cleaner checkpoint file in a partition directory.
inline constexpr const char* cleaner_checkpoint_file = "cleaner-offset-checkpoint";

}  // namespace ringlog::storage
