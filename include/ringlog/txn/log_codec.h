#pragma once
// Records of the internal compacted topic __transaction_state: one key per transactional.id,
// its latest metadata as the value (the latest value per key wins; a null value deletes).
//
// All integers are big-endian two's complement. `string` = int16 length N (0..32767) then N
// bytes of UTF-8 (Kafka's encoding).
//
// Key (Kafka's TransactionLogKey, version 0, byte for byte):
//   int16  version            = 0
//   string transactional_id
// Value (ringlog's own layout, version 100 so it is never mistaken for Kafka's
// TransactionLogValue v0/v1, which lacks the KIP-890 fields as plain fields):
//   int16  version            = 100
//   int64  producer_id
//   int16  producer_epoch
//   int16  last_producer_epoch      -1: none
//   int32  timeout_ms
//   int8   state                    txn_state's wire id, 0..6
//   int8   flags                    bit 0: epoch_bump_per_transaction; other bits 0
//   int32  topic_count              0..limits::partitions_per_transaction_max, then per topic
//     string topic
//     int32  partition_count        1.., then that many int32 partition ids
//   int64  txn_start_ms             -1: none
//   int64  last_update_ms
// Trailing bytes after a key or value are refused as corrupt (no silent partial reads).

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "ringlog/model/record.h"
#include "ringlog/txn/errc.h"
#include "ringlog/txn/types.h"

namespace ringlog::txn {

inline constexpr int16_t txn_log_key_version = 0;
inline constexpr int16_t txn_log_value_version = 100;

model::bytes encode_txn_log_key(std::string_view transactional_id);
/// Errors: corrupt_message (short, trailing bytes), unsupported_version.
result<std::string> decode_txn_log_key(std::span<const std::byte> key);

model::bytes encode_txn_log_value(const txn_metadata& md);
/// The metadata of `transactional_id` from a value. Errors: corrupt_message (short, trailing
/// bytes, a state or count out of range), unsupported_version.
result<txn_metadata> decode_txn_log_value(std::string_view transactional_id, std::span<const std::byte> value);

/// A record of __transaction_state: key and value (nullopt: tombstone).
struct txn_log_record {
  model::bytes key;
  std::optional<model::bytes> value;
};

/// The record that makes `md` durable: a tombstone for txn_state::dead, else key + value.
txn_log_record record_of(const txn_metadata& md);

}  // namespace ringlog::txn
