#pragma once
// The HTTP front end (design.md section 8): one listening socket whose accepted connections are
// handed round-robin to the shards' event loops; HTTP/1.1 keep-alive, one request and one write
// at a time per connection; graceful stop. Beast stays behind this header.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringlog/base/result.h"
#include "ringlog/broker/broker.h"
#include "ringlog/runtime/connection_limits.h"
#include "ringlog/runtime/socket_buffer_sizes.h"
#include "ringlog/runtime/shard_threads.h"
#include "ringlog/runtime/tls.h"
#include "ringlog/gateway/http_auth_options.h"

namespace ringlog::gateway {

struct server_options {
  std::string host = "127.0.0.1";      // listeners=http://HOST:PORT
  uint16_t port = 8082;                // 0: any free port (see http_server::port())
  /// http.request.body.max.bytes: larger bodies get 413 naming this key. Bounds the memory one
  /// connection holds; a v3 stream is one body, so it bounds a stream too.
  uint64_t body_bytes_max = 64ull * 1024 * 1024;
  /// http.request.header.max.bytes: request line + headers.
  uint32_t header_bytes_max = 64 * 1024;
  /// http.idle.timeout.ms: a keep-alive connection idle this long (or a request body this slow to
  /// arrive) is closed.
  int64_t idle_timeout_ms = 60000;
  /// http.request.header.timeout.ms: a request's line and headers must all arrive within this
  /// long of its first byte, else 408 and a close (slow-header clients held places for the idle
  /// timeout). The body is bounded by idle_timeout_ms.
  int64_t header_timeout_ms = 10000;
  /// fetch.response.bytes.max: the largest max_bytes a fetch may ask for.
  int64_t fetch_response_bytes_max = 64 * 1024 * 1024;
  /// How long stop() waits for in-flight requests before it reports drained anyway.
  int64_t drain_timeout_ms = 10000;
  /// http.connections.max: open connections at once. A connection past it gets a 503 naming
  /// the limit and is closed; bounds file descriptors and per-connection memory.
  int64_t connections_max = 10000;
  /// Issue 31: max.connections, max.connections.per.ip(.overrides), max.connection.creation.rate
  /// and ip connection_creation_rate quotas for connections accepted here (listener "HTTP", as
  /// runtime/acceptor.h applies them to every listener); nullptr = http.connections.max only.
  std::shared_ptr<runtime::connection_limits> connection_limits;
  runtime::socket_buffer_sizes socket_buffers;   // socket.send/receive.buffer.bytes of http:// connections
  /// http.cors.allowed.origins: browser origins the REST routes answer with CORS headers and the
  /// WebSocket upgrade accepts (others get 403); "*" allows any.
  std::vector<std::string> cors_allowed_origins = {"*"};
  /// The names a browser's plaintext request's Host header may carry, on a server without HTTP
  /// authentication, besides IP addresses and localhost
  /// (http.allowed.hosts, this machine's host name, the listeners' and advertised listeners'
  /// hosts; host_permitted): a page whose DNS name was rebound to this server's address sends
  /// its own name, which gets 403. "*" allows any; empty: IP addresses and localhost only.
  std::vector<std::string> allowed_hosts = {"*"};
  /// A socket already bound to host:port (bind_listener), which start() adopts and listens on;
  /// -1: start() binds host:port itself. `serve` binds first, so a port in use stops it before it
  /// creates log.dirs or anything else.
  int listen_fd = -1;
  /// false: no plaintext listener of its own (listeners has https:// only); connections come
  /// through serve_connection alone.
  bool listen = true;
  /// The TLS client context group calls are passed on with to a peer whose only HTTP door is
  /// https:// (group_proxy.h); nullptr: no such peer can be reached (serve refuses to start a
  /// cluster node that would need it without one).
  std::shared_ptr<runtime::reloading_tls_context> peer_tls_client;
  /// More /metrics lines from outside the gateway (Prometheus text format, each family with its
  /// HELP and TYPE lines), e.g. the Kafka listener's fetch byte counters; empty = none.
  std::function<std::string()> extra_metrics;

  /// HTTP authentication (issue 29): http.authentication.method and the rest; methods NONE: off.
  http_auth_options authentication;
};

/// Binds host:port (SO_REUSEADDR), without listening yet: the socket's descriptor for
/// server_options::listen_fd (start() listens once the broker serves).
/// Errors: "listener host ... is not an IP address", "bind HOST:PORT: Address already in use", ...
base::result<int, std::string> bind_listener(const std::string& host, uint16_t port);

class http_server {
 public:
  /// Binds and starts accepting on the runtime's shards. Errors: "bind 127.0.0.1:8082: Address
  /// already in use" and the like.
  static base::result<std::unique_ptr<http_server>, std::string> start(broker::broker& broker, runtime::shard_threads& runtime,
                                                                       server_options options);
  ~http_server();

  /// Serves the connected stream socket `fd` (taken over) on `shard`, like an accepted one: the
  /// https:// listener (tls_front.h) hands each client's decrypted side here, with the TLS
  /// client's address `peer` ("ip:port"): its requests are https ones (links and base_uri say
  /// https://, cookies get Secure) from that peer (audit lines, ACL hosts).
  void serve_connection(size_t shard, int fd, std::string peer);

  /// The bound port (useful with port 0).
  [[nodiscard]] uint16_t port() const;

  /// Graceful stop: closes the listening socket and idle connections, lets in-flight requests
  /// finish (up to drain_timeout_ms), then calls `drained` on a shard thread. /v1/health answers
  /// 503 from now on.
  void stop(std::function<void()> drained);

  struct impl;

 private:
  explicit http_server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace ringlog::gateway
