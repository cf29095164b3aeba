#pragma once
// DeleteRecords (Kafka API 21, KIP-107; broker::delete_records): a partition's leader raises its
// log start offset, its followers raise theirs as their fetch answers carry it
// (partition::replica_fetcher::learn_log_start_offset), and the call waits for the low watermark
// (replication::leader_state::low_watermark, Kafka's DelayedDeleteRecords). record_deletion.cc
// has the code. It reaches the broker only through the references it is built with. Private to
// the broker module.
//
// Shards: the deletion and every look at the low watermark run on the partition's shard.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "metadata.h"
#include "partition.h"
#include "ringlog/base/clock.h"
#include "ringlog/broker/broker.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class record_deletion {
 public:
  /// `metadata`: the views (the topic, its leader, the brokers' fencing); `partition_managers`:
  /// each shard's replicas (partition_managers[i] touched only on shard i's thread); `stopping`:
  /// the broker's stop flag. Every reference outlives this object's calls.
  record_deletion(const metadata_publisher& metadata, int32_t node_id, const base::clock& clock,
                  runtime::shard_runtime& runtime,
                  const std::vector<std::unique_ptr<partition_manager>>& partition_managers,
                  const std::atomic<bool>& stopping);

  /// broker::delete_records (its comment has the rules and errors).
  void delete_records(delete_records_request request, std::function<void(result<delete_records_response>)> done);

 private:
  using done_fn = std::function<void(result<delete_records_response>)>;
  /// The refusals known before the partition's shard is asked: a stopping broker, an unknown
  /// topic or partition, an internal topic, a partition led elsewhere.
  [[nodiscard]] result<void> check_request(const delete_records_request& request) const;
  /// On the partition's shard: raises the leader's log start offset and wakes the followers'
  /// parked fetches; the offset the low watermark must reach, or why not.
  [[nodiscard]] result<model::offset> delete_on_leader(partition_runtime& rt, int64_t requested) const;
  /// On `shard`: answers `done` once the low watermark of `weak` reaches `required`, the
  /// leadership ends (not_leader_or_follower), or `deadline_ms` (clock ms) passes
  /// (request_timed_out); looks again every delete_records_recheck_ms (constants.h).
  void await_low_watermark(size_t shard, std::weak_ptr<partition_runtime> weak, model::offset required,
                           int64_t deadline_ms, done_fn done);
  /// The low watermark of a partition this node leads (replication::leader_state::low_watermark
  /// over the followers on brokers the shard's view holds unfenced).
  [[nodiscard]] model::offset low_watermark(const partition_runtime& rt) const;

  const metadata_publisher& metadata_;
  const int32_t node_id_;
  const base::clock& clock_;
  runtime::shard_runtime& runtime_;
  const std::vector<std::unique_ptr<partition_manager>>& partition_managers_;
  const std::atomic<bool>& stopping_;
  /// Timers hold a weak reference: one that fires after this object is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::broker::detail
