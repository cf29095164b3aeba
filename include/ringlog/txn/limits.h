#pragma once
// Fixed bounds of the transaction coordinator, each with the reason for its value (style.md
// "Limits"). A refusal because of one of these names the limit in its message.

#include <cstddef>
#include <cstdint>

namespace ringlog::txn::limits {

/// Bytes of a transactional.id: an int16-length string in the __transaction_state key, and a
/// path segment of the HTTP routes.
inline constexpr size_t transactional_id_bytes_max = 1'000;
/// Transactional ids one __transaction_state partition's coordinator holds (each costs its
/// metadata and partition set in memory). Kafka has no bound; ids idle past
/// transactional.id.expiration.ms are removed, so a steady workload stays far below this.
inline constexpr size_t transactional_ids_per_partition_max = 100'000;
/// Partitions (group offsets partitions included) one transaction may touch: every one gets a
/// marker at the end, and the set is one record of __transaction_state.
inline constexpr size_t partitions_per_transaction_max = 10'000;
/// Kafka's transaction.max.timeout.ms default: the longest transaction.timeout.ms a producer may ask.
inline constexpr int64_t transaction_max_timeout_ms_default = 900'000;
/// Kafka's transactional.id.expiration.ms default (7 days): an id idle this long is forgotten.
inline constexpr int64_t transactional_id_expiration_ms_default = 604'800'000;
/// Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms default: how often the
/// coordinator looks for transactions past their timeout.
inline constexpr int64_t abort_timed_out_check_interval_ms_default = 10'000;
/// The last producer epoch handed out before a new producer id is taken (Kafka: Short.MAX_VALUE
/// - 1, so a bump of the last one still fits and markers with epoch + 1 never overflow).
inline constexpr int16_t producer_epoch_max = 32'766;

}  // namespace ringlog::txn::limits
