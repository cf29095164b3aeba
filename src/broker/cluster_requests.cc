// The requests brokers send one another: the cluster transport's handlers (envelopes, forwarded
// produce, fetch and list offsets; the active controller's are active_controller.h's), this
// broker's heartbeats and the leadership lease, the leader checks, the brokers as the metadata
// lists them, the group coordinator's node and the quorum's description.
// Kafka's counterpart: ControllerApis and BrokerLifecycleManager's heartbeats.

#include <utility>

#include "broker_impl.h"
#include "ringlog/controller/quorum_wire.h"
#include "wire_codes.h"
#include "ringlog/group/coordinator_partition.h"

namespace ringlog::broker::detail {

void broker_impl::register_cluster_handlers() {
  // Each request's body is copied (it is valid during the transport's call only) and handled on
  // the controller shard, where the image and the controller's state live.
  using handler = void (broker_impl::*)(const protocol::request_header_data&, std::vector<std::byte>, rpc::respond_fn);
  for (auto [api_key, handle] :
       {std::pair<int16_t, handler>{envelope_api_key, &broker_impl::handle_envelope},
        std::pair<int16_t, handler>{protocol::describe_quorum_request_data::api_key,
                                    &broker_impl::handle_describe_quorum}}) {
    deps_.cluster_transport->set_handler(api_key, [this, handle](const protocol::request_header_data& header,
                                                                 std::span<const std::byte> body, rpc::respond_fn respond) {
      deps_.runtime.post(controller_shard, [this, handle, header, b = std::vector<std::byte>(body.begin(), body.end()),
                                            respond = std::move(respond)]() mutable {
        (this->*handle)(header, std::move(b), std::move(respond));
      });
    });
  }
  // BrokerHeartbeat, AlterPartition, AllocateProducerIds; a connection from a broker closed.
  controller_.register_cluster_handlers();
  // Produce and ListOffsets forwarded by brokers that do not lead the partition (forwarding.cc).
  deps_.cluster_transport->set_handler(protocol::produce_request_data::api_key,
                                       [this](const protocol::request_header_data& header,
                                              std::span<const std::byte> body, rpc::respond_fn respond) {
                                         handle_forwarded_produce(header, body, std::move(respond));
                                       });
  // Transaction markers for partitions led here (transactions.cc).
  deps_.cluster_transport->set_handler(protocol::write_txn_markers_request_data::api_key,
                                       [this](const protocol::request_header_data& header,
                                              std::span<const std::byte> body, rpc::respond_fn respond) {
                                         handle_write_txn_markers(header, body, std::move(respond));
                                       });
  // KIP-890 verification of transactional produce, for the transactional ids coordinated here.
  deps_.cluster_transport->set_handler(protocol::add_partitions_to_txn_request_data::api_key,
                                       [this](const protocol::request_header_data& header,
                                              std::span<const std::byte> body, rpc::respond_fn respond) {
                                         handle_verify_txn_partitions(header, body, std::move(respond));
                                       });
  deps_.cluster_transport->set_handler(protocol::list_offsets_request_data::api_key,
                                       [this](const protocol::request_header_data& header,
                                              std::span<const std::byte> body, rpc::respond_fn respond) {
                                         handle_forwarded_list_offsets(header, body, std::move(respond));
                                       });
}

void broker_impl::share_fetch_handler() {
  // Fetch serves two logs: the metadata log (raft's handler, registered when the quorum starts)
  // and the partitions this node leads (followers' fetches: replica_fetch_server; forwarded ones: forwarding.cc), route_cluster_fetch.
  quorum_fetch_handler_ = deps_.cluster_transport->handler(protocol::fetch_request_data::api_key);
  RINGLOG_ASSERT(quorum_fetch_handler_ != nullptr, "the quorum registers its Fetch handler when it starts");
  deps_.cluster_transport->set_handler(protocol::fetch_request_data::api_key,
                                       [this](const protocol::request_header_data& header,
                                              std::span<const std::byte> body, rpc::respond_fn respond) {
                                         route_cluster_fetch(header, body, std::move(respond));
                                       });
}

void broker_impl::route_cluster_fetch(const protocol::request_header_data& header, std::span<const std::byte> body,
                                      rpc::respond_fn respond) {
  protocol::reader rd(body);
  auto decoded = protocol::fetch_request_data::decode(rd, header.request_api_version);
  if (!decoded.ok()) return;   // unanswered: the follower times out and retries
  auto request = std::move(decoded).value();
  const bool metadata_log = header.request_api_version >= 13
                                ? (!request.topics.empty() && request.topics[0].topic_id == controller::quorum_wire::metadata_topic_id())
                                : (!request.topics.empty() && request.topics[0].topic == controller::quorum_wire::metadata_topic);
  if (metadata_log) {
    if (quorum_fetch_handler_) quorum_fetch_handler_(header, body, std::move(respond));
    return;
  }
  const int32_t replica_id = header.request_api_version >= 15 ? request.replica_state.replica_id : request.replica_id;
  if (replica_id < 0) return serve_forwarded_fetch(header, request, std::move(respond));   // a consumer's, forwarded
  replica_fetch_server_.handle_replica_fetch(header, request, replica_id, std::move(respond));
}

void broker_impl::handle_envelope(const protocol::request_header_data& header, std::vector<std::byte> body,
                                  rpc::respond_fn respond) {
  protocol::reader rd(body);
  auto request = protocol::envelope_request_data::decode(rd, header.request_api_version);
  if (!request.ok()) return;  // unanswered: the sender times out, and its error names the controller
  auto answer = [header, respond](int16_t code, std::string message, int64_t offset) mutable {
    protocol::envelope_response_data response;
    response.error_code = code;
    if (code != 0) {
      response.error_message = std::move(message);
    } else {
      protocol::bytes data(8);
      for (int i = 7; i >= 0; --i) {
        data[static_cast<size_t>(i)] = static_cast<std::byte>(offset & 0xff);
        offset >>= 8;
      }
      response.response_data = std::move(data);
    }
    respond_with(header, response, respond);
  };
  if (quorum_->leader_id() != config_.node_id) {
    return answer(kafka_code_not_controller,
                  "node " + std::to_string(config_.node_id) + " is not the active controller", 0);
  }
  write_entry(std::move(request->request_data), [answer](result<int64_t> r) mutable {
    if (!r.ok()) {
      const int16_t code = r.error().code == errc::not_controller      ? kafka_code_not_controller
                           : r.error().code == errc::request_timed_out ? kafka_code_request_timed_out
                           : r.error().code == errc::duplicate_broker_registration
                               ? wire_codes::code_duplicate_broker_registration
                               : wire_codes::code_invalid_request;
      return answer(code, r.error().message, 0);
    }
    answer(0, "", r.value());
  });
}

void broker_impl::schedule_heartbeat() {
  deps_.runtime.post_after(controller_shard, config_.broker_heartbeat_interval_ms,
                           [this, alive = std::weak_ptr<int>(lifetime_)] {
    if (!alive.lock() || stopping_) return;
    heartbeat_tick();
    schedule_heartbeat();
  });
}

void broker_impl::heartbeat_tick() {
  controller_.heartbeat_tick();   // every node: the autobalancer; the active controller: fencing, ticks
  if (!config_.process_role_broker) return;   // a dedicated controller never registers or heartbeats
  if (own_registration() == nullptr) {
    // Not registered in this incarnation (or the registration was replaced): register again.
    if (registering_ || decommissioned_refusal()) return;   // decommissioned: never again (issue 33)
    registering_ = true;
    commit_records(registration_records(*controller_view_->image, config_.node_id, incarnation_id_, deps_,
                                       config_.broker_rack),
                   [this, sent_ms = deps_.clock.now_ms()](result<void> r) {
                     registering_ = false;
                     if (r.ok()) renew_leadership_lease(sent_ms);   // a new registration starts its session
                     // Another live process holds this node.id: refused again each tick, never
                     // over its session (the controller's check), and unregistered this process
                     // leads nothing (apply_partition_state).
                     if (!r.ok() && r.error().code == errc::duplicate_broker_registration) log_registration_refused(r.error());
                   });
    return;
  }
  controller_.renew_stale_leaderships();
  if (heartbeat_in_flight_) return;
  heartbeat_in_flight_ = true;
  send_heartbeat(false, [this, sent_ms = deps_.clock.now_ms()](result<protocol::broker_heartbeat_response_data> r) {
    heartbeat_in_flight_ = false;
    if (r.ok() && r->error_code == 0 && !r->is_fenced) renew_leadership_lease(sent_ms);
  });
}

void broker_impl::renew_leadership_lease(int64_t sent_ms) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  if (quorum_->leader_id() == config_.node_id) {
    // Answered by the controller in this process: it counts only as of the last time a majority
    // of the voters fetched from it (a controller cut off from them may have been replaced).
    std::vector<int64_t> others;
    for (const auto& v : quorum_->describe().voters) {
      if (v.replica_id != config_.node_id) others.push_back(v.last_fetch_timestamp_ms);
    }
    sent_ms = std::min(sent_ms, replication::quorum_contact_ms(others, deps_.clock.now_ms()));
  }
  leadership_lease_.acknowledged(sent_ms);
  leadership_lease_until_ms_.store(leadership_lease_.valid_until_ms(), std::memory_order_relaxed);
}

