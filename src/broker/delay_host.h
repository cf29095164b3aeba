#pragma once
// The delayed-delivery host (issue 18, design.md section 7; a class of its own since issue 28):
// the produce side puts a record with a future delivery time into the internal delay topic of
// its delay range, and on the leader of each delay partition a delay::scheduler (the pure core,
// src/delay) moves due records to their target with the normal produce path, its position kept
// as checkpoint records in its own partition (delay.cc has the whole story,
// docs/delayed-delivery.md the guarantee). delay_host owns the per-shard scheduler states and
// reaches the parts it is built with directly (the broker's composition never). Private to the
// broker module.
//
// Ownership by shard: a delay partition's scheduler state lives on the partition's shard and is
// touched only there; answers from other shards are posted back (on_delay_state) and dropped
// when they belong to an earlier leadership (its generation).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metadata.h"
#include "partition.h"
#include "produce_operation.h"
#include "ringlog/base/clock.h"
#include "ringlog/broker/broker.h"
#include "ringlog/delay/checkpoint.h"
#include "ringlog/delay/scheduler.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class coordinator_partitions;
class metadata_barrier;
class produce_pipeline;
class replica_manager;

class delay_host {
 public:
  /// `metadata`: the views; `barrier`: the broker API's produce, fetch and list_offsets (a move is
  /// an acks=all produce to its target; a move that may be there already, an intent of an earlier
  /// leadership, is looked up first: ListOffsets by time, then Fetch); `produce`: produce_to, the
  /// produce of records to a known topic (an internal write to a delay topic); `internal_topics`:
  /// create_internal_topic of the delay topics; `replicas`: for_each_replica at start;
  /// `config`: the static broker config (delay.max.ms under the view's dynamic one); `stopping`:
  /// the broker's stop flag (a set flag ends the schedulers' ticks and drives). Every reference
  /// outlives this object.
  delay_host(const metadata_publisher& metadata, broker_log log, metadata_barrier& barrier, produce_pipeline& produce,
             coordinator_partitions& internal_topics, replica_manager& replicas, const broker_config& config,
             runtime::shard_runtime& runtime, const base::clock& clock, int32_t node_id,
             const std::atomic<bool>& stopping);

  // ---- the produce side
  /// A record's delivery time from its ringlog-deliver-at header: nullopt when it has none, is due
  /// already (`now_ms` or earlier) or is a scheduler's move (`origin`). Errors: invalid_record
  /// (not decimal ms; past delay.max.ms from now, naming both; a delayed record carrying a header
  /// the broker sets, broker_header_refusal). A ringlog-delay-ms header is replaced by
  /// ringlog-deliver-at (now + delay) first.
  result<std::optional<int64_t>> delivery_time_of(produce_record& record, int64_t now_ms, record_origin origin) const;
  /// delivery_time_of(request.records[i]), refusing one inside a transaction or idempotent session.
  result<std::optional<int64_t>> delivery_time_in(produce_request& request, size_t i, int64_t now_ms) const;
  /// Whether `headers` name a delivery time (ringlog-deliver-at or ringlog-delay-ms) of a record
  /// not yet moved by a scheduler. `Header`: model::record_header or codec::record_view::header
  /// (both instantiated in delay.cc).
  template <typename Header>
  static bool has_delay_header(const std::vector<Header>& headers);
  /// Whether `headers` carry ringlog-delay-source beside a delivery time still to come at `now_ms`
  /// (a ringlog-delay-ms other than 0, or a ringlog-deliver-at after `now_ms` or not decimal).
  /// has_delay_header takes the source header for a scheduler's move, never delayed again; from a
  /// Kafka client it would cancel the delay, so such a record is refused (broker_header_refusal):
  /// a move is due when it is sent. `Header`: as has_delay_header's.
  template <typename Header>
  static bool delayed_with_source(const std::vector<Header>& headers, int64_t now_ms);
  /// The refusal of a delayed record carrying `header`, one the broker sets on delay records
  /// (target, checkpoint) or on moved ones (source): invalid_record naming it.
  static error broker_header_refusal(std::string_view header);
  /// A record produce_delayed stores: `index` into the request's records, its target partition
  /// and due time (clock ms).
  struct delayed_record {
    size_t index = 0;
    int32_t target_partition = 0;
    int64_t due_ms = 0;
  };
  /// How many finish_one() calls produce_delayed makes for `delayed` (one per delay topic used).
  static size_t delayed_groups(const std::vector<delayed_record>& delayed, int64_t now_ms);
  /// Appends the delayed records (`delayed`, indices into `records`) to their delay topics,
  /// creating them first; fills op's results (the target partition, offset -1: not known until
  /// delivery) and calls op->finish_one() once per tier.
  void produce_delayed(const std::string& target_topic, std::vector<produce_record>& records,
                       const std::vector<delayed_record>& delayed, int64_t now_ms, acks_mode acks, int64_t timeout_ms,
                       const std::shared_ptr<produce_operation>& op);
  /// Kafka Produce of one partition whose records may be delayed: every record through
  /// produce_to (validated batches). The answer's base_offset is -1 when a record was delayed
  /// (its offset is known once delivered); an invalid delivery time refuses the request
  /// (invalid_record) before anything is stored.
  void produce_batches_delayed(produce_batches_request request, const std::shared_ptr<const topic_state>& topic,
                               std::function<void(result<produce_batches_response>)> done);

