#pragma once
// One replica of a partition on its shard, with its behaviour (issue 28 stage A; Kafka's
// Partition): the append of client batches, of the broker's own records and of transaction
// markers, the high watermark and the acks=all waiters, consumers' parked fetches, reads for
// consumers and for followers, and the KIP-890 part 1 guards. What it needs from the broker is
// handed in as a partition_context (one per shard), so the class never sees the broker.
// Defined in src/partition/partition.cc (high watermark, acks, reads, waiters) and
// partition_append.cc (the appends and the KIP-890 guards). Row 8 of docs/architecture.md's
// layering table: this module never includes ringlog/broker, group, txn or delay.
//
// Ownership by shard: a partition_runtime is touched only on its shard's thread; its entry
// points assert it (partition_context::current_shard).

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/io/disk_executor.h"
#include "ringlog/partition/errc.h"
#include "ringlog/partition/requests.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/replication/leader_state.h"
#include "ringlog/replication/offsets_gate.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::partition {

/// "topic-partition": the key of a shard's map of partitions.
std::string partition_key(const std::string& topic, int32_t partition);
/// Appends to `out` the records of `batches` (whole v2 batches) in [fetch_offset, high_watermark),
/// control batches skipped, until the key + value + header bytes would pass `max_bytes` (the first
/// record always goes). Returns those bytes. Errors: corrupt_message.
/// `aborted` (read_committed): the aborted transactions overlapping `batches`, whose records are
/// dropped (storage::aborted_txn_filter, Kafka's consumer rule); `high_watermark` is then the
/// last stable offset.
result<size_t> decode_fetched_records(std::span<const std::byte> batches, model::offset fetch_offset,
                                      model::offset high_watermark, int32_t max_bytes, std::vector<model::record>& out,
                                      const std::vector<aborted_transaction>* aborted = nullptr,
                                      model::offset* next_offset = nullptr);

/// Figures the owning shard publishes for readers on other threads (describe, metrics).
struct partition_stats {
  std::atomic<int64_t> log_start_offset{0};
  std::atomic<int64_t> high_watermark{0};
  std::atomic<int64_t> log_end_offset{0};
  /// False only on a leader whose high watermark is still below the log end at its election
  /// (KIP-207): the figure may be lower than the one its predecessor reported.
  std::atomic<bool> high_watermark_established{true};
  /// This node's replica is open: its runtime exists on the owning shard, so a call posted there
  /// from now on finds it (set by open_partition_on_shard, cleared when the replica is dropped).
  /// The metadata view names a partition before the reconcile step that opens it has run.
  std::atomic<bool> open_here{false};
  /// Why this node's replica could not be opened from its files (damaged ones: the breaker of
  /// session 40 saw such a partition reported healthy and empty), empty when it opened or was not
  /// tried. Non-empty: the replica is offline here, and every door says so (Kafka's offline
  /// replica on a failed log directory: KAFKA_STORAGE_ERROR, LEADER_NOT_AVAILABLE in Metadata).
  void set_open_failure(std::string why) {
    std::lock_guard lock(open_failure_mutex_);
    open_failure_ = std::move(why);
  }
  [[nodiscard]] std::string open_failure() const {
    std::lock_guard lock(open_failure_mutex_);
    return open_failure_;
  }
  std::atomic<uint64_t> size_bytes{0};
  // The log cleaner (compaction.h), for compacted topics.
  std::atomic<int64_t> cleaner_dirty_ratio_ppm{0};        // dirty / (clean + dirty), parts per million
  std::atomic<uint64_t> cleaner_bytes_read_total{0};      // bytes of segments rewritten
  std::atomic<uint64_t> cleaner_bytes_written_total{0};   // bytes of the cleaned segments written
  std::atomic<uint64_t> cleaner_passes_total{0};
  std::atomic<uint64_t> cleaner_tombstones_removed_total{0};   // tombstones dropped past their delete horizon
  std::atomic<uint64_t> cleaner_time_ms_total{0};         // wall time of the passes
  std::atomic<int64_t> cleaner_last_clean_ms{-1};         // broker clock at the end of the last pass

