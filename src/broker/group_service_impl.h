#pragma once
// The group service's private parts, shared by its files (group_service.cc and the group_*.cc files
// beside it): the per-shard state, the implementation class and the helpers more than one file uses.
// Kafka's counterpart: the state GroupCoordinator and GroupMetadataManager share (the groups of each
// __consumer_offsets partition, the pending JoinGroup/SyncGroup callbacks).
//
// Which file holds what: group_service.cc construction, loading and unloading a partition's groups,
// topic changes, the expiry sweep, persist; group_instances.cc REST consumer instances, their
// subscriptions and seek; group_instance_records.cc an instance's poll, commit and committed;
// group_nacks.cc nacks (retries and dead letters); group_kafka_clients.cc the Kafka protocol's group
// calls and the classic protocol's tick; group_admin.cc list, describe, delete, reset and lag.

#include "group_service.h"
#include "retries.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/base/assert.h"
#include "ringlog/group/coordinator_partition.h"
#include "ringlog/group/limits.h"

#include "group_instance_settings.h"   // after the headers it uses

namespace ringlog::broker::group_service_internal {

/// The broker error of a coordinator error (group::errc to broker::errc), its message kept.
error from_group(const group::error& e);

/// The key of instance `member_id` of `group_id` in shard_state's maps: the two ids joined by a
/// NUL, so the instances of one group sort together (namings_of walks them by that prefix).
std::string instance_key(std::string_view group_id, std::string_view member_id);

/// Why recently ended instances ended, so their next call can say so (40403 with the reason).
/// Bounded: the oldest reasons are forgotten first.
inline constexpr size_t ended_instances_remembered_max = 10'000;
/// REST consumer instances one coordinator shard holds (created, joined or not). Each is a few
/// hundred bytes here and a record in __consumer_offsets, kept until its lease
/// (consumer.instance.timeout.ms) ends: without a bound one client created 60,000 in 20 s and
/// grew the broker by 340 MB, kept across restarts (session 41's breaker). As many as a
/// coordinator holds groups (group::limits::groups_per_coordinator_max); past it, 429.
inline constexpr size_t consumer_instances_per_coordinator_max = group::limits::groups_per_coordinator_max;

/// Groups per shard whose refusal of a Kafka client (the group is held by REST/WebSocket
/// consumers) was logged: each such group is logged once, so a client retrying its JoinGroup every
/// second does not fill the log. When the set is full it is emptied and each group may be logged
/// once more: at most this many lines per refill, and a few hundred KB of names per shard.
inline constexpr size_t http_held_refusals_logged_max = 1'000;

struct shard_state {
  shard_state(uint64_t seed, int64_t initial_rebalance_delay_ms) : coordinator(seed, initial_rebalance_delay_ms) {}
  group::group_coordinator coordinator;
  /// Classic JoinGroup / SyncGroup requests the coordinator has not answered yet, by ticket.
  /// Bounded by the coordinator: one of each per classic member (limits::group_members_max per
  /// group, limits::groups_per_coordinator_max groups).
  group::classic_ticket next_ticket = 1;
  std::map<group::classic_ticket, std::function<void(join_group_answer)>> join_waiters;
  std::map<group::classic_ticket, std::function<void(sync_group_answer)>> sync_waiters;
  std::map<std::string, instance_settings> instances;  // instance_key -> settings
  std::map<std::string, std::string> ended;             // instance_key -> why it ended
  std::deque<std::string> ended_order;                  // oldest first, for the bound
  /// Tombstones of instance records whose member was found gone during a call (it has no shard
  /// to append from); the next expiry sweep appends them.
  group::record_list tombstones_due;
  std::map<std::string, std::deque<lag_sample>> lag_history;  // group -> samples, oldest first
  /// Groups whose refusal of a Kafka client was logged (http_held_refusals_logged_max).
  std::set<std::string> http_held_refusals_logged;
  /// When the expiry sweep next runs the coordinator's expire_offsets (offsets.retention.check.interval.ms).
  int64_t next_offsets_retention_check_ms = 0;

