// The metadata writes (write_entry, commit_records: proposed here or sent to the active
// controller in a KIP-590 Envelope, then awaited until applied here; the active controller's
// Envelope handler) and the routing of the cluster listener's Fetch (cluster_requests.h). The
// other handlers of requests between brokers are their parts' (active_controller.h,
// metadata_barrier.h, leader_forwarder.h, transactions.cc; start_up.cc registers them), this
// broker's heartbeats and lease broker_lifecycle.h's.
// Kafka's counterpart: ControllerApis' Envelope and QuorumController's appendRecords.

#include <optional>
#include <utility>

#include "cluster_requests.h"
#include "constants.h"
#include "ringlog/base/assert.h"
#include "ringlog/controller/metadata_entry.h"
#include "ringlog/controller/quorum_wire.h"
#include "ringlog/protocol/error_codes.h"
#include "rpc_messages.h"

namespace ringlog::broker::detail {

namespace error_codes = protocol::error_codes;

metadata_writer::metadata_writer(const broker_config& config, runtime::shard_runtime& runtime,
                                 rpc::transport* cluster_transport,
                                 const std::unique_ptr<controller::metadata_quorum>& quorum,
                                 metadata_publisher& publisher, active_controller& controller)
    : config_(config),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      quorum_(quorum),
      publisher_(publisher),
      controller_(controller) {}

void metadata_writer::register_cluster_handlers() {
  // An Envelope's body is copied (it is valid during the transport's call only) and handled on
  // the controller shard, where the image and the controller's state live.
  cluster_transport_->set_handler(
      envelope_api_key,
      [this](const protocol::request_header_data& header, std::span<const std::byte> body, rpc::respond_fn respond) {
        runtime_.post(controller_shard, [this, header, b = std::vector<std::byte>(body.begin(), body.end()),
                                         respond = std::move(respond)]() mutable {
          handle_envelope(header, std::move(b), std::move(respond));
        });
      });
}

cluster_fetch_router::cluster_fetch_router(rpc::transport* cluster_transport, leader_forwarder& forwarder,
                                           replica_fetch_server& replica_fetch_server)
    : cluster_transport_(cluster_transport), forwarder_(forwarder), replica_fetch_server_(replica_fetch_server) {}

void cluster_fetch_router::share_fetch_handler() {
  // Fetch serves two logs: the metadata log (raft's handler, registered when the quorum starts)
  // and the partitions this node leads (followers' fetches: replica_fetch_server; forwarded ones: leader_forwarder), route_cluster_fetch.
  quorum_fetch_handler_ = cluster_transport_->handler(protocol::fetch_request_data::api_key);
  RINGLOG_ASSERT(quorum_fetch_handler_ != nullptr, "the quorum registers its Fetch handler when it starts");
  cluster_transport_->set_handler(protocol::fetch_request_data::api_key,
                                  [this](const protocol::request_header_data& header, std::span<const std::byte> body,
                                         rpc::respond_fn respond) { route_cluster_fetch(header, body, std::move(respond)); });
}

void cluster_fetch_router::route_cluster_fetch(const protocol::request_header_data& header,
                                               std::span<const std::byte> body, rpc::respond_fn respond) {
  auto decoded = decode_or_close<protocol::fetch_request_data>(header, body, respond);
  if (!decoded) return;
  auto request = std::move(*decoded);
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

void metadata_writer::handle_envelope(const protocol::request_header_data& header, std::vector<std::byte> body,
                                      rpc::respond_fn respond) {
  auto request = decode_or_close<protocol::envelope_request_data>(header, body, respond);
  if (!request) return;
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
    return answer(error_codes::code_not_controller,
                  "node " + std::to_string(config_.node_id) + " is not the active controller", 0);
  }
  write_entry(std::move(request->request_data), [answer](result<int64_t> r) mutable {
    if (!r.ok()) {
      const int16_t code = r.error().code == errc::not_controller      ? error_codes::code_not_controller
                           : r.error().code == errc::request_timed_out ? error_codes::code_request_timed_out
                           : r.error().code == errc::duplicate_broker_registration
                               ? error_codes::code_duplicate_broker_registration
                           : r.error().code == errc::invalid_partitions ? error_codes::code_invalid_partitions
                                                                        : error_codes::code_invalid_request;
      return answer(code, r.error().message, 0);
    }
    answer(0, "", r.value());
  });
}

void metadata_writer::write_entry(std::vector<std::byte> payload, std::function<void(result<int64_t>)> done) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  const int32_t leader = quorum_->leader_id();
  if (leader == config_.node_id) {
    auto checked = controller_.check_proposed_entry(payload);
    if (!checked.ok()) return done(checked.error());
    // The partitions it adds count against broker.partitions.max until the image has them.
    const std::optional<uint64_t> reservation =
        *checked > 0 ? std::optional(controller_.reserve_partitions(*checked)) : std::nullopt;
    std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(payload.data()),
                               reinterpret_cast<const uint8_t*>(payload.data()) + payload.size());
    return quorum_->propose(std::move(bytes), [this, reservation, done = std::move(done)](controller::result<int64_t> r) {
      if (reservation) controller_.settle_partitions(*reservation, r.ok() ? r.value() : -1);
      if (!r.ok()) return done(from_controller(r.error()));
      done(r.value());
    });
  }
  if (leader < 0 || cluster_transport_ == nullptr) {
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
  cluster_transport_->send(
      leader, envelope_api_key, 0, std::move(w).take(), metadata_write_timeout_ms,
      [this, leader, done = std::move(done)](rpc::result<rpc::bytes> r) mutable {
        runtime_.post(controller_shard, [leader, r = std::move(r), done = std::move(done)]() mutable {
          if (!r.ok()) {
            return done(error{errc::not_controller, "the active controller (node " + std::to_string(leader) +
                                                        ") did not answer: " + r.error().message + "; retry"});
          }
          protocol::reader rd(*r);
          auto response = protocol::envelope_response_data::decode(rd, 0);
          if (!response.ok()) return done(error{errc::unknown_server_error, "envelope response: " + response.error().message});
          const std::string message = response->error_message.value_or("the active controller refused the write");
          if (response->error_code == error_codes::code_not_controller) return done(error{errc::not_controller, message});
          if (response->error_code == error_codes::code_request_timed_out) return done(error{errc::request_timed_out, message});
          if (response->error_code == error_codes::code_duplicate_broker_registration) {
            return done(error{errc::duplicate_broker_registration, message});
          }
          if (response->error_code == error_codes::code_invalid_partitions) {
            return done(error{errc::invalid_partitions, message});   // broker.partitions.max
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

void metadata_writer::commit_records(std::vector<protocol::metadata_record> records,
                                     std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  // Check the entry against this node's image first: most bad writes are refused here at once.
  controller::metadata_delta check{*publisher_.controller_view()->image};
  for (const auto& record : records) {
    if (auto applied = check.apply(record, publisher_.controller_view()->image->offset() + 1); !applied.ok()) {
      return done(error{errc::invalid_request, applied.error().message});
    }
  }
  write_entry(controller::encode_metadata_entry(records), [this, done = std::move(done)](result<int64_t> r) mutable {
    if (!r.ok()) return done(r.error());
    publisher_.apply_queue().await_applied(r.value(), std::move(done));
  });
}

}  // namespace ringlog::broker::detail
