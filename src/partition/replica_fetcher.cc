// The follower's side of replication (ringlog/partition/replica_fetcher.h; design.md section 6,
// Kafka's ReplicaFetcherThread, KIP-101/279/320). The partitions one shard follows from one leader
// form a fetch session: one Fetch over the cluster listener names each of them with its fetch
// offset (= its log end offset, fsynced first under the default flush policy) and the epoch of
// its last batch. Each partition of the answer is appended as it is (partition_log's
// append_replicated), and the high watermark learned; the next fetch goes once every partition of
// the answer is durable, and reports them all (Kafka's AbstractFetcherThread: a round per fetch,
// one fetch per leader, where a loop per partition cost one round trip per partition). A
// follower whose last epoch or offset is not on the leader's log is told the diverging epoch and
// its end offset and truncates there (KIP-320's DivergingEpoch), never to the high watermark. And
// the per-shard replication tick.

#include <algorithm>
#include <iterator>
#include <utility>

#include "ringlog/partition/replica_fetcher.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/partition/errc.h"
#include "ringlog/protocol/error_codes.h"
#include "ringlog/rpc/requests.h"

namespace ringlog::partition {
namespace {

/// Fetch as followers send it: v15 carries the replica id in ReplicaState and names topics by id.
constexpr int16_t replica_fetch_version = 15;
/// How often each shard checks its partitions' ISR, acks=all deadlines and idle followers. A
/// quarter of a second keeps ISR shrinks within replica.lag.time.max.ms + 250 ms.
constexpr int64_t replication_tick_ms = 250;
/// A follower fetch's timeout beyond the leader's long-poll: a leader that does not answer within
/// this is treated as unreachable and the fetch is retried (after replica.fetch.backoff.ms).
constexpr int64_t replica_fetch_timeout_slack_ms = 5000;

using namespace protocol::error_codes;   // Kafka's error codes on the wire between brokers

bool contains(const std::vector<int32_t>& set, int32_t id) { return std::find(set.begin(), set.end(), id) != set.end(); }

/// Adds `rt` to a follower's Fetch: at its log end offset, with the epoch of its last batch
/// (KIP-320) and its log start offset (KIP-107); partitions of one topic that follow each other
/// share its entry.
void name_in_request(protocol::fetch_request_data& request, const partition_runtime& rt, int32_t partition_max_bytes) {
  if (request.topics.empty() || request.topics.back().topic_id != rt.topic_id) {
    protocol::fetch_request_data::fetch_topic topic;
    topic.topic_id = rt.topic_id;
    request.topics.push_back(std::move(topic));
  }
  protocol::fetch_request_data::fetch_partition part;
  part.partition = rt.partition;
  part.current_leader_epoch = rt.epoch.value();
  part.fetch_offset = rt.log->log_end_offset().value();
  const auto& epochs = rt.log->leader_epochs();
  part.last_fetched_epoch = epochs.empty() ? -1 : epochs.rbegin()->first;
  part.log_start_offset = rt.log->log_start_offset().value();
  part.partition_max_bytes = partition_max_bytes;
  request.topics.back().partitions.push_back(part);
}

}  // namespace

replica_fetcher::replica_fetcher(replica_fetcher_host& host, replica_fetch_settings settings, const base::clock& clock,
                                 runtime::shard_runtime& runtime, rpc::transport* cluster_transport,
                                 const std::atomic<bool>& stopping, replica_fetch_server& leader_side)
    : host_(host),
      settings_(settings),
      clock_(clock),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      stopping_(stopping),
      leader_side_(leader_side),
      sessions_(runtime.shard_count()) {}

bool replica_fetcher::follows(const partition_runtime& rt) const {
  return rt.leader_id >= 0 && rt.leader_id != settings_.node_id && contains(rt.replicas, settings_.node_id);
}

// ---------------------------------------------------------------- per-shard tick

void replica_fetcher::schedule_replication_tick(size_t shard) {
  std::weak_ptr<int> alive = lifetime_;
  runtime_.post_after(shard, replication_tick_ms, [this, shard, alive] {
    if (alive.expired() || stopping_) return;
    replication_tick(shard);
    schedule_replication_tick(shard);
  });
}

void replica_fetcher::replication_tick(size_t shard) {
  const int64_t now = clock_.now_ms();
  host_.for_each_replica(shard, [&](const std::shared_ptr<partition_runtime>& rt) {
    if (rt->deleted) return;
    if (rt->leader) {
      leader_side_.leader_tick(shard, rt, now);
    } else if (!rt->follower_fetching && follows(*rt)) {
      start_follower_fetch(shard, rt);
    }
  });
}

// ---------------------------------------------------------------- fetch sessions

/// The partitions one shard follows from one leader. At most one fetch is current: one sent while
/// another is in flight (a member joined, or came back from a backoff) supersedes it, and the
/// older answer is dropped (the leader answers a superseded parked fetch at once).
struct replica_fetcher::session {
  struct member {
    std::weak_ptr<partition_runtime> rt;
    uint64_t generation = 0;        // rt->follower_generation when it joined
    int64_t ready_at_ms = 0;        // monotonic: after a failure or the follower throttle, not before
    uint64_t fetch_id = 0;          // the fetch that named it last (0: none)
    model::offset fetch_offset{0};  // its offset in that fetch
  };
  int32_t leader_id = -1;
  /// By topic name and partition: an order that does not depend on addresses, so the simulator
  /// replays a seed exactly (a replica re-created under the same name replaces the entry).
  std::map<std::pair<std::string, int32_t>, member> members;
  uint64_t fetch_id = 0;      // the current fetch
  bool in_flight = false;     // the current fetch is sent and not answered
  size_t syncing = 0;         // members of the last answer whose append is not durable yet
  int64_t wakeup_at_ms = 0;   // monotonic: a timer to fetch then is set (0: none)
  bool kick_posted = false;   // a kick for members that joined is queued on the shard
};

void replica_fetcher::start_follower_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (rt->follower_fetching || cluster_transport_ == nullptr) return;
  rt->follower_fetching = true;
  auto s = session_of(shard, rt->leader_id);
  s->members[{rt->topic, rt->partition}] = session::member{rt, rt->follower_generation};
  // After the current task: the replicas a metadata change starts following together (a topic's
  // creation, a broker's start, a leader's failover) join one fetch, not one each.
  if (s->kick_posted) return;
  s->kick_posted = true;
  runtime_.post(shard, [this, shard, s, alive = std::weak_ptr<int>(lifetime_)] {
    if (alive.expired()) return;
    s->kick_posted = false;
    kick(shard, s);
  });
}

