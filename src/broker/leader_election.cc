// Preferred leader election: on request (HTTP, CLI) and automatically on the active controller
// (auto.leader.rebalance.enable), Kafka's rules (KIP-183, KIP-460; KafkaController's
// checkAndTriggerAutoLeaderRebalance). The plan comes from placement.cc (pure); this file commits
// it through the metadata log like every other leadership change.
#include "broker_impl.h"
#include "ringlog/controller/placement.h"

namespace ringlog::broker::detail {

void broker_impl::elect_preferred_leaders(std::vector<std::pair<std::string, int32_t>> partitions,
                                          std::function<void(result<std::vector<leader_election_result>>)> done) {
  elect_preferred_leaders_attempt(std::move(partitions), std::move(done), preferred_election_attempts_max);
}

void broker_impl::elect_preferred_leaders_attempt(
    std::vector<std::pair<std::string, int32_t>> partitions,
    std::function<void(result<std::vector<leader_election_result>>)> done, int attempts_left) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  post_caught_up([this, partitions = std::move(partitions), done = std::move(done), attempts_left]() mutable {
    const auto plan = plan_preferred_elections(*controller_view_->image, partitions);
    std::vector<protocol::metadata_record> records;
    std::vector<leader_election_result> results;
    for (const auto& e : plan) {
      leader_election_result r;
      r.topic = e.topic;
      r.partition = e.partition;
      if (e.change) {
        records.push_back(*e.change);
        r.leader = e.preferred;
      } else {
        const auto* topic = controller_view_->image->find_topic(e.topic);
        if (topic != nullptr && e.partition >= 0 && static_cast<size_t>(e.partition) < topic->partitions.size()) {
          r.leader = topic->partitions[static_cast<size_t>(e.partition)].leader;
        }
        const std::string where = "partition " + std::to_string(e.partition) + " of topic '" + e.topic + "'";
        switch (*e.refused) {
          case controller::errc::election_not_needed:
            r.refused = error{errc::election_not_needed, where + " is led by its preferred replica " +
                                                           std::to_string(e.preferred) + " already"};
            break;
          case controller::errc::preferred_leader_not_available:
            r.refused = error{errc::preferred_leader_not_available,
                            where + ": its preferred replica " + std::to_string(e.preferred) +
                                " is fenced, shutting down or not in the ISR (it may lack acknowledged records)"};
            break;
          default:
            r.refused = error{errc::unknown_topic_or_partition, where + " does not exist"};
        }
      }
      results.push_back(std::move(r));
    }
    if (records.empty()) return done(std::move(results));
    log_info("preferred leader election: " + std::to_string(records.size()) + " leadership(s) given back");
    commit_records(std::move(records), [this, partitions = std::move(partitions), results = std::move(results),
                                        done = std::move(done), attempts_left](result<void> r) mutable {
      // invalid_request: a partition changed between the plan and its commit (the plan named an
      // older partition epoch); plan again from the newer image, a bounded number of times.
      if (!r.ok() && r.error().code == errc::invalid_request && attempts_left > 1) {
        return elect_preferred_leaders_attempt(std::move(partitions), std::move(done), attempts_left - 1);
      }
      if (!r.ok()) return done(r.error());
      done(std::move(results));
    });
  });
}

void broker_impl::renew_stale_leaderships() {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  if (renewing_leaderships_ || stale_leaderships_.empty() || own_registration() == nullptr) return;
  std::vector<protocol::metadata_record> records;
  for (auto it = stale_leaderships_.begin(); it != stale_leaderships_.end();) {
    auto change = renew_stale_leadership(*controller_view_->image, config_.node_id, it->first.first, it->first.second,
                                         it->second);
    if (!change) {
      it = stale_leaderships_.erase(it);   // it moved meanwhile: nothing to repair
      continue;
    }
    records.push_back(*change);
    ++it;
  }
  if (records.empty()) return;
  log_info("renewing " + std::to_string(records.size()) +
           " leadership(s) named for this broker before its registration (moved or in a new epoch)");
  renewing_leaderships_ = true;
  commit_records(std::move(records), [this](result<void>) { renewing_leaderships_ = false; });
}

void broker_impl::rebalance_leaders_tick() {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  if (!config_.auto_leader_rebalance_enable || leader_rebalance_in_flight_) return;
  const int64_t now = deps_.clock.now_ms();
  if (now - leader_rebalance_checked_ms_ < config_.leader_imbalance_check_interval_seconds * 1000) return;
  leader_rebalance_checked_ms_ = now;
  const auto& image = *controller_view_->image;
  const auto imbalanced = imbalanced_brokers(image, config_.leader_imbalance_per_broker_percentage);
  if (imbalanced.empty()) return;
  std::vector<protocol::metadata_record> records;
  for (const auto& e : plan_preferred_elections(image, {})) {
    if (records.size() >= leader_rebalance_changes_max) break;
    if (std::find(imbalanced.begin(), imbalanced.end(), e.preferred) != imbalanced.end()) records.push_back(*e.change);
  }
  if (records.empty()) return;
  log_info("auto.leader.rebalance.enable: giving " + std::to_string(records.size()) +
           " leadership(s) back to their preferred replicas");
  leader_rebalance_in_flight_ = true;
  commit_records(std::move(records), [this](result<void> r) {
    leader_rebalance_in_flight_ = false;
    if (!r.ok()) log_info("automatic leader rebalance not applied (the next check retries): " + r.error().message);
  });
}

}  // namespace ringlog::broker::detail
