#pragma once
// Aborted transactions of a partition (KIP-98): Kafka's transaction index, one `<base>.txnindex`
// file per segment (named like the segment's `.log`), listing every transaction whose abort
// marker lies in that segment. read_committed readers use it to skip the records of aborted
// transactions: a Kafka consumer gets the entries that overlap its fetch (FetchResponse
// AbortedTransactions) and drops those records itself; the broker's own read paths (HTTP,
// WebSocket, streams) drop them with aborted_txn_filter below, which is the consumer's algorithm.
//
// File layout, Kafka's byte for byte (kafka.log.AbortedTxn): entries back to back, nothing
// else (no header, no CRC), each 34 bytes, all integers big-endian, in the order the markers
// were appended (last_offset ascending):
//   offset  size  field
//   0       2     version             int16 = 0
//   2       8     producer_id         int64 >= 0
//   10      8     first_offset        int64: the transaction's first record on this partition
//   18      8     last_offset         int64: its abort marker's offset (>= first_offset)
//   26      8     last_stable_offset  int64: the partition's last stable offset once this
//                                     transaction ended (the first offset of the oldest
//                                     transaction still open, else last_offset + 1)
// A file whose size is not a multiple of 34, or holding an unknown version, a negative value,
// first_offset > last_offset or entries out of order, is corrupt: the log drops it and rebuilds
// the entries by replaying the segment's batches (partition_log.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "ringlog/codec/record_batch.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"
#include "ringlog/storage/errc.h"

namespace ringlog::storage {

inline constexpr int16_t txn_index_version = 0;
inline constexpr size_t txn_index_entry_bytes = 34;

/// One aborted transaction (Kafka's AbortedTxn).
struct aborted_txn_entry {
  model::producer_id producer_id{model::no_producer_id};
  model::offset first_offset{0};
  model::offset last_offset{0};
  model::offset last_stable_offset{0};
  bool operator==(const aborted_txn_entry&) const = default;
};

/// The file's bytes for `entries` (layout above). Precondition: each entry valid, in order.
[[nodiscard]] model::bytes encode_txn_index(std::span<const aborted_txn_entry> entries);
/// Parses a `.txnindex` file. Errors: corrupt_txn_index naming the entry and the rule broken.
result<std::vector<aborted_txn_entry>> decode_txn_index(std::span<const std::byte> in);

/// The last stable offset of a partition (KIP-98): the first offset of its oldest open
/// transaction (`first_unstable_offset`), else the high watermark, whichever is lower; never
/// below the log start offset (an open transaction whose first records retention deleted).
/// Kafka's UnifiedLog.lastStableOffset.
[[nodiscard]] model::offset last_stable_offset_of(std::optional<model::offset> first_unstable_offset,
                                                  model::offset high_watermark, model::offset log_start_offset);

/// Drops the records of aborted transactions from a read_committed read, batch by batch, in
/// offset order: Kafka's consumer algorithm (CompletedFetch.nextFetchedRecord). `aborted` are
/// the aborted transactions that overlap the read (partition_log::aborted_transactions).
/// A transactional batch of a producer whose aborted transaction began at or before the batch's
/// last offset is dropped until that producer's abort marker is passed; control batches are
/// never records (keep() is false for them too).
class aborted_txn_filter {
 public:
  explicit aborted_txn_filter(std::vector<aborted_txn_entry> aborted);
  /// Whether the records of the batch with `header` are returned. `marker`: the control record
  /// of a control batch (nullopt for data batches). Call for every batch in offset order.
  bool keep(const codec::batch_header& header, std::optional<codec::control_type> marker);

 private:
  std::vector<aborted_txn_entry> aborted_;   // ascending first_offset
  size_t next_ = 0;                          // aborted_[next_..] not reached yet
  std::set<int64_t> aborted_producers_;      // producers inside an aborted transaction here
};

}  // namespace ringlog::storage
