// The Kafka protocol's group calls from the Kafka listener: JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup (the classic protocol, with its tick and the delivery of its answers once their
// records are durable), OffsetCommit, TxnOffsetCommit and the end of a transaction's pending
// offsets, OffsetDelete and OffsetFetch.
// Kafka's counterpart: GroupCoordinator's handleJoinGroup, handleSyncGroup, handleHeartbeat,
// handleLeaveGroup, handleCommitOffsets, handleTxnCommitOffsets, scheduleHandleTxnCompletion,
// handleDeleteOffsets and handleFetchOffsets, with KafkaApis' unknown-partition check.

#include "group_service_impl.h"

namespace ringlog::broker::group_service_internal {
namespace {

/// How often each shard runs its coordinator's classic_tick: how late, at most, a classic
/// group's initial-delay or rebalance-timeout completion and a session expiry are noticed; one
/// pass over the shard's groups costs little at this rate.
constexpr int64_t classic_tick_interval_ms = 100;

}  // namespace

void group_service_impl::schedule_classic_tick(size_t shard) {
  runtime_.post_after(shard, classic_tick_interval_ms, [this, shard] {
    if (stopping_) return;
    deliver(shard, shards_[shard]->coordinator.classic_tick(clock_.now_ms()));
    schedule_classic_tick(shard);
  });
}

void group_service_impl::deliver(size_t shard, group::classic_effects effects, std::function<void(result<void>)> after) {
  auto& st = *shards_[shard];
  struct answers {
    std::vector<std::pair<std::function<void(join_group_answer)>, group::classic_join_response>> joins;
    std::vector<std::pair<std::function<void(sync_group_answer)>, group::classic_sync_response>> syncs;
  };
  auto a = std::make_shared<answers>();
  for (auto& [ticket, response] : effects.joins) {
    auto it = st.join_waiters.find(ticket);
    RINGLOG_ASSERT(it != st.join_waiters.end(), "the coordinator answered a JoinGroup ticket it was never given");
    a->joins.emplace_back(std::move(it->second), std::move(response));
    st.join_waiters.erase(it);
  }
  for (auto& [ticket, response] : effects.syncs) {
    auto it = st.sync_waiters.find(ticket);
    RINGLOG_ASSERT(it != st.sync_waiters.end(), "the coordinator answered a SyncGroup ticket it was never given");
    a->syncs.emplace_back(std::move(it->second), std::move(response));
    st.sync_waiters.erase(it);
  }
  persist(shard, std::move(effects.records), [a, after = std::move(after)](result<void> stored) {
    for (auto& [done, response] : a->joins) {
      join_group_answer answer;
      if (response.failure) answer.failure = from_group(*response.failure);
      else if (!stored.ok()) answer.failure = stored.error();
      response.failure.reset();
      answer.data = std::move(response);
      done(std::move(answer));
    }
    for (auto& [done, response] : a->syncs) {
      sync_group_answer answer;
      if (response.failure) answer.failure = from_group(*response.failure);
      else if (!stored.ok()) answer.failure = stored.error();
      response.failure.reset();
      answer.data = std::move(response);
      done(std::move(answer));
    }
    if (after) after(stored);
  });
}

void group_service_impl::commit_standalone(
    std::string group_id, std::vector<group::offset_commit> offsets,
    std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, offsets = std::move(offsets), done = std::move(done)](size_t shard,
                                                                                                 shard_state& st) {
    auto r = st.coordinator.commit_offsets_standalone(group_id, offsets, clock_.now_ms());
    if (!r.ok()) return done(from_group(r.error()));
    persist(shard, std::move(r->records), [done, stored = r->committed](result<void> p) {
      if (!p.ok()) return done(p.error());
      done(stored);
    });
  });
}

