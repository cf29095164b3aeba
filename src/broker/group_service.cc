// Consumer groups on the broker (groups.h): each shard runs one group::group_coordinator for the
// groups whose __consumer_offsets partition it owns; every call hops to that shard, runs the
// pure state machine there, appends the records it returns, and answers once they are durable.

#include "group_service.h"
#include "retries.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <set>
#include <future>
#include <deque>
#include <map>
#include <mutex>

#include "ringlog/base/assert.h"
#include "ringlog/group/coordinator_partition.h"
#include "ringlog/group/limits.h"

#include "group_instance_settings.h"   // after the headers it uses

namespace ringlog::broker {
namespace {

/// How soon a records poll with nothing to watch (no partition owned yet) or whose watch failed
/// looks again before its timeout: short enough that a new assignment is read quickly, long
/// enough to cost nothing when idle. A poll with partitions waits on their appends instead.
constexpr int64_t poll_retry_interval_ms = 10;
/// How often each shard runs its coordinator's classic_tick: how late, at most, a classic
/// group's initial-delay or rebalance-timeout completion and a session expiry are noticed; one
/// pass over the shard's groups costs little at this rate.
constexpr int64_t classic_tick_interval_ms = 100;

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
    case gerrc::too_many_groups:
    case gerrc::too_many_partitions: return {berrc::throttling_quota_exceeded, e.message};
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

/// Why recently ended instances ended, so their next call can say so (40403 with the reason).
/// Bounded: the oldest reasons are forgotten first.
constexpr size_t ended_instances_remembered_max = 10'000;

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

/// Where each partition of a poll round is watched for appends: past what its read saw (the
/// records below were read already; a wake-up there would only read them again).
std::vector<std::pair<model::topic_partition, model::offset>> watch_points(const std::vector<poll_slot>& slots) {
  std::vector<std::pair<model::topic_partition, model::offset>> out;
  for (const auto& slot : slots) {
    model::offset from = slot.fetch_offset;
    if (slot.fetched && slot.fetched->ok()) from = std::max(from, slot.fetched->value().next_fetch_offset);
    out.emplace_back(slot.partition, from);
  }
  return out;
}

/// Issue 30: whether a pattern of member `member_id` of `group_id` may match `topic`: for a REST or
/// WebSocket consumer instance, its owner may READ it (a Kafka consumer never sees a topic it may not
/// DESCRIBE and skips one it may not READ; an HTTP poll has no per-topic error to skip it with). Host "" (an instance's address is not kept): only
/// `*`-host ACLs count here; every poll still checks READ from the caller's own address.
bool pattern_may_match(const broker& b, const shard_state& st, std::string_view group_id, std::string_view member_id,
                       const std::string& topic) {
  if (!b.authorizer_enabled()) return true;
  auto it = st.instances.find(instance_key(group_id, member_id));
  if (it == st.instances.end()) return true;   // a Kafka client's member: its client resolves the regex
  auto owner = security::kafka_principal::parse(it->second.info.owner);   // "" (before issue 29): ANONYMOUS
  const security::acl_action read{security::resource_type::topic, topic, security::acl_operation::read};
  return b.authorize(owner.ok() ? owner.value() : security::kafka_principal{}, "", read).allowed();
}

class group_service_impl final : public group_service {
 public:
  group_service_impl(broker& b, group_host& host, runtime::shard_runtime& runtime, const base::clock& clock,
                     int32_t offsets_partitions, int64_t expiry_interval_ms, int64_t initial_rebalance_delay_ms)
      : broker_(b), host_(host), runtime_(runtime), clock_(clock), offsets_partitions_(offsets_partitions),
        expiry_interval_ms_(expiry_interval_ms) {
    RINGLOG_ASSERT_OP(offsets_partitions_, >=, 1);
    loaded_ = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(offsets_partitions_));
    const uint64_t seed = static_cast<uint64_t>(clock_.now_ms());
    for (size_t s = 0; s < runtime_.shard_count(); ++s) {
      shards_.push_back(std::make_unique<shard_state>(seed ^ (s << 48), initial_rebalance_delay_ms));
      shard_state* st = shards_.back().get();
      st->coordinator.set_pattern_topic_filter(
          [this, st](std::string_view group_id, std::string_view member_id, const std::string& topic) {
            return pattern_may_match(broker_, *st, group_id, member_id, topic);
          });
    }
  }

