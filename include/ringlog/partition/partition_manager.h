#pragma once
// The replicas of one shard (issue 28 stage B; Kafka's ReplicaManager and LogManager, one per
// shard here): the map of the shard's partitions, the deadlines of the fetches parked on them,
// the reads kept for fetches of the same records (recent_read) and the maintenance tick
// (retention, checkpoints, the shard's log cleaner passes), and the replicas' directories: opened
// (or created) with their partition.metadata, removed, and the stray ones of a restart moved
// aside or deleted.
// Touched only on its shard's thread; the broker owns one per shard and hands it the partitions'
// images (apply_partition_state: leaderships begun and ended go to the leadership_observer).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/io/file.h"
#include "ringlog/partition/compaction.h"
#include "ringlog/partition/errc.h"
#include "ringlog/partition/partition.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/storage/log_config.h"
#include "ringlog/storage/log_dir_failure.h"
#include "ringlog/storage/segment_file_budget.h"

namespace ringlog::partition {

/// Who moves with the leaderships of a shard's replicas (issue 28 stage B): the group and
/// transaction coordinators (__consumer_offsets, __transaction_state) and the delay schedulers
/// (delay topics) live where their partition's leader is. The broker implements it; the
/// partition module never sees who listens (tests/layering).
class replica_fetcher;   // replica_fetcher.h

class leadership_observer {
 public:
  /// On `shard`'s thread: this node began (`leads`) or ended leading `partition`, whose state
  /// changed already (a new leadership's epoch begun; an ended one's waiters answered).
  virtual void on_leadership_change(size_t shard, const std::shared_ptr<partition_runtime>& partition,
                                    bool leads) = 0;

 protected:
  ~leadership_observer() = default;
};

/// What applying a partition's image to its replica reaches above the partition module (issue 28
/// stage D), besides the leadership_observer: the broker's registration and its controlled
/// shutdown. (The follower's fetch loops are the replica fetcher's, reached directly through
/// replica_services::fetcher.) The broker implements it; called on the replica's shard.
class replica_host {
 public:
  /// Whether the metadata this shard reads has this node registered under this process's
  /// incarnation (before that, the image may still name it leader in its previous life's epoch).
  [[nodiscard]] virtual bool registered_in_this_incarnation() const = 0;
  /// The image names this node leader of `partition` in `leader_epoch` before it registered:
  /// noted for the controller shard, which moves or renews that leadership in a new epoch.
  virtual void note_stale_leadership(const partition_runtime& partition, int32_t leader_epoch) = 0;
  /// This broker's controlled shutdown is done (leaderless partitions are not logged then).
  [[nodiscard]] virtual bool controlled_shutdown_done() const = 0;

