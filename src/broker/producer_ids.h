#pragma once
// The broker's producer ids for idempotent producers (KIP-98; Kafka's RPCProducerIdManager): one
// block at a time from the active controller (KIP-730's AllocateProducerIds, answered by
// active_controller::allocate_producer_ids, producer_id_blocks.cc), its ids handed out one by one
// to InitProducerId without a transactional.id and the HTTP producer sessions. A broker that is
// not the controller asks it over the cluster listener, as it does AlterPartition; on a single
// node the one-voter quorum serves the same request on the same code path. Private to the broker
// module.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "active_controller.h"
#include "ringlog/broker/broker.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class producer_id_manager {
 public:
  /// `controller`: this node's active controller (asked when it is the quorum's leader);
  /// `cluster_transport` null: a single node. Every reference outlives this object.
  producer_id_manager(int32_t node_id, active_controller& controller, runtime::shard_runtime& runtime,
                      rpc::transport* cluster_transport, const std::atomic<bool>& stopping);

  /// broker::init_producer_id (any thread): the next id of this broker's block, epoch 0; when the
  /// block is used up the call waits for the next one. Errors: broker_not_available (stopping),
  /// throttling_quota_exceeded (producer_id_waiters_max calls wait already), the controller's
  /// refusal (not_controller: none now or unreachable; retry).
  void init_producer_id(std::function<void(result<producer_identity>)> done);
  /// broker::check_producer_id (any thread): `id` was handed out by this cluster, as far as this
  /// broker knows: below `image_next_producer_id` (its image's) or the end of its own block.
  /// Errors: unknown_producer_id.
  [[nodiscard]] result<void> check_producer_id(model::producer_id id, int64_t image_next_producer_id) const;

 private:
  /// Controller shard: asks the active controller for a block and answers the waiters with it.
  void request_block();
  void on_block(result<std::pair<int64_t, int32_t>> block);

  const int32_t node_id_;
  active_controller& controller_;
  runtime::shard_runtime& runtime_;
  rpc::transport* cluster_transport_;
  const std::atomic<bool>& stopping_;
  mutable std::mutex mutex_;   // guards the members below
  int64_t next_ = 0;           // [next, end): ids of this broker's block not handed out yet
  int64_t end_ = 0;
  bool requesting_ = false;
  std::deque<std::function<void(result<producer_identity>)>> waiters_;   // at most producer_id_waiters_max
};

}  // namespace ringlog::broker::detail
