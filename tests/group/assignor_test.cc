#include <doctest.h>

#include "ringlog/group/assignor.h"
#include "test_util.h"

using namespace ringlog::group;
using ringlog::group::test::tp;

namespace {
partition_set two_topics_three_partitions() {
  partition_set s;
  for (const char* t : {"t0", "t1"}) {
    for (int p = 0; p < 3; ++p) s.insert(tp(t, p));
  }
  return s;
}
std::vector<assignor_member> c0_c1() {
  return {assignor_member{"C0", std::nullopt, {"t0", "t1"}, {}}, assignor_member{"C1", std::nullopt, {"t0", "t1"}, {}}};
}
}  // namespace

TEST_CASE("range assigns Kafka's classic example") {
  // Kafka RangeAssignor javadoc: C0: [t0p0, t0p1, t1p0, t1p1], C1: [t0p2, t1p2]
  const auto a = assign_range(c0_c1(), two_topics_three_partitions());
  CHECK(a.at("C0") == partition_set{tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)});
  CHECK(a.at("C1") == partition_set{tp("t0", 2), tp("t1", 2)});
}

TEST_CASE("round robin assigns Kafka's classic example") {
  // Kafka RoundRobinAssignor javadoc: C0: [t0p0, t0p2, t1p1], C1: [t0p1, t1p0, t1p2]
  const auto a = assign_round_robin(c0_c1(), two_topics_three_partitions());
  CHECK(a.at("C0") == partition_set{tp("t0", 0), tp("t0", 2), tp("t1", 1)});
  CHECK(a.at("C1") == partition_set{tp("t0", 1), tp("t1", 0), tp("t1", 2)});
}

TEST_CASE("round robin skips members not subscribed to a topic") {
  std::vector<assignor_member> m{{"A", std::nullopt, {"t0"}, {}}, {"B", std::nullopt, {"t0", "t1"}, {}}};
  const auto a = assign_round_robin(m, two_topics_three_partitions());
  CHECK(a.at("A") == partition_set{tp("t0", 0), tp("t0", 2)});
  CHECK(a.at("B") == partition_set{tp("t0", 1), tp("t1", 0), tp("t1", 1), tp("t1", 2)});
}

TEST_CASE("members are ordered by group.instance.id when present") {
  std::vector<assignor_member> m{{"zzz", std::string("a-instance"), {"t0"}, {}}, {"aaa", std::string("b-instance"), {"t0"}, {}}};
  partition_set s{tp("t0", 0), tp("t0", 1)};
  const auto a = assign_range(m, s);
  CHECK(a.at("zzz") == partition_set{tp("t0", 0)});
  CHECK(a.at("aaa") == partition_set{tp("t0", 1)});
}

TEST_CASE("cooperative sticky keeps what members had and balances") {
  partition_set six;
  for (int p = 0; p < 6; ++p) six.insert(tp("t", p));
  std::vector<assignor_member> m{{"A", std::nullopt, {"t"}, {tp("t", 0), tp("t", 1), tp("t", 2)}},
                                 {"B", std::nullopt, {"t"}, {tp("t", 3), tp("t", 4), tp("t", 5)}},
                                 {"C", std::nullopt, {"t"}, {}}};
  const auto a = assign_cooperative_sticky(m, six);
  CHECK(a.at("A").size() == 2);
  CHECK(a.at("B").size() == 2);
  CHECK(a.at("C").size() == 2);
  // Stickiness: A and B each gave up exactly one partition.
  for (const auto& p : a.at("A")) CHECK(m[0].current.contains(p));
  for (const auto& p : a.at("B")) CHECK(m[1].current.contains(p));
  // Same input, same output.
  CHECK(assign_cooperative_sticky(m, six) == a);
}

TEST_CASE("every assignor: each available subscribed partition exactly once, only to subscribers") {
  partition_set s = two_topics_three_partitions();
  s.insert(tp("t2", 0));  // nobody subscribes: stays unassigned
  std::vector<assignor_member> m{{"A", std::nullopt, {"t0"}, {}}, {"B", std::nullopt, {"t1"}, {tp("t0", 1)}},
                                 {"C", std::nullopt, {"t0", "t1"}, {}}};
  for (auto kind : {assignor_kind::range, assignor_kind::round_robin, assignor_kind::cooperative_sticky}) {
    CAPTURE(to_string(kind));
    const auto a = run_assignor(kind, m, s);
    partition_map<int> count;
    for (const auto& mem : m) {
      for (const auto& p : a.at(mem.member_id)) {
        ++count[p];
        CHECK(mem.topics.contains(p.topic));
      }
    }
    CHECK(count.size() == 6);
    for (const auto& [p, n] : count) CHECK(n == 1);
  }
}
