#pragma once
// The log of one partition: a directory `<topic>-<partition>` of segments named by base offset
// (20 digits), each a `.log` of record batches (codec/record_batch.h), a sparse `.index`
// (offset_index.h) and a `.timeindex` (time_index.h), plus checkpoint files:
//   recovery-point-offset-checkpoint  offsets below it are known durable and valid
//   replication-offset-checkpoint     high watermark
//   log-start-offset-checkpoint       first readable offset
//   leader-epoch-checkpoint           leader epoch -> first offset of that epoch (KIP-101)
//   clean-shutdown                    present only between a clean close and the next open
//   <offset, 20 digits>.snapshot       idempotent producer state below that offset
//                                      (producer_state.h), written at each roll and at close
//   <base, 20 digits>.txnindex         aborted transactions whose abort marker is in that
//                                      segment (txn_index.h), rewritten whole (temp, sync,
//                                      rename) at each abort marker; only segments with one
// Checkpoints use Kafka's text layout ("version\ncount\nentries...") and are written with
// io::write_file_atomic (temp, datasync, rename, directory sync).
//
// The log is single-threaded (one shard owns it) and deterministic: time comes from a
// base::clock, the disk from io::file_system (real or simulated).

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/disk_executor.h"
#include "ringlog/io/file.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"
#include "ringlog/storage/errc.h"
#include "ringlog/storage/log_config.h"
#include "ringlog/storage/log_dir_failure.h"
#include "ringlog/storage/producer_state.h"
#include "ringlog/storage/segment_file_budget.h"
#include "ringlog/storage/txn_index.h"

namespace ringlog::storage {

class segment;
struct located_batch;

struct append_result {
  model::offset base_offset{0};   // offset given to the first record
  model::offset last_offset{0};   // offset given to the last record (inclusive)
  /// The broker clock at the append; for a duplicate, the original batch's max timestamp (its
  /// append time under LogAppendTime), which Kafka's duplicate answer carries.
  model::timestamp_ms log_append_time = model::no_timestamp;
  size_t size_bytes = 0;
  /// The batch repeats one its idempotent producer stored already (producer_state.h): nothing
  /// was written, the offsets are the original batch's.
  bool duplicate = false;
};

/// Whole batches, concatenated, as stored. The first batch may start below the requested offset
/// (a batch is never split); the reader drops records below it.
struct read_result {
  model::bytes batches;
  model::offset next_offset{0};  // offset after the last record returned
};

/// Whole batches as places in the segment files (partition_log::read_file_ranges), for a reader
/// that sends them to a socket by reference: one range per batch, in offset order, each exactly
/// one whole batch as stored.
struct file_read_result {
  std::vector<io::file_range> batches;
  size_t size_bytes = 0;          // sum of the ranges' lengths
  model::offset next_offset{0};   // offset after the last record of the last batch
};

struct segment_info {
  model::offset base_offset{0};
  model::offset next_offset{0};  // one past the last offset in the segment
  uint64_t size_bytes = 0;
  model::timestamp_ms max_timestamp = model::no_timestamp;
};

/// An answer of offset_for_timestamp: the record found and its own timestamp.
struct timestamp_lookup {
  model::offset found_offset{0};
  model::timestamp_ms timestamp = model::no_timestamp;
};

/// What recovery found, for logs and tests.
struct recovery_report {
  bool clean_shutdown = false;
  size_t segments_scanned = 0;
  size_t batches_scanned = 0;
  uint64_t bytes_truncated = 0;  // torn or corrupt tail bytes cut away
  std::vector<std::string> warnings;   // files recovery removed instead of trusting, one line each
};

class partition_log {
 public:
  /// Opens (creating if missing) the log in `directory` and recovers it: with a clean-shutdown
  /// marker, trusts the checkpoints; otherwise scans every batch past the recovery point, cuts
  /// the log at the first torn or corrupt batch and rebuilds those segments' indexes.
  /// Errors: kafka_storage_error (the message names the file), invalid_config.
  static result<std::unique_ptr<partition_log>> open(io::file_system& fs, std::string directory,
                                                     log_config config, const base::clock& clock);
  ~partition_log();
  partition_log(const partition_log&) = delete;
  partition_log& operator=(const partition_log&) = delete;