  result<void> start() override;
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
  /// the shards before the leadership change is applied and the log replayed) refuses too, as
  /// Kafka's coordinator answers COORDINATOR_LOAD_IN_PROGRESS: served from an empty state, a
  /// member's call would find no member and forget its instance. The refusal asks the shard to
  /// load the partition should the leadership change not have done so (idempotent).
  std::optional<error> not_coordinator(const std::string& group_id) {
    const int32_t p = partition_of(group_id);
    if (host_.leads_offsets_partition(p)) {
      if (loaded_[static_cast<size_t>(p)].load(std::memory_order_acquire)) return std::nullopt;
      const size_t shard = host_.owner_shard(consumer_offsets_topic, p);
      runtime_.post(shard, [this, p] { load_if_led(p); });
      return error{errc::not_coordinator, "group '" + group_id + "' is being loaded by this broker, the new leader of " +
                                              consumer_offsets_topic + "-" + std::to_string(p) + ": retry"};
    }
    return error{errc::not_coordinator, "group '" + group_id + "' is coordinated by " + host_.offsets_leader_text(p) +
                                            " (the leader of " + consumer_offsets_topic + "-" + std::to_string(p) +
                                            "), not by this broker: send the group's calls there"};
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
  /// On `shard`: forgets the groups (and REST instances) of __consumer_offsets partition `p`.
  void unload_partition(size_t shard, int32_t p);
  /// On the partition's shard: replays partition `p` when this node leads it and has not loaded it.
  void load_if_led(int32_t p);
  /// On `shard`: appends `records` to their partitions (by the group in each key), then done.
  void persist(size_t shard, group::record_list records, std::function<void(result<void>)> done);
  /// On a member call that failed with unknown_member_id: forget its REST settings.
  /// The error of a consumer instance's call: an unknown group means an unknown instance too
  /// (40403, not "group not found"); a gone member's REST settings are forgotten.
  error member_error(shard_state& st, const std::string& group_id, const std::string& member_id, const group::error& e) {
    if (e.code != group::errc::unknown_member_id && e.code != group::errc::group_id_not_found) return from_group(e);
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
  std::optional<log_bounds> bounds_of(const model::topic_partition& tp);
  void schedule_expiry(size_t shard);
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
  void poll_round(size_t shard, std::string group_id, std::string instance_id, poll_request request, int64_t deadline_ms,
                  std::function<void(result<std::vector<consumed_record>>)> done);
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
  std::vector<std::unique_ptr<shard_state>> shards_;  // shards_[i] is touched only on shard i's thread
  std::atomic<bool> stopping_{false};
};

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
  st.coordinator.unload_groups([&](std::string_view group_id) { return partition_of(group_id) == p; });
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

result<void> group_service_impl::start() {
  for (int32_t p = 0; p < offsets_partitions_; ++p) {
    // A node coordinates the groups of the __consumer_offsets partitions it leads; partitions
    // whose leadership comes later are replayed then (offsets_partition_led).
    if (!host_.leads_offsets_partition(p)) continue;
    const size_t shard = host_.owner_shard(consumer_offsets_topic, p);
    std::promise<result<void>> replayed;
    runtime_.post(shard, [this, shard, p, &replayed] {
      unload_partition(shard, p);
      replayed.set_value(replay_partition(shard, p));
    });
    auto r = replayed.get_future().get();
    if (!r.ok()) return r.error();
  }
  topics_changed();
  for (size_t s = 0; s < shards_.size(); ++s) {
    schedule_expiry(s);
    schedule_lag_sampling(s);
    schedule_classic_tick(s);
  }
  return base::ok_v;
}

group::topic_map group_service_impl::current_topics() {
  group::topic_map topics;
  for (const auto& name : broker_.list_topics(false)) {
    broker_.describe_topic(name, [&topics, &name](result<topic_description> d) {
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
    persist(shard, std::move(expired.records), [](result<void>) {});
    schedule_expiry(shard);
  });
}

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

void group_service_impl::schedule_lag_sampling(size_t shard) {
  runtime_.post_after(shard, lag_history_interval_ms, [this, shard] {
    if (stopping_) return;
    auto& st = *shards_[shard];
    // Groups deleted meanwhile drop out; the round then samples the kept ones one at a time.
    std::map<std::string, std::deque<lag_sample>> kept;
    auto round = std::make_shared<std::vector<std::string>>();
    for (const auto& g : st.coordinator.list_groups()) {
      if (kept.size() == lag_history_groups_per_shard_max) break;
      auto& samples = kept[g.group_id];
      if (auto it = st.lag_history.find(g.group_id); it != st.lag_history.end()) samples = std::move(it->second);
      round->push_back(g.group_id);
    }
    st.lag_history = std::move(kept);
    sample_lag_next(shard, std::move(round), 0);
  });
}

void group_service_impl::sample_lag_next(size_t shard, std::shared_ptr<std::vector<std::string>> round, size_t next) {
  if (stopping_) return;
  if (next == round->size()) return schedule_lag_sampling(shard);
  // The same figure as GET .../lags (group_lag): to each last stable offset from the leader,
  // counting records only, so markers and aborted records never show as lag (issue 16). One
  // group at a time keeps a round's reads to one group's partitions in flight.
  const std::string& group_id = (*round)[next];
  group_lag(group_id, [this, shard, round, next](result<std::vector<group::partition_lag>> lags) {
    runtime_.post(shard, [this, shard, round, next, lags = std::move(lags)] {
      auto& st = *shards_[shard];
      auto it = st.lag_history.find((*round)[next]);
      if (lags.ok() && it != st.lag_history.end()) {
        int64_t total = 0;
        for (const auto& l : lags.value()) total += l.lag.value_or(0);
        it->second.push_back({clock_.now_ms(), total});
        while (it->second.size() > lag_history_samples_max) it->second.pop_front();
      }
      sample_lag_next(shard, round, next + 1);
    });
  });
}

void group_service_impl::persist(size_t shard, group::record_list records, std::function<void(result<void>)> done) {
  if (records.empty()) return done(base::ok_v);
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
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
      if (!r.ok() && !g->failure) g->failure = r.error();
      if (--g->remaining == 0) g->done(g->failure ? result<void>(*g->failure) : result<void>(base::ok_v));
    });
  }
}

std::optional<log_bounds> group_service_impl::bounds_of(const model::topic_partition& tp) {
  std::optional<log_bounds> out;
  broker_.describe_topic(tp.topic, [&out, &tp](result<topic_description> d) {
    if (!d.ok()) return;
    for (const auto& p : d->partitions) {
      if (p.partition == tp.partition) out = log_bounds{p.log_start_offset, p.high_watermark, p.high_watermark_established};
    }
  });
  return out;
}

// ---------------------------------------------------------------- instances

void group_service_impl::create_consumer(consumer_instance_config config,
                                         std::function<void(result<consumer_instance>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  std::string group_id = config.group_id;
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, config = std::move(config), done = std::move(done)](size_t shard, shard_state& st) {
    const int64_t now = clock_.now_ms();
    instance_settings settings;
    settings.join.client_name = config.name.value_or(config.client_name);
    settings.join.member_id = config.name;  // REST Proxy v2: the instance id is the name given
    settings.join.group_instance_id = config.group_instance_id;
    settings.join.assignor = config.assignor;
    settings.join.session_timeout_ms = config.session_timeout_ms;
    settings.join.rebalance_timeout_ms = config.session_timeout_ms;
    settings.join.auto_offset_reset = config.auto_offset_reset;
    settings.auto_offset_reset = config.auto_offset_reset;
    settings.session_timeout_ms = config.session_timeout_ms;
    settings.fetch_min_bytes = config.fetch_min_bytes;
    settings.read_committed = config.read_committed;
    settings.retry = config.retry;
    settings.last_seen_ms = now;
    if (config.name && st.instances.contains(instance_key(config.group_id, *config.name))) {
      return done(error{errc::duplicate_consumer_instance, "a consumer instance named '" + *config.name +
                                                               "' already exists in group '" + config.group_id + "'"});
    }
    // Refused now for what its join would be refused for; it joins on subscribe or assign.
    auto takeover = st.coordinator.check_join(config.group_id, settings.join, now);
    if (!takeover.ok()) return done(from_group(takeover.error()));
    group::record_list records;
    if (takeover.value()) {
      // A live static member with this group.instance.id (KIP-345: the client restarted): it
      // takes the member over now, with its partitions and without a rebalance.
      auto joined = st.coordinator.join(config.group_id, settings.join, now);
      if (!joined.ok()) return done(from_group(joined.error()));
      settings.join.member_id = joined->member_id;
      settings.joined = true;
      for (const auto& m : st.coordinator.describe_group(config.group_id).members) {
        if (m.member_id == joined->member_id) settings.sub = m.sub;
      }
      records = std::move(joined->records);
    } else if (!settings.join.member_id) {
      settings.join.member_id = st.coordinator.new_member_id(config.group_id, settings.join.client_name);
    }
    const std::string instance_id = *settings.join.member_id;
    settings.info = {config.group_id, instance_id, config.format, config.auto_commit_enable, config.request_timeout_ms, config.owner};
    const std::string key = instance_key(config.group_id, instance_id);
    st.ended.erase(key);
    records.push_back(instance_record(settings));
    st.instances[key] = settings;
    persist(shard, std::move(records), [done, info = settings.info](result<void> r) {
      if (!r.ok()) return done(r.error());
      done(info);
    });
  });
}

