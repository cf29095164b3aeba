#pragma once
// The transaction coordinator of one __transaction_state partition (KIP-98, KIP-447, KIP-890;
// modelled on Kafka's TransactionCoordinator and TransactionStateManager): a deterministic state
// machine. It never writes, sends or reads a clock itself: every call takes `now_ms`, and a call
// that changes a transactional.id returns the metadata to make durable. The caller (the broker's
// transaction service) appends record_of(write) to the partition and then calls complete_write;
// while that write is in flight the id answers concurrent_transactions (Kafka's pending state).
// Once a Prepare* state is durable, complete_write returns the markers to write; when they are
// written, markers_written returns the Complete* state to make durable.
//
// Fencing rules (the producer epoch is the fence):
//   - InitProducerId bumps the epoch (a new producer of the same transactional.id fences the
//     old one); an ongoing transaction of the old producer is aborted with the bumped epoch and
//     the caller is told to retry (concurrent_transactions) until the abort completes.
//   - A transaction past its timeout is aborted by the coordinator with a bumped epoch.
//   - KIP-890 part 2 (EndTxn v5+, the HTTP transactions): every transaction end bumps the epoch,
//     so a delayed request of an ended transaction carries an epoch older than the current one
//     and is refused (producer_fenced): it can never end the next transaction (KAFKA-17754).
//     A retried EndTxn of the transaction that bumped it (epoch == last_producer_epoch, same
//     decision, that transaction's Prepare*/Complete* state) is answered with the new epoch.
//   - Older clients (EndTxn v0-v4) keep their epoch across transactions, as Kafka's transaction
//     protocol v1 does: a delayed EndTxn with the same epoch is refused only by the state rules
//     (a commit of a CompleteCommit is a retry, answered ok; a commit of an ongoing next
//     transaction cannot be told apart - the hole KIP-890 closes for clients that bump).

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/txn/errc.h"
#include "ringlog/txn/limits.h"
#include "ringlog/txn/log_codec.h"
#include "ringlog/txn/types.h"

namespace ringlog::txn {

struct coordinator_options {
  int64_t transaction_max_timeout_ms = limits::transaction_max_timeout_ms_default;  // transaction.max.timeout.ms
  int64_t transactional_id_expiration_ms = limits::transactional_id_expiration_ms_default;
  /// KIP-890's rule: clients that support it get a new epoch at every transaction end. Only a
  /// test turns it off (the negative control of the delayed-EndTxn check).
  bool bump_epoch_per_transaction = true;
};

/// What a call decided.
struct outcome {
  /// Metadata to make durable (record_of), then complete_write; nullopt: nothing to write.
  std::optional<txn_metadata> write;
  /// The producer id and epoch to answer with (InitProducerId; EndTxn v5+).
  model::producer_id producer_id{model::no_producer_id};
  model::producer_epoch producer_epoch{model::no_producer_epoch};
  /// After the write, answer concurrent_transactions (InitProducerId aborting the old producer's
  /// transaction: the client retries and gets its epoch once the abort completed).
  bool answer_retry = false;
};

/// One entry of ListTransactions / DescribeTransactions.
struct txn_listing {
  std::string transactional_id;
  model::producer_id producer_id{model::no_producer_id};
  txn_state state = txn_state::empty;
  int64_t txn_start_ms = -1;
};

class transaction_coordinator {
 public:
  explicit transaction_coordinator(coordinator_options options = {}) : options_(options) {}

  /// InitProducerId with a transactional.id. `timeout_ms`: transaction.timeout.ms, in
  /// (0, transaction_max_timeout_ms]. `expected` (KIP-360, v3+): the id and epoch the producer
  /// had, to resume after a timeout abort; a mismatch is producer_fenced. `fresh_id`: a producer
  /// id never handed out; needed for a new transactional.id or an exhausted epoch
  /// (producer_id_needed without one). Errors: invalid_request, invalid_transaction_timeout,
  /// concurrent_transactions, producer_fenced, too_many_transactional_ids, producer_id_needed.
  result<outcome> init_producer_id(const std::string& transactional_id, int32_t timeout_ms,
                                   std::optional<std::pair<model::producer_id, model::producer_epoch>> expected,
                                   std::optional<model::producer_id> fresh_id, int64_t now_ms);

  /// AddPartitionsToTxn / AddOffsetsToTxn (the group's __consumer_offsets partition): adds
  /// `partitions` to the transaction, which becomes ongoing. Nothing to write when every one is
  /// already in an ongoing transaction. Errors: transactional_id_not_found (as
  /// invalid_producer_id_mapping, Kafka's answer), invalid_producer_id_mapping, producer_fenced,
  /// concurrent_transactions, invalid_request (limits::partitions_per_transaction_max).
  result<outcome> add_partitions(const std::string& transactional_id, model::producer_id producer_id,
                                 model::producer_epoch producer_epoch, const partition_set& partitions, int64_t now_ms);

