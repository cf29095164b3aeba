#pragma once
// Prometheus text exposition (format 0.0.4) of the gateway's counters: requests and latency per
// route, bytes and records in/out per topic, partition log end offsets and sizes.
// Shared by every shard behind one mutex: a scrape or an increment holds it for microseconds.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/broker/broker.h"
#include "ringlog/io/disk_executor.h"

namespace ringlog::gateway {

/// Partition health from the cluster's metadata (every broker sees every topic's leader and ISR),
/// as Kafka's operators count it: offline = no leader (Kafka's OfflinePartitionsCount, its whole
/// ISR is gone); under-replicated = a leader but fewer in-sync replicas than replicas (Kafka's
/// UnderReplicatedPartitions, summed over the leaders). An offline partition is not also counted
/// under-replicated.
struct partition_health {
  int64_t under_replicated = 0;
  int64_t offline = 0;
  partition_health& operator+=(const partition_health& o) {
    under_replicated += o.under_replicated;
    offline += o.offline;
    return *this;
  }
};
partition_health health_of(const broker::topic_description& t);

class metrics {
 public:
  /// Upper bounds (seconds) of the request latency histogram buckets; +Inf is implicit.
  static constexpr std::array<double, 14> latency_buckets_s = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                               0.1,    0.25,  0.5,    1,     2.5,   5,    10};

  /// `route` is the route's template ("GET /topics/{topic}"), never the raw path (bounded labels).
  void observe_request(std::string_view route, unsigned status, double seconds);
  /// Per-topic traffic, counted process-wide with every door's (base/topic_traffic.h).
  void add_bytes_in(const std::string& topic, uint64_t records, uint64_t bytes);
  void add_bytes_out(const std::string& topic, uint64_t records, uint64_t bytes);
  /// The whole exposition; `topics` adds per-partition gauges, `fsync` the fdatasync latency
  /// histogram of every shard's disk executor added together, `cleaner_step` the time log
  /// cleaner steps held their shard's loop (broker::cleaner_step_time).
  [[nodiscard]] std::string render(const std::vector<broker::topic_description>& topics,
                                   const io::latency_histogram::snapshot& fsync = {},
                                   const io::latency_histogram::snapshot& cleaner_step = {}) const;

 private:
  struct histogram {
    std::array<uint64_t, latency_buckets_s.size()> buckets{};   // non-cumulative counts
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, uint64_t> requests_;   // (route, status) -> count
  std::map<std::string, histogram> latency_;                         // route -> histogram
};

/// Escapes a Prometheus label value (backslash, quote, newline).
std::string escape_label(std::string_view value);

/// Issue 31: what the broker's quota sensors counted (broker::client_quota_usages, at most
/// client_quota_metrics_sensors_max of them, so the labels stay bounded), as
/// ringlog_client_quota_{bound,value_total,throttle_time_ms_total,throttled_total}
/// {quota="producer_byte_rate",entity="user=alice,client-id=app"}. Every family's HELP and TYPE
/// are written even with no sensor.
std::string render_client_quota_metrics(const std::vector<broker::client_quota_usage>& usages);

/// Issue 33: what replication throttling (leader/follower.replication.throttled.rate) held back
/// since start, as ringlog_replication_throttled_bytes_total{side="leader|follower"} and
/// ringlog_replication_throttle_time_ms_total{side=...} (broker::replication_throttle_figures).
std::string render_replication_throttle_metrics(const broker::replication_throttle_figures& figures);

/// Issue 33: the partition reassignments the autobalancer started since start, as
/// ringlog_autobalancer_moves_started_total{reason="node_add|balance|unavailable"}.
std::string render_autobalancer_metrics(const broker::autobalancer_figures& figures);

/// This broker's share of the partitions, from the metadata and the replicas it holds (Kafka's
/// kafka.server:type=ReplicaManager gauges): ringlog_broker_partition_count (replicas held here,
/// PartitionCount), ringlog_broker_leader_count (of them, led here: LeaderCount), and of the
/// partitions led here ringlog_broker_under_replicated_partitions (fewer in-sync replicas than
/// replicas: UnderReplicatedPartitions) and ringlog_broker_under_min_isr_partitions (fewer in-sync
/// replicas than the topic's min.insync.replicas: UnderMinIsrPartitionCount). Each partition
/// counts on its leader only, so sum() over the brokers is the cluster's figure. `topics` are those
/// of /metrics: the clients' topics, not the internal ones (Kafka's gauges count those too).
std::string render_broker_partition_metrics(const std::vector<broker::topic_description>& topics, int32_t node_id);

/// Whether there is an active controller, as this node knows it (`controller_id` is the metadata
/// quorum's leader, -1 while none is known): ringlog_controller_active_controller_count, 1 on the
/// active controller and 0 elsewhere (Kafka's kafka.controller:type=KafkaController,
/// name=ActiveControllerCount; sum() over the nodes is 1 in a healthy cluster), and
/// ringlog_metadata_quorum_leader_known, 1 while this node knows a quorum leader. During a quorum
/// loss both are 0 and the metadata gauges (broker states, under-replicated and offline counts)
/// are as last known.
std::string render_controller_metrics(int32_t node_id, int32_t controller_id);

}  // namespace ringlog::gateway
