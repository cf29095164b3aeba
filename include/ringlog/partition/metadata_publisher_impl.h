#pragma once
// The member definitions of metadata_publisher<View> (metadata_publisher.h), included where the
// class is instantiated for a view (the broker: src/broker/metadata_publisher.cc; tests).
//   The apply side: committed entries of the metadata log applied in order to the controller
//   view (one apply job at a time, in apply_queue_: metadata_apply_queue), snapshots taken and
//   loaded, leader changes, each job's view published to the shards and the brokers' cluster
//   addresses learned from it. Kafka's counterpart: the MetadataLoader/BrokerMetadataPublisher
//   replay.
//   The reconcile side: this node's replicas following an applied entry once its view is on
//   every shard. The partitions it places here are opened (or their logs created), the ones moved
//   away or removed dropped, the others take their new image and log config, each through its
//   shard's partition_manager (which owns the directories, the replicas' partition_context, and
//   applies each partition's image: apply_partition_state). Kafka's counterpart:
//   ReplicaManager.applyDelta (BrokerMetadataPublisher).

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "ringlog/partition/metadata_publisher.h"

namespace ringlog::partition {

// ---------------------------------------------------------------- the apply side

template <class View>
void metadata_publisher<View>::apply(std::span<const controller::committed_entry> entries) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  host_.run_metadata_rechecks();   // start-up steps waiting on the metadata look again
  for (const auto& e : entries) {
    model::record r;
    if (e.legacy_key) r.key = *e.legacy_key;
    r.value = model::bytes(reinterpret_cast<const std::byte*>(e.payload.data()),
                           reinterpret_cast<const std::byte*>(e.payload.data()) + e.payload.size());
    auto records = host_.metadata_records(*controller_view_->image, r);
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
    advance(host_.make_view(*controller_view_, std::move(delta).image()), std::move(touched), e.offset);
  }
}

template <class View>
void metadata_publisher<View>::applied_through(int64_t end_offset) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  host_.run_metadata_rechecks();
  // Leader-change control entries carry no records: a job that changes nothing moves
  // apply_queue_'s end past them, in order behind the jobs queued before it, so await_applied of
  // the quorum's high watermark (the metadata barrier, start-up's catch-up) completes.
  apply_job job;
  job.before = controller_view_;
  job.after = controller_view_;
  job.offset = end_offset - 1;
  enqueue_apply_job(std::move(job));
}

template <class View>
std::vector<uint8_t> metadata_publisher<View>::snapshot() {
  return controller::encode_snapshot(*controller_view_->image);
}

template <class View>
void metadata_publisher<View>::load_snapshot(std::span<const uint8_t> payload, int64_t end_offset) {
  auto image = controller::decode_snapshot(payload, end_offset - 1);
  // A snapshot is durable state the quorum checked (CRC); one that does not decode is a bug.
  RINGLOG_ASSERT(image.ok(), image.ok() ? "" : image.error().message.c_str());
  std::set<std::string> names;
  for (const auto& [name, t] : controller_view_->topics) names.insert(name);
  for (const auto& [name, t] : image.value()->topics()) names.insert(name);
  advance(host_.make_view(*controller_view_, std::move(image).value()),
          std::vector<std::string>(names.begin(), names.end()), end_offset - 1);
}

template <class View>
void metadata_publisher<View>::on_leader_change(int32_t leader_id, int32_t /*epoch*/) {
  host_.run_metadata_rechecks();
  host_.on_metadata_leader_change(leader_id);
}

template <class View>
void metadata_publisher<View>::open_all_partitions(std::function<void(result<void>)> done) {
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
  // Once its own job ran, not a wait by offset: the offset may be a refused entry's (the log's
  // last), whose reason await_applied would answer. A replica that does not open fails the job,
  // but it was logged and is offline at every door (replica_directories): start-up goes on, as
  // it did while this waited by offset, and the other partitions serve.
  enqueue_apply_job(std::move(job), [done = std::move(done)](result<void>) { done(base::ok_v); });
}

