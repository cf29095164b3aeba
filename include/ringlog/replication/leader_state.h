#pragma once
// What a partition's leader knows of its followers, and the rules it derives from that (Kafka's
// pull model, design.md section 6; Kafka's Partition/Replica state in Partition.scala):
//   - each follower's log end offset, learnt from the offset it fetches at (under the default
//     flush policy a follower fsyncs before it fetches, so that offset is durable there);
//   - when it was last caught up (the rule of Kafka's Replica.updateFetchState: a fetch
//     at or past the leader's log end offset of that moment, or of the previous fetch, counts);
//   - the high watermark: the least log end offset over the in-sync replicas, counting a pending
//     ISR expansion already ("maximal ISR", KIP-497), never lower than it was, and only while the
//     committed ISR holds at least min.insync.replicas members;
//   - the ISR change to propose: followers not caught up for replica.lag.time.max.ms leave, a
//     follower that reached the high watermark and the current leader epoch's start joins. One
//     change in flight at a time; it takes effect once the controller committed it;
//   - each follower's log start offset, as its fetches report it, and the low watermark over the
//     replicas (DeleteRecords, KIP-107: Kafka's Partition.lowWatermarkIfLeader).
//
// Pure and deterministic: time comes in as arguments, nothing here touches a disk or a socket, so
// the same code runs in the broker and under the simulator.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ringlog/model/types.h"

namespace ringlog::replication {

/// A follower as its leader sees it during one leadership.
struct follower_state {
  int32_t replica_id = -1;
  /// Its log end offset as of its last fetch; -1 until it fetched in this leadership.
  model::offset log_end_offset{-1};
  /// Wall ms when it was last caught up with the leader (see the header comment).
  int64_t last_caught_up_ms = 0;
  int64_t last_fetch_ms = -1;
  /// The leader's log end offset at its last fetch (Kafka's lastFetchLeaderLogEndOffset).
  model::offset leader_end_at_last_fetch{-1};
  /// Its log start offset as its last fetch reported it (Fetch's LogStartOffset); -1 until it
  /// reported one in this leadership (Kafka's UnifiedLog.UnknownOffset).
  model::offset log_start_offset{-1};
  /// The broker epoch (its registration's) its last fetch named: Fetch v15's ReplicaState.ReplicaEpoch
  /// (KIP-903); -1 when not named. A broker that restarted, maybe with an empty disk, has a new
  /// one: what an earlier epoch's fetches reported says nothing about its log now.
  int64_t broker_epoch = -1;
};

class leader_state {
 public:
  /// Every `now_ms` of this class is base::clock::monotonic_ms (replica.lag.time.max.ms is a
  /// duration: a stepped wall clock must not drop followers from the ISR or keep lagging ones).
  /// A leadership that starts at `now_ms`: `replicas` and the committed `isr` (both node ids,
  /// `self` among the replicas). Every follower counts as caught up now, as Kafka resets them, so
  /// none leaves the ISR before replica.lag.time.max.ms has passed.
  leader_state(int32_t self, std::vector<int32_t> replicas, std::vector<int32_t> isr, int64_t now_ms);

  /// The committed metadata changed (an ISR change committed, or a replica set changed): the
  /// pending change, if any, is over. Followers new to the replica set start as not caught up.
  void set_committed(std::vector<int32_t> replicas, std::vector<int32_t> isr, int64_t now_ms);

  /// A fetch from follower `replica` at `fetch_offset` (its log end offset) while the leader's log
  /// ended at `leader_end`. False (and nothing changes) when `replica` is not a follower here.
  /// `broker_epoch`: the epoch the fetch named (follower_state::broker_epoch); a fetch naming
  /// another epoch than the previous one starts the follower's state afresh (KIP-903).
  bool on_fetch(int32_t replica, model::offset fetch_offset, model::offset leader_end, int64_t now_ms,
                int64_t broker_epoch = -1);
  /// The log start offset follower `replica`'s fetch reported (Fetch v5+ LogStartOffset; a
  /// follower raises its own to its leader's as the answers tell it, Kafka's
  /// maybeIncrementLogStartOffset). A negative `log_start_offset` (not reported) changes nothing.
  /// False (and nothing changes) when `replica` is not a follower here.
  bool on_follower_log_start(int32_t replica, model::offset log_start_offset);

  /// The low watermark (KIP-107; Kafka's Partition.lowWatermarkIfLeader): the least log start
  /// offset over `leader_log_start` and every follower that `alive` says is alive (Kafka: a
  /// registered, unfenced broker), counting a follower not heard from in this leadership as -1.
  /// A DeleteRecords of offset o is complete, on every live replica, once this is >= o.
  [[nodiscard]] model::offset low_watermark(model::offset leader_log_start,
                                            const std::function<bool(int32_t broker_id)>& alive) const;

  /// The high watermark the leader may move to: the least of `leader_end` (the leader's own log
  /// end; its durable end under the fsync flush policy) and each member's log end offset over
  /// the committed ISR plus a pending expansion; never below `current`. `current` when a member's
  /// offset is unknown or the committed ISR has fewer than `min_insync_replicas` members.
  [[nodiscard]] model::offset high_watermark(model::offset leader_end, model::offset current,
                                             int32_t min_insync_replicas) const;

