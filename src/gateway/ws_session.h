#pragma once
// WebSocket sessions at /v1/ws (issue 5; protocol in http-api/ws-protocol.md, schema in
// http-api/ws-messages.schema.json). Beast's websocket templates are instantiated only in
// ws_session.cc: they dominate build time, so this header names only the socket and the request.

#include <atomic>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <memory>

#include "ringlog/runtime/connection_limits.h"
#include "ringlog/security/principal.h"
#include "ringlog/runtime/asio_context.h"
#include "http_auth.h"
#include "metrics.h"
#include "ringlog/broker/broker.h"

namespace ringlog::gateway {

class http_forwarder;

/// State the HTTP server and its WebSocket sessions share. Shared ownership: a session destroyed
/// late (its pending handlers dropped when an io_context is destroyed at exit) still finds it.
struct ws_shared_state {
  std::atomic<bool> stopping = false;   // graceful stop: sessions close with 1001
  std::atomic<int64_t> open = 0;        // sessions alive: count against http.connections.max,
                                        // and a graceful stop waits for them (drain)
  std::atomic<int64_t> queued_bytes = 0;   // server messages queued on all sessions together
};

/// What a WebSocket session uses. broker and registry outlive every session that still runs
/// handlers (the server's drain waits for sessions; they close on `stopping`).
struct ws_context {
  broker::broker* broker = nullptr;
  metrics* registry = nullptr;
  std::shared_ptr<ws_shared_state> shared;
  /// Passes a member's group operations on to the group's coordinator (group_proxy.h); nullptr:
  /// served here only.
  http_forwarder* forwarder = nullptr;
  /// Who opened the session (issue 29: the upgrade's Authorization, session cookie or
  /// ?access_token=): carried with its produce and fetch calls; owns the group members it makes.
  security::kafka_principal principal{};
  /// The peer's IP address as ACL hosts name it (issue 30: every frame is authorized as the
  /// principal from this host).
  std::string host;
  /// Issue 31: the client id its quotas are measured under: the upgrade's X-Client-Id, else `host`.
  std::string client_id;
  /// The HTTP authenticator, when authentication is on: an idempotent or transactional produce
  /// frame may name only a producer session its principal opened (issue 29, as REST does).
  std::shared_ptr<const http_authenticator> auth{};
  /// Issue 31: the connection's place in the connection limits (max.connections.per.ip, ...),
  /// taken over from the HTTP session that upgraded and given back when the session ends.
  std::shared_ptr<runtime::connection_slot> connection_slot{};
  /// The upgrade's Authorization header ("" when it authenticated by the session cookie or
  /// ?access_token=, which are this node's own): sent with the member's group calls passed on to
  /// another coordinator (member_calls), which authenticates them again.
  std::string authorization{};
  /// How the upgrade authenticated (with `auth`): checked again before each client message and on
  /// each tick, so a socket ends (1008) once its session logs out or expires, or its user is
  /// deleted or changes its password (http_authenticator::credential_ended).
  auth_outcome credential{};
};

/// Takes over `socket` after an HTTP/1.1 Upgrade request to /v1/ws (already checked: path,
/// Origin), answers the handshake and runs the session on the socket's executor until either side
/// closes. Nothing outlives the connection: broker callbacks hold the session and find it closed.
void start_ws_session(runtime::shard_socket socket,
                      boost::beast::http::request<boost::beast::http::string_body> upgrade, ws_context context);

}  // namespace ringlog::gateway
