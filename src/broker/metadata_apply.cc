// The metadata state machine: committed entries of the metadata log applied in order (one apply
// job at a time, in apply_queue_: the partition module's metadata_apply_queue), snapshots taken
// and loaded, leader changes, and the writes that propose entries (write_entry, commit_records)
// and wait for them to apply (apply_queue_.await_applied).
// Kafka's counterpart: the MetadataLoader/BrokerMetadataPublisher replay and QuorumController's appendRecords.

#include <set>
#include <utility>

#include "broker_impl.h"
#include "ringlog/controller/metadata_entry.h"
#include "wire_codes.h"

namespace ringlog::broker::detail {

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
      apply_queue_.entry_failed(e.offset, error{errc::invalid_request, "metadata offset " + std::to_string(e.offset) +
                                                                           ": " + records.error().message});
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
      apply_queue_.entry_failed(e.offset, *failure);
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

void broker_impl::applied_through(int64_t end_offset) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  run_metadata_rechecks();
  // Leader-change control entries carry no records: a job that changes nothing moves
  // apply_queue_'s end past them, in order behind the jobs queued before it, so await_applied of
  // the quorum's high watermark (metadata_barrier.cc, start-up's catch-up) completes.
  apply_job job;
  job.before = controller_view_;
  job.after = controller_view_;
  job.offset = end_offset - 1;
  enqueue_apply_job(std::move(job));
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
  controller_.on_leader_change(leader_id);
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
  const int64_t offset = job.offset;
  apply_queue_.push(offset, [this, job = std::make_shared<apply_job>(std::move(job))](auto done) {
    run_apply_job(job, std::move(done));
  });
}

void broker_impl::run_apply_job(const std::shared_ptr<apply_job>& job, std::function<void(result<void>)> finish) {
  views_.publish(job->after, [this, job, finish = std::move(finish)] {
    learn_peer_addresses(*job->after->image);
    forwarder_.fail_moved_forwards(*job->after);
    if (!job->reconcile) return finish(base::ok_v);
    if (!job->open_all) return reconcile(*job->before, *job->after, job->touched, finish);
    // Start-up: copies of partitions reassigned away, and of topics deleted, while this node was
    // down go first (the image is caught up), then every topic's partitions this node holds, one
    // topic after another.
    remove_stray_replicas(log_directory{.fs = deps_.fs, .path = config_.log_dir, .log = deps_.log},
                          *job->after->image, config_.node_id);
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
