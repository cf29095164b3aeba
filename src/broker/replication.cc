// Partition replication (design.md section 6; Kafka's pull model, KIP-101/279/320/497):
//   - the leader appends; each follower fetches from it over the cluster listener with its fetch
//     offset (= its log end offset, fsynced first under the default flush policy) and the epoch
//     of its last batch; it appends the leader's batches as they are (partition_log's
//     append_replicated) and learns the high watermark from the answer;
//   - the leader keeps its followers' state (replication/leader_state.h), moves the high
//     watermark to the least log end offset over the ISR, answers acks=all appends once it passed
//     them, and proposes ISR changes to the controller (AlterPartition), which commits them as
//     PartitionChangeRecords carrying the partition epoch they were computed at;
//   - a fetch naming an older leader epoch is fenced, a newer one unknown (KIP-320); a follower
//     whose last epoch or offset is not on the leader's log is told the diverging epoch and its
//     end offset and truncates there (KIP-320's DivergingEpoch), never to the high watermark.

#include <algorithm>

#include "broker_impl.h"
#include "wire_codes.h"
#include "ringlog/controller/reassignment.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/controller/quorum_wire.h"
#include "ringlog/controller/placement.h"

namespace ringlog::broker::detail {
namespace {

/// Fetch as followers send it: v15 carries the replica id in ReplicaState and names topics by id.
constexpr int16_t replica_fetch_version = 15;
/// AlterPartition v2: topic ids, the new ISR as plain ids (v3's broker epochs are not needed here:
/// the controller checks that every member is registered and unfenced).
constexpr int16_t alter_partition_version = 2;
constexpr int16_t alter_partition_api_key = protocol::alter_partition_request_data::api_key;
/// How often each shard checks its partitions' ISR, acks=all deadlines and idle followers. A
/// quarter of a second keeps ISR shrinks within replica.lag.time.max.ms + 250 ms.
constexpr int64_t replication_tick_ms = 250;
/// A follower fetch's timeout beyond the leader's long-poll: a leader that does not answer within
/// this is treated as unreachable and the fetch is retried (after replica.fetch.backoff.ms).
constexpr int64_t replica_fetch_timeout_slack_ms = 5000;
/// AlterPartition's wait for the controller's answer (commit plus apply), ms.
constexpr int64_t alter_partition_timeout_ms = 10000;

using namespace wire_codes;   // Kafka's error codes on the wire between brokers

bool contains(const std::vector<int32_t>& set, int32_t id) { return std::find(set.begin(), set.end(), id) != set.end(); }

/// Kafka's names of the errors AlterPartition answers here.
std::string_view alter_partition_error_name(int16_t code) {
  switch (code) {
    case code_unknown_topic_or_partition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case code_not_controller: return "NOT_CONTROLLER (no active controller now)";
    case code_fenced_leader_epoch: return "FENCED_LEADER_EPOCH (no longer the leader in this epoch)";
    case code_invalid_update_version: return "INVALID_UPDATE_VERSION (a stale partition epoch)";
    case code_ineligible_replica: return "INELIGIBLE_REPLICA (a replica is fenced or stopping)";
    case code_invalid_request: return "INVALID_REQUEST";
    default: return "an unexpected error";
  }
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}


}  // namespace

// ---------------------------------------------------------------- partition state

int32_t broker_impl::min_insync_replicas(const std::string& topic) const {
  auto v = view();
  auto it = v->topics.find(topic);
  if (it != v->topics.end()) {
    auto found = it->second->image->configs.find("min.insync.replicas");
    if (found != it->second->image->configs.end()) return static_cast<int32_t>(std::stoll(found->second));
  }
  return live(*v).min_insync_replicas;
}

void broker_impl::apply_partition_state(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                        const controller::partition_image& p) {
  const int64_t now = deps_.clock.now_ms();
  // Only under this process's own registration: before it registers, the image may still name
  // this node the leader in its previous life's epoch (rejoin_partitions then moves or renews it).
  const auto* me = view()->image->find_broker(config_.node_id);
  const bool registered = me != nullptr && me->incarnation_id == incarnation_id_;
  const bool leads = p.leader == config_.node_id && registered;
  if (p.leader == config_.node_id && !registered) {
    deps_.runtime.post(controller_shard, [this, topic = rt->topic, partition = rt->partition, epoch = p.leader_epoch,
                                          alive = std::weak_ptr<int>(lifetime_)] {
      if (alive.lock()) stale_leaderships_[{topic, partition}] = epoch;
    });
  }
  const bool new_leadership = p.leader != rt->leader_id || p.leader_epoch != rt->epoch.value();
  const bool isr_shrank_below_min =
      static_cast<int32_t>(p.in_sync_replicas.size()) < min_insync_replicas(rt->topic) &&
      p.in_sync_replicas.size() < rt->isr.size();
  rt->replicas = p.replicas;
  rt->isr = p.in_sync_replicas;
  rt->partition_epoch = p.partition_epoch;
  rt->leader_id = p.leader;
  rt->epoch = model::leader_epoch{p.leader_epoch};
  const bool was_leader = rt->leader.has_value();
  if (rt->leader && (!leads || new_leadership)) {
    // This leadership is over: what was not replicated may or may not survive (KIP-101 truncation
    // on the new leader's terms); the clients must not take a silence for an answer.
    rt->leader.reset();
    rt->fail_ack_waiters(error{errc::not_leader_or_follower,
                                "leadership of " + rt->name() + " moved before the write was replicated to the "
                                "in-sync replicas; it may or may not be stored: retry (the leader is now broker " +
                                std::to_string(p.leader) + ")"});
    auto waiting = std::move(rt->replica_waiters);
    rt->replica_waiters.clear();
    for (auto& w : waiting) {
      if (w->completed) continue;
      w->completed = true;
      protocol::fetch_response_data::partition_data out;
      out.partition_index = rt->partition;
      out.error_code = code_not_leader_or_follower;
      w->done(std::move(out));
    }
    for (auto& w : rt->waiters) rt->answer_empty(*w);
    rt->waiters.clear();
    if (rt->topic == consumer_offsets_topic) {
      if (auto* groups = groups_started_.load(std::memory_order_acquire)) groups->offsets_partition_led(rt->partition, false);
    }
    if (rt->topic == transaction_state_topic) {
      if (auto* txns = txns_started_.load(std::memory_order_acquire)) txns->state_partition_led(rt->partition, false);
    }
    if (delay::is_delay_topic(rt->topic)) delay_partition_led(shard, rt, false);
  }
  if (leads) {
    if (!rt->leader) {
      // A new leadership: its epoch starts at the log end (KIP-101), and the followers start
      // as unknown but in sync (leader_state), so the high watermark waits for their fetches.
      auto begun = rt->log->begin_leader_epoch(rt->epoch);
      if (!begun.ok()) {
        log_error("partition " + rt->name() + ": cannot record leader epoch " +
                        std::to_string(rt->epoch.value()) + ": " + begun.error().message);
      }
      rt->epoch_start_offset = rt->log->log_end_offset();
      rt->leader.emplace(config_.node_id, p.replicas, p.in_sync_replicas, now);
      if (rt->topic == consumer_offsets_topic) {
        // The groups of this partition are coordinated here from now on, loaded from its log.
        if (auto* groups = groups_started_.load(std::memory_order_acquire)) groups->offsets_partition_led(rt->partition, true);
      }
      if (rt->topic == transaction_state_topic) {
        // The transactional ids of this partition are coordinated here from now on (replayed).
        if (auto* txns = txns_started_.load(std::memory_order_acquire)) txns->state_partition_led(rt->partition, true);
      }
      // A delay partition's scheduler runs where its leader is (issue 18).
      if (delay::is_delay_topic(rt->topic)) delay_partition_led(shard, rt, true);
      if (p.replicas.size() > 1) {
        log_info("partition " + rt->name() + ": leading in epoch " + std::to_string(p.leader_epoch) +
                 " from offset " + std::to_string(rt->epoch_start_offset.value()) + ", high watermark " +
                 std::to_string(rt->log->high_watermark().value()));
      }
      new_follower_generation(*rt);   // a follower loop of the previous leadership stops
      rt->publish();
    } else {
      rt->leader->set_committed(p.replicas, p.in_sync_replicas, now);
      if (isr_shrank_below_min) {
        rt->fail_ack_waiters(error{errc::not_enough_replicas_after_append,
                                    "the in-sync replicas of " + rt->name() + " shrank to " +
                                        std::to_string(p.in_sync_replicas.size()) + ", below min.insync.replicas=" +
                                        std::to_string(min_insync_replicas(rt->topic)) +
                                        ", after the write was appended: it may or may not be stored; retry"});
      }
    }
    rt->update_high_watermark();
    return;
  }
  if (new_leadership) {
    new_follower_generation(*rt);
    rt->publish();
    if (p.leader >= 0) {
      log_info("partition " + rt->name() + ": following leader " + std::to_string(p.leader) + " in epoch " +
               std::to_string(p.leader_epoch) + " from offset " + std::to_string(rt->log->log_end_offset().value()));
    } else if (!controlled_shutdown_done_.load(std::memory_order_relaxed) && p.replicas.size() > 1) {
      // No leader: not logged in this broker's controlled shutdown, nor for one replica (a restart
      // waits for this broker's registration; a lone replica's leading is not logged either).
      log_info("partition " + rt->name() + ": " + (was_leader ? "stepping down as leader; " : "") +
               "no leader in epoch " + std::to_string(p.leader_epoch) +
               " (offline until a replica in its in-sync replicas is back)");
    }
  }
  if (p.leader >= 0 && p.leader != config_.node_id && contains(p.replicas, config_.node_id)) {
    start_follower_fetch(shard, rt);
  }
}

result<void> broker_impl::check_partition_exists(const model::topic_partition& tp) const {
  auto t = find_topic(tp.topic);
  if (!t) return error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)};
  if (tp.partition.value() < 0 || tp.partition.value() >= t->partitions_count()) {
    return partition_missing(tp.topic, tp.partition.value(), t->partitions_count());
  }
  return base::ok_v;
}

