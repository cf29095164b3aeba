#pragma once
// The transaction calls of the broker (issue 16, design.md section 7; KIP-98, KIP-447, KIP-890).
//
// A transactional.id is coordinated by the leader of partition
// group::coordinator_partition_for(transactional_id, N) of the internal compacted topic
// __transaction_state (N = its partition count, transaction.state.log.num.partitions when it was
// created; Kafka's TransactionStateManager.partitionFor is the same hash as the groups'). Its
// state (txn::txn_metadata) is a record of that partition; a broker that becomes the partition's
// leader replays it and finishes any transaction whose decision was written but whose markers
// may be missing. Every call runs on the partition's shard and is answered once its record is
// durable (acks=all), as Kafka's coordinator answers.
//
// Ending a transaction: EndTxn writes PrepareCommit/PrepareAbort, answers, then writes a marker
// (a control batch) to every partition of the transaction - the group's __consumer_offsets
// partition included, which makes the offsets of TxnOffsetCommit the group's committed offsets
// or drops them - through the partitions' side (write_txn_markers), and then CompleteCommit /
// CompleteAbort. Until then the id answers concurrent_transactions.
//
// Calls are asynchronous like broker.h: `done` runs exactly once on some shard thread.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/broker/errc.h"
#include "ringlog/broker/groups.h"
#include "ringlog/model/types.h"

namespace ringlog::broker {

inline constexpr const char* transaction_state_topic = "__transaction_state";

/// The transaction states by Kafka's names (txn::kafka_name; KIP-664's ListTransactions
/// StateFilters), for front ends that check a filter before they ask.
inline constexpr std::array<std::string_view, 7> transaction_state_names = {
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"};

/// DescribeTransactions' answer for one id.
struct transaction_description {
  std::string transactional_id;
  std::string state;                   // Kafka's name: Empty, Ongoing, PrepareCommit, ... (txn::kafka_name)
  int32_t timeout_ms = 0;
  int64_t txn_start_ms = -1;           // -1: no transaction open
  int64_t last_update_ms = 0;
  model::producer_id producer_id{model::no_producer_id};
  model::producer_epoch producer_epoch{model::no_producer_epoch};
  int32_t coordinator_id = -1;         // the broker coordinating it
  std::vector<model::topic_partition> partitions;   // of the open (or ending) transaction
};

/// ListTransactions' answer for one id.
struct transaction_listing {
  std::string transactional_id;
  model::producer_id producer_id{model::no_producer_id};
  std::string state;
  int64_t txn_start_ms = -1;
  int32_t coordinator_id = -1;
};

struct list_transactions_filter {
  std::vector<std::string> states;               // Kafka's names; empty: every state
  std::vector<model::producer_id> producer_ids;  // empty: every producer
  int64_t duration_ms = -1;                      // >= 0: only transactions open at least this long
};

class txn_api {
 public:
  virtual ~txn_api() = default;

  /// The broker coordinating `transactional_id` now (FindCoordinator key_type 1): the leader of
  /// its __transaction_state partition; -1 while it has none or the topic does not exist yet.
  [[nodiscard]] virtual int32_t coordinator_id(const std::string& transactional_id) const = 0;
  /// Where the calls of `transactional_id` are served now, as group_api::coordinator_route (the
  /// leader of its __transaction_state partition): front ends pass an HTTP transaction call on
  /// to a peer coordinator's listener. Any thread, no I/O.
  [[nodiscard]] virtual group_coordinator_route coordinator_route(const std::string& transactional_id) const = 0;

  /// InitProducerId with a transactional.id: the producer id and a new epoch, fencing every
  /// older producer of the id. An ongoing transaction of the old producer is aborted first
  /// (concurrent_transactions until that completes: retry). `timeout_ms` is
  /// transaction.timeout.ms. `expected` (KIP-360): the id and epoch the producer had.
  /// Errors: not_coordinator, coordinator_load_in_progress, concurrent_transactions,
  /// producer_fenced, invalid_transaction_timeout, invalid_request, throttling_quota_exceeded.
  virtual void init_producer_id(std::string transactional_id, int32_t timeout_ms,
                                std::optional<std::pair<model::producer_id, model::producer_epoch>> expected,
                                std::function<void(result<std::pair<model::producer_id, model::producer_epoch>>)> done) = 0;

  /// AddPartitionsToTxn: `partitions` join the transaction (it becomes Ongoing). Every partition
  /// must exist (unknown_topic_or_partition names the first that does not; none is added then).
  /// Errors: as init_producer_id plus invalid_producer_id_mapping, invalid_txn_state,
  /// unknown_topic_or_partition.
  virtual void add_partitions(std::string transactional_id, model::producer_id producer_id,
                              model::producer_epoch producer_epoch, std::vector<model::topic_partition> partitions,
                              std::function<void(result<void>)> done) = 0;

  /// AddOffsetsToTxn: the group's __consumer_offsets partition joins the transaction, so its
  /// TxnOffsetCommits are committed or dropped by the transaction's marker.
  virtual void add_offsets(std::string transactional_id, model::producer_id producer_id,
                           model::producer_epoch producer_epoch, std::string group_id,
                           std::function<void(result<void>)> done) = 0;

  /// AddPartitionsToTxn VerifyOnly (KIP-890 part 1), at this node's coordinator of the id:
  /// whether `partition` is in the producer's ongoing transaction; changes nothing. Errors:
  /// not_coordinator, coordinator_load_in_progress, invalid_producer_id_mapping, producer_fenced,
  /// invalid_txn_state.
  virtual void verify_partition(std::string transactional_id, model::producer_id producer_id,
                                model::producer_epoch producer_epoch, model::topic_partition partition,
                                std::function<void(result<void>)> done) = 0;

  /// EndTxn. `bump_epoch` (EndTxn v5+, HTTP): the epoch is bumped with the end (KIP-890 part 2)
  /// and the answer is the id and epoch of the next transaction; otherwise they are unchanged.
  virtual void end_txn(std::string transactional_id, model::producer_id producer_id,
                       model::producer_epoch producer_epoch, bool committed, bool bump_epoch,
                       std::function<void(result<std::pair<model::producer_id, model::producer_epoch>>)> done) = 0;

  /// DescribeTransactions of one id (at its coordinator). Errors: not_coordinator,
  /// coordinator_load_in_progress, transactional_id_not_found.
  virtual void describe_transaction(std::string transactional_id,
                                    std::function<void(result<transaction_description>)> done) = 0;
  /// ListTransactions of the ids this broker coordinates (Kafka's is per broker too; an admin
  /// client asks every broker). Unknown state names are ignored (the caller reports them).
  virtual void list_transactions(list_transactions_filter filter,
                                 std::function<void(result<std::vector<transaction_listing>>)> done) = 0;
  /// An operator's abort of an ongoing transaction (kafka-transactions.sh abort, our CLI): the
  /// epoch is bumped (the producer is fenced) and abort markers are written. Errors:
  /// not_coordinator, transactional_id_not_found, invalid_txn_state, concurrent_transactions.
  virtual void abort_transaction(std::string transactional_id, std::function<void(result<void>)> done) = 0;
};

}  // namespace ringlog::broker
