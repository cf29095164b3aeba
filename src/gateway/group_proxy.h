#pragma once
// Group calls served through any broker (issue 13, design.md section 6 and 7): a consumer group's
// calls are served by its coordinator, the leader of the group's __consumer_offsets partition.
// A REST group call or a WebSocket member's group operation that reaches another broker is passed
// on to the coordinator's advertised HTTP listener as an HTTP request and answered as if local.
//
// Loop guard: a passed-on request carries `forwarded_header` (this node's id); a request that
// carries it is always served where it arrives, never passed on again, so two brokers whose
// metadata disagree for a moment answer NOT_COORDINATOR (503, retriable) instead of bouncing the
// call between them. The coordinator builds base_uri and v3 `self` links from the Host header,
// which is passed on unchanged: the client keeps talking to the broker it chose.
//
// A records poll passed on is watched on the coordinator while it waits (api_v2_consumers.cc):
// when the passing broker's connection closes first (that broker was killed), the poll takes no
// record and moves no position, so the client's next poll through any broker returns them
// (at-least-once; the answer could reach nobody). The same holds when the client of the passing
// broker leaves first: that broker watches the client's connection while the poll is passed on
// and closes its own to the coordinator once the client's closes (http_forwarder::forward's
// `caller_connected`), so the coordinator's watch sees it. A request the client pipelined behind
// such a poll is kept and served after the poll's answer (response_sink::watch_disconnect). A
// client's own poll at the coordinator is watched the same way (api_v2_consumers.cc), so a poll
// whose client left takes nothing whether or not it was passed on.
//
// No Beast here (http_types.h): the client lives in group_proxy.cc.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http_types.h"

namespace ringlog::runtime {
class shard_threads;
class reloading_tls_context;
}

