// REST consumer instances (Confluent REST Proxy v2's /consumers/{group}/instances/{name}): create,
// describe and delete an instance, subscribe, assign and unsubscribe it, and seek. Its membership
// is the coordinator's; its settings and its lease before it joins are instance_settings.
// Kafka's counterpart: the REST Proxy's KafkaConsumerManager over a KafkaConsumer's subscribe,
// assign and seek.

#include "group_service_impl.h"

#include <mutex>
#include <set>

namespace ringlog::broker::group_service_internal {

void group_service_impl::create_consumer(consumer_instance_config config,
                                         std::function<void(result<consumer_instance>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  std::string group_id = config.group_id;
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, config = std::move(config), done = std::move(done)](size_t shard, shard_state& st) {
    const int64_t now = clock_.now_ms();
    instance_settings settings;
    settings.join.client_name = config.name.value_or(config.client_name);
    settings.join.member_id = config.name;  // REST Proxy v2: the instance id is the name given
    settings.join.group_instance_id = config.group_instance_id;
    settings.join.assignor = config.assignor;
    settings.join.session_timeout_ms = config.session_timeout_ms;
    settings.join.rebalance_timeout_ms = config.session_timeout_ms;
    settings.join.auto_offset_reset = config.auto_offset_reset;
    settings.auto_offset_reset = config.auto_offset_reset;
    settings.session_timeout_ms = config.session_timeout_ms;
    settings.fetch_min_bytes = config.fetch_min_bytes;
    settings.read_committed = config.read_committed;
    settings.retry = config.retry;
    settings.last_seen_ms = now;
    if (config.name && st.instances.contains(instance_key(config.group_id, *config.name))) {
      return done(error{errc::duplicate_consumer_instance, "a consumer instance named '" + *config.name +
                                                               "' already exists in group '" + config.group_id + "'"});
    }
    if (auto refused = instance_bound_refusal(st, config.group_id)) return done(std::move(*refused));
    // Refused now for what its join would be refused for; it joins on subscribe or assign.
    auto takeover = st.coordinator.check_join(config.group_id, settings.join, now);
    if (!takeover.ok()) return done(from_group(takeover.error()));
    group::record_list records;
    if (takeover.value()) {
      // A live static member with this group.instance.id (KIP-345: the client restarted): it
      // takes the member over now, with its partitions and without a rebalance.
      auto joined = st.coordinator.join(config.group_id, settings.join, now);
      if (!joined.ok()) return done(from_group(joined.error()));
      settings.join.member_id = joined->member_id;
      settings.joined = true;
      for (const auto& m : st.coordinator.describe_group(config.group_id).members) {
        if (m.member_id == joined->member_id) settings.sub = m.sub;
      }
      records = std::move(joined->records);
    } else if (!settings.join.member_id) {
      settings.join.member_id = st.coordinator.new_member_id(config.group_id, settings.join.client_name);
    }
    const std::string instance_id = *settings.join.member_id;
    settings.info = {config.group_id, instance_id, config.format, config.auto_commit_enable, config.request_timeout_ms, config.owner};
    const std::string key = instance_key(config.group_id, instance_id);
    st.ended.erase(key);
    records.push_back(instance_record(settings));
    st.instances[key] = settings;
    persist(shard, std::move(records), [done, info = settings.info](result<void> r) {
      if (!r.ok()) return done(r.error());
      done(info);
    });
  });
}

std::optional<error> group_service_impl::instance_bound_refusal(const shard_state& st, const std::string& group_id) {
  if (st.instances.size() >= consumer_instances_per_coordinator_max) {
    return error{errc::throttling_quota_exceeded,
                 "this coordinator holds " + std::to_string(st.instances.size()) +
                     " consumer instances (consumer_instances_per_coordinator_max): delete instances no longer used, "
                     "or let their consumer.instance.timeout.ms end"};
  }
  // An instance counts against its group's member bound from its creation, not only once it
  // subscribes: 1,100 unsubscribed instances of one group were all accepted.
  const std::string prefix = instance_key(group_id, "");
  size_t in_group = 0;
  for (auto it = st.instances.lower_bound(prefix);
       it != st.instances.end() && it->first.starts_with(prefix) && in_group < group::limits::group_members_max; ++it) {
    ++in_group;
  }
  if (in_group >= group::limits::group_members_max) {
    return error{errc::group_max_size_reached, "group '" + group_id + "' has " + std::to_string(in_group) +
                                                   " consumer instances (limits::group_members_max)"};
  }
  return std::nullopt;
}