  void remember_end(const std::string& key, std::string why) {
    if (!ended.contains(key)) ended_order.push_back(key);
    ended[key] = std::move(why);
    while (ended_order.size() > ended_instances_remembered_max) {
      ended.erase(ended_order.front());
      ended_order.pop_front();
    }
  }
  /// "consumer instance 'i' of group 'g' ...": the reason it ended, or the generic not-found text.
  std::string not_found_message(const std::string& group_id, const std::string& instance_id) const {
    const std::string who = "consumer instance '" + instance_id + "' of group '" + group_id + "'";
    auto it = ended.find(instance_key(group_id, instance_id));
    if (it != ended.end()) return who + " " + it->second;
    return who + " not found: never created, deleted, or its lease expired";
  }
};

/// Log start and high watermark of one partition, from the broker's published figures.
struct log_bounds {
  model::offset log_start_offset{0};
  model::offset high_watermark{0};
  /// This node leads the partition and its high watermark is known (KIP-207): the figure is the
  /// partition's end, not a follower's lagging copy of it.
  bool high_watermark_established = true;
};

/// One partition read of a poll.
struct poll_slot {
  model::topic_partition partition;
  model::offset fetch_offset{0};
  std::optional<result<fetch_response>> fetched;
};

class group_service_impl final : public group_service {
 public:
  group_service_impl(broker& b, group_host& host, runtime::shard_runtime& runtime, const base::clock& clock,
                     const group_service_options& options);

  void start(std::function<void(result<void>)> done) override;
  void topics_changed() override;
  void offsets_partition_led(int32_t partition, bool leads) override;
  void topic_deleted(const std::string& topic) override;
  void stop() override { stopping_ = true; }

