// The single-node broker: topics and partitions on shards, produce with group commit, fetch
// with long-poll, list offsets, and the admin calls. Metadata changes run on shard 0 (the
// future controller) and are written to the metadata log before they take effect.

#include "ringlog/broker/broker.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <queue>
#include <chrono>
#include <set>
#include <unordered_map>

#include "broker_configs.h"
#include "broker_impl.h"
#include "ringlog/group/coordinator_partition.h"
#include "compaction.h"
#include "group_service.h"
#include "metadata.h"
#include "ringlog/controller/placement.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/controller/metadata_entry.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/broker/partitioner.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/file.h"
#include "ringlog/runtime/constants.h"
#include "ringlog/storage/meta_properties.h"
#include "ringlog/storage/partition_log.h"
#include "topic_config.h"

namespace ringlog::broker {
namespace detail {

error partition_missing(const std::string& topic, int32_t partition, int32_t partitions_count) {
  return error{errc::unknown_topic_or_partition, "partition " + std::to_string(partition) + " does not exist: topic '" +
                                                     topic + "' has " + std::to_string(partitions_count) + " partitions"};
}

error from_storage(const storage::error& e) {
  switch (e.code) {
    case storage::errc::offset_out_of_range: return {errc::offset_out_of_range, e.message};
    case storage::errc::corrupt_message: return {errc::corrupt_message, e.message};
    case storage::errc::message_too_large: return {errc::message_too_large, e.message};
    case storage::errc::invalid_timestamp: return {errc::invalid_timestamp, e.message};
    case storage::errc::invalid_config: return {errc::invalid_config, e.message};
    case storage::errc::kafka_storage_error:
    case storage::errc::too_many_segments: return {errc::kafka_storage_error, e.message};
    case storage::errc::out_of_order_sequence_number: return {errc::out_of_order_sequence_number, e.message};
    case storage::errc::invalid_producer_epoch: return {errc::invalid_producer_epoch, e.message};
    // KIP-936 throttles new producer ids with THROTTLING_QUOTA_EXCEEDED; the message names the bound.
    case storage::errc::too_many_producers: return {errc::throttling_quota_exceeded, e.message};
    case storage::errc::corrupt_snapshot: return {errc::kafka_storage_error, e.message};
    case storage::errc::corrupt_txn_index: return {errc::kafka_storage_error, e.message};
    case storage::errc::invalid_txn_state: return {errc::invalid_txn_state, e.message};
    case storage::errc::transaction_coordinator_fenced: return {errc::transaction_coordinator_fenced, e.message};
  }
  return {errc::unknown_server_error, e.message};
}

std::string partition_key(const std::string& topic, int32_t partition) {
  return topic + "-" + std::to_string(partition);
}

/// A stable hash of topic-partition onto shards (FNV-1a), so a partition's shard never changes.
size_t shard_of(const std::string& topic, int32_t partition, size_t shard_count) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : topic) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
  h = (h ^ static_cast<uint32_t>(partition)) * 1099511628211ULL;
  return static_cast<size_t>(h % shard_count);
}

controller::uuid new_topic_id(base::random_source& random) {
  // Kafka's topic ids are random (version 4) UUIDs, shown as 22 characters of URL-safe base64.
  controller::uuid id;
  for (size_t i = 0; i < id.value.size(); i += 8) {
    const uint64_t bits = random.next_u64();
    for (size_t j = 0; j < 8 && i + j < id.value.size(); ++j) id.value[i + j] = static_cast<uint8_t>(bits >> (8 * j));
  }
  id.value[6] = static_cast<uint8_t>((id.value[6] & 0x0f) | 0x40);
  id.value[8] = static_cast<uint8_t>((id.value[8] & 0x3f) | 0x80);
  return id;
}

std::string unknown_topic_message(const std::string& topic) { return "topic '" + topic + "' does not exist"; }

/// The answer to new client work for a shard whose task queue is full (shard_runtime::admits).
error shard_busy(size_t shard) {
  return error{errc::throttling_quota_exceeded,
               "shard " + std::to_string(shard) + " has cross_shard_queue_tasks_max=" +
                   std::to_string(runtime::constants::cross_shard_queue_tasks_max) +
                   " tasks queued; retry later"};
}

/// Ends a parked fetch with no records and the partition's current offsets (its wait is over, or
/// the broker is stopping); nothing when it was already answered.
void answer_empty(const partition_runtime& rt, fetch_waiter& w) {
  if (w.completed) return;
  w.completed = true;
  fetch_response empty;
  empty.high_watermark = rt.log->high_watermark();
  empty.log_start_offset = rt.log->log_start_offset();
  empty.log_end_offset = rt.log->log_end_offset();
  empty.last_stable_offset = rt.log->last_stable_offset();
  empty.next_fetch_offset = w.request.fetch_offset;
  w.done(std::move(empty));
}

// ---------------------------------------------------------------- the metadata state machine

void broker_impl::apply(std::span<const controller::committed_entry> entries) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  run_metadata_rechecks();   // start-up steps waiting on the metadata look again (start_up.cc)
  for (const auto& e : entries) {
    model::record r;
    if (e.legacy_key) r.key = *e.legacy_key;
    r.value = model::bytes(reinterpret_cast<const std::byte*>(e.payload.data()),
                           reinterpret_cast<const std::byte*>(e.payload.data()) + e.payload.size());
    auto records = metadata_log_records(*controller_view_->image, r, config_.node_id);
    if (!records.ok()) {
      entry_failed(e.offset, error{errc::invalid_request, "metadata offset " + std::to_string(e.offset) + ": " +
                                                              records.error().message});
      continue;
    }
    // An entry applies as a whole or not at all, the same way on every node (the image is a
    // function of the committed entries), so a failed check here is a refused write, not a split.
    controller::metadata_delta delta{*controller_view_->image};
    std::optional<error> failure;
    for (const auto& record : records.value()) {
      if (auto applied = delta.apply(record, e.offset); !applied.ok()) {
        failure = error{errc::invalid_request, applied.error().message};
        break;
      }
    }
    if (failure) {
      entry_failed(e.offset, *failure);
      continue;
    }
    apply_job job;
    job.touched = delta.touched_topics();
    job.before = controller_view_;
    job.after = make_view(*controller_view_, std::move(delta).image(), &config_);
    job.offset = e.offset;
    job.reconcile = partitions_open_;
    controller_view_ = job.after;
    enqueue_apply_job(std::move(job));
  }
}

std::vector<uint8_t> broker_impl::snapshot() { return controller::encode_snapshot(*controller_view_->image); }

void broker_impl::load_snapshot(std::span<const uint8_t> payload, int64_t end_offset) {
  auto image = controller::decode_snapshot(payload, end_offset - 1);
  // A snapshot is durable state the quorum checked (CRC); one that does not decode is a bug.
  RINGLOG_ASSERT(image.ok(), image.ok() ? "" : image.error().message.c_str());
  apply_job job;
  std::set<std::string> names;
  for (const auto& [name, t] : controller_view_->topics) names.insert(name);
  for (const auto& [name, t] : image.value()->topics()) names.insert(name);
  job.touched.assign(names.begin(), names.end());
  job.before = controller_view_;
  job.after = make_view(*controller_view_, std::move(image).value(), &config_);
  job.offset = end_offset - 1;
  job.reconcile = partitions_open_;
  controller_view_ = job.after;
  enqueue_apply_job(std::move(job));
}

void broker_impl::on_leader_change(int32_t leader_id, int32_t /*epoch*/) {
  run_metadata_rechecks();
  const bool was_leader = quorum_leader_id_ == config_.node_id;
  quorum_leader_id_ = leader_id;
  if (leader_id == config_.node_id && !was_leader) {
    // A new active controller gives every broker a full session before fencing it.
    const int64_t now = deps_.clock.now_ms();
    controller_active_since_ms_ = now;
    broker_heartbeats_.activate(*controller_view_->image, now);
    // The previous controller left for a reason (often its process died, and its broker with it):
    // ask every broker at once instead of waiting a session for the gone ones.
    for (const auto& [id, b] : controller_view_->image->brokers()) probe_broker(id);
  }
}

void broker_impl::entry_failed(int64_t offset, error why) {
  auto [first, last] = commit_waiters_.equal_range(offset);
  if (first == last) {
    entry_failures_[offset] = std::move(why);
    while (entry_failures_.size() > entry_failures_max) entry_failures_.erase(entry_failures_.begin());
    return;
  }
  std::vector<commit_waiter> waiting;
  for (auto it = first; it != last; ++it) waiting.push_back(std::move(it->second));
  commit_waiters_.erase(first, last);
  for (auto& w : waiting) w.done(why);
}

void broker_impl::learn_peer_addresses(const controller::metadata_image& image) {
  if (deps_.cluster_transport == nullptr) return;
  for (const auto& [id, b] : image.brokers()) {
    // A voter's address comes from controller.quorum.voters (checked against its listener at
    // start); a broker-only node's only from its registration.
    if (deps_.controller_quorum_voters.contains(id)) continue;
    for (const auto& e : b.endpoints) {
      if (e.name != "cluster") continue;
      if (deps_.cluster_transport->set_peer_address(id, e.host, e.port) && deps_.log) {
        deps_.log(true, "learned the cluster address of broker " + std::to_string(id) + ": " + e.host + ":" +
                            std::to_string(e.port));
      }
    }
  }
}

void broker_impl::enqueue_apply_job(apply_job job) {
  apply_jobs_.push_back(std::move(job));
  run_apply_jobs();
}

void broker_impl::run_apply_jobs() {
  if (apply_running_ || apply_jobs_.empty()) return;
  apply_running_ = true;
  auto job = std::make_shared<apply_job>(std::move(apply_jobs_.front()));
  apply_jobs_.pop_front();
  publish_view(job->after, [this, job] {
    learn_peer_addresses(*job->after->image);
    fail_moved_forwards(*job->after);
    auto finish = [this, offset = job->offset](result<void> r) { finish_apply_job(offset, std::move(r)); };
    if (!job->reconcile) return finish(base::ok_v);
    if (!job->open_all) return reconcile(*job->before, *job->after, job->touched, finish);
    // Start-up: copies of partitions reassigned away while this node was down go first, then
    // every topic's partitions this node holds, one topic after another.
    remove_stray_replicas(*job->after);
    auto topics = std::make_shared<std::vector<std::shared_ptr<const topic_state>>>();
    for (const auto& [name, t] : job->after->topics) topics->push_back(t);
    auto next = std::make_shared<std::function<void(size_t)>>();
    std::weak_ptr<std::function<void(size_t)>> weak_next = next;
    *next = [this, topics, weak_next, finish](size_t i) {
      if (i == topics->size()) return finish(base::ok_v);
      auto self = weak_next.lock();
      open_partitions((*topics)[i], 0, false, [this, self, i, finish](result<void> r) {
        if (!r.ok()) return finish(r.error());
        deps_.runtime.post(controller_shard, [self, i] { (*self)(i + 1); });
      });
    };
    (*next)(0);
  });
}

void broker_impl::finish_apply_job(int64_t offset, result<void> outcome) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  reconciled_end_ = std::max(reconciled_end_, offset + 1);
  apply_running_ = false;
  std::vector<std::pair<int64_t, commit_waiter>> ready;
  while (!commit_waiters_.empty() && commit_waiters_.begin()->first < reconciled_end_) {
    ready.emplace_back(commit_waiters_.begin()->first, std::move(commit_waiters_.begin()->second));
    commit_waiters_.erase(commit_waiters_.begin());
  }
  for (auto& [at, w] : ready) {
    if (at == offset && !outcome.ok()) {
      w.done(outcome.error());
    } else {
      w.done(base::ok_v);
    }
  }
  run_apply_jobs();
}

void broker_impl::await_applied(int64_t offset, std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  if (auto f = entry_failures_.find(offset); f != entry_failures_.end()) {
    auto why = std::move(f->second);
    entry_failures_.erase(f);
    return done(std::move(why));
  }
  if (offset < reconciled_end_) return done(base::ok_v);
  const uint64_t id = next_waiter_id_++;
  commit_waiters_.emplace(offset, commit_waiter{id, std::move(done)});
  deps_.runtime.post_after(controller_shard, metadata_write_timeout_ms,
                           [this, offset, id, alive = std::weak_ptr<int>(lifetime_)] {
    if (!alive.lock()) return;
    auto [first, last] = commit_waiters_.equal_range(offset);
    for (auto it = first; it != last; ++it) {
      if (it->second.id != id) continue;
      auto w = std::move(it->second);
      commit_waiters_.erase(it);
      return w.done(error{errc::request_timed_out, "the metadata entry at offset " + std::to_string(offset) +
                                                       " was committed but not applied on node " +
                                                       std::to_string(config_.node_id) + " within " +
                                                       std::to_string(metadata_write_timeout_ms) + " ms"});
    }
  });
}