  /// On the owning shard when this node's replica is dropped (reassigned away, topic deleted):
  /// not open here any more, and every figure back to its start, so nothing reports the removed
  /// log (/metrics has no series for a partition not open here) and a replica opened here again
  /// starts its counters anew.
  void replica_removed() {
    open_here.store(false, std::memory_order_release);
    for (auto* f : {&log_start_offset, &high_watermark, &log_end_offset, &cleaner_dirty_ratio_ppm}) {
      f->store(0, std::memory_order_relaxed);
    }
    for (auto* f : {&size_bytes, &cleaner_bytes_read_total, &cleaner_bytes_written_total, &cleaner_passes_total,
                    &cleaner_tombstones_removed_total, &cleaner_time_ms_total}) {
      f->store(0, std::memory_order_relaxed);
    }
    cleaner_last_clean_ms.store(-1, std::memory_order_relaxed);
    set_open_failure({});
  }

 private:
  mutable std::mutex open_failure_mutex_;
  std::string open_failure_;
};

struct fetch_waiter {
  fetch_params request;
  std::function<void(result<fetch_response>)> done;
  bool completed = false;
  bool deadline_set = false;   // parked once: the wait ends at that deadline, however often it is woken
  int64_t woken_ns = 0;        // base::monotonic_ns of the latest wake-up by new data (metrics)
};

/// An acks=all append waiting until the high watermark passes its last record.
struct ack_waiter {
  int64_t deadline_ms = 0;
  std::function<void(result<void>)> done;
  int64_t durable_ns = 0;   // base::monotonic_ns when it was durable here (metrics: replication wait)
};

/// A follower's fetch parked at its leader until there is something new (replica.fetch.wait.max.ms).
struct replica_fetch_waiter {
  int32_t replica_id = -1;
  model::offset fetch_offset{0};
  int32_t max_bytes = 0;
  bool completed = false;
  std::function<void(protocol::fetch_response_data::partition_data)> done;
};

/// One verification of KIP-890 part 1 in flight (partition_runtime::txn_verifications).
struct txn_verification_guard {
  uint64_t id = 0;
  int16_t producer_epoch = -1;
};

/// Producers of one partition whose transaction verification may be in flight at once: each is
/// a round trip to a transaction coordinator; past it a first transactional batch is answered
/// concurrent_transactions (retriable). Bounds the map, not any producer's speed.
inline constexpr size_t txn_verifications_per_partition_max = 1024;

/// A fetch answer kept for the next fetches of the same records: 100 subscribers of a partition
/// ask for the same offset with the same limit after every append. Valid while the partition's
/// high watermark, log start offset and leader epoch are unchanged: records below the high
/// watermark change only by moving the log start (retention, delete-records) or by a leader change.
struct recent_read {
  uint64_t partition_uid = 0;
  model::offset fetch_offset{0};
  int32_t max_bytes = 0;
  model::offset high_watermark{0};
  model::offset log_start_offset{0};
  model::leader_epoch epoch{0};
  isolation_level isolation = isolation_level::read_uncommitted;   // high_watermark is the last stable offset with read_committed
  fetch_response response;
};

class partition_runtime;

/// KIP-320's fence (Kafka's Partition.checkCurrentLeaderEpoch): a client names the leader epoch
/// of partition `name` it believes current (-1: it names none, nothing is checked); `known` is
/// this broker's. Errors: fenced_leader_epoch (older: the client's metadata is stale),
/// unknown_leader_epoch (newer: this broker has not learned of it yet). Both retriable: the
/// client refreshes its metadata.
[[nodiscard]] result<void> check_current_leader_epoch(int32_t current_leader_epoch, model::leader_epoch known,
                                                      const std::string& name);
/// The leader epoch of the record at `offset` in an epoch cache (storage's leader_epochs():
/// epoch -> its start offset): the largest epoch starting at or below it; -1 when none does.
[[nodiscard]] model::leader_epoch epoch_of_offset(const std::map<int32_t, model::offset>& epochs, model::offset offset);

