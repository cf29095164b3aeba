#pragma once
// Transaction coordinator failures, named as Kafka's error codes (snake_case), so the broker and
// the front ends translate them once (style.md "Errors").

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::txn {

enum class errc {
  invalid_producer_id_mapping,   // the producer id is not the one this transactional.id holds now
  producer_fenced,               // an older producer epoch: a newer producer (or the coordinator) fenced it
  concurrent_transactions,       // a state change of this transactional.id is being written or its markers are due: retry
  invalid_txn_state,             // the request does not fit the state (EndTxn commit of an aborted one, ...)
  invalid_transaction_timeout,   // transaction.timeout.ms <= 0 or above transaction.max.timeout.ms
  transactional_id_not_found,    // DescribeTransactions / abort of an id this coordinator does not hold
  invalid_request,               // an empty or oversized transactional.id, too many partitions in one transaction
  too_many_transactional_ids,    // limits::transactional_ids_per_partition_max
  producer_id_needed,            // a fresh producer id is needed (first use, epoch exhausted): call again with one
  corrupt_message,               // a __transaction_state record failed to decode (message says where)
  unsupported_version,           // a __transaction_state record has a version this code does not know
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::txn
