// The metadata publisher's apply side (metadata_publisher.h): committed entries of the metadata
// log applied in order to the controller view (one apply job at a time, in apply_queue_: the
// partition module's metadata_apply_queue), snapshots taken and loaded, leader changes, each
// job's view published to the shards and the brokers' cluster addresses learned from it.
// Kafka's counterpart: the MetadataLoader/BrokerMetadataPublisher replay.

#include <set>
#include <utility>

#include "metadata_publisher.h"

namespace ringlog::broker::detail {

void metadata_publisher::apply(std::span<const controller::committed_entry> entries) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  host_.run_metadata_rechecks();   // start-up steps waiting on the metadata look again (start_up.cc)
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
    auto touched = delta.touched_topics();
    advance(make_view(*controller_view_, std::move(delta).image(), &config_), std::move(touched), e.offset);
  }
}

void metadata_publisher::applied_through(int64_t end_offset) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  host_.run_metadata_rechecks();
  // Leader-change control entries carry no records: a job that changes nothing moves
  // apply_queue_'s end past them, in order behind the jobs queued before it, so await_applied of
  // the quorum's high watermark (metadata_barrier.cc, start-up's catch-up) completes.
  apply_job job;
  job.before = controller_view_;
  job.after = controller_view_;
  job.offset = end_offset - 1;
  enqueue_apply_job(std::move(job));
}

std::vector<uint8_t> metadata_publisher::snapshot() { return controller::encode_snapshot(*controller_view_->image); }

void metadata_publisher::load_snapshot(std::span<const uint8_t> payload, int64_t end_offset) {
  auto image = controller::decode_snapshot(payload, end_offset - 1);
  // A snapshot is durable state the quorum checked (CRC); one that does not decode is a bug.
  RINGLOG_ASSERT(image.ok(), image.ok() ? "" : image.error().message.c_str());
  std::set<std::string> names;
  for (const auto& [name, t] : controller_view_->topics) names.insert(name);
  for (const auto& [name, t] : image.value()->topics()) names.insert(name);
  advance(make_view(*controller_view_, std::move(image).value(), &config_),
          std::vector<std::string>(names.begin(), names.end()), end_offset - 1);
}

void metadata_publisher::on_leader_change(int32_t leader_id, int32_t /*epoch*/) {
  host_.run_metadata_rechecks();
  host_.on_metadata_leader_change(leader_id);
}

void metadata_publisher::open_all_partitions(std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  // Every partition this node holds as of the image it caught up to; entries applied from now
  // on open, remove and reconfigure partitions as they come.
  partitions_open_ = true;
  apply_job job;
  job.before = controller_view_;
  job.after = controller_view_;
  job.offset = apply_queue_.applied_end() - 1;
  job.open_all = true;
  job.reconcile = true;
  const int64_t offset = job.offset;
  enqueue_apply_job(std::move(job));
  apply_queue_.await_applied(offset, std::move(done));
}

void metadata_publisher::advance(std::shared_ptr<const metadata_view> after, std::vector<std::string> touched,
                                 int64_t offset) {
  apply_job job;
  job.touched = std::move(touched);
  job.before = controller_view_;
  job.after = std::move(after);
  job.offset = offset;
  job.reconcile = partitions_open_;
  controller_view_ = job.after;
  enqueue_apply_job(std::move(job));
}

void metadata_publisher::learn_peer_addresses(const controller::metadata_image& image) {
  if (cluster_transport_ == nullptr) return;
  for (const auto& [id, b] : image.brokers()) {
    // A voter's address comes from controller.quorum.voters (checked against its listener at
    // start); a broker-only node's only from its registration.
    if (is_voter_(id)) continue;
    for (const auto& e : b.endpoints) {
      if (e.name != "cluster") continue;
      if (cluster_transport_->set_peer_address(id, e.host, e.port)) {
        log_.info("learned the cluster address of broker " + std::to_string(id) + ": " + e.host + ":" +
                  std::to_string(e.port));
      }
    }
  }
}

void metadata_publisher::enqueue_apply_job(apply_job job) {
  const int64_t offset = job.offset;
  apply_queue_.push(offset, [this, job = std::make_shared<apply_job>(std::move(job))](auto done) {
    run_apply_job(job, std::move(done));
  });
}

void metadata_publisher::run_apply_job(const std::shared_ptr<apply_job>& job, std::function<void(result<void>)> finish) {
  views_.publish(job->after, [this, job, finish = std::move(finish)] {
    learn_peer_addresses(*job->after->image);
    host_.on_view_published(*job->after);
    if (!job->reconcile) return finish(base::ok_v);
    if (!job->open_all) return reconcile(*job->before, *job->after, job->touched, finish);
    open_every_partition(*job->after, finish);
  });
}

void metadata_publisher::open_every_partition(const metadata_view& view, std::function<void(result<void>)> finish) {
  // Copies of partitions reassigned away, and of topics deleted, while this node was down go
  // first (the image is caught up), then every topic's partitions this node holds, one topic
  // after another.
  remove_stray_replicas(dir_, *view.image, config_.node_id);
  std::vector<ordered_step> steps;
  for (const auto& [name, t] : view.topics) {
    steps.push_back([this, t](auto next) { open_partitions(t, 0, false, std::move(next)); });
  }
  run_in_order(runtime_, controller_shard, std::move(steps), after_failure::stop, std::move(finish));
}

}  // namespace ringlog::broker::detail