/// What a partition reaches outside itself, one per shard (the broker's partition_contexts_),
/// each member named for its use. The references outlive every partition (the broker owns both).
struct partition_context {
  size_t shard = 0;   ///< the shard whose thread alone touches this shard's partitions
  /// The calling thread's shard (runtime::shard_runtime::current_shard): the ownership assertions.
  std::function<size_t()> current_shard;
  const base::clock& clock;   ///< ms: LogAppendTime, own records' timestamps, ack and fetch deadlines, the lease
  io::disk_executor& disk;    ///< this shard's disk executor: flush_async under log.flush.policy=fsync
  /// Static broker configs read here (the broker's broker_config, copied when the context is made).
  struct settings {
    std::string log_flush_policy;            ///< log.flush.policy: fsync (only what is on disk counts) | replication
    int64_t fetch_wait_max_ms = 0;           ///< fetch.wait.max.ms: the longest a fetch is parked
    int32_t fetch_waiters_per_partition_max = 0;   ///< fetch.waiters.per.partition.max
  };
  const settings config;
  /// The topic's min.insync.replicas as of this shard's metadata view (else the live broker default).
  std::function<int32_t(const std::string& topic)> min_insync_replicas;
  /// leader.replication.throttled.rate as of this shard's view (a dynamic broker config, KIP-73).
  std::function<int64_t()> leader_replication_throttled_rate;
  /// The broker-wide leader-side bucket that rate fills (KIP-73): 0 when a throttled transfer may
  /// go at `now_ms` under `rate` (bytes/s), else the ms to wait; and the bytes one moved.
  std::function<int64_t(int64_t rate, int64_t now_ms)> acquire_leader_throttle;
  std::function<void(int64_t bytes, int64_t rate, int64_t now_ms)> record_leader_throttle;
  /// The end of the leadership lease as the controller shard mirrors it (check_answer, KIP-207),
  /// in base::clock::monotonic_ms.
  const std::atomic<int64_t>& leadership_lease_until_ms;
  const std::atomic<bool>& stopping;   ///< the broker is stopping: parked fetches are answered, not parked
  std::atomic<uint64_t>& next_read_id;             ///< fetch_response::read_id, broker-wide (0: no records)
  std::atomic<uint64_t>& next_txn_verification;    ///< txn_verification_guard ids, broker-wide
  std::deque<recent_read>& recent_reads;   ///< this shard's kept reads, newest first, <= recent_reads_max
  /// Arms the deadline of a fetch parked on `partition` at `at_ms` (clock ms); the broker keeps
  /// one heap of deadlines per shard and answers the fetch with answer_empty when it passes.
  std::function<void(int64_t at_ms, const std::shared_ptr<partition_runtime>& partition,
                     const std::shared_ptr<fetch_waiter>& waiter)>
      add_fetch_deadline;
};

/// A first transactional batch whose producer's transaction must be verified with its
/// coordinator before it is appended (KIP-890 part 1): the guard taken for it.
struct txn_verification_needed {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  uint64_t guard = 0;   ///< txn_verification_guard::id
};

/// One replica of a partition on its shard (Kafka's Partition). Its fields are the broker's
/// view of the replica (replication.cc applies the metadata to them); its members are the
/// replica's behaviour. Made by partition_manager::open_replica, always in a shared_ptr
/// (deferred work holds it, or a weak_ptr to it).
class partition_runtime : public std::enable_shared_from_this<partition_runtime> {
 public:
  explicit partition_runtime(const partition_context& context) : context_(&context) {}

  uint64_t uid = 0;   // unique on its shard for the broker's life: a re-created partition is another one
  std::string topic;
  controller::uuid topic_id;
  int32_t partition = 0;
  std::unique_ptr<storage::partition_log> log;
  std::shared_ptr<partition_stats> stats;
  std::vector<std::shared_ptr<fetch_waiter>> waiters;
  model::leader_epoch epoch{0};
  /// Removed from its shard (its topic deleted, or this broker no longer a replica): close_for_removal.
  bool deleted = false;
  /// Why it was removed (set with `deleted`): the answer of every append still waiting on it.
  std::optional<error> removal_reason;
  int64_t last_checkpointed_high_watermark = -1;
  /// More than one fetch was parked at the last wake-up: reads are kept for the others
  /// (recent_read). A lone reader never pays for keeping a copy nobody asks for.
  bool many_readers = false;
  // ---- replication (replication.cc), as of the last applied metadata
  int32_t leader_id = -1;                 // -1: no leader
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;               // committed
  int32_t partition_epoch = 0;
  /// While this node leads: its followers, the high watermark rule and ISR changes.
  std::optional<replication::leader_state> leader;
  model::offset epoch_start_offset{0};    // the log end offset when this leadership began
  std::multimap<model::offset, ack_waiter> ack_waiters;   // by the high watermark each needs
  std::vector<std::shared_ptr<replica_fetch_waiter>> replica_waiters;
  /// Bumped at every change of leader or leader epoch: a follower fetch of an older generation is
  /// dropped when it comes back (a new loop serves the new leader).
  uint64_t follower_generation = 0;
  bool follower_fetching = false;         // a follower fetch loop of this generation runs
  bool follower_failing = false;          // its fetches fail (logged once until one works again)
  int16_t last_isr_refusal = 0;           // Kafka error of the last refused ISR change (logged once)
  // ---- KIP-890 part 1 (transactions.cc), while this node leads
  /// Producers whose first transactional batch of a transaction here waits for its coordinator's
  /// verification: producer id -> guard. A marker for the producer (its transaction ended) or
  /// the append of its first batch removes the guard; a verified batch whose guard is gone is
  /// refused, so a transaction that ended during the verification is never reopened here.
  /// At most txn_verifications_per_partition_max entries.
  std::map<int64_t, txn_verification_guard> txn_verifications;

