// Consumer groups on the broker (groups.h): each shard runs one group::group_coordinator for the
// groups whose __consumer_offsets partition it owns; every call hops to that shard, runs the
// pure state machine there, appends the records it returns, and answers once they are durable.
//
// This file: construction, loading a __consumer_offsets partition's groups when this node comes to
// lead it (and forgetting them when it stops), topic changes, the expiry sweep, and the append of
// the coordinator's records (persist). The calls are in the group_*.cc files beside it, their
// shared parts in group_service_impl.h.
// Kafka's counterpart: GroupMetadataManager (loadGroupsAndOffsets, removeGroupsForPartition,
// storeGroup) and GroupCoordinator's onElection/onResignation.

#include "group_service_impl.h"

#include "coordinator_write_error.h"

namespace ringlog::broker::group_service_internal {

error from_group(const group::error& e) {
  using gerrc = group::errc;
  using berrc = ringlog::broker::errc;
  switch (e.code) {
    case gerrc::invalid_group_id: return {berrc::invalid_group_id, e.message};
    case gerrc::group_id_not_found: return {berrc::group_id_not_found, e.message};
    case gerrc::unknown_member_id: return {berrc::unknown_member_id, e.message};
    case gerrc::illegal_generation: return {berrc::illegal_generation, e.message};
    case gerrc::partition_not_owned: return {berrc::partition_not_owned, e.message};
    case gerrc::inconsistent_subscription: return {berrc::inconsistent_subscription, e.message};
    case gerrc::inconsistent_group_protocol: return {berrc::inconsistent_group_protocol, e.message};
    case gerrc::invalid_regular_expression: return {berrc::invalid_regular_expression, e.message};
    case gerrc::unknown_topic_or_partition: return {berrc::unknown_topic_or_partition, e.message};
    case gerrc::partition_assigned_elsewhere: return {berrc::inconsistent_subscription, e.message};
    case gerrc::invalid_session_timeout: return {berrc::invalid_session_timeout, e.message};
    case gerrc::invalid_offset: return {berrc::offset_out_of_range, e.message};
    case gerrc::offset_metadata_too_large: return {berrc::offset_metadata_too_large, e.message};
    case gerrc::group_max_size_reached: return {berrc::group_max_size_reached, e.message};
    case gerrc::too_many_groups: return {berrc::throttling_quota_exceeded, e.message};
    // A request naming more partitions or topics than a named limit: the request's fault (422),
    // not a throttle (it answered 429 with the quota code: new user, session 24).
    case gerrc::too_many_partitions: return {berrc::invalid_request, e.message};
    case gerrc::group_not_empty: return {berrc::group_not_empty, e.message};
    case gerrc::duplicate_member_id: return {berrc::duplicate_consumer_instance, e.message};
    case gerrc::no_offset_for_partition: return {berrc::no_offset_for_partition, e.message};
    case gerrc::corrupt_message:
    case gerrc::unsupported_version: return {berrc::corrupt_message, e.message};
    case gerrc::rebalance_in_progress: return {berrc::rebalance_in_progress, e.message};
    case gerrc::member_id_required: return {berrc::member_id_required, e.message};
    case gerrc::fenced_instance_id: return {berrc::fenced_instance_id, e.message};
    case gerrc::group_subscribed_to_topic: return {berrc::group_subscribed_to_topic, e.message};
  }
  return {berrc::unknown_server_error, e.message};
}

std::string instance_key(std::string_view group_id, std::string_view member_id) {
  std::string k(group_id);
  k.push_back('\0');
  k.append(member_id);
  return k;
}

namespace {

/// Issue 30: whether a pattern of member `member_id` of `group_id` may match `topic`: for a REST or
/// WebSocket consumer instance, its owner may READ it (a Kafka consumer never sees a topic it may not
/// DESCRIBE and skips one it may not READ; an HTTP poll has no per-topic error to skip it with). Host "" (an instance's address is not kept): only
/// `*`-host ACLs count here; every poll still checks READ from the caller's own address.
bool pattern_may_match(const broker& b, const shard_state& st, std::string_view group_id, std::string_view member_id,
                       const std::string& topic) {
  if (!b.security().authorizer_enabled()) return true;
  auto it = st.instances.find(instance_key(group_id, member_id));
  if (it == st.instances.end()) return true;   // a Kafka client's member: its client resolves the regex
  auto owner = security::kafka_principal::parse(it->second.info.owner);   // "" (before issue 29): ANONYMOUS
  const security::acl_action read{security::resource_type::topic, topic, security::acl_operation::read};
  return b.security().authorize(owner.ok() ? owner.value() : security::kafka_principal{}, "", read).allowed();
}

}  // namespace

group_service_impl::group_service_impl(broker& b, group_host& host, runtime::shard_runtime& runtime,
                                       const base::clock& clock, const group_service_options& options)
    : broker_(b), host_(host), runtime_(runtime), clock_(clock), offsets_partitions_(options.offsets_partitions),
      expiry_interval_ms_(options.expiry_interval_ms), offsets_retention_ms_(options.offsets_retention_ms),
      offsets_retention_check_interval_ms_(options.offsets_retention_check_interval_ms) {
  RINGLOG_ASSERT_OP(offsets_partitions_, >=, 1);
  RINGLOG_ASSERT_OP(offsets_retention_ms_, >=, int64_t{1});
  RINGLOG_ASSERT_OP(offsets_retention_check_interval_ms_, >=, int64_t{1});
  loaded_ = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(offsets_partitions_));
  const uint64_t seed = static_cast<uint64_t>(clock_.now_ms());
  for (size_t s = 0; s < runtime_.shard_count(); ++s) {
    shards_.push_back(std::make_unique<shard_state>(seed ^ (s << 48), options.initial_rebalance_delay_ms));
    shard_state* st = shards_.back().get();
    // Kafka's first cleanup runs one check interval after start.
    st->next_offsets_retention_check_ms = clock_.now_ms() + offsets_retention_check_interval_ms_;
    st->coordinator.set_pattern_topic_filter(
        [this, st](std::string_view group_id, std::string_view member_id, const std::string& topic) {
          return pattern_may_match(broker_, *st, group_id, member_id, topic);
        });
  }
}

