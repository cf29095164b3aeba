// The follower's side of replication (ringlog/partition/replica_fetcher.h; design.md section 6,
// Kafka's ReplicaFetcherThread, KIP-101/279/320): each followed partition has one fetch loop to its
// leader, over the cluster listener, with its fetch offset (= its log end offset, fsynced first
// under the default flush policy) and the epoch of its last batch; it appends the leader's
// batches as they are (partition_log's append_replicated) and learns the high watermark from
// the answer. A follower whose last epoch or offset is not on the leader's log is told the
// diverging epoch and its end offset and truncates there (KIP-320's DivergingEpoch), never to
// the high watermark. And the per-shard replication tick.

#include <algorithm>

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
      leader_side_(leader_side) {}

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

// ---------------------------------------------------------------- the fetch loop

void replica_fetcher::start_follower_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (rt->follower_fetching || cluster_transport_ == nullptr) return;
  rt->follower_fetching = true;
  send_follower_fetch(shard, rt, rt->follower_generation);
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
  // The loop of the previous generation may be waiting on a fetch to a former leader that does
  // not answer (paused, cut off: up to replica.fetch.wait.max.ms + replica_fetch_timeout_slack_ms).
  // It ends silently when that answer comes (send_follower_fetch); the new leader is fetched from
  // at once, so the in-sync replicas it needs for acks=all keep up (newcomer finding 6: this
  // wait added ~2 s to a leader pause).
  rt.follower_fetching = false;
}