result<instance_settings*> group_service_impl::prepare_instance(shard_state& st, const std::string& group_id,
                                                                const std::string& instance_id,
                                                                group::record_list& records) {
  const std::string key = instance_key(group_id, instance_id);
  auto it = st.instances.find(key);
  if (it == st.instances.end()) return static_cast<instance_settings*>(nullptr);
  instance_settings& s = it->second;
  if (s.joined) return &s;
  const int64_t now = clock_.now_ms();
  if (now >= s.last_seen_ms + s.session_timeout_ms) {
    st.remember_end(key, "expired: no request within its session timeout (" + std::to_string(s.session_timeout_ms) +
                             " ms, consumer.instance.timeout.ms)");
    records.push_back(instance_tombstone(group_id, instance_id));
    st.instances.erase(it);
    return error{errc::unknown_member_id, st.not_found_message(group_id, instance_id)};
  }
  s.last_seen_ms = now;
  if (s.sub.kind != group::subscription_kind::none) RINGLOG_TRY(join_instance(st, s, records));
  return &s;
}

result<void> group_service_impl::join_instance(shard_state& st, instance_settings& s, group::record_list& records) {
  RINGLOG_ASSERT(!s.joined, "join_instance of a joined instance");
  const int64_t now = clock_.now_ms();
  const std::string& group_id = s.info.group_id;
  const std::string& instance_id = s.info.instance_id;
  auto joined = st.coordinator.join(group_id, s.join, now);
  if (!joined.ok()) return from_group(joined.error());
  RINGLOG_ASSERT(joined->member_id == instance_id || joined->static_rejoin, "a named join keeps its member id");
  records.insert(records.end(), joined->records.begin(), joined->records.end());
  s.joined = true;
  if (s.sub.kind == group::subscription_kind::none) return base::ok_v;
  auto applied = s.sub.kind == group::subscription_kind::manual
                     ? st.coordinator.assign(group_id, instance_id, s.sub.partitions, now)
                     : st.coordinator.subscribe(group_id, instance_id, s.sub, now);
  if (applied.ok()) {
    records.insert(records.end(), applied->records.begin(), applied->records.end());
    return base::ok_v;
  }
  // Refused (a bad pattern, a partition assigned elsewhere): it leaves, as if it never joined.
  auto left = st.coordinator.leave(group_id, instance_id, now);
  if (left.ok()) records.insert(records.end(), left->begin(), left->end());
  s.joined = false;
  return from_group(applied.error());
}

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

void group_service_impl::change_subscription(std::string group_id, std::string instance_id, group::subscription sub,
                                             std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, sub = std::move(sub), done = std::move(done)](
                               size_t shard, shard_state& st) mutable {
    const int64_t now = clock_.now_ms();
    auto it = st.instances.find(instance_key(group_id, instance_id));
    if (sub.kind == group::subscription_kind::topics) {
      retries::add_retry_topics(sub, group_id, policy_of(it != st.instances.end() ? &it->second : nullptr));
    }
    group::record_list records;
    const bool unsubscribe = sub.kind == group::subscription_kind::none;
    if (it != st.instances.end() && !it->second.joined) {
      auto prepared = prepare_instance(st, group_id, instance_id, records);
      if (!prepared.ok()) {
        persist(shard, std::move(records), [](result<void>) {});
        return done(prepared.error());
      }
      instance_settings& s = **prepared;
      if (!s.joined) {
        // Not a member yet: subscribing or assigning joins the group; unsubscribing changes nothing.
        s.sub = std::move(sub);
        if (!unsubscribe) {
          if (auto joined = join_instance(st, s, records); !joined.ok()) {
            s.sub = group::subscription{};
            persist(shard, std::move(records), [](result<void>) {});
            return done(joined.error());
          }
        }
        records.push_back(instance_record(s));
        return persist(shard, std::move(records), std::move(done));
      }
    }
    auto r = unsubscribe ? st.coordinator.unsubscribe(group_id, instance_id, now)
             : sub.kind == group::subscription_kind::manual
                 ? st.coordinator.assign(group_id, instance_id, sub.partitions, now)
                 : st.coordinator.subscribe(group_id, instance_id, sub, now);
    if (!r.ok()) {
      persist(shard, std::move(records), [](result<void>) {});
      return done(member_error(st, group_id, instance_id, r.error()));
    }
    records.insert(records.end(), r->records.begin(), r->records.end());
    if (auto s = st.instances.find(instance_key(group_id, instance_id)); s != st.instances.end()) {
      s->second.sub = std::move(sub);
      records.push_back(instance_record(s->second));
    }
    persist(shard, std::move(records), std::move(done));
  });
}

void group_service_impl::describe_consumer(std::string group_id, std::string instance_id,
                                           std::function<void(result<consumer_instance>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    auto it = st.instances.find(instance_key(group_id, instance_id));
    if (it != st.instances.end() && !it->second.joined) {
      group::record_list records;
      auto prepared = prepare_instance(st, group_id, instance_id, records);
      if (!prepared.ok()) {
        persist(shard, std::move(records), [](result<void>) {});
        return done(prepared.error());
      }
      consumer_instance info = (*prepared)->info;
      return persist(shard, std::move(records), [done, info](result<void> r) {
        if (!r.ok()) return done(r.error());
        done(info);
      });
    }
    auto d = st.coordinator.describe_group(group_id);
    bool member = std::any_of(d.members.begin(), d.members.end(),
                              [&](const group::member_description& m) { return m.member_id == instance_id; });
    if (it == st.instances.end() || !member) {
      return done(error{errc::unknown_member_id, st.not_found_message(group_id, instance_id)});
    }
    done(it->second.info);
  });
}

void group_service_impl::delete_consumer(std::string group_id, std::string instance_id,
                                         std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    const std::string key = instance_key(group_id, instance_id);
    auto it = st.instances.find(key);
    if (it != st.instances.end() && !it->second.joined) {
      st.instances.erase(it);
      st.remember_end(key, "was deleted");
      return persist(shard, {instance_tombstone(group_id, instance_id)}, std::move(done));
    }
    auto left = st.coordinator.leave(group_id, instance_id, clock_.now_ms());
    const bool had_settings = st.instances.erase(key) > 0;
    if (!left.ok()) {
      if (had_settings) st.tombstones_due.push_back(instance_tombstone(group_id, instance_id));
      return done(member_error(st, group_id, instance_id, left.error()));
    }
    st.remember_end(key, "was deleted");
    auto records = std::move(left.value());
    records.push_back(instance_tombstone(group_id, instance_id));
    persist(shard, std::move(records), std::move(done));
  });
}

void group_service_impl::subscribe(std::string group_id, std::string instance_id, group::subscription sub,
                                   std::function<void(result<void>)> done) {
  if (sub.kind == group::subscription_kind::none || sub.kind == group::subscription_kind::manual) {
    return done(error{errc::inconsistent_subscription, "subscribe takes a topic list or a pattern"});
  }
  // A topic list gets the group's retry topics added on the coordinator (change_subscription),
  // where the instance's retry.topic.template is known.
  change_subscription(std::move(group_id), std::move(instance_id), std::move(sub), std::move(done));
}

