#pragma once
// Where a request's time goes (issue 32): latency histograms of the stages of the produce and
// fetch paths, exposed in /metrics as ringlog_produce_latency_seconds{stage=...} and
// ringlog_fetch_wakeup_latency_seconds. Observing takes no lock: each thread writes its own slot
// (relaxed atomics on a cache line no other shard writes), and a scrape adds the slots together.
// Times are steady-clock nanoseconds (monotonic_ns); the cores never read them (design.md
// section 3): the broker and the protocol front ends stamp and observe, storage does not.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringlog::base {

enum class latency_stage : uint8_t {
  /// Kafka Produce decoded on the connection's shard -> the append's task starts on the
  /// partition's shard (the cross-shard queue and whatever runs before it there).
  produce_queue,
  /// The append's task on the partition's shard: validation, offsets, the copy into the log.
  produce_append,
  /// The append done -> the fdatasync that covers it submitted (group commit: an append that
  /// arrives while a sync is in flight waits for it, then joins the next one).
  produce_fsync_wait,
  /// The fdatasync that covered the append, submission -> completion (one sample per append; the
  /// disk's own figure per sync is ringlog_log_fsync_duration_seconds).
  produce_fsync,
  /// acks=all: durable on this broker -> the high watermark passed the append (the followers).
  produce_replication_wait,
  /// Kafka Produce decoded -> its answer ready on the partition's shard (all the stages above).
  produce_total,
  /// A Kafka Produce's answer present on its connection's shard -> its write to the socket
  /// started: the wait behind earlier answers of the same connection, which Kafka's protocol
  /// sends in request order (one slow request holds every answer after it: head-of-line).
  /// One sample per Produce request that gets an answer.
  produce_order_wait,
  /// Kafka Produce read off the socket -> its answer written to the socket: total plus the way
  /// back (the answer crossing to the connection's shard, answers queued before it on that
  /// connection, a throttle hold, the write itself). One sample per Produce request.
  produce_sent,
  /// A parked fetch woken by the high watermark passing its offset -> its answer handed to the
  /// client's connection (Kafka long-poll).
  fetch_wakeup,
  /// A Kafka connection that stopped reading because connection_in_flight_requests_max requests
  /// were unanswered (or connection_held_bytes_max bytes held) -> reading again. One sample per
  /// pause: the requests behind it waited in the socket at least that long before being read.
  kafka_read_paused,
  /// How late a shard's loop ran a timer due every shard_loop_lag_probe_interval_ms: the wait any
  /// ready event (a socket with a request, a disk completion) has on that shard because its
  /// thread was running other work or was not on a core. One sample per probe.
  shard_loop_lag,
};
inline constexpr size_t latency_stage_count = 11;

/// The `stage` label of a produce stage ("queue", "append", "fsync_wait", "fsync",
/// "replication_wait", "total", "order_wait", "sent"), "wakeup" for fetch_wakeup, "read_paused" for
/// kafka_read_paused, "loop_lag" for shard_loop_lag.
std::string_view latency_stage_label(latency_stage stage);

/// Upper bounds of the buckets, seconds (10 us to 1 s: the stages of a fast path are tens of
/// microseconds, a stalled disk hundreds of milliseconds); one more bucket (+Inf) follows.
inline constexpr std::array<double, 16> latency_stage_bounds_s = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
                                                                  0.001,   0.0025,   0.005,   0.01,   0.025,   0.05,
                                                                  0.1,     0.25,     0.5,     1.0};

struct latency_stage_snapshot {
  std::array<uint64_t, latency_stage_bounds_s.size() + 1> counts{};  // not cumulative; last = above 1 s
  uint64_t count = 0;
  double sum_s = 0;
};

/// Steady-clock nanoseconds (the stamps the stages are measured between).
int64_t monotonic_ns();
/// Counts one sample of `stage` lasting `elapsed_ns` (negative counts as 0). Lock-free.
void observe_latency(latency_stage stage, int64_t elapsed_ns);
/// observe_latency(stage, monotonic_ns() - since_ns), unless since_ns is 0 (not stamped).
void observe_latency_since(latency_stage stage, int64_t since_ns);
/// Every thread's samples of `stage` added together (a scrape may see a sample half-counted).
latency_stage_snapshot read_latency(latency_stage stage);

}  // namespace ringlog::base