  /// Validates a client batch (codec::validate_batch, max.message.bytes), assigns offsets from
  /// log_end_offset, stamps `epoch` and writes it to the active segment (rolling first when it
  /// would pass segment.bytes or segment.ms). The batch is in the page cache, not durable, until
  /// a flush covers it. A batch of an idempotent producer (producer id >= 0) is first checked
  /// against the producer state (producer_state::check): a retry of one of its last 5 batches is
  /// answered with the original offsets and `duplicate` set, and not written again.
  /// Errors: corrupt_message, message_too_large, kafka_storage_error, too_many_segments,
  /// out_of_order_sequence_number, invalid_producer_epoch, too_many_producers.
  result<append_result> append(model::bytes batch, model::leader_epoch epoch);

  /// The leader's transaction marker (KIP-98): appends a control batch of `producer_id` /
  /// `producer_epoch` holding `marker` at log_end_offset, in leader epoch `epoch`. It ends the
  /// producer's open transaction (if any; a retried marker is stored again, as Kafka does); an
  /// abort adds the transaction to the aborted-transaction index. Not durable until a flush.
  /// Errors: invalid_producer_epoch, transaction_coordinator_fenced (producer_state::check_marker),
  /// kafka_storage_error, too_many_segments.
  result<append_result> append_marker(model::producer_id producer_id, model::producer_epoch producer_epoch,
                                      codec::control_record marker, model::leader_epoch epoch);

  /// Appends batches read from the partition's leader as they are: their offsets, leader epochs
  /// and CRCs are kept (the follower side of Kafka's replication, design.md section 6).
  /// `batches` holds whole batches in offset order; batches whose last offset is below
  /// log_end_offset are skipped (a repeated fetch), and each kept batch must start at or above
  /// log_end_offset (compaction leaves gaps). The leader epoch cache learns each new epoch.
  /// Not durable until a flush covers it. Returns the offsets of what was appended (base_offset
  /// == last_offset + 1 == log_end_offset when nothing was). Errors: corrupt_message (a batch
  /// fails validation, is cut short, or goes backwards), message_too_large, kafka_storage_error,
  /// too_many_segments.
  result<append_result> append_replicated(std::span<const std::byte> batches);

  /// Records that `epoch` starts at log_end_offset (a new leader does this before its first
  /// append, as Kafka's leader epoch cache does, so that followers of an older epoch learn
  /// where it ended: KIP-101). Nothing when the cache already has `epoch` or a newer one.
  /// Errors: kafka_storage_error (the checkpoint could not be written).
  result<void> begin_leader_epoch(model::leader_epoch epoch);

  /// Makes every append so far durable (fdatasync of each dirty segment and its directory
  /// entries), then advances the recovery point. Blocking.
  result<void> flush();
  /// Group commit: `done` runs (from executor.poll()) once every append made before this call is
  /// durable. Appends made while an fdatasync is in flight join the next one.
  void flush_async(io::disk_executor& executor, std::function<void(result<void>)> done);

  /// Reads whole batches from the one holding `start` up to about `max_bytes` (at least one batch
  /// is returned if any exists below `max_offset`, even when larger), never a batch whose base
  /// offset is >= `max_offset` (exclusive; pass the high watermark for consumers).
  /// Stored damage (a batch header that does not decode, a batch running past its segment's end)
  /// ends the read before it; a read whose first batch is damaged fails. The batches' CRCs are
  /// not checked here (the reader does: decode, or a Kafka client). Nothing stored is changed.
  /// Errors: offset_out_of_range (the message names log_start_offset and log_end_offset),
  /// corrupt_message (the first batch is damaged: the message names segment and file position).
  result<read_result> read(model::offset start, size_t max_bytes, model::offset max_offset);
  /// The batches read() would return, as file ranges instead of bytes: the same batches, limits
  /// and errors, but only the headers are read. Each range holds its segment's file open
  /// (io::file_range), so it stays valid when retention deletes the segment meanwhile. Batches
  /// below `max_offset` (the high watermark, or the last stable offset) are never truncated
  /// away, so the bytes of a range do not change while it is held.
  result<file_read_result> read_file_ranges(model::offset start, size_t max_bytes, model::offset max_offset);

