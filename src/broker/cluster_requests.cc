// The requests brokers send one another: the cluster transport's handlers (envelopes, forwarded
// produce, fetch and list offsets; the active controller's are active_controller.h's), this
// broker's heartbeats and the leadership lease, the leader checks, the brokers as the metadata
// lists them, the group coordinator's node and the quorum's description; the metadata writes
// (write_entry, commit_records: proposed here or sent to the active controller in a KIP-590
// Envelope, then awaited until applied here).
// Kafka's counterpart: ControllerApis, BrokerLifecycleManager's heartbeats and
// QuorumController's appendRecords.

#include <utility>

#include "broker_impl.h"
#include "ringlog/controller/metadata_entry.h"
#include "ringlog/controller/quorum_wire.h"
#include "wire_codes.h"
#include "ringlog/group/coordinator_partition.h"

namespace ringlog::broker::detail {

void broker_impl::register_cluster_handlers() {
  // An Envelope's body is copied (it is valid during the transport's call only) and handled on
  // the controller shard, where the image and the controller's state live.
  deps_.cluster_transport->set_handler(
      envelope_api_key,
      [this](const protocol::request_header_data& header, std::span<const std::byte> body, rpc::respond_fn respond) {
        deps_.runtime.post(controller_shard, [this, header, b = std::vector<std::byte>(body.begin(), body.end()),
                                              respond = std::move(respond)]() mutable {
          handle_envelope(header, std::move(b), std::move(respond));
        });
      });
  // BrokerHeartbeat, AlterPartition, AllocateProducerIds; a connection from a broker closed.
  controller_.register_cluster_handlers();
  // DescribeQuorum, the metadata barrier's question to the active controller (metadata_barrier.h).
  barrier_.register_cluster_handlers();
  // Produce and ListOffsets forwarded by brokers that do not lead the partition (leader_forwarder.h).
  forwarder_.register_cluster_handlers();
  // WriteTxnMarkers for partitions led here, AddPartitionsToTxn v4 (KIP-890 verification) for
  // the transactional ids coordinated here (partition_transactions.h).
  partition_txns_.register_cluster_handlers();
}

void broker_impl::share_fetch_handler() {
  // Fetch serves two logs: the metadata log (raft's handler, registered when the quorum starts)
  // and the partitions this node leads (followers' fetches: replica_fetch_server; forwarded ones: leader_forwarder), route_cluster_fetch.
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
  if (replica_id < 0) {   // a consumer's, forwarded
    return forwarder_.serve_forwarded_fetch(header, request, std::move(respond));
  }
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
                   [this, sent_ms = deps_.clock.monotonic_ms()](result<void> r) {
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
  send_heartbeat(false, [this, sent_ms = deps_.clock.monotonic_ms()](result<protocol::broker_heartbeat_response_data> r) {
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
      if (v.replica_id != config_.node_id) others.push_back(v.last_fetch_monotonic_ms);
    }
    sent_ms = std::min(sent_ms, replication::quorum_contact_ms(others, deps_.clock.monotonic_ms()));
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

int32_t broker_impl::group_coordinator_id(const std::string& group_id) const {
  const auto t = find_topic(consumer_offsets_topic);
  if (!t || t->partitions_count() <= 0) return -1;
  const int32_t p = group::coordinator_partition_for(group_id, t->partitions_count());
  return t->image->partitions[static_cast<size_t>(p)].leader;
}

void broker_impl::write_entry(std::vector<std::byte> payload, std::function<void(result<int64_t>)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  const int32_t leader = quorum_->leader_id();
  if (leader == config_.node_id) {
    if (auto refused = controller_.refuse_duplicate_registration(payload); !refused.ok()) return done(refused.error());
    std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(payload.data()),
                               reinterpret_cast<const uint8_t*>(payload.data()) + payload.size());
    return quorum_->propose(std::move(bytes), [done = std::move(done)](controller::result<int64_t> r) {
      if (!r.ok()) return done(from_controller(r.error()));
      done(r.value());
    });
  }
  if (leader < 0 || deps_.cluster_transport == nullptr) {
    return done(error{errc::not_controller, "the metadata quorum has no leader now (an election is under way or a "
                                            "majority of controller.quorum.voters is unreachable); retry"});
  }
  // KIP-590: forward to the active controller, which proposes it and answers once committed.
  protocol::envelope_request_data request;
  request.request_data = std::move(payload);
  const std::string from = std::to_string(config_.node_id);
  request.client_host_address = protocol::bytes(reinterpret_cast<const std::byte*>(from.data()),
                                                reinterpret_cast<const std::byte*>(from.data()) + from.size());
  protocol::writer w;
  if (auto encoded = request.encode(w, 0); !encoded.ok()) {
    return done(error{errc::unknown_server_error, "envelope: " + encoded.error().message});
  }
  deps_.cluster_transport->send(
      leader, envelope_api_key, 0, std::move(w).take(), metadata_write_timeout_ms,
      [this, leader, done = std::move(done)](rpc::result<rpc::bytes> r) mutable {
        deps_.runtime.post(controller_shard, [leader, r = std::move(r), done = std::move(done)]() mutable {
          if (!r.ok()) {
            return done(error{errc::not_controller, "the active controller (node " + std::to_string(leader) +
                                                        ") did not answer: " + r.error().message + "; retry"});
          }
          protocol::reader rd(*r);
          auto response = protocol::envelope_response_data::decode(rd, 0);
          if (!response.ok()) return done(error{errc::unknown_server_error, "envelope response: " + response.error().message});
          const std::string message = response->error_message.value_or("the active controller refused the write");
          if (response->error_code == kafka_code_not_controller) return done(error{errc::not_controller, message});
          if (response->error_code == kafka_code_request_timed_out) return done(error{errc::request_timed_out, message});
          if (response->error_code == wire_codes::code_duplicate_broker_registration) {
            return done(error{errc::duplicate_broker_registration, message});
          }
          if (response->error_code != 0) return done(error{errc::invalid_request, message});
          if (!response->response_data || response->response_data->size() != 8) {
            return done(error{errc::unknown_server_error, "envelope response without the committed offset"});
          }
          int64_t offset = 0;
          for (std::byte b : *response->response_data) offset = (offset << 8) | static_cast<uint8_t>(b);
          done(offset);
        });
      });
}

void broker_impl::commit_records(std::vector<protocol::metadata_record> records,
                                 std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  // Check the entry against this node's image first: most bad writes are refused here at once.
  controller::metadata_delta check{*controller_view_->image};
  for (const auto& record : records) {
    if (auto applied = check.apply(record, controller_view_->image->offset() + 1); !applied.ok()) {
      return done(error{errc::invalid_request, applied.error().message});
    }
  }
  write_entry(controller::encode_metadata_entry(records), [this, done = std::move(done)](result<int64_t> r) mutable {
    if (!r.ok()) return done(r.error());
    apply_queue_.await_applied(r.value(), std::move(done));
  });
}

}  // namespace ringlog::broker::detail
