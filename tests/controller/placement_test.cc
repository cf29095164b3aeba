#include <doctest.h>

#include <algorithm>
#include <map>

#include "ringlog/controller/placement.h"
#include "ringlog/controller/metadata_image.h"

using namespace ringlog;
using controller::metadata_delta;
using controller::metadata_image;

namespace {

controller::uuid id_of(uint8_t n) {
  controller::uuid id;
  id.value[15] = n;
  return id;
}

std::shared_ptr<const metadata_image> cluster(std::vector<std::vector<int32_t>> replicas,
                                              std::vector<std::vector<int32_t>> isrs, std::vector<int32_t> leaders,
                                              std::vector<int32_t> fenced = {}) {
  metadata_delta d{metadata_image{}};
  int64_t offset = 0;
  for (int32_t b = 1; b <= 3; ++b) {
    protocol::register_broker_record r;
    r.broker_id = b;
    r.broker_epoch = 10 + b;
    r.fenced = std::find(fenced.begin(), fenced.end(), b) != fenced.end();
    REQUIRE(d.apply(r, offset++).ok());
  }
  protocol::topic_record t;
  t.name = "t";
  t.topic_id = id_of(1);
  REQUIRE(d.apply(t, offset++).ok());
  for (size_t p = 0; p < replicas.size(); ++p) {
    protocol::partition_record r;
    r.partition_id = static_cast<int32_t>(p);
    r.topic_id = id_of(1);
    r.replicas = replicas[p];
    r.isr = isrs[p];
    r.leader = leaders[p];
    REQUIRE(d.apply(r, offset++).ok());
  }
  return std::move(d).image();
}

const protocol::partition_change_record& change_of(const std::vector<protocol::metadata_record>& out, int32_t p) {
  for (const auto& r : out) {
    const auto& c = std::get<protocol::partition_change_record>(r);
    if (c.partition_id == p) return c;
  }
  FAIL("no change for partition " << p);
  static protocol::partition_change_record none;
  return none;
}

}  // namespace

TEST_CASE("a fenced broker leaves every ISR and its leaderships go to the next in-sync replica in replica order") {
  // p0: led by 1, ISR 1,3,2 -> 3 is not first in replica order (2 is), so 2 leads.
  // p1: led by 2, 1 a follower in the ISR -> 1 leaves the ISR, leader unchanged.
  // p2: led by 1, ISR only 1 -> offline (no leader), 1 stays as the last ISR member.
  // p3: 1 not involved -> no change.
  auto image = cluster({{1, 2, 3}, {2, 1, 3}, {1, 2, 3}, {2, 3, 1}}, {{1, 3, 2}, {2, 1, 3}, {1}, {2, 3}}, {1, 2, 1, 2});
  auto out = controller::remove_broker_from_partitions(*image, 1, false);
  REQUIRE(out.size() == 3);
  const auto& p0 = change_of(out, 0);
  CHECK(p0.leader == 2);
  CHECK(*p0.isr == std::vector<int32_t>{3, 2});
  const auto& p1 = change_of(out, 1);
  CHECK(p1.leader == -2);   // unchanged
  CHECK(*p1.isr == std::vector<int32_t>{2, 3});
  const auto& p2 = change_of(out, 2);
  CHECK(p2.leader == -1);
  CHECK_FALSE(p2.isr.has_value());   // 1 stays, the last member
  // Unclean election on: p2 takes a live replica outside the ISR, in an ISR of itself.
  auto unclean = controller::remove_broker_from_partitions(*image, 1, true);
  const auto& u2 = change_of(unclean, 2);
  CHECK(u2.leader == 2);
  CHECK(*u2.isr == std::vector<int32_t>{2});
}

TEST_CASE("a fenced in-sync replica is never chosen as the new leader") {
  auto image = cluster({{1, 2, 3}}, {{1, 2, 3}}, {1}, {2});
  auto out = controller::remove_broker_from_partitions(*image, 1, false);
  REQUIRE(out.size() == 1);
  CHECK(change_of(out, 0).leader == 3);
}

TEST_CASE("a restarted broker never leads in its previous epoch: its leaderships move or are renewed") {
  // p0: led by 1 with 2 in sync -> 2 leads. p1: led by 1 alone -> 1 again (a new epoch: a
  // change of leader). p2: 1 follows 2 -> leaves the ISR until caught up. p3: no leader, 1 the
  // last in-sync replica -> 1 leads. p4: 1 not involved -> nothing.
  auto image = cluster({{1, 2, 3}, {1, 2, 3}, {2, 1, 3}, {1, 2, 3}, {2, 3, 1}},
                       {{1, 2}, {1}, {2, 1}, {1}, {2, 3}}, {1, 1, 2, -1, 2});
  auto out = controller::rejoin_partitions(*image, 1);
  REQUIRE(out.size() == 4);
  CHECK(change_of(out, 0).leader == 2);
  CHECK(*change_of(out, 0).isr == std::vector<int32_t>{2});
  CHECK(change_of(out, 1).leader == 1);   // PartitionChangeRecord with a leader bumps the epoch
  CHECK_FALSE(change_of(out, 1).isr.has_value());
  CHECK(change_of(out, 2).leader == -2);
  CHECK(*change_of(out, 2).isr == std::vector<int32_t>{2});
  CHECK(change_of(out, 3).leader == 1);
}

