#pragma once
// The replica fetcher and the leader's side of replica fetches (issue 28 stage C; design.md
// section 6, Kafka's pull model, KIP-101/279/320/497, KIP-73's replication throttles), defined in
// src/partition/replica_fetcher.cc and replica_fetch_server.cc:
//   - replica_fetcher (replica_fetcher.cc, Kafka's ReplicaFetcherThread): on a follower, one
//     fetch loop per partition to its leader, appending what it sends, truncating where the
//     leader says the logs diverge (KIP-320), learning the high watermark and the leader's log
//     start offset (KIP-107); and the per-shard replication tick (ISR checks, acks=all
//     deadlines, idle followers);
//   - replica_fetch_server (replica_fetch_server.cc, Kafka's ReplicaManager.fetchMessages for a
//     replica id and Partition.maybeShrinkIsr/maybeExpandIsr): on the leader, followers' Fetch
//     requests, parked until there is something new, and the ISR changes leader_state asks for,
//     proposed to the controller with AlterPartition.
// Both reach the broker only through replica_fetcher_host (replica_manager implements it,
// src/broker/replication.cc; the broker owns one of each class and routes followers' Fetch
// requests to the server). Row 8 of docs/architecture.md's layering table: this module never
// includes ringlog/broker, group, txn or delay.
//
// Ownership by shard: everything about one partition runs on its shard's thread (the partition
// class asserts it); a transport answer is posted there before it is looked at.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ringlog/base/clock.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/partition/partition.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/constants.h"
#include "ringlog/runtime/log_rate_limit.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::partition {

/// What the replica fetcher and the leader's side reach in the broker (the broker's
/// replica_manager implements it, src/broker/replication.cc).
class replica_fetcher_host {
 public:
  virtual ~replica_fetcher_host() = default;
  /// The replica of `topic`/`partition` open on `shard`, or null (not a replica here, or not
  /// opened yet). On `shard`'s thread.
  virtual std::shared_ptr<partition_runtime> replica_on_shard(size_t shard, const std::string& topic,
                                                              int32_t partition) = 0;
  /// Calls `f` with each replica open on `shard`. On `shard`'s thread.
  virtual void for_each_replica(size_t shard,
                                const std::function<void(const std::shared_ptr<partition_runtime>&)>& f) = 0;
  /// The shard whose thread owns `topic`/`partition` (a stable hash: it never changes).
  [[nodiscard]] virtual size_t replica_shard(const std::string& topic, int32_t partition) const = 0;
  /// The metadata image as of the calling thread's view: topics by id, brokers' fencing.
  [[nodiscard]] virtual std::shared_ptr<const controller::metadata_image> replication_image() const = 0;
  /// follower.replication.throttled.rate (bytes/s, KIP-73) as of the calling thread's view.
  [[nodiscard]] virtual int64_t follower_replication_throttled_rate() const = 0;
  /// The broker-wide follower-side bucket that rate fills (KIP-73; the leader's is
  /// partition_context's): 0 when a throttled fetch may go at `now_ms` under `rate` (bytes/s),
  /// else the ms to wait; and the `bytes` an answer to one brought. Any thread.
  virtual int64_t acquire_follower_throttle(int64_t rate, int64_t now_ms) = 0;
  virtual void record_follower_throttle(int64_t bytes, int64_t rate, int64_t now_ms) = 0;
  /// The controller client: sends `request` (one partition's AlterPartition, KIP-497) to the
  /// active controller (this node's own, or a peer's over the cluster listener) and calls
  /// `answered` once, on any thread, with Kafka's error code of the partition (0: made;
  /// not_controller when there is no active controller or it cannot be reached) and a few
  /// words on who answered.
  virtual void send_alter_partition(protocol::alter_partition_request_data request,
                                    std::function<void(int16_t code, std::string why)> answered) = 0;
  virtual void log_info(const std::string& message) const = 0;
  virtual void log_error(const std::string& message) const = 0;
};

/// The static broker configs replication reads (Kafka's names).
struct replica_fetch_settings {
  int32_t node_id = -1;                    ///< node.id: this broker, the replica id of its fetches
  int64_t replica_fetch_wait_max_ms = 0;   ///< replica.fetch.wait.max.ms: the long-poll, both sides
  int32_t replica_fetch_max_bytes = 0;     ///< replica.fetch.max.bytes: batches per fetch (at least one)
  int64_t replica_fetch_backoff_ms = 0;    ///< replica.fetch.backoff.ms: after a failed fetch
  /// How long a follower may lag before it leaves the ISR: replica.lag.time.max.ms, never below
  /// broker.session.timeout.ms (a paused former leader still inside its leadership lease must
  /// stay in the ISR, or it could answer below acknowledged writes).
  int64_t isr_lag_time_max_ms = 0;
  /// log.flush.policy=fsync: appended records are durable before the next fetch reports them.
  bool fsync_before_next_fetch = true;
};

/// The leader's side of replica fetches and its ISR changes.
class replica_fetch_server {
 public:
  /// `cluster_transport` null: a single node, which proposes no ISR change. `stopping`: parked
  /// fetches are answered, not parked. Every reference outlives this object.
  replica_fetch_server(replica_fetcher_host& host, replica_fetch_settings settings, const base::clock& clock,
                       runtime::shard_runtime& runtime, const rpc::transport* cluster_transport,
                       const std::atomic<bool>& stopping);