void broker_impl::send_heartbeat(bool want_shut_down,
                                 std::function<void(result<protocol::broker_heartbeat_response_data>)> done) {
  const auto* own = own_registration();
  if (own == nullptr) return done(error{errc::stale_broker_epoch, "this broker is not registered"});
  protocol::broker_heartbeat_request_data request;
  request.broker_id = config_.node_id;
  request.broker_epoch = own->broker_epoch;
  // Applied, published to every shard and reconciled (a reassignment's completion waits for it).
  request.current_metadata_offset = apply_queue_.applied_end() - 1;
  request.want_shut_down = want_shut_down;
  const int32_t leader = quorum_->leader_id();
  if (leader == config_.node_id) return done(controller_.controller_heartbeat(request));
  if (leader < 0 || deps_.cluster_transport == nullptr) {
    return done(error{errc::not_controller, "no active controller to send the heartbeat to"});
  }
  protocol::writer w;
  if (auto encoded = request.encode(w, 0); !encoded.ok()) return done(error{errc::unknown_server_error, encoded.error().message});
  deps_.cluster_transport->send(
      leader, broker_heartbeat_api_key, 0, std::move(w).take(), config_.broker_heartbeat_interval_ms * 2,
      [this, done = std::move(done)](rpc::result<rpc::bytes> r) mutable {
        deps_.runtime.post(controller_shard, [r = std::move(r), done = std::move(done)]() mutable {
          if (!r.ok()) return done(error{errc::not_controller, r.error().message});
          protocol::reader rd(*r);
          auto response = protocol::broker_heartbeat_response_data::decode(rd, 0);
          if (!response.ok()) return done(error{errc::unknown_server_error, response.error().message});
          done(std::move(response).value());
        });
      });
}

