// Cluster membership on the active controller (Kafka's ClusterControlManager and
// BrokerHeartbeatManager, KIP-631): brokers' heartbeats answered (fenced or not, controlled
// shutdown), the metadata offset each has applied noted for reassignments (reassignment.h), and
// brokers that miss their session or whose process is gone fenced. The decisions and the sessions
// are controller::broker_heartbeats (controller/membership.h); here are the RPC, the probes, the
// commits and the log lines. The broker's own side of the heartbeat (registration, send,
// leadership lease) is broker_lifecycle.h's.

#include <array>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "active_controller.h"
#include "broker_lifecycle.h"
#include "cluster_requests.h"
#include "constants.h"
#include "metadata_publisher.h"
#include "rpc_messages.h"
#include "ringlog/base/assert.h"
#include "ringlog/broker/errc.h"
#include "ringlog/controller/metadata_entry.h"
#include "ringlog/model/types.h"
#include "ringlog/protocol/error_codes.h"

namespace ringlog::broker::detail {

active_controller::active_controller(parts reached, const metadata_publisher& metadata, broker_log log,
                                     const broker_config& config, const base::clock& clock,
                                     runtime::shard_runtime& runtime, rpc::transport* cluster_transport,
                                     base::random_source& random,
                                     const std::map<int32_t, rpc::peer_address>& quorum_voters,
                                     const std::atomic<bool>& stopping)
    : parts_(std::move(reached)),
      metadata_(metadata),
      log_(std::move(log)),
      config_(config),
      clock_(clock),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      random_(random),
      quorum_voters_(quorum_voters),
      stopping_(stopping) {}

void active_controller::register_cluster_handlers() {
  // Each request's body is copied (it is valid during the transport's call only) and handled on
  // the controller shard, where the image and the controller's state live.
  using handler = void (active_controller::*)(const protocol::request_header_data&, std::vector<std::byte>,
                                              rpc::respond_fn);
  for (auto [api_key, handle] :
       {std::pair<int16_t, handler>{broker_heartbeat_api_key, &active_controller::handle_broker_heartbeat},
        std::pair<int16_t, handler>{protocol::alter_partition_request_data::api_key,
                                    &active_controller::handle_alter_partition},
        std::pair<int16_t, handler>{protocol::allocate_producer_ids_request_data::api_key,
                                    &active_controller::handle_allocate_producer_ids}}) {
    cluster_transport_->set_handler(api_key, [this, handle](const protocol::request_header_data& header,
                                                            std::span<const std::byte> body, rpc::respond_fn respond) {
      runtime_.post(controller_shard, [this, handle, header, b = std::vector<std::byte>(body.begin(), body.end()),
                                       respond = std::move(respond)]() mutable {
        (this->*handle)(header, std::move(b), std::move(respond));
      });
    });
  }
  // A connection from a broker closed: on the active controller, check whether it is gone.
  cluster_transport_->set_peer_closed_handler([this, alive = std::weak_ptr<int>(lifetime_)](int32_t node_id) {
    runtime_.post(controller_shard, [this, node_id, alive] {
      if (alive.lock() && !stopping_) probe_broker(node_id);
    });
  });
}

void active_controller::on_leader_change(int32_t leader_id) {
  const bool was_leader = quorum_leader_id_ == config_.node_id;
  quorum_leader_id_ = leader_id;
  if (leader_id != config_.node_id || was_leader) return;
  // A new active controller gives every broker a full session before fencing it.
  const int64_t now = clock_.monotonic_ms();
  const auto image = metadata_.controller_view()->image;
  controller_active_since_ms_ = now;
  // Published by the quorum before it told the state machine of the leadership (-1 if it was
  // lost again since: this node then answers no heartbeat, active() is false).
  broker_heartbeats_.activate(*image, now, parts_.quorum->leader_epoch_start_offset());
  // The previous controller left for a reason (often its process died, and its broker with it):
  // ask every broker at once instead of waiting a session for the gone ones.
  for (const auto& [id, b] : image->brokers()) probe_broker(id);
}

void active_controller::heartbeat_tick() {
  autobalancer_tick();   // every node: unavailable brokers; the active controller: decommissions, autobalancer
  if (!active()) return;
  for (int32_t id : broker_heartbeats_.late(clock_.monotonic_ms(), config_.broker_heartbeat_interval_ms)) {
    probe_broker(id);   // a heartbeat late
  }
  fence_lapsed_brokers();
  rebalance_leaders_tick();
  complete_reassignments_tick();
  ensure_offsets_topic_async([](result<bool>) {});   // no usable broker yet: the next tick tries again
  ensure_forwarding_secret();
}

const broker_config& active_controller::live_config() const {
  const auto& view = *metadata_.controller_view();
  return ::ringlog::broker::detail::live_config(view, config_);
}

void active_controller::handle_broker_heartbeat(const protocol::request_header_data& header,
                                                std::vector<std::byte> body, rpc::respond_fn respond) {
  answer_request<protocol::broker_heartbeat_request_data>(
      header, body, std::move(respond),
      [this](const auto& request, auto answer) { answer(controller_heartbeat(request)); });
}

protocol::broker_heartbeat_response_data active_controller::controller_heartbeat(
    const protocol::broker_heartbeat_request_data& request) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  protocol::broker_heartbeat_response_data response;
  if (!active()) {
    response.error_code = protocol::error_codes::code_not_controller;
    return response;
  }
  auto answer = broker_heartbeats_.answer(*metadata_.controller_view()->image, request, clock_.monotonic_ms());
  if (!answer.ok()) {
    response.error_code = static_cast<int16_t>(kafka_error_code(from_controller(answer.error()).code));
    return response;
  }
  if (broker_heartbeats_.fence_in_flight(request.broker_id)) {
    log_.info("heartbeat of broker " + std::to_string(request.broker_id) +
              " answered fenced: its fence is proposed and not applied yet (its lease is not renewed)");
  }
  completion_barrier_.heard(request.broker_id, request.broker_epoch, request.current_metadata_offset);
  response.is_caught_up = answer->is_caught_up;
  response.is_fenced = answer->is_fenced;
  response.should_shut_down = answer->should_shut_down;
  if (!answer->records.empty()) parts_.writer.commit_records(std::move(answer->records), [](result<void>) {});
  return response;
}