  /// The earliest readable offset (>= log_start_offset) whose record timestamp is >= `timestamp`,
  /// with that record's timestamp (Kafka ListOffsets by time), or nullopt when no record has such
  /// a timestamp. Records in one batch may carry non-monotonic timestamps; offset order decides.
  result<std::optional<timestamp_lookup>> offset_for_timestamp(model::timestamp_ms timestamp);

  /// Removes every record at or above `new_log_end_offset` (replication: KIP-101 truncation).
  result<void> truncate_to(model::offset new_log_end_offset);
  /// Kafka's truncateFullyAndStartAt: removes every segment and starts an empty log at
  /// `new_start_offset` (which may lie above log_end_offset): a replica whose log ends below the
  /// leader's log start replaces it by a snapshot (KIP-630). Durable when it returns.
  /// Errors: kafka_storage_error.
  result<void> truncate_fully_and_start_at(model::offset new_start_offset);
  /// Raises the log start offset (DeleteRecords / retention); deletes segments entirely below it.
  result<void> advance_log_start_offset(model::offset new_log_start_offset);
  /// Idempotent producer state (producer_state.h), rebuilt on open from the newest valid snapshot
  /// at or below log_end_offset plus the batches after it, kept in step by every append and
  /// truncation. Producers stay known when retention deletes the segments that held their
  /// batches, until producer.id.expiration.ms passes (apply_retention forgets them).
  [[nodiscard]] const producer_state& producers() const { return producers_; }
  /// The first offset of the oldest open transaction (nullopt: none is open).
  [[nodiscard]] std::optional<model::offset> first_unstable_offset() const { return producers_.first_unstable_offset(); }
  /// first_unstable_offset, or the first offset of an ended transaction whose marker is at or
  /// above the high watermark when that is older (unreplicated_txn_ends_).
  [[nodiscard]] std::optional<model::offset> first_undecided_offset() const;
  /// The last stable offset (KIP-98; txn_index.h last_stable_offset_of): read_committed readers
  /// read below it. <= high_watermark, == high_watermark with no open transaction. A transaction
  /// ended by a marker at or above the high watermark still holds it (first_undecided_offset).
  [[nodiscard]] model::offset last_stable_offset() const {
    return last_stable_offset_of(first_undecided_offset(), high_watermark_, log_start_offset_);
  }
  /// The aborted transactions that overlap offsets [start, upper): last_offset >= start and
  /// first_offset < upper, ascending by first_offset (Kafka's collectAbortedTransactions).
  [[nodiscard]] std::vector<aborted_txn_entry> aborted_transactions(model::offset start, model::offset upper) const;
  /// Every aborted transaction indexed, ascending by last_offset (tests, dump-log).
  [[nodiscard]] std::vector<aborted_txn_entry> aborted_transactions() const;
  /// Offsets of the snapshot files present, ascending.
  [[nodiscard]] std::vector<model::offset> producer_snapshots() const;

  /// Deletes whole closed segments past retention.ms or beyond retention.bytes, first rolling an
  /// active segment that is itself past retention.ms (or idle, see roll_if_idle). Returns the
  /// number of segments deleted. A segment's age is measured from its largest record timestamp,
  /// clamped so that timestamps in the future count as "appended now" and timestamps already
  /// older than retention.ms when appended count as their append time.
  result<size_t> apply_retention();
  /// Closes the active segment and starts a new one at log_end_offset (if the active one is not empty).
  result<void> roll();
  /// Rolls a non-empty active segment whose first append is at least log_config::max_segment_ms
  /// old (segment.ms, or max.compaction.lag.ms when smaller on a compacted log) although nothing
  /// was appended since: appends roll it themselves. Returns whether it rolled. apply_retention
  /// calls it; the broker also calls it for compacted logs at every cleaner tick
  /// (log.cleaner.backoff.ms), so that an idle log's last records reach the cleaner.
  result<bool> roll_if_idle();

