#pragma once
// The broker side of transactions (transactions.h): one txn::transaction_coordinator per
// __transaction_state partition this node leads, on that partition's shard; the records it
// returns appended there, replay when a leadership begins, the timeout sweep, and the markers of
// ended transactions written through the partitions' side.

#include <memory>
#include <string>
#include <vector>

#include "group_service.h"
#include "ringlog/base/clock.h"
#include "ringlog/broker/broker.h"
#include "ringlog/broker/transactions.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/txn/transaction_coordinator.h"

namespace ringlog::broker {

/// What the broker gives the transaction service: the internal append/read path of an internal
/// topic (shared with the group service, group_host), who leads a partition, and the markers.
class txn_host {
 public:
  virtual ~txn_host() = default;
  [[nodiscard]] virtual size_t owner_shard(const std::string& topic, int32_t partition) const = 0;
  /// Runs on `shard`: appends `records` to internal topic `topic` partition `partition` as one
  /// batch (acks=all); `done` runs on that shard once durable or failed.
  virtual void append_internal_to(const std::string& topic, size_t shard, int32_t partition,
                                  std::vector<model::record> records, std::function<void(result<void>)> done) = 0;
  /// Runs on `shard`: every record of internal topic `topic` partition `partition`, in log order.
  virtual result<std::vector<model::record>> read_internal_from(const std::string& topic, size_t shard,
                                                                int32_t partition) = 0;
  /// Who leads internal topic `topic` partition `partition` (route.where == here: this node).
  [[nodiscard]] virtual group_coordinator_route internal_leader_route(const std::string& topic,
                                                                      int32_t partition) const = 0;
  /// Partitions of `topic` now, -1 when it does not exist.
  [[nodiscard]] virtual int32_t partitions_count(const std::string& topic) const = 0;
  /// Writes the markers of `markers` (a control batch per partition; Kafka's WriteTxnMarkers)
  /// with `coordinator_epoch` (the leader epoch of the coordinator's __transaction_state
  /// partition); `done`, on some shard, with the partitions whose marker is still due (empty:
  /// every one is written; the caller retries the others), or an error of the whole call.
  virtual void write_markers(const txn::marker_request& markers, int32_t coordinator_epoch,
                             std::function<void(result<txn::partition_set>)> done) = 0;
  /// The leader epoch of `topic` partition `partition` as this node knows it (-1 unknown).
  [[nodiscard]] virtual int32_t leader_epoch_of(const std::string& topic, int32_t partition) const = 0;
  virtual void report_error(const std::string& message) const = 0;
};

class txn_service : public txn_api {
 public:
  /// Replays every __transaction_state partition this node leads (one partition a task, on its
  /// shard), starts the timeout sweep, then `done` on the shard of the last partition replayed
  /// (the caller's thread when it leads none). Called once, after partitions are open.
  virtual void start(std::function<void()> done) = 0;
  /// On the partition's shard: this node now leads (`leads`) __transaction_state partition
  /// `partition` and coordinates its transactional ids (replayed from its log), or it stopped.
  virtual void state_partition_led(int32_t partition, bool leads) = 0;
  virtual void stop() = 0;
};

struct txn_service_options {
  int32_t state_partitions = 1;                    // partitions of __transaction_state
  int64_t transaction_max_timeout_ms = txn::limits::transaction_max_timeout_ms_default;
  int64_t transactional_id_expiration_ms = txn::limits::transactional_id_expiration_ms_default;
  int64_t abort_timed_out_check_interval_ms = txn::limits::abort_timed_out_check_interval_ms_default;
};

std::unique_ptr<txn_service> make_txn_service(broker& b, txn_host& host, runtime::shard_runtime& runtime,
                                              const base::clock& clock, txn_service_options options);

}  // namespace ringlog::broker