// ---------------------------------------------------------------- ISR changes

void broker_impl::maybe_change_isr(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (!rt->leader || rt->deleted || deps_.cluster_transport == nullptr) return;
  // KIP-841: a fenced or stopping broker is not proposed (the controller refuses it, and the
  // same refused proposal would hold back every other follower's joining, e.g. a move's new replica).
  const auto image = view()->image;
  // Never sooner than the session: a paused former leader still inside its leadership lease
  // (broker.session.timeout.ms) must stay in the ISR, or it could answer below acknowledged writes.
  const int64_t lag_max_ms = std::max(config_.replica_lag_time_max_ms, config_.broker_session_timeout_ms);
  auto change = rt->leader->isr_change(deps_.clock.now_ms(), lag_max_ms, rt->log->log_end_offset(),
                                       rt->log->high_watermark(), rt->epoch_start_offset, [&image](int32_t id) {
    const auto* b = image->find_broker(id);
    return b != nullptr && !b->fenced && !b->in_controlled_shutdown;
  });
  if (!change) return;
  rt->leader->proposal_sent(*change);
  protocol::alter_partition_request_data request;
  request.broker_id = config_.node_id;
  protocol::alter_partition_request_data::topic_data topic;
  topic.topic_id = rt->topic_id;
  protocol::alter_partition_request_data::partition_data part;
  part.partition_index = rt->partition;
  part.leader_epoch = rt->epoch.value();
  part.new_isr = *change;
  part.partition_epoch = rt->partition_epoch;
  topic.partitions.push_back(part);
  request.topics.push_back(std::move(topic));
  const uint64_t generation = rt->follower_generation;
  std::weak_ptr<partition_runtime> weak = rt;
  auto on_answer = [this, shard, weak, generation, proposed = *change](int16_t code, std::string why) {
    deps_.runtime.post(shard, [this, shard, weak, generation, code, why = std::move(why), proposed] {
      auto rt = weak.lock();
      if (!rt || !rt->leader || rt->follower_generation != generation) return;
      if (code != code_none) {
        // Refused (a stale partition epoch, a replica still fenced, no controller now): a fresh
        // proposal at the next tick. Logged once per kind of refusal.
        rt->leader->proposal_failed();
        if (rt->last_isr_refusal != code) {
          log_info("partition " + rt->name() + ": ISR change to [" + ids_text(proposed) + "] not made: " +
                   std::string(alter_partition_error_name(code)) + " (Kafka error " + std::to_string(code) +
                   ", " + why + "); proposing again");
        }
        rt->last_isr_refusal = code;
      } else {
        rt->last_isr_refusal = 0;
        log_info("partition " + rt->name() + ": ISR is now [" + ids_text(proposed) + "]");
      }
      rt->update_high_watermark();
    });
  };
  deps_.runtime.post(controller_shard, [this, request = std::move(request), on_answer = std::move(on_answer)]() mutable {
    const int32_t controller = quorum_ ? quorum_->leader_id() : -1;
    if (controller == config_.node_id) {
      return alter_partition(std::move(request), [on_answer](protocol::alter_partition_response_data r) {
        const auto& p = r.topics.empty() || r.topics[0].partitions.empty() ? nullptr : &r.topics[0].partitions[0];
        on_answer(r.error_code != code_none ? r.error_code : (p ? p->error_code : code_invalid_request),
                  "this node is the controller");
      });
    }
    if (controller < 0) return on_answer(code_not_controller, "no active controller now");
    deps_.cluster_transport->send(
        controller, alter_partition_api_key, alter_partition_version, encode_body(request, alter_partition_version),
        alter_partition_timeout_ms, [on_answer, controller](rpc::result<protocol::bytes> r) {
          if (!r.ok()) return on_answer(code_not_controller, r.error().message);
          protocol::reader rd(r.value());
          auto decoded = protocol::alter_partition_response_data::decode(rd, alter_partition_version);
          if (!decoded.ok()) return on_answer(code_invalid_request, decoded.error().message);
          const auto& resp = decoded.value();
          int16_t code = resp.error_code;
          if (code == code_none) {
            code = resp.topics.empty() || resp.topics[0].partitions.empty() ? code_invalid_request
                                                                            : resp.topics[0].partitions[0].error_code;
          }
          on_answer(code, "answered by controller " + std::to_string(controller));
        });
  });
}

