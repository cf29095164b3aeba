#include "metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>

#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/base/topic_traffic.h"

namespace ringlog::gateway {

std::string escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void metrics::observe_request(std::string_view route, unsigned status, double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[{std::string(route), status}];
  histogram& h = latency_[std::string(route)];
  ++h.count;
  h.sum += seconds;
  for (size_t i = 0; i < latency_buckets_s.size(); ++i) {
    if (seconds <= latency_buckets_s[i]) {
      ++h.buckets[i];
      break;
    }
  }
}

void metrics::add_bytes_in(const std::string& topic, uint64_t records, uint64_t bytes) {
  base::count_topic_in(topic, records, bytes);
}

void metrics::add_bytes_out(const std::string& topic, uint64_t records, uint64_t bytes) {
  base::count_topic_out(topic, records, bytes);
}

partition_health health_of(const broker::topic_description& t) {
  partition_health h;
  for (const auto& p : t.partitions) {
    if (p.leader < 0) {
      ++h.offline;
    } else if (p.in_sync_replicas.size() < p.replicas.size()) {
      ++h.under_replicated;
    }
  }
  return h;
}

namespace {

/// One Prometheus histogram from an io::latency_histogram snapshot (buckets made cumulative).
void render_histogram(std::string& out, std::string_view name, std::string_view help,
                      const io::latency_histogram::snapshot& h) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < io::latency_histogram::bounds_s.size(); ++i) {
    cumulative += h.counts[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, io::latency_histogram::bounds_s[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, h.count);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, h.sum_s, name, h.count);
}

/// The stage histograms of base/latency_stages.h: `stages` under one metric, labelled by stage.
void render_stages(std::string& out, std::string_view name, std::string_view help,
                   std::initializer_list<base::latency_stage> stages) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (base::latency_stage stage : stages) {
    const base::latency_stage_snapshot h = base::read_latency(stage);
    const std::string_view label = base::latency_stage_label(stage);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < base::latency_stage_bounds_s.size(); ++i) {
      cumulative += h.counts[i];
      out += fmt::format("{}_bucket{{stage=\"{}\",le=\"{}\"}} {}\n", name, label, base::latency_stage_bounds_s[i],
                         cumulative);
    }
    out += fmt::format("{}_bucket{{stage=\"{}\",le=\"+Inf\"}} {}\n", name, label, h.count);
    out += fmt::format("{}_sum{{stage=\"{}\"}} {}\n{}_count{{stage=\"{}\"}} {}\n", name, label, h.sum_s, name, label,
                       h.count);
  }
}

/// CPU seconds, bytes and timed pieces of work by activity (base/cpu_accounting.h, issue 33):
/// seconds over bytes is the CPU cost per byte produced, replicated (leader and follower side)
/// and fetched.
void render_cpu_activity(std::string& out) {
  using base::cpu_activity;
  using base::cpu_activity_snapshot;
  struct family {
    const char* name;
    const char* help;
    std::string (*value)(const cpu_activity_snapshot&);
  };
  static constexpr family families[] = {
      {"ringlog_cpu_seconds_total", "Thread CPU time (user + system) spent on the activity's work (docs/metrics.md).",
       [](const cpu_activity_snapshot& s) { return fmt::format("{:.6f}", static_cast<double>(s.cpu_ns) / 1e9); }},
      {"ringlog_activity_bytes_total",
       "Bytes the activity handled: record batches appended (produce, replicate_follower) or read for followers "
       "(replicate_leader), Kafka Fetch answers written (fetch).",
       [](const cpu_activity_snapshot& s) { return std::to_string(s.bytes); }},
      {"ringlog_cpu_scopes_total",
       "Pieces of work timed for the activity; each reads the thread's CPU clock twice (the accounting's own cost).",
       [](const cpu_activity_snapshot& s) { return std::to_string(s.scopes); }},
  };
  constexpr cpu_activity activities[] = {cpu_activity::produce, cpu_activity::replicate_leader,
                                         cpu_activity::replicate_follower, cpu_activity::fetch};
  for (const family& f : families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", f.name, f.help, f.name);
    for (cpu_activity a : activities) {
      out += fmt::format("{}{{activity=\"{}\"}} {}\n", f.name, base::cpu_activity_label(a),
                         f.value(base::read_cpu_activity(a)));
    }
  }
}

