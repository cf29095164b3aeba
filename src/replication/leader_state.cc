#include "ringlog/replication/leader_state.h"

#include <algorithm>

#include "ringlog/base/assert.h"

namespace ringlog::replication {

leader_state::leader_state(int32_t self, std::vector<int32_t> replicas, std::vector<int32_t> isr, int64_t now_ms)
    : self_(self) {
  set_committed(std::move(replicas), std::move(isr), now_ms);
  for (auto& f : followers_) f.last_caught_up_ms = now_ms;
}

bool leader_state::in(const std::vector<int32_t>& set, int32_t id) const {
  return std::find(set.begin(), set.end(), id) != set.end();
}

const follower_state* leader_state::follower(int32_t replica) const {
  for (const auto& f : followers_) {
    if (f.replica_id == replica) return &f;
  }
  return nullptr;
}

bool leader_state::fetched_under(int32_t replica, int64_t broker_epoch) const {
  const follower_state* f = follower(replica);
  return f != nullptr && f->broker_epoch == broker_epoch;
}

void leader_state::set_committed(std::vector<int32_t> replicas, std::vector<int32_t> isr, int64_t now_ms) {
  RINGLOG_ASSERT(in(replicas, self_), "the leader is one of the partition's replicas");
  std::vector<follower_state> next;
  for (int32_t id : replicas) {
    if (id == self_) continue;
    const follower_state* known = follower(id);
    if (known != nullptr) {
      next.push_back(*known);
    } else {
      follower_state f;
      f.replica_id = id;
      // New to this leadership's replica set: in the ISR it gets the lag allowance from now.
      f.last_caught_up_ms = in(isr, id) ? now_ms : 0;
      next.push_back(f);
    }
  }
  followers_ = std::move(next);
  replicas_ = std::move(replicas);
  isr_ = std::move(isr);
  pending_.reset();
}

bool leader_state::on_fetch(int32_t replica, model::offset fetch_offset, model::offset leader_end, int64_t now_ms,
                            int64_t broker_epoch) {
  for (auto& f : followers_) {
    if (f.replica_id != replica) continue;
    if (f.broker_epoch != broker_epoch) {
      // Another process of that broker (KIP-903): where its predecessor's fetches stood says
      // nothing about this one's log (its disk may be new).
      f.leader_end_at_last_fetch = model::offset{-1};
      f.broker_epoch = broker_epoch;
    }
    // Kafka's Replica.updateFetchState: caught up now when it asks for everything the leader
    // has; caught up at its previous fetch when it now has what the leader had then.
    if (fetch_offset >= leader_end) {
      f.last_caught_up_ms = std::max(f.last_caught_up_ms, now_ms);
    } else if (f.leader_end_at_last_fetch.value() >= 0 && fetch_offset >= f.leader_end_at_last_fetch) {
      f.last_caught_up_ms = std::max(f.last_caught_up_ms, f.last_fetch_ms);
    }
    f.log_end_offset = fetch_offset;
    f.leader_end_at_last_fetch = leader_end;
    f.last_fetch_ms = now_ms;
    return true;
  }
  return false;
}

bool leader_state::on_follower_log_start(int32_t replica, model::offset log_start_offset) {
  for (auto& f : followers_) {
    if (f.replica_id != replica) continue;
    if (log_start_offset.value() >= 0) f.log_start_offset = log_start_offset;
    return true;
  }
  return false;
}

model::offset leader_state::low_watermark(model::offset leader_log_start,
                                          const std::function<bool(int32_t broker_id)>& alive) const {
  model::offset low = leader_log_start;
  for (const auto& f : followers_) {
    if (alive(f.replica_id)) low = std::min(low, f.log_start_offset);
  }
  return low;
}

std::optional<model::offset> delete_records_offset(int64_t requested, model::offset high_watermark) {
  if (requested == delete_records_high_watermark) return high_watermark;
  if (requested < 0 || requested > high_watermark.value()) return std::nullopt;
  return model::offset{requested};
}

model::offset leader_state::high_watermark(model::offset leader_end, model::offset current,
                                           int32_t min_insync_replicas) const {
  if (static_cast<int32_t>(isr_.size()) < min_insync_replicas) return current;
#ifdef RINGLOG_REPLICATION_BREAK_HIGH_WATERMARK_PAST_ISR
  // Negative control of tests/sim/cluster_sim (meson: cluster_sim_break_*): the high watermark
  // follows the leader alone, past what the ISR holds.
  return std::max(leader_end, current);
#endif
  model::offset least = leader_end;
  auto counts = [&](int32_t id) { return in(isr_, id) || (pending_ && in(*pending_, id)); };
  for (const auto& f : followers_) {
    if (!counts(f.replica_id)) continue;
    if (f.log_end_offset.value() < 0) return current;   // not heard from in this leadership
    least = std::min(least, f.log_end_offset);
  }
  return std::max(least, current);
}

std::optional<std::vector<int32_t>> leader_state::isr_change(int64_t now_ms, int64_t lag_max_ms,
                                                             model::offset leader_end,
                                                             model::offset high_watermark,
                                                             model::offset epoch_start_offset,
                                                             const std::function<bool(int32_t)>& eligible) const {
  if (pending_) return std::nullopt;
  std::vector<int32_t> next;
  bool changed = false;
  for (int32_t id : replicas_) {
    if (id == self_) {
      if (in(isr_, id)) next.push_back(id);
      continue;
    }
    const follower_state* f = follower(id);
    RINGLOG_ASSERT(f != nullptr, "every replica but the leader has a follower state");
    if (in(isr_, id)) {
      // Out of sync: behind the leader and not caught up for longer than the allowance.
      const bool lagging = f->log_end_offset < leader_end && now_ms - f->last_caught_up_ms > lag_max_ms;
      if (lagging) {
        changed = true;
      } else {
        next.push_back(id);
      }
    } else if (f->log_end_offset.value() >= 0 && f->log_end_offset >= high_watermark &&
               f->log_end_offset >= epoch_start_offset && (!eligible || eligible(id))) {
      next.push_back(id);
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  return next;
}

void leader_state::proposal_sent(std::vector<int32_t> isr) { pending_ = std::move(isr); }

void leader_state::proposal_failed() { pending_.reset(); }

}  // namespace ringlog::replication

namespace ringlog::replication {

std::optional<diverging_epoch> check_divergence(int32_t last_fetched_epoch, model::offset fetch_offset,
                                                const epoch_end& leader_end, model::offset leader_log_start) {
  if (last_fetched_epoch < 0) return std::nullopt;
  if (leader_end && leader_end->first.value() == last_fetched_epoch && leader_end->second >= fetch_offset) {
    return std::nullopt;
  }
  if (!leader_end) return diverging_epoch{0, leader_log_start.value()};
  return diverging_epoch{leader_end->first.value(), leader_end->second.value()};
}

model::offset truncation_offset(const diverging_epoch& diverging, const epoch_end& follower_end,
                                model::offset log_end_offset, model::offset high_watermark) {
  if (diverging.epoch < 0 || diverging.end_offset < 0) return std::min(high_watermark, log_end_offset);
#ifdef RINGLOG_REPLICATION_BREAK_TRUNCATE_TO_HIGH_WATERMARK
  // Negative control of tests/sim/cluster_sim: a diverged follower cuts to its high watermark,
  // as before KIP-101, not where the diverging epoch ends.
  return std::min(high_watermark, log_end_offset);
#endif
#ifdef RINGLOG_REPLICATION_BREAK_SKIP_TRUNCATION
  // Negative control of tests/sim/cluster_sim: a follower told it diverged keeps its log.
  return log_end_offset;
#endif
  model::offset cut{diverging.end_offset};
  // Kafka's AbstractFetcherThread: the same epoch on both sides -> the lesser of the two ends of
  // it (past the follower's end of that epoch lie its records of a later epoch the leader never
  // had); another epoch -> the follower's end of its largest epoch <= the leader's, then fetch again.
  if (follower_end) cut = std::min(cut, follower_end->second);
  if (!follower_end) cut = std::min(cut, high_watermark);   // the follower knows no epoch that old
  return std::min(cut, log_end_offset);
}

}  // namespace ringlog::replication
