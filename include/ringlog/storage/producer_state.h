#pragma once
// Idempotent producer state of one partition (KIP-98; Kafka's ProducerStateManager and
// ProducerAppendInfo are the reference): per producer id its epoch and the last
// producer_batches_retained batches it appended (first/last sequence, base/last offset,
// timestamp). The leader checks each client batch against it before the append:
//   - a batch equal to one of the retained ones (same epoch, first and last sequence) is a
//     duplicate: it is not stored again and is answered with the original offsets (Kafka answers
//     the retry of a DUPLICATE_SEQUENCE_NUMBER batch with success and the first offsets);
//   - an epoch below the producer's is invalid_producer_epoch (a zombie, KIP-588);
//   - a new epoch must start at sequence 0, the same epoch must continue at last sequence + 1
//     (wrapping after INT32_MAX to 0): otherwise out_of_order_sequence_number;
//   - a producer id with no state here is accepted at any sequence (Kafka since KIP-360: its
//     state may have been removed with the segments that held it). When
//     producers_per_partition_max producers are known already, storing its batch forgets the
//     least recently used idle producer (no open transaction; the lowest last_append_offset, the
//     offset of its last batch or marker). The order is the log's own, never a client's record
//     timestamps: a producer whose batches carry old CreateTime timestamps is as recent as its
//     last append (the breaker of session 38 had a live producer with 2020 timestamps evicted
//     and its retry stored twice), and every replica and every recovery rebuilds the same order
//     from the same offsets. Only when every known producer is inside an open transaction is the
//     new one refused (too_many_producers).
// Followers and recovery call update() for every stored batch, without checks, so every replica
// rebuilds the same state from the log (the same eviction included). Producers whose last batch
// is older than producer.id.expiration.ms are forgotten by remove_expired().
//
// Transactions (KIP-98; Kafka's ProducerStateEntry.currentTxnFirstOffset and ongoingTxns):
// a transactional batch opens its producer's transaction on this partition at its base offset
// unless one is open already; a control batch (a commit or abort marker) ends it. While a
// transaction is open the producer may only send transactional batches (invalid_txn_state);
// a marker of an older producer epoch is refused (invalid_producer_epoch), one of an older
// coordinator epoch too (transaction_coordinator_fenced). A marker may bump the epoch (KIP-890:
// the coordinator ends every transaction in a new epoch): the producer's next batch then starts
// at sequence 0 and its older epoch stays fenced. first_unstable_offset() is the first offset of
// the oldest open transaction: the partition's last stable offset lies below it (txn_index.h).
// Producers with an open transaction never expire here (the coordinator times them out).
//
// Snapshot file `<offset, 20 digits>.snapshot` beside the segments (Kafka's name; our own byte
// layout, all integers big-endian), holding the state of every batch below `snapshot_offset`:
//   offset  size  field
//   0       2     version           int16 = 3 (versions 2 and 1 are still read: see below)
//   2       4     crc               uint32 CRC-32C of bytes [6, end)
//   6       8     snapshot_offset   int64: the state covers every batch with offsets below it
//   14      4     producer_count    int32, [0, producers_per_partition_max]
//   18      ...   producers, ascending by producer id, each:
//                   8  producer_id               int64 >= 0
//                   2  producer_epoch            int16 >= 0
//                   4  coordinator_epoch         int32 (-1: no marker seen)
//                   8  current_txn_first_offset  int64 (-1: no open transaction)
//                   8  last_timestamp            int64 ms (expiration reads it)
//                   8  last_append_offset        int64 >= -1: its last batch's or marker's last
//                                                offset (eviction's order); version 3 on
//                   1  batch_count               int8, [0, producer_batches_retained]
//                   per batch, oldest first (28 bytes):
//                     4 first_sequence int32 >= 0, 4 last_sequence int32 >= 0,
//                     8 base_offset int64 >= 0, 4 last_offset_delta int32 >= 0,
//                     8 timestamp int64 (ms)
// Version 2 (before session 38) lacks last_append_offset: it reads as the newest retained
// batch's last offset, or -1 (evicted first) for a producer known only by a marker.
// Version 1 (before transactions) has per producer only producer_id, producer_epoch and
// batch_count in [1, producer_batches_retained] before the batches; it reads as no open
// transaction, coordinator epoch -1, the newest batch's timestamp as last_timestamp and its last
// offset as last_append_offset.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <utility>

