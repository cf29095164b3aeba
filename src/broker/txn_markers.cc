// The transaction coordinator's markers (txn_host::write_markers, which coordinator_partitions
// passes here): the control batches of an ended transaction on each of its partitions
// (write_txn_markers, Kafka's WriteTxnMarkers), and on the groups' __consumer_offsets partitions
// among them the leader (this broker or the one the marker is forwarded to) makes the
// TxnOffsetCommit offsets held pending the groups' committed offsets (or drops them) before it
// answers, as Kafka's group coordinator does when the marker reaches its log.

#include "partition_transactions.h"
#include "ringlog/base/assert.h"

namespace ringlog::broker::detail {

void partition_transactions::write_markers(const txn::marker_request& markers, int32_t coordinator_epoch,
                                           std::function<void(result<txn::partition_set>)> done) {
  if (markers.partitions.empty()) return done(txn::partition_set{});
  txn_marker m;
  m.producer_id = markers.producer_id;
  m.producer_epoch = markers.producer_epoch;
  m.committed = markers.committed;
  m.coordinator_epoch = coordinator_epoch;
  m.partitions.assign(markers.partitions.begin(), markers.partitions.end());
  write_txn_markers({std::move(m)}, [this, markers, done = std::move(done)](result<std::vector<txn_marker_result>> r) {
    if (!r.ok()) return done(r.error());
    RINGLOG_ASSERT_OP(r->size(), ==, size_t{1});
    // A __consumer_offsets partition's leader completed the groups' pending offsets before it
    // answered (write_one_marker), here or on the broker the marker was forwarded to.
    txn::partition_set due;
    for (const auto& pr : r->front().partitions) {
      if (!pr.failure) continue;
      if (pr.failure->code == errc::invalid_producer_epoch) {
        // The partition knows a newer epoch of the producer: a later end (or fencing) is
        // already there, this marker is moot (Kafka's coordinator drops it too).
        log_.info("transaction marker of the " + txn::describe(markers) + " on " + pr.partition.directory_name() +
                  " dropped: " + pr.failure->message);
        continue;
      }
      // A leadership on the move is an ordinary moment (the marker goes to the new leader): info,
      // not error, which operators page on (the breaker of session 32).
      const errc code = pr.failure->code;
      const bool moving = code == errc::not_leader_or_follower || code == errc::request_timed_out ||
                          code == errc::broker_not_available;
      const std::string line = "transaction marker of the " + txn::describe(markers) + " on " +
                               pr.partition.directory_name() + ": " + pr.failure->message + " (retried)";
      moving ? log_.info(line) : log_.error(line);
      due.insert(pr.partition);
    }
    done(std::move(due));
  });
}

}  // namespace ringlog::broker::detail