/// The families the broker's threads count lock-free (base/): the stage histograms of a produce
/// and a fetch wake-up, and CPU per byte by activity.
void render_broker_families(std::string& out) {
  using base::latency_stage;
  render_stages(out, "ringlog_produce_latency_seconds",
                "Where a Kafka produce's time goes, per append (docs/metrics.md): queue (decoded -> the partition's "
                "shard), append, fsync_wait (-> its group fdatasync submitted), fsync, replication_wait (acks=all), "
                "total (decoded -> ack ready), order_wait (per request: answer on its connection -> its write started, "
                "behind earlier answers), sent (per request: read off the socket -> answer written to it).",
                {latency_stage::produce_queue, latency_stage::produce_append, latency_stage::produce_fsync_wait, latency_stage::produce_fsync,
                 latency_stage::produce_replication_wait, latency_stage::produce_total, latency_stage::produce_order_wait,
                 latency_stage::produce_sent});
  render_stages(out, "ringlog_fetch_wakeup_latency_seconds",
                "Kafka long-poll fetches woken by the high watermark: wake-up -> answer handed to the connection.",
                {latency_stage::fetch_wakeup});
  render_stages(out, "ringlog_kafka_read_paused_seconds",
                "Kafka connections that stopped reading at their in-flight bound (connection_in_flight_requests_max "
                "unanswered requests or connection_held_bytes_max bytes held): pause -> reading again, one sample per pause; the requests behind it waited in the "
                "socket meanwhile.",
                {latency_stage::kafka_read_paused});
  render_stages(out, "ringlog_shard_loop_lag_seconds",
                "How late each shard's event loop ran a timer due every shard_loop_lag_probe_interval_ms (10 ms): the wait of any ready socket or disk "
                "completion on a loop busy with other work or a thread off its core.",
                {latency_stage::shard_loop_lag});
  render_cpu_activity(out);
}

/// ringlog_topic_{records,bytes}_{in,out}_total{topic}: every door's clients (base/topic_traffic.h).
void render_topic_traffic(std::string& out) {
  struct family {
    const char* name;
    const char* help;
    uint64_t base::topic_traffic_counts::*field;
  };
  static constexpr family families[] = {
      {"ringlog_topic_records_in_total", "Records produced to the topic by clients of every door.",
       &base::topic_traffic_counts::records_in},
      {"ringlog_topic_bytes_in_total",
       "Bytes produced to the topic: key, value and headers over HTTP/WebSocket, record batches over Kafka.",
       &base::topic_traffic_counts::bytes_in},
      {"ringlog_topic_records_out_total", "Records fetched from the topic by clients of every door.",
       &base::topic_traffic_counts::records_out},
      {"ringlog_topic_bytes_out_total",
       "Bytes fetched from the topic: key, value and headers over HTTP/WebSocket, record batches over Kafka.",
       &base::topic_traffic_counts::bytes_out},
  };
  const auto traffic = base::topic_traffic();
  for (const family& f : families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", f.name, f.help, f.name);
    for (const auto& [topic, c] : traffic) {
      out += fmt::format("{}{{topic=\"{}\"}} {}\n", f.name, escape_label(topic), c.*(f.field));
    }
  }
}

}  // namespace

