// The partition autobalancer's tick (issue 33; controller/autobalancer.h has the rules): on every
// node, on each heartbeat tick, the brokers unavailable and since when; on the active controller,
// the decision carried out: a rebalance plan (drain only for unavailable brokers) started as
// partition reassignments, like `ringlog cluster rebalance` does (KIP-455: the new replicas catch
// up before the old ones leave, so no move takes a partition below min.insync.replicas).
// Sizes are not asked for here (that takes every broker's answer): the autobalancer's plans even
// out replica and leader counts; `ringlog cluster rebalance` balances bytes too.

#include <string>

#include "active_controller.h"
#include "constants.h"
#include "metadata_publisher.h"
#include "ringlog/base/assert.h"

namespace ringlog::broker::detail {

namespace {

/// The rebalance's default tolerance (rebalance_request::tolerance): the counts it evens out.
constexpr double autobalancer_tolerance = 0.1;

std::string id_list(const auto& ids) {
  std::string out;
  for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

/// The log line of a plan started for `decision`.
std::string started_line(const controller::autobalancer_decision& decision, const controller::rebalance_plan& plan,
                         const broker_config& config) {
  const std::string moves = std::to_string(plan.moves.size()) + " partition(s) move";
  switch (decision.reason) {
    case controller::autobalance_reason::node_add:
      return "autobalancer (" + config.partition_autobalancer_mode + "): broker(s) " + id_list(decision.new_brokers) +
             " hold no replica: " + moves + " to give them their share";
    case controller::autobalance_reason::unavailable:
      return "autobalancer (continuous): broker(s) " + id_list(decision.unavailable_brokers_draining) +
             " unavailable longer than partition.autobalancer.node.availability.timeout.ms=" +
             std::to_string(config.partition_autobalancer_node_availability_timeout_ms) + ": " + moves +
             " off them";
    default:
      return "autobalancer (continuous): the balance check: " + moves;
  }
}

}  // namespace

void active_controller::autobalancer_tick() {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  const auto image = metadata_.controller_view()->image;
  const broker_config& config = live_config();
  const int64_t now_ms = clock_.now_ms();
  autobalancer& a = autobalancer_;
  a.unavailable_since_ms = controller::track_unavailable(*image, a.unavailable_since_ms, now_ms);
  controller::autobalancer_inputs inputs;
  inputs.mode = controller::parse_autobalancer_mode(config.partition_autobalancer_mode).value_or(controller::autobalancer_mode::off);
  inputs.now_ms = now_ms;
  inputs.node_availability_timeout_ms = config.partition_autobalancer_node_availability_timeout_ms;
  inputs.tick_interval_ms = config.partition_autobalancer_tick_interval_ms;
  inputs.last_attempt_ms = a.last_attempt_ms;
  inputs.last_balance_ms = a.last_balance_ms;
  const controller::autobalancer_decision decision = controller::decide_autobalance(*image, a.unavailable_since_ms, inputs);
  a.draining = decision.unavailable_brokers_draining;
  if (!active()) return;
  decommission_tick();   // an operator's decommission goes first; the decision waits while one runs
  if (decision.waiting != a.waiting && !decision.waiting.empty()) {
    log_.info("autobalancer: waiting: " + std::string(decision.waiting));
  }
  a.waiting = decision.waiting;
  if (stopping_ || a.in_flight || decommission_in_flight_ || decision.reason == controller::autobalance_reason::none) return;
  const bool drain = decision.reason == controller::autobalance_reason::unavailable;
  (decision.reason == controller::autobalance_reason::balance ? a.last_balance_ms : a.last_attempt_ms) = now_ms;
  const controller::rebalance_plan plan =
      controller::plan_rebalance(*image, {}, rebalance_options_for(autobalancer_tolerance, drain));
  if (plan.moves.empty()) return;
  log_.info(started_line(decision, plan, config));
  a.in_flight = true;
  alter_partition_reassignments(
      reassignment_targets_of(plan), [this, alive = std::weak_ptr<int>(lifetime_), reason = decision.reason](
                                         result<std::vector<partition_reassignment_result>> r) {
        if (!alive.lock()) return;
        autobalancer_.in_flight = false;
        if (r.ok()) autobalancer_.count(reason, reassignments_accepted(*r));
      });
}

}  // namespace ringlog::broker::detail
