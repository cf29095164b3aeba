// The transaction coordinator's markers (txn_host::write_markers): the control batches of an
// ended transaction on each of its partitions (write_txn_markers, Kafka's WriteTxnMarkers),
// then - for the groups' __consumer_offsets partitions among them - the TxnOffsetCommit offsets
// held pending become the groups' committed offsets (or are dropped), as Kafka's group
// coordinator does when the marker reaches its log.

#include "broker_impl.h"

namespace ringlog::broker::detail {

namespace {

/// Collects the partitions still due of one write_markers call (several callbacks, any thread).
struct markers_gather {
  std::mutex mutex;
  size_t remaining = 0;
  txn::partition_set due;
  std::function<void(result<txn::partition_set>)> done;

  void finish_one(std::optional<model::topic_partition> still_due) {
    bool last = false;
    {
      std::lock_guard lock(mutex);
      if (still_due) due.insert(std::move(*still_due));
      last = --remaining == 0;
    }
    if (last) done(std::move(due));
  }
};

}  // namespace

void broker_impl::write_markers(const txn::marker_request& markers, int32_t coordinator_epoch,
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
    auto g = std::make_shared<markers_gather>();
    g->remaining = r->front().partitions.size();
    g->done = done;
    if (g->remaining == 0) return done(txn::partition_set{});
    for (const auto& pr : r->front().partitions) {
      if (pr.failure) {
        if (pr.failure->code == errc::invalid_producer_epoch) {
          // The partition knows a newer epoch of the producer: a later end (or fencing) is
          // already there, this marker is moot (Kafka's coordinator drops it too).
          log_info("transaction marker of the " + txn::describe(markers) + " on " + pr.partition.directory_name() +
                   " dropped: " + pr.failure->message);
          g->finish_one(std::nullopt);
          continue;
        }
        log_error("transaction marker of the " + txn::describe(markers) + " on " + pr.partition.directory_name() +
                  ": " + pr.failure->message + " (retried)");
        g->finish_one(pr.partition);
        continue;
      }
      if (pr.partition.topic != consumer_offsets_topic || !groups_) {
        g->finish_one(std::nullopt);
        continue;
      }
      // The group coordinator of that partition is this broker only when it leads it; another
      // broker's groups are not told here yet (docs/transactions.md): the marker is retried
      // until the partition's leadership is here.
      const model::topic_partition tp = pr.partition;
      groups_->complete_txn_offsets(tp.partition.value(), markers.producer_id, markers.committed,
                                    [this, g, tp, markers](result<void> c) {
                                      if (!c.ok()) {
                                        log_error("transactional offsets of the " + txn::describe(markers) + " on " +
                                                  tp.directory_name() + ": " + c.error().message + " (retried)");
                                        return g->finish_one(tp);
                                      }
                                      g->finish_one(std::nullopt);
                                    });
    }
  });
}

}  // namespace ringlog::broker::detail
