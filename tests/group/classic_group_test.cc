// Kafka's classic group protocol on the group_coordinator (classic_group.h): JoinGroup /
// SyncGroup / Heartbeat / LeaveGroup / OffsetCommit / OffsetDelete, driven with a manual clock.
// Every ticket handed to the coordinator must be answered exactly once: the harness checks it.
#include <doctest.h>

#include <map>
#include <random>
#include <set>
#include <string>

#include "ringlog/group/group_coordinator.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::group;
using namespace ringlog::group::test;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;
constexpr int64_t initial_delay = 3'000;
constexpr int32_t session = 10'000;
constexpr int32_t rebalance = 30'000;

model::bytes sub_of(std::vector<std::string> topics) { return encode_consumer_subscription(topics); }

/// A coordinator plus the answers of every ticket, each checked to come exactly once.
struct harness {
  group_coordinator c{42, initial_delay};
  classic_ticket next_ticket = 1;
  std::map<classic_ticket, classic_join_response> joins;
  std::map<classic_ticket, classic_sync_response> syncs;
  std::set<classic_ticket> outstanding;
  record_list records;

  void absorb(classic_effects e) {
    for (auto& [t, r] : e.joins) {
      REQUIRE_MESSAGE(outstanding.erase(t) == 1, "ticket " << t << " answered twice or never asked");
      joins[t] = std::move(r);
    }
    for (auto& [t, r] : e.syncs) {
      REQUIRE_MESSAGE(outstanding.erase(t) == 1, "ticket " << t << " answered twice or never asked");
      syncs[t] = std::move(r);
    }
    records.insert(records.end(), e.records.begin(), e.records.end());
    require_invariants(c);
  }

  classic_join_request request(std::string member_id, std::vector<classic_protocol> protocols = {},
                               std::optional<std::string> instance = std::nullopt) {
    classic_join_request r;
    r.member_id = std::move(member_id);
    r.group_instance_id = std::move(instance);
    r.client_id = "client";
    r.client_host = "/127.0.0.1";
    r.session_timeout_ms = session;
    r.rebalance_timeout_ms = rebalance;
    r.protocol_type = "consumer";
    r.protocols = protocols.empty() ? std::vector<classic_protocol>{{"range", sub_of({"orders"})}} : std::move(protocols);
    r.require_known_member_id = true;
    return r;
  }

  classic_ticket join(const std::string& group, const classic_join_request& r, int64_t now) {
    const classic_ticket t = next_ticket++;
    outstanding.insert(t);
    absorb(c.classic_join(group, r, t, now));
    return t;
  }
  classic_ticket sync(const std::string& group, const std::string& member, int32_t generation, int64_t now,
                      std::vector<std::pair<std::string, model::bytes>> assignments = {}) {
    classic_sync_request r;
    r.member_id = member;
    r.generation = generation_id(generation);
    r.assignments = std::move(assignments);
    const classic_ticket t = next_ticket++;
    outstanding.insert(t);
    absorb(c.classic_sync(group, r, t, now));
    return t;
  }
  void tick(int64_t now) { absorb(c.classic_tick(now)); }

  /// A new member's two joins (KIP-394): member_id_required, then the join with the given id.
  /// Returns (member id, the ticket of the second join).
  std::pair<std::string, classic_ticket> join_new(const std::string& group, int64_t now,
                                                  std::vector<classic_protocol> protocols = {}) {
    auto first = join(group, request("", protocols), now);
    REQUIRE(joins.contains(first));
    REQUIRE(joins[first].failure.has_value());
    REQUIRE(joins[first].failure->code == errc::member_id_required);
    const std::string id = joins[first].member_id;
    REQUIRE(id.starts_with("client-"));
    return {id, join(group, request(id, protocols), now)};
  }
};

model::bytes assignment_of(std::initializer_list<int32_t> partitions) {
  partition_set ps;
  for (int32_t p : partitions) ps.insert(tp("orders", p));
  return encode_consumer_assignment(ps);
}

