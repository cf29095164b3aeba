#pragma once
// The cluster listener (`cluster://HOST:PORT`): accepts TCP connections on one shard's event loop
// and serves Kafka-framed requests (protocol guide "Requests and Responses": int32 size, request
// header v1/v2, body). Per connection:
//   - a frame whose size is <= 0 or above protocol::limits::frame_bytes_max, or whose request
//     header does not decode, closes the connection with a log line naming why;
//   - an api key or version the codec does not know, or one with no handler, is answered the way
//     Kafka answers an ApiVersions request it cannot serve: a v0 ApiVersionsResponse with
//     UNSUPPORTED_VERSION (35) and the supported api list, under the request's correlation id;
//   - with a client check set (cluster_transport sets one: peers only), a connection whose first
//     request names a client id the check refuses is closed unanswered, with one log line;
//   - a request its handler cannot serve (its body does not decode: the handler responds with
//     close_connection_frame, transport.h) closes the connection, as Kafka closes one whose
//     request it cannot parse, with one warning naming the peer, the api key and version and the
//     error (one per api key and version per constants::deadline_warning_interval_ms);
//   - ApiVersions is answered from protocol::supported_apis();
//   - at most constants::connection_in_flight_requests_max requests are with handlers at once;
//     reading pauses at that bound (TCP backpressure).
// Responses leave in completion order, not request order (our client matches them by
// correlation id; a parked Fetch must not delay a Vote).
// Asio lives in server.cc only.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_threads.h"
#include "ringlog/runtime/connection_limits.h"
#include "ringlog/runtime/tls.h"

namespace ringlog::rpc {

/// The cluster listener's admission (issue 31): its place in max.connections.per.ip (it is
/// outside the broker-wide max.connections and creation rate, as Kafka's inter-broker listener),
/// and the bounds that keep idle strangers from holding its descriptors:
///   - connection.authentication.timeout.ms: a connection that has not sent its first complete
///     request this long after accept (on the TLS form: finished its handshake and then sent its
///     first request) is closed. Our client connects only with a request to send, so a peer's
///     first request follows its connect at once.
///   - connections.max.idle.ms: a connection with nothing read or written this long, no request
///     with a handler, no answer queued and no unread bytes is closed (a parked long-poll Fetch is
///     in flight, so not idle). The peer's client reconnects on its next request.
///   - connections_max (listener.name.cluster.max.connections): open connections at most. At the
///     bound a new connection takes the place of the oldest one that has not sent a request yet
///     (a stranger's); when every open one has, the new one is closed. Logged once per episode.
struct listener_admission {
  std::shared_ptr<runtime::connection_limits> limits;   // nullptr = unlimited
  int64_t authentication_timeout_ms = 0;                 // connection.authentication.timeout.ms; 0 = none
  int64_t idle_ms = 0;                                   // connections.max.idle.ms; 0 = never
  int64_t connections_max = 0;                           // listener.name.cluster.max.connections; 0 = no bound
};

class server {
 public:
  /// Binds and listens on host:port (port 0: an ephemeral port, see port()) on shard `shard` of
  /// `runtime`. Nothing is accepted before start(). Errors: listen_failed naming host:port.
  /// `tls`: the cluster listener's TLS form (mutual certificates); nullptr = plaintext.
  static result<std::unique_ptr<server>> listen(runtime::shard_threads& runtime, size_t shard, const std::string& host,
                                                uint16_t port,
                                                std::shared_ptr<runtime::reloading_tls_context> tls = nullptr,
                                                listener_admission admission = {});
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Registers the handler of `api_key`. Only before start().
  void set_handler(int16_t api_key, request_handler handler);
  /// The handler set for `api_key`, or an empty one.
  [[nodiscard]] request_handler handler(int16_t api_key) const;
  /// Registers what runs, on the shard's thread, when a connection that carried at least one
  /// request closes (the peer closed it, it broke, or the server stopped it): the client id of
  /// that connection's last request header. Only before start().
  void set_connection_closed_handler(std::function<void(const std::string& client_id)> handler);
  /// Registers the check of a connection's first request: `refusal(client_id)` returns why that
  /// client may not use this listener (nullopt: it may). A refused connection gets no answer: it
  /// is closed with one warning line naming the peer, its client id and the reason. Unset: every
  /// client is served. Only before start().
  void set_client_check(std::function<std::optional<std::string>(std::string_view client_id)> refusal);
  /// The TLS cluster listener only: the check of a peer once its handshake is done, before any
  /// request: `refusal(certificate_subject, peer_host)` returns why that peer may not fetch
  /// replicas, vote or register (the app maps the subject to a principal and asks the
  /// authorizer for CLUSTER_ACTION on the cluster: rpc stays below broker); nullopt: it may. A
  /// refused peer is closed unanswered with one warning naming CLUSTER_AUTHORIZATION_FAILED.
  /// Only before start().
  using peer_check = std::function<std::optional<std::string>(const std::string& certificate_subject,
                                                              const std::string& peer_host)>;
  void set_peer_check(peer_check refusal);
  /// Starts accepting (on the shard's thread).
  void start();
  /// Closes the listener and every connection, TLS ones with close_notify first (bounded by
  /// runtime::constants::tls_close_notify_timeout_ms); returns once done (runs inline when called
  /// on the shard's thread, without waiting for the close_notify exchanges; else waits for them;
  /// the runtime must be running). Idempotent.
  void stop();
  /// The bound port.
  [[nodiscard]] uint16_t port() const;
  /// Connections open now (approximate when read from another thread).
  [[nodiscard]] size_t open_connections() const;

  struct impl;

 private:
  explicit server(std::shared_ptr<impl> p);
  std::shared_ptr<impl> impl_;
};

}  // namespace ringlog::rpc
