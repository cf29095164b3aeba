// DeleteRecords on the partition's leader (record_deletion.h; KIP-107, Kafka's
// ReplicaManager.deleteRecords, Partition.deleteRecordsOnLeader and DelayedDeleteRecords).

#include "record_deletion.h"

#include <algorithm>

#include "constants.h"
#include "leader_forwarder.h"
#include "metadata_publisher.h"
#include "ringlog/replication/leader_state.h"

namespace ringlog::broker::detail {

record_deletion::record_deletion(const metadata_publisher& metadata, int32_t node_id, const base::clock& clock,
                                 runtime::shard_runtime& runtime,
                                 const std::vector<std::unique_ptr<partition_manager>>& partition_managers,
                                 const std::atomic<bool>& stopping)
    : metadata_(metadata),
      node_id_(node_id),
      clock_(clock),
      runtime_(runtime),
      partition_managers_(partition_managers),
      stopping_(stopping) {}

result<void> record_deletion::check_request(const delete_records_request& request) const {
  const auto& tp = request.partition;
  if (stopping_) return error{errc::broker_not_available, "the broker is shutting down"};
  auto topic = metadata_.find_topic(tp.topic);
  if (!topic) return error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)};
  const int32_t partition = tp.partition.value();
  if (partition < 0 || partition >= topic->partitions_count()) {
    return partition_missing(tp.topic, partition, topic->partitions_count());
  }
  // Kafka refuses its internal topics (ReplicaManager.deleteRecordsOnLocalLog): here every "__"
  // topic, whose records the broker's coordinators and schedulers own.
  if (topic->is_internal) {
    return error{errc::invalid_topic_exception, "cannot delete records of internal topic '" + tp.topic + "'"};
  }
  // Kafka answers DeleteRecords on the leader only: its admin client sends each partition there.
  return check_leader(*topic, partition, node_id_);
}

void record_deletion::delete_records(delete_records_request request, done_fn done) {
  if (auto checked = check_request(request); !checked.ok()) return done(checked.error());
  const size_t shard = shard_of(request.partition.topic, request.partition.partition.value(), partition_managers_.size());
  if (!runtime_.admits(shard)) return done(shard_busy(shard));
  runtime_.post(shard, [this, shard, request = std::move(request), done = std::move(done)]() mutable {
    const auto& tp = request.partition;
    auto rt = partition_managers_[shard]->find(tp.topic, tp.partition.value());
    if (!rt || rt->deleted) return done(no_replica_here(metadata_.find_topic(tp.topic).get(), tp));
    auto required = delete_on_leader(*rt, request.offset);
    if (!required.ok()) return done(required.error());
    const int64_t wait_ms = std::clamp<int64_t>(request.timeout_ms, 0, delete_records_wait_max_ms);
    await_low_watermark(shard, rt, *required, clock_.now_ms() + wait_ms, std::move(done));
  });
}

result<model::offset> record_deletion::delete_on_leader(partition_runtime& rt, int64_t requested) const {
  // A leader that knows its high watermark and holds its leadership lease (KIP-207; the checks
  // of ListOffsets latest): not_leader_or_follower or a retriable offset_not_available otherwise,
  // so a deposed or new leader never answers for offsets it cannot vouch for.
  if (auto serving = rt.check_serving(std::nullopt); !serving.ok()) return serving.error();
  // Kafka's Partition.deleteRecordsOnLeader: a topic whose cleanup.policy lacks delete keeps its
  // records until the log cleaner removes them.
  if (!rt.log->config().deletes()) {
    return error{errc::policy_violation, "records of " + rt.name() + " cannot be deleted: its cleanup.policy is '" +
                                             rt.log->config().cleanup_policy + "', without delete"};
  }
  const model::offset high_watermark = rt.log->high_watermark();
  auto target = replication::delete_records_offset(requested, high_watermark);
  if (!target) {
    return error{errc::offset_out_of_range, "cannot delete records of " + rt.name() + " below offset " +
                                                std::to_string(requested) + ": the offset must be -1 (the high "
                                                "watermark) or in [0, " + std::to_string(high_watermark.value()) +
                                                "], the high watermark"};
  }
  if (*target > rt.log->log_start_offset()) {
    if (auto advanced = rt.log->advance_log_start_offset(*target); !advanced.ok()) return from_storage(advanced.error());
    rt.publish();
    rt.wake_waiters();           // consumers parked below the new start learn it
    rt.wake_replica_waiters();   // the followers learn the new start now, not at their next fetch
  }
  return *target;
}

model::offset record_deletion::low_watermark(const partition_runtime& rt) const {
  const auto image = metadata_.view()->image;
  return rt.leader->low_watermark(rt.log->log_start_offset(), [&image](int32_t id) {
    const auto* b = image->find_broker(id);
    return b != nullptr && !b->fenced;
  });
}

void record_deletion::await_low_watermark(size_t shard, std::weak_ptr<partition_runtime> weak, model::offset required,
                                          int64_t deadline_ms, done_fn done) {
  auto rt = weak.lock();
  if (!rt || rt->deleted) return done(error{errc::unknown_topic_or_partition, "the partition was deleted"});
  if (!rt->leader) {
    return done(error{errc::not_leader_or_follower, "this broker stopped leading " + rt->name() +
                                                        " before every replica deleted the records"});
  }
  const model::offset low = low_watermark(*rt);
  if (low >= required) return done(delete_records_response{low});
  if (stopping_ || clock_.now_ms() >= deadline_ms) {
    return done(error{errc::request_timed_out,
                      "the leader of " + rt->name() + " deleted the records below " + std::to_string(required.value()) +
                          ", but not every live replica has yet (low watermark " + std::to_string(low.value()) + ")"});
  }
  const int64_t wait_ms = std::min(delete_records_recheck_ms, deadline_ms - clock_.now_ms());
  runtime_.post_after(shard, wait_ms, [this, shard, weak, required, deadline_ms, done = std::move(done),
                                       alive = std::weak_ptr<int>(lifetime_)]() mutable {
    if (alive.expired()) return done(error{errc::broker_not_available, "the broker is shutting down"});
    await_low_watermark(shard, weak, required, deadline_ms, std::move(done));
  });
}

}  // namespace ringlog::broker::detail
