#pragma once
// The consumer-group coordinator of one shard (design.md section 7, issue 4): membership,
// server-side cooperative assignment, positions and committed offsets, admin operations.
//
// A pure deterministic state machine: no threads, no I/O, no clock. Every call that depends on
// time takes `now_ms` (ms since the Unix epoch, from the broker's base::clock); member ids come
// from the seed given at construction. Every change that must survive a restart is returned as
// records for the compacted internal topic __consumer_offsets (layout: offsets_codec.h); the
// broker appends them (and only acknowledges the call once they are durable) and feeds them back
// through replay() after a restart. Which coordinator owns a group is
// coordinator_partition_for(group_id, partitions of __consumer_offsets).
//
// Cooperative protocol (KIP-429 / KIP-848 in spirit; no partition is ever owned by two subscribed
// members): each member has a `target` (what the assignor gives it) and `owned` (what it may
// fetch and commit). On each call of the member itself (join, subscribe, assign, unsubscribe, heartbeat):
//   1. owned := owned ∩ target                (it acknowledges its revocations), then
//   2. each partition of target \ owned that no other member of its side owns is added to owned.
// The sides: subscribed members, and members with a manual assignment (assign()). As Kafka's
// assign() is outside the group's membership, a manual member's target is exactly the partitions
// it named and never changes a subscribed member's target or owned partitions; it reads a partition
// a subscribed member owns alongside it. Among manual members a partition belongs to one at a time
// (ringlog's rule: the second assign() hears partition_assigned_elsewhere).
// So a partition moving from A to B is first dropped by A's next call and only then picked up by
// B's next call. The group is `stable` when owned == target for every member. The HTTP layer
// treats every records poll as a heartbeat: heartbeat() then positions_for_fetch().
//
// A member whose session is over (now_ms >= last_seen + session_timeout) gets unknown_member_id
// from its own calls and commits at once, even before expire() removes it and moves its partitions.
//
// Offsets: `committed` follows Kafka: the NEXT offset to read. The REST Proxy v2 commit names
// the LAST PROCESSED offset N and stores N + 1: use commit_processed() for it, commit_returned()
// for its empty-body commit, and commit_offsets() only for Kafka-semantics callers.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/group/classic_group.h"
#include "ringlog/group/errc.h"
#include "ringlog/group/offsets_codec.h"
#include "ringlog/group/types.h"

