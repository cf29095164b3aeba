#pragma once
// The cluster transport's named bounds (style.md "Limits": every queue and retry has a bound and a
// line on why). Frame size itself is protocol::limits::frame_bytes_max (Kafka's
// socket.request.max.bytes).

#include <cstddef>
#include <cstdint>

namespace ringlog::rpc::constants {

/// Requests one server connection hands to handlers before their responses go out. Reading from
/// the socket pauses at this bound (TCP backpressure reaches the peer) instead of buffering more.
/// A KRaft peer has at most a few requests outstanding (one fetch, a vote, a begin/end epoch); 64
/// leaves room for the broker RPCs that will share the listener (Kafka's queued.max.requests is
/// 500 for a whole broker).
inline constexpr size_t connection_in_flight_requests_max = 64;

/// Requests one client (one peer) holds waiting for a response or for a connection. Past it a send
/// fails at once with too_many_in_flight: a peer that answers nothing must not grow our memory.
inline constexpr size_t client_pending_requests_max = 1024;

/// Response frames queued for writing on one server connection. Reading pauses while requests
/// with handlers plus queued responses reach connection_in_flight_requests_max, so a peer that
/// stops reading its answers (paused, cut off) cannot grow this queue past it.
inline constexpr size_t connection_write_queue_max = connection_in_flight_requests_max;

/// First wait after a failed connect, ms; it doubles per failure up to the max below. Short
/// enough that a restarted peer is reached well inside controller.quorum.fetch.timeout.ms.
inline constexpr int64_t connect_backoff_initial_ms = 50;
/// Longest wait between connect attempts, ms. Shorter than Kafka's reconnect.backoff.max.ms
/// (1000): requests queued for a peer that is down (a forwarded produce to a killed leader) wait
/// out the backoff before they fail and are retried at the new leader, so this bounds that part
/// of a failover; the cost is a few connect attempts a second to a dead peer.
inline constexpr int64_t connect_backoff_max_ms = 250;
/// A connect that has not completed after this long is failed, ms: a peer whose host drops SYNs
/// would otherwise hold requests for the kernel's minutes-long SYN retry.
inline constexpr int64_t connect_timeout_ms = 2000;

/// The cluster listener's default bound on open connections when
/// listener.name.cluster.max.connections is not set (at most an eighth of the open-file limit):
/// each peer holds two (its transport's connection and its forwarding one), so a thousand is room
/// for hundreds of nodes, far past what ringlog's placement is sized for, while a flood of idle
/// connects cannot take the descriptors the other listeners and the logs need.
inline constexpr int64_t cluster_listener_connections_max_default = 1000;
/// At most one warning per this interval names the cluster connections the first-request
/// deadline closed (with their count), so a connect flood does not flood the log.
inline constexpr int64_t deadline_warning_interval_ms = 10'000;
/// Refusal reasons whose last warning time the cluster listener keeps (server.cc): peers are few;
/// past this many distinct reasons the record starts over.
inline constexpr size_t refusal_reasons_tracked_max = 1024;

/// Peers one cluster transport knows (voters plus brokers learned from their registrations), each
/// with one lazily connected client. Kafka clusters run up to a few thousand brokers; ringlog's
/// placement and heartbeats are sized for tens. A bound keeps a flood of registrations from
/// growing this map (and its sockets) without end.
inline constexpr size_t peers_max = 1024;

}  // namespace ringlog::rpc::constants
