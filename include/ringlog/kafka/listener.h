#pragma once
// The Kafka client listener (`listeners=...,kafka://HOST:PORT`): TCP with Kafka's framing
// (protocol guide, "Requests and Responses": int32 size, request header, body), each request
// handed to a request_handler (request_handler.h). Per connection:
//   - responses leave in request order (Kafka clients match them to requests by position, e.g.
//     kafka-python raises on an out-of-order correlation id), even though requests complete out
//     of order on the shards; a Produce with acks=0 takes its place in the order and sends nothing;
//   - on an SSL:// or SASL_SSL:// listener, a TLS handshake first (listener_options::tls); one
//     that fails (plaintext, random bytes, an untrusted or missing client certificate) closes the
//     connection with a log line naming the listener;
//   - a frame whose size is <= 0 or above socket.request.max.bytes, a TLS handshake on a plaintext
//     listener, a header or
//     body that does not decode: the connection is closed with a log line naming why; nothing
//     stored is touched;
//   - a Fetch answer whose record sets lie in segment files (request_handler.h response_frame)
//     is sent piece by piece: memory with writes, file bytes with sendfile from the page cache,
//     never copied through user space; the whole frame goes before the next one starts;
//   - client quotas (issue 31, KIP-219): an answer carrying a throttle time stops reading from
//     the connection for that long (Kafka mutes the channel); an answer to a request version
//     whose client does not throttle itself is also held back that long before it is sent;
//   - bounded memory: reading pauses while constants::connection_in_flight_requests_max requests
//     are unanswered or constants::connection_held_bytes_max bytes of requests and unsent
//     responses are held (TCP backpressure reaches a client that does not read);
//   - bounded memory of every Kafka listener together (queued.max.request.bytes,
//     listener_options::request_pool): a frame's declared size is reserved from the shared pool
//     before its body is read, and given back when it is answered; a frame that does not fit
//     waits (the connection stops reading) until room is given back; a frame larger than the
//     whole pool closes the connection with a log line naming the key; a reserved frame whose
//     body is not read within listener_options::request_body_timeout_ms closes it as well.
// Connections are accepted on shard 0 and spread over all shards round-robin; Asio lives in
// listener.cc only.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringlog/kafka/request_handler.h"
#include "ringlog/runtime/shard_threads.h"
#include "ringlog/runtime/connection_limits.h"
#include "ringlog/runtime/socket_buffer_sizes.h"
#include "ringlog/runtime/request_memory_pool.h"
#include "ringlog/runtime/tls.h"
#include "ringlog/security/jwt.h"
#include "ringlog/security/ssl_principal_mapper.h"

namespace ringlog::kafka {

namespace constants {
/// Unanswered requests per connection before reading pauses. librdkafka pipelines up to
/// max.in.flight (default 1000000, i.e. unbounded) and the Java client 5 per connection; 32 keeps
/// a pipelining producer busy while bounding what one client can park here.
inline constexpr size_t connection_in_flight_requests_max = 32;
/// Bytes of request frames being handled plus responses not yet written, per connection, past
/// which reading pauses: 64 MiB (one default fetch.response.bytes.max). One request is always
/// admitted, so the most a connection holds is this plus one frame of socket.request.max.bytes.
inline constexpr size_t connection_held_bytes_max = 64ULL * 1024 * 1024;
/// Bytes one connection sends by sendfile before it lets the shard's other connections run
/// (a Fetch answer of up to fetch.response.bytes.max to a fast local reader would otherwise hold
/// the shard for the whole answer): 4 MiB, a few milliseconds at page-cache speed.
inline constexpr size_t zero_copy_bytes_per_turn = 4ULL * 1024 * 1024;
}  // namespace constants

struct listener_options {
  /// The listener's name (listeners=NAME://HOST:PORT), in log lines.
  std::string name = "PLAINTEXT";
  std::string host = "127.0.0.1";
  uint16_t port = 9092;                       // 0: an ephemeral port (see listener::port())
  int32_t request_bytes_max = 104857600;      // socket.request.max.bytes (Kafka's default, 100 MiB)
  /// A socket already bound to host:port, which listen() adopts (serve binds it before the
  /// broker starts, so an ephemeral port 0 is known when the broker registers its endpoint);
  /// -1 = listen() binds host:port itself.
  int listen_fd = -1;
  /// SSL:// and SASL_SSL:// listeners: the TLS context each new connection's handshake takes
  /// (re-read when its files change); nullptr = plaintext. Give such a listener a handler with
  /// fetch_zero_copy off: sendfile cannot go through userspace TLS.
  std::shared_ptr<runtime::reloading_tls_context> tls;
  /// ssl.principal.mapping.rules: a TLS client's certificate subject -> its principal; nullptr = DEFAULT.
  std::shared_ptr<const security::ssl_principal_mapper> principal_mapper;
  /// SASL_PLAINTEXT://: every connection authenticates with SASL first (sasl_gate.h in src/kafka
  /// has the rules); false = kafka:// (PLAINTEXT), every caller User:ANONYMOUS.
  bool sasl = false;
  std::vector<std::string> sasl_enabled_mechanisms = {"SCRAM-SHA-256", "SCRAM-SHA-512"};
  int64_t connections_max_reauth_ms = 0;                  // KIP-368; 0 = logins do not expire
  /// OAUTHBEARER in sasl_enabled_mechanisms: the JWT rules (the JWKS of sasl.oauthbearer.jwks.endpoint.url).
  std::shared_ptr<const security::jwt_validator> oauthbearer_validator;
  int64_t connection_failed_authentication_delay_ms = 100;
  /// connection.authentication.timeout.ms: on a TLS or SASL listener, the TLS handshake and the
  /// SASL login must be done this long after accept, or the connection is closed; 0 = no limit.
  int64_t authentication_timeout_ms = 10000;
  /// connections.max.idle.ms: a connection with nothing read and no answer written this long,
  /// and no request with its handler, is closed (answers the client does not read count as
  /// nothing); 0 = never.
  int64_t connections_max_idle_ms = 600000;
  /// kafka.request.body.timeout.ms: a frame whose declared size request_pool reserved must be
  /// read this long after, else the connection is closed (its room given back); 0 = no limit.
  int64_t request_body_timeout_ms = 60000;
  /// max.connections, max.connections.per.ip, max.connection.creation.rate (runtime/connection_limits.h);
  /// nullptr = unlimited.
  std::shared_ptr<runtime::connection_limits> limits;
  runtime::socket_buffer_sizes socket_buffers;   // socket.send/receive.buffer.bytes
  /// queued.max.request.bytes: one pool shared by every Kafka listener; nullptr = no bound.
  std::shared_ptr<runtime::request_memory_pool> request_pool;
};

class listener {
 public:
  /// Binds and listens (accepting starts with start()). `handler` must outlive the listener.
  /// Errors: a message naming host:port and why.
  static base::result<std::unique_ptr<listener>, std::string> listen(runtime::shard_threads& runtime,
                                                                     request_handler& handler,
                                                                     listener_options options);
  ~listener();
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  void start();
  /// Closes the acceptor and every connection; returns once done. Idempotent; the runtime must
  /// be running.
  void stop();
  [[nodiscard]] uint16_t port() const;

  struct impl;

 private:
  explicit listener(std::shared_ptr<impl> p);
  std::shared_ptr<impl> impl_;
};

}  // namespace ringlog::kafka
