#pragma once
// The runtime's named bounds (style.md: every queue has a named bound and a line on why).

#include <cstddef>
#include <cstdint>

namespace ringlog::runtime::constants {

/// Tasks queued to one shard (from any thread) beyond which new client work is refused
/// (shard_runtime::try_post). A produce, fetch or admin call is one or a few tasks; at 50,000
/// requests/s a shard drains about 50 per millisecond, so 65,536 tasks is over a second of
/// backlog: past it, waiting only adds latency and memory (a task holds its request, up to
/// message.max.bytes), so the client is told to retry instead. Continuations of admitted work
/// (post) are not refused; they are bounded by what was admitted.
inline constexpr size_t cross_shard_queue_tasks_max = 65536;

/// How often each shard's loop measures its own lag (base::latency_stage::shard_loop_lag): a timer
/// due every 10 ms, late by however long the loop was busy or its thread off a core. 100 wake-ups a
/// second per shard cost a few microseconds each on an idle broker; a shorter period would
/// sample the same distribution at more cost, a longer one would take minutes to show a p99.9.
inline constexpr int64_t shard_loop_lag_probe_interval_ms = 10;

/// At most one warning per listener per this interval names a failed TLS handshake
/// (log_rate_limit), with the count of those not logged: a scanner or a misconfigured client
/// retrying in a loop fails thousands a minute, and one line per 10 s still shows the cause and
/// that it goes on.
inline constexpr int64_t tls_handshake_warning_interval_ms = 10'000;
/// The same for other warnings a peer can repeat at will, per reason (log_rate_limit): a client
/// cutting frames short (the breaker of session 40: 200 lines for 200 cut frames), a follower
/// refusing its leader's records on every retry (100 lines in 10 s).
inline constexpr int64_t repeated_warning_interval_ms = 10'000;

/// At a controlled shutdown a TLS connection (the Kafka listeners', https://'s, the cluster
/// listener's) sends TLS's close_notify and waits this long for the peer's before the TCP close,
/// so clients (librdkafka, curl, a peer broker) see an orderly end instead of "unexpected eof
/// while reading". A client answers within a round trip; 500 ms bounds what a silent one adds to
/// the stop (the connections wait in parallel).
inline constexpr int64_t tls_close_notify_timeout_ms = 500;

}  // namespace ringlog::runtime::constants