// ---------------------------------------------------------------- per-shard tick

void broker_impl::schedule_replication_tick(size_t shard) {
  std::weak_ptr<int> alive = lifetime_;
  deps_.runtime.post_after(shard, replication_tick_ms, [this, shard, alive] {
    if (alive.expired() || stopping_) return;
    replication_tick(shard);
    schedule_replication_tick(shard);
  });
}

void broker_impl::replication_tick(size_t shard) {
  const int64_t now = deps_.clock.now_ms();
  for (auto& [key, rt] : partition_managers_[shard]->partitions()) {
    if (rt->deleted) continue;
    if (rt->leader) {
      maybe_change_isr(shard, rt);
      while (!rt->ack_waiters.empty()) {
        // Deadlines are not ordered by offset: look at each (few are waiting at once).
        auto late = std::find_if(rt->ack_waiters.begin(), rt->ack_waiters.end(),
                                 [now](const auto& entry) { return entry.second.deadline_ms <= now; });
        if (late == rt->ack_waiters.end()) break;
        auto done = std::move(late->second.done);
        rt->ack_waiters.erase(late);
        done(error{errc::request_timed_out, "the write to " + rt->name() +
                                                " was not replicated to the in-sync replicas in time; it may or may "
                                                "not be stored (the outcome is unknown): retry"});
      }
    } else if (rt->leader_id >= 0 && rt->leader_id != config_.node_id && !rt->follower_fetching &&
               contains(rt->replicas, config_.node_id)) {
      start_follower_fetch(shard, rt);
    }
  }
}

