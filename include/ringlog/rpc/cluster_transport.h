#pragma once
// rpc::transport over TCP: this node's cluster listener (optional; a single-node quorum has none)
// plus one rpc::client per peer node, by node id (controller.quorum.voters gives the addresses).
// No Asio in this header or its .cc: it composes server and client.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ringlog/rpc/client.h"
#include "ringlog/rpc/server.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_threads.h"

namespace ringlog::rpc {

/// A peer's cluster listener address.
struct peer_address {
  std::string host;
  uint16_t port = 0;
};

class cluster_transport final : public transport {
 public:
  /// Listens on `listen` (host:port; nullopt: no listener) and knows `peers` (node id -> address;
  /// this node's own id may be listed and is skipped). Everything runs on shard `shard` of
  /// `runtime`. `self_id` names this node in client ids ("ringlog-node-<id>").
  /// Errors: listen_failed.
  static result<std::unique_ptr<cluster_transport>> create(runtime::shard_threads& runtime, size_t shard,
                                                           int32_t self_id, std::optional<peer_address> listen,
                                                           const std::map<int32_t, peer_address>& peers);
  ~cluster_transport() override;

  void send(int32_t to, int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms,
            response_callback done) override;
  void set_handler(int16_t api_key, request_handler handler) override;
  [[nodiscard]] request_handler handler(int16_t api_key) const override;
  /// Runs `handler(n)` when a connection whose requests named client id "ringlog-node-<n>" closes.
  void set_peer_closed_handler(std::function<void(int32_t node_id)> handler) override;
  /// Starts accepting connections (after every handler is set).
  void start();
  /// Closes the listener and every peer connection (waiting requests fail with shutting_down).
  /// The runtime must still be running. Idempotent.
  void stop();
  /// The listener's bound port (0 without a listener).
  [[nodiscard]] uint16_t port() const { return server_ ? server_->port() : 0; }

 private:
  cluster_transport(int32_t self_id, std::unique_ptr<server> srv) : self_id_(self_id), server_(std::move(srv)) {}

  int32_t self_id_;
  std::unique_ptr<server> server_;
  std::map<int32_t, std::unique_ptr<client>> clients_;
  bool stopped_ = false;
};

}  // namespace ringlog::rpc