void group_service_impl::join_group(std::string group_id, group::classic_join_request request,
                                    std::function<void(join_group_answer)> done) {
  if (stopping_) return done(join_group_answer{error{errc::broker_not_available, "the broker is shutting down"}, {}});
  if (auto refused = not_coordinator(group_id)) return done(join_group_answer{*refused, {}});
  on_coordinator(group_id, [this, group_id, request = std::move(request), done = std::move(done)](
                               size_t shard, shard_state& st) mutable {
    const group::classic_ticket ticket = st.next_ticket++;
    st.join_waiters.emplace(ticket, std::move(done));
    auto effects = st.coordinator.classic_join(group_id, request, ticket, clock_.now_ms());
    log_http_held_refusal(st, group_id, effects, ticket);
    deliver(shard, std::move(effects));
  });
}

void group_service_impl::log_http_held_refusal(shard_state& st, const std::string& group_id,
                                               const group::classic_effects& effects, group::classic_ticket ticket) {
  auto it = std::find_if(effects.joins.begin(), effects.joins.end(), [&](const auto& j) { return j.first == ticket; });
  if (it == effects.joins.end() || !it->second.failure) return;
  if (it->second.failure->code != group::errc::inconsistent_group_protocol) return;
  if (st.coordinator.managed_member_count(group_id) == 0 || st.http_held_refusals_logged.contains(group_id)) return;
  if (st.http_held_refusals_logged.size() >= http_held_refusals_logged_max) st.http_held_refusals_logged.clear();
  st.http_held_refusals_logged.insert(group_id);
  host_.report_info("group coordinator: group '" + group_id +
                    "' is held by HTTP consumers: refused a Kafka client's JoinGroup with INCONSISTENT_GROUP_PROTOCOL "
                    "(23), which carries no reason to the client: " + it->second.failure->message +
                    " (logged once per group)");
}

void group_service_impl::sync_group(std::string group_id, group::classic_sync_request request,
                                    std::function<void(sync_group_answer)> done) {
  if (stopping_) return done(sync_group_answer{error{errc::broker_not_available, "the broker is shutting down"}, {}});
  if (auto refused = not_coordinator(group_id)) return done(sync_group_answer{*refused, {}});
  on_coordinator(group_id, [this, group_id, request = std::move(request), done = std::move(done)](
                               size_t shard, shard_state& st) mutable {
    const group::classic_ticket ticket = st.next_ticket++;
    st.sync_waiters.emplace(ticket, std::move(done));
    deliver(shard, st.coordinator.classic_sync(group_id, request, ticket, clock_.now_ms()));
  });
}

void group_service_impl::heartbeat_group(std::string group_id, std::string member_id,
                                         std::optional<std::string> group_instance_id, int32_t generation,
                                         std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, member_id, group_instance_id, generation, done = std::move(done)](
                               size_t, shard_state& st) {
    auto r = st.coordinator.classic_heartbeat(group_id, member_id, group_instance_id,
                                              group::generation_id(generation), clock_.now_ms());
    if (!r.ok()) return done(from_group(r.error()));
    done(base::ok_v);
  });
}

void group_service_impl::leave_group(std::string group_id, std::vector<group::classic_member_identity> members,
                                     std::function<void(result<std::vector<std::optional<error>>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, members = std::move(members), done = std::move(done)](
                               size_t shard, shard_state& st) {
    auto left = st.coordinator.classic_leave(group_id, members, clock_.now_ms());
    std::vector<std::optional<error>> per_member;
    for (const auto& m : left.members) {
      per_member.push_back(m ? std::optional<error>(from_group(*m)) : std::nullopt);
    }
    deliver(shard, std::move(left.effects), [done, per_member](result<void> stored) {
      if (!stored.ok()) return done(stored.error());
      done(per_member);
    });
  });
}

offset_commit_answer group_service_impl::refuse_unknown_partitions(std::vector<group::offset_commit>& offsets) const {
  offset_commit_answer answer;
  std::erase_if(offsets, [&](const group::offset_commit& o) {
    auto exists = broker_.admin().check_partition_exists(o.partition);
    if (exists.ok()) return false;
    answer.refused.emplace(o.partition, exists.error());
    return true;
  });
  return answer;
}

