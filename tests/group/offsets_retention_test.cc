// Committed offsets retention (Kafka's offsets.retention.minutes, KIP-211) on the group
// coordinator, driven with a manual clock: group_coordinator::expire_offsets.

#include <doctest.h>

#include <string>
#include <vector>

#include "ringlog/group/group_coordinator.h"
#include "ringlog/group/offsets_codec.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::group;
using namespace ringlog::group::test;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;
constexpr int64_t retention = 60'000;   // offsets.retention.minutes=1

join_request member_request(const std::string& name) {
  join_request r;
  r.client_name = name;
  r.session_timeout_ms = 10'000;
  r.rebalance_timeout_ms = 60'000;
  return r;
}

/// A member of `group` that owns partitions 0 and 1 of topic "t" and committed 5 and 7 there at
/// `now`. Returns its member id; the records of every call go to `records`.
std::string member_that_committed(group_coordinator& c, const std::string& group, int64_t now, record_list& records) {
  auto j = c.join(group, member_request("a"), now);
  REQUIRE(j.ok());
  records.insert(records.end(), j->records.begin(), j->records.end());
  auto s = c.subscribe(group, j->member_id, subscription{subscription_kind::topics, {"t"}, "", {}}, now);
  REQUIRE(s.ok());
  records.insert(records.end(), s->records.begin(), s->records.end());
  REQUIRE(s->assignment.owned.size() == 2);
  auto committed = c.commit_offsets(group, j->member_id, std::nullopt,
                                    {{tp("t", 0), offset(5), ""}, {tp("t", 1), offset(7), ""}}, now);
  REQUIRE(committed.ok());
  records.insert(records.end(), committed->records.begin(), committed->records.end());
  require_invariants(c);
  return j->member_id;
}

bool listed(const group_coordinator& c, const std::string& group) {
  for (const auto& l : c.list_groups()) {
    if (l.group_id == group) return true;
  }
  return false;
}

size_t committed_count(const group_coordinator& c, const std::string& group) {
  auto r = c.committed_offsets(group);
  return r.ok() ? r->size() : 0;
}

/// The record list's keys, decoded, with whether each is a tombstone.
std::vector<std::pair<offsets_topic_key, bool>> decoded(const record_list& records) {
  std::vector<std::pair<offsets_topic_key, bool>> out;
  for (const auto& r : records) {
    auto key = decode_offsets_topic_key(r.key);
    REQUIRE(key.ok());
    out.emplace_back(*key, !r.value.has_value());
  }
  return out;
}

}  // namespace

TEST_CASE("retention: a group with a live member keeps its offsets however old they are") {
  group_coordinator c(1, 0);
  c.set_topics({{"t", 2}}, t0);
  record_list records;
  const std::string a = member_that_committed(c, "g", t0, records);
  // The member keeps heartbeating for ten retention periods; nothing expires meanwhile.
  for (int64_t now = t0; now <= t0 + 10 * retention; now += 5'000) {
    REQUIRE(c.heartbeat("g", a, now).ok());
    REQUIRE(c.expire(now).removed.empty());
    auto expired = c.expire_offsets(now, retention);
    CHECK(expired.groups.empty());
    CHECK(expired.records.empty());
  }
  CHECK(committed_count(c, "g") == 2);
  CHECK(listed(c, "g"));
}