void group_service_impl::unsubscribe(std::string group_id, std::string instance_id,
                                     std::function<void(result<void>)> done) {
  change_subscription(std::move(group_id), std::move(instance_id), group::subscription{}, std::move(done));
}

void group_service_impl::assign(std::string group_id, std::string instance_id, group::partition_set partitions,
                                std::function<void(result<void>)> done) {
  group::subscription sub;
  sub.kind = group::subscription_kind::manual;
  sub.partitions = std::move(partitions);
  change_subscription(std::move(group_id), std::move(instance_id), std::move(sub), std::move(done));
}

void group_service_impl::subscription(std::string group_id, std::string instance_id,
                                      std::function<void(result<group::subscription>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    group::subscription sub;
    if (*s && !(*s)->joined) {
      sub = (*s)->sub;
    } else {
      auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
      if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
      for (const auto& m : st.coordinator.describe_group(group_id).members) {
        if (m.member_id == instance_id) sub = m.sub;
      }
      records.insert(records.end(), hb->records.begin(), hb->records.end());
    }
    // The retry topics subscribe() added are the broker's, not the client's: not shown.
    std::set<std::string> listed(sub.topics.begin(), sub.topics.end());
    const delay::retry_policy policy = policy_of(*s);
    std::erase_if(sub.topics, [&](const std::string& t) {
      auto original = delay::original_topic_of(policy, t, group_id, false);
      return original && listed.contains(*original);
    });
    persist(shard, std::move(records), [done, sub](result<void> r) {
      if (!r.ok()) return done(r.error());
      done(sub);
    });
  });
}

void group_service_impl::assignments(std::string group_id, std::string instance_id,
                                     std::function<void(result<group::partition_set>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, done = std::move(done)](size_t shard, shard_state& st) {
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    group::partition_set owned;   // an instance that has not joined owns nothing
    if (!*s || (*s)->joined) {
      auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
      if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
      owned = hb->assignment.owned;
      records.insert(records.end(), hb->records.begin(), hb->records.end());
    }
    persist(shard, std::move(records), [done, owned](result<void> r) {
      if (!r.ok()) return done(r.error());
      done(owned);
    });
  });
}

void group_service_impl::seek(std::string group_id, std::string instance_id, std::vector<seek_request> seeks,
                              std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  // Resolve every seek to an offset first (beginning/end from the published bounds, timestamps
  // through list_offsets on the partition's shard), then apply all of them on the coordinator.
  struct gather {
    std::mutex mutex;
    std::vector<seek_request> seeks;
    std::vector<int64_t> offsets;
    std::optional<error> failure;
    std::atomic<size_t> remaining{0};
  };
  auto g = std::make_shared<gather>();
  g->seeks = std::move(seeks);
  g->offsets.resize(g->seeks.size());
  auto apply = [this, g, group_id, instance_id, done]() {
    on_coordinator(group_id, [this, g, group_id, instance_id, done](size_t shard, shard_state& st) {
      if (g->failure) return done(*g->failure);
      group::record_list records;
      auto s = prepared(shard, st, group_id, instance_id, records, done);
      if (!s) return;
      persist(shard, std::move(records), [](result<void>) {});
      if (*s && !(*s)->joined) {
        if (g->seeks.empty()) return done(base::ok_v);
        return done(error{errc::partition_not_owned, "consumer instance '" + instance_id + "' does not own " +
                                                         g->seeks.front().partition.directory_name() +
                                                         ": it has not subscribed or been assigned partitions"});
      }
      auto owned = st.coordinator.positions_for_fetch(group_id, instance_id);
      if (!owned.ok()) {
        return done(member_error(st, group_id, instance_id, owned.error()));
      }
      for (const auto& s : g->seeks) {
        bool is_owned = std::any_of(owned->begin(), owned->end(),
                                    [&](const group::fetch_position& f) { return f.partition == s.partition; });
        if (!is_owned) {
          return done(error{errc::partition_not_owned, "consumer instance '" + instance_id + "' does not own " +
                                                           s.partition.directory_name() + " now"});
        }
      }
      for (size_t i = 0; i < g->seeks.size(); ++i) {
        auto r = st.coordinator.seek(group_id, instance_id, g->seeks[i].partition, model::offset{g->offsets[i]});
        if (!r.ok()) return done(from_group(r.error()));
      }
      done(base::ok_v);
    });
  };
  g->remaining = g->seeks.size() + 1;
  auto finish_one = [g, apply]() {
    if (g->remaining.fetch_sub(1) == 1) apply();
  };
  for (size_t i = 0; i < g->seeks.size(); ++i) {
    const auto& s = g->seeks[i];
    if (s.kind == seek_kind::offset) {
      if (s.value < 0) {
        std::lock_guard lock(g->mutex);
        g->failure = error{errc::offset_out_of_range, "offset " + std::to_string(s.value) + " is negative"};
      }
      g->offsets[i] = s.value;
      finish_one();
      continue;
    }
    list_offsets_request req{s.partition,
                             s.kind == seek_kind::beginning ? offset_spec::earliest
                             : s.kind == seek_kind::end     ? offset_spec::latest
                                                            : offset_spec::timestamp,
                             s.value};
    broker_.list_offsets(req, [this, g, i, finish_one, tp = s.partition](result<list_offsets_response> r) {
      {
        std::lock_guard lock(g->mutex);
        if (!r.ok()) {
          if (!g->failure) g->failure = r.error();
        } else if (r->found_offset) {
          g->offsets[i] = r->found_offset->value();
        } else {
          // No record at or after the timestamp: the end of the log, like Kafka's offsetsForTimes.
          auto b = bounds_of(tp);
          g->offsets[i] = b ? b->high_watermark.value() : 0;
        }
      }
      finish_one();
    });
  }
  finish_one();
}

// ---------------------------------------------------------------- records

