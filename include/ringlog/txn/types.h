#pragma once
// What the transaction coordinator knows of one transactional.id (KIP-98; Kafka's
// TransactionMetadata) and the markers it asks the broker to write.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/model/types.h"

namespace ringlog::txn {

/// Kafka's TransactionState, with its wire ids (the `state` byte of a __transaction_state value).
///   empty            no transaction open (after InitProducerId)
///   ongoing          partitions or group offsets were added; records may be in flight
///   prepare_commit   EndTxn(commit) is durable; commit markers are being written
///   prepare_abort    EndTxn(abort), a fencing InitProducerId or the timeout; abort markers being written
///   complete_commit  every marker is written; the next AddPartitionsToTxn starts a transaction
///   complete_abort   the same after an abort
///   dead             expired (transactional.id.expiration.ms): written as a tombstone, then forgotten
enum class txn_state : int8_t {
  empty = 0,
  ongoing = 1,
  prepare_commit = 2,
  prepare_abort = 3,
  complete_commit = 4,
  complete_abort = 5,
  dead = 6,
};

/// Kafka's names, as DescribeTransactions and ListTransactions report them: "Empty", "Ongoing",
/// "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead".
std::string_view kafka_name(txn_state s);
/// The state of a Kafka name (exact spelling), nullopt for any other text.
std::optional<txn_state> parse_kafka_name(std::string_view name);

struct topic_partition_less {
  bool operator()(const model::topic_partition& a, const model::topic_partition& b) const {
    if (a.topic != b.topic) return a.topic < b.topic;
    return a.partition < b.partition;
  }
};
using partition_set = std::set<model::topic_partition, topic_partition_less>;

struct txn_metadata {
  std::string transactional_id;
  model::producer_id producer_id{model::no_producer_id};
  model::producer_epoch producer_epoch{model::no_producer_epoch};
  /// The epoch before the last bump at a transaction end (KIP-890), -1 when none: a retried
  /// EndTxn of the transaction that bumped it is answered, nothing else of that epoch is.
  model::producer_epoch last_producer_epoch{model::no_producer_epoch};
  int32_t timeout_ms = 0;     // transaction.timeout.ms the producer asked (<= transaction.max.timeout.ms)
  txn_state state = txn_state::empty;
  /// Partitions of the open (or ending) transaction, group offsets partitions included.
  partition_set partitions;
  int64_t txn_start_ms = -1;       // when the open transaction became ongoing, -1 when none
  int64_t last_update_ms = 0;      // when the metadata last changed (expiration of the id)
  /// The transaction is ended by a client that bumps the epoch with every end (EndTxn v5, the
  /// HTTP transactions): its markers carry the bumped epoch.
  bool epoch_bump_per_transaction = false;
  bool operator==(const txn_metadata&) const = default;
};

/// Control batches the broker must write (broker::write_txn_markers) once the Prepare* state is
/// durable: one marker per partition, for `producer_id` with `producer_epoch`.
struct marker_request {
  std::string transactional_id;
  model::producer_id producer_id{model::no_producer_id};
  model::producer_epoch producer_epoch{model::no_producer_epoch};
  bool committed = false;
  partition_set partitions;
};

}  // namespace ringlog::txn