TEST_CASE("retention: offsets stay until the retention has passed since the group became empty, then go with the group") {
  group_coordinator c(1, 0);
  c.set_topics({{"t", 2}}, t0);
  record_list records;
  const std::string a = member_that_committed(c, "g", t0, records);
  const int64_t left_at = t0 + 5 * retention;   // long after the commit: the emptiness counts
  REQUIRE(c.leave("g", a, left_at).ok());
  CHECK(c.expire_offsets(left_at, retention).groups.empty());
  CHECK(c.expire_offsets(left_at + retention - 1, retention).groups.empty());
  CHECK(committed_count(c, "g") == 2);
  CHECK(listed(c, "g"));

  auto expired = c.expire_offsets(left_at + retention, retention);
  REQUIRE(expired.groups.size() == 1);
  CHECK(expired.groups[0].group_id == "g");
  CHECK(expired.groups[0].partitions == partition_set{tp("t", 0), tp("t", 1)});
  CHECK(expired.groups[0].group_removed);
  // Tombstones: one per committed offset, then the group's metadata.
  const auto keys = decoded(expired.records);
  REQUIRE(keys.size() == 3);
  for (const auto& [key, tombstone] : keys) CHECK(tombstone);
  CHECK(std::get<offset_commit_key>(keys[0].first).partition == tp("t", 0));
  CHECK(std::get<offset_commit_key>(keys[1].first).partition == tp("t", 1));
  CHECK(std::get<group_metadata_key>(keys[2].first).group_id == "g");
  CHECK_FALSE(listed(c, "g"));
  CHECK(c.describe_group("g").state == group_state::dead);
  CHECK(c.committed_offsets("g").error().code == errc::group_id_not_found);
  // Done once: the next check finds nothing.
  CHECK(c.expire_offsets(left_at + 2 * retention, retention).records.empty());

  // The tombstones, replayed after the earlier records, leave nothing behind either.
  records.insert(records.end(), expired.records.begin(), expired.records.end());
  group_coordinator replayed(2, 0);
  for (const auto& r : records) REQUIRE(replayed.replay(r, left_at + 2 * retention).ok());
  CHECK_FALSE(listed(replayed, "g"));
}

TEST_CASE("retention: a member that expires empties the group at its expiry, not at its last call") {
  group_coordinator c(1, 0);
  c.set_topics({{"t", 2}}, t0);
  record_list records;
  member_that_committed(c, "g", t0, records);
  const int64_t swept_at = t0 + 3 * retention;   // the session lapsed at t0 + 10 s; swept much later
  REQUIRE(c.expire(swept_at).removed.size() == 1);
  CHECK(c.expire_offsets(swept_at + retention - 1, retention).groups.empty());
  CHECK(c.expire_offsets(swept_at + retention, retention).groups.size() == 1);
}

TEST_CASE("retention: a commit to the empty group starts the wait again") {
  group_coordinator c(1, 0);
  // Kafka clients' commits outside membership (an assign()ing consumer): the group never has members.
  REQUIRE(c.commit_offsets_standalone("s", {{tp("t", 0), offset(3), ""}}, t0).ok());
  REQUIRE(c.commit_offsets_standalone("s", {{tp("t", 1), offset(4), ""}}, t0 + retention / 2).ok());
  // The older offset is kept too: the group's latest commit is the reference for all of them.
  CHECK(c.expire_offsets(t0 + retention, retention).groups.empty());
  CHECK(committed_count(c, "s") == 2);
  auto expired = c.expire_offsets(t0 + retention / 2 + retention, retention);
  REQUIRE(expired.groups.size() == 1);
  CHECK(expired.groups[0].partitions.size() == 2);
  CHECK_FALSE(listed(c, "s"));
}