  /// Writes the four checkpoint files (recovery point, high watermark, log start offset, leader
  /// epochs), those whose contents changed since this log last wrote them, with one directory
  /// sync. The broker calls it periodically; close() and retention call it too.
  result<void> checkpoint();

  /// Flushes, writes all checkpoints and the clean-shutdown marker. The log is unusable after.
  result<void> close();

  void set_config(log_config config);
  [[nodiscard]] const log_config& config() const { return config_; }

  [[nodiscard]] model::offset log_start_offset() const { return log_start_offset_; }
  [[nodiscard]] model::offset log_end_offset() const { return log_end_offset_; }
  [[nodiscard]] model::offset recovery_point() const { return recovery_point_; }
  [[nodiscard]] model::offset high_watermark() const { return high_watermark_; }
  /// Sets the high watermark; clamped to [log_start_offset, log_end_offset]; never moves back
  /// unless truncate_to cut below it.
  void set_high_watermark(model::offset hw);
  /// Largest offset known durable on this replica (< this offset is fsynced).
  [[nodiscard]] model::offset durable_offset() const { return recovery_point_; }

  /// Leader epoch cache (KIP-101): the start offset of each epoch seen.
  [[nodiscard]] const std::map<int32_t, model::offset>& leader_epochs() const { return epochs_; }
  /// End offset of `epoch` (start offset of the next larger epoch, or log_end_offset), and the
  /// largest epoch <= `epoch` (KIP-279 OffsetsForLeaderEpoch). nullopt when unknown.
  [[nodiscard]] std::optional<std::pair<model::leader_epoch, model::offset>> end_offset_for_epoch(
      model::leader_epoch epoch) const;

  [[nodiscard]] uint64_t size_bytes() const;
  [[nodiscard]] std::vector<segment_info> segments() const;
  [[nodiscard]] const recovery_report& last_recovery() const { return recovery_; }
  [[nodiscard]] const std::string& directory() const { return directory_; }
  /// Ok while the log serves reads and appends; kafka_storage_error after a failed fdatasync
  /// (the log directory is not trusted any more) or once closed.
  [[nodiscard]] result<void> check_usable() const;
  /// Where this log reports a failed write, fdatasync, segment roll, checkpoint, truncation or
  /// segment deletion (log_dir_failure.h; Kafka's LogDirFailureChannel), besides returning it as
  /// kafka_storage_error as always. Reads of stored data that does not decode are not reported.
  /// `channel` (nullptr: none, as after open) must outlive the log.
  void report_failures_to(log_dir_failure_channel* channel) { failure_channel_ = channel; }
  /// Charges this log's sealed segments (one open .log each) to the broker's `budget`
  /// (segment_file_budget.h), those on disk now even past its limit; from then on a roll that
  /// would pass the limit is not made: a roll for segment.ms is skipped (the active segment keeps
  /// growing), a roll the log needs (segment.bytes, a full offset index) refuses the append with
  /// too_many_segments. nullptr (as after open): no budget. `budget` must outlive the log.
  void charge_segments_to(segment_file_budget* budget);

