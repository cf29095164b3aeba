#pragma once
// The metadata quorum driver's named bounds (style.md "Limits"). Raft's own limits are in
// raft/constants.h; the transport's in rpc/constants.h.

#include <cstddef>
#include <cstdint>

namespace ringlog::controller::constants {

/// How often the driver ticks the raft node, ms. Raft's timers are 200 ms and up (fetch long
/// poll, request retry, election and fetch timeouts), so 10 ms keeps them within 5% at ~100
/// wakeups a second.
inline constexpr int64_t tick_interval_ms = 10;

/// Timeout of one quorum request on the transport, ms: a long-polled Fetch (up to
/// raft::constants::fetch_max_wait_ms, 200) plus a round trip and a leader's fsync. A request
/// that times out is simply dropped: the raft node retries on its own schedule.
inline constexpr int64_t request_timeout_ms = 1000;

/// Requests from peers the driver holds for a response from the node (mostly parked fetches,
/// one per follower). Past it a new request is dropped unanswered (the peer times out and
/// retries): a peer flood must not grow memory.
inline constexpr size_t inbound_requests_max = 1024;

/// A request from a peer the node has not answered after this long is forgotten (the node
/// ignores stale requests without answering; the peer gave up after request_timeout_ms), ms.
inline constexpr int64_t inbound_request_expiry_ms = 2 * request_timeout_ms;

/// Committed entries between snapshots (Kafka's metadata.log.max.snapshot.interval is time
/// based; a count bounds the log a restarting or lagging node must replay).
inline constexpr uint64_t snapshot_interval_entries_default = 10000;

/// How long a proposal may wait for its commit before propose() reports request_timed_out, ms
/// (Kafka's controller uses the client's request timeout; metadata writes should commit in
/// milliseconds, so seconds mean no quorum).
inline constexpr int64_t propose_timeout_ms_default = 5000;

/// The rebalance planner balances bytes per broker only when the cluster holds at least this much
/// (rebalance_planner.h): below it moving data buys nothing, and partitions of a few KiB would be
/// shuffled for byte differences no disk notices.
inline constexpr uint64_t rebalance_bytes_floor = 64ull << 20;

/// Iterations of each balancing loop of one plan (each moves or reorders one partition): a bound
/// on the planner's time whatever the cluster's shape; a plan cut short says balanced=false.
inline constexpr size_t rebalance_steps_max = 100'000;

/// The partition autobalancer (autobalancer.h) plans a new broker's share or an unavailable
/// broker's drain at most this often, ms: a plan that moves nothing (a new broker the balance
/// gives nothing, partitions skipped as unsafe) is tried again on a later heartbeat tick, and one
/// a second bounds the planner's CPU on the active controller while its moves commit.
inline constexpr int64_t autobalancer_retry_interval_ms = 1'000;

/// Producer ids the active controller hands a broker at once (producer_ids.h; Kafka's
/// ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE): one metadata entry per 1000 idempotent producers
/// started on a broker.
inline constexpr int64_t producer_id_block_size = 1000;

/// A broker is a heartbeat late, and the active controller asks whether its process still listens
/// (membership.h's late), after this many broker.heartbeat.interval.ms without one: one interval
/// may be a slow tick; two are not, and still well inside any session timeout worth having.
inline constexpr int64_t heartbeat_intervals_late = 2;

/// Leader changes one automatic leader rebalance commits at once (replication_control.h's
/// balance_partition_leaders): a metadata entry stays small (about 40 bytes a change) and
/// followers of thousands of partitions are not all moved in one step; the next check takes the
/// rest.
inline constexpr size_t leader_rebalance_changes_max = 1000;

/// Segment size of the coordinators' internal topics, bytes (internal_topics.h): 100 MiB, Kafka's
/// offsets.topic.segment.bytes and transaction.state.log.segment.bytes defaults (smaller than a
/// data topic's, so compaction reaches a closed segment sooner).
inline constexpr int64_t internal_topic_segment_bytes = 104857600;

}  // namespace ringlog::controller::constants
