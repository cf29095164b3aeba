// Retries and dead letters of a REST consumer instance (issue 18, docs/retries.md): a nack copies
// records to the group's retry topic (its dead-letter topic past max.delivery.attempts) and moves
// the committed offset past what was nacked; namings_of gives the dead-letter calls the group's
// topic names.
// Kafka has no nack; the counterpart is Spring Kafka's non-blocking retry topics
// (RetryTopicConfiguration, DeadLetterPublishingRecoverer), done by the broker here.

#include "group_service_impl.h"

namespace ringlog::broker::group_service_internal {

std::vector<delay::retry_policy> group_service_impl::namings_of(const shard_state& st, const std::string& group_id) const {
  std::vector<delay::retry_policy> out{broker_retry_defaults()};
  const std::string prefix = instance_key(group_id, "");
  for (auto it = st.instances.lower_bound(prefix); it != st.instances.end() && it->first.starts_with(prefix); ++it) {
    const delay::retry_policy p = policy_of(&it->second);
    const bool known = std::any_of(out.begin(), out.end(), [&](const delay::retry_policy& o) {
      return o.retry_topic_template == p.retry_topic_template && o.dead_letter_topic_template == p.dead_letter_topic_template;
    });
    if (!known) out.push_back(p);
  }
  return out;
}

namespace {

/// Why consumer instance `instance_id` may not nack `n` now, or nullopt: it must hold the
/// partition (partition_not_owned) and have been handed the offset, below its position
/// (offset_out_of_range); an offset below the group's committed one it never nacked
/// (`repeated` false) is refused too: a commit passed it before any nack, so a retry copy now
/// would come after the group moved on, and answering 204 writing nothing lost the record's retry
/// silently (the new user of session 30: a WebSocket commit covers every record sent so far).
std::optional<error> nack_refusal(const nack_request& n, const std::string& instance_id,
                                  const std::vector<group::fetch_position>& positions,
                                  const group::partition_map<group::committed_offset>& committed, bool repeated) {
  auto pos = std::find_if(positions.begin(), positions.end(),
                          [&](const group::fetch_position& fp) { return fp.partition == n.partition; });
  if (pos == positions.end()) {
    return error{errc::partition_not_owned, "nack refused: consumer instance '" + instance_id +
                                                "' does not hold partition " + n.partition.directory_name() +
                                                " now (never assigned, or revoked)"};
  }
  if (pos->source != group::fetch_source::position || !pos->fetch_offset || n.offset >= *pos->fetch_offset) {
    return error{errc::offset_out_of_range,
                 "nack refused: offset " + std::to_string(n.offset.value()) + " of " + n.partition.directory_name() +
                     " was not handed to consumer instance '" + instance_id + "'" +
                     (pos->fetch_offset ? " (its position is " + std::to_string(pos->fetch_offset->value()) + ")"
                                        : " (it has read nothing of it yet)")};
  }
  auto c = committed.find(n.partition);
  if (c == committed.end() || n.offset >= c->second.committed || repeated) return std::nullopt;
  return error{errc::offset_out_of_range, "nack refused: offset " + std::to_string(n.offset.value()) + " of " +
                                              n.partition.directory_name() +
                                              " is already committed (the group's committed offset is " +
                                              std::to_string(c->second.committed.value()) +
                                              "): nack a record before committing past it; nothing was written"};
}

}  // namespace

void group_service_impl::nack(std::string group_id, std::string instance_id, std::vector<nack_request> nacks,
                              std::function<void(result<void>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (nacks.empty()) return done(error{errc::invalid_request, "offsets: at least one record to nack is required"});
  if (nacks.size() > nacks_per_call_max) {
    return done(error{errc::invalid_request, "offsets: " + std::to_string(nacks.size()) + " records; one nack names at most " +
                                                 std::to_string(nacks_per_call_max)});
  }
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, nacks = std::move(nacks), done = std::move(done)](
                               size_t shard, shard_state& st) mutable {
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    if (*s && !(*s)->joined) {
      persist(shard, std::move(records), [](result<void>) {});
      return done(error{errc::partition_not_owned, "nack refused: consumer instance '" + instance_id +
                                                       "' holds no partition: it has not subscribed or been assigned"});
    }
    auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
    if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
    records.insert(records.end(), hb->records.begin(), hb->records.end());
    auto positions = st.coordinator.positions_for_fetch(group_id, instance_id);
    if (!positions.ok()) return done(member_error(st, group_id, instance_id, positions.error()));
    group::partition_map<group::committed_offset> committed;
    if (auto c = st.coordinator.committed_offsets(group_id); c.ok()) committed = std::move(c).value();
    instance_settings* settings = *s;
    // Every nack is checked before anything is written: all or nothing for what the member may nack.
    std::vector<nack_request> fresh;
    std::vector<std::string> keys;
    for (auto& n : nacks) {
      const std::string key = delay::source_text(n.partition.topic, n.partition.partition.value(), n.offset);
      const bool repeated = settings && settings->nacked.contains(key);
      if (auto refused = nack_refusal(n, instance_id, *positions, committed, repeated)) {
        persist(shard, std::move(records), [](result<void>) {});
        return done(*refused);
      }
      if (repeated || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      keys.push_back(key);
      fresh.push_back(std::move(n));
    }
    if (settings) {
      for (const auto& k : keys) {
        settings->nacked.insert(k);
        settings->nacked_order.push_back(k);
      }
      while (settings->nacked_order.size() > nacked_remembered_max) {
        settings->nacked.erase(settings->nacked_order.front());
        settings->nacked_order.pop_front();
      }
    }
    const delay::retry_policy policy = policy_of(settings);
    // The copies are written off the coordinator (reads and produces may cross brokers); a
    // failure forgets the keys again, so the member's retry of the nack writes them.
    auto forget = [this, group_id, instance_id, keys](const error& e, std::function<void(result<void>)> answer) {
      on_coordinator(group_id, [group_id, instance_id, keys, e, answer](size_t, shard_state& st2) {
        auto it = st2.instances.find(instance_key(group_id, instance_id));
        if (it != st2.instances.end()) {
          for (const auto& k : keys) it->second.nacked.erase(k);
        }
        answer(e);
      });
    };
    persist(shard, std::move(records), [this, group_id, instance_id, fresh = std::move(fresh), policy, forget,
                                        done = std::move(done)](result<void> r) mutable {
      if (!r.ok()) return forget(r.error(), done);
      if (fresh.empty()) return done(base::ok_v);
      retries::route_nacks(broker_, group_id, fresh, policy, clock_.now_ms(),
                           [this, group_id, instance_id, fresh, forget, done](result<std::vector<retries::nack_write>> w) {
                             if (!w.ok()) return forget(w.error(), done);
                             retries::write_nacks(broker_, std::move(w).value(),
                                                  [this, group_id, instance_id, fresh, forget, done](result<void> r) {
                                                    if (!r.ok()) return forget(r.error(), done);
                                                    commit_nacked(group_id, instance_id, fresh, done);
                                                  });
                           });
    });
  });
}

void group_service_impl::commit_nacked(std::string group_id, std::string instance_id, std::vector<nack_request> nacks,
                                       std::function<void(result<void>)> done) {
  on_coordinator(group_id, [this, group_id, instance_id, nacks = std::move(nacks), done = std::move(done)](
                               size_t shard, shard_state& st) {
    auto it = st.instances.find(instance_key(group_id, instance_id));
    auto committed = st.coordinator.committed_offsets(group_id);
    if (it == st.instances.end() || !committed.ok()) return done(base::ok_v);   // the copies are stored: ok
    std::vector<group::processed_offset> advance;
    group::partition_set seen;
    for (const auto& n : nacks) {
      if (!seen.insert(n.partition).second) continue;
      auto c = committed->find(n.partition);
      if (c == committed->end()) continue;
      model::offset next = c->second.committed;
      const auto nacked = [&](model::offset o) {
        return it->second.nacked.contains(delay::source_text(n.partition.topic, n.partition.partition.value(), o));
      };
      // Bounded by the remembered nacks.
      for (size_t i = 0; i < nacked_remembered_max && nacked(next); ++i) next = next + 1;
      if (next > c->second.committed) advance.push_back({n.partition, next - 1, c->second.metadata});
    }
    if (advance.empty()) return done(base::ok_v);
    auto r = st.coordinator.commit_processed(group_id, instance_id, std::nullopt, advance, clock_.now_ms());
    if (!r.ok()) return done(base::ok_v);   // revoked meanwhile: the copies are stored, the owner commits
    persist(shard, std::move(r->records), [done](result<void> p) {
      if (!p.ok()) return done(p.error());
      done(base::ok_v);
    });
  });
}

}  // namespace ringlog::broker::group_service_internal