// ---------------------------------------------------------------- start-up and metadata

result<void> group_service_impl::replay_partition(size_t shard, int32_t p) {
  auto records = host_.read_internal(shard, p);
  // Not held here (a cluster places __consumer_offsets partitions on some brokers): no groups.
  if (!records.ok() && records.error().code == errc::unknown_topic_or_partition) return base::ok_v;
  if (!records.ok()) return records.error();
  const int64_t now = clock_.now_ms();
  auto& st = *shards_[shard];
  for (auto& r : records.value()) {
    if (!r.key) continue;
    auto key = group::decode_offsets_topic_key(*r.key);
    if (key.ok() && std::holds_alternative<group::consumer_instance_key>(*key)) {
      const auto& k = std::get<group::consumer_instance_key>(*key);
      if (!r.value) {
        st.instances.erase(instance_key(k.group_id, k.instance_id));
        continue;
      }
      auto v = group::decode_consumer_instance_value(*r.value);
      if (!v.ok()) {
        return error{errc::kafka_storage_error, std::string(consumer_offsets_topic) + "-" + std::to_string(p) +
                                                    " offset " + std::to_string(r.record_offset.value()) + ": " +
                                                    v.error().message};
      }
      st.instances[instance_key(k.group_id, k.instance_id)] = settings_of(k, *v, now);
      continue;
    }
    group::offsets_topic_record rec{std::move(*r.key), std::move(r.value)};
    auto applied = st.coordinator.replay(rec, now);
    if (!applied.ok()) {
      return error{errc::kafka_storage_error, std::string(consumer_offsets_topic) + "-" + std::to_string(p) +
                                                  " offset " + std::to_string(r.record_offset.value()) + ": " +
                                                  applied.error().message};
    }
  }
  // Instances whose member survived (static members) are joined; the others join again.
  for (auto& [k, settings] : st.instances) {
    if (partition_of(settings.info.group_id) != p) continue;
    const auto members = st.coordinator.describe_group(settings.info.group_id).members;
    settings.joined = std::any_of(members.begin(), members.end(), [&](const group::member_description& m) {
      return m.member_id == settings.info.instance_id;
    });
  }
  if (p >= 0 && p < offsets_partitions_) loaded_[static_cast<size_t>(p)].store(true, std::memory_order_release);
  return base::ok_v;
}