TEST_CASE("retention: a member that joins and leaves again restarts the empty period") {
  group_coordinator c(1, 0);
  c.set_topics({{"t", 2}}, t0);
  record_list records;
  const std::string a = member_that_committed(c, "g", t0, records);
  REQUIRE(c.leave("g", a, t0 + 1'000).ok());
  const int64_t back_at = t0 + retention / 2;
  auto j = c.join("g", member_request("b"), back_at);
  REQUIRE(j.ok());
  REQUIRE(c.leave("g", j->member_id, back_at + 1'000).ok());
  CHECK(c.expire_offsets(t0 + 1'000 + retention, retention).groups.empty());
  CHECK(c.expire_offsets(back_at + 1'000 + retention, retention).groups.size() == 1);
}

TEST_CASE("retention: after a replay the group is empty since the replay, so nothing expires early") {
  group_coordinator c(1, 0);
  c.set_topics({{"t", 2}}, t0);
  record_list records;
  const std::string a = member_that_committed(c, "g", t0, records);
  auto left = c.leave("g", a, t0 + 1'000);
  REQUIRE(left.ok());
  records.insert(records.end(), left->begin(), left->end());

  // A restart long after the commit and the leave: the loaded group waits a whole retention.
  const int64_t restart_at = t0 + 10 * retention;
  group_coordinator restarted(2, 0);
  for (const auto& r : records) REQUIRE(restarted.replay(r, restart_at).ok());
  CHECK(committed_count(restarted, "g") == 2);
  CHECK(restarted.expire_offsets(restart_at, retention).groups.empty());
  CHECK(restarted.expire_offsets(restart_at + retention - 1, retention).groups.empty());
  auto expired = restarted.expire_offsets(restart_at + retention, retention);
  REQUIRE(expired.groups.size() == 1);
  CHECK(expired.groups[0].group_removed);
  CHECK_FALSE(listed(restarted, "g"));
}

TEST_CASE("retention: pending transactional offsets are never expired, nor the committed offset they will replace") {
  group_coordinator c(1, 0);
  const auto all_groups = [](std::string_view) { return true; };
  REQUIRE(c.commit_offsets_standalone("x", {{tp("t", 0), offset(1), ""}, {tp("t", 1), offset(2), ""}}, t0).ok());
  REQUIRE(c.txn_commit_offsets("x", "", std::nullopt, -1, 42, {{tp("t", 0), offset(9), ""}}, t0).ok());
  auto expired = c.expire_offsets(t0 + retention, retention);
  REQUIRE(expired.groups.size() == 1);
  CHECK(expired.groups[0].partitions == partition_set{tp("t", 1)});
  CHECK_FALSE(expired.groups[0].group_removed);   // its pending offset keeps it
  REQUIRE(expired.records.size() == 1);
  CHECK(listed(c, "x"));
  CHECK(committed_count(c, "x") == 1);
  // The transaction aborts: the old committed offset of partition 0 is past the retention too.
  c.complete_txn_offsets(42, false, all_groups, t0 + retention);
  auto rest = c.expire_offsets(t0 + retention + 1, retention);
  REQUIRE(rest.groups.size() == 1);
  CHECK(rest.groups[0].partitions == partition_set{tp("t", 0)});
  CHECK(rest.groups[0].group_removed);
}

TEST_CASE("retention: a group the caller holds (a REST instance that has not joined yet) keeps its offsets") {
  group_coordinator c(1, 0);
  REQUIRE(c.commit_offsets_standalone("held", {{tp("t", 0), offset(1), ""}}, t0).ok());
  REQUIRE(c.commit_offsets_standalone("free", {{tp("t", 0), offset(1), ""}}, t0).ok());
  auto expired = c.expire_offsets(t0 + retention, retention, [](std::string_view g) { return g == "held"; });
  REQUIRE(expired.groups.size() == 1);
  CHECK(expired.groups[0].group_id == "free");
  CHECK(listed(c, "held"));
}

TEST_CASE("retention: an empty group without offsets goes after the retention too") {
  group_coordinator c(1, 0);
  c.set_topics({{"t", 2}}, t0);
  auto j = c.join("e", member_request("a"), t0);
  REQUIRE(j.ok());
  REQUIRE(c.leave("e", j->member_id, t0).ok());
  CHECK(listed(c, "e"));
  CHECK(c.expire_offsets(t0 + retention - 1, retention).groups.empty());
  auto expired = c.expire_offsets(t0 + retention, retention);
  REQUIRE(expired.groups.size() == 1);
  CHECK(expired.groups[0].partitions.empty());
  CHECK(expired.groups[0].group_removed);
  REQUIRE(expired.records.size() == 1);   // the metadata tombstone
  CHECK_FALSE(listed(c, "e"));
}