  void create_consumer(consumer_instance_config config, std::function<void(result<consumer_instance>)> done) override;
  void describe_consumer(std::string group_id, std::string instance_id,
                         std::function<void(result<consumer_instance>)> done) override;
  void delete_consumer(std::string group_id, std::string instance_id, std::function<void(result<void>)> done) override;
  void subscribe(std::string group_id, std::string instance_id, group::subscription sub,
                 std::function<void(result<void>)> done) override;
  void subscription(std::string group_id, std::string instance_id,
                    std::function<void(result<group::subscription>)> done) override;
  void unsubscribe(std::string group_id, std::string instance_id, std::function<void(result<void>)> done) override;
  void assign(std::string group_id, std::string instance_id, group::partition_set partitions,
              std::function<void(result<void>)> done) override;
  void assignments(std::string group_id, std::string instance_id,
                   std::function<void(result<group::partition_set>)> done) override;
  void seek(std::string group_id, std::string instance_id, std::vector<seek_request> seeks,
            std::function<void(result<void>)> done) override;
  void poll(std::string group_id, std::string instance_id, poll_request request,
            std::function<void(result<std::vector<consumed_record>>)> done) override;
  void commit(std::string group_id, std::string instance_id, std::optional<std::vector<group::processed_offset>> offsets,
              std::function<void(result<group::partition_map<group::committed_offset>>)> done) override;
  void committed(std::string group_id, std::string instance_id, group::partition_set partitions,
                 std::function<void(result<group::partition_map<group::committed_offset>>)> done) override;
  void nack(std::string group_id, std::string instance_id, std::vector<nack_request> nacks,
            std::function<void(result<void>)> done) override;
  // The dead-letter calls read the group's namings on its coordinator's shard (a broker that is
  // not the coordinator knows only the defaults), then work through the broker API.
  void dead_letter_topics(std::string group_id,
                          std::function<void(result<std::vector<dead_letter_topic_info>>)> done) override {
    on_coordinator(group_id, [this, group_id, done = std::move(done)](size_t, shard_state& st) mutable {
      retries::dead_letter_topics(broker_, group_id, namings_of(st, group_id), std::move(done));
    });
  }
  void dead_letters(dead_letters_request request, std::function<void(result<std::vector<dead_letter>>)> done) override {
    const std::string group_id = request.group_id;
    on_coordinator(group_id, [this, group_id, request = std::move(request), done = std::move(done)](
                                 size_t, shard_state& st) mutable {
      retries::dead_letters(broker_, std::move(request), namings_of(st, group_id), std::move(done));
    });
  }
  void redrive(redrive_request request, std::function<void(result<redrive_result>)> done) override {
    const std::string group_id = request.group_id;
    on_coordinator(group_id, [this, group_id, request = std::move(request), done = std::move(done)](
                                 size_t, shard_state& st) mutable {
      retries::redrive(broker_, std::move(request), namings_of(st, group_id), std::move(done));
    });
  }
  void commit_standalone(std::string group_id, std::vector<group::offset_commit> offsets,
                         std::function<void(result<group::partition_map<group::committed_offset>>)> done) override;
  void join_group(std::string group_id, group::classic_join_request request,
                  std::function<void(join_group_answer)> done) override;
  void sync_group(std::string group_id, group::classic_sync_request request,
                  std::function<void(sync_group_answer)> done) override;
  /// Runs on the coordinator's shard after classic_join: when the join of `ticket` was refused
  /// because REST/WebSocket consumers hold the group, one info line naming the group (once per
  /// group, http_held_refusals_logged_max). The Kafka client only gets INCONSISTENT_GROUP_PROTOCOL
  /// (23) without the text, so the line is where an operator learns why.
  void log_http_held_refusal(shard_state& st, const std::string& group_id, const group::classic_effects& effects,
                             group::classic_ticket ticket);
  void heartbeat_group(std::string group_id, std::string member_id, std::optional<std::string> group_instance_id,
                       int32_t generation, std::function<void(result<void>)> done) override;
  void leave_group(std::string group_id, std::vector<group::classic_member_identity> members,
                   std::function<void(result<std::vector<std::optional<error>>>)> done) override;
  void commit_kafka(std::string group_id, std::string member_id, std::optional<std::string> group_instance_id,
                    int32_t generation, std::vector<group::offset_commit> offsets,
                    std::function<void(result<offset_commit_answer>)> done) override;
  void txn_commit(std::string group_id, std::string member_id, std::optional<std::string> group_instance_id,
                  int32_t generation, model::producer_id producer_id, std::vector<group::offset_commit> offsets,
                  std::function<void(result<offset_commit_answer>)> done) override;
  /// Moves the offsets of partitions the metadata does not hold out of `offsets` into the answer's
  /// `refused` (unknown_topic_or_partition), as KafkaApis does before the coordinator sees them.
  offset_commit_answer refuse_unknown_partitions(std::vector<group::offset_commit>& offsets) const;
  void complete_txn_offsets(int32_t partition, model::producer_id producer_id, bool committed,
                            std::function<void(result<void>)> done) override;
  void delete_offsets(std::string group_id, group::partition_set partitions,
                      std::function<void(result<group::partition_map<std::optional<error>>>)> done) override;
  void group_committed(std::string group_id,
                       std::function<void(result<group::partition_map<group::committed_offset>>)> done) override;
  void fetch_offsets(std::string group_id, std::function<void(result<group_offsets>)> done) override;
  void list_groups(std::function<void(result<std::vector<group::group_listing>>)> done) override;
  [[nodiscard]] group_coordinator_route coordinator_route(const std::string& group_id) const override {
    return host_.offsets_leader_route(partition_of(group_id));
  }
  void describe_group(std::string group_id, std::function<void(result<group_details>)> done) override;
  void group_lag(std::string group_id, std::function<void(result<std::vector<group::partition_lag>>)> done) override;
  void lag_history(std::string group_id, std::function<void(result<std::vector<lag_sample>>)> done) override;
  void delete_group(std::string group_id, std::function<void(result<void>)> done) override;
  void reset_offsets(reset_offsets_request request,
                     std::function<void(result<group::partition_map<model::offset>>)> done) override;

  /// Why a new consumer instance of `group_id` may not be created on this shard, if it may not:
  /// consumer_instances_per_coordinator_max (throttling_quota_exceeded, HTTP 429) or the group's
  /// group::limits::group_members_max counted over its instances (group_max_size_reached).
  std::optional<error> instance_bound_refusal(const shard_state& st, const std::string& group_id);

