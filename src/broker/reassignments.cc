// Partition reassignment requests (KIP-455) on any node: planned against the controller shard's
// image (reassignment.h) and committed through the quorum like every metadata change (forwarded
// to the active controller when this node is not it). The reassignment completes in the
// controller's handling of the leader's ISR expansion (alter_partition, replication.cc).

#include <algorithm>

#include "broker_impl.h"
#include "reassignment.h"

namespace ringlog::broker::detail {

void broker_impl::alter_partition_reassignments(
    std::vector<partition_reassignment_target> targets,
    std::function<void(result<std::vector<partition_reassignment_result>>)> done) {
  alter_partition_reassignments_attempt(std::move(targets), std::move(done), reassignment_attempts_max);
}

void broker_impl::alter_partition_reassignments_attempt(
    std::vector<partition_reassignment_target> targets,
    std::function<void(result<std::vector<partition_reassignment_result>>)> done, int attempts_left) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  post_caught_up([this, targets = std::move(targets), done = std::move(done),
                                        attempts_left]() mutable {
    std::vector<reassignment_target> wanted;
    wanted.reserve(targets.size());
    for (const auto& t : targets) wanted.push_back({t.topic, t.partition, t.replicas});
    std::vector<protocol::metadata_record> records;
    std::vector<partition_reassignment_result> results;
    for (auto& plan : plan_reassignments(*controller_view_->image, wanted)) {
      if (plan.change) records.push_back(*plan.change);
      results.push_back({plan.topic, plan.partition, std::move(plan.refused)});
    }
    if (records.empty()) return done(std::move(results));
    log_info("partition reassignment: " + std::to_string(records.size()) + " partition(s) change their replicas");
    commit_records(std::move(records), [this, targets = std::move(targets), results = std::move(results),
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

std::vector<partition_reassignment> broker_impl::list_partition_reassignments(const std::string& topic) const {
  std::vector<partition_reassignment> out;
  const auto image = view()->image;
  for (const auto& [name, t] : image->topics()) {
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