void broker_impl::write_entry(std::vector<std::byte> payload, std::function<void(result<int64_t>)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  const int32_t leader = quorum_->leader_id();
  if (leader == config_.node_id) {
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
    await_applied(r.value(), std::move(done));
  });
}

// ---------------------------------------------------------------- cluster requests

void broker_impl::register_cluster_handlers() {
  // Each request's body is copied (it is valid during the transport's call only) and handled on
  // the controller shard, where the image and the controller's state live.
  using handler = void (broker_impl::*)(const protocol::request_header_data&, std::vector<std::byte>, rpc::respond_fn);
  for (auto [api_key, handle] :
       {std::pair<int16_t, handler>{envelope_api_key, &broker_impl::handle_envelope},
        std::pair<int16_t, handler>{broker_heartbeat_api_key, &broker_impl::handle_broker_heartbeat},
        std::pair<int16_t, handler>{protocol::alter_partition_request_data::api_key, &broker_impl::handle_alter_partition},
        std::pair<int16_t, handler>{protocol::allocate_producer_ids_request_data::api_key,
                                    &broker_impl::handle_allocate_producer_ids},
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
  // A connection from a broker closed: on the active controller, check whether it is gone.
  deps_.cluster_transport->set_peer_closed_handler([this, alive = std::weak_ptr<int>(lifetime_)](int32_t node_id) {
    deps_.runtime.post(controller_shard, [this, node_id, alive] {
      if (alive.lock() && !stopping_) probe_broker(node_id);
    });
  });
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
  // and the partitions this node leads (followers' and forwarded fetches, replication.cc).
  quorum_fetch_handler_ = deps_.cluster_transport->handler(protocol::fetch_request_data::api_key);
  RINGLOG_ASSERT(quorum_fetch_handler_ != nullptr, "the quorum registers its Fetch handler when it starts");
  deps_.cluster_transport->set_handler(protocol::fetch_request_data::api_key,
                                       [this](const protocol::request_header_data& header,
                                              std::span<const std::byte> body, rpc::respond_fn respond) {
                                         handle_replica_fetch(header, body, std::move(respond));
                                       });
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
                                                                       : int16_t{42};
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
  autobalancer_tick();   // every node: unavailable brokers; the active controller: decommissions, autobalancer
  if (quorum_->leader_id() == config_.node_id) {
    for (int32_t id : broker_heartbeats_.late(deps_.clock.now_ms(), config_.broker_heartbeat_interval_ms)) {
      probe_broker(id);   // a heartbeat late
    }
    fence_lapsed_brokers();
    rebalance_leaders_tick();
    complete_reassignments_tick();
    ensure_offsets_topic_async([](result<bool>) {});   // no usable broker yet: the next tick tries again
  }
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
                   });
    return;
  }
  renew_stale_leaderships();
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
  request.current_metadata_offset = reconciled_end_ - 1;
  request.want_shut_down = want_shut_down;
  const int32_t leader = quorum_->leader_id();
  if (leader == config_.node_id) return done(controller_heartbeat(request));
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

quorum_status broker_impl::describe_quorum() const {
  quorum_status out;
  if (!quorum_) return out;
  const auto d = quorum_->describe();
  out.node_id = d.node_id;
  out.leader_id = d.leader_id;
  out.leader_epoch = d.leader_epoch;
  out.high_watermark = d.high_watermark;
  out.log_start_offset = d.log_start_offset;
  out.log_end_offset = d.log_end_offset;
  out.applied_offset = view()->image->offset();
  out.role = d.role;
  for (const auto& v : d.voters) {
    out.voters.push_back({v.replica_id, v.log_end_offset, v.lag, v.last_fetch_timestamp_ms});
  }
  for (const auto& v : d.observers) {
    // A decommissioned broker still fetching (not yet stopped) is no longer part of the cluster.
    if (view()->image->decommission_state(v.replica_id) == controller::broker_decommission_state::decommissioned) continue;
    out.observers.push_back({v.replica_id, v.log_end_offset, v.lag, v.last_fetch_timestamp_ms});
  }
  out.observer = d.observer;
  return out;
}

result<std::vector<protocol::metadata_record>> broker_impl::new_topic_records(
    const std::string& name, int32_t partitions, int32_t replication_factor,
    const std::map<std::string, std::string>& configs) const {
  std::vector<protocol::metadata_record> out;
  protocol::topic_record topic;
  topic.name = name;
  topic.topic_id = new_topic_id(deps_.random);
  out.push_back(topic);
  RINGLOG_TRY(append_partition_records(out, topic.topic_id, 0, partitions, replication_factor));
  for (const auto& [k, v] : configs) {
    protocol::config_record c;
    c.resource_type = controller::config_resource_topic;
    c.resource_name = name;
    c.name = k;
    c.value = v;
    out.push_back(c);
  }
  return out;
}

result<void> broker_impl::append_partition_records(std::vector<protocol::metadata_record>& out,
                                                   const controller::uuid& topic_id, int32_t from, int32_t to,
                                                   int32_t replication_factor) const {
  auto placed = place_replicas(*controller_view_->image, to - from, replication_factor, topic_id);
  if (!placed.ok()) return from_controller(placed.error());
  for (int32_t p = from; p < to; ++p) {
    protocol::partition_record r;
    r.topic_id = topic_id;
    r.partition_id = p;
    r.replicas = placed.value()[static_cast<size_t>(p - from)];
    r.leader = r.replicas.front();
    // Every replica of a new partition holds all of its (no) records: all are in sync, as Kafka
    // creates them; a replica that does not keep up leaves the ISR (replication.cc).
    r.isr = r.replicas;
    r.leader_epoch = 0;
    r.partition_epoch = 0;
    out.push_back(r);
  }
  return base::ok_v;
}

