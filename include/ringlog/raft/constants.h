#pragma once
// Fixed limits of the raft module, each with the reason for its value (style.md "Limits").
// Timeouts a user can change are in raft::config with Kafka's key names.

#include <cstddef>
#include <cstdint>

namespace ringlog::raft::constants {

/// Voters in one quorum. KRaft quorums are 3 or 5 in practice; bounds per-voter leader state and
/// the vote tally.
inline constexpr size_t voters_max = 9;
/// Largest payload of one entry, bytes. Metadata records are small; 1 MiB is Kafka's default
/// message.max.bytes, so no single record can starve a fetch response.
inline constexpr size_t entry_bytes_max = 1024 * 1024;
/// Entries the leader holds above the high watermark before propose() refuses with
/// uncommitted_limit_reached: bounds leader memory while a quorum is unreachable (a metadata log
/// takes a few hundred changes a second at most).
inline constexpr size_t uncommitted_entries_max = 4096;
/// Entries in one fetch response: bounds the follower's append and fsync batch.
inline constexpr size_t fetch_entries_max = 512;
/// Payload bytes in one fetch response (at least one entry is always sent): Kafka's default
/// replica.fetch.max.bytes is 1 MiB.
inline constexpr size_t fetch_bytes_max = 1024 * 1024;
/// Bytes per FetchSnapshot chunk: keeps one response far below socket and message limits.
inline constexpr size_t snapshot_chunk_bytes_max = 256 * 1024;
/// Largest snapshot a follower downloads, bytes: the assembly buffer is bounded by it.
inline constexpr size_t snapshot_bytes_max = 256 * 1024 * 1024;
/// Longest the leader parks a caught-up follower's fetch (Kafka's Fetch MaxWaitMs), ms. Well
/// below the fetch timeout so a live follower is seen by check-quorum several times per timeout.
inline constexpr int64_t fetch_max_wait_ms = 200;
/// A sent request with no response after this long is retried, ms. A lost Fetch then costs one
/// long poll plus this, still well inside controller.quorum.fetch.timeout.ms.
inline constexpr int64_t request_retry_ms = 300;
/// Messages held while a quorum-state write is in flight (they are released only when it is
/// durable). A handful of elections' worth of requests; more means the driver stopped fsyncing.
inline constexpr size_t held_messages_max = 4096;

/// Observers (KIP-595 non-voters: process.roles=broker nodes) whose fetch progress the leader
/// tracks at once. Bounds leader memory and the long polls it parks; a cluster's brokers are far
/// fewer. When full, the leader forgets observers silent for a fetch timeout; if none is, the new
/// observer is refused (it asks again after its discovery backoff).
inline constexpr size_t observers_max = 256;
/// An observer without a known leader asks the next (random) voter after this long when the last
/// one knew no leader either, ms: one round of the whole voter set per election timeout at most,
/// so a quorum without a leader is not flooded by its brokers.
inline constexpr int64_t observer_discovery_backoff_ms = 100;

}  // namespace ringlog::raft::constants
