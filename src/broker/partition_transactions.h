#pragma once
// The partition side of transactions (KIP-98; a class of its own since issue 28): the markers of
// ended transactions written on the partitions' leaders (broker::write_txn_markers, and Kafka's
// WriteTxnMarkers on the cluster listener for markers of partitions led here that another
// broker's coordinator sends: Kafka's KafkaApis.handleWriteTxnMarkersRequest over
// ReplicaManager), the transaction coordinator's form of them (txn_host::write_markers), the
// KIP-890 part 1 verification of a transactional produce's partition at its coordinator (Kafka's
// AddPartitionsToTxnManager, and the coordinator's side of AddPartitionsToTxn v4 VerifyOnly) and
// DescribeProducers. transactions.cc and txn_markers.cc have the code. It reaches the broker
// only through the references it is built with (the metadata publisher's views among them).
// Private to the broker module.
//
// Shards: a marker is appended on its partition's shard (posted there); the answers of a call
// that spans partitions are gathered on whichever thread they come.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "group_service.h"
#include "metadata.h"
#include "partition.h"
#include "ringlog/broker/broker.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"
#include "txn_service.h"

namespace ringlog::broker::detail {

class partition_transactions {
 public:
  /// `node_id`: this node; `cluster_transport` null: a single node (a marker or verification for
  /// another broker fails as unreachable); `partition_managers`: each shard's replicas
  /// (partition_managers[i] touched only on shard i's thread); `stopping`: the broker's stop flag;
  /// `groups_started`, `txns_started`: the group and transaction services once started (null
  /// before, and on a dedicated controller; read from any shard). Every reference outlives
  /// this object's calls.
  partition_transactions(const metadata_publisher& metadata, broker_log log, int32_t node_id,
                         runtime::shard_runtime& runtime, rpc::transport* cluster_transport,
                         const std::vector<std::unique_ptr<partition_manager>>& partition_managers,
                         const std::atomic<bool>& stopping, const std::atomic<group_service*>& groups_started,
                         const std::atomic<txn_service*>& txns_started);

  /// Before the transport serves: the handlers of WriteTxnMarkers (markers for partitions led
  /// here) and AddPartitionsToTxn v4 (KIP-890 verification, for the transactional ids coordinated
  /// here).
  void register_cluster_handlers();

  /// broker::write_txn_markers: each marker on each of its partitions, written here or sent to the
  /// partition's leader.
  void write_txn_markers(std::vector<txn_marker> markers,
                         std::function<void(result<std::vector<txn_marker_result>>)> done);
  /// txn_host::write_markers (txn_markers.cc): the markers of `markers` (a control batch per
  /// partition; Kafka's WriteTxnMarkers) with `coordinator_epoch`; `done`, on some shard, with the
  /// partitions whose marker is still due (empty: every one is written; the caller retries the
  /// others), or an error of the whole call. A partition that knows a newer epoch of the producer
  /// (invalid_producer_epoch) is not due: its marker is moot.
  void write_markers(const txn::marker_request& markers, int32_t coordinator_epoch,
                     std::function<void(result<txn::partition_set>)> done);
  /// KIP-890 part 1: asks `transactional_id`'s coordinator (this node, or another over the
  /// cluster listener with AddPartitionsToTxn v4 VerifyOnly) whether `tp` is in the producer's
  /// ongoing transaction. A coordinator that cannot answer now (moved, loading, unreachable) is
  /// not_enough_replicas, retriable for every producer, as Kafka maps it for Produce.
  void verify_txn_partition(const std::string& transactional_id, model::producer_id producer_id,
                            model::producer_epoch producer_epoch, const model::topic_partition& tp,
                            std::function<void(result<void>)> done);
  /// broker::describe_producers: the producer state of a partition this node leads.
  void describe_producers(model::topic_partition partition,
                          std::function<void(result<std::vector<producer_description>>)> done);
  /// The ids of the partitions' KIP-890 guards (txn_verification_guard), broker-wide: the
  /// replicas' services (replica_services_of) count them.
  std::atomic<uint64_t>& next_txn_verification() { return next_txn_verification_; }

 private:
  // `from_peer`: sent by another broker, which believes this node leads the partitions (a
  // partition led elsewhere is answered, never forwarded on).
  void write_txn_markers_from(std::vector<txn_marker> markers,
                              std::function<void(result<std::vector<txn_marker_result>>)> done, bool from_peer);
  void write_one_marker(const txn_marker& m, const model::topic_partition& tp, bool from_peer,
                        std::function<void(result<void>)> done);
  /// WriteTxnMarkers of one marker on one partition to its leader.
  void forward_txn_marker(int32_t leader, const txn_marker& m, const model::topic_partition& tp,
                          std::function<void(result<void>)> done);
  void handle_write_txn_markers(const protocol::request_header_data& header, std::span<const std::byte> body,
                                rpc::respond_fn respond);
  void handle_verify_txn_partitions(const protocol::request_header_data& header, std::span<const std::byte> body,
                                    rpc::respond_fn respond);
  size_t owner(const std::string& topic, int32_t partition) const {
    return shard_of(topic, partition, partition_managers_.size());
  }
  /// On `shard`'s thread: its replica of `topic` partition `partition`, or null.
  std::shared_ptr<partition_runtime> runtime_of(size_t shard, const std::string& topic, int32_t partition) const {
    return partition_managers_[shard]->find(topic, partition);
  }

  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  const broker_log log_;
  const int32_t node_id_;
  runtime::shard_runtime& runtime_;
  rpc::transport* const cluster_transport_;
  const std::vector<std::unique_ptr<partition_manager>>& partition_managers_;
  const std::atomic<bool>& stopping_;
  const std::atomic<group_service*>& groups_started_;
  const std::atomic<txn_service*>& txns_started_;
  std::atomic<uint64_t> next_txn_verification_{1};
};

}  // namespace ringlog::broker::detail
