// Produce-to-consume latency client for bench/run-latency-bench.py (issue 32), on librdkafka:
// one producer sends records of --record-bytes incompressible bytes round-robin over the
// partitions on a fixed schedule (--rate records/s; 0 = as fast as acks allow, for the maximum),
// and one consumer assigned to every partition (from the end, before the first send) reads them
// back. Each value starts with its scheduled send time (CLOCK_MONOTONIC ns), so a late sender
// counts against the latency (no coordinated omission). Latencies: ack = scheduled send ->
// delivery report; e2e = scheduled send -> the consumer's poll returned it. Samples of the first
// --warmup-seconds are dropped. Prints one JSON object. Not part of the build: the bench script
// compiles it (c++ -O2 latency_client.cc -lrdkafka).
//
// Where a produce waits inside librdkafka (issue 32: the half-rate tail): with --stats-ms N
// (default 1000; 0 = off) the producer's statistics (statistics.interval.ms) are read every N ms
// of the measured period, and the JSON gains "rdkafka": per window (librdkafka's rolling windows,
// microseconds turned into ms), the worst and the median window's p99 of int_latency (a record's
// time in the partition queue before it is put into a request: linger and queueing), outbuf_latency
// (a request's wait in the broker connection's output queue) and rtt (request sent -> answer
// received: the network and the broker), the mean batch size in records, and the most requests
// in flight seen on a broker connection (waitresp_cnt).
#include <librdkafka/rdkafka.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <thread>
#include <vector>

namespace {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct options {
  std::string bootstrap = "127.0.0.1:9092";
  std::string topic = "latency";
  int partitions = 6;
  double rate = 10000;
  double seconds = 10;
  double warmup_seconds = 1;
  int record_bytes = 1024;
  std::string acks = "all";
  std::string linger_ms = "1";
  std::string client_id = "rdkafka";   // librdkafka's default client.id
  int stats_ms = 1000;
  /// More librdkafka settings, key=value, given to both the producer and the consumer
  /// (--set socket.nagle.disable=true); applied after the bench's own.
  std::vector<std::pair<std::string, std::string>> extra;
};

struct samples {
  std::vector<int64_t> ack_ns, e2e_ns;
  int64_t measure_from_ns = 0;
  int64_t measure_until_ns = INT64_MAX;   // the end of sending (statistics windows after it are the drain)
};

samples g_samples;
std::atomic<uint64_t> g_acked{0}, g_errors{0};
std::string g_first_error;

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  if (m->err) {
    if (g_errors.fetch_add(1) == 0) g_first_error = rd_kafka_err2str(m->err);
    return;
  }
  g_acked.fetch_add(1, std::memory_order_relaxed);
  int64_t scheduled = 0;
  std::memcpy(&scheduled, m->payload, sizeof scheduled);
  if (scheduled >= g_samples.measure_from_ns) g_samples.ack_ns.push_back(now_ns() - scheduled);
}

/// The producer's statistics windows of the measured period (see the file's comment).
struct rdkafka_windows {
  std::vector<double> int_latency_p99_ms, outbuf_latency_p99_ms, rtt_p99_ms, rtt_p50_ms, batch_records_avg;
  int64_t waitresp_max = 0;
};
rdkafka_windows g_windows;

/// stats[group][field] as a number, 0 when either is missing (brokers not yet up have no windows).
double figure(const nlohmann::json& stats, const char* group, const char* field) {
  const auto g = stats.find(group);
  if (g == stats.end() || !g->is_object()) return 0;
  const auto f = g->find(field);
  return f != g->end() && f->is_number() ? f->get<double>() : 0;
}

/// statistics.interval.ms callback (called from rd_kafka_poll on the producer's thread): one
/// window per broker connection that carried requests (nodeid >= 0, rtt.cnt > 0).
int on_statistics(rd_kafka_t*, char* json, size_t json_len, void*) {
  if (const int64_t now = now_ns(); now < g_samples.measure_from_ns || now > g_samples.measure_until_ns) return 0;
  const auto stats = nlohmann::json::parse(json, json + json_len, nullptr, false);
  if (stats.is_discarded()) return 0;
  const nlohmann::json brokers = stats.value("brokers", nlohmann::json::object());
  const nlohmann::json topics = stats.value("topics", nlohmann::json::object());
  for (const auto& [name, b] : brokers.items()) {
    if (b.value("nodeid", -1) < 0 || figure(b, "rtt", "cnt") == 0) continue;
    g_windows.int_latency_p99_ms.push_back(figure(b, "int_latency", "p99") / 1e3);
    g_windows.outbuf_latency_p99_ms.push_back(figure(b, "outbuf_latency", "p99") / 1e3);
    g_windows.rtt_p99_ms.push_back(figure(b, "rtt", "p99") / 1e3);
    g_windows.rtt_p50_ms.push_back(figure(b, "rtt", "p50") / 1e3);
    g_windows.waitresp_max = std::max<int64_t>(g_windows.waitresp_max, b.value("waitresp_cnt", 0));
  }
  for (const auto& [name, t] : topics.items()) {
    if (figure(t, "batchcnt", "cnt") > 0) g_windows.batch_records_avg.push_back(figure(t, "batchcnt", "avg"));
  }
  return 0;   // librdkafka frees the string
}

