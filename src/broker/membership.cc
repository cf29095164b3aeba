// Cluster membership on the active controller (Kafka's ClusterControlManager and
// BrokerHeartbeatManager, KIP-631): brokers' heartbeats answered (fenced or not, controlled
// shutdown), the metadata offset each has applied noted for reassignments (reassignment.h), and
// brokers that miss their session or whose process is gone fenced. The decisions and the sessions
// are controller::broker_heartbeats (controller/membership.h); here are the RPC, the probes, the
// commits and the log lines. The broker's own side of the heartbeat (registration, send,
// leadership lease) is in cluster_requests.cc.

#include <variant>

#include "broker_impl.h"
#include "ringlog/base/assert.h"
#include "ringlog/controller/metadata_entry.h"

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
  auto answer = broker_heartbeats_.answer(*controller_view_->image, request, deps_.clock.now_ms());
  if (!answer.ok()) {
    response.error_code = static_cast<int16_t>(kafka_error_code(from_controller(answer.error()).code));
    return response;
  }
  completion_barrier_.heard(request.broker_id, request.broker_epoch, request.current_metadata_offset);
  response.is_caught_up = true;
  response.is_fenced = answer->is_fenced;
  response.should_shut_down = answer->should_shut_down;
  if (!answer->records.empty()) commit_records(std::move(answer->records), [](result<void>) {});
  return response;
}

controller::fencing_rules broker_impl::fencing_rules_now() const {
  return {config_.broker_session_timeout_ms, config_.node_id, config_.process_role_broker,
          config_.unclean_leader_election_enable, incarnation_id_};
}

void broker_impl::fence_lapsed_brokers() {
  if (fencing_in_flight_) return;
  auto fencing = broker_heartbeats_.next_to_fence(*controller_view_->image, deps_.clock.now_ms(), fencing_rules_now());
  if (!fencing) return;
  log_info("fencing broker " + std::to_string(fencing->broker_id) + ": " + fencing->reason);
  fencing_in_flight_ = true;
  commit_records(std::move(fencing->records), [this](result<void> r) {
    fencing_in_flight_ = false;
    if (r.ok()) fence_lapsed_brokers();   // the next one, if any, on the new image
  });
}

result<void> broker_impl::refuse_duplicate_registration(std::span<const std::byte> payload) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  auto records = controller::decode_metadata_entry(payload);
  if (!records.ok()) return base::ok_v;
  for (const auto& record : *records) {
    const auto* registration = std::get_if<protocol::register_broker_record>(&record);
    if (registration == nullptr) continue;
    auto checked = broker_heartbeats_.check_registration(*controller_view_->image, *registration, deps_.clock.now_ms(),
                                                         fencing_rules_now());
    if (checked.ok()) continue;
    probe_broker(registration->broker_id);   // the live one: a process gone since is fenced at once
    return from_controller(checked.error());
  }
  return base::ok_v;
}

void broker_impl::log_registration_refused(const error& e) {
  const int64_t now_ms = deps_.clock.now_ms();
  if (registration_refusal_logged_ms_ >= 0 &&
      now_ms - registration_refusal_logged_ms_ < duplicate_registration_log_interval_ms) {
    return;
  }
  registration_refusal_logged_ms_ = now_ms;
  log_error("node " + std::to_string(config_.node_id) + " (incarnation " + controller::uuid_to_string(incarnation_id_) +
            ") may not register: " + e.message + " (retrying; logged at most every " +
            std::to_string(duplicate_registration_log_interval_ms) + " ms)");
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
      broker_heartbeats_.refused(id, started_ms);
      if (quorum_->leader_id() == config_.node_id) fence_lapsed_brokers();
    });
  });
}

}  // namespace ringlog::broker::detail
