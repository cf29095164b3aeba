// Replication control on the active controller (Kafka's ReplicationControlManager):
// AlterPartition from partition leaders (KIP-497, KIP-841), preferred leader elections on request
// (HTTP, CLI) and automatically (auto.leader.rebalance.enable; KIP-183, KIP-460), and this
// broker's leaderships from before its registration renewed. The decisions are
// controller/replication_control.h's (pure); here are the RPC, the commits, the in-flight flags and
// the log lines (active_controller.h). The leader's side of AlterPartition (maybe_change_isr) is in
// src/partition/replica_fetch_server.cc, its controller client (send_alter_partition) in
// replication.cc.
#include "active_controller.h"
#include "broker_lifecycle.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "constants.h"
#include "metadata_publisher.h"
#include "rpc_messages.h"
#include "ringlog/base/assert.h"
#include "ringlog/controller/replication_control.h"
#include "ringlog/protocol/error_codes.h"

namespace ringlog::broker::detail {
namespace {

using namespace protocol::error_codes;   // the codes AlterPartition answers with (shared with the leader's side)

/// AlterPartition's refusals (controller::alter_partition) as Kafka's error codes on the wire: the
/// leader's maybe_change_isr (src/partition/replica_fetch_server.cc) reads these, whether it asked a
/// peer or this node.
int16_t alter_partition_code(controller::errc e) {
  switch (e) {
    case controller::errc::unknown_topic_or_partition: return code_unknown_topic_or_partition;
    case controller::errc::fenced_leader_epoch: return code_fenced_leader_epoch;
    case controller::errc::invalid_update_version: return code_invalid_update_version;
    case controller::errc::ineligible_replica: return code_ineligible_replica;
    default: return code_invalid_request;
  }
}

/// AlterPartition's answer names the partition's state as the controller knows it.
void answer_state(protocol::alter_partition_response_data::partition_data& out, const controller::partition_image& p) {
  out.leader_id = p.leader;
  out.leader_epoch = p.leader_epoch;
  out.isr = p.in_sync_replicas;
  out.partition_epoch = p.partition_epoch;
}

}  // namespace

void active_controller::handle_alter_partition(const protocol::request_header_data& header,
                                               std::vector<std::byte> body, rpc::respond_fn respond) {
  answer_request<protocol::alter_partition_request_data>(header, body, std::move(respond),
                                                         [this](auto request, auto answer) {
    alter_partition(std::move(request), std::move(answer));
  });
}

void active_controller::alter_partition(protocol::alter_partition_request_data request,
                                        std::function<void(protocol::alter_partition_response_data)> done) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  protocol::alter_partition_response_data response;
  if (!active()) {
    response.error_code = code_not_controller;
    return done(std::move(response));
  }
  // One partition per request (the leaders here send one at a time); each is checked against the
  // controller's image and committed with the partition epoch it was computed at, so a change
  // that raced with another (a fencing, a leader move) fails where every node applies it.
  if (request.topics.size() != 1 || request.topics[0].partitions.size() != 1) {
    response.error_code = code_invalid_request;
    return done(std::move(response));
  }
  const auto& in_topic = request.topics[0];
  const auto& in = in_topic.partitions[0];
  protocol::alter_partition_response_data::topic_data out_topic;
  out_topic.topic_id = in_topic.topic_id;
  protocol::alter_partition_response_data::partition_data out;
  out.partition_index = in.partition_index;
  const auto& image = *metadata_.controller_view()->image;
  if (const auto* p = controller::find_partition(image, in_topic.topic_id, in.partition_index)) answer_state(out, *p);
  auto decided = controller::alter_partition(image, request.broker_id, in_topic.topic_id, in, completion_barrier_);
  if (!decided.ok()) {
    out.error_code = alter_partition_code(decided.error().code);
    out_topic.partitions.push_back(out);
    response.topics.push_back(out_topic);
    return done(std::move(response));
  }
  auto& change = decided->change;
  if (decided->completes_reassignment) {
    log_.info("partition reassignment of partition " + std::to_string(in.partition_index) + " of topic '" +
              decided->topic +
              (change.replicas ? "' completes: replicas " + std::to_string(change.replicas->size())
                               : "': leadership moves to broker " + std::to_string(change.leader)));
  }
  parts_.writer.commit_records({change}, [this, response = std::move(response), out_topic, out, done = std::move(done),
                            name = decided->topic](result<void> r) mutable {
    if (!r.ok()) {
      out.error_code =
          r.error().code == errc::not_controller ? code_not_controller : code_invalid_update_version;
    } else if (const auto* t = metadata_.controller_view()->image->find_topic(name); t != nullptr) {
      if (const auto* p =
              controller::find_partition(*metadata_.controller_view()->image, t->topic_id, out.partition_index)) {
        out.error_code = 0;
        answer_state(out, *p);
      }
    }
    out_topic.partitions.push_back(out);
    response.topics.push_back(out_topic);
    done(std::move(response));
  });
}