  // ---- behaviour, on the partition's shard only
  /// "topic-partition", for messages.
  [[nodiscard]] std::string name() const { return topic + "-" + std::to_string(partition); }
  /// Copies the log's offsets and size into `stats` (read by other threads: metrics, describe).
  void publish();

  // acks and the high watermark (partition.cc)
  /// Refuses an acks=all append before it is made when the ISR is below min.insync.replicas;
  /// not_leader_or_follower when this node does not lead the partition.
  [[nodiscard]] result<void> check_append(acks_mode acks) const;
  /// Refuses consumer reads on a partition this node does not lead, or whose new leadership has
  /// not yet established its high watermark (KIP-207). Errors: not_leader_or_follower (retriable).
  [[nodiscard]] result<void> check_serving(std::optional<model::offset> reading_at) const;
  /// OffsetForLeaderEpoch on the leader (Kafka's Partition.lastOffsetForLeaderEpoch and
  /// LeaderEpochFileCache.endOffsetFor; KIP-101, KIP-279, KIP-320): for `asked` equal to the
  /// current epoch, (asked, log end offset); below it, the largest epoch <= `asked` in the log's
  /// epoch cache and the start offset of the next larger one (storage's end_offset_for_epoch,
  /// the lookup replica fetches use for their diverging epoch); older than every cached epoch
  /// (its records went with the log start), (asked, start of the first cached epoch); negative
  /// or newer than the current epoch, undefined (-1, -1). Errors: check_current_leader_epoch's,
  /// then not_leader_or_follower on a follower (Kafka answers only from the leader: a follower's
  /// cache may still hold a suffix the leader truncated).
  [[nodiscard]] result<epoch_end_offset> end_offset_for_leader_epoch(int32_t current_leader_epoch,
                                                                     model::leader_epoch asked) const;
  /// The same for a Fetch at `fetch_offset`, whose answer carries the high watermark at any
  /// offset: offset_not_available while the leader establishes it (replication::answer_fetch).
  [[nodiscard]] result<void> check_fetch_serving(model::offset fetch_offset) const;
  /// Leader: moves the high watermark as far as the ISR allows, answers the acks=all appends and
  /// the consumers it releases.
  void update_high_watermark();
  /// After a leader's append: wakes its followers' parked fetches, makes the append durable under
  /// the fsync policy, then answers `done` per `acks` (all: once the high watermark reaches
  /// `required`, the append's last offset + 1, or `timeout_ms` passed).
  void complete_append(acks_mode acks, model::offset required, int64_t timeout_ms,
                       std::function<void(result<void>)> done);
  /// `durable_ns`: when the append became durable here (base::monotonic_ns; 0 = not stamped), the
  /// start of its replication wait in /metrics.
  void await_replication(model::offset required, int64_t timeout_ms, std::function<void(result<void>)> done,
                         int64_t durable_ns = 0);
  /// Answers every acks=all append waiting here with `why` (the leadership ended, the ISR shrank).
  void fail_ack_waiters(const error& why);
  /// The replica leaves its shard (partition_manager::remove_replica: its topic deleted, or
  /// reassigned away): marked deleted, and everything that waits on it is answered `why` now -
  /// the acks=all appends, consumers' parked fetches, followers' parked fetches - as is every
  /// append whose flush completes later (complete_append). Nothing ticks a removed replica, so a
  /// waiter left here was never answered: a WebSocket's produces racing a topic deletion stalled
  /// for good and HTTP ones got an empty reply (new user, session 36; Kafka's
  /// ReplicaManager.stopPartitions completes the delayed produces and fetches of the partition).
  void close_for_removal(const error& why);