namespace ringlog::gateway {

/// Marks a request one broker passed on to another; its value is the sender's node id.
inline constexpr const char* forwarded_header = "X-Ringlog-Forwarded-By";
/// On a request passed on: the client's address as the passing broker saw it (ACL hosts' form,
/// security/acl_host.h). Believed only when forwarded_proof_header proves the call
/// (api_group_forward.cc identify_client), so a client cannot name another address for itself.
inline constexpr const char* forwarded_for_header = "X-Ringlog-Forwarded-For";
/// On a request passed on: "https" when the client reached the passing broker over TLS (the de
/// facto standard header), so the coordinator's base_uri and v3 `self` links keep the client's
/// scheme. Believed only on a call whose proof verifies (forwarded_proof_header), and signed with it.
inline constexpr const char* forwarded_proto_header = "X-Forwarded-Proto";
/// On a request passed on: the principal the passing broker authenticated the client as
/// (`User:alice`, percent-encoded), when that broker authenticates HTTP callers. The coordinator
/// takes it instead of authenticating the call again only when forwarded_proof_header proves the
/// call (api_auth.cc authenticate_call): access tokens and console sessions are the passing
/// broker's own, so the peer could not check them, and they are never passed on.
inline constexpr const char* forwarded_principal_header = "X-Ringlog-Forwarded-Principal";
/// On a request passed on: "<signed_at_ms>:<hex HMAC-SHA256>" of the call with the cluster's
/// forwarding secret (security/forwarded_call.h), which only brokers of the cluster hold. Without
/// it (or when it does not verify) the call is a client's own, whatever it says it is.
inline constexpr const char* forwarded_proof_header = "X-Ringlog-Forwarded-Proof";
/// On a request passed on: the __cluster_metadata offset the passing broker's image had applied
/// (broker::applied_metadata_offset), a decimal number. The receiving broker authorizes the call
/// only once its own image has applied that offset too (bounded by
/// proxy_limits::forwarded_metadata_wait_ms_max), so an ACL, user or topic the client created
/// through the passing broker a moment ago is known where the call is served (read-your-writes
/// across nodes; api_group_forward.cc after_passing_brokers_metadata). Believed only on a call
/// whose proof verifies; not covered by the proof (a forged value costs a wait of at most that
/// bound, never an answer the image does not allow).
inline constexpr const char* forwarded_metadata_offset_header = "X-Ringlog-Metadata-Offset";
/// On an answer that was passed on: the node id of the broker that served it (for operators and tests).
inline constexpr const char* served_by_header = "X-Ringlog-Served-By";

namespace proxy_limits {
/// Group calls passed on at once by one broker (all shards together). Each holds a socket and its
/// request and answer in memory; past it a call is answered 503 with Retry-After naming this
/// limit. 1024 covers a busy gateway's consumer instances long-polling the other brokers (each
/// poll is one call) without letting them exhaust file descriptors.
inline constexpr int64_t in_flight_max = 1024;
/// How long connecting to the coordinator may take, ms. On one network a live broker accepts in
/// well under a second; a coordinator that is gone answers "refused" at once, a partitioned one
/// not at all, and its clients should hear 503 quickly and retry.
inline constexpr int64_t connect_timeout_ms = 3'000;
/// How much longer than the call itself may take (its long-poll, fetch.wait.max.ms at most) the
/// whole exchange may last, ms: the coordinator's own appends (acks=all, request timeout) fit.
inline constexpr int64_t exchange_slack_ms = 10'000;
/// The largest answer accepted from the coordinator, bytes: a records read is at most
/// fetch.response.bytes.max of payload, which base64 and JSON make at most about 4/3 + per-record
/// overhead; twice that plus 1 MiB bounds it.
inline int64_t answer_bytes_max(int64_t fetch_response_bytes_max) { return 2 * fetch_response_bytes_max + (1 << 20); }
/// How often a call passed on for a client asks whether that client is still connected, ms
/// (http_forwarder::forward's `caller_connected`): a records poll whose client left is closed
/// within about this long, so its coordinator takes nothing for nobody. A check is one atomic
/// load; 100 ms is far below any poll's wait and costs nothing next to the exchange itself.
inline constexpr int64_t caller_check_interval_ms = 100;
/// How long a call a peer passed on may wait for this node's metadata image to apply the offset
/// the peer's had (forwarded_metadata_offset_header), ms. Images of one cluster are a fetch round
/// trip apart (well under a second, test_acls_cluster.py); a node further behind is partitioned
/// or paused, and its caller is better answered from the image it has (a 403 for an ACL it has
/// not learnt, retriable) than held. 5 s also stays far below every forwarded exchange's bound
/// (connect_timeout_ms + exchange_slack_ms), so the passing broker hears the answer.
inline constexpr int64_t forwarded_metadata_wait_ms_max = 5'000;
}  // namespace proxy_limits

/// Where a call is passed on to.
struct forward_target {
  int32_t node_id = -1;
  std::string host;
  uint16_t port = 0;
  bool tls = false;   // the peer's HTTP door is https:// (its only one): the call goes over TLS
};

/// The coordinator's answer, or why there is none.
struct forward_result {
  bool answered = false;      // false: no (complete) answer; `failure` says why
  bool sent = false;          // the request was written before it failed: its outcome is unknown
  std::string failure;        // "connect: Connection refused", "timed out after 3000 ms", ...
  http_response response;     // when answered: status, content type, body, end-to-end headers
};

class http_forwarder {
 public:
  virtual ~http_forwarder() = default;
  /// Sends `request` (method, target without its ?access_token=, Content-Type, Accept, Authorization, Host,
  /// X-Client-Id, body; HEAD is sent as GET; never a Cookie) to `target` with forwarded_header,
  /// forwarded_metadata_offset_header and forwarded_proof_header set, forwarded_for_header when `request.forwarded_for` names the client's address
  /// and forwarded_principal_header when `request.forwarded_principal` names its principal, on the calling shard's event loop, and
  /// calls `done` there exactly once. `timeout_ms` bounds the whole exchange. No connection is kept between calls.
  /// Refuses (answered false, at once) when proxy_limits::in_flight_max calls are in flight.
  /// `caller_connected` (unset: not asked): whether the client the call is passed on for is still
  /// there, callable from any thread (response_sink::connected_check); asked every
  /// proxy_limits::caller_check_interval_ms while the exchange is open, and once it says false the
  /// exchange is closed at once and `done` hears "the client closed its connection" (answered
  /// false, `sent` as it was). A records poll passes it: its coordinator watches the passed-on
  /// connection and takes no record once it closes (group_proxy.h's header comment).
  virtual void forward(const http_request& request, const forward_target& target, int64_t timeout_ms,
                       std::function<void(forward_result)> done, std::function<bool()> caller_connected = {}) = 0;
  /// Calls in flight now (for /metrics and tests).
  [[nodiscard]] virtual int64_t in_flight() const = 0;
};

/// The cluster's forwarding secret as the calling thread's metadata holds it (empty: none yet).
using forwarding_secret_fn = std::function<std::vector<std::byte>()>;
/// The metadata offset the calling thread's image has applied (broker::applied_metadata_offset).
using applied_metadata_offset_fn = std::function<int64_t()>;

/// The Beast client (group_proxy.cc). `runtime`'s shards run the exchanges; `node_id` is sent in
/// forwarded_header; `answer_bytes_max` bounds each answer's body. `tls_client`: the TLS client
/// context for peers whose HTTP door is https:// (forward_target::tls; it checks their
/// certificates against its truststore); nullptr: such a call fails, naming the missing truststore.
/// Each call is signed (forwarded_proof_header) with `secret`'s secret, and sent without a proof
/// while there is none; each carries `applied_offset`'s offset (forwarded_metadata_offset_header).
std::unique_ptr<http_forwarder> make_http_forwarder(runtime::shard_threads& runtime, int32_t node_id,
                                                    int64_t answer_bytes_max,
                                                    std::shared_ptr<runtime::reloading_tls_context> tls_client,
                                                    forwarding_secret_fn secret, applied_metadata_offset_fn applied_offset);

}  // namespace ringlog::gateway
