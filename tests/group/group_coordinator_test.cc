#include <doctest.h>

#include "ringlog/group/group_coordinator.h"
#include "test_util.h"

#include <limits>
#include <string>

using namespace ringlog;
using namespace ringlog::group;
using namespace ringlog::group::test;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;

join_request req(const std::string& name, std::optional<std::string> instance = std::nullopt,
                 offset_reset reset = offset_reset::earliest) {
  join_request r;
  r.client_name = name;
  r.group_instance_id = std::move(instance);
  r.session_timeout_ms = 10'000;
  r.rebalance_timeout_ms = 60'000;
  r.auto_offset_reset = reset;
  return r;
}

subscription topics(std::vector<std::string> t) { return subscription{subscription_kind::topics, std::move(t), "", {}}; }

/// Joins and subscribes to `topic`, checking invariants after each call. Returns the member id.
std::string join_and_subscribe(group_coordinator& c, const std::string& group, const join_request& r,
                               const std::string& topic, int64_t now, record_list* records = nullptr) {
  auto j = c.join(group, r, now);
  REQUIRE(j.ok());
  require_invariants(c);
  auto s = c.subscribe(group, j->member_id, topics({topic}), now);
  REQUIRE(s.ok());
  require_invariants(c);
  if (records) {
    records->insert(records->end(), j->records.begin(), j->records.end());
    records->insert(records->end(), s->records.begin(), s->records.end());
  }
  return j->member_id;
}

/// Partitions taken away from a member that is still in the group (revocations); partitions of
/// members that left must move with every assignor and are not counted.
int moved(const partition_map<std::string>& before, const partition_map<std::string>& after) {
  std::set<std::string> present;
  for (const auto& [p, owner] : after) present.insert(owner);
  int n = 0;
  for (const auto& [p, owner] : before) {
    auto it = after.find(p);
    if (present.contains(owner) && it != after.end() && it->second != owner) ++n;
  }
  return n;
}

struct join_2_3_1_result {
  int moves_2_to_3 = 0;
  int moves_3_to_1 = 0;
};

join_2_3_1_result join_2_3_1(assignor_kind kind) {
  group_coordinator c(42);
  c.set_topics({{"t", 6}}, t0);
  auto r = req("a");
  r.assignor = kind;
  const auto a = join_and_subscribe(c, "g", r, "t", t0);
  r.client_name = "b";
  const auto b = join_and_subscribe(c, "g", r, "t", t0);
  drive_until_stable(c, "g", t0);
  auto before = owners(c, "g");
  CHECK(before.size() == 6);
  r.client_name = "c";
  const auto cc = join_and_subscribe(c, "g", r, "t", t0);
  drive_until_stable(c, "g", t0);
  auto after3 = owners(c, "g");
  CHECK(after3.size() == 6);
  for (const auto& m : c.describe_group("g").members) CHECK(m.owned.size() == 2);
  join_2_3_1_result out;
  out.moves_2_to_3 = moved(before, after3);
  REQUIRE(c.leave("g", a, t0).ok());
  require_invariants(c);
  REQUIRE(c.leave("g", b, t0).ok());
  require_invariants(c);
  drive_until_stable(c, "g", t0);
  auto after1 = owners(c, "g");
  CHECK(after1.size() == 6);
  for (const auto& [p, owner] : after1) CHECK(owner == cc);
  out.moves_3_to_1 = moved(after3, after1);
  CHECK(c.describe_group("g").state == group_state::stable);
  return out;
}

}  // namespace

TEST_CASE("2, then 3, then 1 members on 6 partitions: one owner per partition at every step; sticky moves few") {
  const auto sticky = join_2_3_1(assignor_kind::cooperative_sticky);
  const auto range = join_2_3_1(assignor_kind::range);
  const auto round_robin = join_2_3_1(assignor_kind::round_robin);
  MESSAGE("partitions taken from a live member, 2->3 then 3->1: sticky " << sticky.moves_2_to_3 << "+"
          << sticky.moves_3_to_1 << ", range " << range.moves_2_to_3 << "+" << range.moves_3_to_1
          << ", round robin " << round_robin.moves_2_to_3 << "+" << round_robin.moves_3_to_1);
  CHECK(sticky.moves_2_to_3 == 2);  // the minimum: the new member needs 2
  CHECK(sticky.moves_3_to_1 == 0);  // the survivor keeps its own
  CHECK(range.moves_2_to_3 == 3);   // a=[0,1] b=[2,3] c=[4,5] from a=[0,1,2] b=[3,4,5]
  CHECK(sticky.moves_2_to_3 + sticky.moves_3_to_1 < range.moves_2_to_3 + range.moves_3_to_1);
}

