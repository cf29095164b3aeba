// Rebalance and decommission (issue 33) on any node: planned by controller::plan_rebalance
// against the active controller's newest image (post_caught_up), started as partition
// reassignments (KIP-455: the new replicas are added and catch up before the old ones leave, so
// no partition drops below its min.insync.replicas because of a move). A decommission is a
// BrokerDecommissionRecord (no new replicas go to the broker) and a drain plan; the active
// controller's tick (decommission_tick) finishes it: once no partition lists the broker, it is
// unregistered for good (the record's state 2), and a registration under its id is refused.

#include <algorithm>
#include <set>

#include "active_controller.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "replica_manager.h"
#include "constants.h"
#include "metadata_publisher.h"
#include "ringlog/base/assert.h"

namespace ringlog::broker::detail {

namespace {

using controller::broker_decommission_state;

/// The decommission of `node_id` as the image shows it: partitions that still list it.
broker_decommission describe_decommission(const controller::metadata_image& image, int32_t node_id) {
  broker_decommission d;
  d.broker_id = node_id;
  d.status = image.decommission_state(node_id) == broker_decommission_state::decommissioned ? "SUCCESS" : "IN_PROGRESS";
  for (const auto& [name, topic] : image.topics()) {
    for (const auto& p : topic->partitions) {
      if (std::find(p.replicas.begin(), p.replicas.end(), node_id) == p.replicas.end()) continue;
      ++d.partitions_remaining;
      if (p.reassigning()) ++d.reassignments_in_progress;
    }
  }
  return d;
}

protocol::broker_decommission_record decommission_record(int32_t node_id, broker_decommission_state state) {
  protocol::broker_decommission_record r;
  r.broker_id = node_id;
  r.state = static_cast<int8_t>(state);
  return r;
}

std::vector<partition_reassignment_target> targets_of(const controller::rebalance_plan& plan) {
  return reassignment_targets_of(plan);
}

int32_t accepted(const std::vector<partition_reassignment_result>& results) { return reassignments_accepted(results); }

}  // namespace

std::vector<partition_reassignment_target> reassignment_targets_of(const controller::rebalance_plan& plan) {
  std::vector<partition_reassignment_target> out;
  out.reserve(plan.moves.size());
  for (const auto& m : plan.moves) out.push_back({m.topic, m.partition, m.target_replicas});
  return out;
}

int32_t reassignments_accepted(const std::vector<partition_reassignment_result>& results) {
  return static_cast<int32_t>(std::count_if(results.begin(), results.end(),
                                            [](const partition_reassignment_result& r) { return !r.refused; }));
}

controller::rebalance_options active_controller::rebalance_options_for(double tolerance, bool drain_only) const {
  controller::rebalance_options options;
  options.tolerance = tolerance;
  options.drain_only = drain_only;
  options.unavailable_brokers = autobalancer_.draining;   // continuous mode's (empty otherwise)
  options.min_insync_replicas = [this](const std::string& topic) { return parts_.replicas.min_insync_replicas(topic); };
  return options;
}

void active_controller::rebalance(rebalance_request request, std::function<void(result<rebalance_result>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (!(request.tolerance >= 0.0 && request.tolerance <= 1.0)) {
    return done(error{errc::invalid_request, "tolerance " + std::to_string(request.tolerance) + " is out of range: 0.0 to 1.0"});
  }
  parts_.barrier.post_caught_up([this, request = std::move(request), done = std::move(done)]() mutable {
    rebalance_result out;
    out.plan = controller::plan_rebalance(*metadata_.controller_view()->image, request.sizes,
                                          rebalance_options_for(request.tolerance, false));
    out.autobalancer.mode = live_config().partition_autobalancer_mode;
    out.autobalancer.unavailable_brokers_draining.assign(autobalancer_.draining.begin(), autobalancer_.draining.end());
    if (request.dry_run || out.plan.moves.empty()) return done(std::move(out));
    if (out.plan.reassignments_in_progress > 0) {
      return done(error{errc::reassignment_in_progress,
                        std::to_string(out.plan.reassignments_in_progress) +
                            " partition(s) are being reassigned: a rebalance starts once they are done or cancelled"});
    }
    log_.info("rebalance: " + std::to_string(out.plan.moves.size()) + " partition(s) move, " +
              std::to_string(out.plan.bytes_to_move) + " bytes to copy");
    auto targets = targets_of(out.plan);
    alter_partition_reassignments(std::move(targets), [out = std::move(out), done = std::move(done)](
                                                          result<std::vector<partition_reassignment_result>> r) mutable {
      if (!r.ok()) return done(r.error());
      out.started = accepted(*r);
      done(std::move(out));
    });
  });
}

void active_controller::cancel_reassignments(std::function<void(result<int32_t>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  parts_.barrier.post_caught_up([this, done = std::move(done)]() mutable {
    // A decommission's drain is not a rebalance's to cancel: its tick would start it again (cancel
    // the decommission instead, which takes its moves back).
    const auto image = metadata_.controller_view()->image;
    const auto drains = [&image](const partition_reassignment& r) {
      return std::any_of(r.removing_replicas.begin(), r.removing_replicas.end(), [&image](int32_t id) {
        return image->decommission_state(id) == broker_decommission_state::decommissioning;
      });
    };
    std::vector<partition_reassignment_target> cancels;
    size_t kept = 0;
    for (const auto& r : reassignments_in(*image, "")) {
      if (drains(r)) {
        ++kept;
      } else {
        cancels.push_back({r.topic, r.partition, std::nullopt});
      }
    }
    if (kept > 0) {
      log_.info(std::to_string(kept) + " reassignment(s) draining a decommissioning broker are not cancelled");
    }
    if (cancels.empty()) return done(0);
    log_.info("cancelling " + std::to_string(cancels.size()) + " partition reassignment(s)");
    alter_partition_reassignments(std::move(cancels), [done = std::move(done)](
                                                          result<std::vector<partition_reassignment_result>> r) mutable {
      if (!r.ok()) return done(r.error());
      done(accepted(*r));
    });
  });
}

std::optional<error> active_controller::decommission_refusal(const controller::metadata_image& image, int32_t node_id) const {
  const bool voter = quorum_voters_.empty() ? node_id == config_.node_id
                                                            : quorum_voters_.contains(node_id);
  if (voter) {
    return error{errc::invalid_request,
                 "node " + std::to_string(node_id) +
                     " is a controller quorum voter (controller.quorum.voters): the quorum's voters do not change while "
                     "it runs, so move the voter role to another node (a new controller.quorum.voters on every node, "
                     "restarted in turn) before decommissioning it"};
  }
  if (auto refused = controller::decommission_capacity_refusal(image, node_id)) return error{errc::invalid_request, *refused};
  return std::nullopt;
}

void active_controller::decommission_broker(int32_t node_id, bool cancel, std::function<void(result<broker_decommission>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  parts_.barrier.post_caught_up([this, node_id, cancel, done = std::move(done)]() mutable {
    const auto image = metadata_.controller_view()->image;
    const auto state = image->decommission_state(node_id);
    if (cancel) return cancel_decommission(node_id, std::move(done));
    if (state == broker_decommission_state::decommissioned) return done(describe_decommission(*image, node_id));
    if (image->find_broker(node_id) == nullptr) {
      return done(error{errc::resource_not_found, "no broker " + std::to_string(node_id) + " is registered"});
    }
    if (state == broker_decommission_state::none) {
      if (auto refused = decommission_refusal(*image, node_id)) return done(std::move(*refused));
    }
    if (state == broker_decommission_state::none) {
      log_.info("decommissioning broker " + std::to_string(node_id) + ": its replicas move to the other brokers");
    }
    auto shared_done = std::make_shared<std::function<void(result<broker_decommission>)>>(std::move(done));
    auto drain = [this, node_id, shared_done] {
      drain_decommissioning([this, node_id, shared_done] {
        (*shared_done)(describe_decommission(*metadata_.controller_view()->image, node_id));
      });
    };
    if (state != broker_decommission_state::none) return drain();   // asked again: only the drain again
    parts_.writer.commit_records({decommission_record(node_id, broker_decommission_state::decommissioning)},
                   [drain = std::move(drain), shared_done](result<void> r) {
                     if (!r.ok()) return (*shared_done)(r.error());
                     drain();
                   });
  });
}

void active_controller::cancel_decommission(int32_t node_id, std::function<void(result<broker_decommission>)> done) {
  const auto image = metadata_.controller_view()->image;
  if (image->decommission_state(node_id) == broker_decommission_state::none && image->find_broker(node_id) == nullptr) {
    return done(error{errc::resource_not_found, "no broker " + std::to_string(node_id) + " is registered"});
  }
  if (image->decommission_state(node_id) != broker_decommission_state::decommissioning) {
    return done(error{errc::invalid_request, "broker " + std::to_string(node_id) + " is not being decommissioned" +
                                                 (image->decommission_state(node_id) == broker_decommission_state::decommissioned
                                                      ? " (its decommission is done)"
                                                      : "")});
  }
  log_.info("decommission of broker " + std::to_string(node_id) + " cancelled");
  parts_.writer.commit_records({decommission_record(node_id, broker_decommission_state::none)},
                 [this, node_id, done = std::move(done)](result<void> r) mutable {
    if (!r.ok()) return done(r.error());
    // The moves off the broker under way go back; what completed stays where it went.
    std::vector<partition_reassignment_target> cancels;
    for (const auto& p : reassignments_in(*metadata_.controller_view()->image, "")) {
      if (std::find(p.removing_replicas.begin(), p.removing_replicas.end(), node_id) != p.removing_replicas.end()) {
        cancels.push_back({p.topic, p.partition, std::nullopt});
      }
    }
    auto answer = [this, node_id, done = std::move(done)]() mutable {
      broker_decommission d = describe_decommission(*metadata_.controller_view()->image, node_id);
      d.status = "CANCELED";
      done(std::move(d));
    };
    if (cancels.empty()) return answer();
    alter_partition_reassignments(std::move(cancels), [answer = std::move(answer)](auto) mutable { answer(); });
  });
}

void active_controller::drain_decommissioning(std::function<void()> then) {
  const auto plan =
      controller::plan_rebalance(*metadata_.controller_view()->image, {}, rebalance_options_for(0.1, true));
  if (plan.moves.empty()) return then();
  log_.info("decommission: " + std::to_string(plan.moves.size()) +
            " partition(s) move off the decommissioning broker(s)");
  alter_partition_reassignments(targets_of(plan), [then = std::move(then)](auto) mutable { then(); });
}

void active_controller::decommission_tick() {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  const auto image = metadata_.controller_view()->image;
  if (decommission_in_flight_ || image->decommissions().empty()) return;
  std::vector<protocol::metadata_record> finished;
  bool to_drain = false;
  for (const auto& [id, state] : image->decommissions()) {
    if (state != broker_decommission_state::decommissioning) continue;
    const broker_decommission d = describe_decommission(*image, id);
    if (d.partitions_remaining == 0) {
      log_.info("broker " + std::to_string(id) + " holds no replicas: decommissioned and unregistered");
      finished.push_back(decommission_record(id, broker_decommission_state::decommissioned));
    } else if (d.reassignments_in_progress < d.partitions_remaining) {
      to_drain = true;   // a move refused or cancelled, or a partition not safe to move before
    }
  }
  if (finished.empty() && !to_drain) return;
  decommission_in_flight_ = true;
  auto clear = [this, alive = std::weak_ptr<int>(lifetime_)] {
    if (alive.lock()) decommission_in_flight_ = false;
  };
  if (!finished.empty()) {
    return parts_.writer.commit_records(std::move(finished), [clear = std::move(clear)](result<void>) { clear(); });
  }
  drain_decommissioning(std::move(clear));
}

std::vector<broker_decommission> decommissions_in(const controller::metadata_image& image) {
  std::vector<broker_decommission> out;
  for (const auto& [id, state] : image.decommissions()) out.push_back(describe_decommission(image, id));
  return out;
}

}  // namespace ringlog::broker::detail