void broker_impl::publish_view(std::shared_ptr<const metadata_view> next, std::function<void()> done) {
  latest_view_.store(next, std::memory_order_release);
  auto remaining = std::make_shared<std::atomic<size_t>>(shard_views_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (size_t shard = 0; shard < shard_views_.size(); ++shard) {
    deps_.runtime.post(shard, [this, shard, next, remaining, finish] {
      shard_views_[shard] = next;
      if (remaining->fetch_sub(1) == 1) deps_.runtime.post(controller_shard, [finish] { (*finish)(); });
    });
  }
}

void broker_impl::reconcile(const metadata_view& before, const metadata_view& after,
                            const std::vector<std::string>& touched, std::function<void(result<void>)> done) {
  // One step per touched topic, in order; the first failure is reported after all ran.
  struct progress {
    std::vector<std::function<void(std::function<void(result<void>)>)>> steps;
    size_t next = 0;
    std::optional<error> failure;
    std::function<void(result<void>)> done;
  };
  auto p = std::make_shared<progress>();
  p->done = std::move(done);
  bool changed = before.acls != after.acls;   // issue 30: ACLs change what patterns may match
  for (const auto& name : touched) {
    auto old_it = before.topics.find(name);
    auto new_it = after.topics.find(name);
    std::shared_ptr<const topic_state> old_state = old_it == before.topics.end() ? nullptr : old_it->second;
    std::shared_ptr<const topic_state> new_state = new_it == after.topics.end() ? nullptr : new_it->second;
    if (old_state && (!new_state || new_state->image->topic_id != old_state->image->topic_id)) {
      changed = true;
      p->steps.push_back([this, name, count = old_state->partitions_count()](auto next) {
        if (groups_) groups_->topic_deleted(name);   // none on a dedicated controller
        remove_partitions(name, count, std::move(next));
      });
      old_state = nullptr;
    }
    if (!new_state) continue;
    const int32_t from = old_state ? old_state->partitions_count() : 0;
    if (from < new_state->partitions_count()) {
      changed = true;
      p->steps.push_back([this, new_state, from](auto next) { open_partitions(new_state, from, true, std::move(next)); });
    }
    // Leader, ISR and epoch changes: each replica here starts or ends a leadership, follows its
    // new leader, or takes the new ISR (replication.cc).
    // A reassignment (KIP-455) adds this node to a partition's replicas (it opens the partition
    // and follows) or removes it (it drops the replica and deletes its log).
    std::vector<int32_t> added;
    for (int32_t part = 0; old_state && part < std::min(from, new_state->partitions_count()); ++part) {
      const auto& was = old_state->image->partitions[static_cast<size_t>(part)];
      const auto& now = new_state->image->partitions[static_cast<size_t>(part)];
      if (was == now) continue;
      const bool was_here = std::find(was.replicas.begin(), was.replicas.end(), config_.node_id) != was.replicas.end();
      const bool here = std::find(now.replicas.begin(), now.replicas.end(), config_.node_id) != now.replicas.end();
      if (!was_here && here) {
        added.push_back(part);
        continue;
      }
      deps_.runtime.post(owner(name, part), [this, name, part, now, was_here, here] {
        const size_t shard = owner(name, part);
        if (was_here && !here) return drop_replica(shard, name, part, now);
        if (auto rt = runtime_of(shard, name, part)) apply_partition_state(shard, rt, now);
      });
    }
    if (!added.empty()) {
      p->steps.push_back([this, new_state, added = std::move(added)](auto next) mutable {
        open_held_partitions(new_state, std::move(added), true, std::move(next));
      });
    }
    if (old_state && old_state->image->configs != new_state->image->configs) {
      p->steps.push_back([this, new_state, from, live_config = after.config](auto next) {
        auto cfg = make_log_config(live_config ? *live_config : config_, new_state->image->configs);
        if (!cfg.ok()) return next(cfg.error());
        for (int32_t part = 0; part < from; ++part) {
          deps_.runtime.post(owner(new_state->name(), part), [this, name = new_state->name(), part, c = cfg.value()] {
            if (auto rt = runtime_of(owner(name, part), name, part)) rt->log->set_config(c);
          });
        }
        next(base::ok_v);
      });
    }
  }
  if (before.config && after.config && before.config != after.config) {
    // Dynamic broker configs changed (KIP-226): every topic follows its new defaults.
    for (const auto& [name, state] : after.topics) {
      p->steps.push_back([this, state, live_config = after.config](auto next) {
        auto cfg = make_log_config(*live_config, state->image->configs);
        if (!cfg.ok()) return next(cfg.error());
        for (int32_t part = 0; part < state->partitions_count(); ++part) {
          deps_.runtime.post(owner(state->name(), part), [this, name = state->name(), part, c = cfg.value()] {
            if (auto rt = runtime_of(owner(name, part), name, part)) rt->log->set_config(c);
          });
        }
        next(base::ok_v);
      });
    }
  }
  if (changed && groups_) p->steps.push_back([this](auto next) {
    groups_->topics_changed();
    next(base::ok_v);
  });
  // Steps run one after another on the controller shard. The pending step's callback holds
  // the runner (a weak self-reference, so nothing keeps it alive once the last step is done).
  auto run = std::make_shared<std::function<void()>>();
  std::weak_ptr<std::function<void()>> weak_run = run;
  *run = [this, p, weak_run] {
    if (p->next == p->steps.size()) {
      auto finish = std::move(p->done);
      return finish(p->failure ? result<void>(*p->failure) : result<void>(base::ok_v));
    }
    auto self = weak_run.lock();
    auto step = p->steps[p->next++];
    step([this, p, self](result<void> r) {
      if (!r.ok() && !p->failure) p->failure = r.error();
      deps_.runtime.post(controller_shard, [self] { (*self)(); });
    });
  };
  (*run)();
}

result<std::vector<protocol::metadata_record>> broker_impl::offsets_topic_records() const {
  // Created once with offsets.topic.num.partitions: a later change of the key would move groups
  // to other partitions, so the existing count wins (as in Kafka). Compacted as in Kafka: the
  // latest commit per group and partition is what counts (the key), and a deleted group's
  // tombstones go after delete.retention.ms; segments of 100 MiB (offsets.topic.segment.bytes).
  return new_topic_records(consumer_offsets_topic, config_.offsets_topic_num_partitions,
                           automatic_replication_factor(*controller_view_->image),
                           {{"cleanup.policy", "compact"}, {"segment.bytes", "104857600"}});
}

result<std::vector<protocol::metadata_record>> broker_impl::transaction_state_topic_records() const {
  // As __consumer_offsets: the partition count is fixed at creation (it places transactional
  // ids), compacted (the latest state per transactional id is what counts), 100 MiB segments
  // (Kafka's transaction.state.log.segment.bytes).
  return new_topic_records(transaction_state_topic, config_.transaction_state_log_num_partitions,
                           automatic_replication_factor(*controller_view_->image),
                           {{"cleanup.policy", "compact"}, {"segment.bytes", "104857600"}});
}

bool broker_impl::offsets_topic_due() const {
  // As Kafka waits for offsets.topic.replication.factor brokers: created once min(3, voters)
  // brokers are registered, so its replicas spread over the cluster that is starting, or once
  // this node has been the active controller for broker.session.timeout.ms (some never came).
  const size_t voters = std::max<size_t>(1, deps_.controller_quorum_voters.size());
  const size_t wanted = std::min<size_t>(3, voters);
  return usable_brokers(*controller_view_->image).size() >= wanted ||
         deps_.clock.now_ms() - controller_active_since_ms_ >= config_.broker_session_timeout_ms;
}

void broker_impl::ensure_offsets_topic_async(std::function<void(result<bool>)> done) {
  // Both internal topics of the coordinators: __consumer_offsets, then __transaction_state (one
  // metadata entry each; `done(true)` once both exist).
  const bool have_offsets = controller_view_->topics.contains(consumer_offsets_topic);
  const bool have_txn_state = controller_view_->topics.contains(transaction_state_topic);
  if (have_offsets && have_txn_state) return done(true);
  if (offsets_topic_pending_ || quorum_->leader_id() != config_.node_id || !offsets_topic_due()) return done(false);
  const char* creating = have_offsets ? transaction_state_topic : consumer_offsets_topic;
  auto records = have_offsets ? transaction_state_topic_records() : offsets_topic_records();
  if (!records.ok()) return done(records.error());
  offsets_topic_pending_ = true;
  commit_records(std::move(records).value(), [this, creating, done = std::move(done)](result<void> r) {
    offsets_topic_pending_ = false;
    run_metadata_rechecks();   // a start-up wait refused while this was pending asks again
    if (!r.ok() && !controller_view_->topics.contains(creating)) return done(r.error());
    ensure_offsets_topic_async(std::move(done));   // the other one next (at most two rounds)
  });
}

void broker_impl::append_internal_to(const std::string& topic, size_t shard, int32_t partition,
                                     std::vector<model::record> records, std::function<void(result<void>)> done) {
  auto rt = runtime_of(shard, topic, partition);
  if (!rt) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
  if (auto appended = append_own_records(shard, rt, std::move(records), done); !appended.ok()) done(appended.error());
}

std::string broker_impl::offsets_leader_text(int32_t partition) const {
  auto t = find_topic(consumer_offsets_topic);
  const int32_t leader = t && partition >= 0 && partition < t->partitions_count()
                             ? t->image->partitions[static_cast<size_t>(partition)].leader
                             : -1;
  if (leader < 0) return "no broker now (the partition has no leader; retry)";
  std::string out = "broker " + std::to_string(leader);
  if (const auto* b = view()->image->find_broker(leader); b != nullptr) {
    if (const auto* http = b->endpoint("http"); http != nullptr) {
      out += " at http://" + http->host + ":" + std::to_string(http->port);
    }
  }
  return out;
}

group_coordinator_route broker_impl::internal_leader_route(const std::string& topic, int32_t partition) const {
  group_coordinator_route route;
  route.offsets_partition = partition;
  auto t = find_topic(topic);
  const int32_t leader = t && partition >= 0 && partition < t->partitions_count()
                             ? t->image->partitions[static_cast<size_t>(partition)].leader
                             : -1;
  const std::string led = " (the leader of " + topic + "-" + std::to_string(partition) + ")";
  if (leader < 0) {
    route.description = "no broker now" + led + ": the partition has no leader";
    return route;
  }
  route.where = leader == config_.node_id ? group_coordinator_route::place::here : group_coordinator_route::place::peer;
  route.node_id = leader;
  route.description = "broker " + std::to_string(leader);
  if (const auto* b = view()->image->find_broker(leader); b != nullptr) {
    if (const auto* http = b->endpoint("http"); http != nullptr) {
      route.http_host = http->host;
      route.http_port = static_cast<uint16_t>(http->port);
      route.description += " at http://" + http->host + ":" + std::to_string(http->port);
    }
  }
  route.description += led;
  return route;
}

result<std::vector<model::record>> broker_impl::read_internal_from(const std::string& topic, size_t shard,
                                                                   int32_t partition) {
  auto rt = runtime_of(shard, topic, partition);
  if (!rt) return error{errc::unknown_topic_or_partition, unknown_topic_message(topic)};
  std::vector<model::record> out;
  model::offset at = rt->log->log_start_offset();
  // The whole log, past the high watermark too: a coordinator reads its partition when it has
  // just become the leader, whose log is the partition's from then on (records its high
  // watermark has not reached yet were acknowledged by the previous leader, or will be kept).
  const model::offset end = rt->log->log_end_offset();
  while (at < end) {
    auto read = rt->log->read(at, 1 << 20, end);
    if (!read.ok()) return from_storage(read.error());
    if (read->batches.empty()) break;
    size_t pos = 0;
    while (pos < read->batches.size()) {
      auto header = codec::decode_header(std::span(read->batches).subspan(pos));
      RINGLOG_ASSERT(header.ok(), "batches of an internal topic were validated on recovery");
      if (!header->is_control()) {
        auto records = codec::decode_records(std::span(read->batches).subspan(pos, header->size_bytes()));
        if (!records.ok()) return error{errc::kafka_storage_error, topic + ": " + records.error().message};
        for (auto& r : records.value()) {
          if (r.record_offset >= at && r.record_offset < end) out.push_back(std::move(r));
        }
      }
      pos += header->size_bytes();
    }
    if (read->next_offset <= at) break;
    at = read->next_offset;
  }
  return out;
}

result<void> broker_impl::open_partition_on_shard(size_t shard, const std::string& topic,
                                                  const controller::uuid& topic_id, int32_t partition,
                                                  const storage::log_config& log_config,
                                                  std::shared_ptr<partition_stats> stats,
                                                  const controller::partition_image& state, bool fresh) {
  const std::string dir = partition_directory(topic, partition);
  // Kafka's partition.metadata names the topic id a directory belongs to: a directory of a topic
  // deleted (or re-created) before a crash let its removal finish must never be served as the
  // new topic's. Directories without one (ringlog before topic ids) are adopted unless `fresh`.
  const std::string metadata_path = dir + "/partition.metadata";
  const std::string expected = "version: 0\ntopic_id: " + controller::uuid_to_string(topic_id) + "\n";
  if (deps_.fs.exists(dir)) {
    bool ours = !fresh;
    if (deps_.fs.exists(metadata_path)) {
      auto text = io::read_whole_file(deps_.fs, metadata_path);
      ours = text.ok() && std::string(reinterpret_cast<const char*>(text->data()), text->size()) == expected;
    }
    if (!ours) {
      auto removed = deps_.fs.remove_all(dir);
      if (!removed.ok()) return error{errc::kafka_storage_error, removed.error().message};
    }
  }
  auto log = storage::partition_log::open(deps_.fs, dir, log_config, deps_.clock);
  if (!log.ok()) return from_storage(log.error());
  if (deps_.log) {
    for (const auto& warning : log.value()->last_recovery().warnings) deps_.log(false, dir + ": " + warning);
  }
  if (!deps_.fs.exists(metadata_path)) {
    auto written = io::write_file_atomic(deps_.fs, metadata_path, std::as_bytes(std::span(expected.data(), expected.size())));
    if (!written.ok()) return error{errc::kafka_storage_error, written.error().message};
  }
  auto rt = std::make_shared<partition_runtime>();
  rt->uid = next_partition_uid_.fetch_add(1, std::memory_order_relaxed);
  rt->topic = topic;
  rt->topic_id = topic_id;
  rt->partition = partition;
  rt->log = std::move(log.value());
  rt->stats = std::move(stats);
  rt->epoch = model::leader_epoch{-1};   // apply_partition_state starts its leadership or its following
  publish(*rt);
  shards_[shard][partition_key(topic, partition)] = rt;
  apply_partition_state(shard, rt, state);
  rt->stats->open_here.store(true, std::memory_order_release);
  return base::ok_v;
}

void broker_impl::open_partitions(const std::shared_ptr<const topic_state>& topic, int32_t from, bool fresh,
                                  std::function<void(result<void>)> done) {
  const int32_t count = topic->partitions_count();
  std::vector<int32_t> held;   // the partitions of [from, count) with a replica on this node
  for (int32_t p = from; p < count; ++p) {
    const auto& replicas = topic->image->partitions[static_cast<size_t>(p)].replicas;
    if (std::find(replicas.begin(), replicas.end(), config_.node_id) != replicas.end()) held.push_back(p);
  }
  open_held_partitions(topic, std::move(held), fresh, std::move(done));
}

void broker_impl::open_held_partitions(const std::shared_ptr<const topic_state>& topic, std::vector<int32_t> held,
                                       bool fresh, std::function<void(result<void>)> done) {
  if (held.empty()) return done(base::ok_v);
  auto log_config = make_log_config(live(*controller_view_), topic->image->configs);
  if (!log_config.ok()) return done(log_config.error());
  struct gather {
    std::atomic<int32_t> remaining;
    std::mutex mutex;
    std::optional<error> failure;
    std::function<void(result<void>)> done;
  };
  auto g = std::make_shared<gather>();
  g->remaining = static_cast<int32_t>(held.size());
  g->done = std::move(done);
  for (int32_t p : held) {
    const size_t shard = owner(topic->name(), p);
    deps_.runtime.post(shard, [this, g, shard, name = topic->name(), topic_id = topic->image->topic_id, p,
                               cfg = log_config.value(),
                               stats = topic->partitions[static_cast<size_t>(p)],
                               state = topic->image->partitions[static_cast<size_t>(p)], fresh] {
      auto r = open_partition_on_shard(shard, name, topic_id, p, cfg, stats, state, fresh);
      if (!r.ok()) {
        std::lock_guard lock(g->mutex);
        if (!g->failure) g->failure = r.error();
      }
      if (g->remaining.fetch_sub(1) == 1) {
        g->done(g->failure ? result<void>(*g->failure) : result<void>(base::ok_v));
      }
    });
  }
}

void broker_impl::publish(partition_runtime& rt) {
  rt.stats->log_start_offset.store(rt.log->log_start_offset().value(), std::memory_order_relaxed);
  rt.stats->high_watermark.store(rt.log->high_watermark().value(), std::memory_order_relaxed);
  rt.stats->log_end_offset.store(rt.log->log_end_offset().value(), std::memory_order_relaxed);
  rt.stats->high_watermark_established.store(!rt.leader || rt.log->high_watermark() >= rt.epoch_start_offset,
                                             std::memory_order_relaxed);
  rt.stats->size_bytes.store(rt.log->size_bytes(), std::memory_order_relaxed);
}

// ---------------------------------------------------------------- admin

topic_description broker_impl::describe(const topic_state& t) const {
  topic_description d;
  d.name = t.name();
  d.topic_id = controller::uuid_to_string(t.image->topic_id);
  d.is_internal = t.is_internal;
  d.replication_factor =
      t.image->partitions.empty() ? int16_t{0} : static_cast<int16_t>(t.image->partitions[0].replicas.size());
  for (int32_t p = 0; p < t.partitions_count(); ++p) {
    const auto& s = *t.partitions[static_cast<size_t>(p)];
    const controller::partition_image& image = t.image->partitions[static_cast<size_t>(p)];
    partition_description pd;
    pd.partition = model::partition_id{p};
    pd.leader = image.leader;
    pd.replicas = image.replicas;
    pd.in_sync_replicas = image.in_sync_replicas;
    pd.leader_epoch = model::leader_epoch{image.leader_epoch};
    pd.log_start_offset = model::offset{s.log_start_offset.load(std::memory_order_relaxed)};
    pd.high_watermark = model::offset{s.high_watermark.load(std::memory_order_relaxed)};
    pd.log_end_offset = model::offset{s.log_end_offset.load(std::memory_order_relaxed)};
    pd.high_watermark_established = s.high_watermark_established.load(std::memory_order_relaxed);
    // Only a leader's figures are the partition's end (a follower's lag one fetch round behind),
    // and only while its leadership lease holds (another broker may lead meanwhile: check_serving).
    if (image.leader != config_.node_id ||
        (image.replicas.size() > 1 && deps_.clock.now_ms() >= leadership_lease_until_ms_.load(std::memory_order_relaxed))) {
      pd.high_watermark_established = false;
    }
    pd.size_bytes = s.size_bytes.load(std::memory_order_relaxed);
    pd.replica_here = s.open_here.load(std::memory_order_acquire);
    pd.cleaner.dirty_ratio = static_cast<double>(s.cleaner_dirty_ratio_ppm.load(std::memory_order_relaxed)) / 1e6;
    pd.cleaner.bytes_read_total = s.cleaner_bytes_read_total.load(std::memory_order_relaxed);
    pd.cleaner.bytes_written_total = s.cleaner_bytes_written_total.load(std::memory_order_relaxed);
    pd.cleaner.passes_total = s.cleaner_passes_total.load(std::memory_order_relaxed);
    pd.cleaner.tombstones_removed_total = s.cleaner_tombstones_removed_total.load(std::memory_order_relaxed);
    pd.cleaner.time_ms_total = s.cleaner_time_ms_total.load(std::memory_order_relaxed);
    pd.cleaner.last_clean_ms = s.cleaner_last_clean_ms.load(std::memory_order_relaxed);
    d.partitions.push_back(pd);
  }
  const auto current = view();
  d.configs = describe_topic_configs(live(*current), t.image->configs,
                                     ringlog::broker::describe_broker_configs(config_, *current->image, config_.node_id));
  return d;
}

/// The state topic `name` would have after `records` (validate_only previews: never published).
/// `existing` lends its partition figures. Null when the records do not apply.
std::shared_ptr<const topic_state> preview_state(const std::vector<protocol::metadata_record>& records,
                                                 const controller::metadata_image& base, const std::string& name,
                                                 const std::shared_ptr<const topic_state>& existing) {
  controller::metadata_delta delta{base};
  for (const auto& r : records) {
    if (!delta.apply(r, base.offset() + 1).ok()) return nullptr;
  }
  metadata_view before;
  if (existing) before.topics.emplace(name, existing);
  auto view = make_view(before, std::move(delta).image());
  auto it = view->topics.find(name);
  return it == view->topics.end() ? nullptr : it->second;
}

void broker_impl::create_topic(create_topic_request request, std::function<void(result<topic_description>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  post_caught_up([this, request = std::move(request), done = std::move(done)]() mutable {
    if (auto valid = validate_topic_name(request.name); !valid.ok()) return done(valid.error());
    if (request.name.starts_with("__")) {
      return done(error{errc::invalid_topic_exception,
                        "topic names starting with '__' are reserved for internal topics: " + request.name});
    }
    const int32_t partitions = request.partitions_count.value_or(config_.num_partitions);
    if (partitions < 1 || partitions > constants::topic_partitions_max) {
      return done(error{errc::invalid_partitions, "partitions_count " + std::to_string(partitions) +
                                                      " is out of range [1, " +
                                                      std::to_string(constants::topic_partitions_max) + "]"});
    }
    const int16_t rf = request.replication_factor.value_or(
        config_.default_replication_factor > 0 ? config_.default_replication_factor
                                               : automatic_replication_factor(*controller_view_->image));
    for (const auto& [k, v] : request.configs) {
      if (auto valid = validate_topic_config(k, v); !valid.ok()) return done(valid.error());
    }
    auto cfg = make_log_config(live(*controller_view_), request.configs);
    if (!cfg.ok()) return done(cfg.error());
    if (auto valid = validate_topic_config_conflicts(*cfg); !valid.ok()) return done(valid.error());
    auto current = controller_view_;
    if (current->topics.contains(request.name)) {
      return done(error{errc::topic_already_exists, "topic '" + request.name + "' already exists"});
    }
    // Kafka refuses names that collide once '.' and '_' are treated alike (metric names).
    auto folded = [](std::string s) {
      std::replace(s.begin(), s.end(), '.', '_');
      return s;
    };
    for (const auto& [name, t] : current->topics) {
      if (folded(name) == folded(request.name)) {
        return done(error{errc::invalid_topic_exception, "topic '" + request.name + "' collides with existing topic '" +
                                                             name + "' ('.' and '_' are treated alike)"});
      }
    }
    if (current->topics.size() >= constants::topics_max) {
      return done(error{errc::invalid_request,
                        "the broker holds " + std::to_string(current->topics.size()) + " topics, the limit topics_max"});
    }
    if (auto budget = check_partition_budget(partitions); !budget.ok()) return done(budget.error());
    auto made = new_topic_records(request.name, partitions, rf, request.configs);
    if (!made.ok()) return done(made.error());
    auto records = std::move(made).value();
    if (request.validate_only) {
      auto preview = preview_state(records, *current->image, request.name, nullptr);
      RINGLOG_ASSERT(preview != nullptr, "a new topic's records apply to the image it was checked against");
      return done(describe(*preview));
    }
    commit_records(std::move(records), [this, name = request.name, done = std::move(done)](result<void> r) mutable {
      if (!r.ok()) {
        // An entry applies whole or not at all, so nothing of this create is left behind. When
        // it failed because the name exists now, another node created it first (a race of two
        // creates, or of an auto-create with a create): that topic is someone else's and stays.
        if (controller_find_topic(name)) {
          return done(error{errc::topic_already_exists, "topic '" + name + "' already exists"});
        }
        return done(r.error());
      }
      auto t = controller_find_topic(name);
      if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(name) + " (deleted meanwhile)"});
      done(describe(*t));
    });
  });
}