  // consumers' fetches (partition.cc; Kafka's DelayedFetch)
  /// Retries every parked fetch (the high watermark moved, or the broker stops).
  void wake_waiters();
  void try_fetch(const std::shared_ptr<fetch_waiter>& w);
  /// Answers `w` with `response`, or parks it in `waiters` when it has no records yet and may
  /// still wait (fetch.waiters.per.partition.max bounds them: throttling_quota_exceeded past it).
  void answer_or_park(const std::shared_ptr<fetch_waiter>& w, result<fetch_response> response);
  /// Ends a parked fetch with no records and the partition's current offsets (its wait is over, or
  /// the broker is stopping); nothing when it was already answered.
  void answer_empty(fetch_waiter& w) const;
  /// The records `req` may have now (none is not an error): a recent read of the same records on
  /// this shard (recent_read), or a new read, which gets a fresh read_id when it found records.
  result<fetch_response> read_for_fetch(const fetch_params& req) const;

  // followers' fetches, leader side (partition.cc)
  /// The answer to a follower's fetch at `fetch_offset`: the batches from there to the log end
  /// (at most `max_bytes`, at least one batch), none while the leader throttle holds it back.
  protocol::fetch_response_data::partition_data read_for_replica(int32_t replica_id, model::offset fetch_offset,
                                                                 int32_t max_bytes);
  /// How long the leader throttle holds back a follower outside the ISR (0: in sync, or bytes left).
  int64_t replica_held_back_ms(int32_t replica_id);
  /// Answers the followers' parked fetches that may be answered now (not held back).
  void wake_replica_waiters();

  // appends (partition_append.cc)
  /// Appends a produce's validated batches (stamped with the append time when `log_append_time`)
  /// once check_append and the KIP-890 guard passed, then complete_append. Errors: storage errors.
  void append_batches(produce_batches_request request, bool log_append_time,
                      std::function<void(result<produce_batches_response>)> done);
  /// The broker's own records (coordinator state, delay checkpoints) on a partition this node
  /// leads: stamped with the clock's time, one batch, acks=all; `replicated` once the high
  /// watermark passes it (complete_append). An error at once (not_leader_or_follower,
  /// not_enough_replicas, storage errors) is returned and `replicated` is never called.
  result<void> append_own_records(std::vector<model::record> records, std::function<void(result<void>)> replicated);
  /// A transaction marker of producer `producer_id` (KIP-98), refused first as check_append(all)
  /// refuses; ends the producer's KIP-890 guard here. The caller then calls complete_append
  /// (acks=all). Errors: those of check_append and storage::partition_log::append_marker.
  result<void> append_marker(model::producer_id producer_id, model::producer_epoch producer_epoch,
                             const codec::control_record& marker);

  /// A follower's append of batches read from its leader, as they are (storage::partition_log::
  /// append_replicated), under the pair assertions of the replicated-append boundary.
  storage::result<storage::append_result> append_replicated(std::span<const std::byte> batches);

  // KIP-890 part 1 (partition_append.cc)
  /// The first transactional batch of `request` whose producer has no transaction open here
  /// in that epoch (it needs its coordinator's verification first); nullopt when none.
  [[nodiscard]] std::optional<codec::batch_header> unverified_txn_batch(const produce_batches_request& request) const;
  /// The guard step of a produce before its append. `verified_guard`: the guard of the
  /// verification this request passed (0: none ran yet). nullopt: append now; a value: verify
  /// with the coordinator first, under that guard (taken here). Errors: invalid_txn_state (the
  /// transaction ended during the verification), concurrent_transactions (too many verifications).
  result<std::optional<txn_verification_needed>> guard_txn_verification(const produce_batches_request& request,
                                                                         uint64_t verified_guard);
  /// A verification under `guard` failed: its guard goes (unless a newer one replaced it).
  void drop_txn_verification(int64_t producer_id, uint64_t guard);

 private:
  /// `rule(high_watermark, lease_holds)` on a leader, its answer as an error with the reason.
  result<void> check_answer(const std::function<replication::end_offset_answer(model::offset, bool)>& rule) const;
  /// read_for_fetch of a fetch_params::file_ranges request: the batches below `hw` as file
  /// ranges; nullopt when the log's files have no descriptors (simulated), to read bytes instead.
  result<std::optional<fetch_response>> read_file_ranges_for_fetch(const fetch_params& req, model::offset hw) const;
  /// Appends one batch under the pair assertions of the append boundary (its offsets start at
  /// the log end before it; the log end after it is its last offset + 1; the high watermark
  /// stays at or below the log end).
  storage::result<storage::append_result> append_checked(model::bytes batch);
  /// RINGLOG_ASSERT that the calling thread is this partition's shard.
  void assert_on_shard() const;

  const partition_context* context_;
};

}  // namespace ringlog::partition