  /// A follower's Fetch (`replica_id` >= 0; topics by id, v13 and up): each partition served on
  /// its shard (serve_replica_fetch) and the answers gathered into one response, sent with
  /// `respond` at the request's version. Only a fetch of one partition waits for new records
  /// (followers here send one per partition). Any thread.
  void handle_replica_fetch(const protocol::request_header_data& header, const protocol::fetch_request_data& request,
                            int32_t replica_id, rpc::respond_fn respond);
  /// On `rt`'s shard: one partition of a follower's fetch. Errors in the answer:
  /// not_leader_or_follower, fenced_leader_epoch / unknown_leader_epoch (KIP-320: the follower's
  /// epoch is older / newer), offset_out_of_range, or the diverging epoch (KIP-320). Nothing new
  /// (or held back by the leader throttle): parked up to `wait_ms`.
  /// `replica_epoch`: the broker epoch the fetch named (ReplicaState.ReplicaEpoch, KIP-903).
  void serve_replica_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt, int32_t replica_id,
                           int64_t replica_epoch, const protocol::fetch_request_data::fetch_partition& request,
                           int64_t wait_ms,
                           std::function<void(protocol::fetch_response_data::partition_data)> done);
  /// Leader, on `rt`'s shard: proposes the ISR change leader_state asks for (AlterPartition).
  void maybe_change_isr(size_t shard, const std::shared_ptr<partition_runtime>& rt);
  /// The leader's part of the replication tick: ISR changes, and acks=all appends past their
  /// deadline answered request_timed_out.
  void leader_tick(size_t shard, const std::shared_ptr<partition_runtime>& rt, int64_t now_ms);

 private:
  replica_fetcher_host& host_;
  const replica_fetch_settings settings_;
  const base::clock& clock_;
  runtime::shard_runtime& runtime_;
  const rpc::transport* cluster_transport_;
  const std::atomic<bool>& stopping_;
};

/// The follower's side: one fetch loop per followed partition, and the replication tick.
class replica_fetcher {
 public:
  /// `leader_side`: the tick's leader part; the follower's KIP-73 bucket is the host's. Every
  /// reference outlives this object.
  replica_fetcher(replica_fetcher_host& host, replica_fetch_settings settings, const base::clock& clock,
                  runtime::shard_runtime& runtime, rpc::transport* cluster_transport,
                  const std::atomic<bool>& stopping, replica_fetch_server& leader_side);

  /// Every replication_tick_ms on `shard` from now on: ISR shrinks, acks=all timeouts, idle
  /// followers. Called once per shard at start-up.
  void schedule_replication_tick(size_t shard);
  /// On `rt`'s shard: starts its fetch loop unless one runs (or this is a single node).
  void start_follower_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt);
  /// A new leadership (or none, or the replica deleted): loops of earlier generations end when
  /// their pending fetch answers, and a loop of the new one may start at once.
  static void new_follower_generation(partition_runtime& rt);

 private:
  void replication_tick(size_t shard);
  void send_follower_fetch(size_t shard, std::weak_ptr<partition_runtime> weak, uint64_t generation);
  void on_follower_fetch_response(size_t shard, const std::shared_ptr<partition_runtime>& rt, uint64_t generation,
                                  model::offset fetch_offset, rpc::result<protocol::bytes> response);
  /// KIP-320: the leader reports where our log diverges from its own: cut there, then fetch again.
  void truncate_diverged(size_t shard, const std::shared_ptr<partition_runtime>& rt, uint64_t generation,
                         const protocol::fetch_response_data::partition_data& p);
  /// Appends what the leader sent, made durable first under log.flush.policy=fsync, then learns
  /// the high watermark and fetches again.
  void append_from_leader(size_t shard, const std::shared_ptr<partition_runtime>& rt, uint64_t generation,
                          protocol::fetch_response_data::partition_data& p);
  /// Raises the replica's log start offset to its leader's (the fetch answer's LogStartOffset),
  /// at most to its high watermark, deleting the segments wholly below it (DeleteRecords and the
  /// leader's retention reach every replica, KIP-107). A storage error is logged (the log
  /// directory's failure channel has it too); following goes on.
  void learn_log_start_offset(partition_runtime& rt, model::offset leader_log_start);
  /// A replica that cannot follow its leader stops serving this partition until restarted; the
  /// leader drops it from the ISR after replica.lag.time.max.ms.
  void stop_following(partition_runtime& rt, const std::string& what, const std::string& why);
  void note_follower_failure(partition_runtime& rt, const std::string& what);
  void retry_follower_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt, uint64_t generation);
  [[nodiscard]] bool follows(const partition_runtime& rt) const;

  replica_fetcher_host& host_;
  const replica_fetch_settings settings_;
  const base::clock& clock_;
  runtime::shard_runtime& runtime_;
  rpc::transport* cluster_transport_;
  const std::atomic<bool>& stopping_;
  replica_fetch_server& leader_side_;
  /// "cannot append what leader N sent" is logged at most once per interval per partition: the
  /// follower retries at once and refused the same records 100 times in 10 s (session 40).
  runtime::log_rate_limit append_failures_{runtime::constants::repeated_warning_interval_ms};
  /// Timers hold a weak reference: one that fires after the fetcher is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::partition