 private:
  friend class log_cleaner;   // compaction rewrites closed segments in place (log_cleaner.h)
  partition_log(io::file_system& fs, std::string directory, log_config config, const base::clock& clock);
  result<void> load();
  result<void> recover_segment(segment& seg);
  /// Rolls to a new active segment at `base`; a failure is reported ("segment roll").
  /// `forced`: charged to the segment budget even past its limit (the caller deletes the
  /// segments below at once: retention of an expired active segment, a log start at the end).
  result<void> roll_at(model::offset base, bool forced = false);
  result<void> roll_segment_at(model::offset base);
  /// The segment budget has room for one more sealed segment (or there is none); when not, the
  /// refusal is counted and, rate-limited, logged (segment_file_budget::refused).
  bool segment_budget_has_room();
  /// Takes the budget's file for the segment a roll seals; false when it is used up.
  bool take_segment_file(bool forced);
  /// Charges the budget exactly this log's sealed segments (after segments came or went).
  void settle_segment_budget();
  /// The cleaner's swap: the segments at `bases` go, `fresh` takes their place at `base`.
  void replace_segments(const std::vector<model::offset>& bases, model::offset base, std::unique_ptr<segment> fresh);
  /// A failed write: the log is not served any more (failure_), and the channel hears of it.
  error fail(std::string_view operation, const error& e);
  /// Reports `e` to the channel when it is a kafka_storage_error of a write (not one of a closed
  /// log: check_usable's "closed" is no disk failure).
  void report_write_failure(std::string_view operation, const error& e);
  /// Passes `r` through, reporting its error as report_write_failure does.
  template <typename T>
  result<T> reported(std::string_view operation, result<T> r);
  result<void> truncate_segments_to(model::offset new_log_end_offset);
  result<void> truncate_fully(model::offset new_start_offset);
  result<void> advance_log_start(model::offset new_log_start_offset);
  result<size_t> delete_by_retention();
  result<void> write_checkpoints();
  result<void> close_files();
  /// Before segments change other than by the cleaner's swap: a cleaner's `.swap` file that
  /// exists while the segments it replaces are all still there (log_cleaner.h, steps b to c) is
  /// removed and the directory synced, so that the swap can never be completed by recovery over
  /// segments changed since. The swap is rolled back; the cleaner's next pass cleans again.
  /// Errors: kafka_storage_error (the log then refuses further use).
  result<void> roll_back_pending_swap();
  /// Rolls the active segment when a batch of `batch_bytes` whose offsets end `last_offset_delta`
  /// past `base` would pass segment.bytes, segment.ms, the index size or the 32-bit offset range.
  result<void> roll_if_needed(size_t batch_bytes, model::offset base, int32_t last_offset_delta, int64_t now_ms);
  /// The active segment's first append is max_segment_ms() or more before `now_ms` (segment.ms,
  /// or max.compaction.lag.ms when smaller on a compacted topic: KIP-354).
  [[nodiscard]] bool active_past_segment_ms(int64_t now_ms) const;
  /// The walk shared by read() and read_file_ranges(): calls `take(segment, batch)` for each whole
  /// batch from the one holding `start`, below `max_offset`, while `taken_bytes + batch size`
  /// stays within `max_bytes` (the first batch always), ending before stored damage (read()).
  /// Errors: offset_out_of_range, corrupt_message (damage at the first batch), storage.
  result<model::offset> walk_batches(model::offset start, size_t max_bytes, model::offset max_offset,
                                     const std::function<result<void>(segment&, const located_batch&)>& take);
  /// Writes one validated batch (offsets and epoch already set) to the active segment.
  result<append_result> write_batch(std::span<const std::byte> batch, const codec::batch_header& header, int64_t now_ms);
  result<void> delete_segment_front();
  /// Loads the newest valid snapshot at or below log_end_offset (deleting those above it and
  /// those that fail their checks) and replays the batches after it.
  /// `snapshot_limit`: snapshots above it are not used (a corrupt .txnindex of the segment at
  /// that base must be rebuilt by replaying from there). Aborted-transaction entries whose
  /// marker is at or past the replay start are dropped and rebuilt by the replay.
  result<void> rebuild_producer_state(model::offset snapshot_limit = model::offset{INT64_MAX});
  /// The leader epochs (epochs_) from the batches' partition leader epochs, when
  /// leader-epoch-checkpoint did not parse. Errors: kafka_storage_error reading a segment.
  result<void> rebuild_leader_epochs();
  /// load()'s segments: each of `bases` (sorted) opened, its indexes loaded (clean shutdown, or
  /// below `recovery_point_checkpoint`) or its batches recovered, strays and everything after a
  /// gap or a cut removed, each removal and cut a line in recovery_.warnings.
  result<void> open_segments(const std::vector<model::offset>& bases, model::offset recovery_point_checkpoint,
                             int64_t now);
  /// Stores the outcome of a batch written at its offsets: producer state (a control batch of a
  /// producer ends its transaction: `marker`), and an abort's index entry (not yet on disk:
  /// `*index_changed` is set).
  void apply_to_producer_state(const codec::batch_header& header, const std::optional<codec::control_record>& marker,
                               int64_t now_ms, bool* index_changed);
  /// The transaction marker of a control batch of a producer (nullopt for any other batch).
  /// Errors: corrupt_message (a transactional control batch without a readable marker).
  static result<std::optional<codec::control_record>> marker_of(std::span<const std::byte> batch,
                                                                const codec::batch_header& header);
  /// Loads every `.txnindex` file into aborted_txns_; returns the lowest segment base whose file
  /// was corrupt (removed), INT64_MAX when none.
  result<model::offset> load_txn_index();
  /// Rewrites the `.txnindex` file of each segment with base >= `from_base` whose entries
  /// differ from the file (removing files left without entries and files of no segment).
  result<void> write_txn_index_files(model::offset from_base);
  /// Writes `<offset>.snapshot` of the current producer state (covering batches below `offset`).
  result<void> write_producer_snapshot(model::offset offset);
  /// Removes snapshot files for which `drop(offset)` holds.
  result<void> remove_producer_snapshots(const std::function<bool(model::offset)>& drop);
  result<void> note_epoch(model::leader_epoch epoch, model::offset start);
  void start_async_sync(io::disk_executor& executor);
  segment& active() { return *segments_.rbegin()->second; }
  std::string checkpoint_key() const;

