#pragma once
// One segment of a partition log: `<base>.log` (record batches back to back), `<base>.index`
// and `<base>.timeindex` (include/ringlog/storage/index.h). Private to storage.

#include <array>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/codec/record_batch.h"
#include "ringlog/io/file.h"
#include "ringlog/storage/errc.h"
#include "ringlog/storage/index.h"
#include "ringlog/storage/log_config.h"

namespace ringlog::storage {

/// "00000000000000000042" for 42: segment files are named by base offset, 20 digits.
std::string segment_file_stem(model::offset base_offset);

/// A batch header found by a scan, with where it starts.
struct located_batch {
  codec::batch_header header;
  model::file_position position{0};
};

/// What a segment learns from each batch written to it, kept in memory: the sparse offset index
/// (an entry after every index.interval.bytes of batches), the time index (an entry at each new
/// largest timestamp), the next offset and the timestamps retention reads. Built by
/// segment::append and segment::recover, and by the log cleaner while it writes a cleaned segment,
/// so its swap installs the segment without reading it back (segment::open_tracked).
struct segment_tracker {
  explicit segment_tracker(model::offset base) : base_offset(base), next_offset(base) {}
  /// Takes the batch `header` written at `position` (batches in file order, offsets ascending).
  void track(const codec::batch_header& header, model::file_position position, int64_t now_ms, int64_t retention_ms,
             int32_t index_interval_bytes);

  model::offset base_offset;
  model::offset next_offset;           // last tracked offset + 1 (base_offset when none)
  uint64_t end_position = 0;           // file position after the last tracked batch
  model::timestamp_ms max_timestamp = model::no_timestamp;
  model::offset offset_of_max_timestamp{0};
  model::timestamp_ms retention_timestamp = model::no_timestamp;
  int64_t first_append_ms = -1;        // broker time of the first batch (segment.ms), -1 when none
  uint64_t bytes_since_index_entry = 0;
  std::vector<offset_index_entry> offset_entries;
  std::vector<time_index_entry> time_entries;
};

/// Tagged bool for segment::remove_files: whether the segment's `.txnindex` goes too. The log
/// cleaner keeps it while swapping a group (log_cleaner.h step c): the group's txn index is
/// rewritten from the old files in step d, also by recovery after a crash between the two.
enum class txn_index_file : bool { remove = false, keep = true };

class segment {
 public:
  /// Creates empty files for a new segment. Errors: kafka_storage_error.
  /// With `direct`, appends bypass the page cache (O_DIRECT): whole aligned blocks are written
  /// from an aligned tail buffer, the last partial block rewritten by the next append, and the
  /// file carries zero padding past its logical end until seal() cuts it.
  static result<std::unique_ptr<segment>> create(io::file_system& fs, const std::string& directory,
                                                 model::offset base_offset, bool direct);
  /// Opens a segment whose `.log` was written whole elsewhere and tracked while it was written
  /// (the log cleaner's swap, log_cleaner.h step e): takes `tracked` instead of scanning the file
  /// and writes both index files without syncing them (index_files() gives them to the caller's
  /// disk executor; mark_indexes_synced() after). Errors: kafka_storage_error, also when the file's
  /// size is not tracked.end_position.
  static result<std::unique_ptr<segment>> open_tracked(io::file_system& fs, const std::string& directory,
                                                       bool direct, segment_tracker tracked);
  /// Opens an existing segment; call load_indexes() or recover() next.
  static result<std::unique_ptr<segment>> open(io::file_system& fs, const std::string& directory,
                                               model::offset base_offset, bool direct);
  /// Cuts O_DIRECT padding so the file ends at its last batch (before roll and close).
  result<void> seal();
  /// A closed segment keeps one open file (its .log, for reads): the index files and the
  /// O_DIRECT handle are synced and closed, and reopened only if the segment is written again
  /// (truncation, recovery). Bounds open files per partition to segments + 3.
  result<void> release_write_files();

  /// Trusts the index files after a sanity check (entries increasing, positions inside the log)
  /// and scans only from the last indexed batch to the end to find next_offset and max timestamp.
  /// Returns false when the indexes look wrong (the caller then recovers).
  result<bool> load_indexes(int64_t now_ms, int64_t retention_ms);
  /// Scans every batch from the start, validating length and CRC, cuts the file at the first torn
  /// or corrupt batch and rebuilds both indexes. Returns bytes cut.
  result<uint64_t> recover(int64_t now_ms, int64_t retention_ms, int32_t index_interval_bytes, size_t* batches);

  /// Appends a batch whose offsets are already assigned (base offset >= next_offset()).
  result<void> append(std::span<const std::byte> batch, const codec::batch_header& header, int64_t now_ms,
                      int64_t retention_ms, int32_t index_interval_bytes);