void broker_impl::delete_topic(std::string topic, std::function<void(result<void>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  post_caught_up([this, topic = std::move(topic), done = std::move(done)]() mutable {
    auto t = controller_find_topic(topic);
    if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
    if (t->is_internal) return done(error{errc::topic_authorization_failed, "internal topic '" + topic + "' cannot be deleted"});
    protocol::remove_topic_record remove;
    remove.topic_id = t->image->topic_id;
    commit_records({remove}, std::move(done));
  });
}

void broker_impl::remove_stray_replicas(const metadata_view& view) {
  for (const auto& [name, t] : view.topics) {
    const std::string expected = "version: 0\ntopic_id: " + controller::uuid_to_string(t->image->topic_id) + "\n";
    for (int32_t p = 0; p < t->partitions_count(); ++p) {
      const auto& replicas = t->image->partitions[static_cast<size_t>(p)].replicas;
      if (std::find(replicas.begin(), replicas.end(), config_.node_id) != replicas.end()) continue;
      const std::string dir = partition_directory(name, p);
      if (!deps_.fs.exists(dir + "/partition.metadata")) continue;   // not a copy of this topic's (or none)
      auto text = io::read_whole_file(deps_.fs, dir + "/partition.metadata");
      if (!text.ok() || std::string(reinterpret_cast<const char*>(text->data()), text->size()) != expected) continue;
      auto removed = deps_.fs.remove_all(dir);
      if (removed.ok()) {
        log_info("partition " + partition_key(name, p) + " was reassigned away from this broker while it was down: "
                 "its log is deleted");
      } else {
        log_error("partition " + partition_key(name, p) + " was reassigned away from this broker, but its log " +
                  "directory could not be deleted: " + removed.error().message);
      }
    }
  }
}

void broker_impl::drop_replica(size_t shard, const std::string& topic, int32_t partition,
                               const controller::partition_image& now) {
  if (auto rt = runtime_of(shard, topic, partition)) {
    apply_partition_state(shard, rt, now);   // a leadership ends; no follower loop starts (not a replica)
    rt->deleted = true;
    compaction_.forget(shard, *rt->log);
    rt->stats->replica_removed();
    new_follower_generation(*rt);
    shards_[shard].erase(partition_key(topic, partition));
    for (auto& w : rt->waiters) {
      if (!w->completed) {
        w->completed = true;
        w->done(error{errc::not_leader_or_follower,
                      "this broker no longer holds a replica of " + partition_key(topic, partition) + " (reassigned): retry"});
      }
    }
    rt->waiters.clear();
  }
  auto removed = deps_.fs.remove_all(partition_directory(topic, partition));
  if (!removed.ok() && removed.error().code != io::errc::not_found) {
    log_error("partition " + partition_key(topic, partition) + " was reassigned away from this broker, but its log " +
              "directory could not be deleted: " + removed.error().message);
    return;
  }
  log_info("partition " + partition_key(topic, partition) + " was reassigned away from this broker: its log is deleted");
}

void broker_impl::remove_partitions(const std::string& topic, int32_t count, std::function<void(result<void>)> done) {
  if (count == 0) return done(base::ok_v);
  auto remaining = std::make_shared<std::atomic<int32_t>>(count);
  auto failure = std::make_shared<std::optional<error>>();
  auto finish = std::make_shared<std::function<void(result<void>)>>(std::move(done));
  for (int32_t p = 0; p < count; ++p) {
    const size_t shard = owner(topic, p);
    deps_.runtime.post(shard, [this, shard, topic, p, remaining, failure, finish] {
      auto rt = runtime_of(shard, topic, p);
      if (rt) {
        rt->deleted = true;
        compaction_.forget(shard, *rt->log);
        rt->stats->replica_removed();
        shards_[shard].erase(partition_key(topic, p));
        for (auto& w : rt->waiters) {
          if (!w->completed) {
            w->completed = true;
            w->done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic) + " (deleted)"});
          }
        }
        rt->waiters.clear();
      }
      auto removed = deps_.fs.remove_all(partition_directory(topic, p));
      if (!removed.ok() && removed.error().code != io::errc::not_found) {
        *failure = error{errc::kafka_storage_error, removed.error().message};  // last writer wins; any is enough
      }
      if (remaining->fetch_sub(1) == 1) {
        deps_.runtime.post(controller_shard, [failure, finish] {
          (*finish)(failure->has_value() ? result<void>(**failure) : result<void>(base::ok_v));
        });
      }
    });
  }
}

void broker_impl::create_partitions(std::string topic, int32_t partitions_count,
                                    std::function<void(result<topic_description>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  post_caught_up([this, topic = std::move(topic), partitions_count, done = std::move(done)]() mutable {
    auto t = controller_find_topic(topic);
    if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
    const int32_t current = t->partitions_count();
    if (partitions_count <= current) {
      return done(error{errc::invalid_partitions, "topic '" + topic + "' has " + std::to_string(current) +
                                                      " partitions; partitions_count must be larger (got " +
                                                      std::to_string(partitions_count) + ")"});
    }
    if (partitions_count > constants::topic_partitions_max) {
      return done(error{errc::invalid_partitions, "partitions_count " + std::to_string(partitions_count) +
                                                      " is above the limit " +
                                                      std::to_string(constants::topic_partitions_max)});
    }
    if (auto budget = check_partition_budget(partitions_count - current); !budget.ok()) return done(budget.error());
    std::vector<protocol::metadata_record> records;
    const int32_t rf = t->image->partitions.empty() ? 1 : static_cast<int32_t>(t->image->partitions[0].replicas.size());
    if (auto placed = append_partition_records(records, t->image->topic_id, current, partitions_count, rf); !placed.ok()) {
      return done(placed.error());
    }
    commit_records(std::move(records), [this, topic, done = std::move(done)](result<void> r) {
      if (!r.ok()) return done(r.error());
      auto now = controller_find_topic(topic);
      if (!now) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic) + " (deleted meanwhile)"});
      done(describe(*now));
    });
  });
}

void broker_impl::alter_topic_configs(std::string topic, std::map<std::string, std::optional<std::string>> changes,
                                      bool validate_only, std::function<void(result<topic_description>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  post_caught_up([this, topic = std::move(topic), changes = std::move(changes), validate_only,
                                        done = std::move(done)]() mutable {
    auto t = controller_find_topic(topic);
    if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
    if (t->is_internal && !changes.empty()) {
      // __consumer_offsets is compacted with the configs it was created with (as Kafka's).
      return done(error{errc::topic_authorization_failed, "internal topic '" + topic + "' cannot be reconfigured"});
    }
    std::map<std::string, std::string> configs = t->image->configs;
    std::vector<protocol::metadata_record> records;
    for (const auto& [k, v] : changes) {
      if (v) {
        if (auto valid = validate_topic_config(k, *v); !valid.ok()) return done(valid.error());
        configs[k] = *v;
      } else {
        if (auto valid = validate_topic_config(k, topic_config_default(live(*controller_view_), k)); !valid.ok()) {
          return done(valid.error());
        }
        configs.erase(k);
      }
      protocol::config_record c;
      c.resource_type = controller::config_resource_topic;
      c.resource_name = topic;
      c.name = k;
      c.value = v;
      records.push_back(c);
    }
    auto cfg = make_log_config(live(*controller_view_), configs);
    if (!cfg.ok()) return done(cfg.error());
    if (auto valid = validate_topic_config_conflicts(*cfg); !valid.ok()) return done(valid.error());
    if (validate_only || records.empty()) {
      auto preview = preview_state(records, *controller_view_->image, topic, t);
      RINGLOG_ASSERT(preview != nullptr, "config records of an existing topic apply");
      return done(describe(*preview));
    }
    commit_records(std::move(records), [this, topic, done = std::move(done)](result<void> r) {
      if (!r.ok()) return done(r.error());
      auto now = controller_find_topic(topic);
      if (!now) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic) + " (deleted meanwhile)"});
      done(describe(*now));
    });
  });
}