TEST_CASE("a moving partition is revoked from the old owner before the new owner gets it") {
  group_coordinator c(1);
  c.set_topics({{"t", 2}}, t0);
  const auto a = join_and_subscribe(c, "g", req("a"), "t", t0);
  CHECK(c.describe_group("g").state == group_state::stable);
  CHECK(owners(c, "g").size() == 2);
  const auto b = join_and_subscribe(c, "g", req("b"), "t", t0);
  auto d = c.describe_group("g");
  CHECK(d.state == group_state::preparing_rebalance);
  auto hb_b = c.heartbeat("g", b, t0);
  REQUIRE(hb_b.ok());
  CHECK(hb_b->assignment.owned.empty());              // a still owns it
  CHECK(hb_b->assignment.pending_assignment.size() == 1);
  auto hb_a = c.heartbeat("g", a, t0);
  REQUIRE(hb_a.ok());
  CHECK(hb_a->assignment.revoked.size() == 1);
  CHECK(c.describe_group("g").state == group_state::completing_rebalance);
  hb_b = c.heartbeat("g", b, t0);
  CHECK(hb_b->assignment.assigned == hb_a->assignment.revoked);
  CHECK(c.describe_group("g").state == group_state::stable);
  require_invariants(c);
}

TEST_CASE("static membership: rejoin within the session keeps member id and partitions, no generation bump") {
  group_coordinator c(2);
  c.set_topics({{"t", 4}}, t0);
  const auto a = join_and_subscribe(c, "g", req("a", "host-a"), "t", t0);
  const auto b = join_and_subscribe(c, "g", req("b"), "t", t0);
  drive_until_stable(c, "g", t0);
  const auto before = c.describe_group("g");
  partition_set a_owned;
  for (const auto& m : before.members) if (m.member_id == a) a_owned = m.owned;
  CHECK(a_owned.size() == 2);
  auto j = c.join("g", req("a-restarted", "host-a"), t0 + 5'000);
  REQUIRE(j.ok());
  CHECK(j->static_rejoin);
  CHECK(j->member_id == a);
  CHECK(j->assignment.owned == a_owned);
  CHECK(j->assignment.generation == before.generation);
  CHECK(c.describe_group("g").generation == before.generation);
  CHECK(c.describe_group("g").state == group_state::stable);
  require_invariants(c);
  // After its session is over, the same instance id is a new member (and a rebalance).
  REQUIRE(c.heartbeat("g", b, t0 + 9'000).ok());
  auto e = c.expire(t0 + 15'000);
  REQUIRE(e.removed.size() == 1);
  CHECK(e.removed[0].member_id == a);
  auto j2 = c.join("g", req("a", "host-a"), t0 + 15'000);
  REQUIRE(j2.ok());
  CHECK(!j2->static_rejoin);
  CHECK(j2->member_id != a);
  CHECK(c.describe_group("g").generation > before.generation);
}

TEST_CASE("session expiry removes a member and its partitions move") {
  group_coordinator c(3);
  c.set_topics({{"t", 6}}, t0);
  const auto a = join_and_subscribe(c, "g", req("a"), "t", t0);
  const auto b = join_and_subscribe(c, "g", req("b"), "t", t0);
  drive_until_stable(c, "g", t0);
  REQUIRE(c.heartbeat("g", b, t0 + 9'000).ok());
  CHECK(c.expire(t0 + 9'999).removed.empty());
  auto e = c.expire(t0 + 10'000);
  REQUIRE(e.removed.size() == 1);
  CHECK(e.removed[0].member_id == a);
  CHECK(e.removed[0].reason == "session timeout");
  CHECK(!e.records.empty());  // group metadata changed
  require_invariants(c);
  auto hb = c.heartbeat("g", b, t0 + 10'000);
  REQUIRE(hb.ok());
  CHECK(hb->assignment.owned.size() == 6);
  CHECK(c.heartbeat("g", a, t0 + 10'000).error().code == errc::unknown_member_id);
}

TEST_CASE("a lapsed session is refused at once, before expire() sweeps it; partitions stay put until then") {
  group_coordinator c(14);
  c.set_topics({{"t", 2}}, t0);
  const auto a = join_and_subscribe(c, "g", req("a"), "t", t0);
  auto hb = c.heartbeat("g", a, t0 + 10'000);
  REQUIRE(!hb.ok());
  CHECK(hb.error().code == errc::unknown_member_id);
  CHECK(hb.error().message.find("session expired") != std::string::npos);
  auto commit = c.commit_offsets("g", a, std::nullopt, {{tp("t", 0), offset(1), ""}}, t0 + 10'000);
  REQUIRE(!commit.ok());
  CHECK(c.committed_offsets("g")->empty());
  CHECK(owners(c, "g").size() == 2);  // not moved until expire()
  CHECK(c.expire(t0 + 10'000).removed.size() == 1);
  CHECK(owners(c, "g").empty());
}

TEST_CASE("commits are fenced by member, ownership and generation, and all-or-nothing") {
  group_coordinator c(4);
  c.set_topics({{"t", 2}}, t0);
  const auto a = join_and_subscribe(c, "g", req("a"), "t", t0);
  const auto gen_a_old = c.describe_group("g").generation;
  const auto b = join_and_subscribe(c, "g", req("b"), "t", t0);
  // Before a's next heartbeat it still owns both partitions and may commit them.
  REQUIRE(c.commit_offsets("g", a, gen_a_old, {{tp("t", 0), offset(5), ""}, {tp("t", 1), offset(5), ""}}, t0).ok());
  auto hb = c.heartbeat("g", a, t0);
  REQUIRE(hb.ok());
  REQUIRE(hb->assignment.revoked.size() == 1);
  const auto revoked = *hb->assignment.revoked.begin();
  const auto kept = *hb->assignment.owned.begin();
  // Revoked partition: refused, message names member, partition and generation; nothing applied.
  auto r = c.commit_offsets("g", a, std::nullopt, {{kept, offset(7), ""}, {revoked, offset(9), ""}}, t0);
  REQUIRE(!r.ok());
  CHECK(r.error().code == errc::partition_not_owned);
  CHECK(r.error().message.find(a) != std::string::npos);
  CHECK(r.error().message.find("t-" + std::to_string(revoked.partition.value())) != std::string::npos);
  CHECK(r.error().message.find("generation") != std::string::npos);
  CHECK(c.committed_offsets("g")->at(kept).committed == offset(5));
  CHECK(c.committed_offsets("g")->at(revoked).committed == offset(5));
  // Stale generation: refused.
  auto stale = c.commit_offsets("g", a, gen_a_old, {{kept, offset(7), ""}}, t0);
  REQUIRE(!stale.ok());
  CHECK(stale.error().code == errc::illegal_generation);
  CHECK(c.committed_offsets("g")->at(kept).committed == offset(5));
  // Current generation: accepted.
  REQUIRE(c.commit_offsets("g", a, hb->assignment.generation, {{kept, offset(7), ""}}, t0).ok());
  CHECK(c.committed_offsets("g")->at(kept).committed == offset(7));
  // An expired member: unknown_member_id, nothing applied.
  REQUIRE(c.heartbeat("g", b, t0 + 9'000).ok());
  REQUIRE(c.expire(t0 + 10'000).removed.size() == 1);
  auto gone = c.commit_offsets("g", a, std::nullopt, {{kept, offset(100), ""}}, t0 + 10'000);
  REQUIRE(!gone.ok());
  CHECK(gone.error().code == errc::unknown_member_id);
  CHECK(c.committed_offsets("g")->at(kept).committed == offset(7));
  // Bounds are named.
  auto big = c.commit_offsets("g", b, std::nullopt, {{revoked, offset(1), std::string(5000, 'x')}}, t0 + 10'000);
  REQUIRE(!big.ok());
  CHECK(big.error().code == errc::offset_metadata_too_large);
  CHECK(big.error().message.find("limits::offset_metadata_bytes_max") != std::string::npos);
}

TEST_CASE("REST proxy v2: explicit commit of N stores N + 1; the next member starts there") {
  // cases/rest-proxy-v2-commit-offsets.md: offsets 0..9 produced, read, commit {offset 9}.
  group_coordinator c(5);
  c.set_topics({{"t", 1}}, t0);
  const auto m = join_and_subscribe(c, "g", req("m"), "t", t0);
  auto pos = c.positions_for_fetch("g", m);
  REQUIRE(pos.ok());
  REQUIRE(pos->size() == 1);
  CHECK((*pos)[0].source == fetch_source::reset_earliest);
  REQUIRE(c.seek("g", m, tp("t", 0), offset(0)).ok());  // log_start_offset, resolved by the caller
  REQUIRE(c.record_fetched("g", m, tp("t", 0), offset(10)).ok());  // records 0..9 handed out
  pos = c.positions_for_fetch("g", m);
  CHECK((*pos)[0].source == fetch_source::position);
  CHECK((*pos)[0].fetch_offset == offset(10));
  auto r = c.commit_processed("g", m, std::nullopt, {{tp("t", 0), offset(9), ""}}, t0);
  REQUIRE(r.ok());
  CHECK(r->committed.at(tp("t", 0)).committed == offset(10));
  CHECK(c.committed_offsets("g")->at(tp("t", 0)).committed == offset(10));
  REQUIRE(c.leave("g", m, t0).ok());
  const auto n = join_and_subscribe(c, "g", req("n"), "t", t0);
  pos = c.positions_for_fetch("g", n);
  REQUIRE(pos->size() == 1);
  CHECK((*pos)[0].source == fetch_source::committed);
  CHECK((*pos)[0].fetch_offset == offset(10));  // none of 0..9 is delivered again
}

TEST_CASE("REST proxy v2: a commit of the largest offset is refused, not wrapped to a negative N + 1") {
  // Found by an adversarial session: {"offset": 9223372036854775807} computed N + 1 with signed
  // overflow and was refused as "commit offset -9223372036854775808 ... is negative".
  group_coordinator c(5);
  c.set_topics({{"t", 1}}, t0);
  const auto m = join_and_subscribe(c, "g", req("m"), "t", t0);
  REQUIRE(c.seek("g", m, tp("t", 0), offset(0)).ok());
  const int64_t largest = std::numeric_limits<int64_t>::max();
  auto r = c.commit_processed("g", m, std::nullopt, {{tp("t", 0), offset(largest), ""}}, t0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::invalid_offset);
  CHECK(r.error().message.find(std::to_string(largest)) != std::string::npos);
  CHECK(r.error().message.find("-9223372036854775808") == std::string::npos);
  CHECK(c.committed_offsets("g")->empty());
  r = c.commit_processed("g", m, std::nullopt, {{tp("t", 0), offset(largest - 1), ""}}, t0);
  REQUIRE(r.ok());
  CHECK(r->committed.at(tp("t", 0)).committed == offset(largest));
}

TEST_CASE("a negative committed offset is stored as given (Kafka's OffsetCommit), read back, and resets its reader") {
  // KafkaJS resets a partition after OFFSET_OUT_OF_RANGE by committing -2 (earliest) or -1
  // (latest); Kafka stores any offset, and its clients treat a negative one as none.
  group_coordinator c(9);
  c.set_topics({{"t", 2}}, t0);
  auto stored = c.commit_offsets_standalone("g", {{tp("t", 0), offset(-2), ""}, {tp("t", 1), offset(-1), ""}}, t0);
  REQUIRE(stored.ok());
  CHECK(c.committed_offsets("g")->at(tp("t", 0)).committed == offset(-2));
  CHECK(c.committed_offsets("g")->at(tp("t", 1)).committed == offset(-1));
  // After a restart too (the commit value codec takes any int64).
  group_coordinator restarted(10);
  for (const auto& rec : stored->records) REQUIRE(restarted.replay(rec, t0 + 100).ok());
  CHECK(restarted.committed_offsets("g")->at(tp("t", 0)).committed == offset(-2));
  // No lag is measured from it.
  auto lags = c.lag("g", {{tp("t", 0), offset(5)}, {tp("t", 1), offset(7)}});
  REQUIRE(lags.ok());
  for (const auto& l : *lags) {
    CHECK_FALSE(l.committed.has_value());
    CHECK_FALSE(l.lag.has_value());
  }
  // A member of the group starts where auto.offset.reset says, not at the negative offset.
  const auto m = join_and_subscribe(c, "g", req("m", std::nullopt, offset_reset::latest), "t", t0);
  auto pos = c.positions_for_fetch("g", m);
  REQUIRE(pos.ok());
  REQUIRE(pos->size() == 2);
  for (const auto& p : *pos) CHECK(p.source == fetch_source::reset_latest);
  // Its own commits of negative offsets are stored too.
  auto own = c.commit_offsets("g", m, std::nullopt, {{tp("t", 0), offset(-1), ""}}, t0);
  REQUIRE(own.ok());
  CHECK(c.committed_offsets("g")->at(tp("t", 0)).committed == offset(-1));
}

TEST_CASE("REST proxy v2: a commit of -1 stores 0; below -1 is refused, as Confluent's N + 1 would be negative") {
  group_coordinator c(11);
  c.set_topics({{"t", 1}}, t0);
  const auto m = join_and_subscribe(c, "g", req("m"), "t", t0);
  auto zero = c.commit_processed("g", m, std::nullopt, {{tp("t", 0), offset(-1), ""}}, t0);
  REQUIRE(zero.ok());
  CHECK(zero->committed.at(tp("t", 0)).committed == offset(0));
  auto below = c.commit_processed("g", m, std::nullopt, {{tp("t", 0), offset(-2), ""}}, t0);
  REQUIRE_FALSE(below.ok());
  CHECK(below.error().code == errc::invalid_offset);
  CHECK(below.error().message.find("below -1") != std::string::npos);
  CHECK(c.committed_offsets("g")->at(tp("t", 0)).committed == offset(0));
}

TEST_CASE("REST proxy v2: an empty commit commits everything already returned") {
  group_coordinator c(6);
  c.set_topics({{"t", 2}}, t0);
  const auto m = join_and_subscribe(c, "g", req("m"), "t", t0);
  auto empty = c.commit_returned("g", m, std::nullopt, t0);  // nothing returned yet: commits nothing
  REQUIRE(empty.ok());
  CHECK(empty->committed.empty());
  REQUIRE(c.seek("g", m, tp("t", 0), offset(0)).ok());
  REQUIRE(c.record_fetched("g", m, tp("t", 0), offset(10)).ok());
  auto r = c.commit_returned("g", m, std::nullopt, t0);
  REQUIRE(r.ok());
  CHECK(r->committed.size() == 1);
  CHECK(r->committed.at(tp("t", 0)).committed == offset(10));
  REQUIRE(c.record_fetched("g", m, tp("t", 0), offset(15)).ok());
  REQUIRE(c.record_fetched("g", m, tp("t", 1), offset(3)).ok());
  r = c.commit_returned("g", m, std::nullopt, t0);
  CHECK(r->committed.at(tp("t", 0)).committed == offset(15));
  CHECK(r->committed.at(tp("t", 1)).committed == offset(3));
  CHECK(r->records.size() == 2);
}

TEST_CASE("auto.offset.reset decides where a partition without position or commit starts") {
  group_coordinator c(7);
  c.set_topics({{"t", 1}}, t0);
  const auto l = join_and_subscribe(c, "latest", req("l", std::nullopt, offset_reset::latest), "t", t0);
  CHECK((*c.positions_for_fetch("latest", l))[0].source == fetch_source::reset_latest);
  const auto n = join_and_subscribe(c, "none", req("n", std::nullopt, offset_reset::none), "t", t0);
  CHECK((*c.positions_for_fetch("none", n))[0].source == fetch_source::no_offset);
  CHECK(c.record_fetched("none", n, tp("t", 5), offset(1)).error().code == errc::partition_not_owned);
}

TEST_CASE("a pattern matches only the topics its filter lets it see, re-resolved with the topics (issue 30)") {
  group_coordinator c(8);
  bool secret_visible = false;
  c.set_pattern_topic_filter([&](std::string_view group_id, std::string_view, const std::string& topic) {
    CHECK(group_id == "g");
    return topic != "orders-secret" || secret_visible;
  });
  c.set_topics({{"orders-eu", 1}, {"orders-secret", 2}}, t0);
  const auto a = c.join("g", req("a"), t0)->member_id;
  auto s = c.subscribe("g", a, subscription{subscription_kind::pattern, {}, "orders-.*", {}}, t0);
  REQUIRE(s.ok());
  CHECK(s->assignment.owned == partition_set{tp("orders-eu", 0)});
  // The owner's ACLs change (the broker re-applies the topics): the pattern sees the topic now.
  secret_visible = true;
  c.set_topics({{"orders-eu", 1}, {"orders-secret", 2}}, t0);
  CHECK(c.heartbeat("g", a, t0)->assignment.owned.size() == 3);
}

TEST_CASE("subscription and manual assignment do not mix; patterns follow the topic list") {
  group_coordinator c(8);
  c.set_topics({{"orders-eu", 1}, {"orders-us", 2}, {"other", 1}, {"__consumer_offsets", 50}}, t0);
  auto j = c.join("g", req("a"), t0);
  REQUIRE(j.ok());
  const auto a = j->member_id;
  auto s = c.subscribe("g", a, subscription{subscription_kind::pattern, {}, "orders-.*", {}}, t0);
  REQUIRE(s.ok());
  CHECK(s->assignment.owned.size() == 3);
  auto mix = c.assign("g", a, {tp("other", 0)}, t0);
  REQUIRE(!mix.ok());
  CHECK(mix.error().code == errc::inconsistent_subscription);
  auto bad = c.subscribe("g", a, subscription{subscription_kind::pattern, {}, "(", {}}, t0);
  REQUIRE(!bad.ok());
  CHECK(bad.error().code == errc::invalid_regular_expression);
  // Patterns that backtrack exponentially are refused by name (a shard hung on `((a|aa)*)*c`).
  for (const char* slow : {"((a|aa)*)*c", "(a+)+$", "(a*)*$", "(?:a*)*b", "a{1,1000}{1,1000}", "(a|a)*b"}) {
    auto refused = c.subscribe("g", a, subscription{subscription_kind::pattern, {}, slow, {}}, t0);
    REQUIRE_MESSAGE(!refused.ok(), slow);
    CHECK(refused.error().message.find("exponential time") != std::string::npos);
  }
  for (const char* fine : {"(orders|payments)-.*", "orders-[a-z]+", ".*?-eu", "x\\(a+\\)+"}) {
    CHECK_MESSAGE(c.subscribe("g", a, subscription{subscription_kind::pattern, {}, fine, {}}, t0).ok(), fine);
  }
  REQUIRE(c.subscribe("g", a, subscription{subscription_kind::pattern, {}, "orders-.*", {}}, t0).ok());
  CHECK(c.describe_group("g").members[0].sub.pattern == "orders-.*");  // unchanged
  c.set_topics({{"orders-eu", 1}, {"orders-us", 2}, {"orders-asia", 1}, {"other", 1}, {"__consumer_offsets", 50}}, t0);
  CHECK(c.heartbeat("g", a, t0)->assignment.owned.size() == 4);
  // `.*` never matches internal topics.
  REQUIRE(c.subscribe("g", a, subscription{subscription_kind::pattern, {}, ".*", {}}, t0).ok());
  const auto all = c.heartbeat("g", a, t0);
  REQUIRE(all.ok());
  CHECK(all->assignment.owned.size() == 5);
  for (const auto& p : all->assignment.owned) CHECK(p.topic != "__consumer_offsets");
  // Manual assignment after unsubscribe; a second member cannot take the same partition.
  REQUIRE(c.unsubscribe("g", a, t0).ok());
  auto m = c.assign("g", a, {tp("other", 0)}, t0);
  REQUIRE(m.ok());
  CHECK(m->assignment.owned == partition_set{tp("other", 0)});
  auto j2 = c.join("g", req("b"), t0);
  auto taken = c.assign("g", j2->member_id, {tp("other", 0)}, t0);
  REQUIRE(!taken.ok());
  CHECK(taken.error().code == errc::partition_assigned_elsewhere);
  CHECK(c.subscribe("g", a, topics({"other"}), t0).error().code == errc::inconsistent_subscription);
  CHECK(c.assign("g", a, {tp("nope", 0)}, t0).error().code == errc::unknown_topic_or_partition);
  require_invariants(c);
}

TEST_CASE("a manual assignment reads beside the subscribed owner and never takes its partition (Kafka's assign())") {
  // In Kafka and Confluent's REST Proxy assign() is outside the group's membership: the
  // subscribed consumer keeps its partition and the manual one reads it too. ringlog took it
  // away from the subscribed member at its next heartbeat (session 33's REST v2 finding).
  group_coordinator c(31);
  c.set_topics({{"orders", 2}}, t0);
  const auto s = join_and_subscribe(c, "g", req("s"), "orders", t0);
  const partition_set both{tp("orders", 0), tp("orders", 1)};
  REQUIRE(c.heartbeat("g", s, t0)->assignment.owned == both);
  auto j = c.join("g", req("m"), t0);
  REQUIRE(j.ok());
  auto m = c.assign("g", j->member_id, {tp("orders", 0)}, t0);
  REQUIRE(m.ok());
  require_invariants(c);
  CHECK(m->assignment.owned == partition_set{tp("orders", 0)});   // at once, beside s
  CHECK(m->assignment.pending_assignment.empty());
  const auto after = c.heartbeat("g", s, t0);
  REQUIRE(after.ok());
  CHECK(after->assignment.owned == both);
  CHECK(after->assignment.target == both);
  CHECK(after->assignment.revoked.empty());
  CHECK(drive_until_stable(c, "g", t0) == 0);
  // Both may commit it, as two Kafka consumers of one group may (the later commit wins).
  CHECK(c.commit_processed("g", s, std::nullopt, {{tp("orders", 0), offset(4), ""}}, t0).ok());
  CHECK(c.commit_processed("g", j->member_id, std::nullopt, {{tp("orders", 0), offset(6), ""}}, t0).ok());
  // A second manual member still cannot take it (the documented 409), and the subscribed member
  // keeps it when the manual one leaves.
  auto j2 = c.join("g", req("m2"), t0);
  CHECK(c.assign("g", j2->member_id, {tp("orders", 0)}, t0).error().code == errc::partition_assigned_elsewhere);
  REQUIRE(c.leave("g", j->member_id, t0).ok());
  CHECK(c.heartbeat("g", s, t0)->assignment.owned == both);
  require_invariants(c);
}

TEST_CASE("join validates timeouts and assignor, naming the limit") {
  group_coordinator c(9);
  auto r = req("a");
  r.session_timeout_ms = 100;
  auto j = c.join("g", r, t0);
  REQUIRE(!j.ok());
  CHECK(j.error().code == errc::invalid_session_timeout);
  CHECK(j.error().message.find("session_timeout_ms_min") != std::string::npos);
  CHECK(c.join("", req("a"), t0).error().code == errc::invalid_group_id);
  auto first = req("a");
  first.assignor = assignor_kind::range;
  REQUIRE(c.join("g", first, t0).ok());
  auto second = req("b");
  second.assignor = assignor_kind::round_robin;
  CHECK(c.join("g", second, t0).error().code == errc::inconsistent_group_protocol);
}

TEST_CASE("replay of the emitted records rebuilds offsets and static members; tombstones delete") {
  record_list log;
  const auto keep = [&](const record_list& r) { log.insert(log.end(), r.begin(), r.end()); };
  group_coordinator c(10);
  c.set_topics({{"t", 4}, {"u", 1}}, t0);
  const auto s = join_and_subscribe(c, "g", req("s", "host-s"), "t", t0, &log);
  const auto d = join_and_subscribe(c, "g", req("d"), "t", t0, &log);
  drive_until_stable(c, "g", t0, &log);
  for (const auto& m : c.describe_group("g").members) {
    std::vector<offset_commit> commits;
    for (const auto& p : m.owned) commits.push_back({p, offset(p.partition.value() * 10 + 1), "meta"});
    auto r = c.commit_offsets("g", m.member_id, std::nullopt, commits, t0 + 1);
    REQUIRE(r.ok());
    keep(r->records);
  }
  // A second group with offsets of topic u, then u is deleted; a third group is deleted.
  const auto x = join_and_subscribe(c, "h", req("x"), "u", t0, &log);
  keep(c.commit_offsets("h", x, std::nullopt, {{tp("u", 0), offset(3), ""}}, t0)->records);
  keep(c.delete_topic_offsets("u"));
  CHECK(c.committed_offsets("h")->empty());
  const auto y = join_and_subscribe(c, "dead", req("y"), "t", t0, &log);
  keep(c.commit_offsets("dead", y, std::nullopt, {{tp("t", 0), offset(1), ""}}, t0)->records);
  CHECK(c.delete_group("dead").error().code == errc::group_not_empty);
  keep(*c.leave("dead", y, t0));
  auto del = c.delete_group("dead");
  REQUIRE(del.ok());
  keep(*del);
  CHECK(c.describe_group("dead").state == group_state::dead);

  group_coordinator restarted(11);
  restarted.set_topics({{"t", 4}, {"u", 1}}, t0 + 100);
  for (const auto& rec : log) REQUIRE(restarted.replay(rec, t0 + 100).ok());
  CHECK(*restarted.committed_offsets("g") == *c.committed_offsets("g"));
  CHECK(restarted.committed_offsets("g")->size() == 4);
  CHECK(restarted.committed_offsets("h")->empty());
  CHECK(!restarted.committed_offsets("dead").ok());
  // The static member survives with its partitions, the dynamic one does not.
  const auto before = c.describe_group("g");
  auto after = restarted.describe_group("g");
  REQUIRE(after.members.size() == 1);
  CHECK(after.members[0].member_id == s);
  CHECK(after.members[0].group_instance_id == "host-s");
  for (const auto& m : before.members) {
    if (m.member_id == s) CHECK(after.members[0].owned == m.owned);
  }
  CHECK(after.generation == before.generation);
  (void)d;
  require_invariants(restarted);
  // The static member rejoins and, after the lazy rebalance, owns every partition.
  auto j = restarted.join("g", req("s", "host-s"), t0 + 200);
  REQUIRE(j.ok());
  CHECK(j->member_id == s);
  CHECK(j->static_rejoin);
  CHECK(j->assignment.owned.size() == 4);
  require_invariants(restarted);
}

TEST_CASE("replay refuses corrupt records and changes nothing") {
  group_coordinator c(12);
  auto rec = offsets_topic_record{encode_offset_commit_key("g", tp("t", 0)), model::bytes{std::byte{0}}};
  auto r = c.replay(rec, t0);
  REQUIRE(!r.ok());
  CHECK(r.error().code == errc::corrupt_message);
  CHECK(c.list_groups().empty());
}

TEST_CASE("admin: list, describe, lag, reset offsets with dry run, delete") {
  group_coordinator c(13);
  c.set_topics({{"t", 2}}, t0);
  const auto m = join_and_subscribe(c, "g", req("m"), "t", t0);
  REQUIRE(c.commit_offsets("g", m, std::nullopt, {{tp("t", 0), offset(4), ""}, {tp("t", 1), offset(8), ""}}, t0).ok());
  auto groups = c.list_groups();
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].group_id == "g");
  CHECK(groups[0].state == group_state::stable);
  CHECK(groups[0].member_count == 1);
  auto d = c.describe_group("g");
  CHECK(d.assignor == assignor_kind::cooperative_sticky);
  REQUIRE(d.members.size() == 1);
  CHECK(d.members[0].client_name == "m");
  CHECK(d.members[0].owned.size() == 2);
  auto lag = c.lag("g", {{tp("t", 0), offset(10)}, {tp("t", 1), offset(8)}});
  REQUIRE(lag.ok());
  CHECK((*lag)[0].lag == 6);
  CHECK((*lag)[1].lag == 0);
  partition_map<partition_offsets> logs{{tp("t", 0), {offset(2), offset(10), offset(5)}},
                                        {tp("t", 1), {offset(0), offset(9), std::nullopt}}};
  CHECK(c.reset_offsets("g", {reset_kind::to_earliest, 0}, logs, dry_run::no, t0).error().code ==
        errc::group_not_empty);
  REQUIRE(c.leave("g", m, t0).ok());
  CHECK(c.list_groups()[0].state == group_state::empty);
  auto dry = c.reset_offsets("g", {reset_kind::shift_by, -3}, logs, dry_run::yes, t0);
  REQUIRE(dry.ok());
  CHECK(dry->offsets.at(tp("t", 0)) == offset(2));  // 4 - 3 clamped to log_start_offset 2
  CHECK(dry->offsets.at(tp("t", 1)) == offset(5));
  CHECK(dry->records.empty());
  CHECK(c.committed_offsets("g")->at(tp("t", 0)).committed == offset(4));  // dry run changed nothing
  auto ts = c.reset_offsets("g", {reset_kind::to_timestamp, 0}, logs, dry_run::no, t0);
  REQUIRE(ts.ok());
  CHECK(ts->offsets.at(tp("t", 0)) == offset(5));
  CHECK(ts->offsets.at(tp("t", 1)) == offset(9));  // no offset for the timestamp: high watermark
  CHECK(ts->records.size() == 2);
  CHECK(c.committed_offsets("g")->at(tp("t", 0)).committed == offset(5));
  CHECK(c.reset_offsets("g", {reset_kind::to_offset, 100}, logs, dry_run::yes, t0)->offsets.at(tp("t", 0)) == offset(10));
  CHECK(c.reset_offsets("g", {reset_kind::to_latest, 0}, logs, dry_run::yes, t0)->offsets.at(tp("t", 1)) == offset(9));
  // A shift past either end clamps like any other: committed + 2^63-1 overflowed (undefined
  // behaviour) and came out at log_start_offset, the opposite end (found by an adversarial session).
  const int64_t largest = std::numeric_limits<int64_t>::max(), smallest = std::numeric_limits<int64_t>::min();
  auto forward = c.reset_offsets("g", {reset_kind::shift_by, largest}, logs, dry_run::yes, t0);
  REQUIRE(forward.ok());
  CHECK(forward->offsets.at(tp("t", 0)) == offset(10));
  CHECK(forward->offsets.at(tp("t", 1)) == offset(9));
  auto back = c.reset_offsets("g", {reset_kind::shift_by, smallest}, logs, dry_run::yes, t0);
  REQUIRE(back.ok());
  CHECK(back->offsets.at(tp("t", 0)) == offset(2));
  CHECK(back->offsets.at(tp("t", 1)) == offset(0));
  auto del = c.delete_group("g");
  REQUIRE(del.ok());
  CHECK(del->size() == 3);  // two offset tombstones + the group metadata tombstone
  for (const auto& r : *del) CHECK(!r.value.has_value());
  CHECK(c.list_groups().empty());
  CHECK(c.delete_group("g").error().code == errc::group_id_not_found);
}

TEST_CASE("check_join answers what join would, and changes nothing") {
  group_coordinator c(11);
  c.set_topics({{"t", 2}}, t0);
  auto r = req("a", "host-a");
  r.assignor = assignor_kind::range;
  CHECK(c.check_join("g", r, t0).value() == false);   // a new member: no takeover
  CHECK(c.list_groups().empty());                      // nothing created
  auto bad = req("a");
  bad.session_timeout_ms = 1;
  CHECK(c.check_join("g", bad, t0).error().code == errc::invalid_session_timeout);
  CHECK(c.check_join("", req("a"), t0).error().code == errc::invalid_group_id);
  const auto a = join_and_subscribe(c, "g", r, "t", t0);
  const auto generation = c.describe_group("g").generation;
  // The same group.instance.id while the member lives: a takeover, as join does it.
  CHECK(c.check_join("g", req("a2", "host-a"), t0 + 1).value() == true);
  auto other = req("b");
  other.assignor = assignor_kind::round_robin;
  CHECK(c.check_join("g", other, t0).error().code == errc::inconsistent_group_protocol);
  auto taken = req("x");
  taken.member_id = a;
  CHECK(c.check_join("g", taken, t0).error().code == errc::duplicate_member_id);
  taken.member_id = "no spaces";
  CHECK(c.check_join("g", taken, t0).error().code == errc::invalid_group_id);
  // After its session, the static member would be replaced: a normal join, checked as one.
  CHECK(c.check_join("g", req("a3", "host-a"), t0 + 10'000).value() == false);
  CHECK(c.describe_group("g").generation == generation);
  CHECK(c.describe_group("g").members.size() == 1);
  // Generated ids are fresh and join() accepts one as the member id.
  const auto id = c.new_member_id("g", "rest");
  CHECK(id.starts_with("rest-"));
  CHECK(id != c.new_member_id("g", "rest"));
  auto named = req("rest");
  named.member_id = id;
  auto joined = c.join("g", named, t0);
  REQUIRE(joined.ok());
  CHECK(joined->member_id == id);
}

TEST_CASE("commits outside membership: only for groups without members, replayed after a restart") {
  group_coordinator c(7);
  c.set_topics({{"t", 2}}, t0);
  // An unknown group is created by the commit (Kafka accepts generation -1 commits for Empty groups).
  auto first = c.commit_offsets_standalone("kafka-group", {{tp("t", 0), offset(7), "m"}, {tp("t", 1), offset(10), ""}}, t0);
  REQUIRE(first.ok());
  CHECK(first->records.size() == 2);
  auto committed = c.committed_offsets("kafka-group");
  REQUIRE(committed.ok());
  CHECK(committed->at(tp("t", 0)).committed == offset(7));
  CHECK(committed->at(tp("t", 0)).metadata == "m");
  CHECK(c.describe_group("kafka-group").state == group_state::empty);
  require_invariants(c);
  // Refused, and nothing applied: an empty group id.
  CHECK(c.commit_offsets_standalone("", {{tp("t", 0), offset(1), ""}}, t0).error().code == errc::invalid_group_id);
  CHECK(c.committed_offsets("kafka-group")->at(tp("t", 0)).committed == offset(7));
  // A group whose members are managed here (REST) refuses them by name, as Kafka refuses a
  // commit from outside a non-empty group: UNKNOWN_MEMBER_ID.
  join_and_subscribe(c, "rest-group", req("a"), "t", t0);
  auto mixed = c.commit_offsets_standalone("rest-group", {{tp("t", 0), offset(1), ""}}, t0);
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.error().code == errc::unknown_member_id);
  CHECK(mixed.error().message.find("REST") != std::string::npos);
  // The records bring the offsets back after a restart.
  group_coordinator restarted(8);
  for (const auto& rec : first->records) REQUIRE(restarted.replay(rec, t0 + 100).ok());
  CHECK(restarted.committed_offsets("kafka-group")->at(tp("t", 1)).committed == offset(10));
}

TEST_CASE("reset shift_by: from the committed offset; none or a negative one is refused, as Kafka's --shift-by") {
  group_coordinator c(11);
  c.set_topics({{"t", 2}}, t0);
  REQUIRE(c.commit_offsets_standalone("n", {offset_commit{tp("t", 0), offset(-1), ""}, offset_commit{tp("t", 1), offset(4), ""}},
                                      t0)
              .ok());
  partition_map<partition_offsets> logs{{tp("t", 0), {offset(2), offset(10), std::nullopt}},
                                        {tp("t", 1), {offset(0), offset(9), std::nullopt}}};
  // Partition 0 committed -1 (a Kafka client's "latest"): before, the shift was taken from 0.
  auto negative = c.reset_offsets("n", {reset_kind::shift_by, 1}, logs, dry_run::yes, t0);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().code == errc::invalid_offset);
  CHECK(negative.error().message.find("t-0") != std::string::npos);
  CHECK(negative.error().message.find("committed -1") != std::string::npos);
  partition_map<partition_offsets> one{{tp("t", 1), logs.at(tp("t", 1))}};
  auto shifted = c.reset_offsets("n", {reset_kind::shift_by, 1}, one, dry_run::yes, t0);
  REQUIRE(shifted.ok());
  CHECK(shifted->offsets.at(tp("t", 1)) == offset(5));
  // No committed offset at all.
  auto none = c.reset_offsets("other", {reset_kind::shift_by, 1}, one, dry_run::yes, t0);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == errc::invalid_offset);
}
