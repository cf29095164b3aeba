#pragma once
// Every fixed limit of ringlog, with the reason for its value (style.md "Limits").
// Limits a user can change live in the config module instead, with their Kafka key names.

#include <cstddef>
#include <cstdint>

namespace ringlog::constants {

// ---- record batch format (Kafka message format v2) ----
/// Largest batch the decoder accepts, bytes. Kafka's default message.max.bytes is ~1 MiB; the
/// broker config may lower it, never raise it past this hard ceiling (keeps int32 math safe).
inline constexpr int32_t batch_bytes_max = 64 * 1024 * 1024;
/// Largest number of records in one batch. last_offset_delta is int32; Kafka bounds it by bytes.
inline constexpr int32_t batch_records_max = 1'000'000;
/// Largest decompressed records section, bytes: a compression bomb must not exhaust memory.
inline constexpr int64_t batch_decompressed_bytes_max = 256 * 1024 * 1024;
/// Largest number of headers per record; Kafka has no limit, we bound memory per record.
inline constexpr int32_t record_headers_max = 10'000;

// ---- storage ----
/// Bytes per offset index entry: 4-byte relative offset + 4-byte file position (Kafka layout).
inline constexpr size_t offset_index_entry_bytes = 8;
/// Bytes per time index entry: 8-byte timestamp + 4-byte relative offset (Kafka layout).
inline constexpr size_t time_index_entry_bytes = 12;
/// Largest segment, bytes: index entries store a 4-byte relative file position.
inline constexpr int64_t segment_bytes_max = int64_t{1} << 31;
/// Smallest segment, bytes: Kafka's lower bound for segment.bytes (14 bytes of header + slack).
inline constexpr int64_t segment_bytes_min = 1024;
/// Largest number of segments one partition may hold before appends are refused; bounds the
/// in-memory segment map and open file descriptors (3 per segment).
inline constexpr size_t segments_per_partition_max = 100'000;

// ---- io ----
/// Submission queue depth of one io_uring; a few fsyncs and reads in flight per shard suffice.
inline constexpr unsigned io_uring_entries = 256;

}  // namespace ringlog::constants

namespace ringlog::constants {
/// Largest partition count of one topic: each partition holds open files (3 per segment) and a
/// directory; Kafka recommends a few thousand per broker.
inline constexpr int32_t topic_partitions_max = 10'000;
/// Largest number of topics one broker holds (metadata image and directories).
inline constexpr size_t topics_max = 10'000;
/// Interval of the per-shard maintenance tick (retention checks, high watermark checkpoints), ms:
/// Kafka checkpoints high watermarks every 5 s (replica.high.watermark.checkpoint.interval.ms).
inline constexpr int64_t maintenance_interval_ms = 5'000;
}  // namespace ringlog::constants

namespace ringlog::constants {
// ---- replication throttling (leader/follower.replication.throttled.rate; replication/throttle.h)
/// Kafka's default of both rates, Long.MAX_VALUE: no bound. Any smaller value bounds.
inline constexpr int64_t replication_throttled_rate_unbounded = INT64_MAX;
/// The most a throttle bucket holds, as ms of its rate: one second, Kafka's quota sample
/// (quota.window.size.seconds); a longer burst would let a catch-up overshoot the rate by more
/// than a second's worth after an idle spell, a shorter one would hold back a fetch that the
/// rate allows.
inline constexpr int64_t replication_throttle_burst_ms = 1'000;
/// Longest a throttled fetch is held back in one go, ms: a raised or removed rate takes effect
/// within it (rate 0 waits in steps of this), and a follower's parked fetch never nears its
/// request timeout (replica.fetch.wait.max.ms plus 5 s).
inline constexpr int64_t replication_throttle_wait_max_ms = 1'000;
}  // namespace ringlog::constants

namespace ringlog::constants {
// ---- the partition autobalancer (controller/autobalancer.h): bounds of its configs, here
// because both the properties file (config) and the dynamic broker configs (broker) check them.
/// partition.autobalancer.node.availability.timeout.ms: at least 1 s (the clock starts once the
/// broker is fenced, after broker.session.timeout.ms; tests use a few seconds), at most 30 days
/// (longer means never: use node_add).
inline constexpr int64_t autobalancer_node_availability_timeout_ms_min = 1'000;
inline constexpr int64_t autobalancer_node_availability_timeout_ms_max = 30LL * 24 * 3600 * 1000;
/// partition.autobalancer.tick.interval.ms: at least 100 ms (a plan of a big cluster takes
/// milliseconds; tests use a fraction of a second), at most a day.
inline constexpr int64_t autobalancer_tick_interval_ms_min = 100;
inline constexpr int64_t autobalancer_tick_interval_ms_max = 24LL * 3600 * 1000;
}  // namespace ringlog::constants