result<std::vector<broker_config_entry>> broker_impl::describe_broker_configs(int32_t node_id) const {
  if (node_id != cluster_default_broker && node_id != config_.node_id) {
    return error{errc::invalid_request, broker_configs_elsewhere(node_id, config_.node_id)};
  }
  return ringlog::broker::describe_broker_configs(config_, *view()->image, node_id);
}

void broker_impl::alter_broker_configs(int32_t node_id, std::map<std::string, std::optional<std::string>> changes,
                                       bool validate_only, std::function<void(result<void>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (node_id != cluster_default_broker && node_id != config_.node_id) {
    return done(error{errc::invalid_request, broker_configs_elsewhere(node_id, config_.node_id)});
  }
  std::vector<protocol::metadata_record> records;
  for (const auto& [name, value] : changes) {
    if (auto valid = validate_broker_config_change(name, value); !valid.ok()) return done(valid.error());
    protocol::config_record c;
    c.resource_type = controller::config_resource_broker;
    c.resource_name = node_id == cluster_default_broker ? "" : std::to_string(node_id);
    c.name = name;
    c.value = value;
    records.push_back(c);
  }
  if (validate_only || records.empty()) return done(base::ok_v);
  deps_.runtime.post(controller_shard, [this, records = std::move(records), done = std::move(done)]() mutable {
    commit_records(std::move(records), std::move(done));
  });
}

std::vector<std::string> broker_impl::list_topics(bool include_internal) const {
  std::vector<std::string> out;
  const auto held = view();  // kept for the loop (see list_brokers)
  for (const auto& [name, t] : held->topics) {
    if (include_internal || !t->is_internal) out.push_back(name);
  }
  return out;
}

void broker_impl::describe_topic(std::string topic, std::function<void(result<topic_description>)> done) {
  auto t = find_topic(topic);
  if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
  done(describe(*t));
}

// ---------------------------------------------------------------- produce

void broker_impl::produce_known(produce_request request, std::function<void(result<produce_response>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (request.records.empty()) return done(error{errc::invalid_request, "records: at least one record is required"});
  if (request.records.size() > static_cast<size_t>(config_.produce_records_max)) {
    return done(error{errc::record_list_too_large, "the request has " + std::to_string(request.records.size()) +
                                                       " records; the limit produce.records.max is " +
                                                       std::to_string(config_.produce_records_max)});
  }
  if (auto valid = validate_topic_name(request.topic); !valid.ok()) return done(valid.error());
  if (auto_creating_count_.load() > 0) {
    std::lock_guard lock(auto_create_mutex_);
    if (auto it = auto_creating_.find(request.topic); it != auto_creating_.end()) {
      it->second.push_back({std::move(request), std::move(done)});
      return;
    }
  }
  auto t = find_topic(request.topic);
  if (t) return produce_to(t, std::move(request), std::move(done));
  if (auto refused = auto_create_refusal(request)) return done(std::move(*refused));
  // Validated before anything is created: when every record names a partition the auto-created
  // topic would not have, nothing would be stored, and no topic may be left behind (Kafka's
  // producer likewise learns the partition count from metadata before it sends). When some
  // would be stored, the topic is created and those others fail alone, as on an existing topic.
  const bool none_storable = std::all_of(request.records.begin(), request.records.end(), [this](const produce_record& r) {
    return r.partition && r.partition->value() >= config_.num_partitions;
  });
  if (none_storable) {
    return done(error{errc::unknown_topic_or_partition,
                      "topic '" + request.topic + "' does not exist, and auto-creating it would give it num.partitions=" +
                          std::to_string(config_.num_partitions) + " partitions, so partition " +
                          std::to_string(request.records.front().partition->value()) +
                          " would not exist either; create the topic with enough partitions first"});
  }
  {
    std::lock_guard lock(auto_create_mutex_);
    auto [it, first] = auto_creating_.try_emplace(request.topic);
    if (!first) {   // another produce creates it: wait behind that one
      it->second.push_back({std::move(request), std::move(done)});
      return;
    }
    ++auto_creating_count_;
  }
  create_topic_request create{request.topic, std::nullopt, std::nullopt, {}, false};
  std::string name = request.topic;
  create_topic(std::move(create), [this, name = std::move(name), request = std::move(request),
                                   done = std::move(done)](result<topic_description> created) mutable {
    produce_after_auto_create(created, std::move(request), std::move(done));
    // Then the produces that waited, oldest first, until none is left.
    while (true) {
      std::deque<parked_produce> parked;
      {
        std::lock_guard lock(auto_create_mutex_);
        auto it = auto_creating_.find(name);
        RINGLOG_ASSERT(it != auto_creating_.end(), "only the creating produce removes its entry");
        if (it->second.empty()) {
          auto_creating_.erase(it);
          --auto_creating_count_;
          break;
        }
        parked.swap(it->second);
      }
      for (auto& p : parked) produce_after_auto_create(created, std::move(p.request), std::move(p.done));
    }
  });
}

void broker_impl::produce_after_auto_create(const result<topic_description>& created, produce_request request,
                                            std::function<void(result<produce_response>)> done) {
  if (!created.ok() && created.error().code != errc::topic_already_exists) return done(created.error());
  auto topic = find_topic(request.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(request.topic)});
  produce_to(topic, std::move(request), std::move(done));
}

void broker_impl::produce_to(const std::shared_ptr<const topic_state>& topic, produce_request request,
                             std::function<void(result<produce_response>)> done, bool internal_write) {
  if (topic->is_internal && !internal_write) {
    return done(error{errc::topic_authorization_failed, "internal topic '" + request.topic + "' cannot be produced to"});
  }
  if (request.producer && request.producer->transactional_id) {
    return produce_in_transaction(topic, std::move(request), std::move(done));
  }
  produce_appending(topic, std::move(request), std::move(done));
}

namespace {

/// How long a transactional produce waits before it asks again to join a transaction whose
/// previous end is still writing its markers (a few fsyncs: milliseconds).
constexpr int64_t transaction_join_retry_interval_ms = 5;
/// The longest a transactional produce waits for that, ms (less when the request's timeout is):
/// markers slower than this mean a partition leader is away, and the client hears
/// concurrent_transactions (retriable) instead of a hung request.
constexpr int64_t transaction_join_wait_max_ms = 10'000;

}  // namespace

void broker_impl::produce_in_transaction(const std::shared_ptr<const topic_state>& topic, produce_request request,
                                         std::function<void(result<produce_response>)> done) {
  const std::string& transactional_id = *request.producer->transactional_id;
  if (transactional_id.empty()) return done(error{errc::invalid_request, "transactional_id is empty"});
  // The partitions the records name; a record without one (or with one the topic lacks) is
  // refused alone by produce_appending, as in any idempotent produce.
  std::set<int32_t> named;
  for (const auto& r : request.records) {
    if (r.partition && r.partition->value() >= 0 && r.partition->value() < topic->partitions_count()) {
      named.insert(r.partition->value());
    }
  }
  if (named.empty()) return produce_appending(topic, std::move(request), std::move(done));
  std::vector<model::topic_partition> partitions;
  for (int32_t p : named) partitions.push_back({request.topic, model::partition_id{p}});
  // The transaction's previous end may still be writing its markers (the usual case for a
  // produce right after a commit answered): the coordinator answers concurrent_transactions
  // until they are written, and the add is tried again every
  // transaction_join_retry_interval_ms, up to the request's timeout (at most
  // transaction_join_wait_max_ms), as Kafka clients retry AddPartitionsToTxn themselves.
  struct join {
    broker_impl* self = nullptr;
    std::shared_ptr<const topic_state> topic;
    produce_request request;
    std::function<void(result<produce_response>)> done;
    std::vector<model::topic_partition> partitions;
    int64_t give_up_at_ms = 0;
    size_t shard = 0;

    static void attempt(const std::shared_ptr<join>& j) {
      const auto& producer = *j->request.producer;
      j->self->transactions().add_partitions(
          *producer.transactional_id, producer.producer_id, producer.producer_epoch, j->partitions,
          [j](result<void> added) {
            if (added.ok()) return j->self->produce_appending(j->topic, std::move(j->request), std::move(j->done));
            if (added.error().code != errc::concurrent_transactions ||
                j->self->deps_.clock.now_ms() + transaction_join_retry_interval_ms > j->give_up_at_ms) {
              return j->done(added.error());
            }
            j->self->deps_.runtime.post_after(j->shard, transaction_join_retry_interval_ms, [j] { attempt(j); });
          });
    }
  };
  auto j = std::make_shared<join>();
  j->self = this;
  j->topic = topic;
  j->partitions = std::move(partitions);
  j->give_up_at_ms = deps_.clock.now_ms() + std::clamp<int64_t>(request.timeout_ms, 0, transaction_join_wait_max_ms);
  j->shard = owner(request.topic, *named.begin());
  j->request = std::move(request);
  j->done = std::move(done);
  join::attempt(j);
}

void broker_impl::produce_appending(const std::shared_ptr<const topic_state>& topic, produce_request request,
                                    std::function<void(result<produce_response>)> done) {
  // The topic's state is immutable: read without a lock (the shard's metadata view holds it).
  const std::map<std::string, std::string>& configs = topic->image->configs;
  const int32_t partition_count = topic->partitions_count();
  const auto current_view = view();
  const broker_config& live_config = live(*current_view);
  auto log_config = make_log_config(live_config, configs);
  if (!log_config.ok()) return done(log_config.error());
  if (auto keyed = check_keys_for_compaction(request.topic, *log_config, request.records); !keyed.ok()) {
    return done(keyed.error());
  }
  const int64_t now = deps_.clock.now_ms();
  const std::optional<stored_codec> stored = stored_compression(live_config, configs, internal_topic_of(*topic));
  if (request.producer) {
    if (auto known = check_producer_id(request.producer->producer_id); !known.ok()) return done(known.error());
    if (request.producer->producer_epoch.value() < 0) {
      return done(error{errc::invalid_request, "producer_epoch " + std::to_string(request.producer->producer_epoch.value()) +
                                                   " is negative"});
    }
  }
  auto op = std::make_shared<produce_operation>();
  op->results.resize(request.records.size());
  op->done = std::move(done);
  // Choose partitions: explicit, by murmur2 of the key, or round-robin for keyless records.
  std::map<int32_t, std::vector<size_t>> by_partition;
  std::vector<delayed_record> delayed;   // records with a future ringlog-deliver-at (delay.cc)
  for (size_t i = 0; i < request.records.size(); ++i) {
    auto& r = request.records[i];
    int32_t p = 0;
    if (request.producer && (!r.partition || !r.sequence || r.sequence->value() < 0)) {
      // The same request must make the same batches when resent: no partition is chosen here.
      op->results[i].failure = error{errc::invalid_request, "records[" + std::to_string(i) +
                                                                "]: an idempotent produce names every record's "
                                                                "partition and its sequence (>= 0) in that partition"};
      continue;
    }
    if (r.partition) {
      p = r.partition->value();
      if (p < 0 || p >= partition_count) {
        op->results[i].failure = partition_missing(request.topic, p, partition_count);
        continue;
      }
    } else if (r.key) {
      p = partition_for_key(*r.key, partition_count);
    } else {
      p = static_cast<int32_t>(topic->next_keyless_partition->fetch_add(1, std::memory_order_relaxed) %
                               static_cast<uint32_t>(partition_count));
    }
    op->results[i].partition = model::partition_id{p};
    if (!topic->is_internal) {
      auto due = delivery_time_in(request, i, now);
      if (!due.ok()) {
        op->results[i].failure = due.error();
        continue;
      }
      if (*due) {
        delayed.push_back({i, p, **due});
        continue;
      }
    }
    if (auto led = leader_route(*topic, p); !led.ok()) {
      op->results[i].failure = led.error();
      continue;
    }
    by_partition[p].push_back(i);
  }
  // Cut each partition's records into batches no larger than max.message.bytes.
  struct pending_batch {
    int32_t partition;
    model::bytes bytes;
    std::vector<size_t> indices;
    std::vector<model::timestamp_ms> timestamps;
  };
  std::vector<pending_batch> batches;
  const size_t limit = static_cast<size_t>(log_config->max_message_bytes);
  for (auto& [p, indices] : by_partition) {
    std::vector<model::record> chunk;
    std::vector<size_t> chunk_indices;
    size_t chunk_estimate = codec::batch_header_bytes;
    auto emit = [&]() {
      if (chunk.empty()) return;
      // compression.type (the topic's, else the broker's): its codec, or none for "producer"
      // (the HTTP producer sends records, not batches) and "uncompressed".
      codec::batch_options options;
      if (stored) {
        options.compression = stored->compression;
        options.compression_level = stored->level;
      }
      if (request.producer) {
        options.producer = request.producer->producer_id;
        options.producer_epoch_value = request.producer->producer_epoch;
        options.base_sequence = *request.records[chunk_indices.front()].sequence;
        options.is_transactional = request.producer->transactional_id.has_value();
      }
      auto encoded = codec::encode_batch(options, chunk);
      // The records' own times; under message.timestamp.type=LogAppendTime the append's answer
      // carries the broker's time instead (append_batches_on_shard, KIP-32).
      std::vector<model::timestamp_ms> stamps;
      for (const auto& rec : chunk) stamps.push_back(rec.timestamp);
      if (!encoded.ok() || encoded->size() > limit) {
        const std::string why = !encoded.ok() ? encoded.error().message
                                              : "record batch of " + std::to_string(encoded->size()) +
                                                    " bytes is larger than max.message.bytes (" +
                                                    std::to_string(limit) + ")";
        for (size_t idx : chunk_indices) op->results[idx].failure = error{errc::message_too_large, why};
      } else {
        batches.push_back({p, std::move(encoded.value()), chunk_indices, std::move(stamps)});
      }
      chunk.clear();
      chunk_indices.clear();
      chunk_estimate = codec::batch_header_bytes;
    };
    for (size_t idx : indices) {
      auto& in = request.records[idx];
      model::record rec;
      rec.timestamp = in.timestamp.value_or(now);
      rec.key = std::move(in.key);
      rec.value = std::move(in.value);
      rec.headers = std::move(in.headers);
      size_t estimate = 32 + (rec.key ? rec.key->size() : 0) + (rec.value ? rec.value->size() : 0);
      for (const auto& h : rec.headers) estimate += 16 + h.key.size() + (h.value ? h.value->size() : 0);
      if (!chunk.empty() && chunk_estimate + estimate > limit) emit();
      // An idempotent batch holds consecutive sequences (KIP-98): a jump starts a new batch.
      if (request.producer && !chunk.empty() &&
          request.records[chunk_indices.back()].sequence->value() + 1 != in.sequence->value()) {
        emit();
      }
      chunk.push_back(std::move(rec));
      chunk_indices.push_back(idx);
      chunk_estimate += estimate;
    }
    emit();
  }
  const size_t delayed_count = delayed_groups(delayed, now);
  if (batches.empty() && delayed_count == 0) {
    op->remaining = 1;
    return op->finish_one();
  }
  for (const auto& b : batches) {
    const size_t shard = owner(request.topic, b.partition);
    if (!deps_.runtime.admits(shard)) return op->done(shard_busy(shard));
  }
  op->remaining = batches.size() + delayed_count;
  if (delayed_count > 0) {
    produce_delayed(request.topic, request.records, delayed, now, request.acks, request.timeout_ms, op);
  }
  // From here each batch is client data like a Kafka producer's: it takes produce_batches_from,
  // here or on its leader (forwarding.cc), and its answer gives each record its offset.
  std::map<int32_t, std::shared_ptr<std::vector<std::function<void()>>>> local_sends;   // partition -> in order
  for (auto& b : batches) {
    model::topic_partition tp{request.topic, model::partition_id{b.partition}};
    auto answer = [op, indices = std::move(b.indices), timestamps = std::move(b.timestamps),
                   acks = request.acks](result<produce_batches_response> r) {
      for (size_t k = 0; k < indices.size(); ++k) {
        auto& res = op->results[indices[k]];
        if (!r.ok()) {
          res.failure = r.error();
          continue;
        }
        res.record_offset = acks == acks_mode::none ? model::offset{-1} : r->base_offset + static_cast<int64_t>(k);
        res.timestamp = r->log_append_time >= 0 ? r->log_append_time : timestamps[k];
      }
      op->finish_one();
    };
    const int32_t leader = topic->image->partitions[static_cast<size_t>(b.partition)].leader;
    if (leader != config_.node_id) {
      forward_produce(leader, tp, std::move(b.bytes), request.acks, request.timeout_ms, std::move(answer));
      continue;
    }
    auto batch = std::make_shared<produce_batches_request>();
    batch->partition = std::move(tp);
    batch->batches.push_back(std::move(b.bytes));
    batch->acks = request.acks;
    batch->timeout_ms = request.timeout_ms;
    auto& sends = local_sends[b.partition];
    if (!sends) sends = std::make_shared<std::vector<std::function<void()>>>();
    sends->push_back([this, batch, answer = std::move(answer)]() mutable {
      produce_batches_from(std::move(*batch), std::move(answer), batch_origin::local_records);
    });
  }
  when_replicas_open(request.topic, std::move(local_sends));
}


// ---------------------------------------------------------------- fetch

void broker_impl::wake_waiters(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (rt->waiters.empty()) return;
  auto waiting = std::move(rt->waiters);
  rt->waiters.clear();
  rt->many_readers = waiting.size() > 1;
  const int64_t woken_ns = base::monotonic_ns();
  for (auto& w : waiting) {
    if (w->completed) continue;
    w->woken_ns = woken_ns;
    try_fetch(shard, rt, w);
  }
}

void broker_impl::try_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                            const std::shared_ptr<fetch_waiter>& w) {
  const base::cpu_scope cpu(base::cpu_activity::fetch);   // the read, and the answer when it is made here
  // At every try, wake-ups included: the answer carries the high watermark (answer_fetch).
  auto serving = check_fetch_serving(*rt, w->request.fetch_offset);
  if (serving.ok()) return answer_or_park(shard, rt, w, read_for_fetch(shard, *rt, w->request));
  const bool wait = serving.error().code == errc::offset_not_available && w->request.wait_while_end_unknown &&
                    w->request.max_wait_ms > 0;
  if (!wait) {
    w->completed = true;
    return w->done(serving.error());
  }
  // A long-poll of a partition whose end is not known yet parks until the high watermark moves.
  fetch_response nothing;
  nothing.next_fetch_offset = w->request.fetch_offset;
  answer_or_park(shard, rt, w, std::move(nothing));
}

