#pragma once
// One segment of a partition log: `<base>.log` (record batches back to back), `<base>.index`
// and `<base>.timeindex` (include/ringlog/storage/index.h). Private to storage.

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
  [[nodiscard]] model::offset next_offset() const { return next_offset_; }
  [[nodiscard]] uint64_t size_bytes() const { return size_bytes_; }
  [[nodiscard]] bool empty() const { return size_bytes_ == 0; }
  [[nodiscard]] model::timestamp_ms max_timestamp() const { return max_timestamp_; }
  /// Largest record timestamp, clamped for retention (see partition_log::apply_retention).
  [[nodiscard]] model::timestamp_ms retention_timestamp() const { return retention_timestamp_; }
  /// Broker time of the first append into this segment (segment.ms roll), or -1 when empty.
  [[nodiscard]] int64_t first_append_ms() const { return first_append_ms_; }
  [[nodiscard]] bool dirty() const { return dirty_; }
  void mark_clean() { dirty_ = false; }
  [[nodiscard]] const std::vector<offset_index_entry>& offset_entries() const { return offset_entries_; }
  [[nodiscard]] const std::vector<time_index_entry>& time_entries() const { return time_entries_; }

 private:
  segment(io::file_system& fs, std::string directory, model::offset base_offset, bool direct);
  result<void> open_files(io::open_mode mode);
  result<void> open_index_files();
  result<void> direct_write(std::span<const std::byte> batch);
  void track_batch(const codec::batch_header& header, model::file_position position, int64_t now_ms,
                   int64_t retention_ms, int32_t index_interval_bytes);
  result<void> rewrite_index_files();
  /// Appends the in-memory index entries not yet in the index files.
  result<void> write_pending_index_entries();
  std::string path(const char* suffix) const;

  io::file_system& fs_;
  std::string directory_;
  model::offset base_offset_;
  model::offset next_offset_;
  uint64_t size_bytes_ = 0;
  model::timestamp_ms max_timestamp_ = model::no_timestamp;
  model::offset offset_of_max_timestamp_{0};
  model::timestamp_ms retention_timestamp_ = model::no_timestamp;
  int64_t first_append_ms_ = -1;
  uint64_t bytes_since_index_entry_ = 0;
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
  std::unique_ptr<io::file> index_;
  std::unique_ptr<io::file> time_index_;
  std::vector<offset_index_entry> offset_entries_;
  std::vector<time_index_entry> time_entries_;
  size_t offset_entries_written_ = 0;  // entries [0, written) are in the index files
  size_t time_entries_written_ = 0;
};

}  // namespace ringlog::storage