#include "ringlog/codec/record_batch.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"
#include "ringlog/storage/errc.h"

namespace ringlog::storage {

/// Batches remembered per producer: Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN. Clients
/// keep at most 5 requests in flight per connection with idempotence on
/// (max.in.flight.requests.per.connection <= 5), so a retry is always one of the last 5.
inline constexpr size_t producer_batches_retained = 5;
/// Producers one partition remembers at most (each costs about 250 bytes in memory and in every
/// snapshot). Kafka has no bound but expires idle producers (producer.id.expiration.ms); 10,000
/// live producers writing to one partition is far beyond what a partition serves, and it bounds
/// a snapshot to about 2.5 MB. A new producer past it takes the place of the least recently used
/// idle one (its retries are then accepted as new batches, as after Kafka's expiration); only
/// when all of them are inside open transactions is it refused with too_many_producers (clients
/// see THROTTLING_QUOTA_EXCEEDED, as with KIP-936).
inline constexpr size_t producers_per_partition_max = 10'000;
/// Version written in snapshot files (3: last_append_offset; 2: transactions); versions 2 and 1
/// are still read.
inline constexpr int16_t producer_snapshot_version = 3;
inline constexpr int16_t producer_snapshot_version_v2 = 2;
inline constexpr int16_t producer_snapshot_version_v1 = 1;
inline constexpr size_t producer_snapshot_header_bytes = 18;
inline constexpr size_t producer_snapshot_batch_bytes = 28;
inline constexpr size_t producer_snapshot_producer_bytes = 39;      // before its batches
inline constexpr size_t producer_snapshot_producer_bytes_v2 = 31;   // before its batches
inline constexpr size_t producer_snapshot_producer_bytes_v1 = 11;   // before its batches

/// One retained batch of a producer.
struct producer_batch {
  model::sequence first_sequence{0};
  model::sequence last_sequence{0};
  model::offset base_offset{0};
  model::offset last_offset{0};
  model::timestamp_ms timestamp = model::no_timestamp;   // the batch's max timestamp (or append time)
  bool operator==(const producer_batch&) const = default;
};

struct producer_entry {
  model::producer_epoch epoch{model::no_producer_epoch};
  /// Oldest first, 0..producer_batches_retained (none after a marker that bumped the epoch, or
  /// for a producer seen only through a marker).
  std::deque<producer_batch> batches;
  /// The coordinator epoch of the last marker seen (-1: none), Kafka's coordinatorEpoch.
  int32_t coordinator_epoch = -1;
  /// The first offset of the producer's open transaction here (Kafka's currentTxnFirstOffset).
  std::optional<model::offset> current_txn_first_offset;
  model::timestamp_ms last_timestamp_ms = model::no_timestamp;   // of its last batch or marker
  /// The last offset of its last stored batch or marker (-1: unknown, from a version 2 snapshot
  /// of a producer known only by a marker). The broker's append order: eviction takes the lowest.
  int64_t last_append_offset = -1;
  [[nodiscard]] model::timestamp_ms last_timestamp() const { return last_timestamp_ms; }
  bool operator==(const producer_entry&) const = default;
};

/// A transaction a marker ended (Kafka's CompletedTxn).
struct completed_txn {
  model::producer_id producer_id{model::no_producer_id};
  model::offset first_offset{0};   // the transaction's first batch here
  model::offset last_offset{0};    // the marker's offset
  bool aborted = false;
  bool operator==(const completed_txn&) const = default;
};

/// The sequence of the last record of a batch whose first record has `base_sequence` and whose
/// records span `last_offset_delta` offsets; wraps from INT32_MAX to 0 (Kafka's
/// DefaultRecordBatch.incrementSequence).
model::sequence last_sequence_of(model::sequence base_sequence, int32_t last_offset_delta);

class producer_state {
 public:
  /// Checks a client batch of an idempotent producer (producer id >= 0) before the leader
  /// appends it. Returns the retained batch when `header` repeats it (a duplicate: answer its
  /// offsets, store nothing), nullopt when the batch is new and in order. Batches without a
  /// producer id are always nullopt. Errors: invalid_producer_epoch, out_of_order_sequence_number,
  /// too_many_producers, corrupt_message (producer id without epoch or sequence); each message
  /// names the producer, the expected and the received values.
  [[nodiscard]] result<std::optional<producer_batch>> check(const codec::batch_header& header) const;