/// {"worst": max, "median": median} of per-window figures, -1 when there is none.
nlohmann::json worst_and_median(std::vector<double> v) {
  if (v.empty()) return {{"worst", -1}, {"median", -1}};
  std::sort(v.begin(), v.end());
  return {{"worst", v.back()}, {"median", v[v.size() / 2]}, {"windows", v.size()}};
}

void set(rd_kafka_conf_t* conf, const char* key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "%s: %s\n", key, err);
    std::exit(2);
  }
}

double pct(std::vector<int64_t>& v, double p) {
  if (v.empty()) return -1;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1e6;
}

std::string summary(std::vector<int64_t>& v) {
  char buf[256];
  const double max = v.empty() ? -1 : static_cast<double>(*std::max_element(v.begin(), v.end())) / 1e6;
  const double p50 = pct(v, 50), p99 = pct(v, 99), p999 = pct(v, 99.9);
  std::snprintf(buf, sizeof buf, "{\"n\": %zu, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f, \"max_ms\": %.3f}",
                v.size(), p50, p99, p999, max);
  return buf;
}

std::string rdkafka_summary() {
  const nlohmann::json j = {{"int_latency_p99_ms", worst_and_median(g_windows.int_latency_p99_ms)},
                            {"outbuf_latency_p99_ms", worst_and_median(g_windows.outbuf_latency_p99_ms)},
                            {"rtt_p99_ms", worst_and_median(g_windows.rtt_p99_ms)},
                            {"rtt_p50_ms", worst_and_median(g_windows.rtt_p50_ms)},
                            {"batch_records_avg", worst_and_median(g_windows.batch_records_avg)},
                            {"waitresp_max", g_windows.waitresp_max}};
  return j.dump();
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--bootstrap") o.bootstrap = v;
    else if (k == "--topic") o.topic = v;
    else if (k == "--partitions") o.partitions = std::stoi(v);
    else if (k == "--rate") o.rate = std::stod(v);
    else if (k == "--seconds") o.seconds = std::stod(v);
    else if (k == "--warmup-seconds") o.warmup_seconds = std::stod(v);
    else if (k == "--record-bytes") o.record_bytes = std::stoi(v);
    else if (k == "--acks") o.acks = v;
    else if (k == "--linger-ms") o.linger_ms = v;
    else if (k == "--client-id") o.client_id = v;
    else if (k == "--stats-ms") o.stats_ms = std::stoi(v);
    else if (k == "--set" && v.find('=') != std::string::npos) o.extra.emplace_back(v.substr(0, v.find('=')), v.substr(v.find('=') + 1));
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  char err[512];
  // Consumer first: assigned at the end of every partition before anything is sent.
  rd_kafka_conf_t* cconf = rd_kafka_conf_new();
  set(cconf, "bootstrap.servers", o.bootstrap);
  set(cconf, "client.id", o.client_id);
  set(cconf, "group.id", "latency-client-" + std::to_string(now_ns()));
  set(cconf, "enable.auto.commit", "false");
  set(cconf, "fetch.wait.max.ms", "500");
  set(cconf, "fetch.min.bytes", "1");
  for (const auto& [key, value] : o.extra) set(cconf, key.c_str(), value);
  rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, err, sizeof err);
  if (consumer == nullptr) { std::fprintf(stderr, "consumer: %s\n", err); return 2; }
  rd_kafka_poll_set_consumer(consumer);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(o.partitions);
  for (int p = 0; p < o.partitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, o.topic.c_str(), p)->offset = RD_KAFKA_OFFSET_END;
  }
  rd_kafka_assign(consumer, parts);
  rd_kafka_topic_partition_list_destroy(parts);

  rd_kafka_conf_t* pconf = rd_kafka_conf_new();
  set(pconf, "bootstrap.servers", o.bootstrap);
  set(pconf, "client.id", o.client_id);
  set(pconf, "acks", o.acks);
  set(pconf, "linger.ms", o.linger_ms);
  set(pconf, "enable.idempotence", "false");
  set(pconf, "compression.type", "none");
  set(pconf, "queue.buffering.max.messages", "1000000");
  set(pconf, "queue.buffering.max.kbytes", "1048576");
  for (const auto& [key, value] : o.extra) set(pconf, key.c_str(), value);
  rd_kafka_conf_set_dr_msg_cb(pconf, on_delivery);
  if (o.stats_ms > 0) {
    set(pconf, "statistics.interval.ms", std::to_string(o.stats_ms));
    rd_kafka_conf_set_stats_cb(pconf, on_statistics);
  }
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof err);
  if (producer == nullptr) { std::fprintf(stderr, "producer: %s\n", err); return 2; }
  rd_kafka_topic_t* topic = rd_kafka_topic_new(producer, o.topic.c_str(), nullptr);

  // Until the consumer holds a position on every partition (metadata, ListOffsets), send nothing.
  for (int tries = 0; tries < 100; ++tries) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 50);
    if (m) rd_kafka_message_destroy(m);
    rd_kafka_topic_partition_list_t* pos = nullptr;
    rd_kafka_assignment(consumer, &pos);
    rd_kafka_position(consumer, pos);
    bool all = pos->cnt == o.partitions;
    for (int i = 0; i < pos->cnt; ++i) all = all && pos->elems[i].offset >= 0;
    rd_kafka_topic_partition_list_destroy(pos);
    if (all && tries >= 10) break;
  }
  // librdkafka learns each partition's leader before the first send counts.
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_metadata(producer, 0, topic, &md, 5000);
  if (md) rd_kafka_metadata_destroy(md);

  const int64_t start = now_ns();
  const int64_t end = start + static_cast<int64_t>(o.seconds * 1e9);
  g_samples.measure_from_ns = start + static_cast<int64_t>(o.warmup_seconds * 1e9);
  g_samples.measure_until_ns = end;
  const size_t expected = o.rate > 0 ? static_cast<size_t>(o.rate * o.seconds * 1.1) : 4'000'000;
  g_samples.ack_ns.reserve(expected);
  g_samples.e2e_ns.reserve(expected);

  std::atomic<bool> consuming{true};
  std::atomic<uint64_t> consumed{0};
  std::thread reader([&] {
    while (consuming.load()) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
      if (m == nullptr) continue;
      if (m->err == 0 && m->len >= sizeof(int64_t)) {
        int64_t scheduled = 0;
        std::memcpy(&scheduled, m->payload, sizeof scheduled);
        if (scheduled >= g_samples.measure_from_ns && scheduled < end) g_samples.e2e_ns.push_back(now_ns() - scheduled);
        consumed.fetch_add(1, std::memory_order_relaxed);
      }
      rd_kafka_message_destroy(m);
    }
  });

  std::mt19937_64 random(42);
  std::vector<char> value(static_cast<size_t>(o.record_bytes));
  for (auto& c : value) c = static_cast<char>(random());
  uint64_t sent = 0, queue_full = 0;
  const double interval_ns = o.rate > 0 ? 1e9 / o.rate : 0;
  while (true) {
    const int64_t now = now_ns();
    if (now >= end) break;
    // Every record due by now (all of them at rate 0, as far as the queue allows).
    while (true) {
      const int64_t scheduled = o.rate > 0 ? start + static_cast<int64_t>(static_cast<double>(sent) * interval_ns) : now;
      if (scheduled > now || scheduled >= end) break;
      std::memcpy(value.data(), &scheduled, sizeof scheduled);
      // Fresh bytes after the stamp so no two values compress together.
      const uint64_t r = random();
      std::memcpy(value.data() + 8, &r, sizeof r);
      if (rd_kafka_produce(topic, static_cast<int32_t>(sent % static_cast<uint64_t>(o.partitions)), RD_KAFKA_MSG_F_COPY,
                           value.data(), value.size(), nullptr, 0, nullptr) != 0) {
        ++queue_full;
        break;
      }
      ++sent;
      if (o.rate <= 0 && sent % 1000 == 0) break;
    }
    rd_kafka_poll(producer, 0);
    if (o.rate > 0) {
      const int64_t next = start + static_cast<int64_t>(static_cast<double>(sent) * interval_ns);
      const int64_t pause = std::min<int64_t>(next - now_ns(), 1'000'000);
      if (pause > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(pause));
    } else if (queue_full > 0) {
      rd_kafka_poll(producer, 1);
    }
  }
  const int64_t sending_done = now_ns();
  const uint64_t acked_at_end = g_acked.load();
  rd_kafka_flush(producer, 30000);
  // Every acked record should reach the consumer; wait for them (bounded).
  const int64_t drain_deadline = now_ns() + 10'000'000'000;
  while (consumed.load() < g_acked.load() && now_ns() < drain_deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  consuming = false;
  reader.join();
  const double measured_s = static_cast<double>(sending_done - start) / 1e9;
  std::printf("{\"rate\": %.0f, \"sent\": %llu, \"acked\": %llu, \"consumed\": %llu, \"errors\": %llu, \"first_error\": \"%s\", "
              "\"queue_full\": %llu, \"acked_per_s\": %.0f, \"ack\": %s, \"e2e\": %s, \"rdkafka\": %s}\n",
              o.rate, static_cast<unsigned long long>(sent), static_cast<unsigned long long>(g_acked.load()),
              static_cast<unsigned long long>(consumed.load()), static_cast<unsigned long long>(g_errors.load()),
              g_first_error.c_str(), static_cast<unsigned long long>(queue_full),
              static_cast<double>(acked_at_end) / measured_s, summary(g_samples.ack_ns).c_str(),
              summary(g_samples.e2e_ns).c_str(), rdkafka_summary().c_str());
  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(producer);
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  return 0;
}