  /// AddPartitionsToTxn v4+ with VerifyOnly (KIP-890 part 1): whether the producer is the
  /// current one of an ongoing transaction that holds `partition`, changing nothing. A partition
  /// leader asks before it appends a producer's first transactional batch of a transaction, so a
  /// late produce of a transaction that already ended cannot open a transaction nobody will end.
  /// Errors: invalid_producer_id_mapping, producer_fenced, invalid_txn_state (not ongoing, ending,
  /// or the partition was not added).
  result<void> verify_partition(const std::string& transactional_id, model::producer_id producer_id,
                                model::producer_epoch producer_epoch, const model::topic_partition& partition) const;

  /// EndTxn. `bump_epoch` (EndTxn v5+, HTTP): KIP-890 part 2. Writes Prepare{Commit,Abort}; the
  /// answer's producer id and epoch are the ones of the next transaction. A retry of an end
  /// already decided the same way is answered without a write. `fresh_id`: needed when a bump
  /// would exhaust the epoch (producer_id_needed without one). Errors:
  /// invalid_producer_id_mapping, producer_fenced, concurrent_transactions, invalid_txn_state,
  /// producer_id_needed.
  result<outcome> end_txn(const std::string& transactional_id, model::producer_id producer_id,
                          model::producer_epoch producer_epoch, bool committed, bool bump_epoch,
                          std::optional<model::producer_id> fresh_id, int64_t now_ms);

  /// An operator's abort (`ringlog transactions abort`, HTTP): an ongoing transaction is aborted
  /// with a bumped epoch, as a timeout does. Errors: transactional_id_not_found,
  /// concurrent_transactions, invalid_txn_state (not ongoing).
  result<outcome> abort_transaction(const std::string& transactional_id, int64_t now_ms);

  /// Ongoing transactions past their timeout, not being written: the PrepareAbort (bumped epoch)
  /// of each, to make durable one by one like any other write (Kafka's
  /// abortTimedOutTransactions). Also ids idle past transactional_id_expiration_ms in Empty or
  /// Complete*: their Dead tombstones.
  std::vector<txn_metadata> expire(int64_t now_ms);

  /// The write of `transactional_id`'s pending metadata finished (`durable`), or failed. On
  /// success the pending metadata becomes current; a Prepare* state returns its markers.
  /// A failed write leaves the previous state (the caller answers the error).
  std::optional<marker_request> complete_write(const std::string& transactional_id, bool durable);

  /// The markers of `transactional_id`'s Prepare* state are all written: the Complete* state to
  /// make durable (then complete_write). Errors: invalid_txn_state when it is not in a Prepare*
  /// state with that epoch (a stale completion after an unload and load).
  result<txn_metadata> markers_written(const std::string& transactional_id, model::producer_epoch producer_epoch,
                                       int64_t now_ms);

  /// Replays one record of the partition's log (key, value or tombstone) in log order.
  /// Errors: corrupt_message, unsupported_version.
  result<void> replay(std::span<const std::byte> key, std::optional<std::span<const std::byte>> value);
  /// After replay: the markers of every transaction left in a Prepare* state (the previous
  /// coordinator wrote the decision; its markers may be missing). Write them again (markers are
  /// idempotent per producer epoch on the partitions), then markers_written.
  [[nodiscard]] std::vector<marker_request> pending_markers() const;

  [[nodiscard]] const txn_metadata* find(const std::string& transactional_id) const;
  /// Every id, filtered as ListTransactions does (empty filters match all; duration_ms >= 0:
  /// only transactions running at least that long).
  [[nodiscard]] std::vector<txn_listing> list(const std::vector<txn_state>& states,
                                              const std::vector<model::producer_id>& producer_ids,
                                              int64_t duration_ms, int64_t now_ms) const;
  [[nodiscard]] size_t size() const { return ids_.size(); }
  [[nodiscard]] bool write_pending(const std::string& transactional_id) const;

 private:
  struct entry {
    txn_metadata current;
    std::optional<txn_metadata> pending;   // being written
  };
  result<entry*> producer_entry(const std::string& transactional_id, model::producer_id producer_id,
                                model::producer_epoch producer_epoch);
  /// `md` moved to PrepareAbort with a bumped epoch (fencing its producer).
  static txn_metadata fenced_abort(const txn_metadata& md, int64_t now_ms);

  coordinator_options options_;
  std::map<std::string, entry> ids_;
};

/// Whether `transactional_id` may name a transaction: 1..limits::transactional_id_bytes_max
/// bytes, no ASCII control character (NUL included: an id names the transaction in logs, HTTP
/// paths and tools; Kafka's STRING allows up to 32767 bytes, ours is bounded lower, see limits.h).
/// Errors: invalid_request naming the length or the byte.
result<void> check_transactional_id(std::string_view transactional_id);

/// A marker request as a record of the state it completes (for messages): "commit of producer 5
/// epoch 3 on 2 partitions".
std::string describe(const marker_request& m);

}  // namespace ringlog::txn
