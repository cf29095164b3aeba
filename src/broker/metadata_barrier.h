#pragma once
// The metadata barrier (a class of its own since issue 28; metadata_barrier.cc has the story): an
// admin call, or a produce, fetch or offsets query naming a topic this node does not know, waits
// until this node applied every metadata entry the quorum had committed when the call arrived
// (Raft's read index, Ongaro's thesis section 6.4; the high watermark from the active
// controller's DescribeQuorum, KIP-595). It reaches the broker only through metadata_barrier_host.
// Private to the broker module.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "metadata.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class metadata_publisher;

/// What the metadata barrier reaches in the broker (broker_parts implements it).
class metadata_barrier_host {
 public:
  virtual ~metadata_barrier_host() = default;
  /// The metadata quorum's leader, the active controller (-1: none known, or not started).
  [[nodiscard]] virtual int32_t controller_id() const = 0;
  /// Controller shard, once the quorum started: its leader, epoch and high watermark as this node
  /// knows them (controller::metadata_quorum::describe).
  [[nodiscard]] virtual controller::quorum_description metadata_quorum_now() const = 0;
  /// Controller shard: `done` once the metadata entry at `offset` (and every one before it) is
  /// applied here and published (metadata_apply_queue::await_applied).
  virtual void await_metadata_applied(int64_t offset, std::function<void(result<void>)> done) = 0;
  /// produce, fetch and list_offsets once the topic is known or the barrier passed (produce.cc,
  /// fetch.cc): served from the image as it is then.
  virtual void produce_known(produce_request request, std::function<void(result<produce_response>)> done) = 0;
  virtual void fetch_known(fetch_request request, std::function<void(result<fetch_response>)> done) = 0;
  virtual void list_offsets_known(list_offsets_request request,
                                  std::function<void(result<list_offsets_response>)> done) = 0;
};

class metadata_barrier {
 public:
  /// `cluster_transport` null: a single node (no barrier to wait at). Every reference outlives
  /// this object.
  metadata_barrier(metadata_barrier_host& host, const metadata_publisher& metadata, runtime::shard_runtime& runtime,
                   rpc::transport* cluster_transport, int32_t node_id);

  /// Before the transport serves: the handler of DescribeQuorum (posted to the controller shard).
  void register_cluster_handlers();
  /// Posts `then` to the controller shard once this node applied every metadata entry the quorum
  /// had committed when the call arrived: admin calls plan against an image no older than the
  /// active controller's. Runs `then` anyway (against this node's image) when the controller is
  /// unknown, is this node, or does not answer within metadata_barrier_timeout_ms.
  void post_caught_up(std::function<void()> then);
  /// broker::produce, fetch and list_offsets: the host's *_known at once when this node knows the
  /// topic, else after post_caught_up (a topic created a moment ago through another node).
  void produce(produce_request request, std::function<void(result<produce_response>)> done);
  void fetch(fetch_request request, std::function<void(result<fetch_response>)> done);
  void list_offsets(list_offsets_request request, std::function<void(result<list_offsets_response>)> done);

 private:
  /// The cluster listener's DescribeQuorum (KIP-595): the quorum leader's high watermark; another
  /// node answers not_leader_or_follower.
  void handle_describe_quorum(const protocol::request_header_data& header, std::vector<std::byte> body,
                              rpc::respond_fn respond);

  metadata_barrier_host& host_;
  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  runtime::shard_runtime& runtime_;
  rpc::transport* const cluster_transport_;
  const int32_t node_id_;
  /// Posted answers hold a weak reference: one that runs after the barrier is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::broker::detail