void group_service_impl::poll(std::string group_id, std::string instance_id, poll_request request,
                              std::function<void(result<std::vector<consumed_record>>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  const int64_t deadline = clock_.now_ms() + std::max<int64_t>(request.timeout_ms, 0);
  const size_t shard = shard_of_group(group_id);
  runtime_.post(shard, [this, shard, group_id, instance_id, request, deadline, done = std::move(done)]() mutable {
    poll_heartbeat(shard, group_id, instance_id, request, deadline, std::move(done));
  });
}

void group_service_impl::poll_heartbeat(size_t shard, std::string group_id, std::string instance_id,
                                        poll_request request, int64_t deadline_ms,
                                        std::function<void(result<std::vector<consumed_record>>)> done) {
  // Every round is a heartbeat: it keeps the lease and, with cooperative assignment, is when this
  // member drops revoked partitions and picks up the ones another member released meanwhile.
  auto& st = *shards_[shard];
  group::record_list records;
  auto s = prepared(shard, st, group_id, instance_id, records, done);
  if (!s) return;
  if (*s && !(*s)->joined) {
    // Neither subscribed nor assigned: there is nothing to read (Kafka's poll would refuse).
    persist(shard, std::move(records), [](result<void>) {});
    return done(std::vector<consumed_record>{});
  }
  auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
  if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
  records.insert(records.end(), hb->records.begin(), hb->records.end());
  persist(shard, std::move(records),
          [this, shard, group_id, instance_id, request, deadline_ms, done = std::move(done)](result<void> r) mutable {
            if (!r.ok()) return done(r.error());
            poll_round(shard, group_id, instance_id, request, deadline_ms, std::move(done));
          });
}

void group_service_impl::poll_later(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                                    int64_t deadline_ms,
                                    std::function<void(result<std::vector<consumed_record>>)> done,
                                    std::vector<std::pair<model::topic_partition, model::offset>> watched) {
  const int64_t now = clock_.now_ms();
  if (now >= deadline_ms || stopping_) return done(std::vector<consumed_record>{});
  auto next_round = [this, shard, group_id, instance_id, request, deadline_ms, done = std::move(done)](int64_t after_ms) mutable {
    runtime_.post_after(shard, after_ms, [this, shard, group_id, instance_id, request, deadline_ms, done = std::move(done)]() mutable {
      poll_heartbeat(shard, group_id, instance_id, request, deadline_ms, std::move(done));
    });
  };
  if (watched.empty()) return next_round(poll_retry_interval_ms);
  // The first watch to answer starts the next round; the others answer later, to nobody (their
  // waits end at the next append or the deadline, as the Kafka door's long-poll leaves them).
  auto fired = std::make_shared<std::atomic<bool>>(false);
  auto start = std::make_shared<decltype(next_round)>(std::move(next_round));
  auto& st = *shards_[shard];
  auto settings_it = st.instances.find(instance_key(group_id, instance_id));
  const bool read_committed = settings_it != st.instances.end() && settings_it->second.read_committed;
  for (const auto& [tp, from] : watched) {
    fetch_request req;
    req.partition = tp;
    req.fetch_offset = from;
    req.max_bytes = 1;
    req.max_wait_ms = deadline_ms - now;
    req.isolation = read_committed ? isolation_level::read_committed : isolation_level::read_uncommitted;
    broker_.fetch(std::move(req), [this, shard, fired, start](result<fetch_response> r) {
      if (fired->exchange(true, std::memory_order_acq_rel)) return;
      // A failed watch (moved, throttled, deleted) must not spin: the next round after the interval.
      const int64_t after_ms = r.ok() ? 0 : poll_retry_interval_ms;
      runtime_.post(shard, [start, after_ms] { (*start)(after_ms); });
    });
  }
}

void group_service_impl::poll_round(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                                    int64_t deadline_ms,
                                    std::function<void(result<std::vector<consumed_record>>)> done) {
  auto& st = *shards_[shard];
  auto positions = st.coordinator.positions_for_fetch(group_id, instance_id);
  if (!positions.ok()) {
    return done(member_error(st, group_id, instance_id, positions.error()));
  }
  auto instance = st.instances.find(instance_key(group_id, instance_id));
  const delay::retry_policy policy = policy_of(instance != st.instances.end() ? &instance->second : nullptr);
  auto slots = std::make_shared<std::vector<poll_slot>>();
  for (const auto& fp : positions.value()) {
    std::optional<model::offset> at = fp.fetch_offset;
    if (fp.source == group::fetch_source::reset_earliest || fp.source == group::fetch_source::reset_latest) {
      auto b = bounds_of(fp.partition);
      if (!b) continue;  // topic deleted meanwhile: the next set_topics drops the partition
      // The group's retry topic is read from its start whatever auto.offset.reset says: every
      // record in it was nacked by this group and is due to come back to it.
      const bool retry_topic = delay::original_topic_of(policy, fp.partition.topic, group_id, false).has_value();
      at = fp.source == group::fetch_source::reset_earliest || retry_topic ? b->log_start_offset : b->high_watermark;
      auto sought = st.coordinator.seek(group_id, instance_id, fp.partition, *at);
      if (!sought.ok()) return done(from_group(sought.error()));
    } else if (fp.source == group::fetch_source::no_offset) {
      return done(error{errc::no_offset_for_partition,
                        "no committed offset for " + fp.partition.directory_name() +
                            " and auto.offset.reset is none: seek the instance first"});
    }
    if (!at) continue;
    slots->push_back({fp.partition, *at, std::nullopt});
  }
  if (slots->empty()) {
    return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done));
  }
  auto remaining = std::make_shared<std::atomic<size_t>>(slots->size());
  auto finish = [this, shard, group_id, instance_id, request, deadline_ms, slots, done = std::move(done)]() mutable {
    runtime_.post(shard, [this, shard, group_id, instance_id, request, deadline_ms, slots, done = std::move(done)]() mutable {
      poll_finish(shard, group_id, instance_id, request, deadline_ms, slots, std::move(done));
    });
  };
  auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
  const int32_t max_bytes = static_cast<int32_t>(std::clamp<int64_t>(request.max_bytes, 1, INT32_MAX));
  auto settings_it = st.instances.find(instance_key(group_id, instance_id));
  const bool read_committed = settings_it != st.instances.end() && settings_it->second.read_committed;
  for (size_t i = 0; i < slots->size(); ++i) {
    fetch_request req;
    req.partition = (*slots)[i].partition;
    req.fetch_offset = (*slots)[i].fetch_offset;
    req.max_bytes = max_bytes;
    req.max_wait_ms = 0;
    req.isolation = read_committed ? isolation_level::read_committed : isolation_level::read_uncommitted;
    broker_.fetch(std::move(req), [slots, i, remaining, shared_finish](result<fetch_response> r) {
      (*slots)[i].fetched = std::move(r);   // each slot is written by one callback only
      if (remaining->fetch_sub(1, std::memory_order_acq_rel) == 1) (*shared_finish)();
    });
  }
}