 protected:
  ~replica_host() = default;
};

/// The broker-wide part of every replica's partition_context (partition.h), the same for every
/// shard; each manager adds its shard's own (the shard, its disk executor, its kept reads and
/// fetch deadlines). The atomics outlive the managers.
struct replica_services {
  std::function<size_t()> current_shard;
  partition_context::settings config;
  std::function<int32_t(const std::string& topic)> min_insync_replicas;
  std::function<int64_t()> leader_replication_throttled_rate;
  std::function<int64_t(int64_t rate, int64_t now_ms)> acquire_leader_throttle;
  std::function<void(int64_t bytes, int64_t rate, int64_t now_ms)> record_leader_throttle;
  const std::atomic<int64_t>& leadership_lease_until_ms;
  std::atomic<uint64_t>& next_read_id;
  std::atomic<uint64_t>& next_txn_verification;
  int32_t node_id = -1;   ///< node.id: a leader or follower of the partitions that list it
  leadership_observer& observer;
  replica_host& host;
  /// The follower's fetch loops (replica_fetcher.h): a new leadership starts a new generation,
  /// a follower's loop starts from its leader.
  replica_fetcher& fetcher;
};

/// log.dirs as the replicas use it: one directory "topic-partition" (partition_key) per replica,
/// each with Kafka's partition.metadata naming its topic id.
struct log_directory {
  io::file_system& fs;
  std::string path;
  /// The broker's log lines (info or error); may be empty.
  std::function<void(bool info, const std::string& message)> log;
  /// Where every replica's log reports a failed write of this directory (log_dir_failure.h);
  /// nullptr: not reported (the failure is only returned, as before).
  storage::log_dir_failure_channel* failures = nullptr;
  /// The broker's budget of sealed segments' open files, charged by every replica's log
  /// (storage/segment_file_budget.h); nullptr: none.
  storage::segment_file_budget* segment_budget = nullptr;
  /// A failed write of `operation` on the directory (not of one log): reported to `failures`,
  /// returned as kafka_storage_error.
  error failed(std::string_view operation, const io::error& e) const;
  [[nodiscard]] std::string of(const std::string& topic, int32_t partition) const {
    return path + "/" + partition_key(topic, partition);
  }
};

/// Start-up, once the broker caught up with the metadata (never before: an image behind the
/// quorum's would take a new topic's directory for a stray one), before its replicas open: moves
/// aside (renames to "<name>.<topic id>-stray", never deletes: Kafka's LogManager does so) every
/// directory of `dir` whose partition.metadata names a topic id that `image` has no topic of (the
/// topic was deleted while this broker was down) unless its name is a partition `node_id` hosts
/// (then open_replica keeps it offline: a re-created topic's predecessor or a damaged file, the
/// image cannot tell), and deletes those of a topic of `image` whose partition there does not list
/// `node_id` among its replicas (a reassignment removed it while this broker was down). Each is
/// logged, naming the directory and why. Directories without a readable partition.metadata, and
/// those moved aside before, are left alone. Kafka's counterpart: LogManager's stray-log handling
/// (KAFKA-14616, KIP-858).
void remove_stray_replicas(const log_directory& dir, const controller::metadata_image& image, int32_t node_id);

/// The text of partition.metadata for `topic_id` (Kafka's PartitionMetadataFile, version 0).
std::string partition_metadata_text(const controller::uuid& topic_id);

/// The shard of partition `partition` of `topic` among `shard_count` (> 0): a stable hash
/// (FNV-1a of the name, then the partition id), so a partition's shard never changes while the
/// shard count stays.
size_t shard_of(const std::string& topic, int32_t partition, size_t shard_count);

/// Runs `task(i)` for each i in [0, count) on shard `shard_of(i)` (the replica's own thread),
/// then `done` on `reply_shard` once every task ran: ok, or the first failure (each task runs
/// whatever the others returned). `count` 0 answers at once, on the calling thread.
void run_on_shards(runtime::shard_runtime& runtime, size_t count, const std::function<size_t(size_t)>& shard_of,
                   std::function<result<void>(size_t)> task, size_t reply_shard,
                   std::function<void(result<void>)> done);

/// A step of run_in_order: calls `next` once, with its outcome, on any shard.
using ordered_step = std::function<void(std::function<void(result<void>)> next)>;
/// What run_in_order does after a step failed.
enum class after_failure {
  run_the_rest,   ///< every step runs; `done` gets the first failure (a reconciliation, start-up's opening)
  stop,           ///< `done` gets the failure at once, the later steps never run
};
/// Runs `steps` one after another on `shard` of `runtime`: the first on the calling thread, each
/// next one posted to `shard` once the one before called its `next`. `done` once: on `shard`
/// with ok or the first failure (run_the_rest), or where the failing step's `next` ran (stop);
/// at once on the calling thread when `steps` is empty. Bounded by `steps`; no recursion.
void run_in_order(runtime::shard_runtime& runtime, size_t shard, std::vector<ordered_step> steps, after_failure mode,
                  std::function<void(result<void>)> done);

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
  /// tick and the cleaner's passes; `cleaner` is the broker's log cleaner (this shard's passes);
  /// `services` and `dir` are what the shard's replicas reach. All outlive this.
  partition_manager(size_t shard, runtime::shard_runtime& runtime, const base::clock& clock,
                    const std::atomic<bool>& stopping, compaction& cleaner, maintenance_settings maintenance,
                    const replica_services& services, log_directory dir);
  partition_manager(const partition_manager&) = delete;
  partition_manager& operator=(const partition_manager&) = delete;

