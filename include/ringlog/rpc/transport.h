#pragma once
// The inter-broker transport as the layers above see it (design.md section 6 "One wire
// protocol"): requests to a peer node by id, handlers for requests from peers, Kafka's framing
// underneath. No Asio here: the controller drives raft through this interface, and tests may
// implement it in memory. rpc::cluster_transport implements it over TCP (cluster_transport.h).

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/errc.h"

namespace ringlog::rpc {

using bytes = protocol::bytes;

/// Receives a response's body (the bytes after the response header; decode it at the request's
/// api version) or the reason there is none. Called exactly once per request.
using response_callback = std::function<void(result<bytes>)>;

/// Sends the response to one request: a whole frame (size prefix, response header, body), e.g.
/// from protocol::encode_response_frame at the request's api version. Call it at most once, from
/// any thread; a response to a connection that has closed meanwhile is dropped.
using respond_fn = std::function<void(bytes frame)>;

/// What a handler passes to its respond_fn instead of an answer when it cannot serve a request
/// at all, its body not decoding at the header's version (or naming what only a broken peer
/// sends): Kafka's SocketServer closes a connection whose request it cannot parse
/// (InvalidRequestException), and so does the cluster listener on this frame, with one warning
/// naming the peer, the api key and version and `why` (server.h). Without it the request got no
/// answer, no close and no log line: its sender waited out its timeout and the connection kept a
/// request slot. Never a response frame: its size prefix is negative (-1), then the api key and
/// version (int16 each) and `why`.
bytes close_connection_frame(const protocol::request_header_data& header, std::string_view why);

/// The request a close_connection_frame names; see as_close_connection.
struct close_connection_request {
  int16_t api_key = -1;
  int16_t api_version = -1;
  std::string why;
};
/// The request and reason when `frame` is a close_connection_frame; nullopt for a response frame.
std::optional<close_connection_request> as_close_connection(std::span<const std::byte> frame);

/// Handles one request: its decoded header, its body (valid only during the call: copy or decode
/// it before returning), and how to answer. Runs on the transport's shard thread.
using request_handler =
    std::function<void(const protocol::request_header_data& header, std::span<const std::byte> body, respond_fn respond)>;

class transport {
 public:
  virtual ~transport() = default;
  /// Sends a request (`body` already encoded at `api_version`) to node `to`. `done` runs once, on
  /// the transport's shard thread, with the response body or an error: unknown_peer,
  /// connect_failed, connection_refused, disconnected, timeout (after `timeout_ms`), too_many_in_flight,
  /// malformed_response, invalid_request, shutting_down. Callable from any thread.
  virtual void send(int32_t to, int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms,
                    response_callback done) = 0;
  /// send() for a client's call passed on to the node that serves it (an HTTP produce, fetch or
  /// offsets query of a partition led there), on a connection of its own where the transport has
  /// one: those calls wait (acks=all, long-polls), and a peer's listener reads at most
  /// constants::connection_in_flight_requests_max requests of one connection at a time, so on the
  /// connection that carries replica fetches and quorum requests a stream of forwarded produces
  /// stopped the follower fetches their own acks waited for (until the ISR dropped the follower).
  virtual void send_forwarded(int32_t to, int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms,
                              response_callback done) {
    send(to, api_key, api_version, std::move(body), timeout_ms, std::move(done));
  }
  /// The sender gave up on a forwarded call (send_forwarded) to node `to` before its answer (the
  /// forwarder answered "outcome unknown"): the transport makes sure no forwarded request still
  /// queued for `to` is delivered later (cluster_transport aborts the forwarding connection when
  /// the peer has not acknowledged every byte; the other calls on it fail with disconnected).
  /// Callable from any thread.
  virtual void abandon_calls(int32_t to, std::string why) {
    (void)to;
    (void)why;
  }
  /// Registers the handler for requests with `api_key` (replacing any earlier one). Call before
  /// the transport starts serving.
  virtual void set_handler(int16_t api_key, request_handler handler) = 0;
  /// The handler registered for `api_key` (empty when none), so that a later one can pass some
  /// requests on to it (the broker's Fetch handler passes fetches of the metadata log to raft's).
  [[nodiscard]] virtual request_handler handler(int16_t api_key) const = 0;
  /// Registers what runs (on the transport's shard thread) when a connection from peer node `n`
  /// to this node's listener closes: a hint that `n` may be gone (its process died, or only that
  /// connection broke), for failure detectors that then check (design.md section 6: brokers
  /// whose process is gone are fenced within a round trip, not a session timeout). Transports
  /// that cannot tell ignore it. Call before the transport starts serving.
  virtual void set_peer_closed_handler(std::function<void(int32_t node_id)> handler) { (void)handler; }
  /// Learns (or updates) node `node_id`'s cluster listener address at run time: a broker-only
  /// node (process.roles=broker) is not in controller.quorum.voters, so the others learn its
  /// address from its broker registration (its "cluster" endpoint) in the metadata image.
  /// Returns true when the address was new or changed. Transports without addresses ignore it.
  /// Callable from any thread.
  virtual bool set_peer_address(int32_t node_id, const std::string& host, uint16_t port) {
    (void)node_id;
    (void)host;
    (void)port;
    return false;
  }
};

/// Asks whether node `to` has a process listening on its cluster port: an ApiVersions v0 request
/// (every listener answers it without a handler). `done` gets ok when it answers, else the send's
/// error - connection_refused is the definite "gone"; timeout, connect_failed or disconnected
/// leave it open (a paused or cut-off node answers nothing either). Callable from any thread.
void probe_listening(transport& t, int32_t to, int64_t timeout_ms, std::function<void(result<void>)> done);

}  // namespace ringlog::rpc