void group_service_impl::poll_finish(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                                     int64_t deadline_ms, std::shared_ptr<std::vector<poll_slot>> slots,
                                     std::function<void(result<std::vector<consumed_record>>)> done) {
  auto& st = *shards_[shard];
  auto settings_it = st.instances.find(instance_key(group_id, instance_id));
  // Positions now: a record is handed out only if the member still owns its partition and no
  // other call (seek, another poll) moved the position while the fetch was in flight.
  auto positions = st.coordinator.positions_for_fetch(group_id, instance_id);
  if (!positions.ok()) {
    return done(member_error(st, group_id, instance_id, positions.error()));
  }
  group::partition_map<model::offset> current;
  for (const auto& fp : positions.value()) {
    if (fp.fetch_offset) current[fp.partition] = *fp.fetch_offset;
  }
  const size_t n = slots->size();
  const size_t first = settings_it == st.instances.end() ? 0 : settings_it->second.rotation++ % n;
  std::vector<consumed_record> out;
  group::partition_map<model::offset> next_offsets;
  size_t bytes = 0;
  bool full = false;
  bool cut = false;   // a partition's read stopped at max_bytes
  bool moved = false;   // a seek moved a position while its read was in flight: read again soon
  for (size_t k = 0; k < n && !full; ++k) {
    auto& slot = (*slots)[(first + k) % n];
    auto at = current.find(slot.partition);
    if (at == current.end() || at->second != slot.fetch_offset || !slot.fetched) {
      moved = moved || (at != current.end() && at->second != slot.fetch_offset);
      continue;
    }
    auto& fetched = *slot.fetched;
    if (!fetched.ok()) {
      if (fetched.error().code != errc::offset_out_of_range) continue;  // deleted meanwhile, ...: skip this round
      // Out of range (retention, a recreated topic): auto.offset.reset decides, never stuck.
      auto reset = settings_it == st.instances.end() ? group::offset_reset::latest : settings_it->second.auto_offset_reset;
      if (reset == group::offset_reset::none) {
        return done(error{errc::offset_out_of_range, fetched.error().message + " (auto.offset.reset is none)"});
      }
      auto b = bounds_of(slot.partition);
      if (!b) continue;
      auto to = reset == group::offset_reset::earliest ? b->log_start_offset : b->high_watermark;
      (void)st.coordinator.seek(group_id, instance_id, slot.partition, to);
      continue;
    }
    for (auto& rec : fetched->records) {
      size_t size = (rec.key ? rec.key->size() : 0) + (rec.value ? rec.value->size() : 0);
      for (const auto& h : rec.headers) size += h.key.size() + (h.value ? h.value->size() : 0);
      if (!out.empty() && bytes + size > static_cast<size_t>(request.max_bytes)) {
        full = true;
        break;
      }
      bytes += size;
      next_offsets[slot.partition] = model::offset{rec.record_offset.value() + 1};
      out.push_back({slot.partition, std::move(rec)});
    }
    // The read stopped at max_bytes with more records behind: the answer is as full as it gets.
    const bool committed_only = settings_it != st.instances.end() && settings_it->second.read_committed;
    cut = cut || fetched->next_fetch_offset < (committed_only ? fetched->last_stable_offset : fetched->high_watermark);
    // Every record of the answer was taken: the position moves past the batches that held none
    // for this reader too (transaction markers, aborted records), or it would stop in front of them.
    if (!full && fetched->next_fetch_offset > slot.fetch_offset) {
      auto& next = next_offsets[slot.partition];
      next = std::max(next, fetched->next_fetch_offset);
    }
  }
  // fetch.min.bytes (the instance's): fewer bytes than that, and the answer neither full nor due,
  // waits for more (Confluent's read task ends at min bytes, max bytes or the timeout). Nothing
  // was taken: the next round reads again from the same positions.
  const int32_t min_bytes = settings_it == st.instances.end() ? 1 : settings_it->second.fetch_min_bytes;
  if (!out.empty() && !full && !cut && bytes < static_cast<size_t>(std::max(min_bytes, 1)) && clock_.now_ms() < deadline_ms) {
    return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done), watch_points(*slots));
  }
  if (out.empty()) {
    for (const auto& [tp, next] : next_offsets) {
      auto r = st.coordinator.record_fetched(group_id, instance_id, tp, next);
      RINGLOG_ASSERT(r.ok(), "record_fetched of an owned partition at its position failed");
    }
    if (moved) return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done));
    return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done), watch_points(*slots));
  }
  for (const auto& [tp, next] : next_offsets) {
    auto r = st.coordinator.record_fetched(group_id, instance_id, tp, next);
    RINGLOG_ASSERT(r.ok(), "record_fetched of an owned partition at its position failed");
  }
  const bool auto_commit = settings_it != st.instances.end() && settings_it->second.info.auto_commit_enable;
  if (!auto_commit) return done(std::move(out));
  // at-most-once: the positions are committed (durably) before the records are handed over.
  auto committed = st.coordinator.commit_returned(group_id, instance_id, std::nullopt, clock_.now_ms());
  if (!committed.ok()) return done(from_group(committed.error()));
  persist(shard, std::move(committed->records),
          [done = std::move(done), out = std::move(out)](result<void> r) mutable {
            if (!r.ok()) return done(r.error());
            done(std::move(out));
          });
}

void group_service_impl::commit(std::string group_id, std::string instance_id,
                                std::optional<std::vector<group::processed_offset>> offsets,
                                std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, offsets = std::move(offsets), done = std::move(done)](
                               size_t shard, shard_state& st) {
    const int64_t now = clock_.now_ms();
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    if (*s && !(*s)->joined) {
      persist(shard, std::move(records), [](result<void>) {});
      // Nothing was returned to it, and it owns nothing to commit.
      if (!offsets || offsets->empty()) return done(group::partition_map<group::committed_offset>{});
      return done(error{errc::partition_not_owned, "commit refused: consumer instance '" + instance_id +
                                                       "' does not own partition " +
                                                       offsets->front().partition.directory_name() +
                                                       ": it has not subscribed or been assigned partitions"});
    }
    auto r = offsets ? st.coordinator.commit_processed(group_id, instance_id, std::nullopt, *offsets, now)
                     : st.coordinator.commit_returned(group_id, instance_id, std::nullopt, now);
    if (!r.ok()) {
      return done(member_error(st, group_id, instance_id, r.error()));
    }
    records.insert(records.end(), r->records.begin(), r->records.end());
    persist(shard, std::move(records), [done, stored = r->committed](result<void> p) {
      if (!p.ok()) return done(p.error());
      done(stored);
    });
  });
}

void group_service_impl::committed(std::string group_id, std::string instance_id, group::partition_set partitions,
                                   std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, partitions = std::move(partitions), done = std::move(done)](
                               size_t shard, shard_state& st) {
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    if (!*s || (*s)->joined) {
      auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
      if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
      records.insert(records.end(), hb->records.begin(), hb->records.end());
    }
    group::partition_map<group::committed_offset> out;
    auto all = st.coordinator.committed_offsets(group_id);
    if (all.ok()) {
      for (auto& [tp, c] : all.value()) {
        // A negative committed offset (a Kafka client's -1/-2) is no committed offset here, as
        // the Java consumer's committed() that Confluent's REST proxy answers with says (null).
        if ((partitions.empty() || partitions.contains(tp)) && c.committed.value() >= 0) out[tp] = c;
      }
    }
    persist(shard, std::move(records), [done, out = std::move(out)](result<void> r) {
      if (!r.ok()) return done(r.error());
      done(out);
    });
  });
}