void replica_fetcher::new_follower_generation(partition_runtime& rt) {
#ifdef RINGLOG_BROKER_BREAK_TRUNCATE_TO_HIGH_WATERMARK
  // Negative control of tests/sim/cluster_sim: a replica that starts following truncates to its
  // high watermark (the rule before KIP-101), with truncation_offset broken likewise.
  if (!rt.leader && !rt.deleted && rt.leader_id >= 0) {   // static: no node id here; a leader has rt.leader
    (void)rt.log->truncate_to(rt.log->high_watermark());
  }
#endif
  ++rt.follower_generation;
  // Its session drops the entry of the previous generation when it next looks (prune); the new
  // leader's session takes it at once, even while a fetch to a former leader that does not answer
  // (paused, cut off: up to replica.fetch.wait.max.ms + replica_fetch_timeout_slack_ms) is still
  // pending, so the in-sync replicas the new leader needs for acks=all keep up (newcomer
  // finding 6: waiting for that answer added ~2 s to a leader pause).
  rt.follower_fetching = false;
}

std::shared_ptr<replica_fetcher::session> replica_fetcher::session_of(size_t shard, int32_t leader_id) {
  auto& slot = sessions_[shard][leader_id];
  if (!slot) {
    slot = std::make_shared<session>();
    slot->leader_id = leader_id;
  }
  return slot;
}