result<instance_settings*> group_service_impl::prepare_instance(shard_state& st, const std::string& group_id,
                                                                const std::string& instance_id,
                                                                group::record_list& records) {
  const std::string key = instance_key(group_id, instance_id);
  auto it = st.instances.find(key);
  if (it == st.instances.end()) return static_cast<instance_settings*>(nullptr);
  instance_settings& s = it->second;
  if (s.joined) return &s;
  const int64_t now = clock_.now_ms();
  if (now >= s.last_seen_ms + s.session_timeout_ms) {
    st.remember_end(key, "expired: no request within its session timeout (" + std::to_string(s.session_timeout_ms) +
                             " ms, consumer.instance.timeout.ms)");
    records.push_back(instance_tombstone(group_id, instance_id));
    st.instances.erase(it);
    return error{errc::unknown_member_id, st.not_found_message(group_id, instance_id)};
  }
  s.last_seen_ms = now;
  if (s.sub.kind != group::subscription_kind::none) RINGLOG_TRY(join_instance(st, s, records));
  return &s;
}

result<void> group_service_impl::join_instance(shard_state& st, instance_settings& s, group::record_list& records) {
  RINGLOG_ASSERT(!s.joined, "join_instance of a joined instance");
  const int64_t now = clock_.now_ms();
  const std::string& group_id = s.info.group_id;
  const std::string& instance_id = s.info.instance_id;
  auto joined = st.coordinator.join(group_id, s.join, now);
  if (!joined.ok()) return from_group(joined.error());
  RINGLOG_ASSERT(joined->member_id == instance_id || joined->static_rejoin, "a named join keeps its member id");
  records.insert(records.end(), joined->records.begin(), joined->records.end());
  s.joined = true;
  if (s.sub.kind == group::subscription_kind::none) return base::ok_v;
  auto applied = s.sub.kind == group::subscription_kind::manual
                     ? st.coordinator.assign(group_id, instance_id, s.sub.partitions, now)
                     : st.coordinator.subscribe(group_id, instance_id, s.sub, now);
  if (applied.ok()) {
    records.insert(records.end(), applied->records.begin(), applied->records.end());
    return base::ok_v;
  }
  // Refused (a bad pattern, a partition assigned elsewhere): it leaves, as if it never joined.
  auto left = st.coordinator.leave(group_id, instance_id, now);
  if (left.ok()) records.insert(records.end(), left->begin(), left->end());
  s.joined = false;
  return from_group(applied.error());
}

void group_service_impl::change_subscription(std::string group_id, std::string instance_id, group::subscription sub,
                                             std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, sub = std::move(sub), done = std::move(done)](
                               size_t shard, shard_state& st) mutable {
    const int64_t now = clock_.now_ms();
    auto it = st.instances.find(instance_key(group_id, instance_id));
    if (sub.kind == group::subscription_kind::topics) {
      retries::add_retry_topics(sub, group_id, policy_of(it != st.instances.end() ? &it->second : nullptr));
    }
    group::record_list records;
    const bool unsubscribe = sub.kind == group::subscription_kind::none;
    if (it != st.instances.end() && !it->second.joined) {
      auto prepared = prepare_instance(st, group_id, instance_id, records);
      if (!prepared.ok()) {
        persist(shard, std::move(records), [](result<void>) {});
        return done(prepared.error());
      }
      instance_settings& s = **prepared;
      if (!s.joined) {
        // Not a member yet: subscribing or assigning joins the group; unsubscribing changes nothing.
        s.sub = std::move(sub);
        if (!unsubscribe) {
          if (auto joined = join_instance(st, s, records); !joined.ok()) {
            s.sub = group::subscription{};
            persist(shard, std::move(records), [](result<void>) {});
            return done(joined.error());
          }
        }
        records.push_back(instance_record(s));
        return persist(shard, std::move(records), std::move(done));
      }
    }
    auto r = unsubscribe ? st.coordinator.unsubscribe(group_id, instance_id, now)
             : sub.kind == group::subscription_kind::manual
                 ? st.coordinator.assign(group_id, instance_id, sub.partitions, now)
                 : st.coordinator.subscribe(group_id, instance_id, sub, now);
    if (!r.ok()) {
      persist(shard, std::move(records), [](result<void>) {});
      return done(member_error(st, group_id, instance_id, r.error()));
    }
    records.insert(records.end(), r->records.begin(), r->records.end());
    if (auto s = st.instances.find(instance_key(group_id, instance_id)); s != st.instances.end()) {
      s->second.sub = std::move(sub);
      records.push_back(instance_record(s->second));
    }
    persist(shard, std::move(records), std::move(done));
  });
}