  /// Opens (or creates) the log of `topic`-`partition` in its directory and adds its replica here
  /// (Kafka's LogManager.getOrCreateLog), then applies `state` (apply_partition_state: a
  /// leadership or a following) and marks it open in `stats`. A directory whose
  /// partition.metadata names another topic id (a topic deleted or re-created before a crash let
  /// its removal finish, or a damaged file) or does not parse is refused (kafka_storage_error
  /// naming the file, both ids and the repair) with its files kept; one without it is deleted
  /// first when `fresh` (a new partition: ringlog before topic ids left none). Errors:
  /// kafka_storage_error, the log's own.
  result<void> open_replica(const std::string& topic, const controller::uuid& topic_id, int32_t partition,
                            const storage::log_config& log_config, std::shared_ptr<partition_stats> stats,
                            const controller::partition_image& state, bool fresh);
  /// Closes the replica of `topic`-`partition` if it is open here (marked deleted, out of the
  /// cleaner, its metrics series and this shard's map, its follower loop ended, its waiting
  /// appends and parked fetches answered `why`: partition_runtime::close_for_removal), then
  /// deletes its directory (one already gone is no error).
  /// Errors: kafka_storage_error with the removal's reason.
  result<void> remove_replica(const std::string& topic, int32_t partition, const error& why);
  /// This node is no longer a replica of `topic`-`partition` (a reassignment removed it; `now` is
  /// its image): its leadership or following ends, its waiters are answered
  /// not_leader_or_follower and its directory is deleted (logged either way).
  void drop_replica(const std::string& topic, int32_t partition, const controller::partition_image& now);
  /// Brings `partition` in line with its image `image` (Kafka's Partition.makeLeader /
  /// makeFollower): a leadership that begins (its epoch recorded at the log end, KIP-101) or ends
  /// (acks=all waiters failed, parked fetches answered), an ISR change, a new leader to follow.
  /// Leaderships begun and ended go to the leadership_observer.
  void apply_partition_state(const std::shared_ptr<partition_runtime>& partition,
                             const controller::partition_image& image);

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
  /// apply_partition_state's two halves: this node stops leading (`new_leader` named to the
  /// waiters failed) or begins to in `image`'s epoch.
  void end_leadership(const std::shared_ptr<partition_runtime>& partition, int32_t new_leader);
  void begin_leadership(const std::shared_ptr<partition_runtime>& partition, const controller::partition_image& image);
  /// A line of the broker's log (info or error).
  void log(bool info, const std::string& message) const;
  /// This shard's partition_context over `services` and this manager's members.
  std::unique_ptr<partition_context> make_partition_context(const replica_services& services);
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
  const log_directory dir_;
  const int32_t node_id_;
  leadership_observer& observer_;
  replica_host& host_;
  replica_fetcher& fetcher_;
  const base::clock& clock_;
  const std::atomic<bool>& stopping_;
  compaction& cleaner_;
  const maintenance_settings maintenance_;
  int64_t next_retention_ms_;   // clock ms from which the next tick checks retention
  /// What this shard's replicas reach (partition.h); declared before them, so it outlives them.
  std::unique_ptr<partition_context> context_;
  /// partition_runtime::uid: unique on this shard (a partition's shard never changes), so a
  /// re-created partition is another one.
  uint64_t next_partition_uid_ = 1;
  /// Compacted partitions waiting for a look by the cleaner this tick.
  std::deque<std::weak_ptr<partition_runtime>> clean_queue_;
  partitions_map partitions_;
  /// Deadlines of parked fetches, earliest on top, and the timers set and not yet fired (usually one).
  std::priority_queue<fetch_deadline, std::vector<fetch_deadline>, std::greater<>> deadlines_;
  std::multiset<int64_t> timers_at_ms_;
  std::deque<recent_read> recent_reads_;
};

}  // namespace ringlog::partition