 private:
  int32_t partition_of(std::string_view group_id) const {
    return group::coordinator_partition_for(group_id, offsets_partitions_);
  }
  size_t shard_of_group(std::string_view group_id) const {
    return host_.owner_shard(consumer_offsets_topic, partition_of(group_id));
  }
  /// Why this node may not serve calls of `group_id`: it does not lead the group's
  /// __consumer_offsets partition (Kafka's NOT_COORDINATOR; the message names the coordinator).
  ///
  /// A node that leads the partition but has not loaded its groups yet (the new metadata reaches
  /// the shards before the leadership change is applied and the log replayed) refuses with
  /// COORDINATOR_LOAD_IN_PROGRESS (14), as Kafka's GroupCoordinator does, so a Kafka client
  /// retries here instead of looking for another coordinator: served from an empty state, a
  /// member's call would find no member and forget its instance. The refusal asks the shard to
  /// load the partition should the leadership change not have done so (idempotent).
  std::optional<error> not_coordinator(const std::string& group_id) {
    const int32_t p = partition_of(group_id);
    if (host_.leads_offsets_partition(p)) {
      if (loaded_[static_cast<size_t>(p)].load(std::memory_order_acquire)) return std::nullopt;
      const size_t shard = host_.owner_shard(consumer_offsets_topic, p);
      runtime_.post(shard, [this, p] { load_if_led(p); });
      return error{errc::coordinator_load_in_progress, "group '" + group_id +
                                                            "' is being loaded by this broker, the new leader of " +
                                                            consumer_offsets_topic + "-" + std::to_string(p) + ": retry"};
    }
    // Read once more: the metadata may have made this broker the leader since (not_coordinator_refusal).
    return not_coordinator_refusal(group_id, host_.offsets_leader_route(p));
  }
  /// On the group's shard: why a call that not_coordinator let through may not be answered here
  /// after all. The partition's leadership moved while the call was on its way to the shard (it
  /// unloaded the partition's groups meanwhile): the instance lives on at the new coordinator,
  /// so the call is refused as not_coordinator would refuse it now (retriable, 503), never
  /// answered "not found" (a client would create a new instance and lose its positions).
  std::optional<error> moved_away(const std::string& group_id) {
    const int32_t p = partition_of(group_id);
    if (loaded_[static_cast<size_t>(p)].load(std::memory_order_acquire)) return std::nullopt;
    return not_coordinator(group_id).value_or(
        error{errc::coordinator_load_in_progress, "group '" + group_id + "' is being loaded by this broker: retry"});
  }
  /// Runs fn(shard, state) on the group's coordinator shard.
  template <typename F>
  void on_coordinator(const std::string& group_id, F fn) {
    const size_t shard = shard_of_group(group_id);
    runtime_.post(shard, [this, shard, fn = std::move(fn)]() mutable { fn(shard, *shards_[shard]); });
  }
  /// On `shard`: replays __consumer_offsets partition `p` into the shard's coordinator and REST
  /// instances. Errors: kafka_storage_error naming the record that does not decode.
  result<void> replay_partition(size_t shard, int32_t p);
  /// start(): replays the led partitions from `p` on, one a task, then the timers, then `done`.
  void replay_led_from(int32_t p, std::function<void(result<void>)> done);
  /// On `shard`: forgets the groups (and REST instances) of __consumer_offsets partition `p`.
  void unload_partition(size_t shard, int32_t p);
  /// On the partition's shard: replays partition `p` when this node leads it and has not loaded it.
  void load_if_led(int32_t p);
  /// On `shard`: committed() once no open transaction holds offsets of the wanted partitions
  /// pending, for a read_committed instance (KIP-447's require_stable, as the Java consumer's
  /// committed() asks); looks again every few ms until `deadline_ms`, then request_timed_out.
  void committed_when_stable(size_t shard, std::string group_id, std::string instance_id,
                             group::partition_set partitions, int64_t deadline_ms,
                             std::function<void(result<group::partition_map<group::committed_offset>>)> done);
  /// On `shard`: committed()'s answer now (a heartbeat of the instance, its committed offsets).
  void committed_now(size_t shard, shard_state& st, const std::string& group_id, const std::string& instance_id,
                     const group::partition_set& partitions,
                     std::function<void(result<group::partition_map<group::committed_offset>>)> done);
  /// On `shard`: appends `records` to their partitions (by the group in each key), then done.
  void persist(size_t shard, group::record_list records, std::function<void(result<void>)> done);
  /// On a member call that failed with unknown_member_id: forget its REST settings.
  /// The error of a consumer instance's call: an unknown group means an unknown instance too
  /// (40403, not "group not found"); a gone member's REST settings are forgotten.
  error member_error(shard_state& st, const std::string& group_id, const std::string& member_id, const group::error& e) {
    if (e.code != group::errc::unknown_member_id && e.code != group::errc::group_id_not_found) return from_group(e);
    if (auto moved = moved_away(group_id)) return *moved;   // unloaded, not gone: nothing to forget
    if (st.instances.erase(instance_key(group_id, member_id)) > 0) {
      st.tombstones_due.push_back(instance_tombstone(group_id, member_id));
    }
    return error{errc::unknown_member_id, st.not_found_message(group_id, member_id)};
  }
  /// prepare_instance for a call answered through `done`: on an error, its records are appended
  /// and `done` answered, and nullopt returned; else the settings (nullptr: none held).
  template <typename T>
  std::optional<instance_settings*> prepared(size_t shard, shard_state& st, const std::string& group_id,
                                             const std::string& instance_id, group::record_list& records,
                                             const std::function<void(result<T>)>& done) {
    auto r = prepare_instance(st, group_id, instance_id, records);
    if (r.ok()) return r.value();
    persist(shard, std::move(records), [](result<void>) {});
    done(r.error());
    return std::nullopt;
  }
  /// Before a call of instance (group_id, instance_id) that needs its membership: an instance
  /// that has not joined but has a subscription joins with it now (after a restart dropped its
  /// membership); one without stays as it is. Appends the records of that to `records`. Returns
  /// the instance's settings, or nullptr for an instance this service holds no settings of (the
  /// coordinator then decides). Errors: unknown_member_id for an instance whose lease lapsed.
  result<instance_settings*> prepare_instance(shard_state& st, const std::string& group_id,
                                              const std::string& instance_id, group::record_list& records);
  /// Joins a not-joined instance and applies its subscription (s.sub); on a refused
  /// subscription it leaves again (it stays not joined). Appends records.
  result<void> join_instance(shard_state& st, instance_settings& s, group::record_list& records);
  /// Subscribe, assign or unsubscribe an instance (`sub`, kind none = unsubscribe): joins a
  /// not-joined one first (except to unsubscribe), then records the subscription with its settings.
  void change_subscription(std::string group_id, std::string instance_id, group::subscription sub,
                           std::function<void(result<void>)> done);
  /// Adds to `out` each of `named` (a reset's single partitions, --topic T:0,1) not already there
  /// through a whole topic of `whole_topics`. The error of an unknown topic, or
  /// unknown_topic_or_partition naming a partition the topic does not have; nullopt when all exist.
  std::optional<error> add_named_partitions(const std::vector<model::topic_partition>& named,
                                            const std::set<std::string>& whole_topics,
                                            std::vector<model::topic_partition>& out);
  /// This node's own figures of `tp`'s log start and high watermark (describe_topic): lags only,
  /// where a figure not established by a leader is reported as unknown (lags_of).
  std::optional<log_bounds> bounds_of(const model::topic_partition& tp);
  /// Each partition's log start and end (high watermark) as its LEADER tells them
  /// (broker::list_offsets, which is forwarded there), and with `timestamp_ms` the first offset at
  /// or after it: the coordinator may hold no replica of the partition (its figure is 0) or a
  /// follower's lagging one, and a reset to them would rewind a group (the new user of session
  /// 24: auto.offset.reset=latest read whole partitions, `groups reset --to latest` planned 0).
  /// `done` runs on `shard` with the partitions whose leader answered every ask, and the first
  /// error of the others.
  struct leader_bounds {
    group::partition_map<group::partition_offsets> bounds;
    std::optional<error> failure;
  };
  void leader_bounds_of(size_t shard, const std::vector<model::topic_partition>& partitions,
                        std::optional<int64_t> timestamp_ms, std::function<void(leader_bounds)> done);
  /// auto.offset.reset of an instance's partitions that have no position (`partitions`): each
  /// seeks to its leader's log start (earliest, and always for the group's retry topics) or end
  /// (latest), if it still has no position then; a partition whose leader did not answer keeps
  /// none (the next poll asks again). `then` runs on `shard`.
  void reset_to_leader_edges(size_t shard, const std::string& group_id, const std::string& instance_id,
                             const std::vector<model::topic_partition>& partitions, std::function<void()> then);
  /// After a read out of range (`out_of_range`: each partition and the offset it read at), the
  /// instance's `reset` policy seeks each to its leader's log start or end, if its position is
  /// still that offset once the leader answered.
  void reset_out_of_range(size_t shard, const std::string& group_id, const std::string& instance_id,
                          group::offset_reset reset, group::partition_map<model::offset> out_of_range);
  void schedule_expiry(size_t shard);
  /// On `shard`, from the expiry sweep, at most every offsets.retention.check.interval.ms: the
  /// coordinator's expire_offsets (KIP-211), a group with a REST consumer instance held here
  /// counting as in use (its member may not have joined again since a restart). Appends the
  /// tombstones to `records`, forgets the lag history of groups that went, one info line a group.
  void expire_offsets(shard_state& st, int64_t now_ms, group::record_list& records);
  /// On `shard` every classic_tick_interval_ms: the coordinator's classic_tick.
  void schedule_classic_tick(size_t shard);
  /// On `shard`: appends the records of `effects`, then answers its tickets (and runs `after`).
  void deliver(size_t shard, group::classic_effects effects, std::function<void(result<void>)> after = nullptr);
  /// On `shard`, lag_history_interval_ms after the last round ended: one total-lag sample per
  /// group of that shard (sample_lag_next walks them).
  void schedule_lag_sampling(size_t shard);
  /// On `shard`: samples group `round[next]` (group_lag), then the next one; past the last,
  /// schedules the next round. Each step is posted, so the walk never grows the stack.
  void sample_lag_next(size_t shard, std::shared_ptr<std::vector<std::string>> round, size_t next);
  /// On the group's shard: lag of every committed partition and every owned one.
  /// `high_watermarks`: each partition's end to measure to, as the leaders reported it; a
  /// partition missing from it is looked up in this node's state (and added).
  result<std::vector<group::partition_lag>> lags_of(shard_state& st, const std::string& group_id,
                                                    group::partition_map<model::offset>& high_watermarks);
  void poll_heartbeat(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                      int64_t deadline_ms, std::function<void(result<std::vector<consumed_record>>)> done);
  /// Nothing to return yet (or less than fetch.min.bytes): another round once an append moves
  /// one of the `watched` partitions past its offset (a long-poll fetch of each parks on the
  /// partition's waiters, as Kafka's DelayedFetch), or after poll_retry_interval_ms when nothing
  /// is watched or a watch failed; empty at the deadline.
  void poll_later(size_t shard, std::string group_id, std::string instance_id, poll_request request, int64_t deadline_ms,
                  std::function<void(result<std::vector<consumed_record>>)> done,
                  std::vector<std::pair<model::topic_partition, model::offset>> watched = {});
  /// `edges_asked`: reset_to_leader_edges ran for this round (a partition still without a
  /// position is skipped until the next poll).
  void poll_round(size_t shard, std::string group_id, std::string instance_id, poll_request request, int64_t deadline_ms,
                  std::function<void(result<std::vector<consumed_record>>)> done, bool edges_asked = false);
  void poll_finish(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                   int64_t deadline_ms, std::shared_ptr<std::vector<poll_slot>> slots,
                   std::function<void(result<std::vector<consumed_record>>)> done);
  group::topic_map current_topics();
  /// After a nack's copies are durable, on the coordinator: a nacked offset that is the
  /// committed offset of its partition counts as processed, so the commit moves past it (and
  /// past every offset after it this instance nacked).
  void commit_nacked(std::string group_id, std::string instance_id, std::vector<nack_request> nacks,
                     std::function<void(result<void>)> done);
  delay::retry_policy broker_retry_defaults() const { return retry_defaults_of(broker_.config()); }
  /// The settings an instance's nacks use: its own, or the broker's defaults.
  delay::retry_policy policy_of(const instance_settings* s) const {
    return s && s->retry ? *s->retry : broker_retry_defaults();
  }
  /// On the coordinator: the policies whose topic names the group's retry and dead-letter topics
  /// may have: the broker's defaults and each instance's of the group, distinct by templates.
  std::vector<delay::retry_policy> namings_of(const shard_state& st, const std::string& group_id) const;

  broker& broker_;
  group_host& host_;
  runtime::shard_runtime& runtime_;
  const base::clock& clock_;
  int32_t offsets_partitions_;
  /// Per __consumer_offsets partition: its groups are loaded on its shard (set there at the end of
  /// replay_partition, cleared by unload_partition); read by not_coordinator on any thread.
  std::unique_ptr<std::atomic<bool>[]> loaded_;
  int64_t expiry_interval_ms_;
  int64_t offsets_retention_ms_;                   // offsets.retention.minutes, in ms
  int64_t offsets_retention_check_interval_ms_;    // offsets.retention.check.interval.ms
  std::vector<std::unique_ptr<shard_state>> shards_;  // shards_[i] is touched only on shard i's thread
  std::atomic<bool> stopping_{false};
};

}  // namespace ringlog::broker::group_service_internal