  /// The ISR to propose now, or nullopt (no change due, or one already in flight). Followers of
  /// the ISR not caught up for more than `lag_max_ms` leave (never the leader itself); a follower
  /// outside it whose log end offset reached `high_watermark` and `epoch_start_offset` (the
  /// leader epoch's first offset, so it holds this leadership's records) joins, when
  /// `eligible` says it may (KIP-841: a fenced or stopping broker never joins; unset: every one).
  /// Replica order.
  [[nodiscard]] std::optional<std::vector<int32_t>> isr_change(
      int64_t now_ms, int64_t lag_max_ms, model::offset leader_end, model::offset high_watermark,
      model::offset epoch_start_offset, const std::function<bool(int32_t broker_id)>& eligible = {}) const;
  /// The change `isr` was sent to the controller: an expansion counts for the high watermark at
  /// once (maximal ISR); no other change is proposed until set_committed or proposal_failed.
  void proposal_sent(std::vector<int32_t> isr);
  /// The change was refused or lost: a new one may be proposed.
  void proposal_failed();

  [[nodiscard]] const std::vector<int32_t>& isr() const { return isr_; }
  [[nodiscard]] const std::vector<int32_t>& replicas() const { return replicas_; }
  [[nodiscard]] bool proposal_in_flight() const { return pending_.has_value(); }
  [[nodiscard]] const std::vector<follower_state>& followers() const { return followers_; }
  [[nodiscard]] const follower_state* follower(int32_t replica) const;
  /// KIP-903: whether follower `replica`'s last fetch named `broker_epoch`, its current
  /// registration's. Only then may what it fetched make it join the ISR: a broker that restarted
  /// (maybe with an empty disk) has a new epoch, and until its own fetches arrive the leader
  /// knows only how far its previous process had fetched.
  [[nodiscard]] bool fetched_under(int32_t replica, int64_t broker_epoch) const;

 private:
  [[nodiscard]] bool in(const std::vector<int32_t>& set, int32_t id) const;

  int32_t self_;
  std::vector<int32_t> replicas_;
  std::vector<int32_t> isr_;                      // committed
  std::optional<std::vector<int32_t>> pending_;   // sent, not yet committed
  std::vector<follower_state> followers_;         // every replica but self, replica order
};

}  // namespace ringlog::replication

namespace ringlog::replication {

/// DeleteRecords' special offset: the partition's high watermark (Kafka's
/// DeleteRecordsRequest.HIGH_WATERMARK; kafka-delete-records.sh's "offset": -1).
inline constexpr int64_t delete_records_high_watermark = -1;

/// The offset a DeleteRecords of `requested` raises the leader's log start offset to (KIP-107;
/// Kafka's Partition.deleteRecordsOnLeader and UnifiedLog.maybeIncrementLogStartOffset):
/// `high_watermark` for delete_records_high_watermark, `requested` when it lies in
/// [0, high_watermark] (inclusive: deleting up to the high watermark deletes every committed
/// record). nullopt, Kafka's OFFSET_OUT_OF_RANGE, for any other negative offset or one above the
/// high watermark. An offset below the current log start is returned as it is: raising the start
/// to it changes nothing.
std::optional<model::offset> delete_records_offset(int64_t requested, model::offset high_watermark);

/// The end of an epoch as a log's leader epoch cache knows it (partition_log::end_offset_for_epoch:
/// the largest epoch <= the one asked, and where it ends), nullopt when the log knows no such epoch.
using epoch_end = std::optional<std::pair<model::leader_epoch, model::offset>>;

/// Where a follower's log diverges from its leader's (KIP-320, Kafka's Partition.fetchRecords):
/// the follower fetches at `fetch_offset` having last appended a batch of `last_fetched_epoch`;
/// `leader_end` is the leader's end of that epoch (end_offset_for_epoch(last_fetched_epoch) on
/// the leader). Diverged when the leader knows no such epoch, knows only an older one, or its
/// epoch ends before `fetch_offset`: the answer names the epoch and end offset the follower must
/// truncate to. When the leader knows no epoch that old (its cache starts later), it answers
/// epoch 0 ending at `leader_log_start`: a conservative cut, after which the follower fetches
/// again (Kafka's (-1, -1) answer cannot be told from "no divergence" on the wire). nullopt: no
/// divergence (also when the follower has no epoch yet, last_fetched_epoch < 0).
struct diverging_epoch {
  int32_t epoch = -1;
  int64_t end_offset = -1;
};
std::optional<diverging_epoch> check_divergence(int32_t last_fetched_epoch, model::offset fetch_offset,
                                                const epoch_end& leader_end, model::offset leader_log_start);

/// Where a follower truncates its log when its leader reported `diverging` (KIP-320's follower
/// side, Kafka's AbstractFetcherThread): when the follower knows the same epoch, at the lesser of
/// the leader's and its own end of that epoch (past its own end lie records of a later epoch the
/// leader never had); at its own end of its largest epoch <= it otherwise; never past its
/// `log_end_offset`; at its `high_watermark` when the leader knew no epoch that old.
/// `follower_end` is end_offset_for_epoch(diverging.epoch) on the follower.
model::offset truncation_offset(const diverging_epoch& diverging, const epoch_end& follower_end,
                                model::offset log_end_offset, model::offset high_watermark);

}  // namespace ringlog::replication
