#pragma once
// The https:// listener (issue 29): TLS for REST, WebSocket (wss), NDJSON/SSE streams and the
// console, in front of the same http_server. Each client's TLS session ends here; its plaintext
// side is a socketpair whose other end http_server::serve_connection serves like an accepted
// connection, so every route (Beast's HTTP and WebSocket code included) works unchanged over TLS.
// The cost is one more copy of each byte through the socketpair (docs/benchmarks.md has the
// figures); a client's certificate principal does not cross it yet (docs/security.md).
//
// A handshake that fails (plaintext on the port, a client that does not trust the certificate,
// random bytes) closes the connection with a log line naming the listener. Connections are
// accepted on shard 0 and spread over the shards; the tunnel and its HTTP session share one.

#include <cstdint>
#include <memory>
#include <string>

#include "ringlog/base/result.h"
#include "ringlog/gateway/http_server.h"
#include "ringlog/runtime/shard_threads.h"
#include "ringlog/runtime/connection_limits.h"
#include "ringlog/runtime/socket_buffer_sizes.h"
#include "ringlog/runtime/tls.h"

namespace ringlog::gateway {

namespace constants {
/// Bytes a tunnel moves per read in each direction: 16 KiB, one TLS record's plaintext.
inline constexpr size_t tls_tunnel_buffer_bytes = 16 * 1024;
}  // namespace constants

struct tls_front_options {
  std::string name = "HTTPS";   // in log lines
  std::string host = "127.0.0.1";
  uint16_t port = 8443;
  int listen_fd = -1;           // bound by serve (bind_listener); -1 = bind host:port here
  std::shared_ptr<runtime::reloading_tls_context> tls;
  /// connection.authentication.timeout.ms: the TLS handshake must be done this long after accept; 0 = no limit.
  int64_t authentication_timeout_ms = 10000;
  /// max.connections, max.connections.per.ip, max.connection.creation.rate; nullptr = unlimited.
  std::shared_ptr<runtime::connection_limits> limits;
  runtime::socket_buffer_sizes socket_buffers;   // socket.send/receive.buffer.bytes
};

class tls_front {
 public:
  /// Listens and starts accepting. `server` must outlive it. Errors: why it cannot listen.
  static base::result<std::unique_ptr<tls_front>, std::string> start(runtime::shard_threads& runtime,
                                                                     http_server& server, tls_front_options options);
  ~tls_front();
  /// Stops accepting and closes every tunnel; returns once done (the runtime must run).
  void stop();
  [[nodiscard]] uint16_t port() const;

  struct impl;

 private:
  explicit tls_front(std::shared_ptr<impl> p) : impl_(std::move(p)) {}
  std::shared_ptr<impl> impl_;
};

}  // namespace ringlog::gateway
