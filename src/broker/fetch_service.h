#pragma once
// Fetch and list offsets (a class of its own since issue 28; fetch.cc): fetches routed to their
// partitions (the reads and the parking are partition.cc's, the deadlines of parked fetches
// partition_manager.cc's), and offsets by time or position. A call for a partition another broker
// leads goes to the leader_forwarder; one this node leads is served on the partition's shard.
// Kafka's counterpart: ReplicaManager.fetchMessages, and handleListOffsetRequest. It reaches the
// rest of the broker only through the references it is given, never through broker_impl.
// Private to the broker module.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "leader_forwarder.h"
#include "metadata.h"
#include "metadata_publisher.h"
#include "partition.h"
#include "ringlog/broker/broker.h"
#include "ringlog/partition/partition_manager.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class admin_manager;

class fetch_service {
 public:
  /// `publisher`: the metadata views; `admin`: check_partition_exists; `forwarder`: calls for
  /// partitions led elsewhere, and the wait for a replica not opened yet; `partition_managers`:
  /// each shard's replicas (partition_managers[i] touched only on shard i); `node_id`: node.id;
  /// `stopping`: the broker's stop flag (a set flag refuses new reads). Every reference outlives
  /// this object.
  fetch_service(const metadata_publisher& publisher, const admin_manager& admin, leader_forwarder& forwarder,
                runtime::shard_runtime& runtime,
                const std::vector<std::unique_ptr<partition_manager>>& partition_managers, int32_t node_id,
                const std::atomic<bool>& stopping);

  /// fetch and list_offsets once the topic is known or the metadata barrier passed
  /// (metadata_barrier.h): served here when this node leads the partition, else forwarded to
  /// its leader. Errors: broker_not_available (stopping), unknown_topic_or_partition,
  /// invalid_request (max_bytes not positive), not_leader_or_follower, the leader's own.
  void fetch_known(fetch_request request, std::function<void(result<fetch_response>)> done);
  void list_offsets_known(list_offsets_request request, std::function<void(result<list_offsets_response>)> done);
  /// fetch / list_offsets of a partition this node leads (refused on its shard when it does not).
  void fetch_here(fetch_request request, std::function<void(result<fetch_response>)> done);
  void list_offsets_here(list_offsets_request request, std::function<void(result<list_offsets_response>)> done);

  /// OffsetForLeaderEpoch of one partition, answered by its replica on this node
  /// (partition_runtime::end_offset_for_leader_epoch: a follower refuses), never forwarded.
  void end_offset_for_leader_epoch(epoch_end_offset_request request, std::function<void(result<epoch_end_offset>)> done);

  /// fetch_response::read_id of every shard's replicas (partition_context's next_read_id); 0
  /// means "no records".
  [[nodiscard]] std::atomic<uint64_t>& next_read_id() { return next_read_id_; }

 private:
  /// The topic and partition exist, the broker is not stopping, and `current_leader_epoch` (a
  /// Kafka client's CurrentLeaderEpoch, -1: none) is this broker's (KIP-320).
  [[nodiscard]] result<void> check_readable(const model::topic_partition& tp, int32_t current_leader_epoch) const;
  /// The topic `name` as of the calling thread's metadata view, or null.
  [[nodiscard]] std::shared_ptr<const topic_state> find_topic(const std::string& name) const;
  /// The shard whose thread owns `topic`/`partition`.
  [[nodiscard]] size_t owner(const std::string& topic, int32_t partition) const;

  const metadata_publisher& publisher_;
  const admin_manager& admin_;
  leader_forwarder& forwarder_;
  runtime::shard_runtime& runtime_;
  const std::vector<std::unique_ptr<partition_manager>>& partition_managers_;
  const int32_t node_id_;
  const std::atomic<bool>& stopping_;
  std::atomic<uint64_t> next_read_id_{1};   // fetch_response::read_id; 0 means "no records"
};

}  // namespace ringlog::broker::detail