void replica_fetcher::send_follower_fetch(size_t shard, std::weak_ptr<partition_runtime> weak, uint64_t generation) {
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
    if (!stopping_ && !rt->deleted && !rt->leader && follows(*rt)) start_follower_fetch(shard, rt);
    return;
  }
  // KIP-73 on the follower's side: fetches of a partition whose ISR this broker is not in take
  // from the broker-wide bucket of follower.replication.throttled.rate; while it is empty the
  // next fetch waits (the answer's bytes are taken when it comes: send's callback below).
  if (!contains(rt->isr, settings_.node_id)) {
    const int64_t held_ms =
        host_.acquire_follower_throttle(host_.follower_replication_throttled_rate(), clock_.now_ms());
    if (held_ms > 0) {
      runtime_.post_after(shard, held_ms, [this, shard, weak, generation, alive = std::weak_ptr<int>(lifetime_)] {
        if (!alive.expired()) send_follower_fetch(shard, weak, generation);
      });
      return;
    }
  }
  protocol::fetch_request_data request;
  request.replica_state.replica_id = settings_.node_id;
  // KIP-903: the leader counts this process's fetches toward the ISR only under its registration.
  if (const auto* me = host_.replication_image()->find_broker(settings_.node_id); me != nullptr) {
    request.replica_state.replica_epoch = me->broker_epoch;
  }
  request.max_wait_ms = static_cast<int32_t>(settings_.replica_fetch_wait_max_ms);
  request.min_bytes = 1;
  request.max_bytes = settings_.replica_fetch_max_bytes;
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
  part.partition_max_bytes = settings_.replica_fetch_max_bytes;
  topic.partitions.push_back(part);
  request.topics.push_back(std::move(topic));
  cluster_transport_->send(
      rt->leader_id, protocol::fetch_request_data::api_key, replica_fetch_version,
      rpc::encode_body(request, replica_fetch_version),
      settings_.replica_fetch_wait_max_ms + replica_fetch_timeout_slack_ms,
      [this, shard, weak, generation, fetch_offset](rpc::result<protocol::bytes> r) {
        runtime_.post(shard, [this, shard, weak, generation, fetch_offset, r = std::move(r)]() mutable {
          auto rt = weak.lock();
          if (!rt) return;
          if (r.ok() && !contains(rt->isr, settings_.node_id)) {
            // The answer's size: its records and under 100 bytes of framing (one partition each).
            host_.record_follower_throttle(static_cast<int64_t>(r.value().size()),
                                           host_.follower_replication_throttled_rate(), clock_.now_ms());
          }
          // The answer decoded and appended, the fdatasync submitted, the next fetch sent.
          const base::cpu_scope cpu(base::cpu_activity::replicate_follower);
          on_follower_fetch_response(shard, rt, generation, fetch_offset, std::move(r));
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

void replica_fetcher::retry_follower_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                           uint64_t generation) {
  std::weak_ptr<partition_runtime> weak = rt;
  std::weak_ptr<int> alive = lifetime_;
  runtime_.post_after(shard, settings_.replica_fetch_backoff_ms, [this, shard, weak, generation, alive] {
    if (alive.expired()) return;
    send_follower_fetch(shard, weak, generation);
  });
}

void replica_fetcher::stop_following(partition_runtime& rt, const std::string& what, const std::string& why) {
  host_.log_error("partition " + rt.name() + ": " + what + ": " + why);
  rt.follower_fetching = false;
}

// ---------------------------------------------------------------- the leader's answer

void replica_fetcher::on_follower_fetch_response(size_t shard, const std::shared_ptr<partition_runtime>& rt,
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
    host_.log_error("partition " + rt->name() + ": unreadable fetch answer from broker " +
                    std::to_string(rt->leader_id));
    return retry_follower_fetch(shard, rt, generation);
  }
  auto& p = decoded->responses[0].partitions[0];
  if (rt->log->log_end_offset() != fetch_offset) {
    return send_follower_fetch(shard, rt, generation);   // the log changed meanwhile: ask again
  }
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
    host_.log_info("partition " + rt->name() + ": fetching from leader " + std::to_string(rt->leader_id) + " again");
  }
  if (p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0) return truncate_diverged(shard, rt, generation, p);
  append_from_leader(shard, rt, generation, p);
}

void replica_fetcher::truncate_diverged(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                        uint64_t generation, const protocol::fetch_response_data::partition_data& p) {
  // KIP-320: our log has records the leader does not: cut where that epoch ends.
  const replication::diverging_epoch diverging{p.diverging_epoch.epoch, p.diverging_epoch.end_offset};
  const model::offset cut = replication::truncation_offset(
      diverging, rt->log->end_offset_for_epoch(model::leader_epoch{std::max(diverging.epoch, 0)}),
      rt->log->log_end_offset(), rt->log->high_watermark());
  const auto epochs_before = rt->log->leader_epochs();
  const model::offset end_before = rt->log->log_end_offset();
  if (auto r = rt->log->truncate_to(cut); !r.ok()) return stop_following(*rt, "cannot truncate a diverged log", r.error().message);
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
    host_.log_info("partition " + rt->name() + ": log diverged from leader " + std::to_string(rt->leader_id) +
                   " at epoch " + std::to_string(p.diverging_epoch.epoch) + ": removed offsets " +
                   std::to_string(end_after.value()) + "-" + std::to_string(end_before.value() - 1) + " (" +
                   std::to_string(end_before.value() - end_after.value()) +
                   " offsets the leader does not have); the log now ends at " + std::to_string(end_after.value()));
  }
  send_follower_fetch(shard, rt, generation);
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

void replica_fetcher::append_from_leader(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                         uint64_t generation, protocol::fetch_response_data::partition_data& p) {
  auto learn_high_watermark = [this, rt, hw = p.high_watermark, log_start = p.log_start_offset] {
    rt->log->set_high_watermark(model::offset{std::min(hw, rt->log->log_end_offset().value())});
    learn_log_start_offset(*rt, model::offset{log_start});
    rt->publish();
  };
  if (!p.records || p.records->empty()) {
    learn_high_watermark();
    return send_follower_fetch(shard, rt, generation);
  }
  auto appended = rt->append_replicated(*p.records);
  if (!appended.ok()) {
    uint64_t suppressed = 0;
    if (append_failures_.admit(rt->name(), suppressed)) {
      host_.log_error("partition " + rt->name() + ": cannot append what leader " + std::to_string(rt->leader_id) +
                      " sent: " + appended.error().message +
                      runtime::not_logged(suppressed, "such refusals", runtime::constants::repeated_warning_interval_ms));
    }
    return retry_follower_fetch(shard, rt, generation);
  }
  base::count_activity_bytes(base::cpu_activity::replicate_follower, p.records->size());
  rt->publish();
  if (!settings_.fsync_before_next_fetch) {
    learn_high_watermark();
    return send_follower_fetch(shard, rt, generation);
  }
  // Durable before the next fetch reports it (design.md section 6): acks=all is then on disk on
  // every in-sync replica.
  std::weak_ptr<partition_runtime> weak = rt;
  rt->log->flush_async(runtime_.disk(shard), [this, shard, weak, generation, learn_high_watermark](
                                                 storage::result<void> r) {
    auto rt = weak.lock();
    if (!rt) return;
    if (!r.ok()) {
      host_.log_error("partition " + rt->name() + ": fdatasync failed: " + r.error().message);
      if (rt->follower_generation == generation) rt->follower_fetching = false;
      return;
    }
    learn_high_watermark();
    send_follower_fetch(shard, rt, generation);
  });
}

}  // namespace ringlog::partition
