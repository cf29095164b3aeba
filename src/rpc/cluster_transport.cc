#include "ringlog/rpc/cluster_transport.h"

#include "ringlog/rpc/constants.h"

#include <charconv>
#include <string_view>
#include <utility>

namespace ringlog::rpc {

namespace {

constexpr std::string_view node_client_id_prefix = "ringlog-node-";

std::string node_client_id(int32_t node_id) { return std::string(node_client_id_prefix) + std::to_string(node_id); }

/// The node id in a client id "ringlog-node-<id>", or nullopt for any other client id.
std::optional<int32_t> node_of_client_id(std::string_view client_id) {
  if (!client_id.starts_with(node_client_id_prefix)) return std::nullopt;
  const auto digits = client_id.substr(node_client_id_prefix.size());
  int32_t id = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  return id;
}

}  // namespace

result<std::unique_ptr<cluster_transport>> cluster_transport::create(runtime::shard_threads& runtime, size_t shard,
                                                                     int32_t self_id,
                                                                     std::optional<peer_address> listen,
                                                                     const std::map<int32_t, peer_address>& peers,
                                                                     cluster_tls tls, listener_admission admission) {
  std::unique_ptr<server> srv;
  if (listen) {
    auto s = server::listen(runtime, shard, listen->host, listen->port, tls.server, std::move(admission));
    if (!s.ok()) return s.error();
    srv = std::move(s.value());
  }
  std::unique_ptr<cluster_transport> t(new cluster_transport(runtime, shard, self_id, std::move(srv)));
  t->client_tls_ = std::move(tls.client);
  if (t->server_) {
    t->server_->set_client_check([hint = t->kafka_listener_hint_](std::string_view client_id) -> std::optional<std::string> {
      if (node_of_client_id(client_id)) return std::nullopt;
      return "client id \"" + std::string(client_id) + "\" is not a ringlog node's (" + std::string(node_client_id_prefix) +
             "<node.id>): the cluster:// listener carries inter-broker traffic only; Kafka clients belong on " + *hint;
    });
  }
  for (const auto& [id, address] : peers) t->set_peer_address(id, address.host, address.port);
  return t;
}

cluster_transport::~cluster_transport() = default;

std::shared_ptr<client> cluster_transport::client_of(int32_t to, bool forwarded) const {
  std::lock_guard lock(peers_mutex_);
  auto it = peers_.find(to);
  if (it == peers_.end()) return nullptr;
  return forwarded ? it->second.forwarding : it->second.connection;
}

void cluster_transport::send_forwarded(int32_t to, int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms,
                                       response_callback done) {
  auto connection = client_of(to, true);
  if (!connection) return send(to, api_key, api_version, std::move(body), timeout_ms, std::move(done));   // its error
  connection->send(api_key, api_version, std::move(body), timeout_ms, std::move(done));
}

void cluster_transport::send(int32_t to, int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms,
                             response_callback done) {
  auto connection = client_of(to, false);
  if (!connection) {
    done(error{errc::unknown_peer, "node " + std::to_string(to) +
                                       " has no cluster address (not a voter, and no broker registration of it "
                                       "names a cluster endpoint yet)"});
    return;
  }
  connection->send(api_key, api_version, std::move(body), timeout_ms, std::move(done));
}

void cluster_transport::abandon_calls(int32_t to, std::string why) {
  if (auto connection = client_of(to, true)) connection->abort_if_undelivered(std::move(why));
}

bool cluster_transport::set_peer_address(int32_t node_id, const std::string& host, uint16_t port) {
  if (node_id == self_id_ || host.empty() || port == 0) return false;
  const peer_address address{host, port};
  std::shared_ptr<client> replaced, replaced_forwarding;
  {
    std::lock_guard lock(peers_mutex_);
    if (stopped_) return false;
    auto it = peers_.find(node_id);
    if (it != peers_.end() && it->second.address == address) return false;
    if (it == peers_.end() && peers_.size() >= constants::peers_max) return false;
    const std::string name = "node " + std::to_string(node_id);
    auto connection = std::make_shared<client>(runtime_, shard_, host, port, node_client_id(self_id_), client_tls_, name);
    auto forwarding = std::make_shared<client>(runtime_, shard_, host, port, node_client_id(self_id_), client_tls_, name);
    if (it == peers_.end()) {
      peers_.emplace(node_id, peer{address, std::move(connection), std::move(forwarding)});
    } else {
      replaced = std::exchange(it->second.connection, std::move(connection));
      replaced_forwarding = std::exchange(it->second.forwarding, std::move(forwarding));
      it->second.address = address;
    }
  }
  // The old connection's waiting requests fail with shutting_down (their senders retry at the new
  // address). Stopped on its shard, never under the lock: stop() waits for the shard thread.
  if (replaced) runtime_.post(shard_, [replaced, replaced_forwarding] {
    replaced->stop();
    replaced_forwarding->stop();
  });
  return true;
}

std::map<int32_t, peer_address> cluster_transport::peers() const {
  std::lock_guard lock(peers_mutex_);
  std::map<int32_t, peer_address> out;
  for (const auto& [id, p] : peers_) out.emplace(id, p.address);
  return out;
}

request_handler cluster_transport::handler(int16_t api_key) const {
  return server_ ? server_->handler(api_key) : request_handler{};
}

void cluster_transport::set_handler(int16_t api_key, request_handler handler) {
  if (server_) server_->set_handler(api_key, std::move(handler));
}

void cluster_transport::set_peer_closed_handler(std::function<void(int32_t node_id)> handler) {
  if (!server_ || !handler) return;
  server_->set_connection_closed_handler([handler = std::move(handler)](const std::string& client_id) {
    if (auto node = node_of_client_id(client_id)) handler(*node);
  });
}

void cluster_transport::set_kafka_listener_hint(std::string kafka_listener) { *kafka_listener_hint_ = std::move(kafka_listener); }

void cluster_transport::set_peer_check(server::peer_check refusal) {
  if (server_) server_->set_peer_check(std::move(refusal));
}

void cluster_transport::start() {
  if (server_) server_->start();
}

void cluster_transport::stop() {
  std::vector<std::shared_ptr<client>> connections;
  {
    std::lock_guard lock(peers_mutex_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [id, p] : peers_) {
      connections.push_back(p.connection);
      connections.push_back(p.forwarding);
    }
  }
  if (server_) server_->stop();
  for (auto& c : connections) c->stop();
}

}  // namespace ringlog::rpc
