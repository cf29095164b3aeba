// Seeded simulation of a group coordinator (style.md "Tests": TigerBeetle's VOPR in spirit):
// random joins, leaves, expiries, heartbeats, fetches, commits, topic changes and offsets retention
// (KIP-211), with the invariants checked after every step. The seed is printed; RINGLOG_GROUP_SEED=<n> replays it,
// RINGLOG_GROUP_STEPS=<n> changes the length.

#include <doctest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <random>

#include "ringlog/group/group_coordinator.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::group;
using namespace ringlog::group::test;

namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

struct simulation {
  explicit simulation(uint64_t seed) : rng(seed), coordinator(seed) {}

  std::mt19937_64 rng;
  group_coordinator coordinator;
  int64_t now_ms = 1'700'000'000'000;
  topic_map topics{{"a", 3}, {"b", 4}};
  record_list log;
  const std::vector<std::string> groups{"g0", "g1", "g2"};
  int instance_counter = 0;
  int accepted_commits = 0;
  int refused_commits = 0;
  int manual_assignments = 0;
  /// Offsets retention (expire_offsets): short, so groups do expire within a run.
  static constexpr int64_t retention_ms = 30'000;
  std::map<std::string, int64_t> last_seen_with_members;   // group -> last step end it had members
  std::map<std::string, int64_t> last_commit_ms;           // group -> last accepted commit
  int expired_groups = 0;

  uint64_t pick(uint64_t n) { return rng() % n; }
  void keep(const record_list& r) { log.insert(log.end(), r.begin(), r.end()); }
  const std::string& any_group() { return groups[pick(groups.size())]; }

  std::optional<member_description> any_member(const std::string& g) {
    auto d = coordinator.describe_group(g);
    if (d.members.empty()) return std::nullopt;
    return d.members[pick(d.members.size())];
  }