void group_service_impl::describe_consumer(std::string group_id, std::string instance_id,
                                           std::function<void(result<consumer_instance>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    auto it = st.instances.find(instance_key(group_id, instance_id));
    if (it != st.instances.end() && !it->second.joined) {
      group::record_list records;
      auto prepared = prepare_instance(st, group_id, instance_id, records);
      if (!prepared.ok()) {
        persist(shard, std::move(records), [](result<void>) {});
        return done(prepared.error());
      }
      consumer_instance info = (*prepared)->info;
      return persist(shard, std::move(records), [done, info](result<void> r) {
        if (!r.ok()) return done(r.error());
        done(info);
      });
    }
    auto d = st.coordinator.describe_group(group_id);
    bool member = std::any_of(d.members.begin(), d.members.end(),
                              [&](const group::member_description& m) { return m.member_id == instance_id; });
    if (it == st.instances.end() || !member) {
      if (auto moved = moved_away(group_id)) return done(*moved);
      return done(error{errc::unknown_member_id, st.not_found_message(group_id, instance_id)});
    }
    done(it->second.info);
  });
}

void group_service_impl::delete_consumer(std::string group_id, std::string instance_id,
                                         std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    const std::string key = instance_key(group_id, instance_id);
    auto it = st.instances.find(key);
    if (it != st.instances.end() && !it->second.joined) {
      st.instances.erase(it);
      st.remember_end(key, "was deleted");
      return persist(shard, {instance_tombstone(group_id, instance_id)}, std::move(done));
    }
    auto left = st.coordinator.leave(group_id, instance_id, clock_.now_ms());
    const bool had_settings = st.instances.erase(key) > 0;
    if (!left.ok()) {
      if (had_settings) st.tombstones_due.push_back(instance_tombstone(group_id, instance_id));
      return done(member_error(st, group_id, instance_id, left.error()));
    }
    st.remember_end(key, "was deleted");
    auto records = std::move(left.value());
    records.push_back(instance_tombstone(group_id, instance_id));
    persist(shard, std::move(records), std::move(done));
  });
}

void group_service_impl::subscribe(std::string group_id, std::string instance_id, group::subscription sub,
                                   std::function<void(result<void>)> done) {
  if (sub.kind == group::subscription_kind::none || sub.kind == group::subscription_kind::manual) {
    return done(error{errc::inconsistent_subscription, "subscribe takes a topic list or a pattern"});
  }
  // A topic list gets the group's retry topics added on the coordinator (change_subscription),
  // where the instance's retry.topic.template is known.
  change_subscription(std::move(group_id), std::move(instance_id), std::move(sub), std::move(done));
}

void group_service_impl::unsubscribe(std::string group_id, std::string instance_id,
                                     std::function<void(result<void>)> done) {
  change_subscription(std::move(group_id), std::move(instance_id), group::subscription{}, std::move(done));
}

void group_service_impl::assign(std::string group_id, std::string instance_id, group::partition_set partitions,
                                std::function<void(result<void>)> done) {
  group::subscription sub;
  sub.kind = group::subscription_kind::manual;
  sub.partitions = std::move(partitions);
  change_subscription(std::move(group_id), std::move(instance_id), std::move(sub), std::move(done));
}

void group_service_impl::subscription(std::string group_id, std::string instance_id,
                                      std::function<void(result<group::subscription>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    group::subscription sub;
    if (*s && !(*s)->joined) {
      sub = (*s)->sub;
    } else {
      auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
      if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
      for (const auto& m : st.coordinator.describe_group(group_id).members) {
        if (m.member_id == instance_id) sub = m.sub;
      }
      records.insert(records.end(), hb->records.begin(), hb->records.end());
    }
    // The retry topics subscribe() added are the broker's, not the client's: not shown.
    std::set<std::string> listed(sub.topics.begin(), sub.topics.end());
    const delay::retry_policy policy = policy_of(*s);
    std::erase_if(sub.topics, [&](const std::string& t) {
      auto original = delay::original_topic_of(policy, t, group_id, false);
      return original && listed.contains(*original);
    });
    persist(shard, std::move(records), [done, sub](result<void> r) {
      if (!r.ok()) return done(r.error());
      done(sub);
    });
  });
}