TEST_CASE("preferred leader election: the first replica leads again when it is usable and in the ISR (KIP-183)") {
  // p0: preferred 1 follows 2, in the ISR -> 1 leads, computed at partition epoch 0.
  // p1: preferred 1 leads -> election_not_needed. p2: preferred 3 is not in the ISR -> not
  // available. p3: preferred 2 is fenced -> not available.
  auto image = cluster({{1, 2, 3}, {1, 2, 3}, {3, 1, 2}, {2, 1, 3}}, {{2, 1, 3}, {1, 2, 3}, {1, 2}, {1, 2, 3}},
                       {2, 1, 1, 1}, {2});
  auto plan = controller::plan_preferred_elections(*image, {{"t", 0}, {"t", 1}, {"t", 2}, {"t", 3}, {"t", 9}, {"u", 0}});
  REQUIRE(plan.size() == 6);
  REQUIRE(plan[0].change.has_value());
  CHECK(plan[0].change->leader == 1);
  CHECK(plan[0].change->ringlog_expected_partition_epoch == 0);
  CHECK(plan[0].preferred == 1);
  CHECK(plan[1].refused == controller::errc::election_not_needed);
  CHECK(plan[2].refused == controller::errc::preferred_leader_not_available);
  CHECK(plan[3].refused == controller::errc::preferred_leader_not_available);
  CHECK(plan[4].refused == controller::errc::unknown_topic_or_partition);
  CHECK(plan[5].refused == controller::errc::unknown_topic_or_partition);
  // Every partition: only the ones that change.
  auto all = controller::plan_preferred_elections(*image, {});
  REQUIRE(all.size() == 1);
  CHECK(all[0].partition == 0);
  // The change applies, and a second one computed at the same partition epoch is refused.
  metadata_delta d{*image};
  REQUIRE(d.apply(*plan[0].change, 100).ok());
  CHECK_FALSE(d.apply(*plan[0].change, 101).ok());
}

TEST_CASE("auto leader rebalance: a broker is imbalanced past leader.imbalance.per.broker.percentage") {
  // Broker 1 prefers p0..p3 and leads only p3: 3 of 4 elsewhere (75 %). Broker 2 prefers p4 and leads it.
  auto image = cluster({{1, 2, 3}, {1, 2, 3}, {1, 3, 2}, {1, 2, 3}, {2, 1, 3}},
                       {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, {2, 2, 3, 1, 2});
  CHECK(controller::imbalanced_brokers(*image, 10) == std::vector<int32_t>{1});
  CHECK(controller::imbalanced_brokers(*image, 75).empty());   // exactly 75 % is not past it
  CHECK(controller::imbalanced_brokers(*image, 74) == std::vector<int32_t>{1});
}

TEST_CASE("a new topic spreads its leaders and replicas over every broker, even on an uneven cluster") {
  // Topic t (id 1): 4 partitions of one replica, all preferring broker 1 - a lopsided cluster.
  auto image = cluster({{1}, {1}, {1}, {1}}, {{1}, {1}, {1}, {1}}, {1, 1, 1, 1});
  // A new topic of 3 partitions: one leader per broker (counted across the cluster alone, brokers
  // 2 and 3 would take every leadership until they caught up with broker 1).
  auto placed = controller::place_replicas(*image, 3, 1, id_of(2));
  REQUIRE(placed.ok());
  std::vector<int32_t> leaders;
  for (const auto& r : *placed) leaders.push_back(r.front());
  std::sort(leaders.begin(), leaders.end());
  CHECK(leaders == std::vector<int32_t>{1, 2, 3});
  // Replication factor 2 over 6 partitions: each broker leads 2 and holds 4 replicas of the topic.
  auto wide = controller::place_replicas(*image, 6, 2, id_of(2));
  REQUIRE(wide.ok());
  std::map<int32_t, int> led, held;
  for (const auto& r : *wide) {
    ++led[r.front()];
    for (int32_t b : r) ++held[b];
    CHECK(r[0] != r[1]);
  }
  CHECK(led == std::map<int32_t, int>{{1, 2}, {2, 2}, {3, 2}});
  CHECK(held == std::map<int32_t, int>{{1, 4}, {2, 4}, {3, 4}});
  // Growing topic t counts its own partitions: the 2 new ones go to brokers 2 and 3.
  auto grown = controller::place_replicas(*image, 2, 1, id_of(1));
  REQUIRE(grown.ok());
  CHECK((*grown)[0] == std::vector<int32_t>{2});
  CHECK((*grown)[1] == std::vector<int32_t>{3});
  // Too many replicas for the brokers there are: refused, naming both numbers.
  auto refused = controller::place_replicas(*image, 1, 4, id_of(2));
  REQUIRE(!refused.ok());
  CHECK(refused.error().message.find("4") != std::string::npos);
  CHECK(refused.error().message.find("(3)") != std::string::npos);
}