result<void> broker_impl::check_leader(const topic_state& topic, int32_t partition) const {
  if (partition < 0 || partition >= topic.partitions_count()) return base::ok_v;   // the caller's range check names it
  const int32_t leader = topic.image->partitions[static_cast<size_t>(partition)].leader;
  if (leader == config_.node_id) return base::ok_v;
  if (leader < 0) {
    return error{errc::not_leader_or_follower, "partition " + std::to_string(partition) + " of topic '" + topic.name() +
                                                   "' has no leader now (its in-sync replicas are all unavailable); retry"};
  }
  // Kafka clients route themselves on NOT_LEADER_OR_FOLLOWER; HTTP and WebSocket calls are
  // forwarded (forwarding.cc) and never see this text as an instruction to go elsewhere.
  return error{errc::not_leader_or_follower, "partition " + std::to_string(partition) + " of topic '" + topic.name() +
                                                 "' is led by broker " + std::to_string(leader) + ", not by this broker (" +
                                                 std::to_string(config_.node_id) + ")"};
}

int32_t broker_impl::group_coordinator_id(const std::string& group_id) const {
  const auto t = find_topic(consumer_offsets_topic);
  if (!t || t->partitions_count() <= 0) return -1;
  const int32_t p = group::coordinator_partition_for(group_id, t->partitions_count());
  return t->image->partitions[static_cast<size_t>(p)].leader;
}

}  // namespace ringlog::broker::detail
