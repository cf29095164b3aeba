#pragma once
// Two parts of the broker on the cluster listener (classes of their own since issue 28;
// cluster_requests.cc has the rules): the metadata writes (metadata_writer: an entry proposed
// here when this node leads the quorum, else sent to the active controller in a KIP-590 Envelope,
// then awaited until applied here; and the active controller's Envelope handler), and the routing
// of the Fetch requests the listener shares (cluster_fetch_router: the metadata log's to the
// quorum, a follower's to the leader's side of replication, a consumer's forwarded one to the
// forwarder). Neither sees broker_impl. Private to the broker module.

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "active_controller.h"
#include "leader_forwarder.h"
#include "metadata_publisher.h"
#include "partition.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class metadata_writer {
 public:
  /// `config`: the static broker config (node.id); `cluster_transport` null: a single node (no
  /// Envelope to send or serve); `quorum`: the broker's metadata quorum, null until start_quorum
  /// made it. Every reference outlives this object.
  metadata_writer(const broker_config& config, runtime::shard_runtime& runtime, rpc::transport* cluster_transport,
                  const std::unique_ptr<controller::metadata_quorum>& quorum, metadata_publisher& publisher,
                  active_controller& controller);

  /// Before the transport serves: the handler of Envelope (handled on the controller shard).
  void register_cluster_handlers();
  /// Controller shard: writes `records` as one metadata entry through the quorum (proposed here
  /// when this node leads it, else forwarded to the active controller in an Envelope) and answers
  /// `done` once the entry is committed, applied here, published to every shard and its
  /// partitions reconciled. The records are checked against this node's image first; the check
  /// that counts is the one every node makes when it applies the entry (an entry that does not
  /// apply changes nothing anywhere, and its proposer gets the reason). Errors: invalid_request
  /// (the records do not fit the image), not_controller (no quorum leader: retry), request_timed_out.
  void commit_records(std::vector<protocol::metadata_record> records, std::function<void(result<void>)> done);
  /// Controller shard: the entry `payload` (encoded records) to the quorum; `done` with its
  /// committed offset.
  void write_entry(std::vector<std::byte> payload, std::function<void(result<int64_t>)> done);

 private:
  void handle_envelope(const protocol::request_header_data& header, std::vector<std::byte> body, rpc::respond_fn respond);

  const broker_config& config_;
  runtime::shard_runtime& runtime_;
  rpc::transport* const cluster_transport_;
  const std::unique_ptr<controller::metadata_quorum>& quorum_;
  metadata_publisher& publisher_;
  active_controller& controller_;
};

class cluster_fetch_router {
 public:
  /// `cluster_transport` null: a single node (no listener to share). Every reference outlives
  /// this object.
  cluster_fetch_router(rpc::transport* cluster_transport, leader_forwarder& forwarder,
                       replica_fetch_server& replica_fetch_server);

  /// After the quorum started, with a cluster transport: the Fetch handler that passes metadata-log fetches to raft's.
  void share_fetch_handler();

 private:
  /// Fetch on the cluster listener: the metadata log's to the quorum, a follower's (a replica id)
  /// to replica_fetch_server, a consumer's forwarded one to leader_forwarder::serve_forwarded_fetch.
  void route_cluster_fetch(const protocol::request_header_data& header, std::span<const std::byte> body,
                           rpc::respond_fn respond);

  rpc::transport* const cluster_transport_;
  leader_forwarder& forwarder_;
  replica_fetch_server& replica_fetch_server_;
  /// The quorum's handler of Fetch (the metadata log), to which route_cluster_fetch passes
  /// fetches of __cluster_metadata.
  rpc::request_handler quorum_fetch_handler_;
};

}  // namespace ringlog::broker::detail