  // ---- the schedulers
  /// Start-up, after the groups: schedulers for the delay partitions this node leads.
  void start();
  /// On the partition's shard: this node now leads `rt` (`leads`) or no longer does. For a delay
  /// partition its scheduler starts from the partition's latest checkpoint, or stops (in-flight
  /// answers are ignored); other partitions are not the host's.
  void on_leadership_change(size_t shard, const std::shared_ptr<partition_runtime>& rt, bool leads);
  /// The schedulers of every shard (GET /v3/clusters/{id}/delayed-records), by topic-partition.
  void describe(std::function<void(std::vector<delay_scheduler_description>)> done);

 /// One delay partition's scheduler on this leader (delay.cc; opaque outside it).
  struct partition_state;

 private:
  /// `done` with the delay topic of tier `tier`, created (on the controller) when missing.
  void with_delay_topic(size_t tier, std::function<void(result<std::shared_ptr<const topic_state>>)> done);
  void delay_partition_led(size_t shard, const std::shared_ptr<partition_runtime>& rt, bool leads);
  void schedule_delay_tick(size_t shard);
  void drive_delay(size_t shard, const std::shared_ptr<partition_state>& st);
  /// Appends `cp` and reports it to the scheduler when replicated; false when it failed at once
  /// (reported already).
  bool write_delay_checkpoint(size_t shard, const std::shared_ptr<partition_state>& st,
                              const std::shared_ptr<partition_runtime>& rt, const delay::checkpoint& cp);
  void send_delay_moves(size_t shard, const std::shared_ptr<partition_state>& st,
                        const std::shared_ptr<partition_runtime>& rt, std::vector<delay::move> moves);
  /// Runs `f` on `shard` with the scheduler state of `key` if it is still generation `generation`.
  void on_delay_state(size_t shard, std::string key, uint64_t generation,
                      std::function<void(const std::shared_ptr<partition_state>&)> f);

  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  const broker_log log_;
  metadata_barrier& barrier_;
  produce_pipeline& produce_;
  coordinator_partitions& internal_topics_;
  replica_manager& replicas_;
  const broker_config& config_;
  runtime::shard_runtime& runtime_;
  const base::clock& clock_;
  const int32_t node_id_;
  const std::atomic<bool>& stopping_;
  std::vector<std::map<std::string, std::shared_ptr<partition_state>>> delay_states_;   // per shard
  std::vector<char> delay_ticking_;   // per shard: its tick timer is set
  std::atomic<bool> delay_started_{false};
  std::atomic<uint64_t> next_delay_generation_{1};
  /// Timers and posted answers hold a weak reference: one that runs after the host is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::broker::detail
