#pragma once
// Private to the CLI: what `ringlog bench` shares between its HTTP load (cli.cc) and its
// WebSocket load (ws_bench.cc, the only place with a Beast websocket client).

#include <atomic>
#include <chrono>
#include <map>
#include <cstdint>
#include <optional>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/cli/http_client.h"

namespace ringlog::cli {

using bench_clock = std::chrono::steady_clock;

/// Most latency samples kept per thread: bounds bench memory (8 bytes each, ~80 MB in all).
constexpr size_t bench_samples_max = 10'000'000;

struct bench_thread_result {
  std::vector<int64_t> latencies_us;  // produce: request -> ack; consume: scheduled send -> read
  uint64_t records = 0;
  uint64_t value_bytes = 0;
  uint64_t errors = 0;
  std::string first_error;
};

/// Merges per-thread results (latency samples, counts, the first error).
bench_thread_result merge_bench_results(std::vector<bench_thread_result>& parts);

/// The p-th percentile (0..100) of `v` in milliseconds (samples are microseconds); reorders `v`.
double percentile(std::vector<int64_t>& v, double p);

/// A value of `bytes` bytes whose first 12 are the scheduled send time, microseconds since the
/// run's epoch, in decimal. Base64 turns 12 bytes into exactly 16 characters, so a reader decodes
/// only those to learn the record's latency.
std::string bench_value(int64_t scheduled_us, size_t bytes);

/// The broker's REST listener when none is given (the REST Proxy's customary port).
inline constexpr const char* default_bootstrap = "http://127.0.0.1:8082";

/// --bootstrap-server when the command line has none: $RINGLOG_BOOTSTRAP_SERVER when it is set
/// and not empty (one URL or several separated by commas, as the option), else default_bootstrap.
inline std::string default_bootstrap_server() {
  const char* from_env = std::getenv("RINGLOG_BOOTSTRAP_SERVER");
  return from_env != nullptr && *from_env != '\0' ? std::string(from_env) : std::string(default_bootstrap);
}

/// What `ringlog bench` was asked for (see its --help).
struct bench_settings {
  std::string topic = "ringlog-bench";
  int64_t partitions = 6;
  int64_t producers = 4;
  int64_t consumers = 2;
  int64_t batch_records = 100;
  int64_t record_bytes = 1024;
  int64_t duration_ms = 10000;
  int64_t rate = 0;
  std::string acks = "all";
  std::string bootstrap = default_bootstrap_server();
  std::string transport = "http";
  std::string kafka_bootstrap = "127.0.0.1:9092";   // --transport kafka: the broker's kafka:// listener
  int64_t kafka_in_flight = 5;   // --transport kafka: unanswered Produce requests per connection
  int64_t subscribers = 1;
  bool ws_batch = false;
  bool ws_produce_batch = false;   // ws producers put the records due together in one `records` message
  int64_t ws_linger_us = 0;         // ws producers wait this long after a record is due for more (µs)
  uint64_t out_of_order = 0;   // ws: records a subscriber saw out of offset order (must be 0)
  double deliver_seconds = 0;  // ws: from the first scheduled send until every subscriber had every record
};

/// The scheduled send time (microseconds since the run's epoch) that a value made by
/// bench_value starts with, read from the value's base64 text; nullopt when it has none.
std::optional<int64_t> bench_scheduled_us(std::string_view value_base64);

/// The WebSocket load (issue 5): `producers` connections send one `produce` message per record
/// (`ws_produce_batch`: one per group of records due at once, at most `batch_records`)
/// to partition 0 of `topic` on a fixed schedule (`rate` records/s in all; 0 = as fast as acks
/// allow, at most ws_bench_in_flight_max unanswered per connection), and `subscribers`
/// connections subscribe to that partition from `start_offset` with credit (`ws_batch`: one
/// `records` message per fetch), each reading every record. Latencies: produce = scheduled send
/// -> produce_ack; delivered = scheduled send -> the record read by a subscriber (every
/// subscriber's every record is a sample).
struct ws_bench_outcome {
  bench_thread_result produced;
  bench_thread_result delivered;
  double seconds = 0;          // from the first scheduled send to the last producer finishing
  double deliver_seconds = 0;  // from the first scheduled send to the last record delivered
  uint64_t out_of_order = 0;   // records a subscriber saw at an offset not above the previous one
};

/// The Kafka load (issue 15, kafka_bench.cc): producer `index` sends Produce v9 requests of
/// `batch_records` records (one v2 batch, uncompressed) to partition index % partitions over
/// its own connection to `kafka_bootstrap`, up to `kafka_in_flight` unanswered (acks=0: none
/// awaited). Latency = scheduled send (or send, without --rate) -> answer.
void bench_kafka_produce(const bench_settings& s, int64_t index, bench_clock::time_point epoch,
                         bench_thread_result& out);
/// Consumer `index` long-polls Fetch v11 for its share of the partitions from `start_offsets`
/// until the producers are done and 2 s passed without records. Latency = scheduled send ->
/// record read.
void bench_kafka_consume(const bench_settings& s, int64_t index, bench_clock::time_point epoch,
                         const std::map<int64_t, int64_t>& start_offsets, const std::atomic<bool>& producers_done,
                         bench_thread_result& out);

ws_bench_outcome run_ws_bench(const bench_settings& settings, const http_endpoint& endpoint, int64_t start_offset);

}  // namespace ringlog::cli