std::string metrics::render(const std::vector<broker::topic_description>& topics,
                            const io::latency_histogram::snapshot& fsync,
                            const io::latency_histogram::snapshot& cleaner_step) const {
  std::string out;
  std::lock_guard lock(mutex_);
  out += "# HELP ringlog_http_requests_total HTTP requests answered, by route template and status.\n";
  out += "# TYPE ringlog_http_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    out += fmt::format("ringlog_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", escape_label(key.first),
                       key.second, count);
  }
  out += "# HELP ringlog_http_request_duration_seconds Time from request read to response written.\n";
  out += "# TYPE ringlog_http_request_duration_seconds histogram\n";
  for (const auto& [route, h] : latency_) {
    std::string label = escape_label(route);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < latency_buckets_s.size(); ++i) {
      cumulative += h.buckets[i];
      out += fmt::format("ringlog_http_request_duration_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n", label,
                         latency_buckets_s[i], cumulative);
    }
    out += fmt::format("ringlog_http_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n", label, h.count);
    out += fmt::format("ringlog_http_request_duration_seconds_sum{{route=\"{}\"}} {}\n", label, h.sum);
    out += fmt::format("ringlog_http_request_duration_seconds_count{{route=\"{}\"}} {}\n", label, h.count);
  }
  render_topic_traffic(out);
  // Per partition: series only for the replicas this node holds (a replica removed here, by a
  // reassignment or a topic deletion, takes its series with it; the console sums these).
  auto partition_gauge = [&](const char* name, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const auto& t : topics) {
      for (const auto& p : t.partitions) {
        if (!p.replica_here) continue;
        out += fmt::format("{}{{topic=\"{}\",partition=\"{}\"}} {}\n", name, escape_label(t.name), p.partition.value(),
                           value(p));
      }
    }
  };
  partition_gauge("ringlog_partition_log_end_offset", "Offset the next appended record gets.",
                  [](const broker::partition_description& p) { return p.log_end_offset.value(); });
  partition_gauge("ringlog_partition_high_watermark", "Offset below which records are committed.",
                  [](const broker::partition_description& p) { return p.high_watermark.value(); });
  out += "# HELP ringlog_topic_under_replicated_partitions Partitions of the topic with a leader and fewer in-sync replicas than replicas (the cluster's metadata).\n";
  out += "# TYPE ringlog_topic_under_replicated_partitions gauge\n";
  for (const auto& t : topics) {
    out += fmt::format("ringlog_topic_under_replicated_partitions{{topic=\"{}\"}} {}\n", escape_label(t.name),
                       health_of(t).under_replicated);
  }
  out += "# HELP ringlog_topic_offline_partitions Partitions of the topic without a leader (the cluster's metadata).\n";
  out += "# TYPE ringlog_topic_offline_partitions gauge\n";
  for (const auto& t : topics) {
    out += fmt::format("ringlog_topic_offline_partitions{{topic=\"{}\"}} {}\n", escape_label(t.name), health_of(t).offline);
  }
  partition_gauge("ringlog_partition_size_bytes", "Bytes of the partition's segments on disk.",
                  [](const broker::partition_description& p) { return p.size_bytes; });
  // The log cleaner (compacted topics only; Kafka's kafka.log:type=LogCleaner figures per partition).
  struct cleaner_family {
    const char* name;
    const char* type;
    const char* help;
    std::string (*value)(const broker::partition_description::cleaner_figures&);
  };
  static const cleaner_family cleaner_families[] = {
      {"ringlog_log_cleaner_dirty_ratio", "gauge", "Dirty bytes / cleanable bytes of the partition's log.",
       [](const broker::partition_description::cleaner_figures& c) { return fmt::format("{}", c.dirty_ratio); }},
      {"ringlog_log_cleaner_bytes_read_total", "counter", "Bytes of segments the cleaner rewrote.",
       [](const broker::partition_description::cleaner_figures& c) { return std::to_string(c.bytes_read_total); }},
      {"ringlog_log_cleaner_bytes_written_total", "counter", "Bytes of cleaned segments written.",
       [](const broker::partition_description::cleaner_figures& c) { return std::to_string(c.bytes_written_total); }},
      {"ringlog_log_cleaner_passes_total", "counter", "Cleaning passes over the partition.",
       [](const broker::partition_description::cleaner_figures& c) { return std::to_string(c.passes_total); }},
      {"ringlog_log_cleaner_tombstones_removed_total", "counter",
       "Tombstones the cleaner removed once their delete horizon (KIP-534) passed.",
       [](const broker::partition_description::cleaner_figures& c) { return std::to_string(c.tombstones_removed_total); }},
      {"ringlog_log_cleaner_seconds_total", "counter", "Wall time of the cleaning passes.",
       [](const broker::partition_description::cleaner_figures& c) { return fmt::format("{}", c.time_ms_total / 1000.0); }},
      {"ringlog_log_cleaner_last_clean_timestamp_seconds", "gauge", "When the last pass ended (Unix time), -1 never.",
       [](const broker::partition_description::cleaner_figures& c) {
         return c.last_clean_ms < 0 ? std::string("-1") : fmt::format("{}", c.last_clean_ms / 1000.0);
       }},
  };
  for (const auto& f : cleaner_families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
    for (const auto& t : topics) {
      const auto policy = std::find_if(t.configs.begin(), t.configs.end(),
                                       [](const auto& c) { return c.name == "cleanup.policy"; });
      if (policy == t.configs.end() || policy->value.find("compact") == std::string::npos) continue;
      for (const auto& p : t.partitions) {
        if (!p.replica_here) continue;
        out += fmt::format("{}{{topic=\"{}\",partition=\"{}\"}} {}\n", f.name, escape_label(t.name),
                           p.partition.value(), f.value(p.cleaner));
      }
    }
  }
  render_histogram(out, "ringlog_log_fsync_duration_seconds",
                   "fdatasync latency of segment files, submission to completion.", fsync);
  render_histogram(out, "ringlog_log_cleaner_step_duration_seconds",
                   "Time each log cleaner step held its shard's event loop (a bounded read, or one part of a swap).",
                   cleaner_step);
  render_broker_families(out);
  return out;
}

