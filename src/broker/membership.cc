// Cluster membership on the active controller (Kafka's ClusterControlManager and
// BrokerHeartbeatManager, KIP-631): brokers' heartbeats answered (fenced or not, controlled
// shutdown), the metadata offset each has applied noted for reassignments (reassignment.h), and
// brokers that miss their session or whose process is gone fenced. The broker's own side of the
// heartbeat (registration, send, leadership lease) is in broker.cc.

#include "broker_impl.h"
#include "ringlog/controller/placement.h"
#include "ringlog/base/assert.h"

namespace ringlog::broker::detail {

void broker_impl::handle_broker_heartbeat(const protocol::request_header_data& header, std::vector<std::byte> body,
                                          rpc::respond_fn respond) {
  protocol::reader rd(body);
  auto request = protocol::broker_heartbeat_request_data::decode(rd, header.request_api_version);
  if (!request.ok()) return;
  respond_with(header, controller_heartbeat(request.value()), respond);
}

protocol::broker_heartbeat_response_data broker_impl::controller_heartbeat(
    const protocol::broker_heartbeat_request_data& request) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  protocol::broker_heartbeat_response_data response;
  if (quorum_->leader_id() != config_.node_id) {
    response.error_code = kafka_code_not_controller;
    return response;
  }
  const auto& image = *controller_view_->image;
  const auto* b = image.find_broker(request.broker_id);
  if (b == nullptr || b->broker_epoch != request.broker_epoch) {
    response.error_code = kafka_code_stale_broker_epoch;
    return response;
  }
  last_heartbeat_ms_[request.broker_id] = deps_.clock.now_ms();
  completion_barrier_.heard(request.broker_id, request.broker_epoch, request.current_metadata_offset);
  response.is_caught_up = true;
  response.is_fenced = b->fenced;
  response.should_shut_down = b->in_controlled_shutdown;
  if (request.want_shut_down && !b->in_controlled_shutdown) {
    // the next heartbeat learns the outcome
    commit_records(controlled_shutdown_records(image, *b), [](result<void>) {});
  } else if (!request.want_shut_down && b->fenced) {
    protocol::unfence_broker_record unfence;
    unfence.id = b->node_id;
    unfence.epoch = b->broker_epoch;
    std::vector<protocol::metadata_record> records{unfence};
    for (auto& r : elect_leaderless(image, b->node_id)) records.push_back(std::move(r));
    commit_records(std::move(records), [](result<void>) {});
  }
  return response;
}

void broker_impl::fence_lapsed_brokers() {
  if (fencing_in_flight_) return;
  const int64_t now = deps_.clock.now_ms();
  const auto& image = *controller_view_->image;
  for (const auto& [id, b] : image.brokers()) {
    // The active controller's own broker is alive by definition (it runs this code): a late
    // heartbeat of its own, e.g. after the process stalled, must not take its partitions offline.
    // A dedicated controller has no broker of its own: a registration under its id is left over
    // from when the node ran process.roles=broker,controller, and is fenced like any lapsed one.
    if (b.fenced || (id == config_.node_id && config_.process_role_broker)) continue;
    // A new registration (a restart: a new broker epoch) starts its session now; without this a
    // broker that registers after a long absence was fenced again before its first heartbeat.
    if (auto [known, fresh] = heartbeat_epoch_.try_emplace(id, b.broker_epoch); !fresh && known->second != b.broker_epoch) {
      known->second = b.broker_epoch;
      last_heartbeat_ms_[id] = now;
    }
    auto seen = last_heartbeat_ms_.try_emplace(id, now).first->second;
    const auto refused = refused_at_ms_.find(id);
    const bool gone = refused != refused_at_ms_.end() && refused->second >= seen;
    if (!gone && now - seen <= config_.broker_session_timeout_ms) continue;
    // Missed its heartbeats for broker.session.timeout.ms, or its process is gone: fence it and
    // move its leaderships.
    log_info("fencing broker " + std::to_string(id) + ": " +
                        (gone ? "its cluster listener refuses connections (its process is gone)"
                              : "no heartbeat for " + std::to_string(now - seen) + " ms (broker.session.timeout.ms=" +
                                    std::to_string(config_.broker_session_timeout_ms) + ")"));
    protocol::fence_broker_record fence;
    fence.id = id;
    fence.epoch = b.broker_epoch;
    std::vector<protocol::metadata_record> records{fence};
    for (auto& r : remove_broker_from_partitions(image, id, config_.unclean_leader_election_enable)) records.push_back(std::move(r));
    fencing_in_flight_ = true;
    commit_records(std::move(records), [this](result<void> r) {
      fencing_in_flight_ = false;
      if (r.ok()) fence_lapsed_brokers();   // the next one, if any, on the new image
    });
    return;   // one at a time: each sees the image the previous one made
  }
}

void broker_impl::probe_broker(int32_t id) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  if (deps_.cluster_transport == nullptr || id == config_.node_id || quorum_leader_id_ != config_.node_id) return;
  const auto* b = controller_view_->image->find_broker(id);
  if (b == nullptr || b->fenced || !probes_in_flight_.insert(id).second) return;
  const int64_t started_ms = deps_.clock.now_ms();
  rpc::probe_listening(*deps_.cluster_transport, id, config_.broker_heartbeat_interval_ms * 2,
                       [this, id, started_ms, alive = std::weak_ptr<int>(lifetime_)](rpc::result<void> r) {
    const bool refused = !r.ok() && r.error().code == rpc::errc::connection_refused;
    deps_.runtime.post(controller_shard, [this, id, started_ms, refused, alive] {
      if (!alive.lock() || stopping_) return;
      probes_in_flight_.erase(id);
      if (!refused) return;
      refused_at_ms_[id] = started_ms;
      if (quorum_->leader_id() == config_.node_id) fence_lapsed_brokers();
    });
  });
}

}  // namespace ringlog::broker::detail
