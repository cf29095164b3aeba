#pragma once
#include <string_view>

#include "ringlog/base/result.h"
#include "ringlog/io/file.h"

namespace ringlog::storage {

/// Storage failures, named as Kafka's error codes where one exists.
enum class errc {
  offset_out_of_range,     // read/lookup outside [log_start_offset, log_end_offset]
  corrupt_message,         // a batch failed validation (CRC, length, format)
  message_too_large,       // batch larger than max.message.bytes
  invalid_timestamp,       // record timestamp outside the allowed window
  kafka_storage_error,     // disk failure: the log directory must not be served any more
  invalid_config,          // a log config value out of range (message names the key)
  too_many_segments,       // segments_per_partition_max or the broker's segment file budget reached
  too_many_open_files,     // EMFILE / ENFILE: the open-file limit, not a failed disk (retriable)
  // idempotent producers (KIP-98; producer_state.h)
  out_of_order_sequence_number,  // a batch's sequence does not continue its producer's
  invalid_producer_epoch,        // a batch of an older producer epoch than the partition knows (a zombie)
  too_many_producers,            // producers_per_partition_max producers known: a new one is refused
  corrupt_snapshot,              // a producer snapshot file failed its checks (recovery rebuilds instead)
  // transactions (KIP-98; producer_state.h, txn_index.h)
  invalid_txn_state,             // a non-transactional batch of a producer inside an open transaction
  transaction_coordinator_fenced,  // a marker of an older coordinator epoch than the partition knows
  corrupt_txn_index,             // a .txnindex file failed its checks (the log rebuilds it)
  corrupt_checkpoint,            // a checkpoint file's text does not parse (checkpoint.h; the log rebuilds or refuses)
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

/// An I/O error as storage reports it: kafka_storage_error (the disk), or too_many_open_files
/// for EMFILE / ENFILE, whose message names the open-file limit instead of the disk.
error storage_error(const io::error& e);

}  // namespace ringlog::storage