  io::file_system& fs_;
  std::string directory_;
  log_config config_;
  const base::clock& clock_;
  std::map<model::offset, std::unique_ptr<segment>> segments_;
  model::offset log_start_offset_{0};
  model::offset log_end_offset_{0};
  model::offset recovery_point_{0};
  model::offset high_watermark_{0};
  std::map<int32_t, model::offset> epochs_;
  producer_state producers_;
  /// Transactions ended here by a marker the high watermark has not passed yet: marker offset ->
  /// the transaction's first offset. A new leader may not have such a marker (it is cut with
  /// the unreplicated tail), and then the transaction is open again there, so until the marker
  /// is below the high watermark it does not move the last stable offset: Kafka's
  /// ProducerStateManager unreplicatedTxns. Found by tests/sim/cluster_sim (seed 141, --nodes 5
  /// --transactions --reassignment: the last stable offset went backwards across a failover).
  /// Rebuilt with the producer state from its snapshot on (markers before the snapshot are not).
  std::map<int64_t, model::offset> unreplicated_txn_ends_;
  /// Aborted transactions by the offset of their abort marker (last_offset). Bounded by the
  /// log: one entry (34 bytes) per abort marker stored, dropped with its segment.
  std::map<int64_t, aborted_txn_entry> aborted_txns_;
  /// The text last written to each checkpoint file (recovery point, high watermark, log start
  /// offset, leader epochs), so checkpoint() rewrites only what changed; nullopt: not known.
  std::array<std::optional<std::string>, 4> written_checkpoints_;
  recovery_report recovery_;
  // group commit state
  bool sync_in_flight_ = false;
  std::vector<std::function<void(result<void>)>> waiting_for_next_sync_;
  bool closed_ = false;
  std::optional<error> failure_;  // a failed write or fdatasync: the log is not served any more
  log_dir_failure_channel* failure_channel_ = nullptr;   // report_failures_to
  segment_file_budget* segment_budget_ = nullptr;         // charge_segments_to
  int64_t segment_files_charged_ = 0;                      // this log's share of segment_budget_
  /// Bumped whenever segments go other than by the cleaner's own swap (retention, truncation,
  /// close): a cleaning pass that runs in steps (log_cleaner.h) checks it before each step and
  /// gives up when it changed, since its planned segments may be gone.
  uint64_t segments_generation_ = 0;
  /// The cleaner's `<base>.log.swap` path from just before its rename (step b) until it starts
  /// removing the old segments (step c); empty otherwise (roll_back_pending_swap).
  std::string pending_swap_path_;
};

}  // namespace ringlog::storage
