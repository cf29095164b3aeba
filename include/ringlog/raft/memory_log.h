#pragma once
// The metadata log as the raft node keeps it in memory: a snapshot id (the log's start) followed
// by consecutive entries, plus the epoch cache (epoch -> start offset) that answers Kafka's
// OffsetsForLeaderEpoch question "where does epoch E end?" (KIP-101, KIP-595 fetch validation).
// The metadata log is small and bounded by snapshots, so it fits in memory.

#include <deque>
#include <optional>
#include <vector>

#include "ringlog/raft/types.h"

namespace ringlog::raft {

class memory_log {
 public:
  /// An empty log starting after `snapshot_id` ({0, 0}: no snapshot).
  explicit memory_log(offset_and_epoch snapshot_id = {});

  /// First offset held (= snapshot end offset). Entries below it live only in the snapshot.
  [[nodiscard]] offset log_start_offset() const { return snapshot_id_.end_offset; }
  /// One past the last entry.
  [[nodiscard]] offset log_end_offset() const { return log_start_offset() + static_cast<int64_t>(entries_.size()); }
  /// Epoch of the last entry, or the snapshot's epoch when there is none.
  [[nodiscard]] leader_epoch last_epoch() const;
  /// {log_end_offset, last_epoch}.
  [[nodiscard]] offset_and_epoch end_position() const { return {log_end_offset(), last_epoch()}; }
  [[nodiscard]] offset_and_epoch snapshot_id() const { return snapshot_id_; }
  [[nodiscard]] const std::deque<entry>& entries() const { return entries_; }

  /// The epoch of the entry at `o`, or the snapshot's epoch for o == log_start_offset - 1;
  /// nullopt outside [log_start_offset - 1, log_end_offset).
  [[nodiscard]] std::optional<leader_epoch> epoch_at(offset o) const;
  /// The entry at `o`; requires log_start_offset <= o < log_end_offset.
  [[nodiscard]] const entry& at(offset o) const;

  /// Kafka's endOffsetForEpoch: the largest epoch <= `epoch` this log knows and the end offset
  /// (exclusive) of that epoch. nullopt when `epoch` is below the snapshot's epoch (the answer
  /// lies inside the snapshot).
  [[nodiscard]] std::optional<offset_and_epoch> end_offset_for_epoch(leader_epoch epoch) const;

  /// Appends `e` at the end; requires e.offset_ == log_end_offset and e.epoch >= last_epoch().
  void append(entry e);
  /// Drops entries at offset >= end; requires log_start_offset <= end <= log_end_offset.
  void truncate_suffix(offset end);
  /// Drops entries below `snapshot_id.end_offset`, which must lie in (log_start, log_end] and
  /// match the epoch of the entry below it.
  void delete_prefix(offset_and_epoch snapshot_id);
  /// Replaces everything by an empty log starting after `snapshot_id`.
  void reset(offset_and_epoch snapshot_id);

 private:
  struct epoch_start {
    leader_epoch epoch;
    offset start_offset;
  };
  void rebuild_epoch_cache();

  offset_and_epoch snapshot_id_;
  std::deque<entry> entries_;
  std::vector<epoch_start> epoch_cache_;  // one per epoch present in entries_, ascending
};

}  // namespace ringlog::raft