void replica_fetcher::kick(size_t shard, const std::shared_ptr<session>& s) {
  if (s->syncing > 0) return;   // the round's end fetches for every member
  if (s->in_flight) {
    const int64_t now = clock_.monotonic_ms();
    const bool left_out = std::any_of(s->members.begin(), s->members.end(), [&](const auto& entry) {
      return entry.second.fetch_id != s->fetch_id && entry.second.ready_at_ms <= now;
    });
    if (!left_out) return;
  }
  send_session_fetch(shard, s);
}

void replica_fetcher::prune(size_t shard, session& s) {
  std::vector<std::shared_ptr<partition_runtime>> elsewhere;
  for (auto it = s.members.begin(); it != s.members.end();) {
    auto rt = it->second.rt.lock();
    if (rt && rt->follower_generation == it->second.generation && !stopping_ && !rt->deleted && !rt->leader &&
        rt->leader_id == s.leader_id) {
      ++it;
      continue;
    }
    // A newer generation owns the flag (new_follower_generation). In this one the replica leads,
    // has no leader or is deleted (or the broker stops): it leaves, and the flag with it; found
    // by tests/cluster: keeping the flag left a follower that never fetched again.
    if (rt && rt->follower_generation == it->second.generation) {
      rt->follower_fetching = false;
      if (!stopping_ && !rt->deleted && !rt->leader && follows(*rt)) elsewhere.push_back(rt);
    }
    it = s.members.erase(it);
  }
  for (auto& rt : elsewhere) start_follower_fetch(shard, rt);
}

void replica_fetcher::schedule_wakeup(size_t shard, const std::shared_ptr<session>& s, int64_t at_ms) {
  if (s->wakeup_at_ms != 0 && s->wakeup_at_ms <= at_ms) return;
  s->wakeup_at_ms = at_ms;
  const int64_t delay_ms = std::max<int64_t>(at_ms - clock_.monotonic_ms(), 0);
  runtime_.post_after(shard, delay_ms, [this, shard, s, at_ms, alive = std::weak_ptr<int>(lifetime_)] {
    if (alive.expired()) return;
    if (s->wakeup_at_ms == at_ms) s->wakeup_at_ms = 0;
    kick(shard, s);
  });
}

void replica_fetcher::send_session_fetch(size_t shard, const std::shared_ptr<session>& s) {
  prune(shard, *s);
  ++s->fetch_id;   // an answer to any earlier fetch is dropped from now on
  s->in_flight = false;
  if (s->members.empty()) {
    auto& shard_sessions = sessions_[shard];
    if (auto it = shard_sessions.find(s->leader_id); it != shard_sessions.end() && it->second == s) {
      shard_sessions.erase(it);
    }
    return;
  }
  const int64_t now = clock_.monotonic_ms();
  // KIP-73 on the follower's side: partitions whose ISR this broker is not in take from the
  // broker-wide bucket of follower.replication.throttled.rate; while it is empty they wait (the
  // answer's bytes are taken when it comes: on_session_answer). In-sync partitions never wait.
  int64_t throttled_for_ms = -1;
  int64_t earliest_ms = 0;
  protocol::fetch_request_data request;
  // The list starts one member further with each fetch, so when the answer's budget
  // (replica.fetch.response.max.bytes) runs out it is not always the same partitions that wait.
  auto it = s->members.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(s->fetch_id % s->members.size()));
  for (size_t i = 0; i < s->members.size(); ++i, ++it) {
    if (it == s->members.end()) it = s->members.begin();
    auto& m = it->second;
    auto rt = m.rt.lock();   // alive: prune kept it
    if (m.ready_at_ms <= now && !contains(rt->isr, settings_.node_id)) {
      if (throttled_for_ms < 0) {
        throttled_for_ms =
            host_.acquire_follower_throttle(host_.follower_replication_throttled_rate(), clock_.now_ms());
      }
      if (throttled_for_ms > 0) m.ready_at_ms = now + throttled_for_ms;
    }
    if (m.ready_at_ms > now) {
      earliest_ms = earliest_ms == 0 ? m.ready_at_ms : std::min(earliest_ms, m.ready_at_ms);
      continue;
    }
    m.fetch_id = s->fetch_id;
    m.fetch_offset = rt->log->log_end_offset();
    name_in_request(request, *rt, settings_.replica_fetch_max_bytes);
  }
  if (earliest_ms != 0) schedule_wakeup(shard, s, earliest_ms);
  if (request.topics.empty()) return;   // every member waits: the wakeup fetches
  request.replica_state.replica_id = settings_.node_id;
  // KIP-903: the leader counts this process's fetches toward the ISR only under its registration.
  if (const auto* me = host_.replication_image()->find_broker(settings_.node_id); me != nullptr) {
    request.replica_state.replica_epoch = me->broker_epoch;
  }
  request.max_wait_ms = static_cast<int32_t>(settings_.replica_fetch_wait_max_ms);
  request.min_bytes = 1;
  request.max_bytes = settings_.replica_fetch_response_max_bytes;
  s->in_flight = true;
  fetches_sent_.fetch_add(1, std::memory_order_relaxed);
  for (const auto& t : request.topics) {
    fetch_partitions_sent_.fetch_add(static_cast<int64_t>(t.partitions.size()), std::memory_order_relaxed);
  }
  cluster_transport_->send(
      s->leader_id, protocol::fetch_request_data::api_key, replica_fetch_version,
      rpc::encode_body(request, replica_fetch_version),
      settings_.replica_fetch_wait_max_ms + replica_fetch_timeout_slack_ms,
      [this, shard, s, id = s->fetch_id](rpc::result<protocol::bytes> r) {
        runtime_.post(shard, [this, shard, s, id, r = std::move(r)]() mutable {
          on_session_answer(shard, s, id, std::move(r));
        });
      });
}