void group_service_impl::load_if_led(int32_t p) {
  if (loaded_[static_cast<size_t>(p)].load(std::memory_order_acquire) || !host_.leads_offsets_partition(p)) return;
  const size_t shard = host_.owner_shard(consumer_offsets_topic, p);
  unload_partition(shard, p);
  if (auto r = replay_partition(shard, p); !r.ok()) host_.report_error("group coordinator: " + r.error().message);
}

void group_service_impl::unload_partition(size_t shard, int32_t p) {
  if (p >= 0 && p < offsets_partitions_) loaded_[static_cast<size_t>(p)].store(false, std::memory_order_release);
  auto& st = *shards_[shard];
  const auto gone = st.coordinator.unload_groups([&](std::string_view group_id) { return partition_of(group_id) == p; });
  // The requests its members wait on go to the next coordinator (Kafka's onResignation).
  const error moved{errc::not_coordinator, std::string(consumer_offsets_topic) + "-" + std::to_string(p) +
                                              " is no longer led here: find the group's coordinator again"};
  auto answer_moved = [&moved](auto& waiters, const std::vector<group::classic_ticket>& tickets) {
    for (const auto ticket : tickets) {
      if (auto it = waiters.find(ticket); it != waiters.end()) {
        auto done = std::move(it->second);
        waiters.erase(it);
        done({moved, {}});   // a join_group_answer or sync_group_answer: the failure, no data
      }
    }
  };
  answer_moved(st.join_waiters, gone.joins);
  answer_moved(st.sync_waiters, gone.syncs);
  std::erase_if(st.instances, [&](const auto& entry) { return partition_of(entry.second.info.group_id) == p; });
}

void group_service_impl::offsets_partition_led(int32_t p, bool leads) {
  // Runs on the partition's shard (the broker calls it there, replication.cc): a new leader
  // coordinates the partition's groups from its replicated log; a former one forgets them.
  const size_t shard = host_.owner_shard(consumer_offsets_topic, p);
  unload_partition(shard, p);
  if (!leads) return;
  if (auto r = replay_partition(shard, p); !r.ok()) host_.report_error("group coordinator: " + r.error().message);
}

void group_service_impl::start(std::function<void(result<void>)> done) { replay_led_from(0, std::move(done)); }

void group_service_impl::replay_led_from(int32_t p, std::function<void(result<void>)> done) {
  // A node coordinates the groups of the __consumer_offsets partitions it leads; partitions whose
  // leadership comes later are replayed then (offsets_partition_led). One partition a task, on its
  // shard, the next posted from there: nothing waits on a shard (a simulation runs every shard on
  // one thread).
  while (p < offsets_partitions_ && !host_.leads_offsets_partition(p)) ++p;
  if (p == offsets_partitions_) {
    topics_changed();
    for (size_t s = 0; s < shards_.size(); ++s) {
      schedule_expiry(s);
      schedule_lag_sampling(s);
      schedule_classic_tick(s);
    }
    return done(base::ok_v);
  }
  const size_t shard = host_.owner_shard(consumer_offsets_topic, p);
  runtime_.post(shard, [this, shard, p, done = std::move(done)]() mutable {
    unload_partition(shard, p);
    if (auto r = replay_partition(shard, p); !r.ok()) return done(r.error());
    replay_led_from(p + 1, std::move(done));
  });
}

group::topic_map group_service_impl::current_topics() {
  group::topic_map topics;
  for (const auto& name : broker_.admin().list_topics(false)) {
    broker_.admin().describe_topic(name, [&topics, &name](result<topic_description> d) {
      if (d.ok()) topics[name] = static_cast<int32_t>(d->partitions.size());
    });
  }
  return topics;
}

void group_service_impl::topics_changed() {
  // Each shard reads the topics itself when it applies them: computed here and posted, an older
  // list (start() on the main thread) could land after a newer one (a topic created meanwhile,
  // from the controller shard) and leave its members without the new topic's partitions.
  for (size_t s = 0; s < shards_.size(); ++s) {
    runtime_.post(s, [this, s] {
      auto records = shards_[s]->coordinator.set_topics(current_topics(), clock_.now_ms());
      persist(s, std::move(records), [](result<void>) {});
    });
  }
}

