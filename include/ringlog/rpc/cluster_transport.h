#pragma once
// rpc::transport over TCP: this node's cluster listener (optional; a single-node quorum has none)
// plus one rpc::client per peer node, by node id (controller.quorum.voters gives the addresses).
// No Asio in this header or its .cc: it composes server and client.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>
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
  bool operator==(const peer_address&) const = default;
};

/// The cluster listener's TLS form (listeners=...,CLUSTER://HOST:PORT with
/// listener.security.protocol.map=CLUSTER:SSL; docs/security.md): every node presents its
/// certificate on both sides and checks the peer's against the cluster's truststore, so a process
/// without a certificate the cluster's CA signed cannot fetch replicas, vote or register.
struct cluster_tls {
  std::shared_ptr<runtime::reloading_tls_context> server;   // accepting side; nullptr = plaintext
  std::shared_ptr<runtime::reloading_tls_context> client;   // connecting side; nullptr = plaintext
};

class cluster_transport final : public transport {
 public:
  /// Listens on `listen` (host:port; nullopt: no listener) and knows `peers` (node id -> address;
  /// this node's own id may be listed and is skipped). Everything runs on shard `shard` of
  /// `runtime`. `self_id` names this node in client ids ("ringlog-node-<id>").
  /// Errors: listen_failed.
  static result<std::unique_ptr<cluster_transport>> create(runtime::shard_threads& runtime, size_t shard,
                                                           int32_t self_id, std::optional<peer_address> listen,
                                                           const std::map<int32_t, peer_address>& peers,
                                                           cluster_tls tls = {}, listener_admission admission = {});
  ~cluster_transport() override;

  void send(int32_t to, int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms,
            response_callback done) override;
  /// On the peer's second connection (peer::forwarding), never the one of replication and raft.
  void send_forwarded(int32_t to, int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms,
                      response_callback done) override;
  /// Aborts the forwarding connection to `to` if a request may still reach it
  /// (client::abort_if_undelivered).
  void abandon_calls(int32_t to, std::string why) override;
  void set_handler(int16_t api_key, request_handler handler) override;
  [[nodiscard]] request_handler handler(int16_t api_key) const override;
  /// Runs `handler(n)` when a connection whose requests named client id "ringlog-node-<n>" closes.
  void set_peer_closed_handler(std::function<void(int32_t node_id)> handler) override;
  /// Adds a client for `node_id` at host:port, or replaces one at another address (the old
  /// client is stopped: its waiting requests fail with shutting_down and their senders retry).
  /// This node's own id is ignored. At most constants::peers_max peers; beyond that the address
  /// is not learned (sends to the node answer unknown_peer). Callable from any thread.
  bool set_peer_address(int32_t node_id, const std::string& host, uint16_t port) override;
  /// Only nodes use the cluster listener: a connection whose first request does not name a
  /// node's client id ("ringlog-node-<id>"; a Kafka client's ApiVersions names its own) is closed
  /// unanswered, with one log line that names `kafka_listener`, where Kafka clients belong (e.g.
  /// "kafka://127.0.0.1:9092", or why this node has none). Only before start().
  void set_kafka_listener_hint(std::string kafka_listener);
  /// server::set_peer_check on this node's listener (none: nothing to check). Before start().
  void set_peer_check(server::peer_check refusal);
  /// The peers known now (voters from the config plus those learned since), by node id.
  [[nodiscard]] std::map<int32_t, peer_address> peers() const;
  /// Starts accepting connections (after every handler is set).
  void start();
  /// Closes the listener and every peer connection (waiting requests fail with shutting_down).
  /// The runtime must still be running. Idempotent.
  void stop();
  /// The listener's bound port (0 without a listener).
  [[nodiscard]] uint16_t port() const { return server_ ? server_->port() : 0; }

 private:
  cluster_transport(runtime::shard_threads& runtime, size_t shard, int32_t self_id, std::unique_ptr<server> srv)
      : runtime_(runtime), shard_(shard), self_id_(self_id), server_(std::move(srv)) {}

  struct peer {
    peer_address address;
    std::shared_ptr<client> connection;  // shared: a send in progress keeps a replaced one alive
    std::shared_ptr<client> forwarding;  // clients' calls passed on (send_forwarded); connects lazily too
  };
  /// The peer's connection (`forwarded`: its forwarding one), or nullptr when `to` is unknown.
  std::shared_ptr<client> client_of(int32_t to, bool forwarded) const;

  runtime::shard_threads& runtime_;
  size_t shard_;
  int32_t self_id_;
  std::unique_ptr<server> server_;
  std::shared_ptr<runtime::reloading_tls_context> client_tls_;   // given to every peer's client
  /// Where Kafka clients belong, named when one is refused (set_kafka_listener_hint); read on the
  /// server's shard only, written before start().
  std::shared_ptr<std::string> kafka_listener_hint_ = std::make_shared<std::string>("the kafka:// listener of a broker");
  mutable std::mutex peers_mutex_;  // guards peers_ and stopped_ (sends come from every shard)
  std::map<int32_t, peer> peers_;
  bool stopped_ = false;
};

}  // namespace ringlog::rpc