std::string render_client_quota_metrics(const std::vector<broker::client_quota_usage>& usages) {
  struct family {
    const char* name;
    const char* type;
    const char* help;
    /// The sample's value; nullopt: no sample (a removed quota has no bound).
    std::optional<std::string> (*value)(const broker::client_quota_usage&);
  };
  static const std::array<family, 4> families = {{
      {"ringlog_client_quota_bound", "gauge", "The quota bounding the client now, in the key's unit (bytes/s, %, mutations/s).",
       [](const broker::client_quota_usage& u) -> std::optional<std::string> {
         if (!u.bound) return std::nullopt;
         return fmt::format("{}", *u.bound);
       }},
      {"ringlog_client_quota_value_total", "counter", "Bytes (or %-ms, mutations) recorded against the quota since start.",
       [](const broker::client_quota_usage& u) -> std::optional<std::string> { return fmt::format("{}", u.total); }},
      {"ringlog_client_quota_throttle_time_ms_total", "counter", "Throttle time handed to the client since start, ms (KIP-219).",
       [](const broker::client_quota_usage& u) -> std::optional<std::string> {
         return std::to_string(u.throttle_time_ms_total);
       }},
      {"ringlog_client_quota_throttled_total", "counter", "Requests of the client that went over the quota since start.",
       [](const broker::client_quota_usage& u) -> std::optional<std::string> { return std::to_string(u.throttled_total); }},
  }};
  std::string out;
  for (const auto& f : families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
    for (const auto& u : usages) {
      const auto value = f.value(u);
      if (!value) continue;
      out += fmt::format("{}{{quota=\"{}\",entity=\"{}\"}} {}\n", f.name, security::to_string(u.key),
                         escape_label(u.sensor_key), *value);
    }
  }
  return out;
}

std::string render_replication_throttle_metrics(const broker::replication_throttle_figures& figures) {
  const std::pair<const char*, const broker::replication_throttle_side_figures*> sides[] = {
      {"leader", &figures.leader}, {"follower", &figures.follower}};
  std::string out =
      "# HELP ringlog_replication_throttled_bytes_total Bytes of throttled replication moved since start: leader, "
      "sent to followers outside a partition's ISR; follower, fetched for partitions whose ISR this broker is not "
      "in (counted only while the side's replication.throttled.rate bounds).\n"
      "# TYPE ringlog_replication_throttled_bytes_total counter\n";
  for (const auto& [side, f] : sides) {
    out += fmt::format("ringlog_replication_throttled_bytes_total{{side=\"{}\"}} {}\n", side, f->throttled_bytes_total);
  }
  out += "# HELP ringlog_replication_throttle_time_ms_total Wall time throttled replication waited for its side's "
         "rate since start, ms (partitions held back together count once).\n"
         "# TYPE ringlog_replication_throttle_time_ms_total counter\n";
  for (const auto& [side, f] : sides) {
    out += fmt::format("ringlog_replication_throttle_time_ms_total{{side=\"{}\"}} {}\n", side, f->throttle_time_ms_total);
  }
  return out;
}