template <class View>
void metadata_publisher<View>::advance(std::shared_ptr<const View> after, std::vector<std::string> touched,
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

template <class View>
void metadata_publisher<View>::learn_peer_addresses(const controller::metadata_image& image) {
  if (cluster_transport_ == nullptr) return;
  for (const auto& [id, b] : image.brokers()) {
    // A voter's address comes from controller.quorum.voters (checked against its listener at
    // start); a broker-only node's only from its registration.
    if (is_voter_(id)) continue;
    for (const auto& e : b.endpoints) {
      if (e.name != "cluster") continue;
      if (cluster_transport_->set_peer_address(id, e.host, e.port) && log_) {
        log_(true, "learned the cluster address of broker " + std::to_string(id) + ": " + e.host + ":" +
                       std::to_string(e.port));
      }
    }
  }
}

template <class View>
void metadata_publisher<View>::enqueue_apply_job(apply_job job, std::function<void(result<void>)> then) {
  const int64_t offset = job.offset;
  apply_queue_.push(offset, [this, job = std::make_shared<apply_job>(std::move(job))](auto done) {
    run_apply_job(job, std::move(done));
  }, std::move(then));
}

template <class View>
void metadata_publisher<View>::run_apply_job(const std::shared_ptr<apply_job>& job,
                                             std::function<void(result<void>)> finish) {
  views_.publish(job->after, [this, job, finish = std::move(finish)] {
    learn_peer_addresses(*job->after->image);
    host_.on_view_published(*job->after);
    if (!job->reconcile) return finish(base::ok_v);
    if (!job->open_all) return reconcile(*job->before, job->after, job->touched, finish);
    open_every_partition(*job->after, finish);
  });
}

template <class View>
void metadata_publisher<View>::open_every_partition(const View& view, std::function<void(result<void>)> finish) {
  // Copies of partitions reassigned away, and of topics deleted, while this node was down go
  // first (the image is caught up), then every topic's partitions this node holds, one topic
  // after another. A partition that cannot open (open_held_partitions logs it) leaves every
  // other one opening: stopping at the first failure kept every topic after it offline here
  // (the breaker of session 29: one unreadable checkpoint file, every partition answering "not
  // opened yet").
  remove_stray_replicas(dir_, *view.image, node_id_);
  std::vector<ordered_step> steps;
  for (const auto& [name, t] : view.topics) {
    steps.push_back([this, t](auto next) { open_partitions(t, 0, false, std::move(next)); });
  }
  run_in_order(runtime_, controller_shard, std::move(steps), after_failure::run_the_rest, std::move(finish));
}

// ---------------------------------------------------------------- the reconcile side

namespace detail {
inline bool lists(const controller::partition_image& partition, int32_t node_id) {
  return std::find(partition.replicas.begin(), partition.replicas.end(), node_id) != partition.replicas.end();
}
}  // namespace detail

template <class View>
void metadata_publisher<View>::reconcile(const View& before, const std::shared_ptr<const View>& after,
                                         const std::vector<std::string>& touched,
                                         std::function<void(result<void>)> done) {
  std::vector<ordered_step> steps;
  bool changed = host_.acls_changed(before, *after);   // issue 30: ACLs change what patterns may match
  for (const auto& name : touched) add_topic_steps(before, after, name, steps, changed);
  if (host_.topic_defaults_changed(before, *after)) {
    // Dynamic broker configs changed (KIP-226): every topic follows its new defaults.
    for (const auto& [name, state] : after->topics) {
      steps.push_back(reconfigure(state, after, state->partitions_count()));
    }
  }
  if (changed) steps.push_back([this](auto next) {
    host_.on_topics_changed();
    next(base::ok_v);
  });
  run_in_order(runtime_, controller_shard, std::move(steps), after_failure::run_the_rest, std::move(done));
}

template <class View>
void metadata_publisher<View>::add_topic_steps(const View& before, const std::shared_ptr<const View>& after,
                                               const std::string& name, std::vector<ordered_step>& steps,
                                               bool& changed) {
  auto old_it = before.topics.find(name);
  auto new_it = after->topics.find(name);
  topic_ptr old_state = old_it == before.topics.end() ? nullptr : old_it->second;
  topic_ptr new_state = new_it == after->topics.end() ? nullptr : new_it->second;
  if (old_state && (!new_state || new_state->image->topic_id != old_state->image->topic_id)) {
    changed = true;
    steps.push_back([this, name, count = old_state->partitions_count()](auto next) {
      host_.on_topic_deleted(name);
      remove_partitions(name, count, std::move(next));
    });
    old_state = nullptr;
  }
  if (!new_state) return;
  const int32_t from = old_state ? old_state->partitions_count() : 0;
  if (from < new_state->partitions_count()) {
    changed = true;
    steps.push_back([this, new_state, from](auto next) { open_partitions(new_state, from, true, std::move(next)); });
  }
  if (!old_state) return;
  auto added = apply_partition_changes(*old_state, *new_state, std::min(from, new_state->partitions_count()));
  if (!added.empty()) {
    steps.push_back([this, new_state, added = std::move(added)](auto next) mutable {
      open_held_partitions(new_state, std::move(added), true, std::move(next));
    });
  }
  if (old_state->image->configs != new_state->image->configs) steps.push_back(reconfigure(new_state, after, from));
}

template <class View>
std::vector<int32_t> metadata_publisher<View>::apply_partition_changes(const topic_state& was_state,
                                                                       const topic_state& now_state, int32_t count) {
  // Leader, ISR and epoch changes: each replica here starts or ends a leadership, follows its
  // new leader, or takes the new ISR (partition_manager::apply_partition_state).
  // A reassignment (KIP-455) adds this node to a partition's replicas (it opens the partition
  // and follows) or removes it (it drops the replica and deletes its log).
  std::vector<int32_t> added;
  const std::string& name = now_state.name();
  for (int32_t part = 0; part < count; ++part) {
    const auto& was = was_state.image->partitions[static_cast<size_t>(part)];
    const auto& now = now_state.image->partitions[static_cast<size_t>(part)];
    if (was == now) continue;
    const bool was_here = detail::lists(was, node_id_);
    const bool here = detail::lists(now, node_id_);
    if (!was_here && here) {
      added.push_back(part);
      continue;
    }
    runtime_.post(owner(name, part), [this, name, part, now, was_here, here] {
      auto& manager = *managers_[owner(name, part)];
      if (was_here && !here) return manager.drop_replica(name, part, now);
      if (auto rt = manager.find(name, part)) manager.apply_partition_state(rt, now);
    });
  }
  return added;
}

template <class View>
ordered_step metadata_publisher<View>::reconfigure(topic_ptr topic, std::shared_ptr<const View> as_of,
                                                   int32_t count) {
  return [this, topic = std::move(topic), as_of = std::move(as_of), count](auto next) {
    auto cfg = host_.log_config(*as_of, *topic->image);
    if (!cfg.ok()) return next(cfg.error());
    for (int32_t part = 0; part < count; ++part) {
      runtime_.post(owner(topic->name(), part), [this, name = topic->name(), part, c = cfg.value()] {
        if (auto rt = managers_[owner(name, part)]->find(name, part)) rt->log->set_config(c);
      });
    }
    next(base::ok_v);
  };
}

template <class View>
void metadata_publisher<View>::open_partitions(const topic_ptr& topic, int32_t from, bool fresh,
                                               std::function<void(result<void>)> done) {
  const int32_t count = topic->partitions_count();
  std::vector<int32_t> held;   // the partitions of [from, count) with a replica on this node
  for (int32_t p = from; p < count; ++p) {
    if (detail::lists(topic->image->partitions[static_cast<size_t>(p)], node_id_)) held.push_back(p);
  }
  open_held_partitions(topic, std::move(held), fresh, std::move(done));
}

template <class View>
void metadata_publisher<View>::open_held_partitions(const topic_ptr& topic, std::vector<int32_t> held, bool fresh,
                                                    std::function<void(result<void>)> done) {
  if (held.empty()) return done(base::ok_v);
  // The topic defaults of the controller view (the last applied entry's).
  auto log_config = host_.log_config(*controller_view_, *topic->image);
  if (!log_config.ok()) return done(log_config.error());
  auto shard_of_held = [this, topic, held](size_t i) { return owner(topic->name(), held[i]); };
  auto open = [this, topic, held, cfg = log_config.value(), fresh](size_t i) -> result<void> {
    const auto p = static_cast<size_t>(held[i]);
    auto opened = managers_[owner(topic->name(), held[i])]->open_replica(
        topic->name(), topic->image->topic_id, held[i], cfg, topic->partitions[p], topic->image->partitions[p], fresh);
    // Said where an operator looks: the partition stays offline on this broker (its other
    // partitions open), which clients only see as "not opened yet" (the breaker of session 24:
    // an emptied checkpoint file took a partition offline with nothing logged).
    if (!opened.ok()) {
      // Kept where every door reads it (broker::no_replica_here, describe_topic): offline here.
      topic->partitions[p]->set_open_failure(opened.error().message);
      if (log_) {
        log_(false, "partition " + topic->name() + "-" + std::to_string(held[i]) +
                        ": cannot open its replica on this broker (" + opened.error().message +
                        "); it stays offline here until that is repaired and the broker restarted");
      }
    }
    return opened;
  };
  run_on_shards(runtime_, held.size(), shard_of_held, std::move(open), controller_shard, std::move(done));
}

template <class View>
void metadata_publisher<View>::remove_partitions(const std::string& topic, int32_t count,
                                                 std::function<void(result<void>)> done) {
  auto remove = [this, topic](size_t p) {
    const size_t shard = owner(topic, static_cast<int32_t>(p));
    return managers_[shard]->remove_replica(
        topic, static_cast<int32_t>(p), error{errc::unknown_topic_or_partition, unknown_topic_message(topic) + " (deleted)"});
  };
  auto shard_of_partition = [this, topic](size_t p) { return owner(topic, static_cast<int32_t>(p)); };
  run_on_shards(runtime_, static_cast<size_t>(count), shard_of_partition, std::move(remove), controller_shard,
                std::move(done));
}

}  // namespace ringlog::partition