void group_service_impl::assignments(std::string group_id, std::string instance_id,
                                     std::function<void(result<group::partition_set>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    group::partition_set owned;   // an instance that has not joined owns nothing
    if (!*s || (*s)->joined) {
      auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
      if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
      owned = hb->assignment.owned;
      records.insert(records.end(), hb->records.begin(), hb->records.end());
    }
    persist(shard, std::move(records), [done, owned](result<void> r) {
      if (!r.ok()) return done(r.error());
      done(owned);
    });
  });
}

void group_service_impl::seek(std::string group_id, std::string instance_id, std::vector<seek_request> seeks,
                              std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  // Resolve every seek to an offset first (beginning/end from the published bounds, timestamps
  // through list_offsets on the partition's shard), then apply all of them on the coordinator.
  struct gather {
    std::mutex mutex;
    std::vector<seek_request> seeks;
    std::vector<int64_t> offsets;
    std::optional<error> failure;
    std::atomic<size_t> remaining{0};
  };
  auto g = std::make_shared<gather>();
  g->seeks = std::move(seeks);
  g->offsets.resize(g->seeks.size());
  auto apply = [this, g, group_id, instance_id, done]() {
    on_coordinator(group_id, [this, g, group_id, instance_id, done](size_t shard, shard_state& st) {
      if (g->failure) return done(*g->failure);
      group::record_list records;
      auto s = prepared(shard, st, group_id, instance_id, records, done);
      if (!s) return;
      persist(shard, std::move(records), [](result<void>) {});
      if (*s && !(*s)->joined) {
        if (g->seeks.empty()) return done(base::ok_v);
        return done(error{errc::partition_not_owned, "consumer instance '" + instance_id + "' does not own " +
                                                         g->seeks.front().partition.directory_name() +
                                                         ": it has not subscribed or been assigned partitions"});
      }
      auto owned = st.coordinator.positions_for_fetch(group_id, instance_id);
      if (!owned.ok()) {
        return done(member_error(st, group_id, instance_id, owned.error()));
      }
      for (const auto& s : g->seeks) {
        bool is_owned = std::any_of(owned->begin(), owned->end(),
                                    [&](const group::fetch_position& f) { return f.partition == s.partition; });
        if (!is_owned) {
          return done(error{errc::partition_not_owned, "consumer instance '" + instance_id + "' does not own " +
                                                           s.partition.directory_name() + " now"});
        }
      }
      for (size_t i = 0; i < g->seeks.size(); ++i) {
        auto r = st.coordinator.seek(group_id, instance_id, g->seeks[i].partition, model::offset{g->offsets[i]});
        if (!r.ok()) return done(from_group(r.error()));
      }
      done(base::ok_v);
    });
  };
  g->remaining = g->seeks.size() + 1;
  auto finish_one = [g, apply]() {
    if (g->remaining.fetch_sub(1) == 1) apply();
  };
  for (size_t i = 0; i < g->seeks.size(); ++i) {
    const auto& s = g->seeks[i];
    if (s.kind == seek_kind::offset) {
      if (s.value < 0) {
        std::lock_guard lock(g->mutex);
        g->failure = error{errc::offset_out_of_range, "offset " + std::to_string(s.value) + " is negative"};
      }
      g->offsets[i] = s.value;
      finish_one();
      continue;
    }
    list_offsets_request req{s.partition,
                             s.kind == seek_kind::beginning ? offset_spec::earliest
                             : s.kind == seek_kind::end     ? offset_spec::latest
                                                            : offset_spec::timestamp,
                             s.value};
    auto record = [g, i, finish_one](const result<list_offsets_response>& r) {
      {
        std::lock_guard lock(g->mutex);
        if (!r.ok() && !g->failure) g->failure = r.error();
        if (r.ok()) g->offsets[i] = r->found_offset.value_or(model::offset{0}).value();
      }
      finish_one();
    };
    broker_.list_offsets(req, [this, record, tp = s.partition](result<list_offsets_response> r) {
      if (!r.ok() || r->found_offset) return record(r);
      // No record at or after the timestamp: the end of the log, like Kafka's offsetsForTimes,
      // from the leader (as the timestamp's answer was).
      broker_.list_offsets({tp, offset_spec::latest}, record);
    });
  }
  finish_one();
}

}  // namespace ringlog::broker::group_service_internal