controller::fencing_rules active_controller::fencing_rules_now() const {
  return {config_.broker_session_timeout_ms, config_.node_id, config_.process_role_broker,
          config_.unclean_leader_election_enable, parts_.lifecycle.incarnation_id()};
}

void active_controller::fence_lapsed_brokers() {
  if (fencing_in_flight_) return;
  auto fencing =
      broker_heartbeats_.next_to_fence(*metadata_.controller_view()->image, clock_.monotonic_ms(), fencing_rules_now());
  if (!fencing) return;
  log_.info("fencing broker " + std::to_string(fencing->broker_id) + ": " + fencing->reason);
  fencing_in_flight_ = true;
  // Until the fence is applied here, its broker's heartbeats are answered fenced (answer's doc).
  broker_heartbeats_.fence_proposed(fencing->broker_id);
  parts_.writer.commit_records(std::move(fencing->records), [this, id = fencing->broker_id](result<void> r) {
    fencing_in_flight_ = false;
    broker_heartbeats_.fence_settled(id);
    if (r.ok()) fence_lapsed_brokers();   // the next one, if any, on the new image
  });
}

namespace {

/// The partitions `records` add to `image` in topics not named "__..." (internal topics are the
/// broker's own and always created): a PartitionRecord for an index its topic does not have yet,
/// of a topic in the image or of one a TopicRecord of `records` creates.
int64_t user_partitions_added(const controller::metadata_image& image,
                              const std::vector<protocol::metadata_record>& records) {
  std::map<std::array<uint8_t, 16>, std::string> new_topics;   // TopicRecords of this entry
  int64_t added = 0;
  for (const auto& record : records) {
    if (const auto* topic = std::get_if<protocol::topic_record>(&record)) {
      new_topics[topic->topic_id.value] = topic->name;
      continue;
    }
    const auto* partition = std::get_if<protocol::partition_record>(&record);
    if (partition == nullptr) continue;
    if (const auto* existing = image.find_topic(partition->topic_id); existing != nullptr) {
      const bool grows = partition->partition_id >= static_cast<int32_t>(existing->partitions.size());
      if (grows && !model::is_internal_topic(existing->name)) ++added;
      continue;
    }
    auto it = new_topics.find(partition->topic_id.value);
    if (it == new_topics.end() || !model::is_internal_topic(it->second)) ++added;
  }
  return added;
}

}  // namespace

