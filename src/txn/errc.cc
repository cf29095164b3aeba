#include "ringlog/txn/errc.h"

namespace ringlog::txn {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::invalid_producer_id_mapping: return "invalid_producer_id_mapping";
    case errc::producer_fenced: return "producer_fenced";
    case errc::concurrent_transactions: return "concurrent_transactions";
    case errc::invalid_txn_state: return "invalid_txn_state";
    case errc::invalid_transaction_timeout: return "invalid_transaction_timeout";
    case errc::transactional_id_not_found: return "transactional_id_not_found";
    case errc::invalid_request: return "invalid_request";
    case errc::too_many_transactional_ids: return "too_many_transactional_ids";
    case errc::producer_id_needed: return "producer_id_needed";
    case errc::corrupt_message: return "corrupt_message";
    case errc::unsupported_version: return "unsupported_version";
  }
  return "unknown";
}

}  // namespace ringlog::txn