void group_service_impl::topic_deleted(const std::string& topic) {
  for (size_t s = 0; s < shards_.size(); ++s) {
    runtime_.post(s, [this, s, topic] {
      auto records = shards_[s]->coordinator.delete_topic_offsets(topic);
      persist(s, std::move(records), [](result<void>) {});
    });
  }
  topics_changed();
}

void group_service_impl::schedule_expiry(size_t shard) {
  runtime_.post_after(shard, expiry_interval_ms_, [this, shard] {
    if (stopping_) return;
    auto& st = *shards_[shard];
    auto expired = st.coordinator.expire(clock_.now_ms());
    for (const auto& m : expired.removed) {
      const std::string key = instance_key(m.group_id, m.member_id);
      auto settings = st.instances.find(key);
      const std::string after = settings == st.instances.end()
                                    ? std::string()
                                    : " (" + std::to_string(settings->second.session_timeout_ms) + " ms, consumer.instance.timeout.ms)";
      st.remember_end(key, "expired: no request within its " + m.reason + after);
      if (st.instances.erase(key) > 0) expired.records.push_back(instance_tombstone(m.group_id, m.member_id));
    }
    // Instances that never joined keep their lease here.
    const int64_t now = clock_.now_ms();
    for (auto it = st.instances.begin(); it != st.instances.end();) {
      const instance_settings& s = it->second;
      if (s.joined || now < s.last_seen_ms + s.session_timeout_ms) {
        ++it;
        continue;
      }
      st.remember_end(it->first, "expired: no request within its session timeout (" +
                                     std::to_string(s.session_timeout_ms) + " ms, consumer.instance.timeout.ms)");
      expired.records.push_back(instance_tombstone(s.info.group_id, s.info.instance_id));
      it = st.instances.erase(it);
    }
    for (auto& t : st.tombstones_due) expired.records.push_back(std::move(t));
    st.tombstones_due.clear();
    if (now >= st.next_offsets_retention_check_ms) {
      st.next_offsets_retention_check_ms = now + offsets_retention_check_interval_ms_;
      expire_offsets(st, now, expired.records);
    }
    persist(shard, std::move(expired.records), [](result<void>) {});
    schedule_expiry(shard);
  });
}

void group_service_impl::expire_offsets(shard_state& st, int64_t now_ms, group::record_list& records) {
  // Instances sort by group id, then a NUL (instance_key): the first key at or after "group\0".
  const auto held = [&st](std::string_view group_id) {
    const std::string prefix = instance_key(group_id, "");
    auto it = st.instances.lower_bound(prefix);
    return it != st.instances.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  };
  auto expired = st.coordinator.expire_offsets(now_ms, offsets_retention_ms_, held);
  const int64_t minutes = offsets_retention_ms_ / 60'000;
  for (const auto& g : expired.groups) {
    if (g.group_removed) st.lag_history.erase(g.group_id);
    const size_t n = g.partitions.size();
    host_.report_info("group coordinator: expired the committed offsets of group '" + g.group_id + "' (" +
                      std::to_string(n) + (n == 1 ? " partition" : " partitions") +
                      "): no member and no commit for offsets.retention.minutes=" + std::to_string(minutes) +
                      (g.group_removed ? "; the group is removed" : ""));
  }
  for (auto& r : expired.records) records.push_back(std::move(r));
}

void group_service_impl::persist(size_t shard, group::record_list records, std::function<void(result<void>)> done) {
  if (records.empty()) return done(base::ok_v);
  if (stopping_) return done(coordinator_write_error(error{errc::broker_not_available, "the broker is shutting down"},
                                                   "the group's records", consumer_offsets_topic));
  std::map<int32_t, std::vector<model::record>> by_partition;
  for (auto& r : records) {
    auto key = group::decode_offsets_topic_key(r.key);
    RINGLOG_ASSERT(key.ok(), "the coordinator returned a record with an undecodable key");
    const std::string& group_id = std::visit([](const auto& k) -> const std::string& { return k.group_id; }, key.value());
    const int32_t p = partition_of(group_id);
    RINGLOG_ASSERT_OP(host_.owner_shard(consumer_offsets_topic, p), ==, shard);
    model::record rec;
    rec.key = std::move(r.key);
    rec.value = std::move(r.value);
    by_partition[p].push_back(std::move(rec));
  }
  struct gather {
    size_t remaining = 0;
    std::optional<error> failure;
    std::function<void(result<void>)> done;
  };
  auto g = std::make_shared<gather>();
  g->remaining = by_partition.size();
  g->done = std::move(done);
  for (auto& [p, recs] : by_partition) {
    // Every completion runs on this same shard: no lock needed.
    host_.append_internal(shard, p, std::move(recs), [g](result<void> r) {
      if (!r.ok() && !g->failure) g->failure = coordinator_write_error(r.error(), "the group's records", consumer_offsets_topic);
      if (--g->remaining == 0) g->done(g->failure ? result<void>(*g->failure) : result<void>(base::ok_v));
    });
  }
}

