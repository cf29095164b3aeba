// Replication control on the active controller (controller/replication_control.h, Kafka's
// ReplicationControlManager): AlterPartition's checks with their Kafka errors (KIP-497, KIP-841),
// the reassignment an ISR change completes, preferred leader elections on request and automatic
// ones (only an in-sync, usable preferred replica leads again), stale leaderships renewed (only an
// in-sync replica takes one over), and a new topic's records.

#include <doctest.h>

#include "cluster_image.h"
#include "ringlog/controller/constants.h"
#include "ringlog/controller/replication_control.h"

namespace ringlog::controller {
namespace {

/// `image` with `records` committed as one entry after it.
std::shared_ptr<const metadata_image> with(const metadata_image& image, const std::vector<protocol::metadata_record>& records) {
  metadata_delta delta(image);
  for (const auto& r : records) REQUIRE(delta.apply(r, image.offset() + 1).ok());
  return std::move(delta).image();
}

/// Brokers 1-3 usable, 4 fenced, 5 in controlled shutdown; topic "t" (id 1): partition 0 on
/// [1, 2, 3, 4, 5] with ISR [1, 2], partition 1 on [1, 2, 4] with ISR [1, 2, 4]; both led by 1.
std::shared_ptr<const metadata_image> isr_cluster() {
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  c.add_fenced_broker(4);
  auto stopping = broker(5);
  stopping.in_controlled_shutdown = true;
  c.records.push_back(stopping);
  c.add_topic("t", {{1, 2, 3, 4, 5}, {1, 2, 4}}, {{1, 2}, {1, 2, 4}});
  return c.image();
}

/// An AlterPartition of partition `partition` in leader epoch 0 and partition epoch 0.
protocol::alter_partition_request_data::partition_data proposal(int32_t partition, std::vector<int32_t> new_isr) {
  protocol::alter_partition_request_data::partition_data p;
  p.partition_index = partition;
  p.new_isr = std::move(new_isr);
  return p;
}

errc refusal(const result<isr_change>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error().code;
}

}  // namespace

TEST_CASE("alter_partition: the leader's new ISR at the current epochs is the change to commit") {
  const auto image = isr_cluster();
  completion_barrier barrier;
  auto r = alter_partition(*image, 1, id_of(1), proposal(0, {1, 2, 3}), barrier);
  REQUIRE(r.ok());
  CHECK(r->topic == "t");
  CHECK(r->change.topic_id == id_of(1));
  CHECK(r->change.partition_id == 0);
  CHECK(r->change.isr == std::vector<int32_t>{1, 2, 3});
  CHECK(r->change.leader == -2);   // unchanged
  CHECK(r->change.ringlog_expected_partition_epoch == 0);
  CHECK_FALSE(r->completes_reassignment);
  // It applies, and the partition epoch moves on.
  const auto after = with(*image, {r->change});
  CHECK(find_partition(*after, id_of(1), 0)->in_sync_replicas == std::vector<int32_t>{1, 2, 3});
  CHECK(find_partition(*after, id_of(1), 0)->partition_epoch == 1);
}

TEST_CASE("alter_partition: a deposed leader or a stale leader epoch is refused with FENCED_LEADER_EPOCH") {
  const auto image = isr_cluster();
  completion_barrier barrier;
  auto stale = proposal(0, {1, 2, 3});
  stale.leader_epoch = 1;   // the partition is in leader epoch 0
  CHECK(refusal(alter_partition(*image, 1, id_of(1), stale, barrier)) == errc::fenced_leader_epoch);
  CHECK(refusal(alter_partition(*image, 2, id_of(1), proposal(0, {1, 2, 3}), barrier)) == errc::fenced_leader_epoch);
}

TEST_CASE("alter_partition: a stale partition epoch is refused with INVALID_UPDATE_VERSION") {
  const auto image = isr_cluster();
  completion_barrier barrier;
  auto stale = proposal(0, {1, 2, 3});
  stale.partition_epoch = 3;
  CHECK(refusal(alter_partition(*image, 1, id_of(1), stale, barrier)) == errc::invalid_update_version);
  // After a committed change the proposal made before it is stale too.
  auto first = alter_partition(*image, 1, id_of(1), proposal(0, {1, 2, 3}), barrier);
  REQUIRE(first.ok());
  const auto after = with(*image, {first->change});
  CHECK(refusal(alter_partition(*after, 1, id_of(1), proposal(0, {1, 3}), barrier)) == errc::invalid_update_version);
}

TEST_CASE("alter_partition: an ISR without the leader or with a broker that is no replica is INVALID_REQUEST") {
  const auto image = isr_cluster();
  completion_barrier barrier;
  CHECK(refusal(alter_partition(*image, 1, id_of(1), proposal(0, {2, 3}), barrier)) == errc::invalid_request);
  CHECK(refusal(alter_partition(*image, 1, id_of(1), proposal(1, {1, 2, 3}), barrier)) == errc::invalid_request);
}

TEST_CASE("alter_partition: a fenced or shutting-down broker may not join the ISR (KIP-841 INELIGIBLE_REPLICA)") {
  const auto image = isr_cluster();
  completion_barrier barrier;
  CHECK(refusal(alter_partition(*image, 1, id_of(1), proposal(0, {1, 2, 4}), barrier)) == errc::ineligible_replica);
  CHECK(refusal(alter_partition(*image, 1, id_of(1), proposal(0, {1, 2, 5}), barrier)) == errc::ineligible_replica);
  // One already in the ISR may stay: only joining is refused (partition 1 drops broker 2, keeps 4).
  auto shrink = alter_partition(*image, 1, id_of(1), proposal(1, {1, 4}), barrier);
  REQUIRE(shrink.ok());
  CHECK(shrink->change.isr == std::vector<int32_t>{1, 4});
}

TEST_CASE("alter_partition: an unknown topic id or partition is UNKNOWN_TOPIC_OR_PARTITION") {
  const auto image = isr_cluster();
  completion_barrier barrier;
  CHECK(refusal(alter_partition(*image, 1, id_of(9), proposal(0, {1, 2}), barrier)) == errc::unknown_topic_or_partition);
  CHECK(refusal(alter_partition(*image, 1, id_of(1), proposal(2, {1, 2}), barrier)) == errc::unknown_topic_or_partition);
  CHECK(refusal(alter_partition(*image, 1, id_of(1), proposal(-1, {1, 2}), barrier)) ==
        errc::unknown_topic_or_partition);
}

TEST_CASE("alter_partition: the ISR change that brings in the last target replica completes the reassignment") {
  // Partition 0 of "r" on [1, 2], led by 1, moves to [2, 3]: the leader is being removed.
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  c.add_topic("r", {{1, 2}});
  const auto before = c.image();
  const auto plan = plan_reassignments(*before, {{"r", 0, std::vector<int32_t>{2, 3}}}, [](int32_t) { return false; });
  REQUIRE(plan.size() == 1);
  REQUIRE(plan[0].change);
  const auto image = with(*before, {*plan[0].change});
  completion_barrier barrier;
  auto partial = proposal(0, {1, 2});
  partial.partition_epoch = 1;
  auto r = alter_partition(*image, 1, id_of(1), partial, barrier);
  REQUIRE(r.ok());
  CHECK_FALSE(r->completes_reassignment);   // 3 is not in sync yet
  auto last = proposal(0, {1, 2, 3});
  last.partition_epoch = 1;
  r = alter_partition(*image, 1, id_of(1), last, barrier);
  REQUIRE(r.ok());
  CHECK(r->completes_reassignment);
  CHECK(r->change.leader == 2);   // step 3a: the first target replica in the ISR leads
  CHECK(r->change.isr == std::vector<int32_t>{1, 2, 3});
}

namespace {

/// Brokers 1-3; topic "t" (id 1): partition 0 on [1, 2] led by 2 (its preferred replica 1 is in
/// sync), partition 1 on [3, 1] led by 1 with ISR [1] (3 out of sync), partition 2 on [2, 3] led
/// by its preferred replica 2.
std::shared_ptr<const metadata_image> election_cluster() {
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  c.add_topic("t", {{1, 2}, {3, 1}, {2, 3}}, {{1, 2}, {1}, {2, 3}});
  for (auto [partition, leader] : {std::pair{0, 2}, std::pair{1, 1}}) {
    protocol::partition_change_record moved;
    moved.topic_id = id_of(1);
    moved.partition_id = partition;
    moved.leader = leader;
    c.records.push_back(moved);
  }
  return c.image();
}

int32_t leader_of(const protocol::metadata_record& r) { return std::get<protocol::partition_change_record>(r).leader; }

}  // namespace

TEST_CASE("elect_preferred_leaders: the preferred replica leads again only when it is in the ISR") {
  const auto image = election_cluster();
  const auto e = elect_preferred_leaders(*image, {{"t", 0}, {"t", 1}, {"t", 2}, {"t", 7}, {"nope", 0}});
  REQUIRE(e.records.size() == 1);
  CHECK(std::get<protocol::partition_change_record>(e.records[0]).partition_id == 0);
  CHECK(leader_of(e.records[0]) == 1);
  REQUIRE(e.outcomes.size() == 5);
  CHECK_FALSE(e.outcomes[0].refused);
  CHECK(e.outcomes[0].leader == 1);
  REQUIRE(e.outcomes[1].refused);
  CHECK(e.outcomes[1].refused->code == errc::preferred_leader_not_available);
  CHECK(e.outcomes[1].refused->message.find("preferred replica 3") != std::string::npos);
  CHECK(e.outcomes[1].leader == 1);   // the current leader stays
  REQUIRE(e.outcomes[2].refused);
  CHECK(e.outcomes[2].refused->code == errc::election_not_needed);
  CHECK(e.outcomes[2].leader == 2);
  REQUIRE(e.outcomes[3].refused);
  CHECK(e.outcomes[3].refused->code == errc::unknown_topic_or_partition);
  CHECK(e.outcomes[3].leader == -1);
  REQUIRE(e.outcomes[4].refused);
  CHECK(e.outcomes[4].refused->code == errc::unknown_topic_or_partition);
}

TEST_CASE("balance_partition_leaders: imbalanced brokers get back the leaderships they may take") {
  const auto image = election_cluster();
  // Brokers 1 and 3 lead none of the partitions they are preferred for (100% > 10%); 3 is out of
  // its partition's ISR, so only 1's leadership comes back.
  const auto records = balance_partition_leaders(*image, 10);
  REQUIRE(records.size() == 1);
  CHECK(std::get<protocol::partition_change_record>(records[0]).partition_id == 0);
  CHECK(leader_of(records[0]) == 1);
  // At 100% nobody is imbalanced (not more than every one of its partitions led elsewhere).
  CHECK(balance_partition_leaders(*image, 100).empty());
}

TEST_CASE("balance_partition_leaders: a broker within leader.imbalance.per.broker.percentage is left alone") {
  // Broker 2 is preferred for 11 partitions of "u" and leads 10 of them (1 of 11 elsewhere: 9%);
  // broker 1 is preferred for the one partition of "v" and does not lead it (100%).
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  c.add_topic("u", std::vector<std::vector<int32_t>>(11, {2, 3}));
  c.add_topic("v", {{1, 3}});
  for (uint8_t topic : {1, 2}) {
    protocol::partition_change_record moved;
    moved.topic_id = id_of(topic);
    moved.partition_id = 0;
    moved.leader = 3;
    c.records.push_back(moved);
  }
  const auto image = c.image();
  const auto records = balance_partition_leaders(*image, 10);
  REQUIRE(records.size() == 1);
  CHECK(std::get<protocol::partition_change_record>(records[0]).topic_id == id_of(2));
  CHECK(leader_of(records[0]) == 1);
  CHECK(balance_partition_leaders(*image, 5).size() == 2);   // 9% > 5%: broker 2 too
}

TEST_CASE("balance_partition_leaders: at most leader_rebalance_changes_max changes at once") {
  cluster c;
  for (int32_t id = 1; id <= 2; ++id) c.add_broker(id);
  const size_t partitions = constants::leader_rebalance_changes_max + 1;
  c.add_topic("w", std::vector<std::vector<int32_t>>(partitions, {1, 2}));
  for (size_t p = 0; p < partitions; ++p) {
    protocol::partition_change_record moved;
    moved.topic_id = id_of(1);
    moved.partition_id = static_cast<int32_t>(p);
    moved.leader = 2;
    c.records.push_back(moved);
  }
  CHECK(balance_partition_leaders(*c.image(), 10).size() == constants::leader_rebalance_changes_max);
}

TEST_CASE("renew_stale_leaderships: a stale leadership moves only to a usable in-sync replica, else is renewed") {
  // Brokers 1-3, 3 fenced. "t": partition 0 on [1, 2, 3] with ISR [1, 3] (2 out of sync, 3 fenced),
  // partition 1 on [1, 2] with ISR [1, 2], partition 2 on [2, 1] led by 2.
  cluster c;
  for (int32_t id = 1; id <= 2; ++id) c.add_broker(id);
  c.add_fenced_broker(3);
  c.add_topic("t", {{1, 2, 3}, {1, 2}, {2, 1}}, {{1, 3}, {1, 2}, {2, 1}});
  const auto image = c.image();
  stale_leadership_map stale{{{"t", 0}, 0}, {{"t", 1}, 0}, {{"t", 2}, 0}};
  const auto records = renew_stale_leaderships(*image, 1, stale);
  REQUIRE(records.size() == 2);
  const auto& p0 = std::get<protocol::partition_change_record>(records[0]);
  CHECK(p0.partition_id == 0);
  CHECK(p0.leader == 1);   // no other usable in-sync replica: renewed (a new leader epoch)
  CHECK_FALSE(p0.isr);
  const auto& p1 = std::get<protocol::partition_change_record>(records[1]);
  CHECK(p1.partition_id == 1);
  CHECK(p1.leader == 2);
  CHECK(p1.isr == std::vector<int32_t>{2});
  // Partition 2 is not led by 1: nothing to repair, forgotten; the others stay until they moved.
  CHECK(stale.size() == 2);
  CHECK_FALSE(stale.contains({"t", 2}));
  const auto after = with(*image, records);
  CHECK(find_partition(*after, id_of(1), 0)->leader_epoch == 1);
  CHECK(renew_stale_leaderships(*after, 1, stale).empty());
  CHECK(stale.empty());
}

TEST_CASE("new_topic_records: a TopicRecord, placed PartitionRecords all in sync, and the ConfigRecords") {
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  const auto image = c.image();
  auto r = new_topic_records(*image, "orders", id_of(7), 4, 2, {{"cleanup.policy", "compact"}});
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1 + 4 + 1);
  CHECK(std::get<protocol::topic_record>(r->front()).name == "orders");
  CHECK(std::get<protocol::topic_record>(r->front()).topic_id == id_of(7));
  for (int32_t p = 0; p < 4; ++p) {
    const auto& part = std::get<protocol::partition_record>((*r)[static_cast<size_t>(1 + p)]);
    CHECK(part.partition_id == p);
    CHECK(part.replicas.size() == 2);
    CHECK(part.isr == part.replicas);
    CHECK(part.leader == part.replicas.front());
  }
  const auto& config = std::get<protocol::config_record>(r->back());
  CHECK(config.resource_name == "orders");
  CHECK(config.name == "cleanup.policy");
  CHECK(config.value == "compact");
  auto too_many = new_topic_records(*image, "orders", id_of(7), 1, 4, {});
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.error().code == errc::invalid_replication_factor);
}

}  // namespace ringlog::controller