void replica_fetcher::note_follower_failure(partition_runtime& rt, const std::string& what) {
  // One line when fetching starts to fail and one when it works again, not one per retry.
  if (rt.follower_failing) return;
  rt.follower_failing = true;
  host_.log_info("partition " + rt.name() + ": " + what + " (retrying every " +
                 std::to_string(settings_.replica_fetch_backoff_ms) + " ms)");
}

replica_fetcher::partition_outcome replica_fetcher::stop_following(partition_runtime& rt, const std::string& what,
                                                                   const std::string& why) {
  host_.log_error("partition " + rt.name() + ": " + what + ": " + why);
  rt.follower_fetching = false;
  return partition_outcome::stopped;
}

// ---------------------------------------------------------------- the leader's answer

void replica_fetcher::on_session_answer(size_t shard, const std::shared_ptr<session>& s, uint64_t fetch_id,
                                        rpc::result<protocol::bytes> response) {
  if (fetch_id != s->fetch_id) return;   // superseded: the newer fetch names the same offsets
  s->in_flight = false;
  // The answer decoded and appended, the fdatasyncs submitted (the next fetch when none is needed).
  const base::cpu_scope cpu(base::cpu_activity::replicate_follower);
  const int64_t now = clock_.monotonic_ms();
  // The members this fetch named, still in this generation and following this leader.
  std::map<std::pair<std::array<uint8_t, 16>, int32_t>, std::shared_ptr<partition_runtime>> named;
  prune(shard, *s);
  for (auto& [key, m] : s->members) {
    if (m.fetch_id != fetch_id) continue;
    auto rt = m.rt.lock();   // alive: prune kept it
    named[{rt->topic_id.value, rt->partition}] = std::move(rt);
  }
  std::optional<protocol::fetch_response_data> decoded;
  if (response.ok()) {
    protocol::reader rd(response.value());
    auto d = protocol::fetch_response_data::decode(rd, replica_fetch_version);
    if (d.ok()) {
      decoded = std::move(*d);
    } else {
      host_.log_error("unreadable fetch answer from broker " + std::to_string(s->leader_id) + " for " +
                      std::to_string(named.size()) + " partitions: " + d.error().message);
    }
  }
  if (!decoded) {
    for (auto& [id, rt] : named) {
      if (!response.ok()) {
        note_follower_failure(*rt, "fetch from leader " + std::to_string(s->leader_id) + " failed: " +
                                       response.error().message);
      }
      s->members[{rt->topic, rt->partition}].ready_at_ms = now + settings_.replica_fetch_backoff_ms;
    }
    return send_session_fetch(shard, s);
  }
  int64_t throttled_bytes = 0;
  std::vector<std::pair<std::string, int32_t>> stopped;
  for (auto& topic : decoded->responses) {
    for (auto& p : topic.partitions) {
      auto it = named.find({topic.topic_id.value, p.partition_index});
      if (it == named.end()) continue;   // not asked, or asked twice
      auto rt = std::move(it->second);
      named.erase(it);
      auto& m = s->members[{rt->topic, rt->partition}];
      if (p.records && !contains(rt->isr, settings_.node_id)) throttled_bytes += static_cast<int64_t>(p.records->size());
      switch (take_partition_answer(shard, s, rt, m.fetch_offset, p)) {
        case partition_outcome::fetch_again: break;
        case partition_outcome::back_off: m.ready_at_ms = now + settings_.replica_fetch_backoff_ms; break;
        case partition_outcome::stopped: stopped.emplace_back(rt->topic, rt->partition); break;
        case partition_outcome::syncing: break;   // counted in s->syncing: its sync's end fetches
      }
    }
  }
  for (const auto& key : stopped) s->members.erase(key);
  if (throttled_bytes > 0) {
    // The answer's records for partitions outside the ISR (KIP-73's follower bucket).
    host_.record_follower_throttle(throttled_bytes, host_.follower_replication_throttled_rate(), clock_.now_ms());
  }
  if (s->syncing == 0) send_session_fetch(shard, s);
}