result<std::optional<fetch_response>> broker_impl::read_file_ranges_for_fetch(const partition_runtime& rt,
                                                                             const fetch_request& req,
                                                                             model::offset hw) {
  auto read = rt.log->read_file_ranges(req.fetch_offset, static_cast<size_t>(req.max_bytes), hw);
  if (!read.ok()) return from_storage(read.error());
  // A simulated file system has no descriptors to send from: the caller reads bytes instead.
  if (!read->batches.empty() && read->batches.front().source->native_handle() < 0) return std::optional<fetch_response>{};
  fetch_response response;
  response.high_watermark = rt.log->high_watermark();
  response.log_start_offset = rt.log->log_start_offset();
  response.log_end_offset = rt.log->log_end_offset();
  response.last_stable_offset = rt.log->last_stable_offset();
  response.next_fetch_offset = req.fetch_offset;
  if (req.fetch_offset >= hw || read->batches.empty()) return std::optional<fetch_response>{std::move(response)};
  response.next_fetch_offset = std::max(req.fetch_offset, read->next_offset);
  if (req.isolation == isolation_level::read_committed) {
    for (const auto& e : rt.log->aborted_transactions(req.fetch_offset, read->next_offset)) {
      response.aborted_transactions.push_back({e.producer_id, e.first_offset});
    }
  }
  response.file_ranges = std::move(read->batches);
  response.file_ranges_bytes = read->size_bytes;
  response.read_id = next_read_id_.fetch_add(1, std::memory_order_relaxed);
  return std::optional<fetch_response>{std::move(response)};
}

result<fetch_response> broker_impl::read_for_fetch(size_t shard, const partition_runtime& rt, const fetch_request& req) {
  // read_committed reads below the last stable offset (KIP-98), read_uncommitted below the high watermark.
  const bool committed = req.isolation == isolation_level::read_committed;
  const model::offset hw = committed ? rt.log->last_stable_offset() : rt.log->high_watermark();
  const model::offset log_start = rt.log->log_start_offset();
  auto& recent = recent_reads_[shard];
  // A log that failed an fdatasync answers from no kept read: the read below names the failure.
  const bool usable = !recent.empty() && rt.log->check_usable().ok();
  for (size_t i = 0; usable && !req.raw_batches && i < recent.size(); ++i) {
    const recent_read& r = recent[i];
    if (r.partition_uid == rt.uid && r.fetch_offset == req.fetch_offset && r.max_bytes == req.max_bytes &&
        r.high_watermark == hw && r.log_start_offset == log_start && r.epoch == rt.epoch && r.isolation == req.isolation) {
      fetch_response copy = r.response;   // each fetch owns its answer
      copy.log_end_offset = rt.log->log_end_offset();
      return copy;
    }
  }
  if (req.raw_batches && req.file_ranges) {
    auto ranged = read_file_ranges_for_fetch(rt, req, hw);
    if (!ranged.ok()) return ranged.error();
    if (ranged->has_value()) return std::move(**ranged);
  }
  auto read = rt.log->read(req.fetch_offset, static_cast<size_t>(req.max_bytes), hw);
  if (!read.ok()) return from_storage(read.error());
  fetch_response response;
  response.high_watermark = rt.log->high_watermark();
  response.log_start_offset = log_start;
  response.log_end_offset = rt.log->log_end_offset();
  response.last_stable_offset = rt.log->last_stable_offset();
  std::vector<aborted_transaction> aborted;
  if (committed && !read->batches.empty()) {
    for (const auto& e : rt.log->aborted_transactions(req.fetch_offset, read->next_offset)) {
      aborted.push_back({e.producer_id, e.first_offset});
    }
  }
  if (req.raw_batches) {
    // Kafka clients read the batches themselves (they skip records below fetch_offset, and with
    // read_committed the records of the aborted transactions listed).
    if (req.fetch_offset < hw) response.batches = std::move(read->batches);
    response.next_fetch_offset = response.batches.empty() ? req.fetch_offset : std::max(req.fetch_offset, read->next_offset);
    if (!response.batches.empty()) {
      response.read_id = next_read_id_.fetch_add(1, std::memory_order_relaxed);
      response.aborted_transactions = std::move(aborted);
    }
    return response;
  }
  response.next_fetch_offset = req.fetch_offset;
  auto decoded = decode_fetched_records(read->batches, req.fetch_offset, hw, req.max_bytes, response.records,
                                        committed ? &aborted : nullptr, &response.next_fetch_offset);
  if (!decoded.ok()) return decoded.error();
  const size_t returned_bytes = decoded.value();
  if (response.records.empty()) return response;
  response.read_id = next_read_id_.fetch_add(1, std::memory_order_relaxed);
  if (rt.many_readers && returned_bytes + response.records.size() * recent_read_record_bytes <= recent_read_bytes_max) {
    if (recent.size() == recent_reads_max) recent.pop_back();
    recent.push_front({rt.uid, req.fetch_offset, req.max_bytes, hw, log_start, rt.epoch, req.isolation, response});
  }
  return response;
}

void broker_impl::answer_or_park(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                 const std::shared_ptr<fetch_waiter>& w, result<fetch_response> response) {
  const int64_t wait_ms = std::min(w->request.max_wait_ms, config_.fetch_wait_max_ms);
  // A decoded read that skipped batches holding nothing for this reader (markers, aborted
  // records) answers now, so the reader moves past them instead of waiting in front of them.
  const bool skipped = response.ok() && !w->request.raw_batches && response->next_fetch_offset > w->request.fetch_offset;
  if (!response.ok() || !response->records.empty() || !response->batches.empty() || !response->file_ranges.empty() || skipped || wait_ms <= 0 || stopping_) {
    w->completed = true;
    if (response.ok()) response->woken_ns = w->woken_ns;
    return w->done(std::move(response));
  }
  if (rt->waiters.size() >= static_cast<size_t>(config_.fetch_waiters_per_partition_max)) {
    w->completed = true;
    return w->done(error{errc::throttling_quota_exceeded,
                         "too many waiting fetches on " + partition_key(rt->topic, rt->partition) +
                             ": the limit fetch.waiters.per.partition.max is " +
                             std::to_string(config_.fetch_waiters_per_partition_max)});
  }
  rt->waiters.push_back(w);
  // The deadline is set once, at the first park: a wake-up that finds nothing to return (the high
  // watermark moved but not past this fetch's offset) parks it again until that same deadline.
  if (!w->deadline_set) {
    w->deadline_set = true;
    add_fetch_deadline(shard, deps_.clock.now_ms() + wait_ms, rt, w);
  }
}

// Parked fetches that finish early (most of them, under load) would leave a timer each behind,
// firing for nothing up to fetch.wait.max.ms later: one per fetch, thousands a second. Instead each
// shard keeps its deadlines in a heap and a timer only at the earliest one (deadlines of one client
// mostly grow, so that is usually the timer already set).
void broker_impl::add_fetch_deadline(size_t shard, int64_t at_ms, const std::shared_ptr<partition_runtime>& rt,
                                     const std::shared_ptr<fetch_waiter>& w) {
  fetch_deadlines& d = deadlines_[shard];
  d.heap.push({at_ms, w, rt});
  arm_fetch_deadline_timer(shard);
}