void active_controller::elect_preferred_leaders(
    std::vector<std::pair<std::string, int32_t>> partitions,
    std::function<void(result<std::vector<leader_election_result>>)> done) {
  elect_preferred_leaders_attempt(std::move(partitions), std::move(done), preferred_election_attempts_max);
}

void active_controller::elect_preferred_leaders_attempt(
    std::vector<std::pair<std::string, int32_t>> partitions,
    std::function<void(result<std::vector<leader_election_result>>)> done, int attempts_left) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  parts_.barrier.post_caught_up([this, partitions = std::move(partitions), done = std::move(done), attempts_left]() mutable {
    auto election = controller::elect_preferred_leaders(*metadata_.controller_view()->image, partitions);
    std::vector<leader_election_result> results;
    for (auto& o : election.outcomes) {
      leader_election_result r;
      r.topic = std::move(o.topic);
      r.partition = o.partition;
      r.leader = o.leader;
      if (o.refused) r.refused = from_controller(*o.refused);
      results.push_back(std::move(r));
    }
    if (election.records.empty()) return done(std::move(results));
    log_.info("preferred leader election: " + std::to_string(election.records.size()) + " leadership(s) given back");
    parts_.writer.commit_records(std::move(election.records), [this, partitions = std::move(partitions),
                                                       results = std::move(results), done = std::move(done),
                                                       attempts_left](result<void> r) mutable {
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

void active_controller::note_stale_leadership(std::string topic, int32_t partition, int32_t leader_epoch) {
  runtime_.post(controller_shard, [this, topic = std::move(topic), partition, leader_epoch,
                                   alive = std::weak_ptr<int>(lifetime_)]() mutable {
    if (alive.lock()) stale_leaderships_[{std::move(topic), partition}] = leader_epoch;
  });
}

void active_controller::renew_stale_leaderships() {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  if (renewing_leaderships_ || stale_leaderships_.empty() || parts_.lifecycle.own_registration() == nullptr) return;
  auto records =
      controller::renew_stale_leaderships(*metadata_.controller_view()->image, config_.node_id, stale_leaderships_);
  if (records.empty()) return;
  log_.info("renewing " + std::to_string(records.size()) +
            " leadership(s) named for this broker before its registration (moved or in a new epoch)");
  renewing_leaderships_ = true;
  parts_.writer.commit_records(std::move(records), [this](result<void>) { renewing_leaderships_ = false; });
}

void active_controller::rebalance_leaders_tick() {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  if (!config_.auto_leader_rebalance_enable || leader_rebalance_in_flight_) return;
  const int64_t now = clock_.now_ms();
  if (now - leader_rebalance_checked_ms_ < config_.leader_imbalance_check_interval_seconds * 1000) return;
  leader_rebalance_checked_ms_ = now;
  auto records = controller::balance_partition_leaders(*metadata_.controller_view()->image,
                                                       config_.leader_imbalance_per_broker_percentage);
  if (records.empty()) return;
  log_.info("auto.leader.rebalance.enable: giving " + std::to_string(records.size()) +
            " leadership(s) back to their preferred replicas");
  leader_rebalance_in_flight_ = true;
  parts_.writer.commit_records(std::move(records), [this](result<void> r) {
    leader_rebalance_in_flight_ = false;
    if (!r.ok()) {
      log_.info("automatic leader rebalance not applied (the next check retries): " + r.error().message);
    }
  });
}

}  // namespace ringlog::broker::detail