  void join() {
    const auto& g = any_group();
    join_request r;
    r.client_name = "c" + std::to_string(pick(5));
    if (pick(3) == 0) r.group_instance_id = "inst-" + std::to_string(pick(4));  // reuses ids: static rejoins
    r.session_timeout_ms = 6'000 + static_cast<int64_t>(pick(10'000));
    r.rebalance_timeout_ms = 20'000;
    r.auto_offset_reset = static_cast<offset_reset>(pick(3));
    auto j = coordinator.join(g, r, now_ms);
    if (!j.ok()) return;
    keep(j->records);
    // Mostly everyone subscribes to both topics; sometimes to one, or a pattern.
    subscription sub{subscription_kind::topics, {"a", "b"}, "", {}};
    if (pick(4) == 0) sub.topics = {"a"};
    if (pick(6) == 0) sub = subscription{subscription_kind::pattern, {}, "[ab]", {}};
    auto s = coordinator.subscribe(g, j->member_id, sub, now_ms);
    REQUIRE(s.ok());
    keep(s->records);
  }

  /// What the subscribed members of `g` own and are given, by member id.
  std::map<std::string, std::pair<partition_set, partition_set>> subscribed_view(const std::string& g) {
    std::map<std::string, std::pair<partition_set, partition_set>> out;
    for (const auto& m : coordinator.describe_group(g).members) {
      const bool subscribed = m.sub.kind == subscription_kind::topics || m.sub.kind == subscription_kind::pattern;
      if (subscribed) out[m.member_id] = {m.owned, m.target};
    }
    return out;
  }

  /// A member assigns itself one or two partitions (Kafka's assign()): a new member, or one that
  /// assigned before. Whether it is taken or refused (another manual member holds one), no
  /// subscribed member's owned partitions or target change: assign() is outside the group's
  /// membership in Kafka.
  void assign_manually() {
    const auto& g = any_group();
    std::string member_id;
    for (const auto& m : coordinator.describe_group(g).members) {
      if (m.sub.kind == subscription_kind::manual && pick(2) == 0) member_id = m.member_id;
    }
    if (member_id.empty()) {
      join_request r;
      r.client_name = "manual";
      r.session_timeout_ms = 10'000;
      r.rebalance_timeout_ms = 20'000;
      auto j = coordinator.join(g, r, now_ms);
      if (!j.ok()) return;
      keep(j->records);
      member_id = j->member_id;
    }
    partition_set wanted;
    for (uint64_t n = 1 + pick(2); n > 0; --n) {
      const std::string topic = pick(2) ? "a" : "b";
      wanted.insert(tp(topic, static_cast<int32_t>(pick(static_cast<uint64_t>(topics.at(topic))))));
    }
    const auto before = subscribed_view(g);
    auto r = coordinator.assign(g, member_id, wanted, now_ms);
    CHECK(subscribed_view(g) == before);
    if (!r.ok()) {
      CHECK((r.error().code == errc::partition_assigned_elsewhere || r.error().code == errc::unknown_member_id));
      return;
    }
    CHECK(r->assignment.owned == wanted);   // at once, whoever among the subscribed owns them
    ++manual_assignments;
    keep(r->records);
  }

  void leave() {
    const auto& g = any_group();
    if (auto m = any_member(g)) keep(*coordinator.leave(g, m->member_id, now_ms));
  }

  void heartbeat() {
    const auto& g = any_group();
    auto m = any_member(g);
    if (!m) return;
    auto r = coordinator.heartbeat(g, m->member_id, now_ms);
    if (!r.ok()) {  // only a lapsed session (not yet swept by expire()) may refuse a heartbeat
      CHECK(r.error().code == errc::unknown_member_id);
      CHECK(now_ms >= m->last_seen_ms + 6'000);
      return;
    }
    keep(r->records);
  }

  void fetch_and_commit() {
    const auto& g = any_group();
    auto m = any_member(g);
    if (!m) return;
    auto positions = coordinator.positions_for_fetch(g, m->member_id);
    REQUIRE(positions.ok());
    for (const auto& p : *positions) {
      const int64_t start = p.fetch_offset ? p.fetch_offset->value() : 0;
      REQUIRE(coordinator.record_fetched(g, m->member_id, p.partition, offset(start + 1 + pick(5))).ok());
    }
    // Commit either a partition it owns or a random one (maybe owned by someone else).
    topic_partition target = tp(pick(2) ? "a" : "b", static_cast<int32_t>(pick(3)));
    const bool owns = m->owned.contains(target);
    const auto before = coordinator.committed_offsets(g);
    auto r = coordinator.commit_processed(g, m->member_id, std::nullopt, {{target, offset(pick(100)), ""}}, now_ms);
    if (!r.ok() && r.error().code == errc::unknown_member_id) return;  // lapsed session
    CHECK(r.ok() == owns);
    if (r.ok()) {
      ++accepted_commits;
      last_commit_ms[g] = now_ms;
      keep(r->records);
    } else {
      ++refused_commits;
      CHECK(r.error().code == errc::partition_not_owned);
      CHECK(coordinator.committed_offsets(g)->size() == before->size());  // nothing applied
      if (before->contains(target)) CHECK(coordinator.committed_offsets(g)->at(target) == before->at(target));
    }
    if (pick(2) == 0) {
      auto e = coordinator.commit_returned(g, m->member_id, std::nullopt, now_ms);
      REQUIRE(e.ok());  // the commit above refreshed the session
      if (!e->records.empty()) last_commit_ms[g] = now_ms;
      keep(e->records);
    }
  }

  void advance_and_expire() {
    now_ms += static_cast<int64_t>(pick(4'000));
    keep(coordinator.expire(now_ms).records);
    if (pick(2) == 0) expire_offsets();
  }

  /// A group that had members at the end of a step, or an accepted commit, within the retention
  /// never loses offsets; one with members now never does.
  void expire_offsets() {
    std::set<std::string> with_members;
    for (const auto& g : groups) {
      if (!coordinator.describe_group(g).members.empty()) with_members.insert(g);
    }
    auto r = coordinator.expire_offsets(now_ms, retention_ms);
    for (const auto& e : r.groups) {
      CHECK_FALSE(with_members.contains(e.group_id));
      CHECK(now_ms - last_seen_with_members[e.group_id] >= retention_ms);
      CHECK(now_ms - last_commit_ms[e.group_id] >= retention_ms);
      if (e.group_removed) CHECK(coordinator.describe_group(e.group_id).state == group_state::dead);
      ++expired_groups;
    }
    keep(r.records);
  }

  /// After every step: which groups have members now.
  void observe() {
    for (const auto& g : groups) {
      if (!coordinator.describe_group(g).members.empty()) last_seen_with_members[g] = now_ms;
    }
  }

  void grow_topic() {
    auto& count = topics[pick(2) ? "a" : "b"];
    if (count < 8) ++count;
    keep(coordinator.set_topics(topics, now_ms));
  }

  void step() {
    const uint64_t op = pick(100);
    if (op < 12) {
      join();
    } else if (op < 18) {
      leave();
    } else if (op < 60) {
      heartbeat();
    } else if (op < 80) {
      fetch_and_commit();
    } else if (op < 94) {
      advance_and_expire();
    } else if (op < 98) {
      assign_manually();
    } else {
      grow_topic();
    }
  }

  /// Everyone heartbeats until stable; then every partition of the subscribed topics is owned once.
  void settle() {
    for (const auto& g : groups) {
      for (int round = 0; round < 10; ++round) {
        const auto d = coordinator.describe_group(g);
        if (d.state == group_state::stable || d.state == group_state::empty || d.state == group_state::dead) break;
        keep(coordinator.expire(now_ms).records);  // sweep lapsed sessions first
        for (const auto& m : coordinator.describe_group(g).members) {
          keep(coordinator.heartbeat(g, m.member_id, now_ms)->records);
          require_invariants(coordinator);
        }
      }
      const auto d = coordinator.describe_group(g);
      CHECK((d.state == group_state::stable || d.state == group_state::empty || d.state == group_state::dead));
      std::set<std::string> subscribed;
      for (const auto& m : d.members) {
        for (const auto& t : m.sub.topics) subscribed.insert(t);
        if (m.sub.kind == subscription_kind::pattern) subscribed = {"a", "b"};
      }
      partition_map<std::string> own;   // by the subscribed members: manual ones read beside them
      for (const auto& m : d.members) {
        if (m.sub.kind == subscription_kind::manual) continue;
        for (const auto& p : m.owned) own[p] = m.member_id;
      }
      for (const auto& t : subscribed) {
        for (int32_t p = 0; p < topics.at(t); ++p) CHECK(own.contains(tp(t, p)));
      }
    }
  }
};

}  // namespace

TEST_CASE("seeded simulation: invariants after every step, replay rebuilds committed offsets") {
  const uint64_t seed = env_or("RINGLOG_GROUP_SEED", 20'261'129);
  const uint64_t steps = env_or("RINGLOG_GROUP_STEPS", 3'000);
  MESSAGE("group simulation seed " << seed << " (replay with RINGLOG_GROUP_SEED=" << seed << ")");
  simulation sim(seed);
  sim.keep(sim.coordinator.set_topics(sim.topics, sim.now_ms));
  for (uint64_t i = 0; i < steps; ++i) {
    CAPTURE(i);
    sim.step();
    sim.observe();
    require_invariants(sim.coordinator);
    if (i % 500 == 499) sim.settle();
  }
  sim.settle();
  MESSAGE("commits accepted " << sim.accepted_commits << ", refused " << sim.refused_commits << ", manual assignments "
                              << sim.manual_assignments << ", records "
                              << sim.log.size() << ", groups whose offsets expired " << sim.expired_groups);
  CHECK(sim.accepted_commits > 0);
  CHECK(sim.refused_commits > 0);
  CHECK(sim.manual_assignments > 0);

  group_coordinator restarted(seed + 1);
  restarted.set_topics(sim.topics, sim.now_ms);
  for (const auto& r : sim.log) REQUIRE(restarted.replay(r, sim.now_ms).ok());
  require_invariants(restarted);
  for (const auto& g : sim.groups) {
    auto before = sim.coordinator.committed_offsets(g);
    auto after = restarted.committed_offsets(g);
    REQUIRE(before.ok() == after.ok());
    if (before.ok()) CHECK(*before == *after);
    // Static members come back with exactly what they owned.
    for (const auto& m : sim.coordinator.describe_group(g).members) {
      if (!m.group_instance_id) continue;
      bool found = false;
      for (const auto& r : restarted.describe_group(g).members) {
        if (r.member_id != m.member_id) continue;
        found = true;
        CHECK(r.owned == m.owned);
      }
      CHECK(found);
    }
  }
}