  /// First batch whose last offset >= `target`, or nullopt if none in this segment.
  result<std::optional<located_batch>> find_batch(model::offset target);
  /// Reads the header of the batch at `position`, nullopt at the end of the data.
  result<std::optional<located_batch>> header_at(model::file_position position);
  /// Reads `length` bytes at `position` and appends them to `out`.
  result<void> read_into(model::file_position position, size_t length, model::bytes& out);

  /// The first record at or above `min_offset` whose timestamp >= `timestamp`: its offset and
  /// timestamp, or nullopt.
  result<std::optional<std::pair<model::offset, model::timestamp_ms>>> offset_for_timestamp(
      model::timestamp_ms timestamp, model::offset min_offset);

  /// Cuts everything at and above `offset` (at a batch boundary: the batch holding `offset` goes).
  result<void> truncate_to(model::offset offset, int64_t now_ms, int64_t retention_ms, int32_t index_interval_bytes);

  /// datasync of the log file (and indexes when `with_indexes`).
  result<void> sync(bool with_indexes);
  /// The .index and .timeindex files, for a sync through the disk executor (open_tracked); null
  /// after release_write_files().
  [[nodiscard]] std::array<std::shared_ptr<io::file>, 2> index_files() const { return {index_, time_index_}; }
  /// The caller synced both index files (open_tracked): release_write_files() need not.
  void mark_indexes_synced() { index_dirty_ = false; }
  /// Files of this segment, for the async flush path.
  io::file& log_file() { return *log_; }
  /// The .log file, shared: a reader holding it (a Kafka Fetch sending bytes by reference) keeps
  /// the file open after retention removes the segment or compaction swaps it, so what it sends
  /// is the bytes it was given. Nothing but reads may be done through it.
  [[nodiscard]] std::shared_ptr<io::file> shared_log_file() const { return log_; }
  /// Removes the segment's files, its .txnindex too unless `txn_index` keeps it (durable after
  /// the caller syncs the directory).
  result<void> remove_files(txn_index_file txn_index = txn_index_file::remove);

  [[nodiscard]] model::offset base_offset() const { return base_offset_; }
  [[nodiscard]] model::offset next_offset() const { return tracked_.next_offset; }
  [[nodiscard]] uint64_t size_bytes() const { return size_bytes_; }
  [[nodiscard]] bool empty() const { return size_bytes_ == 0; }
  [[nodiscard]] model::timestamp_ms max_timestamp() const { return tracked_.max_timestamp; }
  /// Largest record timestamp, clamped for retention (see partition_log::apply_retention).
  [[nodiscard]] model::timestamp_ms retention_timestamp() const { return tracked_.retention_timestamp; }
  /// Broker time of the first append into this segment (segment.ms roll), or -1 when empty.
  [[nodiscard]] int64_t first_append_ms() const { return tracked_.first_append_ms; }
  [[nodiscard]] bool dirty() const { return dirty_; }
  void mark_clean() { dirty_ = false; }
  [[nodiscard]] const std::vector<offset_index_entry>& offset_entries() const { return tracked_.offset_entries; }
  [[nodiscard]] const std::vector<time_index_entry>& time_entries() const { return tracked_.time_entries; }

 private:
  segment(io::file_system& fs, std::string directory, model::offset base_offset, bool direct);
  result<void> open_files(io::open_mode mode);
  result<void> open_index_files();
  result<void> direct_write(std::span<const std::byte> batch);
  result<void> rewrite_index_files();
  /// Appends the in-memory index entries not yet in the index files.
  result<void> write_pending_index_entries();
  std::string path(const char* suffix) const;

  io::file_system& fs_;
  std::string directory_;
  model::offset base_offset_;
  segment_tracker tracked_;
  uint64_t size_bytes_ = 0;
  bool dirty_ = false;
  bool index_dirty_ = false;
  std::shared_ptr<io::file> log_;   // shared with in-flight zero-copy fetches (shared_log_file)
  // O_DIRECT append path: bytes [tail_start_, size_bytes_) of the file live in tail_ as well.
  bool direct_ = false;
  std::unique_ptr<io::file> log_direct_;
  struct aligned_free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, aligned_free> tail_;
  size_t tail_capacity_ = 0;
  uint64_t tail_start_ = 0;
  bool tail_loaded_ = false;
  std::shared_ptr<io::file> index_;      // shared with a sync in flight (index_files)
  std::shared_ptr<io::file> time_index_;
  size_t offset_entries_written_ = 0;  // entries [0, written) are in the index files
  size_t time_entries_written_ = 0;
};

}  // namespace ringlog::storage