// ---------------------------------------------------------------- retries and dead letters (issue 18)

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
      auto pos = std::find_if(positions->begin(), positions->end(),
                              [&](const group::fetch_position& fp) { return fp.partition == n.partition; });
      if (pos == positions->end()) {
        persist(shard, std::move(records), [](result<void>) {});
        return done(error{errc::partition_not_owned, "nack refused: consumer instance '" + instance_id +
                                                         "' does not hold partition " + n.partition.directory_name() +
                                                         " now (never assigned, or revoked)"});
      }
      // Handed to the member: below its position (what it was given, or sought past).
      if (pos->source != group::fetch_source::position || !pos->fetch_offset || n.offset >= *pos->fetch_offset) {
        persist(shard, std::move(records), [](result<void>) {});
        return done(error{errc::offset_out_of_range,
                          "nack refused: offset " + std::to_string(n.offset.value()) + " of " +
                              n.partition.directory_name() + " was not handed to consumer instance '" + instance_id +
                              "'" +
                              (pos->fetch_offset ? " (its position is " + std::to_string(pos->fetch_offset->value()) + ")"
                                                 : " (it has read nothing of it yet)")});
      }
      const std::string key = delay::source_text(n.partition.topic, n.partition.partition.value(), n.offset);
      auto c = committed.find(n.partition);
      const bool processed = c != committed.end() && n.offset < c->second.committed;
      const bool repeated = settings && settings->nacked.contains(key);
      if (processed || repeated || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
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

// ---------------------------------------------------------------- Kafka clients outside membership

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
    deliver(shard, st.coordinator.classic_join(group_id, request, ticket, clock_.now_ms()));
  });
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
    auto exists = broker_.check_partition_exists(o.partition);
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

// ---------------------------------------------------------------- admin

void group_service_impl::list_groups(std::function<void(result<std::vector<group::group_listing>>)> done) {
  struct gather {
    std::mutex mutex;
    std::vector<group::group_listing> groups;
    std::atomic<size_t> remaining{0};
    std::function<void(result<std::vector<group::group_listing>>)> done;
  };
  auto g = std::make_shared<gather>();
  g->remaining = shards_.size();
  g->done = std::move(done);
  for (size_t s = 0; s < shards_.size(); ++s) {
    runtime_.post(s, [this, s, g] {
      auto listed = shards_[s]->coordinator.list_groups();
      {
        std::lock_guard lock(g->mutex);
        g->groups.insert(g->groups.end(), listed.begin(), listed.end());
      }
      if (g->remaining.fetch_sub(1) == 1) {
        std::sort(g->groups.begin(), g->groups.end(),
                  [](const auto& a, const auto& b) { return a.group_id < b.group_id; });
        g->done(std::move(g->groups));
      }
    });
  }
}

void group_service_impl::describe_group(std::string group_id, std::function<void(result<group_details>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, done = std::move(done)](size_t shard, shard_state& st) {
    group_details d;
    d.description = st.coordinator.describe_group(group_id);
    d.coordinator = {partition_of(group_id), shard};
    done(std::move(d));
  });
}

result<std::vector<group::partition_lag>> group_service_impl::lags_of(
    shard_state& st, const std::string& group_id, group::partition_map<model::offset>& high_watermarks) {
  auto committed = st.coordinator.committed_offsets(group_id);
  if (!committed.ok()) return from_group(committed.error());
  group::partition_set partitions;
  for (const auto& [tp, c] : committed.value()) partitions.insert(tp);
  for (const auto& m : st.coordinator.describe_group(group_id).members) partitions.insert(m.owned.begin(), m.owned.end());
  group::partition_map<model::offset> mine;   // lag() reports every partition it is given
  group::partition_set end_unknown;             // no leader told its end: this node's figure may lag
  for (const auto& tp : partitions) {
    auto known = high_watermarks.find(tp);
    if (known == high_watermarks.end()) {
      auto b = bounds_of(tp);
      if (!b) continue;   // a deleted topic: no lag to report
      if (!b->high_watermark_established) end_unknown.insert(tp);
      known = high_watermarks.emplace(tp, b->high_watermark).first;
    }
    mine.emplace(tp, known->second);
  }
  auto lag = st.coordinator.lag(group_id, mine);
  if (!lag.ok()) return from_group(lag.error());
  // KAFKA-2334: a lag measured to a figure below the partition's end would look smaller than it
  // is; it is not available instead (null in the lag routes) until the leader answers.
  for (auto& l : lag.value()) {
    if (end_unknown.contains(l.partition)) l.lag.reset();
  }
  return std::move(lag.value());
}

namespace {

/// A lag of at most this many offsets is counted record by record (lag_scan); a larger one is
/// the offset distance, an upper bound (it still counts markers and aborted records in it).
/// 10,000 offsets fit a few reads of lag_scan_bytes_max for records of up to ~400 bytes.
constexpr int64_t lag_scan_offsets_max = 10'000;
/// Bytes of one read of a lag count (fetch_request::max_bytes).
constexpr int32_t lag_scan_bytes_max = 1 << 20;
/// Reads of one lag count at most: past them the rest is counted as offsets.
constexpr int lag_scan_fetches_max = 4;

/// Counts the records a read_committed reader reads in [from, end) of one partition: transaction
/// markers (control batches) and records of aborted transactions are not records to consume
/// (issue 16: "markers are not records"). Reads with read_committed decoded fetches, which drop
/// both and step past them (fetch_response::next_fetch_offset). `done` once, with the count;
/// after lag_scan_fetches_max reads or a failed read the unread rest counts as its offsets.
/// The steps chain through the fetch callbacks (at most lag_scan_fetches_max deep when a fetch
/// answers at once), never by recursion of their own.
struct lag_scan : std::enable_shared_from_this<lag_scan> {
  broker* b = nullptr;
  model::topic_partition partition;
  model::offset at{0};
  model::offset end{0};
  int64_t counted = 0;
  int fetches = 0;
  std::function<void(int64_t)> done;

  [[nodiscard]] int64_t rest() const { return std::max<int64_t>(0, end.value() - at.value()); }

  void step() {
    if (at >= end || fetches == lag_scan_fetches_max) return done(counted + rest());
    ++fetches;
    fetch_request request;
    request.partition = partition;
    request.fetch_offset = at;
    request.max_bytes = lag_scan_bytes_max;
    request.isolation = isolation_level::read_committed;
    b->fetch(std::move(request), [self = shared_from_this()](result<fetch_response> r) {
      if (!r.ok()) return self->done(self->counted + self->rest());
      for (const auto& rec : r->records) {
        if (rec.record_offset >= self->at && rec.record_offset < self->end) ++self->counted;
      }
      model::offset next = r->next_fetch_offset;
      if (!r->records.empty()) next = std::max(next, model::offset{r->records.back().record_offset.value() + 1});
      if (next <= self->at) return self->done(self->counted + self->rest());   // no progress: count offsets
      self->at = next;
      self->step();
    });
  }
};

}  // namespace

