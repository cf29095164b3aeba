// Partition reassignment requests (KIP-455) on any node: planned against the controller shard's
// image (reassignment.h) and committed through the quorum like every metadata change (forwarded
// to the active controller when this node is not it). The reassignment completes in the
// controller's handling of the leader's ISR expansion (alter_partition, replication_control.cc) or
// in its heartbeat tick (complete_reassignments_tick), whichever finds its barrier passed first.

#include <algorithm>

#include "active_controller.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "constants.h"
#include "metadata_publisher.h"
#include "ringlog/base/assert.h"
#include "ringlog/controller/reassignment.h"

namespace ringlog::broker::detail {

void active_controller::alter_partition_reassignments(
    std::vector<partition_reassignment_target> targets,
    std::function<void(result<std::vector<partition_reassignment_result>>)> done) {
  alter_partition_reassignments_attempt(std::move(targets), std::move(done), reassignment_attempts_max);
}

void active_controller::alter_partition_reassignments_attempt(
    std::vector<partition_reassignment_target> targets,
    std::function<void(result<std::vector<partition_reassignment_result>>)> done, int attempts_left) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  parts_.barrier.post_caught_up([this, targets = std::move(targets), done = std::move(done), attempts_left]() mutable {
    std::vector<reassignment_target> wanted;
    wanted.reserve(targets.size());
    for (const auto& t : targets) wanted.push_back({t.topic, t.partition, t.replicas});
    std::vector<protocol::metadata_record> records;
    std::vector<partition_reassignment_result> results;
    // Removing replicas are never known caught up here: step 3b waits for their next heartbeat.
    const metadata_caught_up not_yet = [](int32_t) { return false; };
    for (auto& plan : plan_reassignments(*metadata_.controller_view()->image, wanted, not_yet)) {
      if (plan.change) records.push_back(*plan.change);
      std::optional<error> refused;
      if (plan.refused) refused = from_controller(*plan.refused);
      results.push_back({plan.topic, plan.partition, std::move(refused)});
    }
    if (records.empty()) return done(std::move(results));
    log_.info("partition reassignment: " + std::to_string(records.size()) + " partition(s) change their replicas");
    parts_.writer.commit_records(std::move(records), [this, targets = std::move(targets), results = std::move(results),
                                              done = std::move(done), attempts_left](result<void> r) mutable {
      // invalid_request: a partition changed between the plan and its commit (an ISR change
      // bumped the partition epoch the plan named); plan again from the newer image.
      if (!r.ok() && r.error().code == errc::invalid_request && attempts_left > 1) {
        return alter_partition_reassignments_attempt(std::move(targets), std::move(done), attempts_left - 1);
      }
      if (!r.ok()) return done(r.error());
      done(std::move(results));
    });
  });
}

void active_controller::complete_reassignments_tick() {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  if (completion_barrier_.in_flight) return;
  const auto image = metadata_.controller_view()->image;
  completion_barrier_.forget_finished(*image);
  std::vector<protocol::metadata_record> records;
  for (const auto& [name, t] : image->topics()) {
    for (size_t i = 0; i < t->partitions.size(); ++i) {
      const auto& p = t->partitions[i];
      if (!p.reassigning()) continue;
      protocol::partition_change_record change;
      change.topic_id = t->topic_id;
      change.partition_id = static_cast<int32_t>(i);
      change.ringlog_expected_partition_epoch = p.partition_epoch;
      const int32_t index = static_cast<int32_t>(i);
      if (complete_reassignment_if_ready(*image, p, change, completion_barrier_.rule(*image, name, index, p))) {
        log_.info("partition reassignment of partition " + std::to_string(index) + " of topic '" + name +
                  (change.replicas ? "' completes" : "': leadership moves to broker " + std::to_string(change.leader)));
        records.push_back(std::move(change));
      }
    }
  }
  if (records.empty()) return;
  completion_barrier_.in_flight = true;
  // A refusal (a partition changed meanwhile) leaves the rest for the next tick.
  parts_.writer.commit_records(std::move(records), [this, alive = std::weak_ptr<int>(lifetime_)](result<void>) {
    if (alive.lock()) completion_barrier_.in_flight = false;
  });
}

std::vector<partition_reassignment> reassignments_in(const controller::metadata_image& image, const std::string& topic) {
  std::vector<partition_reassignment> out;
  for (const auto& [name, t] : image.topics()) {
    if (!topic.empty() && name != topic) continue;
    for (size_t p = 0; p < t->partitions.size(); ++p) {
      const auto& part = t->partitions[p];
      if (!part.reassigning()) continue;
      out.push_back({name, static_cast<int32_t>(p), part.replicas, part.adding_replicas, part.removing_replicas});
    }
  }
  return out;
}

}  // namespace ringlog::broker::detail
