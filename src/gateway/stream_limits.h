#pragma once
// Bounds of the gateway's long-lived streams (issue 5): NDJSON / SSE reads and WebSocket
// sessions. Each names why its value; every per-connection buffer of a stream is bounded here.

#include <cstddef>
#include <cstdint>

#include "ringlog/gateway/ws_limits.h"

namespace ringlog::gateway::stream_limits {

/// Most record bytes (key + value + headers, about) one NDJSON/SSE stream fetches at once, so the
/// most it holds per connection: the next fetch starts only once this chunk is on the wire, so a
/// slow reader makes the server wait instead of buffering. One record larger than this is still
/// sent alone (fetch returns at least one record), so the real bound is max(this, message.max.bytes).
inline constexpr int32_t http_stream_chunk_bytes_max = 256 * 1024;

/// Longest an NDJSON/SSE stream stays open, ms: its `timeout` query parameter is in [0, this] and
/// defaults to it. An hour keeps idle streams from holding connections forever; EventSource
/// clients reconnect on their own (with Last-Event-ID).
inline constexpr int64_t http_stream_duration_ms_max = 3'600'000;

/// Longest single long-poll inside a stream, ms: a client that closed is noticed within about
/// this long even when no record arrives (the watch read sees it at once; the parked fetch does not).
inline constexpr int64_t http_stream_poll_wait_ms = 1'000;

}  // namespace ringlog::gateway::stream_limits

namespace ringlog::gateway::stream_limits {

/// Largest WebSocket message a client may send (public: clients obey it, ringlog/gateway/ws_limits.h).
using gateway::ws_message_bytes_max;

/// Bytes of server messages queued on one socket (exactly one write in flight, the rest wait).
/// Records are fetched only while the queue is under ws_write_queue_low_water_bytes, so credit
/// alone never fills it; acks of a client that produces without reading do, and then the
/// session closes with 1013 "try again later" rather than grow.
inline constexpr size_t ws_write_queue_bytes_max = 8 * 1024 * 1024;
inline constexpr size_t ws_write_queue_low_water_bytes = 1024 * 1024;
/// Bytes of server messages queued on all WebSocket sessions together. Past it no session with
/// anything queued fetches records or is read from (each retries when its queue drains, or on its
/// next tick, ws_group_tick_ms), so many slow readers cost at most this much (plus one answer per
/// session that keeps up, and kernel socket buffers) however many connections there are. A session
/// whose queue is empty still fetches: the readers holding the total do not stall the others
/// (ws_session.cc, within_total_queue_bound).
inline constexpr int64_t ws_write_queue_total_bytes_max = int64_t{256} << 20;

/// Longest `id` of a client's message, as JSON text: every answer echoes it, so it bounds the
/// size of an answer a client can make the server queue. Ample for a uuid or a counter.
inline constexpr size_t ws_id_bytes_max = 1024;

/// Record bytes one subscription or group member fetches at once (like http_stream_chunk_bytes_max).
inline constexpr int32_t ws_fetch_bytes_max = 256 * 1024;

/// Longest long-poll of a subscription or group poll, ms: a new credit or an unsubscribe waits
/// at most this long behind a parked fetch.
inline constexpr int64_t ws_poll_wait_ms = 500;

/// Produce requests of one socket waiting for the broker; past it a produce is answered with an
/// error (client-side backpressure), bounding the acks held for in-order delivery.
inline constexpr size_t ws_produce_in_flight_max = 10'000;

/// Produce messages of one socket that arrive together (already read, or readable without
/// waiting) go to the broker as one request, so one record batch and one append serve them all.
/// At most this many records and about this many record bytes per request (and never more than
/// produce.records.max): enough to amortise the per-append cost, small enough that the first
/// record of a group waits at most a few hundred microseconds for the last.
inline constexpr size_t ws_produce_coalesce_records_max = 500;
inline constexpr size_t ws_produce_coalesce_bytes_max = 256 * 1024;

/// Credit a client may hold at once (records, bytes): grants add up to these and no further, so
/// the counters cannot overflow. Both are far beyond anything a client reads in a session.
inline constexpr int64_t ws_credit_records_max = int64_t{1} << 40;
inline constexpr int64_t ws_credit_bytes_max = int64_t{1} << 50;

/// A connection from which nothing came for this long (no message, no pong to the server's ping,
/// sent after about half of it) is closed with 1001 and a reason, ms.
inline constexpr int64_t ws_idle_timeout_ms = 30'000;

/// How often a group member that has no credit (so does not poll) checks its assignment and
/// keeps its lease, ms; well under ws_group_session_timeout_ms.
inline constexpr int64_t ws_group_tick_ms = 2'000;

/// Session timeout of the group member a WebSocket `join` creates, ms: the lease lapses this long
/// after the connection dies without a leave (the close path deletes it at once otherwise).
inline constexpr int64_t ws_group_session_timeout_ms = 30'000;

}  // namespace ringlog::gateway::stream_limits