replica_fetcher::partition_outcome replica_fetcher::take_partition_answer(
    size_t shard, const std::shared_ptr<session>& s, const std::shared_ptr<partition_runtime>& rt,
    model::offset fetch_offset, protocol::fetch_response_data::partition_data& p) {
  if (rt->log->log_end_offset() != fetch_offset) return partition_outcome::fetch_again;   // the log changed meanwhile
  if (p.error_code == code_offset_out_of_range) {
    if (fetch_offset.value() < p.log_start_offset) {
      // The leader no longer has our next offset (retention): start over at its log start.
      if (auto r = rt->log->truncate_fully_and_start_at(model::offset{p.log_start_offset}); !r.ok()) {
        return stop_following(*rt, "cannot restart the log at " + std::to_string(p.log_start_offset),
                              r.error().message);
      }
    } else if (auto r = rt->log->truncate_to(model::offset{std::max<int64_t>(p.high_watermark, 0)}); !r.ok()) {
      return stop_following(*rt, "cannot truncate to the leader's high watermark", r.error().message);
    }
    rt->publish();
    return partition_outcome::fetch_again;
  }
  if (p.error_code != code_none) {
    note_follower_failure(*rt, "leader " + std::to_string(rt->leader_id) + " answered " +
                                   std::string(to_string(errc_of_kafka_code(p.error_code))) + " to a fetch at " +
                                   std::to_string(fetch_offset.value()));
    return partition_outcome::back_off;
  }
  if (rt->follower_failing) {
    rt->follower_failing = false;
    host_.log_info("partition " + rt->name() + ": fetching from leader " + std::to_string(rt->leader_id) + " again");
  }
  if (p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0) return truncate_diverged(*rt, p);
  return append_from_leader(shard, s, rt, p);
}

