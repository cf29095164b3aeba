#pragma once
// The broker side of consumer groups (groups.h): one group::group_coordinator per shard, the
// records it returns appended to __consumer_offsets, replay at start, the expiry timer.

#include <memory>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/broker/broker.h"
#include "ringlog/broker/groups.h"
#include "ringlog/group/limits.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker {

/// What the broker gives the group service: the internal append/read path of __consumer_offsets
/// (produce from outside refuses internal topics) and its shard hashing.
class group_host {
 public:
  virtual ~group_host() = default;
  /// The shard that owns partition `partition` of `topic` (the same hash the data path uses).
  [[nodiscard]] virtual size_t owner_shard(const std::string& topic, int32_t partition) const = 0;
  /// Runs on `shard` (its owner): appends `records` to __consumer_offsets partition `partition`
  /// as one batch; `done` runs on that shard once they are durable (or failed).
  virtual void append_internal(size_t shard, int32_t partition, std::vector<model::record> records,
                               std::function<void(result<void>)> done) = 0;
  /// Runs on `shard`: every record of __consumer_offsets partition `partition`, in log order.
  virtual result<std::vector<model::record>> read_internal(size_t shard, int32_t partition) = 0;
  /// Whether this node leads __consumer_offsets partition `partition` now (its groups are
  /// coordinated here). Any thread.
  [[nodiscard]] virtual bool leads_offsets_partition(int32_t partition) const = 0;
  /// Reports a failure the service cannot answer to a caller (one log line).
  virtual void report_error(const std::string& message) const = 0;
  /// Reports something the service did by itself (one info log line), e.g. offsets it expired.
  virtual void report_info(const std::string& message) const = 0;
  /// Who leads __consumer_offsets partition `partition` (coordinator_route's answer). Any thread.
  [[nodiscard]] virtual group_coordinator_route offsets_leader_route(int32_t partition) const = 0;
};

class group_service : public group_api {
 public:
  /// Replays every __consumer_offsets partition this node leads into its shard's coordinator (one
  /// partition a task, on its shard), sets the topics, and starts the expiry timers; then `done`,
  /// on the shard of the last partition replayed (the caller's thread when it leads none), with
  /// the first replay's error if one failed. Called once, after partitions are open.
  virtual void start(std::function<void(result<void>)> done) = 0;
  /// The set of topics changed (create, partition increase): every coordinator re-resolves.
  virtual void topics_changed() = 0;
  /// On the partition's shard: this node now leads (`leads`) __consumer_offsets partition
  /// `partition`, and coordinates its groups, loaded from the replicated log; or it stopped, and
  /// forgets them (design.md section 7: the coordinator is the partition's leader).
  virtual void offsets_partition_led(int32_t partition, bool leads) = 0;
  /// The transaction of `producer_id` ended with its marker on __consumer_offsets partition
  /// `partition`: the pending TxnOffsetCommit offsets of that partition's groups become their
  /// committed offsets (`committed`) or are dropped; `done` once that is durable. Any thread.
  /// Errors: not_coordinator (this node does not lead the partition).
  virtual void complete_txn_offsets(int32_t partition, model::producer_id producer_id, bool committed,
                                    std::function<void(result<void>)> done) = 0;
  /// `topic` was deleted: its committed offsets go with it, then topics_changed().
  virtual void topic_deleted(const std::string& topic) = 0;
  /// No more timers or appends (the broker is closing its logs).
  virtual void stop() = 0;
};

/// The group service's settings (the broker config's keys).
struct group_service_options {
  int32_t offsets_partitions = 1;               // partitions of __consumer_offsets
  int64_t expiry_interval_ms = 1000;            // group.expiry.interval.ms: the member expiry sweep
  int64_t initial_rebalance_delay_ms = 3000;    // group.initial.rebalance.delay.ms
  /// offsets.retention.minutes in ms (KIP-211; group_coordinator::expire_offsets), >= 1.
  int64_t offsets_retention_ms = group::limits::offsets_retention_minutes_default * 60'000;
  /// offsets.retention.check.interval.ms: expire_offsets runs at most this often per shard (in the
  /// expiry sweep, so at most every expiry_interval_ms too), >= 1.
  int64_t offsets_retention_check_interval_ms = group::limits::offsets_retention_check_interval_ms_default;
};

std::unique_ptr<group_service> make_group_service(broker& b, group_host& host, runtime::shard_runtime& runtime,
                                                  const base::clock& clock, group_service_options options);

}  // namespace ringlog::broker