// ---------------------------------------------------------------- follower side

void broker_impl::start_follower_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (rt->follower_fetching || deps_.cluster_transport == nullptr) return;
  rt->follower_fetching = true;
  send_follower_fetch(shard, rt, rt->follower_generation);
}

void broker_impl::new_follower_generation(partition_runtime& rt) {
  ++rt.follower_generation;
  // The loop of the previous generation may be waiting on a fetch to a former leader that does
  // not answer (paused, cut off: up to replica.fetch.wait.max.ms + replica_fetch_timeout_slack_ms).
  // It ends silently when that answer comes (send_follower_fetch); the new leader is fetched from
  // at once, so the in-sync replicas it needs for acks=all keep up (newcomer finding 6: this
  // wait added ~2 s to a leader pause).
  rt.follower_fetching = false;
}

void broker_impl::send_follower_fetch(size_t shard, std::weak_ptr<partition_runtime> weak, uint64_t generation) {
  auto rt = weak.lock();
  if (!rt) return;
  // A loop of an earlier generation ends without a word: the flag and any newer loop belong to
  // the current generation (new_follower_generation).
  if (rt->follower_generation != generation) return;
  if (stopping_ || rt->deleted || rt->leader || rt->leader_id < 0) {
    // This loop ends. It was the only one (a loop starts only while none runs), so the flag goes
    // with it whatever happened meanwhile (this node led, or had no leader to follow, for a
    // while); a newer leadership to follow gets its loop now. Found by tests/cluster: keeping
    // the flag when the generation had moved left a follower that never fetched again.
    rt->follower_fetching = false;
    if (!stopping_ && !rt->deleted && !rt->leader && rt->leader_id >= 0 && rt->leader_id != config_.node_id &&
        contains(rt->replicas, config_.node_id)) {
      start_follower_fetch(shard, rt);
    }
    return;
  }
  // KIP-73 on the follower's side: fetches of a partition whose ISR this broker is not in take
  // from the broker-wide bucket of follower.replication.throttled.rate; while it is empty the
  // next fetch waits (the answer's bytes are taken when it comes: send's callback below).
  if (!contains(rt->isr, config_.node_id)) {
    const int64_t held_ms = replication_throttles_.acquire(
        replication_throttles::side::follower, live(*view()).follower_replication_throttled_rate, deps_.clock.now_ms());
    if (held_ms > 0) {
      deps_.runtime.post_after(shard, held_ms, [this, shard, weak, generation, alive = std::weak_ptr<int>(lifetime_)] {
        if (!alive.expired()) send_follower_fetch(shard, weak, generation);
      });
      return;
    }
  }
  protocol::fetch_request_data request;
  request.replica_state.replica_id = config_.node_id;
  request.max_wait_ms = static_cast<int32_t>(config_.replica_fetch_wait_max_ms);
  request.min_bytes = 1;
  request.max_bytes = config_.replica_fetch_max_bytes;
  protocol::fetch_request_data::fetch_topic topic;
  topic.topic_id = rt->topic_id;
  protocol::fetch_request_data::fetch_partition part;
  part.partition = rt->partition;
  part.current_leader_epoch = rt->epoch.value();
  const model::offset fetch_offset = rt->log->log_end_offset();
  part.fetch_offset = fetch_offset.value();
  const auto& epochs = rt->log->leader_epochs();
  part.last_fetched_epoch = epochs.empty() ? -1 : epochs.rbegin()->first;
  part.log_start_offset = rt->log->log_start_offset().value();
  part.partition_max_bytes = config_.replica_fetch_max_bytes;
  topic.partitions.push_back(part);
  request.topics.push_back(std::move(topic));
  deps_.cluster_transport->send(
      rt->leader_id, protocol::fetch_request_data::api_key, replica_fetch_version,
      encode_body(request, replica_fetch_version), config_.replica_fetch_wait_max_ms + replica_fetch_timeout_slack_ms,
      [this, shard, weak, generation, fetch_offset](rpc::result<protocol::bytes> r) {
        deps_.runtime.post(shard, [this, shard, weak, generation, fetch_offset, r = std::move(r)]() mutable {
          auto rt = weak.lock();
          if (!rt) return;
          if (r.ok() && !contains(rt->isr, config_.node_id)) {
            // The answer's size: its records and under 100 bytes of framing (one partition each).
            replication_throttles_.record(replication_throttles::side::follower, static_cast<int64_t>(r.value().size()),
                                          live(*view()).follower_replication_throttled_rate, deps_.clock.now_ms());
          }
          // The answer decoded and appended, the fdatasync submitted, the next fetch sent.
          const base::cpu_scope cpu(base::cpu_activity::replicate_follower);
          on_follower_fetch_response(shard, rt, generation, fetch_offset, std::move(r));
        });
      });
}