void broker_impl::arm_fetch_deadline_timer(size_t shard) {
  fetch_deadlines& d = deadlines_[shard];
  if (d.heap.empty()) return;
  const int64_t next = d.heap.top().at_ms;
  if (!d.timers_at_ms.empty() && *d.timers_at_ms.begin() <= next) return;   // one fires by then
  d.timers_at_ms.insert(next);
  deps_.runtime.post_after(shard, std::max<int64_t>(0, next - deps_.clock.now_ms()), [this, shard, next] {
    expire_fetches(shard, next);
  });
}

void broker_impl::expire_fetches(size_t shard, int64_t timer_at_ms) {
  fetch_deadlines& d = deadlines_[shard];
  d.timers_at_ms.erase(d.timers_at_ms.find(timer_at_ms));
  const int64_t now = std::max(deps_.clock.now_ms(), timer_at_ms);
  std::vector<std::shared_ptr<partition_runtime>> expired_on;   // partitions whose waiters timed out
  while (!d.heap.empty() && d.heap.top().at_ms <= now) {
    fetch_deadline due = d.heap.top();
    d.heap.pop();
    auto w = due.waiter.lock();
    auto rt = due.partition.lock();
    if (!w || !rt || w->completed) continue;
    answer_empty(*rt, *w);
    if (std::find(expired_on.begin(), expired_on.end(), rt) == expired_on.end()) expired_on.push_back(std::move(rt));
  }
  // A timed-out fetch leaves its partition's waiters now, not at the next append: on an idle
  // partition it counted toward fetch.waiters.per.partition.max forever (after that many timed-out
  // long-polls every new one was refused) and held its answer's callback until then.
  for (const auto& rt : expired_on) {
    std::erase_if(rt->waiters, [](const std::shared_ptr<fetch_waiter>& w) { return w->completed; });
  }
  arm_fetch_deadline_timer(shard);
}

result<void> broker_impl::check_readable(const model::topic_partition& tp) const {
  if (stopping_) return error{errc::broker_not_available, "the broker is shutting down"};
  return check_partition_exists(tp);
}

void broker_impl::fetch_known(fetch_request request, std::function<void(result<fetch_response>)> done) {
  if (auto usable = check_readable(request.partition); !usable.ok()) return done(usable.error());
  if (request.max_bytes <= 0) {
    return done(error{errc::invalid_request, "max_bytes must be positive, got " + std::to_string(request.max_bytes)});
  }
  auto topic = find_topic(request.partition.topic);
  auto leader = leader_route(*topic, request.partition.partition.value());
  if (!leader.ok()) return done(leader.error());
  if (leader.value() != config_.node_id) return forward_fetch(leader.value(), topic, std::move(request), std::move(done));
  fetch_here(std::move(request), std::move(done));
}

void broker_impl::fetch_here(fetch_request request, std::function<void(result<fetch_response>)> done) {
  auto held = std::make_shared<fetch_request>(std::move(request));
  when_replica_open(held->partition, [this, held, done = std::move(done)]() mutable {
    const auto& tp = held->partition;
    const size_t shard = owner(tp.topic, tp.partition.value());
    if (!deps_.runtime.admits(shard)) return done(shard_busy(shard));
    deps_.runtime.post(shard, [this, shard, request = std::move(*held), done = std::move(done)]() mutable {
      auto rt = runtime_of(shard, request.partition.topic, request.partition.partition.value());
      if (!rt) return done(no_replica_here(find_topic(request.partition.topic) != nullptr, request.partition));
      auto w = std::make_shared<fetch_waiter>();
      w->request = std::move(request);
      w->done = std::move(done);
      try_fetch(shard, rt, w);
    });
  });
}

void broker_impl::list_offsets_known(list_offsets_request request, std::function<void(result<list_offsets_response>)> done) {
  if (auto usable = check_readable(request.partition); !usable.ok()) return done(usable.error());
  auto topic = find_topic(request.partition.topic);
  auto leader = leader_route(*topic, request.partition.partition.value());
  if (!leader.ok()) return done(leader.error());
  if (leader.value() != config_.node_id) return forward_list_offsets(leader.value(), std::move(request), std::move(done));
  list_offsets_here(std::move(request), std::move(done));
}

void broker_impl::list_offsets_here(list_offsets_request request,
                                    std::function<void(result<list_offsets_response>)> done) {
  auto held = std::make_shared<list_offsets_request>(std::move(request));
  when_replica_open(held->partition, [this, held, done = std::move(done)]() mutable {
    const auto& tp = held->partition;
    const size_t shard = owner(tp.topic, tp.partition.value());
    if (!deps_.runtime.admits(shard)) return done(shard_busy(shard));
    deps_.runtime.post(shard, [this, shard, request = std::move(*held), done = std::move(done)]() mutable {
      auto rt = runtime_of(shard, request.partition.topic, request.partition.partition.value());
      if (!rt) return done(no_replica_here(find_topic(request.partition.topic) != nullptr, request.partition));
      const std::optional<model::offset> reading_at =
          request.spec == offset_spec::earliest ? std::optional<model::offset>{rt->log->log_start_offset()} : std::nullopt;
      if (auto serving = check_serving(*rt, reading_at); !serving.ok()) return done(serving.error());
      list_offsets_response out;
      const model::offset upper = request.isolation == isolation_level::read_committed ? rt->log->last_stable_offset()
                                                                                      : rt->log->high_watermark();
      switch (request.spec) {
        case offset_spec::earliest:
          out.found_offset = rt->log->log_start_offset();
          break;
        case offset_spec::latest:
          // KIP-98: a read_committed consumer's end of the log is the last stable offset.
          out.found_offset = upper;
          break;
        case offset_spec::timestamp: {
          auto found = rt->log->offset_for_timestamp(request.timestamp);
          if (!found.ok()) return done(from_storage(found.error()));
          if (found.value() && found.value()->found_offset < upper) {
            out.found_offset = found.value()->found_offset;
            out.timestamp = found.value()->timestamp;  // the record's own timestamp, as Kafka answers
          }
          break;
        }
      }
      done(std::move(out));
    });
  });
}

// ---------------------------------------------------------------- produce of client batches (Kafka)

void broker_impl::produce_batches(produce_batches_request request,
                                  std::function<void(result<produce_batches_response>)> done) {
  produce_batches_from(std::move(request), std::move(done), batch_origin::kafka_client);
}

void broker_impl::produce_batches_from(produce_batches_request request,
                                       std::function<void(result<produce_batches_response>)> done, batch_origin origin) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  const auto& tp = request.partition;
  auto topic = find_topic(tp.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
  // This node's records went through produce_to, which refused internal topics but for its own
  // writes; a peer's, for a delay topic, are such writes too (its produce_to diverted them there).
  const bool internal_allowed = origin == batch_origin::local_records ||
                                (origin == batch_origin::peer_broker && delay::is_delay_topic(tp.topic));
  if (topic->is_internal && !internal_allowed) {
    return done(error{errc::topic_authorization_failed, "internal topic '" + tp.topic + "' cannot be produced to"});
  }
  if (tp.partition.value() < 0 || tp.partition.value() >= topic->partitions_count()) {
    return done(partition_missing(tp.topic, tp.partition.value(), topic->partitions_count()));
  }
  if (auto led = check_leader(*topic, tp.partition.value()); !led.ok()) return done(led.error());
  if (request.batches.empty()) return done(error{errc::corrupt_message, "the partition's record set holds no batch"});
  const std::map<std::string, std::string>& configs = topic->image->configs;
  // The live config: dynamic broker configs (KIP-226) apply to Kafka produce as to HTTP produce.
  const auto current_view = view();
  const broker_config& live_config = live(*current_view);
  auto log_config = make_log_config(live_config, configs);
  if (!log_config.ok()) return done(log_config.error());
  // Every batch is checked before any is appended (Kafka's LogValidator): a request is stored
  // whole or not at all, short of a disk failure.
  auto any_delay_header = validate_batches(request, *log_config, origin);
  if (!any_delay_header.ok()) return done(any_delay_header.error());
  // Kafka clients may delay records with the ringlog-deliver-at / ringlog-delay-ms header: such
  // a request goes record by record through produce_to, which diverts the delayed ones.
  if (*any_delay_header && !topic->is_internal) return produce_batches_delayed(std::move(request), topic, std::move(done));
  // compression.type (the topic's, else the broker's) other than "producer": batches in another
  // codec are stored recompressed with it (Kafka's LogValidator does the same), keeping their
  // producer fields.
  if (auto wanted = stored_compression(live_config, configs, internal_topic_of(*topic))) {
    for (auto& batch : request.batches) {
      auto header = codec::decode_header(batch);
      if (header->compression() == wanted->compression) continue;   // levels do not recompress (KIP-390)
      auto records = codec::decode_records(batch);
      codec::batch_options options;
      options.base_offset = header->base_offset;
      options.compression = wanted->compression;
      options.compression_level = wanted->level;
      options.timestamp_type = header->timestamp_type();
      options.producer = header->producer;
      options.producer_epoch_value = header->producer_epoch_value;
      options.base_sequence = header->base_sequence;
      options.is_transactional = header->is_transactional();
      auto encoded = codec::encode_batch(options, *records);
      if (!encoded.ok()) return done(error{errc::corrupt_message, "recompressing for compression.type: " + encoded.error().message});
      batch = std::move(encoded).value();
    }
  }
  auto type = configs.find("message.timestamp.type");
  const bool log_append_time = type != configs.end() && type->second == "LogAppendTime";
  const size_t shard = owner(tp.topic, tp.partition.value());
  if (!deps_.runtime.admits(shard)) return done(shard_busy(shard));
  deps_.runtime.post(shard, [this, shard, request = std::move(request), log_append_time, done = std::move(done)]() mutable {
    append_batches_on_shard(shard, std::move(request), log_append_time, std::move(done));
  });
}

void broker_impl::append_batches_on_shard(size_t shard, produce_batches_request request, bool log_append_time,
                                          std::function<void(result<produce_batches_response>)> done,
                                          uint64_t verified_guard) {
  const base::cpu_scope cpu(base::cpu_activity::produce);
  const int64_t started_ns = base::monotonic_ns();
  if (verified_guard == 0 && request.received_ns != 0) {
    base::observe_latency(base::latency_stage::produce_queue, started_ns - request.received_ns);
  }
  const auto& tp = request.partition;
  auto rt = runtime_of(shard, tp.topic, tp.partition.value());
  if (!rt) return done(no_replica_here(find_topic(tp.topic) != nullptr, tp));
  if (auto ok = check_append(*rt, request.acks); !ok.ok()) return done(ok.error());
  // KIP-890 part 1: a Kafka producer's first batch of a transaction here is appended only once
  // its coordinator confirmed the partition is in that transaction, and only if no marker ended
  // the transaction meanwhile (the guard is still the one the verification started with).
  if (auto unverified = request.transactional_id.empty() ? std::nullopt : unverified_txn_batch(*rt, request)) {
    const int64_t pid = unverified->producer.value();
    const int16_t epoch = unverified->producer_epoch_value.value();
    auto guard = rt->txn_verifications.find(pid);
    const bool guarded = guard != rt->txn_verifications.end() && guard->second.producer_epoch == epoch;
    if (verified_guard != 0) {
      if (!guarded || guard->second.id != verified_guard) {
        return done(error{errc::invalid_txn_state,
                          "the transaction of producer " + std::to_string(pid) + " ended while its produce to " +
                              tp.topic + "-" + std::to_string(tp.partition.value()) +
                              " was being verified: nothing was appended (KIP-890)"});
      }
      // The append below opens the transaction here (on this thread, before any marker can
      // come), or is refused and a retry verifies again: the guard has done its work.
      rt->txn_verifications.erase(guard);
    } else {
      if (!guarded) {
        if (guard == rt->txn_verifications.end() && rt->txn_verifications.size() >= txn_verifications_per_partition_max) {
          return done(error{errc::concurrent_transactions,
                            "txn_verifications_per_partition_max (" + std::to_string(txn_verifications_per_partition_max) +
                                ") producers of " + tp.topic + "-" + std::to_string(tp.partition.value()) +
                                " are being verified with their coordinators: retry"});
        }
        guard = rt->txn_verifications.insert_or_assign(pid, txn_verification_guard{next_txn_verification_++, epoch}).first;
      }
      const uint64_t id = guard->second.id;
      // Copies: the callback below takes `request` (and with it what `tp` refers to).
      const std::string transactional_id = request.transactional_id;
      const model::topic_partition partition = tp;
      return verify_txn_partition(
          transactional_id, model::producer_id{pid}, model::producer_epoch{epoch}, partition,
          [this, shard, id, pid, request = std::move(request), log_append_time, done = std::move(done)](result<void> r) mutable {
            deps_.runtime.post(shard, [this, shard, id, pid, r = std::move(r), request = std::move(request),
                                       log_append_time, done = std::move(done)]() mutable {
              if (r.ok()) return append_batches_on_shard(shard, std::move(request), log_append_time, std::move(done), id);
              auto rt2 = runtime_of(shard, request.partition.topic, request.partition.partition.value());
              if (rt2) {
                auto g = rt2->txn_verifications.find(pid);
                if (g != rt2->txn_verifications.end() && g->second.id == id) rt2->txn_verifications.erase(g);
              }
              done(r.error());
            });
          });
    }
  }
  produce_batches_response out;
  const int64_t now = deps_.clock.now_ms();
  if (log_append_time) out.log_append_time = now;
  for (size_t i = 0; i < request.batches.size(); ++i) {
    auto& batch = request.batches[i];
    if (log_append_time) codec::set_log_append_time(batch, now);
    const size_t batch_bytes = batch.size();
    auto appended = rt->log->append(std::move(batch), rt->epoch);
    if (!appended.ok()) {
      // Batches before this one are in the log (only a disk failure gets here after validation).
      publish(*rt);
      return done(from_storage(appended.error()));
    }
    if (i == 0) out.base_offset = appended->base_offset;
    base::count_activity_bytes(base::cpu_activity::produce, batch_bytes);
  }
  out.log_start_offset = rt->log->log_start_offset();
  const acks_mode acks = request.acks;
  if (acks == acks_mode::none) out.base_offset = model::offset{-1};
  base::observe_latency_since(base::latency_stage::produce_append, started_ns);
  complete_append(shard, rt, acks, rt->log->log_end_offset(), request.timeout_ms,
                  [out, received_ns = request.received_ns, done = std::move(done)](result<void> r) {
                    base::observe_latency_since(base::latency_stage::produce_total, received_ns);
                    if (!r.ok()) return done(r.error());
                    done(out);
                  });
}

