#pragma once
// The gateway's HTTP request/response as the handlers see them, free of Beast so the route
// handlers compile without it (only http_server.cc turns these into Beast messages).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ringlog::gateway {

struct http_request {
  std::string method;        // "GET", "POST", ... (upper case, as sent)
  std::string target;        // as sent: path plus optional "?query"
  std::string content_type;  // Content-Type header, "" when absent
  std::string accept;        // Accept header, "" when absent
  std::string origin;        // Origin header (CORS), "" when absent
  std::string access_control_request_headers;  // CORS preflight
  std::string host;          // Host header
  std::string last_event_id; // Last-Event-ID header (SSE reconnect), "" when absent
  std::string if_none_match; // If-None-Match header (console files' ETags), "" when absent
  std::string forwarded_by;  // X-Ringlog-Forwarded-By (group_proxy.h): a peer passed this on; "" when absent
  std::string forwarded_for; // X-Ringlog-Forwarded-For (group_proxy.h): the client's address as that peer saw it
  std::string forwarded_proto; // X-Forwarded-Proto (group_proxy.h): "https" when the client reached that peer over TLS
  std::string forwarded_principal; // X-Ringlog-Forwarded-Principal (group_proxy.h): the caller that peer authenticated, percent-encoded
  std::string forwarded_proof; // X-Ringlog-Forwarded-Proof (group_proxy.h): the peer's HMAC of the call, "" when absent
  std::string forwarded_metadata_offset; // X-Ringlog-Metadata-Offset (group_proxy.h): the peer's applied metadata offset, "" when absent
  // ---- authentication (issue 29, http_auth.h)
  std::string authorization;   // Authorization header, "" when absent
  std::string cookie;          // Cookie header(s), "" when absent
  std::string csrf_token;      // X-CSRF-Token header, "" when absent
  std::string requested_with;  // X-Requested-With header ("ringlog-console" from the console)
  std::string peer;            // the client's address "ip:port" (audit lines), "" when unknown
  std::string client_id;       // X-Client-Id header (issue 31, http_quotas.h), "" when absent
  bool https = false;          // arrived on an https listener (cookies get Secure)
  bool chunked = false;      // Transfer-Encoding: chunked (v3 streaming produce)
  bool body_stream = false;  // the body is not in `body`: read it with response_sink::read_body_piece
  std::string body;
};

/// The server sends a HEAD request's answer without its body but with the Content-Length the
/// body would have (RFC 9110 section 9.3.2); handlers answer HEAD as they would GET.
struct http_response {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;   // extra headers (Allow, ...)
  /// Memory this answer holds against a bound (response_budget.h): kept by the server until the
  /// answer is on the wire or its connection closed, then dropped, which gives it back.
  std::shared_ptr<const void> hold;
  /// Milliseconds the server waits before sending this answer, 0 for none: a 401 for refused
  /// credentials waits connection.failed.authentication.delay.ms (Kafka's key and rule for a
  /// failed SASL login), so a password guesser gets few tries per second. A timer on the
  /// connection: its shard's event loop serves every other connection meanwhile.
  int64_t delay_ms = 0;
};

/// Where a handler sends its answer. Implemented by the server; every method must be called on
/// the connection's own thread: use post() to get there from a broker callback.
class response_sink {
 public:
  virtual ~response_sink() = default;
  /// Runs `fn` on the connection's thread. Safe to call from any thread.
  virtual void post(std::function<void()> fn) = 0;
  /// Runs `fn` on the connection's thread after `delay_ms` (a stream slowed by a quota's
  /// throttle time, issue 31). Connection thread only.
  virtual void post_after(int64_t delay_ms, std::function<void()> fn) = 0;
  /// A complete response. Exactly one of respond() or begin_stream()..end_stream() per request.
  virtual void respond(http_response response) = 0;
  /// Starts a chunked response; write_chunk() sends each piece as soon as the socket allows
  /// (one write at a time, queued in order); end_stream() sends the last chunk.
  virtual void begin_stream(http_response head) = 0;
  virtual void write_chunk(std::string data) = 0;
  virtual void end_stream() = 0;

  // ---- long-lived streams (NDJSON / SSE reads, issue 5)
  /// Call before begin_stream() (or before a long-poll whose answer is respond()'s): the server
  /// watches the connection for the client closing it until the answer is sent. What the client
  /// sends meanwhile is its next request (HTTP/1.1 pipelining): kept, and served after this
  /// answer as on any kept-alive connection (a watch holds at most 64 KiB of it, then stops
  /// reading until the answer is sent). A client that closes only its sending side (half-close)
  /// counts as gone.
  virtual void watch_disconnect() = 0;
  /// True once the client closed the connection or a write to it failed; the streamer should
  /// stop fetching and call end_stream().
  [[nodiscard]] virtual bool disconnected() const = 0;
  /// disconnected() for other threads (a broker's poll on its group's shard): a check callable
  /// from any thread, at any time, true while the connection is open. It sees the client close
  /// only after watch_disconnect(); before that, only this side closing.
  [[nodiscard]] virtual std::function<bool()> connected_check() = 0;
  /// Like write_chunk(), then runs `written(true)` once the chunk is on the wire, or
  /// `written(false)` when the connection failed first (connection thread). Streams wait for it
  /// before fetching more, so a slow reader holds at most one chunk in memory.
  virtual void write_chunk_then(std::string data, std::function<void(bool written)> written) = 0;

  // ---- request bodies read as they arrive (v3 produce streams)
  /// For a request with body_stream: reads what arrived next of the body and calls `got` on the
  /// connection's thread with it (maybe empty), `done` once the body ended, `ok` false when the
  /// connection failed first. One call at a time; after `done` it answers ("", true, true).
  virtual void read_body_piece(std::function<void(std::string piece, bool done, bool ok)> got) = 0;
};

}  // namespace ringlog::gateway