void broker_impl::note_follower_failure(partition_runtime& rt, const std::string& what) {
  // One line when fetching starts to fail and one when it works again, not one per retry.
  if (rt.follower_failing) return;
  rt.follower_failing = true;
  log_info("partition " + rt.name() + ": " + what + " (retrying every " +
           std::to_string(config_.replica_fetch_backoff_ms) + " ms)");
}

void broker_impl::retry_follower_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                       uint64_t generation) {
  std::weak_ptr<partition_runtime> weak = rt;
  std::weak_ptr<int> alive = lifetime_;
  deps_.runtime.post_after(shard, config_.replica_fetch_backoff_ms, [this, shard, weak, generation, alive] {
    if (alive.expired()) return;
    send_follower_fetch(shard, weak, generation);
  });
}

void broker_impl::on_follower_fetch_response(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                             uint64_t generation, model::offset fetch_offset,
                                             rpc::result<protocol::bytes> response) {
  if (rt->follower_generation != generation || rt->deleted || rt->leader || stopping_) {
    return send_follower_fetch(shard, rt, generation);   // ends this loop (and starts a newer one)
  }
  if (!response.ok()) {
    note_follower_failure(*rt, "fetch from leader " + std::to_string(rt->leader_id) + " failed: " +
                                   response.error().message);
    return retry_follower_fetch(shard, rt, generation);
  }
  protocol::reader rd(response.value());
  auto decoded = protocol::fetch_response_data::decode(rd, replica_fetch_version);
  if (!decoded.ok() || decoded->responses.size() != 1 || decoded->responses[0].partitions.size() != 1) {
    log_error("partition " + rt->name() + ": unreadable fetch answer from broker " + std::to_string(rt->leader_id));
    return retry_follower_fetch(shard, rt, generation);
  }
  auto& p = decoded->responses[0].partitions[0];
  if (rt->log->log_end_offset() != fetch_offset) {
    return send_follower_fetch(shard, rt, generation);   // the log changed meanwhile: ask again
  }
  auto fail = [&](const std::string& what, const std::string& why) {
    // A replica that cannot follow its leader stops serving this partition until restarted;
    // the leader drops it from the ISR after replica.lag.time.max.ms.
    log_error("partition " + rt->name() + ": " + what + ": " + why);
    rt->follower_fetching = false;
  };
  if (p.error_code == code_offset_out_of_range) {
    if (fetch_offset.value() < p.log_start_offset) {
      // The leader no longer has our next offset (retention): start over at its log start.
      if (auto r = rt->log->truncate_fully_and_start_at(model::offset{p.log_start_offset}); !r.ok()) {
        return fail("cannot restart the log at " + std::to_string(p.log_start_offset), r.error().message);
      }
    } else if (auto r = rt->log->truncate_to(model::offset{std::max<int64_t>(p.high_watermark, 0)}); !r.ok()) {
      return fail("cannot truncate to the leader's high watermark", r.error().message);
    }
    rt->publish();
    return send_follower_fetch(shard, rt, generation);
  }
  if (p.error_code != code_none) {
    note_follower_failure(*rt, "leader " + std::to_string(rt->leader_id) + " answered " +
                                   std::string(to_string(errc_of_kafka_code(p.error_code))) + " to a fetch at " +
                                   std::to_string(fetch_offset.value()));
    return retry_follower_fetch(shard, rt, generation);
  }
  if (rt->follower_failing) {
    rt->follower_failing = false;
    log_info("partition " + rt->name() + ": fetching from leader " + std::to_string(rt->leader_id) + " again");
  }
  if (p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0) {
    // KIP-320: our log has records the leader does not: cut where that epoch ends.
    const replication::diverging_epoch diverging{p.diverging_epoch.epoch, p.diverging_epoch.end_offset};
    const model::offset cut = replication::truncation_offset(
        diverging, rt->log->end_offset_for_epoch(model::leader_epoch{std::max(diverging.epoch, 0)}),
        rt->log->log_end_offset(), rt->log->high_watermark());
    const auto epochs_before = rt->log->leader_epochs();
    const model::offset end_before = rt->log->log_end_offset();
    if (auto r = rt->log->truncate_to(cut); !r.ok()) return fail("cannot truncate a diverged log", r.error().message);
    rt->publish();
    const model::offset end_after = rt->log->log_end_offset();
    if (end_after == end_before && rt->log->leader_epochs() == epochs_before) {
      // Nothing to cut, yet the leader sees a divergence: ask again later, not in a tight loop.
      note_follower_failure(*rt, "leader " + std::to_string(rt->leader_id) + " reports a divergence at epoch " +
                                     std::to_string(p.diverging_epoch.epoch) + " ending at " +
                                     std::to_string(p.diverging_epoch.end_offset) + " that truncation cannot resolve");
      return retry_follower_fetch(shard, rt, generation);
    }
    // Logged only when records went: a cut that removed only leader epoch entries past the log
    // end (an empty log, or one that ends where the leader's epoch does) loses nothing.
    if (end_after < end_before) {
      log_info("partition " + rt->name() + ": log diverged from leader " + std::to_string(rt->leader_id) +
               " at epoch " + std::to_string(p.diverging_epoch.epoch) + ": removed offsets " +
               std::to_string(end_after.value()) + "-" + std::to_string(end_before.value() - 1) + " (" +
               std::to_string(end_before.value() - end_after.value()) +
               " offsets the leader does not have); the log now ends at " + std::to_string(end_after.value()));
    }
    return send_follower_fetch(shard, rt, generation);
  }
  auto learn_high_watermark = [this, rt, hw = p.high_watermark] {
    rt->log->set_high_watermark(model::offset{std::min(hw, rt->log->log_end_offset().value())});
    rt->publish();
  };
  if (!p.records || p.records->empty()) {
    learn_high_watermark();
    return send_follower_fetch(shard, rt, generation);
  }
  auto appended = rt->append_replicated(*p.records);
  if (!appended.ok()) {
    log_error("partition " + rt->name() + ": cannot append what leader " + std::to_string(rt->leader_id) +
                    " sent: " + appended.error().message);
    return retry_follower_fetch(shard, rt, generation);
  }
  base::count_activity_bytes(base::cpu_activity::replicate_follower, p.records->size());
  rt->publish();
  if (config_.log_flush_policy != "fsync") {
    learn_high_watermark();
    return send_follower_fetch(shard, rt, generation);
  }
  // Durable before the next fetch reports it (design.md section 6): acks=all is then on disk on
  // every in-sync replica.
  std::weak_ptr<partition_runtime> weak = rt;
  rt->log->flush_async(deps_.runtime.disk(shard), [this, shard, weak, generation, learn_high_watermark](
                                                      storage::result<void> r) {
    auto rt = weak.lock();
    if (!rt) return;
    if (!r.ok()) {
      log_error("partition " + rt->name() + ": fdatasync failed: " + r.error().message);
      if (rt->follower_generation == generation) rt->follower_fetching = false;
      return;
    }
    learn_high_watermark();
    send_follower_fetch(shard, rt, generation);
  });
}