void group_service_impl::group_lag(std::string group_id,
                                   std::function<void(result<std::vector<group::partition_lag>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  // Lag is what a read_committed reader still has to read (issue 16): measured to each
  // partition's last stable offset (== the high watermark with no open transaction), and a lag
  // of at most lag_scan_offsets_max offsets counts records only (lag_scan): a group that read
  // everything has lag 0 even when a commit marker follows its last record.
  std::function<void(result<std::vector<group::partition_lag>>)> counted =
      [this, done = std::move(done)](result<std::vector<group::partition_lag>> lags) mutable {
    if (!lags.ok()) return done(std::move(lags));
    struct gather {
      std::mutex mutex;
      std::vector<group::partition_lag> lags;
      std::atomic<size_t> remaining{1};
      std::function<void(result<std::vector<group::partition_lag>>)> done;
      void finish_one() {
        if (remaining.fetch_sub(1) == 1) done(std::move(lags));
      }
    };
    auto g = std::make_shared<gather>();
    g->lags = std::move(lags).value();
    g->done = std::move(done);
    for (size_t i = 0; i < g->lags.size(); ++i) {
      const auto& l = g->lags[i];
      if (!l.committed || !l.lag || *l.lag <= 0 || *l.lag > lag_scan_offsets_max) continue;
      auto scan = std::make_shared<lag_scan>();
      scan->b = &broker_;
      scan->partition = l.partition;
      scan->at = *l.committed;
      scan->end = l.high_watermark;
      scan->done = [g, i](int64_t records) {
        {
          std::lock_guard lock(g->mutex);
          g->lags[i].lag = records;
        }
        g->finish_one();
      };
      g->remaining.fetch_add(1);
      scan->step();
    }
    g->finish_one();
  };
  on_coordinator(group_id, [this, group_id, done = std::move(counted)](size_t shard, shard_state& st) mutable {
    // Each partition's last stable offset from its leader (list_offsets is forwarded there): a
    // follower's own lags by up to a fetch round, and a lag must not look smaller than it is.
    auto committed = st.coordinator.committed_offsets(group_id);
    if (!committed.ok()) return done(from_group(committed.error()));
    group::partition_set partitions;
    for (const auto& [tp, c] : committed.value()) partitions.insert(tp);
    for (const auto& m : st.coordinator.describe_group(group_id).members) partitions.insert(m.owned.begin(), m.owned.end());
    struct gather {
      group::partition_map<model::offset> high_watermarks;
      size_t remaining = 0;
    };
    auto g = std::make_shared<gather>();
    g->remaining = partitions.size();
    auto finish = [this, shard, group_id, g, done = std::move(done)]() {
      done(lags_of(*shards_[shard], group_id, g->high_watermarks));
    };
    if (partitions.empty()) return finish();
    for (const auto& tp : partitions) {
      // A partition whose leader does not answer falls back to this node's figure (lags_of).
      broker_.list_offsets({tp, offset_spec::latest, 0, isolation_level::read_committed},
                           [this, shard, tp, g, finish](result<list_offsets_response> r) {
        runtime_.post(shard, [tp, g, finish, r = std::move(r)] {
          if (r.ok() && r->found_offset) g->high_watermarks.emplace(tp, *r->found_offset);
          if (--g->remaining == 0) finish();
        });
      });
    }
  });
}

void group_service_impl::lag_history(std::string group_id, std::function<void(result<std::vector<lag_sample>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [group_id, done = std::move(done)](size_t, shard_state& st) {
    if (st.coordinator.describe_group(group_id).state == group::group_state::dead) {
      return done(error{errc::group_id_not_found, "consumer group '" + group_id + "' not found"});
    }
    auto it = st.lag_history.find(group_id);
    if (it == st.lag_history.end()) return done(std::vector<lag_sample>{});
    done(std::vector<lag_sample>(it->second.begin(), it->second.end()));
  });
}

void group_service_impl::delete_group(std::string group_id, std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, done = std::move(done)](size_t shard, shard_state& st) {
    auto deleted = st.coordinator.delete_group(group_id);
    if (!deleted.ok()) return done(from_group(deleted.error()));
    // Its lag samples go with it: a group re-created under the same id before the next sampling
    // round must start with an empty history (a sample of this round still in flight finds no
    // entry and is dropped).
    st.lag_history.erase(group_id);
    persist(shard, std::move(deleted.value()), std::move(done));
  });
}

void group_service_impl::reset_offsets(reset_offsets_request request,
                                       std::function<void(result<group::partition_map<model::offset>>)> done) {
  std::string group_id = request.group_id;
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, request = std::move(request), done = std::move(done)](size_t, shard_state& st) mutable {
    // The partitions: every partition of the named topics, or of the topics the group committed.
    std::set<std::string> topics(request.topics.begin(), request.topics.end());
    if (topics.empty()) {
      auto committed = st.coordinator.committed_offsets(request.group_id);
      if (!committed.ok()) return done(from_group(committed.error()));
      for (const auto& [tp, c] : committed.value()) topics.insert(tp.topic);
    }
    auto bounds = std::make_shared<group::partition_map<group::partition_offsets>>();
    for (const auto& topic : topics) {
      std::optional<error> missing;
      broker_.describe_topic(topic, [&](result<topic_description> d) {
        if (!d.ok()) return missing.emplace(d.error()), void();
        for (const auto& p : d->partitions) {
          (*bounds)[{topic, p.partition}] = {p.log_start_offset, p.high_watermark, std::nullopt};
        }
      });
      if (missing) return done(*missing);
    }
    auto apply = [this, request, bounds, done]() mutable {
      on_coordinator(request.group_id, [this, request, bounds, done](size_t shard, shard_state& st2) {
        auto reset = st2.coordinator.reset_offsets(request.group_id, request.spec, *bounds, request.mode, clock_.now_ms());
        if (!reset.ok()) return done(from_group(reset.error()));
        persist(shard, std::move(reset->records), [done, offsets = reset->offsets](result<void> r) {
          if (!r.ok()) return done(r.error());
          done(offsets);
        });
      });
    };
    if (request.spec.kind != group::reset_kind::to_timestamp || bounds->empty()) return apply();
    // to_timestamp: the first offset at or after the timestamp, per partition, from its shard.
    auto remaining = std::make_shared<std::atomic<size_t>>(bounds->size());
    auto mutex = std::make_shared<std::mutex>();
    auto shared_apply = std::make_shared<decltype(apply)>(std::move(apply));
    for (const auto& [tp, b] : *bounds) {
      list_offsets_request req{tp, offset_spec::timestamp, request.timestamp_ms};
      broker_.list_offsets(req, [bounds, tp = tp, remaining, mutex, shared_apply](result<list_offsets_response> r) {
        {
          std::lock_guard lock(*mutex);
          if (r.ok()) (*bounds)[tp].offset_for_timestamp = r->found_offset;
        }
        if (remaining->fetch_sub(1) == 1) (*shared_apply)();
      });
    }
  });
}

}  // namespace

std::unique_ptr<group_service> make_group_service(broker& b, group_host& host, runtime::shard_runtime& runtime,
                                                  const base::clock& clock, int32_t offsets_partitions,
                                                  int64_t expiry_interval_ms, int64_t initial_rebalance_delay_ms) {
  return std::make_unique<group_service_impl>(b, host, runtime, clock, offsets_partitions, expiry_interval_ms,
                                              initial_rebalance_delay_ms);
}

}  // namespace ringlog::broker