namespace ringlog::group {

struct join_request {
  /// REST v2 instance `name` / Kafka client.id; prefix of the generated member id.
  std::string client_name = "consumer";
  /// The member id to use as-is (the REST Proxy v2 uses an instance's `name` as its id): 1..255
  /// characters of [A-Za-z0-9._-]; taken ids are refused (duplicate_member_id). nullopt: generated.
  std::optional<std::string> member_id;
  /// group.instance.id (KIP-345 static membership); nullopt = dynamic member.
  std::optional<std::string> group_instance_id;
  /// [limits::session_timeout_ms_min, limits::session_timeout_ms_max]
  int64_t session_timeout_ms = 45'000;
  /// Time a member has to give up revoked partitions, same bounds (Kafka max.poll.interval.ms).
  int64_t rebalance_timeout_ms = 300'000;
  offset_reset auto_offset_reset = offset_reset::latest;
  /// nullopt: the group's assignor, or cooperative_sticky for a group without members.
  std::optional<assignor_kind> assignor;
};

/// A member's view after one of its own calls.
struct member_assignment {
  std::string member_id;
  generation_id generation{0};        // the group generation this member now acknowledges
  partition_set owned;                // may fetch and commit these
  partition_set target;               // what the assignor gives it
  partition_set pending_revocation;   // owned \ target after this call (always empty: acknowledged)
  partition_set pending_assignment;   // target \ owned: another member still owns them
  partition_set revoked;              // dropped from owned by this call
  partition_set assigned;             // added to owned by this call
};

struct join_result {
  std::string member_id;
  bool static_rejoin = false;  // took over a live member with the same group.instance.id
  member_assignment assignment;
  record_list records;
};

struct member_result {
  member_assignment assignment;
  record_list records;
};

/// Where a member should fetch an owned partition from.
enum class fetch_source : uint8_t {
  position,         // its own position (records already fetched or a seek)
  committed,        // the group's committed offset
  reset_earliest,   // neither: auto.offset.reset=earliest -> caller uses log_start_offset, then seek()
  reset_latest,     // neither: auto.offset.reset=latest   -> caller uses high_watermark, then seek()
  no_offset,        // neither and auto.offset.reset=none  -> caller reports no_offset_for_partition
};
struct fetch_position {
  topic_partition partition;
  fetch_source source = fetch_source::position;
  std::optional<offset> fetch_offset;  // set for position and committed
};

/// Kafka semantics: `next_offset` is the next record to read.
struct offset_commit {
  topic_partition partition;
  offset next_offset{0};
  std::string metadata;
};
/// REST Proxy v2 semantics: `last_processed` is the last record processed; N is stored as N + 1.
struct processed_offset {
  topic_partition partition;
  offset last_processed{0};
  std::string metadata;
};
struct commit_result {
  partition_map<committed_offset> committed;  // what was stored (next offset to read)
  record_list records;
};

struct expired_member {
  std::string group_id;
  std::string member_id;
  std::string reason;  // "session timeout" or "rebalance timeout"
};
struct expire_result {
  std::vector<expired_member> removed;
  record_list records;
};

/// One group whose committed offsets expire_offsets() removed (KIP-211).
struct expired_group_offsets {
  std::string group_id;
  partition_set partitions;    // whose committed offsets went (tombstones written)
  bool group_removed = false;  // nothing was left: the group's metadata tombstone too; it is gone
};
struct offsets_expiry_result {
  std::vector<expired_group_offsets> groups;  // by group id; only groups that lost something
  record_list records;                        // the tombstones, for __consumer_offsets
};

struct group_listing {
  std::string group_id;
  group_state state = group_state::dead;
  size_t member_count = 0;
  /// Kafka's protocol type: a classic group's own ("consumer" for consumers, "connect", ...);
  /// "consumer" for ringlog-managed groups and groups with only committed offsets.
  std::string protocol_type = consumer_protocol_type;
  bool classic = false;  // has (or last had) Kafka-protocol members
};
struct member_description {
  std::string member_id;
  std::string client_name;
  std::optional<std::string> group_instance_id;
  generation_id generation{0};
  subscription sub;
  partition_set owned;
  partition_set target;
  partition_set pending_revocation;
  int64_t last_seen_ms = 0;
  // Classic members: `sub` lists the topics of its ConsumerProtocol subscription and `owned` ==
  // `target` the partitions of its assignment (protocol type "consumer"; empty otherwise), and
  // the raw bytes are kept for Kafka's DescribeGroups.
  std::string client_host;
  model::bytes member_metadata;    // its metadata for the chosen protocol
  model::bytes member_assignment;  // what the leader assigned it
};
struct group_description {
  std::string group_id;
  group_state state = group_state::dead;  // dead = no such group
  generation_id generation{0};
  assignor_kind assignor = assignor_kind::cooperative_sticky;  // ringlog-managed groups
  std::vector<member_description> members;  // by member id
  /// A classic group (Kafka clients run the assignment): its protocol type, the protocol its
  /// members chose (the client-side assignor, e.g. "range") and the leader's member id.
  bool classic = false;
  std::string protocol_type = consumer_protocol_type;
  std::optional<std::string> protocol_name;
  std::string leader;
};

/// What the caller knows of a partition's log (the coordinator cannot read logs).
struct partition_offsets {
  offset log_start_offset{0};
  offset high_watermark{0};
  /// First offset with timestamp >= the reset timestamp (to_timestamp only); nullopt = none,
  /// which resets to the high watermark (Kafka's reset-offsets --to-datetime).
  std::optional<offset> offset_for_timestamp;
};
/// Kafka's kafka-consumer-groups --reset-offsets scenarios. to_offset and shift_by are clamped
/// to [log_start_offset, high_watermark], as Kafka does; shift_by starts from the committed
/// offset, or log_start_offset when nothing is committed.
enum class reset_kind : uint8_t { to_earliest, to_latest, to_timestamp, to_offset, shift_by };
struct reset_spec {
  reset_kind kind = reset_kind::to_earliest;
  int64_t value = 0;  // to_offset: the offset; shift_by: signed delta; otherwise unused
};
enum class dry_run : bool { no = false, yes = true };
struct reset_result {
  partition_map<offset> offsets;  // the new committed offsets (next offset to read)
  record_list records;            // empty on dry_run::yes
};

struct partition_lag {
  topic_partition partition;
  std::optional<offset> committed;   // nullopt: nothing, or a negative offset, committed
  offset high_watermark{0};
  std::optional<int64_t> lag;  // high_watermark - committed, clamped at 0; nullopt if nothing (or a negative offset) committed
};

class group_coordinator {
 public:
  /// member_id_seed: ids are "<client_name>-<uuid-like>" from splitmix64(seed, counter); give
  /// each coordinator incarnation its own seed (e.g. broker start time ^ shard) in production.
  /// initial_rebalance_delay_ms: Kafka's group.initial.rebalance.delay.ms, how long the first
  /// rebalance of an empty classic group waits for more members (each join extends it, up to
  /// the rebalance timeout), so a group whose members start together rebalances once.
  explicit group_coordinator(uint64_t member_id_seed, int64_t initial_rebalance_delay_ms = 3'000);

  // ---- metadata ----
  /// The caller's current topics (name -> partition count). Re-resolves patterns and rebalances
  /// every group whose assignment changes. Topics starting with "__" never match a pattern.
  record_list set_topics(topic_map topics, int64_t now_ms);
  /// Which topics a member's pattern subscription may match (issue 30): a topic its principal may
  /// not DESCRIBE is never matched, as Kafka's Metadata never shows it to a client's regex. Called
  /// with (group id, member id, topic) while a pattern is resolved; unset: every topic. The owner
  /// re-applies the topics (set_topics) when the rules behind it change.
  using pattern_topic_filter = std::function<bool(std::string_view group_id, std::string_view member_id,
                                                  const std::string& topic)>;
  void set_pattern_topic_filter(pattern_topic_filter filter) { pattern_topic_filter_ = std::move(filter); }

  // ---- membership (each call is a heartbeat of that member) ----
  /// Creates the group if needed. With a group_instance_id held by a live member: static
  /// rejoin, same member id, same partitions, no generation bump. Errors: invalid_group_id,
  /// invalid_session_timeout, inconsistent_group_protocol, group_max_size_reached, too_many_groups.
  result<join_result> join(std::string_view group_id, const join_request& request, int64_t now_ms);
  /// What join() would answer, without joining or changing anything: the REST Proxy v2 creates a
  /// consumer instance before it joins (on subscribe, as Kafka's consumer joins on subscribe and
  /// poll; issue 14 item 25), and refuses the creation for what the join would refuse. true when
  /// join would take over a live static member (KIP-345: no rebalance). join() runs these same
  /// checks. Errors: as join's, and duplicate_member_id for a request.member_id that is taken.
  [[nodiscard]] result<bool> check_join(std::string_view group_id, const join_request& request, int64_t now_ms) const;
  /// A member id for `client_name` as join() generates one: "<client_name>-<uuid-like>", not a
  /// member of `group_id` now.
  std::string new_member_id(std::string_view group_id, std::string_view client_name);
  /// kind topics or pattern. Errors: unknown_member_id, inconsistent_subscription (member has a
  /// manual assignment, or kind is manual/none), invalid_regular_expression, too_many_partitions.
  result<member_result> subscribe(std::string_view group_id, std::string_view member_id, subscription sub,
                                  int64_t now_ms);
  /// Manual assignment (Kafka's assign()): the member owns `partitions` at its call, whether or not
  /// subscribed members own them (theirs do not change). Errors: unknown_member_id,
  /// inconsistent_subscription (member subscribed to topics/pattern), unknown_topic_or_partition,
  /// partition_assigned_elsewhere (another manual member of the group assigned one of them).
  result<member_result> assign(std::string_view group_id, std::string_view member_id, partition_set partitions,
                               int64_t now_ms);
  /// Drops subscription and manual assignment (owned partitions are released at once).
  result<member_result> unsubscribe(std::string_view group_id, std::string_view member_id, int64_t now_ms);
  result<member_result> heartbeat(std::string_view group_id, std::string_view member_id, int64_t now_ms);
  /// Removes the member (REST v2 delete instance), static or not; its partitions move.
  result<record_list> leave(std::string_view group_id, std::string_view member_id, int64_t now_ms);
  /// Removes members with now_ms >= last_seen + session_timeout, and members that still own a
  /// revoked partition at now_ms >= revocation start + rebalance_timeout.
  expire_result expire(int64_t now_ms);
  /// Kafka's offsets.retention.minutes (KIP-211; GroupMetadata.removeExpiredOffsets): a group
  /// without members (no ringlog-managed REST/WebSocket member, no Kafka classic member, no
  /// classic member id pending its join) for which `held(group_id)` is false, whose age
  /// reference is at least `retention_ms` old (now_ms - reference >= retention_ms), loses its
  /// committed offsets: tombstones for each, and once neither committed nor pending transactional
  /// offsets are left, for its metadata too, and the group is forgotten (gone from list_groups).
  /// The reference is max(when the group became empty, latest commit_timestamp_ms of its
  /// offsets): a commit refreshes every offset of the group. A group replayed without members
  /// counts as empty since the replay's now_ms, so a restart never expires anything early. Pending
  /// transactional offsets (KIP-98) are never expired, nor is the committed offset of a partition
  /// that has one. A group with members never loses offsets here (Kafka's rule for a Stable
  /// group's unsubscribed topics is not applied). `held` unset: no group is held.
  /// retention_ms >= 1.
  offsets_expiry_result expire_offsets(int64_t now_ms, int64_t retention_ms,
                                       const std::function<bool(std::string_view group_id)>& held = nullptr);

  // ---- positions ----
  /// Owned partitions and where to fetch each (see fetch_source). Errors: group_id_not_found,
  /// unknown_member_id.
  result<std::vector<fetch_position>> positions_for_fetch(std::string_view group_id,
                                                          std::string_view member_id) const;
  /// Records below next_offset were handed to the client: position := last_returned := next_offset.
  /// Errors: unknown_member_id, partition_not_owned, invalid_offset.
  result<void> record_fetched(std::string_view group_id, std::string_view member_id, const topic_partition& tp,
                              offset next_offset);
  /// position := last_returned := next_offset (Kafka's seek: an empty commit afterwards commits it).
  result<void> seek(std::string_view group_id, std::string_view member_id, const topic_partition& tp,
                    offset next_offset);

  // ---- commits (all-or-nothing; fenced by member, ownership and generation) ----
  // A commit is refused, and nothing of it applied, when the member is unknown (expired, left:
  // unknown_member_id), `generation` is given and differs from the member's current one
  // (illegal_generation), or any partition is not owned by the member right now
  // (partition_not_owned: revoked, or never assigned). Messages name member, partition, generation.
  // Other errors: invalid_offset (negative), offset_metadata_too_large, too_many_partitions.
  /// Kafka semantics: stores next_offset as given.
  result<commit_result> commit_offsets(std::string_view group_id, std::string_view member_id,
                                       std::optional<generation_id> generation,
                                       const std::vector<offset_commit>& offsets, int64_t now_ms);
  /// REST Proxy v2 `POST .../offsets` with a body: offset N (last processed) is stored as N + 1.
  result<commit_result> commit_processed(std::string_view group_id, std::string_view member_id,
                                         std::optional<generation_id> generation,
                                         const std::vector<processed_offset>& offsets, int64_t now_ms);
  /// REST Proxy v2 `POST .../offsets` with an empty body: every owned partition with records
  /// handed out commits its last_returned (already "the offset after the last record returned").
  result<commit_result> commit_returned(std::string_view group_id, std::string_view member_id,
                                        std::optional<generation_id> generation, int64_t now_ms);
  /// Kafka's commit outside membership (OffsetCommit with generation -1 and no member id: a
  /// consumer that assign()s its partitions and commits to a group): stores next_offset as given,
  /// for a group without members, created if unknown (Kafka accepts it for an Empty group).
  /// Errors: invalid_group_id; unknown_member_id when the group has members (classic ones, or
  /// REST/WebSocket members managed by this coordinator: Kafka answers a commit from outside a
  /// non-empty group so, whatever its members' protocol); invalid_offset, offset_metadata_too_large, too_many_partitions, too_many_groups.
  result<commit_result> commit_offsets_standalone(std::string_view group_id, const std::vector<offset_commit>& offsets,
                                                  int64_t now_ms);
  /// TxnOffsetCommit (KIP-98; KIP-447's generation fencing): offsets of `producer_id`'s
  /// transaction, held pending - not the group's committed offsets - until
  /// complete_txn_offsets. A member id and generation >= 0 (v3+) are checked against a classic
  /// group as OffsetCommit checks them; generation -1 is not. Returns the pending records
  /// (txn_offset_key). Errors: invalid_group_id, unknown_member_id, illegal_generation,
  /// fenced_instance_id, invalid_offset, offset_metadata_too_large, too_many_partitions,
  /// too_many_groups.
  result<commit_result> txn_commit_offsets(std::string_view group_id, std::string_view member_id,
                                           const std::optional<std::string>& group_instance_id, int32_t generation,
                                           int64_t producer_id, const std::vector<offset_commit>& offsets,
                                           int64_t now_ms);
  /// The transaction of `producer_id` ended (its marker is on the groups' __consumer_offsets
  /// partition): in every group for which `belongs(group_id)` holds, its pending offsets become
  /// the committed ones (`committed`) or are dropped. Returns the records: commit records and
  /// the pending keys' tombstones. A producer with nothing pending returns none.
  record_list complete_txn_offsets(int64_t producer_id, bool committed,
                                   const std::function<bool(std::string_view)>& belongs, int64_t now_ms);
  /// The group's committed offsets. Errors: group_id_not_found.
  result<partition_map<committed_offset>> committed_offsets(std::string_view group_id) const;
  /// The partitions of the group that an open transaction's offsets name (TxnOffsetCommit
  /// written, its marker not yet applied by complete_txn_offsets), whatever the producer: Kafka's
  /// GroupMetadata.hasPendingOffsetCommitsForTopicPartition, for which OffsetFetch with
  /// require_stable (KIP-447) answers UNSTABLE_OFFSET_COMMIT. Empty for an unknown group.
  partition_set pending_txn_partitions(std::string_view group_id) const;
  /// Topic deletion: forgets every group's committed offsets and positions of `topic` and returns
  /// their tombstones (a new topic of the same name starts clean).
  record_list delete_topic_offsets(std::string_view topic);

  // ---- Kafka's classic group protocol (classic_group.h) ----
  // A group is either classic (Kafka clients: members join with JoinGroup and the leader
  // assigns) or ringlog-managed (REST/WebSocket members, server-side assignment). A classic
  // join into a group with ringlog-managed members, and a join() into a group with classic
  // members, are refused with inconsistent_group_protocol naming the group's kind. Groups
  // without members (committed offsets only) take either.
  /// JoinGroup. Answers `ticket` now or later (classic_effects.joins). Errors in the answer:
  /// invalid_group_id, invalid_session_timeout, inconsistent_group_protocol, unknown_member_id,
  /// fenced_instance_id, member_id_required (with the member id), group_max_size_reached,
  /// too_many_groups, rebalance_in_progress (a newer JoinGroup of the same member replaced it).
  classic_effects classic_join(std::string_view group_id, const classic_join_request& request, classic_ticket ticket,
                               int64_t now_ms);
  /// SyncGroup. Answers `ticket` now or once the leader's SyncGroup arrives. Errors in the
  /// answer: unknown_member_id, fenced_instance_id, illegal_generation,
  /// inconsistent_group_protocol, rebalance_in_progress.
  classic_effects classic_sync(std::string_view group_id, const classic_sync_request& request, classic_ticket ticket,
                               int64_t now_ms);
  /// Heartbeat: keeps the member's session. Errors: unknown_member_id, fenced_instance_id,
  /// illegal_generation, rebalance_in_progress (rejoin now).
  result<void> classic_heartbeat(std::string_view group_id, std::string_view member_id,
                                 const std::optional<std::string>& group_instance_id, generation_id generation,
                                 int64_t now_ms);
  /// LeaveGroup of each identity. Errors per member: unknown_member_id, fenced_instance_id.
  /// Errors of the whole call: group_id_not_found... are reported per member as unknown_member_id.
  classic_leave_result classic_leave(std::string_view group_id, const std::vector<classic_member_identity>& members,
                                     int64_t now_ms);
  /// Timers of classic groups: completes rebalances whose initial delay or rebalance timeout is
  /// over, removes members whose session expired (answering their waiting requests) and
  /// member ids handed out by member_id_required that never joined.
  classic_effects classic_tick(int64_t now_ms);
  /// Kafka's OffsetCommit (Kafka's GroupCoordinator.handleCommitOffsets order): a commit with
  /// generation < 0 to a group without members stores as given (commit_offsets_standalone);
  /// otherwise the member must be in the classic group at `generation`. Errors:
  /// fenced_instance_id, rebalance_in_progress (the group awaits the leader's assignment),
  /// unknown_member_id (also for a ringlog-managed group: the committer is none of its members),
  /// illegal_generation, and commit_offsets_standalone's. A member's commit is a heartbeat.
  result<commit_result> commit_offsets_kafka(std::string_view group_id, std::string_view member_id,
                                             const std::optional<std::string>& group_instance_id,
                                             int32_t generation, const std::vector<offset_commit>& offsets,
                                             int64_t now_ms);
  /// Kafka's OffsetDelete (KIP-496): tombstones for the committed offsets of `partitions`.
  /// Per partition: group_subscribed_to_topic when a live member consumes its topic (and nothing
  /// of it is deleted). Errors: group_id_not_found; group_not_empty for a classic group with
  /// members whose protocol type is not "consumer" (its subscriptions cannot be read).
  struct offset_delete_result {
    partition_map<std::optional<error>> partitions;
    record_list records;
  };
  result<offset_delete_result> delete_offsets(std::string_view group_id, const partition_set& partitions);

  // ---- persistence ----
  /// Applies one __consumer_offsets record (in log order) after a restart. Committed offsets and
  /// group metadata come back; static members come back with their partitions and last_seen =
  /// now_ms (a full session to rejoin); dynamic members are dropped and the next call on the
  /// group rebalances. Errors: corrupt_message, unsupported_version, too_many_groups.
  result<void> replay(const offsets_topic_record& record, int64_t now_ms);
  /// What unload_groups forgot: how many groups, and the tickets of the JoinGroup and SyncGroup
  /// requests their members were waiting on, which the caller answers NOT_COORDINATOR (Kafka's
  /// GroupCoordinator.onResignation) so the clients find the new coordinator; left waiting, a
  /// JoinGroup was never answered (session 41's breaker: a group sat empty for 73 s).
  struct unloaded_groups {
    size_t groups = 0;
    std::vector<classic_ticket> joins;
    std::vector<classic_ticket> syncs;
  };
  /// Forgets every group for which `belongs(group_id)` holds (their members, offsets and
  /// metadata), e.g. the groups of one __consumer_offsets partition whose leadership moved: the
  /// next coordinator replays them from the replicated log.
  unloaded_groups unload_groups(const std::function<bool(std::string_view group_id)>& belongs);

  // ---- admin ----
  std::vector<group_listing> list_groups() const;  // by group id
  group_description describe_group(std::string_view group_id) const;
  /// How many ringlog-managed members (REST/WebSocket consumers) group `group_id` has; 0 when
  /// it has none or does not exist. A Kafka client's JoinGroup is refused while this is above 0.
  [[nodiscard]] size_t managed_member_count(std::string_view group_id) const;
  /// Only groups without members (else group_not_empty); tombstones for its offsets and metadata.
  result<record_list> delete_group(std::string_view group_id);
  /// Resets the committed offsets of the partitions in `partitions` (Kafka's reset-offsets).
  /// Only for a group without members (group_not_empty); creates the group if unknown.
  /// Errors: invalid_group_id, group_not_empty, invalid_offset (log_start > high_watermark),
  /// too_many_partitions, too_many_groups.
  result<reset_result> reset_offsets(std::string_view group_id, reset_spec spec,
                                     const partition_map<partition_offsets>& partitions, dry_run mode,
                                     int64_t now_ms);
  /// Lag per partition of `high_watermarks`. Errors: group_id_not_found.
  result<std::vector<partition_lag>> lag(std::string_view group_id,
                                         const partition_map<offset>& high_watermarks) const;

  /// Checks the invariants (one owner per partition and disjoint targets among the subscribed
  /// members and among the manual ones, a manual member's target within the partitions it named,
  /// positions only for owned partitions, bounds); returns a description of the first violation.
  /// For tests and the simulator.
  std::optional<std::string> check_invariants() const;

 private:
  struct member_state {
    member_metadata meta;
    int64_t last_seen_ms = 0;
    int64_t revocation_deadline_ms = -1;  // -1: nothing to revoke
    std::optional<std::regex> pattern;    // compiled meta.sub.pattern
    partition_map<offset> position;       // next offset to fetch, owned partitions only
    partition_map<offset> last_returned;  // offset after the last record handed out
  };
  struct classic_member {
    classic_member_metadata meta;              // id, instance id, client, timeouts, assignment
    std::vector<classic_protocol> protocols;   // in its order of preference
    std::optional<classic_ticket> awaiting_join;
    std::optional<classic_ticket> awaiting_sync;
    int64_t last_heartbeat_ms = 0;
  };
  /// A classic group's state beyond the common generation and offsets. State: empty (no
  /// members), preparing_rebalance (collecting JoinGroups), completing_rebalance (waiting for
  /// the leader's SyncGroup), stable.
  struct classic_state {
    group_state state = group_state::empty;
    std::string protocol_type;
    std::optional<std::string> protocol_name;
    std::string leader;  // "" while empty
    std::map<std::string, classic_member, std::less<>> members;
    std::map<std::string, int64_t, std::less<>> pending_members;  // member_id_required ids -> deadline
    int64_t rebalance_deadline_ms = -1;  // preparing_rebalance: complete the join at this time anyway
    int64_t join_delay_until_ms = -1;    // preparing_rebalance from empty: wait for more members until then
    int64_t state_since_ms = 0;
  };
  struct group_state_data {
    std::string group_id;
    std::optional<classic_state> classic;         // a classic group (see classic_join)
    assignor_kind assignor = assignor_kind::cooperative_sticky;
    generation_id generation{0};
    std::map<std::string, member_state, std::less<>> members;
    partition_map<committed_offset> committed;
    /// TxnOffsetCommit offsets by producer id, held until the transaction ends (KIP-98):
    /// bounded like `committed` (limits::commit_partitions_max per producer per request).
    std::map<int64_t, partition_map<committed_offset>> pending_txn;
    std::optional<model::bytes> last_persisted;  // last group metadata value returned/replayed
    bool assignment_stale = false;                // replay dropped members: rebalance on next call
    /// Since when (ms) the group has had no member (ringlog-managed or classic); nullopt while it
    /// has members. The age reference of offsets retention (expire_offsets). Not persisted: a
    /// replayed group without members is empty since the replay (track_emptiness).
    std::optional<int64_t> empty_since_ms;
  };
  using groups_map = std::map<std::string, group_state_data, std::less<>>;
  // replay() of one record kind: a tombstone of `key`'s group (found at `git`, erased when nothing
  // is left), a classic group's metadata (Kafka's loadGroup), a consumer group's (errors:
  // corrupt_message for a stored pattern that does not compile).
  void replay_tombstone(const offsets_topic_key& key, groups_map::iterator git);
  /// classic_tick's end: erases the classic groups that hold nothing (no member, pending member,
  /// offset or pending transactional offset) and never stored a record (no group metadata,
  /// generation 0).
  void forget_groups_never_stored();
  void replay_classic_group(group_state_data& g, classic_group_metadata value, int64_t now_ms);
  result<void> replay_group(group_state_data& g, group_metadata value, int64_t now_ms);

  result<group_state_data*> find_group(std::string_view group_id);
  result<member_state*> find_member(group_state_data& g, std::string_view member_id);
  result<const member_state*> find_member_const(std::string_view group_id, std::string_view member_id) const;
  /// The group and a member whose session is still alive (the preamble of every member call).
  result<std::pair<group_state_data*, member_state*>> live_member(std::string_view group_id,
                                                                  std::string_view member_id, int64_t now_ms);
  std::string next_member_id(const group_state_data& g, std::string_view client_name);
  std::set<std::string> resolve_topics(const group_state_data& g, const member_state& m) const;
  pattern_topic_filter pattern_topic_filter_;
  void rebalance(group_state_data& g, int64_t now_ms, bool membership_changed);
  void refresh_if_stale(group_state_data& g, int64_t now_ms);
  member_assignment progress(group_state_data& g, member_state& m);
  void persist(group_state_data& g, record_list& out) const;
  result<commit_result> apply_commit(std::string_view group_id, std::string_view member_id,
                                     std::optional<generation_id> generation, const std::vector<offset_commit>& offsets,
                                     int64_t now_ms);
  static group_state state_of(const group_state_data& g);
  static bool has_classic_members(const group_state_data& g);
  /// Whether the group has a ringlog-managed member or a joined classic member.
  static bool has_members(const group_state_data& g);
  /// After any change of `g`'s members: a group with members has no empty_since_ms; one without
  /// keeps its empty_since_ms, or is empty since now_ms. Every path that adds a member calls it, so
  /// a later removal starts a fresh empty period (offsets_retention.cc).
  static void track_emptiness(group_state_data& g, int64_t now_ms);
  result<group_state_data*> classic_group_for_join(std::string_view group_id, const classic_join_request& request);
  void classic_prepare_rebalance(group_state_data& g, int64_t now_ms, classic_effects& out);
  void classic_maybe_complete_join(group_state_data& g, int64_t now_ms, classic_effects& out);
  void classic_complete_join(group_state_data& g, int64_t now_ms, classic_effects& out);
  void classic_remove_member(group_state_data& g, const std::string& member_id, const error& why, int64_t now_ms,
                             classic_effects& out);
  void classic_add_member(group_state_data& g, const std::string& member_id, const classic_join_request& request,
                          classic_ticket ticket, int64_t now_ms, classic_effects& out);
  classic_join_response classic_current_join(const group_state_data& g, const classic_member& m, bool skip) const;
  void classic_persist(group_state_data& g, int64_t now_ms, record_list& out) const;
  void classic_describe(const group_state_data& g, group_description& out) const;

  uint64_t member_id_seed_;
  int64_t initial_rebalance_delay_ms_;
  uint64_t member_id_counter_ = 0;
  topic_map topics_;
  groups_map groups_;
};

}  // namespace ringlog::group