  /// Checks a transaction marker the leader is about to write for `producer_id` (Kafka's
  /// ProducerAppendInfo.appendEndTxnMarker checks). Errors: invalid_producer_epoch (an epoch
  /// below the producer's), transaction_coordinator_fenced (a coordinator epoch below the last
  /// marker's), corrupt_message (a negative producer id or epoch).
  [[nodiscard]] result<void> check_marker(model::producer_id producer_id, model::producer_epoch epoch,
                                          int32_t coordinator_epoch) const;

  /// Records a stored data batch (its offsets final): the leader after check(), followers and
  /// recovery for each batch they store. Batches without a producer id are ignored; a
  /// transactional batch opens its producer's transaction at its base offset when none is open.
  /// Control batches go to end_txn instead (ignored here). `append_time_ms` stands in for a
  /// batch without a max timestamp.
  void update(const codec::batch_header& header, model::timestamp_ms append_time_ms);

  /// Records a stored control batch `header` holding `marker`: ends its producer's open
  /// transaction (returned; nullopt when none was open: a retried marker) and takes the
  /// marker's producer epoch (a higher one resets the sequences) and coordinator epoch.
  std::optional<completed_txn> end_txn(const codec::batch_header& header, const codec::control_record& marker,
                                       model::timestamp_ms append_time_ms);

  /// The first offset of the oldest open transaction (nullopt: none is open).
  [[nodiscard]] std::optional<model::offset> first_unstable_offset() const {
    if (ongoing_.empty()) return std::nullopt;
    return model::offset{ongoing_.begin()->first};
  }
  /// Open transactions: first offset -> producer id, ascending.
  [[nodiscard]] const std::map<int64_t, int64_t>& ongoing_transactions() const { return ongoing_; }

  /// Forgets producers whose last batch timestamp is at least `expiration_ms` before `now_ms`
  /// (producer.id.expiration.ms; Kafka's removeExpiredProducers). Returns how many went.
  size_t remove_expired(int64_t now_ms, int64_t expiration_ms);

  void clear() {
    producers_.clear();
    ongoing_.clear();
    idle_.clear();
  }
  [[nodiscard]] const std::map<int64_t, producer_entry>& producers() const { return producers_; }
  [[nodiscard]] const producer_entry* find(model::producer_id id) const;

  /// The snapshot file's bytes (layout above) for state that covers batches below `offset`.
  [[nodiscard]] model::bytes encode_snapshot(model::offset offset) const;
  /// Parses a snapshot file of version 3, 2 or 1. Errors: corrupt_snapshot (cut short, CRC
  /// mismatch, unknown version, a count or value out of range, bytes after the last producer).
  static result<std::pair<model::offset, producer_state>> decode_snapshot(std::span<const std::byte> in);

  bool operator==(const producer_state&) const = default;

 private:
  std::map<int64_t, producer_entry> producers_;
  /// Open transactions, first offset -> producer id (Kafka's ongoingTxns): mirrors
  /// producers_[id].current_txn_first_offset so first_unstable_offset() is one lookup.
  std::map<int64_t, int64_t> ongoing_;
  /// Producers without an open transaction, least recently appended first: (last_append_offset,
  /// producer id). Mirrors producers_ so eviction takes the oldest in O(log n).
  std::set<std::pair<int64_t, int64_t>> idle_;

  /// The entry of `id` and whether it is new; an existing one leaves idle_ until reindex().
  std::pair<producer_entry*, bool> touch(int64_t id);
  /// Puts `id` back in idle_ when it has no open transaction (after its entry changed).
  void reindex(int64_t id, const producer_entry& entry);
  /// Past producers_per_partition_max: forgets the least recently used idle producer other than
  /// `added` (just created); `added` itself only when no other is idle and it is. Inside open
  /// transactions nothing is forgotten (the leader's check() refused that case already).
  void make_room(int64_t added);
};

}  // namespace ringlog::storage