std::string render_autobalancer_metrics(const broker::autobalancer_figures& figures) {
  std::string out =
      "# HELP ringlog_autobalancer_moves_started_total Partition reassignments the partition autobalancer started "
      "while this node was the active controller, since start: node_add, a broker holding no replica got its "
      "share; balance, continuous mode's periodic balance; unavailable, replicas moved off a broker unavailable "
      "past partition.autobalancer.node.availability.timeout.ms.\n"
      "# TYPE ringlog_autobalancer_moves_started_total counter\n";
  const std::pair<const char*, int64_t> reasons[] = {
      {"node_add", figures.node_add}, {"balance", figures.balance}, {"unavailable", figures.unavailable}};
  for (const auto& [reason, count] : reasons) {
    out += fmt::format("ringlog_autobalancer_moves_started_total{{reason=\"{}\"}} {}\n", reason, count);
  }
  return out;
}

namespace {

/// The topic's min.insync.replicas (its effective value; 1 when the description has none).
size_t min_insync_replicas_of(const broker::topic_description& t) {
  const auto entry = std::find_if(t.configs.begin(), t.configs.end(),
                                  [](const auto& c) { return c.name == "min.insync.replicas"; });
  int64_t value = 1;
  if (entry != t.configs.end()) std::from_chars(entry->value.data(), entry->value.data() + entry->value.size(), value);
  return static_cast<size_t>(std::max(int64_t{1}, value));   // validated when set: [1, ...)
}

}  // namespace

std::string render_broker_partition_metrics(const std::vector<broker::topic_description>& topics, int32_t node_id) {
  int64_t partitions = 0;
  int64_t leaders = 0;
  int64_t under_replicated = 0;
  int64_t under_min_isr = 0;
  for (const auto& t : topics) {
    const size_t min_isr = min_insync_replicas_of(t);
    for (const auto& p : t.partitions) {
      if (!p.replica_here) continue;
      ++partitions;
      if (p.leader != node_id) continue;
      ++leaders;
      if (p.in_sync_replicas.size() < p.replicas.size()) ++under_replicated;
      if (p.in_sync_replicas.size() < min_isr) ++under_min_isr;
    }
  }
  return fmt::format(
      "# HELP ringlog_broker_partition_count Partition replicas this broker holds (Kafka's PartitionCount).\n"
      "# TYPE ringlog_broker_partition_count gauge\nringlog_broker_partition_count {}\n"
      "# HELP ringlog_broker_leader_count Partitions this broker leads (Kafka's LeaderCount).\n"
      "# TYPE ringlog_broker_leader_count gauge\nringlog_broker_leader_count {}\n"
      "# HELP ringlog_broker_under_replicated_partitions Partitions this broker leads with fewer in-sync replicas "
      "than replicas (Kafka's UnderReplicatedPartitions: sum() over the brokers is the cluster's count).\n"
      "# TYPE ringlog_broker_under_replicated_partitions gauge\nringlog_broker_under_replicated_partitions {}\n"
      "# HELP ringlog_broker_under_min_isr_partitions Partitions this broker leads with fewer in-sync replicas than "
      "their min.insync.replicas: acks=all produces to them fail (Kafka's UnderMinIsrPartitionCount).\n"
      "# TYPE ringlog_broker_under_min_isr_partitions gauge\nringlog_broker_under_min_isr_partitions {}\n",
      partitions, leaders, under_replicated, under_min_isr);
}

std::string render_controller_metrics(int32_t node_id, int32_t controller_id) {
  return fmt::format(
      "# HELP ringlog_controller_active_controller_count 1 on the active controller (the metadata quorum's leader), "
      "0 on every other node (Kafka's ActiveControllerCount): sum() over the nodes is 1 in a healthy cluster, 0 "
      "without a quorum.\n"
      "# TYPE ringlog_controller_active_controller_count gauge\n"
      "ringlog_controller_active_controller_count {}\n"
      "# HELP ringlog_metadata_quorum_leader_known 1 while this node knows a metadata quorum leader, 0 during an "
      "election or a quorum loss (then broker states and partition counts from the metadata are as last known).\n"
      "# TYPE ringlog_metadata_quorum_leader_known gauge\n"
      "ringlog_metadata_quorum_leader_known {}\n",
      controller_id >= 0 && controller_id == node_id ? 1 : 0, controller_id >= 0 ? 1 : 0);
}

}  // namespace ringlog::gateway
