#include "ringlog/storage/errc.h"

namespace ringlog::storage {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::offset_out_of_range: return "offset_out_of_range";
    case errc::corrupt_message: return "corrupt_message";
    case errc::message_too_large: return "message_too_large";
    case errc::invalid_timestamp: return "invalid_timestamp";
    case errc::kafka_storage_error: return "kafka_storage_error";
    case errc::invalid_config: return "invalid_config";
    case errc::too_many_segments: return "too_many_segments";
    case errc::too_many_open_files: return "too_many_open_files";
    case errc::out_of_order_sequence_number: return "out_of_order_sequence_number";
    case errc::invalid_producer_epoch: return "invalid_producer_epoch";
    case errc::too_many_producers: return "too_many_producers";
    case errc::corrupt_snapshot: return "corrupt_snapshot";
    case errc::invalid_txn_state: return "invalid_txn_state";
    case errc::transaction_coordinator_fenced: return "transaction_coordinator_fenced";
    case errc::corrupt_txn_index: return "corrupt_txn_index";
    case errc::corrupt_checkpoint: return "corrupt_checkpoint";
  }
  return "unknown";
}

error storage_error(const io::error& e) {
  if (e.code == io::errc::too_many_open_files) {
    return error{errc::too_many_open_files,
                 e.message + " (the process's open-file limit, not the disk: raise it with ulimit -n or systemd's "
                             "LimitNOFILE; sealed segments count against the broker's segment file budget)"};
  }
  return error{errc::kafka_storage_error, e.message};
}

}  // namespace ringlog::storage
