// This node's partitions following the metadata: a new view published to the shards, the
// partitions it places here opened (or their logs created), the ones moved away or removed dropped.
// Kafka's counterpart: ReplicaManager.applyDelta (BrokerMetadataPublisher) and LogManager's
// stray-log removal.

#include <algorithm>
#include <utility>

#include "broker_impl.h"
#include "ringlog/io/file.h"
#include "topic_config.h"

namespace ringlog::broker::detail {

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
  auto rt = std::make_shared<partition_runtime>(*partition_contexts_[shard]);
  rt->uid = next_partition_uid_.fetch_add(1, std::memory_order_relaxed);
  rt->topic = topic;
  rt->topic_id = topic_id;
  rt->partition = partition;
  rt->log = std::move(log.value());
  rt->stats = std::move(stats);
  rt->epoch = model::leader_epoch{-1};   // apply_partition_state starts its leadership or its following
  rt->publish();
  partition_managers_[shard]->add(rt);
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

std::unique_ptr<partition_context> broker_impl::make_partition_context(size_t shard) {
  return std::unique_ptr<partition_context>(new partition_context{
      .shard = shard,
      .current_shard = [this] { return deps_.runtime.current_shard(); },
      .clock = deps_.clock,
      .disk = deps_.runtime.disk(shard),
      .config = {.log_flush_policy = config_.log_flush_policy,
                 .fetch_wait_max_ms = config_.fetch_wait_max_ms,
                 .fetch_waiters_per_partition_max = config_.fetch_waiters_per_partition_max},
      .min_insync_replicas = [this](const std::string& topic) { return min_insync_replicas(topic); },
      .leader_replication_throttled_rate = [this] { return live(*view()).leader_replication_throttled_rate; },
      .acquire_leader_throttle =
          [this](int64_t rate, int64_t now_ms) {
            return replication_throttles_.acquire(replication_throttles::side::leader, rate, now_ms);
          },
      .record_leader_throttle =
          [this](int64_t bytes, int64_t rate, int64_t now_ms) {
            replication_throttles_.record(replication_throttles::side::leader, bytes, rate, now_ms);
          },
      .leadership_lease_until_ms = leadership_lease_until_ms_,
      .stopping = stopping_,
      .next_read_id = next_read_id_,
      .next_txn_verification = next_txn_verification_,
      .recent_reads = partition_managers_[shard]->recent_reads(),
      .add_fetch_deadline =
          [manager = partition_managers_[shard].get()](int64_t at_ms, const std::shared_ptr<partition_runtime>& rt,
                                                        const std::shared_ptr<fetch_waiter>& w) {
            manager->add_fetch_deadline(at_ms, rt, w);
          },
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
    replica_fetcher::new_follower_generation(*rt);
    partition_managers_[shard]->remove(topic, partition);
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
        partition_managers_[shard]->remove(topic, p);
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

}  // namespace ringlog::broker::detail