// ---------------------------------------------------------------- leader side of a follower's fetch

void broker_impl::handle_replica_fetch(const protocol::request_header_data& header, std::span<const std::byte> body,
                                       rpc::respond_fn respond) {
  protocol::reader rd(body);
  auto decoded = protocol::fetch_request_data::decode(rd, header.request_api_version);
  if (!decoded.ok()) return;   // unanswered: the follower times out and retries
  auto request = std::move(decoded).value();
  const bool metadata_log = header.request_api_version >= 13
                                ? (!request.topics.empty() && request.topics[0].topic_id == controller::quorum_wire::metadata_topic_id())
                                : (!request.topics.empty() && request.topics[0].topic == controller::quorum_wire::metadata_topic);
  if (metadata_log) {
    if (quorum_fetch_handler_) quorum_fetch_handler_(header, body, std::move(respond));
    return;
  }
  const int32_t replica_id = header.request_api_version >= 15 ? request.replica_state.replica_id : request.replica_id;
  if (replica_id < 0) return serve_forwarded_fetch(header, request, std::move(respond));   // a consumer's, forwarded
  const base::cpu_scope cpu(base::cpu_activity::replicate_leader);   // the fan-out to shards (the decode is small)
  struct gather {
    std::mutex mutex;
    protocol::fetch_response_data response;
    size_t remaining = 0;
    protocol::request_header_data header;
    rpc::respond_fn respond;
  };
  auto g = std::make_shared<gather>();
  g->header = header;
  g->respond = std::move(respond);
  size_t total = 0;
  for (const auto& t : request.topics) total += t.partitions.size();
  if (total == 0) return respond_with(g->header, g->response, g->respond);
  g->remaining = total;
  // Only a fetch of one partition waits for new records (followers here send one per partition).
  const int64_t wait_ms = total == 1 ? std::min<int64_t>(request.max_wait_ms, config_.replica_fetch_wait_max_ms) : 0;
  auto v = view();
  for (const auto& t : request.topics) {
    const controller::topic_image* image = v->image->find_topic(t.topic_id);
    for (const auto& part : t.partitions) {
      auto finish = [g, topic_id = t.topic_id](protocol::fetch_response_data::partition_data out) {
        std::lock_guard lock(g->mutex);
        auto it = std::find_if(g->response.responses.begin(), g->response.responses.end(),
                               [&](const auto& r) { return r.topic_id == topic_id; });
        if (it == g->response.responses.end()) {
          protocol::fetch_response_data::fetchable_topic_response r;
          r.topic_id = topic_id;
          g->response.responses.push_back(std::move(r));
          it = std::prev(g->response.responses.end());
        }
        it->partitions.push_back(std::move(out));
        if (--g->remaining == 0) respond_with(g->header, g->response, g->respond);
      };
      if (image == nullptr || part.partition < 0 || part.partition >= static_cast<int32_t>(image->partitions.size())) {
        protocol::fetch_response_data::partition_data out;
        out.partition_index = part.partition;
        out.error_code = code_unknown_topic_or_partition;
        finish(std::move(out));
        continue;
      }
      const size_t shard = owner(image->name, part.partition);
      deps_.runtime.post(shard, [this, shard, name = image->name, part, replica_id, wait_ms, finish]() mutable {
        auto rt = runtime_of(shard, name, part.partition);
        if (!rt) {
          protocol::fetch_response_data::partition_data out;
          out.partition_index = part.partition;
          out.error_code = code_not_leader_or_follower;
          return finish(std::move(out));
        }
        serve_replica_fetch(shard, rt, replica_id, part, wait_ms, std::move(finish));
      });
    }
  }
}