/// Three members in one stable generation; returns their ids (the leader first).
std::vector<std::string> stable_group_of_three(harness& h, const std::string& group) {
  auto [a, ta] = h.join_new(group, t0);
  auto [b, tb] = h.join_new(group, t0 + 100);
  auto [c, tc] = h.join_new(group, t0 + 200);
  h.tick(t0 + 200 + initial_delay);
  for (auto t : {ta, tb, tc}) {
    REQUIRE(h.joins.contains(t));
    REQUIRE_FALSE(h.joins[t].failure.has_value());
    CHECK(h.joins[t].generation == generation_id(1));
  }
  const std::string leader = h.joins[ta].leader;
  // The leader's answer lists every member with its metadata.
  for (auto t : {ta, tb, tc}) {
    if (h.joins[t].member_id != leader) continue;
    REQUIRE(h.joins[t].members.size() == 3);
    for (const auto& m : h.joins[t].members) CHECK(m.metadata == sub_of({"orders"}));
  }
  std::vector<std::string> ids{a, b, c};
  std::erase(ids, leader);
  ids.insert(ids.begin(), leader);
  auto s1 = h.sync(group, ids[1], 1, t0 + 4'000);
  CHECK_FALSE(h.syncs.contains(s1));  // waits for the leader
  auto s0 = h.sync(group, ids[0], 1, t0 + 4'000,
                   {{ids[0], assignment_of({0})}, {ids[1], assignment_of({1})}, {ids[2], assignment_of({2})}});
  auto s2 = h.sync(group, ids[2], 1, t0 + 4'000);
  for (auto t : {s0, s1, s2}) {
    REQUIRE(h.syncs.contains(t));
    REQUIRE_FALSE(h.syncs[t].failure.has_value());
  }
  CHECK(decode_consumer_assignment(h.syncs[s1].assignment).value() == partition_set{tp("orders", 1)});
  CHECK(h.c.describe_group(group).state == group_state::stable);
  return ids;
}

}  // namespace

TEST_CASE("classic: a first join gets member_id_required; the second join waits out the initial delay") {
  harness h;
  auto [id, t] = h.join_new("g", t0);
  CHECK_FALSE(h.joins.contains(t));
  CHECK(h.c.describe_group("g").state == group_state::preparing_rebalance);
  h.tick(t0 + initial_delay - 1);
  CHECK_FALSE(h.joins.contains(t));
  h.tick(t0 + initial_delay);
  REQUIRE(h.joins.contains(t));
  const auto& r = h.joins[t];
  REQUIRE_FALSE(r.failure.has_value());
  CHECK(r.generation == generation_id(1));
  CHECK(r.leader == id);
  CHECK(r.member_id == id);
  CHECK(r.protocol_name == std::optional<std::string>("range"));
  REQUIRE(r.members.size() == 1);
  CHECK(r.members[0].metadata == sub_of({"orders"}));
  CHECK(h.c.describe_group("g").state == group_state::completing_rebalance);
  auto s = h.sync("g", id, 1, t0 + initial_delay, {{id, assignment_of({0, 1})}});
  REQUIRE(h.syncs.contains(s));
  CHECK(h.syncs[s].assignment == assignment_of({0, 1}));
  const auto d = h.c.describe_group("g");
  CHECK(d.state == group_state::stable);
  CHECK(d.classic);
  CHECK(d.protocol_name == std::optional<std::string>("range"));
  REQUIRE(d.members.size() == 1);
  CHECK(d.members[0].owned == partition_set{tp("orders", 0), tp("orders", 1)});
  CHECK(d.members[0].sub.topics == std::vector<std::string>{"orders"});
  // The stable group is persisted in Kafka's GroupMetadataValue v3.
  REQUIRE_FALSE(h.records.empty());
  auto value = decode_classic_group_metadata_value(*h.records.back().value);
  REQUIRE(value.ok());
  CHECK(value->generation == generation_id(1));
  CHECK(value->leader == std::optional<std::string>(id));
  CHECK(value->members.at(0).assignment == assignment_of({0, 1}));
  CHECK(h.c.classic_heartbeat("g", id, std::nullopt, generation_id(1), t0 + 5'000).ok());
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: three members, one generation; a leave rebalances; stale generations are refused") {
  harness h;
  auto ids = stable_group_of_three(h, "g");
  // Commit at the current generation works; a wrong generation or member does not.
  std::vector<offset_commit> commit{{tp("orders", 1), offset(5), ""}};
  REQUIRE(h.c.commit_offsets_kafka("g", ids[1], std::nullopt, 1, commit, t0 + 5'000).ok());
  CHECK(h.c.commit_offsets_kafka("g", ids[1], std::nullopt, 0, commit, t0 + 5'000).error().code ==
        errc::illegal_generation);
  CHECK(h.c.commit_offsets_kafka("g", "stranger", std::nullopt, 1, commit, t0 + 5'000).error().code ==
        errc::unknown_member_id);
  CHECK(h.c.commit_offsets_kafka("g", "", std::nullopt, -1, commit, t0 + 5'000).error().code ==
        errc::unknown_member_id);
  // ids[2] leaves: the others hear REBALANCE_IN_PROGRESS on their next heartbeat.
  auto left = h.c.classic_leave("g", {{ids[2], std::nullopt}}, t0 + 6'000);
  h.absorb(std::move(left.effects));
  REQUIRE(left.members.size() == 1);
  CHECK_FALSE(left.members[0].has_value());
  CHECK(h.c.describe_group("g").state == group_state::preparing_rebalance);
  CHECK(h.c.classic_heartbeat("g", ids[1], std::nullopt, generation_id(1), t0 + 6'100).error().code ==
        errc::rebalance_in_progress);
  // A commit of the old generation still counts while the group prepares (Kafka allows it).
  CHECK(h.c.commit_offsets_kafka("g", ids[1], std::nullopt, 1, commit, t0 + 6'100).ok());
  auto j1 = h.join("g", h.request(ids[1]), t0 + 6'200);
  CHECK_FALSE(h.joins.contains(j1));
  auto j0 = h.join("g", h.request(ids[0]), t0 + 6'300);
  REQUIRE(h.joins.contains(j0));
  REQUIRE(h.joins.contains(j1));
  CHECK(h.joins[j0].generation == generation_id(2));
  CHECK(h.joins[j0].leader == ids[0]);
  CHECK(h.joins[j0].members.size() == 2);
  CHECK(h.joins[j1].members.empty());
  // Before the leader's SyncGroup: commits wait (REBALANCE_IN_PROGRESS), heartbeats are fine.
  CHECK(h.c.commit_offsets_kafka("g", ids[1], std::nullopt, 2, commit, t0 + 6'400).error().code ==
        errc::rebalance_in_progress);
  CHECK(h.c.classic_heartbeat("g", ids[1], std::nullopt, generation_id(2), t0 + 6'400).ok());
  auto stale = h.sync("g", ids[1], 1, t0 + 6'500);
  CHECK(h.syncs[stale].failure->code == errc::illegal_generation);
  auto s0 = h.sync("g", ids[0], 2, t0 + 6'500, {{ids[0], assignment_of({0, 2})}, {ids[1], assignment_of({1})}});
  auto s1 = h.sync("g", ids[1], 2, t0 + 6'600);
  CHECK(h.syncs[s0].assignment == assignment_of({0, 2}));
  CHECK(h.syncs[s1].assignment == assignment_of({1}));
  CHECK(h.c.commit_offsets_kafka("g", ids[1], std::nullopt, 2, commit, t0 + 6'700).ok());
  CHECK(h.c.describe_group("g").members.size() == 2);
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: a member that stops heartbeating expires; one that does not rejoin in time is dropped") {
  harness h;
  auto ids = stable_group_of_three(h, "g");
  // ids[0] and ids[1] heartbeat, ids[2] falls silent.
  for (int64_t at = t0 + 5'000; at < t0 + 4'000 + session; at += 2'000) {
    REQUIRE(h.c.classic_heartbeat("g", ids[0], std::nullopt, generation_id(1), at).ok());
    REQUIRE(h.c.classic_heartbeat("g", ids[1], std::nullopt, generation_id(1), at).ok());
    h.tick(at);
  }
  CHECK(h.c.describe_group("g").members.size() == 3);
  h.tick(t0 + 4'000 + session);
  CHECK(h.c.describe_group("g").members.size() == 2);
  CHECK(h.c.describe_group("g").state == group_state::preparing_rebalance);
  CHECK(h.c.classic_heartbeat("g", ids[2], std::nullopt, generation_id(1), t0 + 14'500).error().code ==
        errc::unknown_member_id);
  // Only ids[0] rejoins; ids[1] keeps heartbeating (hearing REBALANCE_IN_PROGRESS) but never
  // rejoins: at the rebalance timeout the join completes without it.
  auto j0 = h.join("g", h.request(ids[0]), t0 + 15'000);
  for (int64_t at = t0 + 15'000; at < t0 + 14'000 + rebalance; at += 5'000) {
    CHECK(h.c.classic_heartbeat("g", ids[1], std::nullopt, generation_id(1), at).error().code ==
          errc::rebalance_in_progress);
    h.tick(at);
  }
  CHECK_FALSE(h.joins.contains(j0));
  h.tick(t0 + 14'000 + rebalance - 1);
  CHECK_FALSE(h.joins.contains(j0));
  h.tick(t0 + 14'000 + rebalance);
  REQUIRE(h.joins.contains(j0));
  CHECK(h.joins[j0].generation == generation_id(2));
  CHECK(h.joins[j0].members.size() == 1);
  CHECK(h.c.classic_heartbeat("g", ids[1], std::nullopt, generation_id(1), t0 + 44'001).error().code ==
        errc::unknown_member_id);
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: two sessions and a rebalance deadline ending in one tick remove each member once") {
  // A breaker's three JoinGroups (session 34): A and B join (generation 1) and fall silent, C joins
  // at once. With session.timeout.ms = rebalance.timeout.ms, A's and B's sessions end in the tick
  // where the rebalance deadline passes: removing A completed the join, which dropped B, and the
  // tick then removed B again (an assertion: the broker aborted).
  harness h;
  auto timed = [&](std::string member_id) {
    auto r = h.request(std::move(member_id));
    r.session_timeout_ms = session;
    r.rebalance_timeout_ms = session;
    return r;
  };
  auto join_new = [&](int64_t at) {
    auto first = h.join("g", timed(""), at);
    REQUIRE(h.joins[first].failure.has_value());
    const std::string id = h.joins[first].member_id;
    return std::pair{id, h.join("g", timed(id), at)};
  };
  auto [a, ta] = join_new(t0);
  auto [b, tb] = join_new(t0);
  h.tick(t0 + initial_delay);
  REQUIRE(h.joins.contains(ta));
  REQUIRE(h.joins.contains(tb));
  CHECK(h.joins[ta].generation == generation_id(1));
  auto [c, tc] = join_new(t0 + initial_delay);
  CHECK(h.c.describe_group("g").state == group_state::preparing_rebalance);
  h.tick(t0 + initial_delay + session - 1);
  CHECK_FALSE(h.joins.contains(tc));
  h.tick(t0 + initial_delay + session);
  REQUIRE(h.joins.contains(tc));
  CHECK_FALSE(h.joins[tc].failure.has_value());
  CHECK(h.joins[tc].generation == generation_id(2));
  CHECK(h.joins[tc].members.size() == 1);
  CHECK(h.c.describe_group("g").members.size() == 1);
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: the protocol every member offers is chosen by vote; others are refused") {
  harness h;
  const std::vector<classic_protocol> both{{"range", sub_of({"t"})}, {"roundrobin", sub_of({"t"})}};
  const std::vector<classic_protocol> rr{{"roundrobin", sub_of({"t"})}};
  auto [a, ta] = h.join_new("g", t0, both);
  auto [b, tb] = h.join_new("g", t0, rr);
  auto [c, tc] = h.join_new("g", t0, both);
  // A protocol nobody else offers, or another protocol type, is refused.
  auto bad = h.join("g", h.request("", {{"cooperative-sticky", sub_of({"t"})}}), t0);
  REQUIRE(h.joins.contains(bad));
  CHECK(h.joins[bad].failure->code == errc::inconsistent_group_protocol);
  auto other_type = h.request("");
  other_type.protocol_type = "connect";
  auto bad2 = h.join("g", other_type, t0);
  CHECK(h.joins[bad2].failure->code == errc::inconsistent_group_protocol);
  h.tick(t0 + initial_delay);
  REQUIRE(h.joins.contains(ta));
  CHECK(h.joins[ta].protocol_name == std::optional<std::string>("roundrobin"));
  CHECK(h.joins[tb].protocol_name == std::optional<std::string>("roundrobin"));
  (void)c;
  (void)tc;
}

TEST_CASE("classic: bad joins and calls of unknown members") {
  harness h;
  auto r = h.request("");
  r.session_timeout_ms = 1'000;
  auto t = h.join("g", r, t0);
  CHECK(h.joins[t].failure->code == errc::invalid_session_timeout);
  t = h.join("", h.request(""), t0);
  CHECK(h.joins[t].failure->code == errc::invalid_group_id);
  t = h.join("nope", h.request("ghost"), t0);
  CHECK(h.joins[t].failure->code == errc::unknown_member_id);
  auto s = h.sync("nope", "ghost", 1, t0);
  CHECK(h.syncs[s].failure->code == errc::unknown_member_id);
  CHECK(h.c.classic_heartbeat("nope", "ghost", std::nullopt, generation_id(1), t0).error().code ==
        errc::unknown_member_id);
  auto left = h.c.classic_leave("nope", {{"ghost", std::nullopt}}, t0);
  CHECK(left.members.at(0)->code == errc::unknown_member_id);
  // JoinGroup v0-3 (no member_id_required): the first join enters at once.
  auto old = h.request("");
  old.require_known_member_id = false;
  t = h.join("v3", old, t0);
  h.tick(t0 + initial_delay);
  REQUIRE(h.joins.contains(t));
  CHECK_FALSE(h.joins[t].failure.has_value());
  CHECK(h.joins[t].generation == generation_id(1));
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: a newer JoinGroup of the same member answers the older one; leaving answers waiting calls") {
  harness h;
  auto [a, ta] = h.join_new("g", t0);
  auto again = h.join("g", h.request(a), t0 + 10);
  REQUIRE(h.joins.contains(ta));
  CHECK(h.joins[ta].failure->code == errc::rebalance_in_progress);
  auto [b, tb] = h.join_new("g", t0 + 20);
  auto left = h.c.classic_leave("g", {{b, std::nullopt}}, t0 + 30);
  h.absorb(std::move(left.effects));
  REQUIRE(h.joins.contains(tb));
  CHECK(h.joins[tb].failure->code == errc::unknown_member_id);
  h.tick(t0 + 30 + initial_delay);
  REQUIRE(h.joins.contains(again));
  CHECK(h.joins[again].members.size() == 1);
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: a group is classic or ringlog-managed, never both") {
  harness h;
  join_request rest;
  rest.client_name = "rest";
  rest.session_timeout_ms = 10'000;
  rest.rebalance_timeout_ms = 10'000;
  REQUIRE(h.c.join("managed", rest, t0).ok());
  auto t = h.join("managed", h.request(""), t0);
  REQUIRE(h.joins[t].failure.has_value());
  CHECK(h.joins[t].failure->code == errc::inconsistent_group_protocol);
  CHECK(h.joins[t].failure->message.find("ringlog-managed") != std::string::npos);
  // A commit is no join: Kafka answers one from a non-member UNKNOWN_MEMBER_ID (session 32).
  CHECK(h.c.commit_offsets_kafka("managed", "x", std::nullopt, 3, {}, t0).error().code == errc::unknown_member_id);
  CHECK(h.c.commit_offsets_kafka("managed", "", std::nullopt, -1, {}, t0).error().code == errc::unknown_member_id);

  auto [a, ta] = h.join_new("classic", t0);
  auto refused = h.c.join("classic", rest, t0);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == errc::inconsistent_group_protocol);
  CHECK(refused.error().message.find("classic group of Kafka clients") != std::string::npos);
  // Once the classic group is empty again, a REST member may take it.
  auto left = h.c.classic_leave("classic", {{a, std::nullopt}}, t0 + 1);
  h.absorb(std::move(left.effects));
  CHECK(h.c.describe_group("classic").state == group_state::empty);
  auto joined = h.c.join("classic", rest, t0 + 2);
  REQUIRE(joined.ok());
  CHECK_FALSE(h.c.describe_group("classic").classic);
  require_invariants(h.c);
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: a static member rejoining a stable group keeps its assignment without a rebalance") {
  harness h;
  auto first = h.request("", {}, "instance-1");
  auto t = h.join("g", first, t0);
  h.tick(t0 + initial_delay);
  REQUIRE(h.joins.contains(t));
  const std::string old_id = h.joins[t].member_id;
  CHECK(old_id.starts_with("instance-1-"));
  auto s = h.sync("g", old_id, 1, t0 + initial_delay, {{old_id, assignment_of({0})}});
  REQUIRE(h.syncs.contains(s));
  // The client restarts: a join without member id, same group.instance.id.
  auto t2 = h.join("g", first, t0 + 5'000);
  REQUIRE(h.joins.contains(t2));
  const auto& r = h.joins[t2];
  REQUIRE_FALSE(r.failure.has_value());
  CHECK(r.member_id != old_id);
  CHECK(r.generation == generation_id(1));  // no rebalance
  CHECK(r.skip_assignment);                 // it is the leader: it must not assign again
  CHECK(h.c.describe_group("g").state == group_state::stable);
  auto s2 = h.sync("g", r.member_id, 1, t0 + 5'000);
  CHECK(h.syncs[s2].assignment == assignment_of({0}));
  CHECK(h.c.classic_heartbeat("g", old_id, std::string("instance-1"), generation_id(1), t0 + 5'100).error().code ==
        errc::unknown_member_id);
  CHECK(h.c.commit_offsets_kafka("g", old_id, std::string("instance-1"), 1, {}, t0 + 5'100).error().code ==
        errc::fenced_instance_id);
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: a replayed group is stable with its members, generation and assignments") {
  harness h;
  auto ids = stable_group_of_three(h, "g");
  REQUIRE(h.c.commit_offsets_kafka("g", ids[0], std::nullopt, 1, {{tp("orders", 0), offset(9), "m"}}, t0 + 5'000).ok());
  auto committed = h.c.commit_offsets_kafka("g", ids[0], std::nullopt, 1, {{tp("orders", 0), offset(10), ""}}, t0 + 5'001);
  REQUIRE(committed.ok());
  h.records.insert(h.records.end(), committed->records.begin(), committed->records.end());
  group_coordinator replayed{7, initial_delay};
  for (const auto& r : h.records) REQUIRE(replayed.replay(r, t0 + 60'000).ok());
  require_invariants(replayed);
  const auto d = replayed.describe_group("g");
  CHECK(d.state == group_state::stable);
  CHECK(d.generation == generation_id(1));
  CHECK(d.leader == ids[0]);
  REQUIRE(d.members.size() == 3);
  CHECK(replayed.committed_offsets("g").value().at(tp("orders", 0)).committed == offset(10));
  // Members carry on: heartbeats and commits at generation 1 are accepted.
  CHECK(replayed.classic_heartbeat("g", ids[1], std::nullopt, generation_id(1), t0 + 61'000).ok());
  CHECK(replayed.commit_offsets_kafka("g", ids[1], std::nullopt, 1, {{tp("orders", 1), offset(3), ""}}, t0 + 61'000).ok());
  classic_sync_request sr;
  sr.member_id = ids[2];
  sr.generation = generation_id(1);
  auto synced = replayed.classic_sync("g", sr, 1, t0 + 61'000);
  REQUIRE(synced.syncs.size() == 1);
  CHECK(synced.syncs[0].second.assignment == assignment_of({2}));
}

TEST_CASE("classic: OffsetDelete keeps the offsets of consumed topics; commits outside membership need an empty group") {
  harness h;
  std::vector<offset_commit> commits{{tp("orders", 0), offset(4), ""}, {tp("old", 0), offset(7), ""}};
  REQUIRE(h.c.commit_offsets_kafka("g", "", std::nullopt, -1, commits, t0).ok());
  CHECK(h.c.commit_offsets_kafka("unknown", "m", std::nullopt, 3, commits, t0).error().code == errc::illegal_generation);
  auto [a, ta] = h.join_new("g", t0);
  h.tick(t0 + initial_delay);
  REQUIRE(h.joins.contains(ta));
  auto deleted = h.c.delete_offsets("g", partition_set{tp("orders", 0), tp("old", 0)});
  REQUIRE(deleted.ok());
  CHECK(deleted->partitions.at(tp("orders", 0))->code == errc::group_subscribed_to_topic);
  CHECK_FALSE(deleted->partitions.at(tp("old", 0)).has_value());
  REQUIRE(deleted->records.size() == 1);
  CHECK_FALSE(deleted->records[0].value.has_value());
  const auto left = h.c.committed_offsets("g").value();
  CHECK(left.contains(tp("orders", 0)));
  CHECK_FALSE(left.contains(tp("old", 0)));
  CHECK(h.c.delete_offsets("none", {}).error().code == errc::group_id_not_found);
  // A group with Kafka members cannot be deleted or reset.
  CHECK(h.c.delete_group("g").error().code == errc::group_not_empty);
}

TEST_CASE("classic: group metadata value v3 and the ConsumerProtocol round-trip, clip and refuse corruption") {
  classic_group_metadata g;
  g.protocol_type = "consumer";
  g.generation = generation_id(4);
  g.protocol_name = "range";
  g.leader = "a";
  g.current_state_timestamp_ms = t0;
  g.members.push_back({"a", std::nullopt, "client", "/1.2.3.4", 30'000, 10'000, sub_of({"x", "y"}), assignment_of({1})});
  g.members.push_back({"b", std::string("inst"), "client", "/1.2.3.4", 30'000, 10'000, {}, {}});
  const auto bytes = encode_classic_group_metadata_value(g);
  CHECK(group_metadata_value_version(bytes).value() == classic_group_value_version);
  auto back = decode_classic_group_metadata_value(bytes);
  REQUIRE(back.ok());
  CHECK(*back == g);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto clipped = decode_classic_group_metadata_value(std::span(bytes).first(cut));
    REQUIRE_FALSE(clipped.ok());
  }
  auto longer = bytes;
  longer.push_back(std::byte{0});
  CHECK(decode_classic_group_metadata_value(longer).error().code == errc::corrupt_message);
  auto other = bytes;
  other[1] = std::byte{4};
  CHECK(decode_classic_group_metadata_value(other).error().code == errc::unsupported_version);

  CHECK(decode_consumer_subscription_topics(sub_of({"x", "y"})).value() == std::vector<std::string>{"x", "y"});
  CHECK(decode_consumer_assignment(assignment_of({2, 0})).value() == partition_set{tp("orders", 0), tp("orders", 2)});
  CHECK(decode_consumer_assignment({}).value().empty());
  const auto a = assignment_of({1});
  CHECK(decode_consumer_assignment(std::span(a).first(a.size() - 6)).error().code == errc::corrupt_message);
}

namespace {

/// One simulated Kafka client of the simulation below: what it believes about its membership.
struct sim_client {
  std::string member_id;              // "" = not a member (or forgot after a crash)
  int32_t generation = -1;
  std::optional<classic_ticket> join;  // outstanding JoinGroup
  std::optional<classic_ticket> sync;  // outstanding SyncGroup
  bool alive = true;                   // crashed clients stop calling
  bool stable = false;                 // got its assignment for `generation`
  std::vector<std::string> members;   // the leader's member list of its last join
};

/// Acts on the answers a client got since its last step, as a Kafka client would: rejoin on
/// any error, sync after a join, heartbeat once stable.
void sim_step(harness& h, sim_client& c, const std::string& group, int64_t now) {
  if (c.join && h.joins.contains(*c.join)) {
    auto r = h.joins[*c.join];
    c.join.reset();
    if (r.failure) {
      if (r.failure->code == errc::member_id_required) {
        c.member_id = r.member_id;
      } else if (r.failure->code == errc::unknown_member_id) {
        c.member_id.clear();
      }
      c.join = h.join(group, h.request(c.member_id), now);
      return;
    }
    c.member_id = r.member_id;
    c.generation = r.generation.value();
    std::vector<std::pair<std::string, model::bytes>> assignments;
    int32_t partition = 0;
    for (const auto& m : r.members) assignments.emplace_back(m.member_id, assignment_of({partition++}));
    c.sync = h.sync(group, c.member_id, c.generation, now, assignments);
    return;
  }
  if (c.sync && h.syncs.contains(*c.sync)) {
    auto r = h.syncs[*c.sync];
    c.sync.reset();
    if (r.failure) {
      if (r.failure->code == errc::unknown_member_id) c.member_id.clear();
      c.join = h.join(group, h.request(c.member_id), now);
      return;
    }
    c.stable = true;
    return;
  }
  if (c.join || c.sync) return;
  if (c.member_id.empty() || !c.stable) {
    c.stable = false;
    c.join = h.join(group, h.request(c.member_id), now);
    return;
  }
  auto hb = h.c.classic_heartbeat(group, c.member_id, std::nullopt, generation_id(c.generation), now);
  require_invariants(h.c);
  if (!hb.ok()) {
    c.stable = false;
    if (hb.error().code == errc::unknown_member_id) c.member_id.clear();
    c.join = h.join(group, h.request(c.member_id), now);
  }
}

}  // namespace

TEST_CASE("classic: seeded simulation of clients that join, heartbeat, leave and crash") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    harness h;
    const std::string group = "sim";
    std::vector<sim_client> clients(2 + rng() % 5);
    int64_t now = t0;
    for (int step = 0; step < 400; ++step) {
      now += static_cast<int64_t>(rng() % 700);
      h.tick(now);
      auto& c = clients[rng() % clients.size()];
      const auto dice = rng() % 100;
      if (!c.alive) {
        if (dice < 5) c = sim_client{};  // a restarted process: a fresh client
        continue;
      }
      if (dice < 2 && !c.member_id.empty()) {
        // A clean shutdown: LeaveGroup, then nothing more from this client for a while.
        auto left = h.c.classic_leave(group, {{c.member_id, std::nullopt}}, now);
        h.absorb(std::move(left.effects));
        c = sim_client{};
        c.alive = false;
        continue;
      }
      if (dice < 4) {
        c.alive = false;  // a crash: it never calls again; its session must expire
        continue;
      }
      sim_step(h, c, group, now);
    }
    // Liveness: every client (crashed and stopped ones restarted) keeps calling; the group
    // settles with exactly them.
    for (auto& c : clients) {
      if (!c.alive) c = sim_client{};
    }
    for (int round = 0; round < 200; ++round) {
      now += 300;
      h.tick(now);
      for (auto& c : clients) sim_step(h, c, group, now);
    }
    const auto d = h.c.describe_group(group);
    CHECK(d.state == group_state::stable);
    CHECK(d.generation.value() > 2);   // the random phase did rebalance the group
    CHECK(d.members.size() == clients.size());
    std::set<std::string> ids;
    partition_set owned;
    for (const auto& m : d.members) {
      ids.insert(m.member_id);
      for (const auto& tp : m.owned) CHECK(owned.insert(tp).second);  // the leader's assignment is disjoint
    }
    for (const auto& c : clients) {
      CHECK(c.stable);
      CHECK(ids.contains(c.member_id));
      CHECK(c.generation == d.generation.value());
    }
    CHECK(h.outstanding.empty());
  }
}

TEST_CASE("classic: offsets of a Kafka client group live while a member does, and expire a retention after its session lapsed (KIP-211)") {
  constexpr int64_t retention = 60'000;
  harness h;
  auto ids = stable_group_of_three(h, "g");
  std::vector<offset_commit> commit{{tp("orders", 1), offset(5), ""}};
  REQUIRE(h.c.commit_offsets_kafka("g", ids[1], std::nullopt, 1, commit, t0 + 5'000).ok());
  // Heartbeats for three retention periods: the offsets stay.
  int64_t now = t0 + 5'000;
  for (; now <= t0 + 3 * retention; now += 3'000) {
    for (const auto& id : ids) REQUIRE(h.c.classic_heartbeat("g", id, std::nullopt, generation_id(1), now).ok());
    h.tick(now);
    CHECK(h.c.expire_offsets(now, retention).groups.empty());
  }
  // The clients stop: the tick that sees their sessions lapse empties the group.
  const int64_t gone_at = now + session;
  h.tick(gone_at);
  REQUIRE(h.c.describe_group("g").members.empty());
  CHECK(h.c.expire_offsets(gone_at + retention - 1, retention).groups.empty());
  auto expired = h.c.expire_offsets(gone_at + retention, retention);
  REQUIRE(expired.groups.size() == 1);
  CHECK(expired.groups[0].partitions == partition_set{tp("orders", 1)});
  CHECK(expired.groups[0].group_removed);
  CHECK(h.c.describe_group("g").state == group_state::dead);
  CHECK(h.outstanding.empty());
}

TEST_CASE("classic: unloading a group hands back the JoinGroup and SyncGroup tickets its members wait on") {
  // Kafka's GroupCoordinator.onResignation answers them NOT_COORDINATOR; forgotten, a JoinGroup
  // waiting at a coordinator that lost the group was never answered (session 41's breaker).
  harness h;
  auto [a, ta] = h.join_new("g", t0);
  auto [x, tx] = h.join_new("synced", t0);
  auto [y, ty] = h.join_new("synced", t0);
  auto [b, tb] = h.join_new("other", t0);
  h.tick(t0 + initial_delay);
  for (auto t : {ta, tx, ty, tb}) REQUIRE(h.joins.contains(t));
  // "g": a second member's join waits for the first member to rejoin.
  auto [d, td] = h.join_new("g", t0 + initial_delay + 1);
  CHECK_FALSE(h.joins.contains(td));
  // "synced": the follower's SyncGroup waits for the leader's.
  const std::string follower = h.joins[tx].leader == x ? y : x;
  auto sf = h.sync("synced", follower, 1, t0 + initial_delay + 1);
  CHECK_FALSE(h.syncs.contains(sf));
  const auto gone = h.c.unload_groups([](std::string_view group_id) { return group_id != "other"; });
  CHECK(gone.groups == 2);
  CHECK(gone.joins == std::vector<classic_ticket>{td});
  CHECK(gone.syncs == std::vector<classic_ticket>{sf});
  CHECK(h.c.describe_group("other").state == group_state::completing_rebalance);
  (void)a;
  (void)b;
  (void)d;
}

TEST_CASE("classic: a group made only by JoinGroups answered MEMBER_ID_REQUIRED goes when they expire") {
  // Kept until offsets retention (7 days), 20,000 of them filled groups_per_coordinator_max in
  // 1.7 s and locked new groups out (session 41's breaker); Kafka drops an empty group without
  // offsets at its next cleanup.
  harness h;
  auto first = h.join("spam", h.request(""), t0);
  REQUIRE(h.joins[first].failure->code == errc::member_id_required);
  auto [id, t] = h.join_new("kept", t0);   // a group that completes a generation stays
  h.tick(t0 + initial_delay);
  REQUIRE(h.joins.contains(t));
  h.tick(t0 + session - 1);
  CHECK(h.c.list_groups().size() == 2);   // its pending member has not expired yet
  h.tick(t0 + session);
  const auto listed = h.c.list_groups();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].group_id == "kept");
  (void)id;
}
