#pragma once
// The metadata barrier (a class of its own since issue 28; metadata_barrier.cc has the story): an
// admin call, or a produce, fetch or offsets query naming a topic this node does not know, waits
// until this node applied every metadata entry the quorum had committed when the call arrived
// (Raft's read index, Ongaro's thesis section 6.4; the high watermark from the active
// controller's DescribeQuorum, KIP-595). It reaches the quorum, the publisher, the produce
// pipeline and the fetch service directly. Private to the broker module.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "metadata.h"
#include "produce_lines.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class fetch_service;
class produce_pipeline;

class metadata_barrier {
 public:
  /// `quorum`: the broker's metadata quorum, null until start_quorum made it; `metadata`: its
  /// views and applied entries; `produce`, `fetch`: where a call goes once the topic is known
  /// (produce_known, fetch_known, list_offsets_known); `cluster_transport` null: a single node (no
  /// barrier to wait at). Every reference outlives this object.
  metadata_barrier(const std::unique_ptr<controller::metadata_quorum>& quorum, metadata_publisher& metadata,
                   produce_pipeline& produce, fetch_service& fetch, runtime::shard_runtime& runtime,
                   rpc::transport* cluster_transport, int32_t node_id);

  /// Before the transport serves: the handler of DescribeQuorum (posted to the controller shard).
  void register_cluster_handlers();
  /// Posts `then` to the controller shard once this node applied every metadata entry the quorum
  /// had committed when the call arrived: admin calls plan against an image no older than the
  /// active controller's. Runs `then` anyway (against this node's image) when the controller is
  /// unknown, is this node, or does not answer within metadata_barrier_timeout_ms.
  void post_caught_up(std::function<void()> then);
  /// broker::produce, fetch and list_offsets: produce_known, fetch_known, list_offsets_known at once when this node knows the
  /// topic, else after post_caught_up (a topic created a moment ago through another node). A
  /// produce to a topic whose earlier produces still wait on the barrier waits behind them, even
  /// once the topic is known, so produces reach produce_known in call order (a connection's
  /// pipelined records are stored in the order sent).
  void produce(produce_request request, std::function<void(result<produce_response>)> done);
  void fetch(fetch_request request, std::function<void(result<fetch_response>)> done);
  void list_offsets(list_offsets_request request, std::function<void(result<list_offsets_response>)> done);

 private:
  /// Whether this node's image lacks `topic`, or its partition `partition` (-1: none named).
  [[nodiscard]] bool unknown_here(const std::string& topic, int32_t partition) const;
  /// The cluster listener's DescribeQuorum (KIP-595): the quorum leader's high watermark; another
  /// node answers not_leader_or_follower.
  void handle_describe_quorum(const protocol::request_header_data& header, std::vector<std::byte> body,
                              rpc::respond_fn respond);

  /// The quorum leader a barrier asks, or -1 when there is none to ask (no known leader, this
  /// node leads, or no cluster transport): the caller then plans against this node's image.
  int32_t leader_to_ask() const;
  /// Sends one DescribeQuorum to the quorum's leader for the callers in next_round_ (controller
  /// shard); when it answers, they wait for that high watermark to be applied, and the callers
  /// that came meanwhile get the next request.
  void ask_quorum_leader();

  const std::unique_ptr<controller::metadata_quorum>& quorum_;
  metadata_publisher& metadata_;   // the views and the applied entries (metadata_publisher.h)
  produce_pipeline& produce_;
  fetch_service& fetch_;
  runtime::shard_runtime& runtime_;
  rpc::transport* const cluster_transport_;
  const int32_t node_id_;
  /// Posted answers hold a weak reference: one that runs after the barrier is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
  /// Produces waiting on the barrier, per topic, in call order (any shard's thread calls produce):
  /// a line opens with the first produce of a topic this node does not know and drains after
  /// the barrier; a later produce of the topic joins it even once the topic is known.
  produce_lines waiting_produces_;
  /// Controller shard only: whether a DescribeQuorum is out, and the callers of post_caught_up
  /// that arrived since it was sent (they wait for the next one). Bounded by the callers' own
  /// bounds on calls in flight.
  bool asking_ = false;
  std::vector<std::function<void()>> next_round_;
};

}  // namespace ringlog::broker::detail
