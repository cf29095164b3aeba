// A partition's image applied to its replica on this shard (partition_manager.h): a leadership
// that begins or ends, an ISR change, a new leader to follow (design.md section 6), and a replica
// dropped when a reassignment removes this node. Leadership changes go to the
// leadership_observer, the fetch loop to the replica fetcher, the registration to the replica_host.
// Kafka's counterpart: Partition.makeLeader / makeFollower, ReplicaManager.applyDelta.

#include <algorithm>
#include <string>
#include <utility>

#include "ringlog/partition/partition_manager.h"
#include "ringlog/partition/replica_fetcher.h"

namespace ringlog::partition {
namespace {

bool contains(const std::vector<int32_t>& set, int32_t id) { return std::find(set.begin(), set.end(), id) != set.end(); }

}  // namespace

void partition_manager::log(bool info, const std::string& message) const {
  if (dir_.log) dir_.log(info, message);
}

void partition_manager::apply_partition_state(const std::shared_ptr<partition_runtime>& rt,
                                              const controller::partition_image& p) {
  // Only under this process's own registration: before it registers, the image may still name
  // this node the leader in its previous life's epoch (rejoin_partitions then moves or renews it).
  const bool registered = host_.registered_in_this_incarnation();
  const bool leads = p.leader == node_id_ && registered;
  if (p.leader == node_id_ && !registered) host_.note_stale_leadership(*rt, p.leader_epoch);
  const bool new_leadership = p.leader != rt->leader_id || p.leader_epoch != rt->epoch.value();
  const bool isr_shrank_below_min =
      static_cast<int32_t>(p.in_sync_replicas.size()) < context_->min_insync_replicas(rt->topic) &&
      p.in_sync_replicas.size() < rt->isr.size();
  rt->replicas = p.replicas;
  rt->isr = p.in_sync_replicas;
  rt->partition_epoch = p.partition_epoch;
  rt->leader_id = p.leader;
  rt->epoch = model::leader_epoch{p.leader_epoch};
  const bool was_leader = rt->leader.has_value();
  if (rt->leader && (!leads || new_leadership)) end_leadership(rt, p.leader);
  if (leads) {
    if (!rt->leader) {
      begin_leadership(rt, p);
    } else {
      rt->leader->set_committed(p.replicas, p.in_sync_replicas, clock_.monotonic_ms());
      if (isr_shrank_below_min) {
        rt->fail_ack_waiters(error{errc::not_enough_replicas_after_append,
                                   "the in-sync replicas of " + rt->name() + " shrank to " +
                                       std::to_string(p.in_sync_replicas.size()) + ", below min.insync.replicas=" +
                                       std::to_string(context_->min_insync_replicas(rt->topic)) +
                                       ", after the write was appended: it may or may not be stored; retry"});
      }
    }
    rt->update_high_watermark();
    return;
  }
  if (new_leadership) {
    replica_fetcher::new_follower_generation(*rt);
    rt->publish();
    if (p.leader >= 0) {
      log(true, "partition " + rt->name() + ": following leader " + std::to_string(p.leader) + " in epoch " +
                    std::to_string(p.leader_epoch) + " from offset " +
                    std::to_string(rt->log->log_end_offset().value()));
    } else if (!host_.controlled_shutdown_done() && p.replicas.size() > 1) {
      // No leader: not logged in this broker's controlled shutdown, nor for one replica (a restart
      // waits for this broker's registration; a lone replica's leading is not logged either).
      log(true, "partition " + rt->name() + ": " + (was_leader ? "stepping down as leader; " : "") +
                    "no leader in epoch " + std::to_string(p.leader_epoch) +
                    " (offline until a replica in its in-sync replicas is back)");
    }
  }
  if (p.leader >= 0 && p.leader != node_id_ && contains(p.replicas, node_id_)) fetcher_.start_follower_fetch(shard_, rt);
}

void partition_manager::end_leadership(const std::shared_ptr<partition_runtime>& rt, int32_t new_leader) {
  // This leadership is over: what was not replicated may or may not survive (KIP-101 truncation
  // on the new leader's terms); the clients must not take a silence for an answer.
  rt->leader.reset();
  rt->fail_ack_waiters(error{errc::not_leader_or_follower,
                             "leadership of " + rt->name() + " moved before the write was replicated to the "
                             "in-sync replicas; it may or may not be stored: retry (the leader is now broker " +
                                 std::to_string(new_leader) + ")"});
  auto waiting = std::move(rt->replica_waiters);
  rt->replica_waiters.clear();
  for (auto& w : waiting) {
    if (w->completed) continue;
    w->completed = true;
    protocol::fetch_response_data::partition_data out;
    out.partition_index = rt->partition;
    out.error_code = static_cast<int16_t>(kafka_error_code(errc::not_leader_or_follower));
    w->done(std::move(out));
  }
  for (auto& w : rt->waiters) rt->answer_empty(*w);
  rt->waiters.clear();
  observer_.on_leadership_change(shard_, rt, false);
}

void partition_manager::begin_leadership(const std::shared_ptr<partition_runtime>& rt,
                                         const controller::partition_image& p) {
  // A new leadership: its epoch starts at the log end (KIP-101), and the followers start as
  // unknown but in sync (leader_state), so the high watermark waits for their fetches.
  auto begun = rt->log->begin_leader_epoch(rt->epoch);
  if (!begun.ok()) {
    // A stopping broker has closed its logs: a leadership that reaches it then is not an error.
    log(stopping_.load(), "partition " + rt->name() + ": cannot record leader epoch " +
                              std::to_string(rt->epoch.value()) + ": " + begun.error().message);
  }
  rt->epoch_start_offset = rt->log->log_end_offset();
  rt->leader.emplace(node_id_, p.replicas, p.in_sync_replicas, clock_.monotonic_ms());
  observer_.on_leadership_change(shard_, rt, true);
  if (p.replicas.size() > 1) {
    log(true, "partition " + rt->name() + ": leading in epoch " + std::to_string(p.leader_epoch) + " from offset " +
                  std::to_string(rt->epoch_start_offset.value()) + ", high watermark " +
                  std::to_string(rt->log->high_watermark().value()));
  }
  replica_fetcher::new_follower_generation(*rt);   // a follower loop of the previous leadership stops
  rt->publish();
}

void partition_manager::drop_replica(const std::string& topic, int32_t partition,
                                     const controller::partition_image& now) {
  // A leadership ends; no follower loop starts (not a replica).
  if (auto rt = find(topic, partition)) apply_partition_state(rt, now);
  auto removed = remove_replica(
      topic, partition,
      error{errc::not_leader_or_follower,
            "this broker no longer holds a replica of " + partition_key(topic, partition) + " (reassigned): retry"});
  if (!removed.ok()) {
    log(false, "partition " + partition_key(topic, partition) + " was reassigned away from this broker, but its log " +
                   "directory could not be deleted: " + removed.error().message);
    return;
  }
  log(true, "partition " + partition_key(topic, partition) + " was reassigned away from this broker: its log is deleted");
}

}  // namespace ringlog::partition