// ---------------------------------------------------------------- maintenance and shutdown

void broker_impl::schedule_maintenance(size_t shard) {
  const int64_t tick_ms = std::min({constants::maintenance_interval_ms, config_.log_retention_check_interval_ms,
                                    config_.log_cleaner_backoff_ms});
  deps_.runtime.post_after(shard, tick_ms, [this, shard] {
    if (stopping_) return;
    maintain(shard);
    schedule_maintenance(shard);
  });
}

void broker_impl::maintain(size_t shard) {
  // Retention runs every log.retention.check.interval.ms; checkpoints on every tick.
  const int64_t now = deps_.clock.now_ms();
  const bool retention_due = now - last_retention_ms_[shard] >= config_.log_retention_check_interval_ms;
  if (retention_due) last_retention_ms_[shard] = now;
  // One task per partition: its retention and checkpoint writes (a few fsyncs) then hold up
  // the shard's other work for one partition's worth at a time, not all of them at once.
  for (auto& [key, rt] : shards_[shard]) {
    deps_.runtime.post(shard, [this, rt = rt, retention_due] {
      if (stopping_ || rt->deleted) return;
      maintain_partition(*rt, retention_due);
    });
  }
  // Log compaction: every compacted partition of the shard is looked at once per tick, after its
  // maintenance task (which rolls an idle active segment), one pass at a time (clean_next).
  deps_.runtime.post(shard, [this, shard] { queue_cleaning(shard); });
}

void broker_impl::queue_cleaning(size_t shard) {
  if (stopping_) return;
  auto& queue = clean_queue_[shard];
  // A log already waiting keeps its place (no second entry). The chain is (re)started here
  // whenever no pass runs: one whose partition was dropped while it waited for a sync ends
  // without a step to go on from (compaction::forget).
  std::set<const partition_runtime*> queued;
  for (const auto& w : queue) {
    if (auto rt = w.lock()) queued.insert(rt.get());
  }
  for (auto& [key, rt] : shards_[shard]) {
    if (!rt->deleted && rt->log->config().compacted() && !queued.contains(rt.get())) queue.push_back(rt);
  }
  clean_next(shard);
}

void broker_impl::clean_next(size_t shard) {
  auto& queue = clean_queue_[shard];
  if (stopping_ || compaction_.in_progress(shard)) return;
  // Pacing (log.cleaner.io.max.bytes.per.second) holds the next pass as it holds the next step.
  if (const int64_t wait = compaction_.wait_ms(shard, deps_.clock.now_ms()); wait > 0 && !queue.empty()) {
    deps_.runtime.post_after(shard, wait, [this, shard] { clean_next(shard); });
    return;
  }
  for (size_t looked = 0; !queue.empty(); ++looked) {
    if (looked == cleaner_looks_per_task) {
      deps_.runtime.post(shard, [this, shard] { clean_next(shard); });
      return;
    }
    auto rt = queue.front().lock();
    queue.pop_front();
    if (!rt || rt->deleted) continue;
    auto resume = [this, shard, weak = std::weak_ptr<partition_runtime>(rt)] {
      // From the disk executor's poll(): the next step is a task of its own, paced.
      auto rt = weak.lock();
      if (!rt) return deps_.runtime.post(shard, [this, shard] { clean_next(shard); });
      const int64_t wait = compaction_.wait_ms(shard, deps_.clock.now_ms());
      auto next = [this, shard, rt] { clean_step(shard, rt); };
      if (wait > 0) {
        deps_.runtime.post_after(shard, wait, std::move(next));
      } else {
        deps_.runtime.post(shard, std::move(next));
      }
    };
    if (compaction_.begin(shard, *rt->log, *rt->stats, deps_.clock.now_ms(), deps_.runtime.disk(shard),
                          std::move(resume))) {
      clean_step(shard, rt);
      return;
    }
  }
}

void broker_impl::clean_step(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (stopping_) {
    compaction_.abandon(shard);
    return;
  }
  if (rt->deleted) {
    // Its pass ended when the replica was dropped (compaction::forget): the chain goes on.
    deps_.runtime.post(shard, [this, shard] { clean_next(shard); });
    return;
  }
  const auto outcome = compaction_.step(shard, *rt->log, *rt->stats, deps_.clock.now_ms());
  if (outcome.records_changed) {
    // Records below the high watermark changed, so kept reads of the log go.
    auto& recent = recent_reads_[shard];
    std::erase_if(recent, [&rt](const recent_read& r) { return r.partition_uid == rt->uid; });
    publish(*rt);
  }
  if (outcome.waiting_for_io) return;   // the pass's resume queues the next step
  if (outcome.done) {
    // The next compacted log of this tick, as a task of its own behind the work that arrived.
    deps_.runtime.post(shard, [this, shard] { clean_next(shard); });
    return;
  }
  // The next step queues behind the produce and fetch work that arrived during this one.
  auto next = [this, shard, rt] { clean_step(shard, rt); };
  if (outcome.wait_ms > 0) {
    deps_.runtime.post_after(shard, outcome.wait_ms, std::move(next));
  } else {
    deps_.runtime.post(shard, std::move(next));
  }
}

void broker_impl::maintain_partition(partition_runtime& rt, bool retention_due) {
  auto deleted = retention_due ? rt.log->apply_retention() : storage::result<size_t>(size_t{0});
  if (!deleted.ok()) return;  // the log reports kafka_storage_error to its next caller
  // A compacted log's idle active segment also rolls between retention checks, at this tick
  // (at most log.cleaner.backoff.ms apart), so the cleaner gets an idle log's last records within
  // segment.ms / max.compaction.lag.ms plus the backoff, not a retention check interval later.
  if (!retention_due && rt.log->config().compacted() && !rt.log->roll_if_idle().ok()) return;
  const int64_t hw = rt.log->high_watermark().value();
  if (deleted.value() > 0 || hw != rt.last_checkpointed_high_watermark) {
    if (rt.log->checkpoint().ok()) rt.last_checkpointed_high_watermark = hw;
  }
  publish(rt);
}

void broker_impl::begin_shutdown() {
  stopping_ = true;
  for (size_t shard = 0; shard < shards_.size(); ++shard) {
    deps_.runtime.post(shard, [this, shard] {
      for (auto& [key, rt] : shards_[shard]) {
        auto parked = std::move(rt->waiters);
        rt->waiters.clear();
        for (auto& w : parked) answer_empty(*rt, *w);
      }
    });
  }
}

void broker_impl::shutdown(std::function<void()> done) {
  // Controlled shutdown first (KIP-631): the active controller marks this broker and moves its
  // leaderships away before the logs close; bounded by the session timeout, so a broker that
  // cannot reach a controller still stops.
  if (!config_.process_role_broker && !controlled_shutdown_done_.exchange(true) && quorum_) {
    // A dedicated controller has no leaderships to move: as the active controller it hands the
    // quorum over at once (no election timeout for the brokers to wait out), then stops.
    stopping_ = true;
    deps_.runtime.post(controller_shard, [this, done = std::move(done)]() mutable {
      if (quorum_->leader_id() == config_.node_id) quorum_->resign();
      shutdown(std::move(done));
    });
    return;
  }
  if (!controlled_shutdown_done_.exchange(true) && quorum_) {
    const auto deadline = deps_.clock.now_ms() + config_.broker_session_timeout_ms;
    auto attempt = std::make_shared<std::function<void()>>();
    std::weak_ptr<std::function<void()>> weak = attempt;
    *attempt = [this, weak, deadline, done]() mutable {
      auto self = weak.lock();
      if (quorum_->leader_id() == config_.node_id) {
        // The active controller itself: commit the change here, then hand the quorum over.
        const auto* own = own_registration();
        if (own == nullptr) return shutdown(std::move(done));
        return commit_records(controlled_shutdown_records(*controller_view_->image, *own),
                              [this, done](result<void>) mutable {
                                quorum_->resign();
                                shutdown(std::move(done));
                              });
      }
      send_heartbeat(true, [this, self, deadline, done](result<protocol::broker_heartbeat_response_data> r) mutable {
        const bool acknowledged = r.ok() && r->error_code == 0 && r->should_shut_down;
        if (acknowledged || deps_.clock.now_ms() >= deadline) {
          // A leader of the quorum hands it over at once instead of after an election timeout.
          if (quorum_->leader_id() == config_.node_id) quorum_->resign();
          return shutdown(std::move(done));
        }
        deps_.runtime.post_after(controller_shard, 50, [self, alive = std::weak_ptr<int>(lifetime_)] {
          if (alive.lock()) (*self)();
        });
      });
    };
    stopping_ = true;
    deps_.runtime.post(controller_shard, [attempt] { (*attempt)(); });
    return;
  }
  stopping_ = true;
  if (groups_) groups_->stop();
  if (txns_) txns_->stop();
  auto remaining = std::make_shared<std::atomic<size_t>>(shards_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (size_t shard = 0; shard < shards_.size(); ++shard) {
    deps_.runtime.post(shard, [this, shard, remaining, finish] {
      auto& disk = deps_.runtime.disk(shard);
      // Let every fdatasync in flight complete so their producers hear the outcome.
      for (int i = 0; i < 10'000 && disk.in_flight() > 0; ++i) disk.poll(std::chrono::milliseconds(10));
      for (auto& [key, rt] : shards_[shard]) {
        wake_waiters(shard, rt);
        for (auto& w : rt->waiters) answer_empty(*rt, *w);
        rt->waiters.clear();
        fail_ack_waiters(*rt, error{errc::broker_not_available,
                                    "the broker is shutting down before the write was replicated; it may or may "
                                    "not be stored: retry"});
        rt->leader.reset();
        wake_replica_waiters(shard, rt);
        (void)rt->log->close();
      }
      if (remaining->fetch_sub(1) == 1) {
        deps_.runtime.post(controller_shard, [this, finish] {
          if (quorum_) quorum_->stop();
          (*finish)();
        });
      }
    });
  }
}

}  // namespace detail

result<std::unique_ptr<broker>> open_broker(broker_config config, broker_dependencies deps) {
  if (deps.runtime.shard_count() == 0) return error{errc::invalid_config, "the runtime has no shards"};
  if (config.log_flush_policy != "fsync" && config.log_flush_policy != "replication") {
    return error{errc::invalid_config, "log.flush.policy='" + config.log_flush_policy + "' is not one of fsync, replication"};
  }
  auto b = std::make_unique<detail::broker_impl>(std::move(config), std::move(deps));
  if (auto started = b->start(); !started.ok()) {
    b->abandon();
    return started.error();
  }
  return std::unique_ptr<broker>(std::move(b));
}

}  // namespace ringlog::broker