replica_fetcher::partition_outcome replica_fetcher::truncate_diverged(
    partition_runtime& rt, const protocol::fetch_response_data::partition_data& p) {
  // KIP-320: our log has records the leader does not: cut where that epoch ends.
  const replication::diverging_epoch diverging{p.diverging_epoch.epoch, p.diverging_epoch.end_offset};
  const model::offset cut = replication::truncation_offset(
      diverging, rt.log->end_offset_for_epoch(model::leader_epoch{std::max(diverging.epoch, 0)}),
      rt.log->log_end_offset(), rt.log->high_watermark());
  const auto epochs_before = rt.log->leader_epochs();
  const model::offset end_before = rt.log->log_end_offset();
  if (auto r = rt.log->truncate_to(cut); !r.ok()) return stop_following(rt, "cannot truncate a diverged log", r.error().message);
  rt.publish();
  const model::offset end_after = rt.log->log_end_offset();
  if (end_after == end_before && rt.log->leader_epochs() == epochs_before) {
    // Nothing to cut, yet the leader sees a divergence: ask again later, not in a tight loop.
    note_follower_failure(rt, "leader " + std::to_string(rt.leader_id) + " reports a divergence at epoch " +
                                  std::to_string(p.diverging_epoch.epoch) + " ending at " +
                                  std::to_string(p.diverging_epoch.end_offset) + " that truncation cannot resolve");
    return partition_outcome::back_off;
  }
  // Logged only when records went: a cut that removed only leader epoch entries past the log
  // end (an empty log, or one that ends where the leader's epoch does) loses nothing.
  if (end_after < end_before) {
    host_.log_info("partition " + rt.name() + ": log diverged from leader " + std::to_string(rt.leader_id) +
                   " at epoch " + std::to_string(p.diverging_epoch.epoch) + ": removed offsets " +
                   std::to_string(end_after.value()) + "-" + std::to_string(end_before.value() - 1) + " (" +
                   std::to_string(end_before.value() - end_after.value()) +
                   " offsets the leader does not have); the log now ends at " + std::to_string(end_after.value()));
  }
  return partition_outcome::fetch_again;
}

void replica_fetcher::learn_log_start_offset(partition_runtime& rt, model::offset leader_log_start) {
  // Kafka's follower: log.maybeIncrementLogStartOffset(leaderLogStartOffset, LeaderOffsetIncremented)
  // after each fetch answer, which refuses a start above the replica's high watermark; here it is
  // clamped to it (the rest comes with a later answer).
  const model::offset target = std::min(leader_log_start, rt.log->high_watermark());
  if (target <= rt.log->log_start_offset()) return;
  if (auto r = rt.log->advance_log_start_offset(target); !r.ok()) {
    host_.log_error("partition " + rt.name() + ": cannot raise the log start offset to the leader's " +
                    std::to_string(target.value()) + ": " + r.error().message);
  }
}

replica_fetcher::partition_outcome replica_fetcher::append_from_leader(
    size_t shard, const std::shared_ptr<session>& s, const std::shared_ptr<partition_runtime>& rt,
    protocol::fetch_response_data::partition_data& p) {
  auto learn_high_watermark = [this, rt, hw = p.high_watermark, log_start = p.log_start_offset] {
    rt->log->set_high_watermark(model::offset{std::min(hw, rt->log->log_end_offset().value())});
    learn_log_start_offset(*rt, model::offset{log_start});
    rt->publish();
  };
  if (!p.records || p.records->empty()) {
    learn_high_watermark();
    return partition_outcome::fetch_again;
  }
  auto appended = rt->append_replicated(*p.records);
  if (!appended.ok()) {
    host_.log_error("partition " + rt->name() + ": cannot append what leader " + std::to_string(rt->leader_id) +
                    " sent: " + appended.error().message);
    return partition_outcome::back_off;
  }
  base::count_activity_bytes(base::cpu_activity::replicate_follower, p.records->size());
  rt->publish();
  if (!settings_.fsync_before_next_fetch) {
    learn_high_watermark();
    return partition_outcome::fetch_again;
  }
  // Durable before the next fetch reports it (design.md section 6): acks=all is then on disk on
  // every in-sync replica. The session's next fetch waits for every sync of this answer.
  std::weak_ptr<partition_runtime> weak = rt;
  ++s->syncing;
  rt->log->flush_async(runtime_.disk(shard), [this, shard, s, weak, generation = rt->follower_generation,
                                              learn_high_watermark](storage::result<void> r) {
    auto rt = weak.lock();
    if (rt && rt->follower_generation == generation) {
      if (r.ok()) {
        learn_high_watermark();
      } else {
        host_.log_error("partition " + rt->name() + ": fdatasync failed: " + r.error().message);
        rt->follower_fetching = false;
        if (auto it = s->members.find({rt->topic, rt->partition});
            it != s->members.end() && it->second.generation == generation && it->second.rt.lock() == rt) {
          s->members.erase(it);
        }
      }
    }
    if (--s->syncing == 0) send_session_fetch(shard, s);
  });
  return partition_outcome::syncing;
}

}  // namespace ringlog::partition