uint64_t active_controller::reserve_partitions(int64_t partitions) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  RINGLOG_ASSERT_OP(partitions, >, 0);
  const uint64_t id = next_partition_reservation_++;
  partition_reservations_[id] = partition_reservation{partitions, -1};
  return id;
}

void active_controller::settle_partitions(uint64_t id, int64_t offset) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  auto it = partition_reservations_.find(id);
  if (it == partition_reservations_.end()) return;
  if (offset < 0) {
    partition_reservations_.erase(it);
    return;
  }
  it->second.offset = offset;
}

result<int64_t> active_controller::check_partitions_max(const controller::metadata_image& image, int64_t adding) {
  // Reservations whose entry the image has applied are in its partition count now.
  std::erase_if(partition_reservations_,
                [&image](const auto& r) { return r.second.offset >= 0 && r.second.offset <= image.offset(); });
  if (adding == 0) return adding;
  int64_t reserved = 0;
  for (const auto& [id, r] : partition_reservations_) reserved += r.partitions;
  const int64_t held = image.partition_count() + reserved;
  if (held + adding <= config_.partitions_max) return adding;
  return error{errc::invalid_partitions,
               "the cluster holds " + std::to_string(image.partition_count()) + " partitions (" +
                   std::to_string(reserved) + " more being created); " + std::to_string(adding) +
                   " more would pass the limit broker.partitions.max=" + std::to_string(config_.partitions_max) +
                   " (each partition keeps files open; the limit follows the open-file limit)"};
}

result<int64_t> active_controller::check_proposed_entry(std::span<const std::byte> payload) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  // A peer's envelope is written to the metadata log as it came: what it says is checked here
  // first, as Kafka's controller checks each request (the breaker of session 34 committed
  // garbage, a topic named "../escape" that every node made a directory for outside log.dirs,
  // and the removal of __consumer_offsets, through the cluster listener).
  auto records = controller::decode_metadata_entry(payload);
  if (!records.ok()) {
    return error{errc::invalid_request, "a metadata entry that does not decode: " + records.error().message};
  }
  const auto image = metadata_.controller_view()->image;
  for (const auto& record : *records) {
    if (const auto* topic = std::get_if<protocol::topic_record>(&record)) {
      if (auto valid = validate_topic_name(topic->name); !valid.ok()) return valid.error();
    }
    if (const auto* removal = std::get_if<protocol::remove_topic_record>(&record)) {
      const auto* removed = image->find_topic(removal->topic_id);
      if (removed != nullptr && model::is_internal_topic(removed->name)) {
        return error{errc::invalid_request, "internal topic '" + removed->name + "' cannot be deleted"};
      }
    }
  }
  if (auto refused = refuse_duplicate_registration(*records); !refused.ok()) return refused.error();
  return check_partitions_max(*image, user_partitions_added(*image, *records));
}

result<void> active_controller::refuse_duplicate_registration(const std::vector<protocol::metadata_record>& records) {
  for (const auto& record : records) {
    const auto* registration = std::get_if<protocol::register_broker_record>(&record);
    if (registration == nullptr) continue;
    auto checked = broker_heartbeats_.check_registration(*metadata_.controller_view()->image, *registration,
                                                         clock_.monotonic_ms(), fencing_rules_now());
    if (checked.ok()) continue;
    probe_broker(registration->broker_id);   // the live one: a process gone since is fenced at once
    return from_controller(checked.error());
  }
  return base::ok_v;
}

void active_controller::probe_broker(int32_t id) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  if (cluster_transport_ == nullptr || id == config_.node_id || quorum_leader_id_ != config_.node_id) return;
  const auto* b = metadata_.controller_view()->image->find_broker(id);
  if (b == nullptr || b->fenced || !probes_in_flight_.insert(id).second) return;
  const int64_t started_ms = clock_.monotonic_ms();
  rpc::probe_listening(*cluster_transport_, id, config_.broker_heartbeat_interval_ms * 2,
                       [this, id, started_ms, alive = std::weak_ptr<int>(lifetime_)](rpc::result<void> r) {
    const bool refused = !r.ok() && r.error().code == rpc::errc::connection_refused;
    runtime_.post(controller_shard, [this, id, started_ms, refused, alive] {
      if (!alive.lock() || stopping_) return;
      probes_in_flight_.erase(id);
      if (!refused) return;
      broker_heartbeats_.refused(id, started_ms);
      if (active()) fence_lapsed_brokers();
    });
  });
}

}  // namespace ringlog::broker::detail