void broker_impl::serve_replica_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt, int32_t replica_id,
                                      const protocol::fetch_request_data::fetch_partition& request, int64_t wait_ms,
                                      std::function<void(protocol::fetch_response_data::partition_data)> done) {
  // The read and, answered at once, the answer's encoding and write (done); with the high
  // watermark moving, the acks=all produce answers it releases count here too.
  const base::cpu_scope cpu(base::cpu_activity::replicate_leader);
  protocol::fetch_response_data::partition_data out;
  out.partition_index = rt->partition;
  out.high_watermark = rt->log->high_watermark().value();
  out.log_start_offset = rt->log->log_start_offset().value();
  if (!rt->leader || rt->deleted) {
    out.error_code = code_not_leader_or_follower;
    out.current_leader.leader_id = rt->leader_id;
    out.current_leader.leader_epoch = rt->epoch.value();
    return done(std::move(out));
  }
  // KIP-320: the follower's view of the leader epoch must be this one.
  if (request.current_leader_epoch >= 0 && request.current_leader_epoch < rt->epoch.value()) {
    out.error_code = code_fenced_leader_epoch;
    return done(std::move(out));
  }
  if (request.current_leader_epoch > rt->epoch.value()) {
    out.error_code = code_unknown_leader_epoch;
    return done(std::move(out));
  }
  const model::offset fetch_offset{request.fetch_offset};
  // KIP-320 divergence: the follower's last epoch must end at or after its fetch offset here.
  if (request.last_fetched_epoch >= 0) {
    auto diverged = replication::check_divergence(
        request.last_fetched_epoch, fetch_offset,
        rt->log->end_offset_for_epoch(model::leader_epoch{request.last_fetched_epoch}), rt->log->log_start_offset());
    if (diverged) {
      out.diverging_epoch.epoch = diverged->epoch;
      out.diverging_epoch.end_offset = diverged->end_offset;
      return done(std::move(out));
    }
  }
  if (fetch_offset < rt->log->log_start_offset() || fetch_offset > rt->log->log_end_offset()) {
    out.error_code = code_offset_out_of_range;
    return done(std::move(out));
  }
  if (rt->leader->on_fetch(replica_id, fetch_offset, rt->log->log_end_offset(), deps_.clock.now_ms())) {
    rt->update_high_watermark();
    maybe_change_isr(shard, rt);
  }
  auto answer = rt->read_for_replica(replica_id, fetch_offset, request.partition_max_bytes);
  if (answer.error_code != code_none || (answer.records && !answer.records->empty()) || wait_ms <= 0 || stopping_) {
    return done(std::move(answer));
  }
  // Nothing new, or held back by the leader throttle: park until an append (or the high watermark
  // moves) or the wait is over; held back, at most until the bucket holds bytes again.
  const int64_t held_ms = fetch_offset < rt->log->log_end_offset() ? rt->replica_held_back_ms(replica_id) : 0;
  if (held_ms > 0) wait_ms = std::min(wait_ms, held_ms);
  auto w = std::make_shared<replica_fetch_waiter>();
  w->replica_id = replica_id;
  w->fetch_offset = fetch_offset;
  w->max_bytes = request.partition_max_bytes;
  w->done = std::move(done);
  rt->replica_waiters.push_back(w);
  std::weak_ptr<partition_runtime> weak = rt;
  std::weak_ptr<replica_fetch_waiter> weak_waiter = w;
  deps_.runtime.post_after(shard, wait_ms, [this, weak, weak_waiter] {
    auto w = weak_waiter.lock();
    auto rt = weak.lock();
    if (!w || w->completed) return;
    w->completed = true;
    if (rt) {
      std::erase_if(rt->replica_waiters, [&](const auto& x) { return x == w; });
      return w->done(rt->read_for_replica(w->replica_id, w->fetch_offset, w->max_bytes));
    }
    protocol::fetch_response_data::partition_data gone;
    gone.error_code = code_not_leader_or_follower;
    w->done(std::move(gone));
  });
}

}  // namespace ringlog::broker::detail
