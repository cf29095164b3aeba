#pragma once
// One connection to one peer's cluster listener (host:port), used by every request to that peer.
// Requests are pipelined and matched to responses by correlation id (Kafka's request header).
// The connection is opened on the first request and reopened after any failure, waiting
// constants::connect_backoff_initial_ms, doubling up to connect_backoff_max_ms between failed
// attempts. Every request ends in exactly one callback: its response body, or an error
// (connect_failed, connection_refused, disconnected, timeout, too_many_in_flight, malformed_response, shutting_down);
// a broken connection fails every request on it at once. A request that times out aborts the
// connection when its bytes may still be delivered later (see abort_if_undelivered). Asio lives in client.cc only.

#include <cstdint>
#include <memory>
#include <string>

#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_threads.h"
#include "ringlog/runtime/tls.h"

namespace ringlog::rpc {

class client {
 public:
  /// A client for host:port living on shard `shard` of `runtime`; `client_id` goes into every
  /// request header (Kafka's client.id). Connects lazily.
  /// `tls`: the cluster listener's TLS form (client role: this node's certificate, the cluster's
  /// CA); nullptr = plaintext. `peer_name` ("node 3") names the peer in log lines.
  /// A peer that will not speak our protocol is logged once per cause (until it answers again)
  /// with the likely cause: three connections in a row closed before their first response (or
  /// during our TLS handshake), TLS bytes where a response should be, a plaintext answer to our
  /// handshake, or a certificate refused (listener.security.protocol.map, the ssl.* keys).
  client(runtime::shard_threads& runtime, size_t shard, std::string host, uint16_t port, std::string client_id,
         std::shared_ptr<runtime::reloading_tls_context> tls = nullptr, std::string peer_name = "");
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// Sends a request whose body is already encoded at `api_version`. `done` runs once, on the
  /// shard's thread (see the header comment for the errors). Callable from any thread.
  void send(int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms, response_callback done);
  /// A caller gave up on a request it sent (the forwarder answered "outcome unknown"): when any
  /// request may still reach the peer later (queued, or written but unacknowledged by the peer's
  /// kernel), the connection is aborted with RST (SO_LINGER {on, 0}: the kernel's send queue is
  /// discarded, never delivered after the path heals) and every waiting request fails with
  /// disconnected; the next request reconnects. A request that times out does the same. Callable
  /// from any thread.
  void abort_if_undelivered(std::string why);
  /// Closes the connection and fails every waiting request with shutting_down; later sends fail
  /// the same way. Returns once done (inline on the shard's thread, else waits; the runtime must
  /// be running). Idempotent.
  void stop();

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace ringlog::rpc