void group_service_impl::commit_kafka(std::string group_id, std::string member_id,
                                      std::optional<std::string> group_instance_id, int32_t generation,
                                      std::vector<group::offset_commit> offsets,
                                      std::function<void(result<offset_commit_answer>)> done) {
  auto answer = refuse_unknown_partitions(offsets);
  if (offsets.empty() && !answer.refused.empty()) return done(std::move(answer));
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, member_id, group_instance_id, generation, offsets = std::move(offsets),
                            answer = std::move(answer), done = std::move(done)](size_t shard, shard_state& st) mutable {
    auto r = st.coordinator.commit_offsets_kafka(group_id, member_id, group_instance_id, generation, offsets,
                                                 clock_.now_ms());
    if (!r.ok()) return done(from_group(r.error()));
    answer.committed = r->committed;
    persist(shard, std::move(r->records), [done, answer = std::move(answer)](result<void> p) {
      if (!p.ok()) return done(p.error());
      done(answer);
    });
  });
}

void group_service_impl::txn_commit(std::string group_id, std::string member_id,
                                    std::optional<std::string> group_instance_id, int32_t generation,
                                    model::producer_id producer_id, std::vector<group::offset_commit> offsets,
                                    std::function<void(result<offset_commit_answer>)> done) {
  auto answer = refuse_unknown_partitions(offsets);
  if (offsets.empty() && !answer.refused.empty()) return done(std::move(answer));
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, member_id, group_instance_id, generation, producer_id,
                            offsets = std::move(offsets), answer = std::move(answer),
                            done = std::move(done)](size_t shard, shard_state& st) mutable {
    auto r = st.coordinator.txn_commit_offsets(group_id, member_id, group_instance_id, generation, producer_id.value(),
                                               offsets, clock_.now_ms());
    if (!r.ok()) return done(from_group(r.error()));
    answer.committed = r->committed;
    persist(shard, std::move(r->records), [done, answer = std::move(answer)](result<void> p) {
      if (!p.ok()) return done(p.error());
      done(answer);
    });
  });
}

void group_service_impl::complete_txn_offsets(int32_t partition, model::producer_id producer_id, bool committed,
                                              std::function<void(result<void>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  const size_t shard = host_.owner_shard(consumer_offsets_topic, partition);
  runtime_.post(shard, [this, shard, partition, producer_id, committed, done = std::move(done)] {
    if (!host_.leads_offsets_partition(partition)) {
      return done(error{errc::not_coordinator, std::string(consumer_offsets_topic) + "-" + std::to_string(partition) +
                                                   " is not led by this broker"});
    }
    auto& st = *shards_[shard];
    auto records = st.coordinator.complete_txn_offsets(
        producer_id.value(), committed, [this, partition](std::string_view g) { return partition_of(g) == partition; },
        clock_.now_ms());
    persist(shard, std::move(records), std::move(done));
  });
}

void group_service_impl::delete_offsets(
    std::string group_id, group::partition_set partitions,
    std::function<void(result<group::partition_map<std::optional<error>>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, partitions = std::move(partitions), done = std::move(done)](
                               size_t shard, shard_state& st) {
    auto r = st.coordinator.delete_offsets(group_id, partitions);
    if (!r.ok()) return done(from_group(r.error()));
    group::partition_map<std::optional<error>> out;
    for (const auto& [tp, e] : r->partitions) out[tp] = e ? std::optional<error>(from_group(*e)) : std::nullopt;
    persist(shard, std::move(r->records), [done, out = std::move(out)](result<void> p) {
      if (!p.ok()) return done(p.error());
      done(out);
    });
  });
}

void group_service_impl::group_committed(
    std::string group_id, std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [group_id, done = std::move(done)](size_t, shard_state& st) {
    auto all = st.coordinator.committed_offsets(group_id);
    if (!all.ok()) return done(group::partition_map<group::committed_offset>{});
    done(std::move(all).value());
  });
}

void group_service_impl::fetch_offsets(std::string group_id, std::function<void(result<group_offsets>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [group_id, done = std::move(done)](size_t, shard_state& st) {
    group_offsets out;
    if (auto all = st.coordinator.committed_offsets(group_id); all.ok()) out.committed = std::move(all).value();
    out.unstable = st.coordinator.pending_txn_partitions(group_id);
    done(std::move(out));
  });
}

}  // namespace ringlog::broker::group_service_internal