std::optional<log_bounds> group_service_impl::bounds_of(const model::topic_partition& tp) {
  std::optional<log_bounds> out;
  broker_.admin().describe_topic(tp.topic, [&out, &tp](result<topic_description> d) {
    if (!d.ok()) return;
    for (const auto& p : d->partitions) {
      if (p.partition == tp.partition) out = log_bounds{p.log_start_offset, p.high_watermark, p.high_watermark_established};
    }
  });
  return out;
}

void group_service_impl::leader_bounds_of(size_t shard, const std::vector<model::topic_partition>& partitions,
                                          std::optional<int64_t> timestamp_ms, std::function<void(leader_bounds)> done) {
  struct gather {
    leader_bounds out;
    group::partition_set failed;
    size_t remaining = 0;
    std::function<void(leader_bounds)> done;
  };
  auto g = std::make_shared<gather>();
  const size_t asks_each = timestamp_ms ? 3 : 2;   // earliest, latest[, timestamp]
  g->remaining = partitions.size() * asks_each;
  g->done = std::move(done);
  if (g->remaining == 0) return g->done(std::move(g->out));
  for (const auto& tp : partitions) {
    for (size_t k = 0; k < asks_each; ++k) {
      const offset_spec spec = k == 0 ? offset_spec::earliest : k == 1 ? offset_spec::latest : offset_spec::timestamp;
      broker_.list_offsets({tp, spec, timestamp_ms.value_or(0)}, [this, shard, g, tp, k](result<list_offsets_response> r) {
        // Every answer is counted on `shard`, one at a time: no lock.
        runtime_.post(shard, [g, tp, k, r = std::move(r)] {
          if (!r.ok()) {
            if (!g->out.failure) g->out.failure = r.error();
            g->failed.insert(tp);
          } else {
            auto& b = g->out.bounds[tp];
            if (k == 0) b.log_start_offset = r->found_offset.value_or(model::offset{0});
            if (k == 1) b.high_watermark = r->found_offset.value_or(model::offset{0});
            if (k == 2) b.offset_for_timestamp = r->found_offset;
          }
          if (--g->remaining > 0) return;
          for (const auto& f : g->failed) g->out.bounds.erase(f);
          g->done(std::move(g->out));
        });
      });
    }
  }
}

}  // namespace ringlog::broker::group_service_internal

namespace ringlog::broker {

error not_coordinator_refusal(const std::string& group_id, const group_coordinator_route& route) {
  const std::string partition = std::string(consumer_offsets_topic) + "-" + std::to_string(route.offsets_partition);
  switch (route.where) {
    case group_coordinator_route::place::here:
      return error{errc::coordinator_load_in_progress, "this broker is becoming the coordinator of group '" + group_id +
                                                           "' (the new leader of " + partition + "): retry"};
    case group_coordinator_route::place::peer:
      return error{errc::not_coordinator, "group '" + group_id + "' is coordinated by " + route.description +
                                              " (the leader of " + partition +
                                              "), not by this broker: send the group's calls there"};
    case group_coordinator_route::place::none: break;
  }
  return error{errc::not_coordinator,
               "group '" + group_id + "' has no coordinator now: " + partition + " has no leader; retry"};
}

std::unique_ptr<group_service> make_group_service(broker& b, group_host& host, runtime::shard_runtime& runtime,
                                                  const base::clock& clock, group_service_options options) {
  return std::make_unique<group_service_internal::group_service_impl>(b, host, runtime, clock, options);
}

}  // namespace ringlog::broker
