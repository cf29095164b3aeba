#pragma once
// The replicas of one shard (issue 28 stage B; Kafka's ReplicaManager and LogManager, one per
// shard here): the map of the shard's partitions, the deadlines of the fetches parked on them,
// the reads kept for fetches of the same records (recent_read) and the maintenance tick
// (retention, checkpoints, the shard's log cleaner passes). Touched only on its shard's thread;
// the broker owns one per shard and opens and drops the replicas through it.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/partition/compaction.h"
#include "ringlog/partition/partition.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::partition {

class partition_manager {
 public:
  /// "topic-partition" (partition_key) -> the replica on this shard.
  using partitions_map = std::unordered_map<std::string, std::shared_ptr<partition_runtime>>;

  /// The static broker configs of the maintenance tick.
  struct maintenance_settings {
    /// ms between ticks: the least of base::constants::maintenance_interval_ms,
    /// log.retention.check.interval.ms and log.cleaner.backoff.ms.
    int64_t tick_ms = 0;
    int64_t retention_check_interval_ms = 0;   ///< log.retention.check.interval.ms
  };

  /// `runtime` runs the timers and tasks on `shard`; `clock` gives their ms; `stopping` ends the
  /// tick and the cleaner's passes; `cleaner` is the broker's log cleaner (this shard's passes).
  /// All outlive this.
  partition_manager(size_t shard, runtime::shard_runtime& runtime, const base::clock& clock,
                    const std::atomic<bool>& stopping, compaction& cleaner, maintenance_settings maintenance)
      : shard_(shard),
        runtime_(runtime),
        clock_(clock),
        stopping_(stopping),
        cleaner_(cleaner),
        maintenance_(maintenance),
        last_retention_ms_(clock.now_ms()) {}

  /// The replica of `topic`-`partition` on this shard, or null when it is not open here.
  [[nodiscard]] std::shared_ptr<partition_runtime> find(const std::string& topic, int32_t partition) const {
    auto it = partitions_.find(partition_key(topic, partition));
    return it == partitions_.end() ? nullptr : it->second;
  }
  /// Every replica open on this shard.
  [[nodiscard]] partitions_map& partitions() { return partitions_; }
  /// `partition` is open here from now on (replacing a replica of the same key).
  void add(std::shared_ptr<partition_runtime> partition) {
    partitions_[partition_key(partition->topic, partition->partition)] = std::move(partition);
  }
  /// `topic`-`partition` is no longer open here (dropped or deleted).
  void remove(const std::string& topic, int32_t partition) { partitions_.erase(partition_key(topic, partition)); }

  /// This shard's kept reads, newest first, at most recent_reads_max (partition_context::recent_reads).
  [[nodiscard]] std::deque<recent_read>& recent_reads() { return recent_reads_; }
  /// Arms the deadline of `waiter`, parked on `partition`, at `at_ms` (clock ms): when it passes
  /// the fetch is answered with answer_empty (partition_context::add_fetch_deadline).
  void add_fetch_deadline(int64_t at_ms, const std::shared_ptr<partition_runtime>& partition,
                          const std::shared_ptr<fetch_waiter>& waiter);

  /// Starts the maintenance tick: every tick_ms (until stopping) each partition's retention (every
  /// retention_check_interval_ms) and checkpoint, then a look by the cleaner at each compacted one.
  void schedule_maintenance();

 private:
  void maintain();
  void maintain_partition(partition_runtime& rt, bool retention_due);
  /// At each maintenance tick: queues every compacted partition of the shard not yet waiting, then
  /// clean_next (which does nothing while a pass runs: that pass's end calls it).
  void queue_cleaning();
  /// Starts a pass over the first queued log that is due (compaction::begin), skipping the others;
  /// each log leaves the queue when looked at, so every compacted log gets one look per tick, and
  /// a log whose delete horizon passed is cleaned within a tick plus the passes queued before it
  /// (paced by log.cleaner.io.max.bytes.per.second), not only when the shard's tick finds it first.
  void clean_next();
  /// One bounded step of the shard's cleaning pass over `rt` (compaction.h); queues the next,
  /// or, when the pass ended, clean_next.
  void clean_step(const std::shared_ptr<partition_runtime>& rt);
  /// A timer at the earliest deadline unless one fires by then already.
  void arm_fetch_deadline_timer();
  /// The timer set for `timer_at_ms` fired: answers every fetch whose deadline passed.
  void expire_fetches(int64_t timer_at_ms);

  struct fetch_deadline {
    int64_t at_ms = 0;
    std::weak_ptr<fetch_waiter> waiter;   // gone or completed: nothing to do
    std::weak_ptr<partition_runtime> partition;
    bool operator>(const fetch_deadline& o) const { return at_ms > o.at_ms; }
  };

  size_t shard_;
  runtime::shard_runtime& runtime_;
  const base::clock& clock_;
  const std::atomic<bool>& stopping_;
  compaction& cleaner_;
  const maintenance_settings maintenance_;
  int64_t last_retention_ms_;   // clock ms of the last retention check
  /// Compacted partitions waiting for a look by the cleaner this tick.
  std::deque<std::weak_ptr<partition_runtime>> clean_queue_;
  partitions_map partitions_;
  /// Deadlines of parked fetches, earliest on top, and the timers set and not yet fired (usually one).
  std::priority_queue<fetch_deadline, std::vector<fetch_deadline>, std::greater<>> deadlines_;
  std::multiset<int64_t> timers_at_ms_;
  std::deque<recent_read> recent_reads_;
};

}  // namespace ringlog::partition
