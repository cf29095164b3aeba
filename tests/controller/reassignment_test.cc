// Partition reassignment as the controller plans and completes it (src/broker/reassignment.h).
#include <doctest.h>

#include <algorithm>
#include <set>

#include "ringlog/controller/reassignment.h"
#include "ringlog/controller/metadata_image.h"

using namespace ringlog;
using controller::metadata_delta;
using controller::metadata_image;
using ids = std::vector<int32_t>;

namespace {

controller::uuid topic_id() {
  controller::uuid id;
  id.value[15] = 7;
  return id;
}

/// Brokers 1..4 registered (those in `fenced` fenced), topic "t" with one partition.
std::shared_ptr<const metadata_image> one_partition(ids replicas, ids isr, int32_t leader, ids fenced = {}) {
  metadata_delta d{metadata_image{}};
  int64_t offset = 0;
  for (int32_t b = 1; b <= 4; ++b) {
    protocol::register_broker_record r;
    r.broker_id = b;
    r.broker_epoch = 10 + b;
    r.fenced = std::find(fenced.begin(), fenced.end(), b) != fenced.end();
    REQUIRE(d.apply(r, offset++).ok());
  }
  protocol::topic_record t;
  t.name = "t";
  t.topic_id = topic_id();
  REQUIRE(d.apply(t, offset++).ok());
  protocol::partition_record p;
  p.partition_id = 0;
  p.topic_id = topic_id();
  p.replicas = replicas;
  p.isr = isr;
  p.leader = leader;
  REQUIRE(d.apply(p, offset++).ok());
  return std::move(d).image();
}

/// `image` with `change` applied (REQUIREd to apply).
std::shared_ptr<const metadata_image> applied(const metadata_image& image, const protocol::partition_change_record& change) {
  metadata_delta d{image};
  REQUIRE(d.apply(change, image.offset() + 1).ok());
  return std::move(d).image();
}

const controller::partition_image& part(const metadata_image& image) { return image.find_topic("t")->partitions[0]; }

const controller::metadata_caught_up all_caught_up = [](int32_t) { return true; };
const controller::metadata_caught_up none_caught_up = [](int32_t) { return false; };

controller::reassignment_plan plan_one(const metadata_image& image, std::optional<ids> target) {
  auto plans = controller::plan_reassignments(image, {{"t", 0, std::move(target)}}, all_caught_up);
  REQUIRE(plans.size() == 1);
  return plans[0];
}

/// The leader's AlterPartition adding `joining` to the ISR, as the controller builds it.
protocol::partition_change_record isr_expansion(const metadata_image& image, int32_t joining) {
  const auto& p = part(image);
  protocol::partition_change_record c;
  c.topic_id = topic_id();
  c.partition_id = 0;
  c.isr = p.in_sync_replicas;
  c.isr->push_back(joining);
  c.ringlog_expected_partition_epoch = p.partition_epoch;
  controller::complete_reassignment_if_ready(image, p, c, all_caught_up);
  return c;
}

/// The active controller's tick on partition 0 (no ISR change): step 3 where `caught_up` allows.
std::optional<protocol::partition_change_record> tick(const metadata_image& image,
                                                      const controller::metadata_caught_up& caught_up = all_caught_up) {
  const auto& p = part(image);
  protocol::partition_change_record c;
  c.topic_id = topic_id();
  c.partition_id = 0;
  c.ringlog_expected_partition_epoch = p.partition_epoch;
  if (!controller::complete_reassignment_if_ready(image, p, c, caught_up)) return std::nullopt;
  return c;
}

}  // namespace

TEST_CASE("a reassignment adds the target replicas, completes when they are in sync, and moves a removed leader") {
  auto image = one_partition({1, 2, 3}, {1, 2, 3}, 1);
  // Move 1 -> 4: replicas become target then removing; 4 adding, 1 removing; ISR and leader stay.
  auto start = plan_one(*image, ids{4, 2, 3});
  REQUIRE_FALSE(start.refused);
  REQUIRE(start.change);
  CHECK(start.change->ringlog_expected_partition_epoch == 0);
  CHECK(start.change->leader == -2);
  image = applied(*image, *start.change);
  CHECK(part(*image).replicas == ids{4, 2, 3, 1});
  CHECK(part(*image).adding_replicas == ids{4});
  CHECK(part(*image).removing_replicas == ids{1});
  CHECK(part(*image).in_sync_replicas == ids{1, 2, 3});
  CHECK(part(*image).leader == 1);
  CHECK(controller::target_replicas(part(*image)) == ids{4, 2, 3});
  CHECK(controller::original_replicas(part(*image)) == ids{2, 3, 1});
  const int32_t leader_epoch = part(*image).leader_epoch;

  // An ISR change that does not bring every target replica in does not complete it.
  auto shrink = protocol::partition_change_record{};
  shrink.topic_id = topic_id();
  shrink.isr = ids{1, 2};
  CHECK_FALSE(controller::complete_reassignment_if_ready(*image, part(*image), shrink, all_caught_up));
  CHECK_FALSE(shrink.replicas.has_value());

  // 4 catches up: the leader's ISR expansion hands the leadership over in the same record (step
  // 3a): the leader (1) is being removed, so the first in-sync target replica (4) leads in a new
  // epoch while 1 stays a replica in the ISR (4's high watermark waits for 1 as its follower).
  image = applied(*image, isr_expansion(*image, 4));
  CHECK(part(*image).leader == 4);
  CHECK(part(*image).leader_epoch == leader_epoch + 1);
  CHECK(part(*image).replicas == ids{4, 2, 3, 1});
  CHECK(part(*image).in_sync_replicas == ids{1, 2, 3, 4});
  CHECK(part(*image).reassigning());

  // Step 3b waits until the removed replica (1) has applied the leader change.
  CHECK_FALSE(tick(*image, none_caught_up));
  CHECK_FALSE(tick(*image, [](int32_t id) { return id != 1; }));
  auto done = tick(*image);
  REQUIRE(done);
  CHECK(done->leader == -2);   // no second leader change
  image = applied(*image, *done);
  CHECK(part(*image).replicas == ids{4, 2, 3});
  CHECK(part(*image).in_sync_replicas == ids{2, 3, 4});
  CHECK(part(*image).adding_replicas.empty());
  CHECK(part(*image).removing_replicas.empty());
  CHECK(part(*image).leader == 4);
  CHECK(part(*image).leader_epoch == leader_epoch + 1);
  CHECK_FALSE(part(*image).reassigning());
  CHECK_FALSE(tick(*image));   // nothing more to do
}

TEST_CASE("completion barrier: a removing replica counts as caught up once its heartbeat reports the offset, or fenced") {
  auto image = one_partition({1, 2, 3}, {1, 2, 3, 4}, 2);
  // 4 in sync already; 1 removing (the start never knows a removing replica caught up)
  image = applied(*image, *controller::plan_reassignments(*image, {{"t", 0, ids{2, 3, 4}}}, none_caught_up)[0].change);
  REQUIRE(part(*image).removing_replicas == ids{1});
  controller::completion_barrier barrier;
  // First seen ready at the image's offset: broker 1 (epoch 11) has reported nothing yet.
  CHECK_FALSE(barrier.rule(*image, "t", 0, part(*image))(1));
  barrier.heard(1, 11, image->offset() - 1);
  CHECK_FALSE(barrier.rule(*image, "t", 0, part(*image))(1));
  barrier.heard(1, 99, image->offset());   // another incarnation's report does not count
  CHECK_FALSE(barrier.rule(*image, "t", 0, part(*image))(1));
  barrier.heard(1, 11, image->offset());
  CHECK(barrier.rule(*image, "t", 0, part(*image))(1));
  CHECK(barrier.rule(*image, "t", 0, part(*image))(2));   // not removing: no wait
  // The wait is the offset at which the partition was first seen at its epoch, not a moving target.
  metadata_delta d{*image};
  protocol::register_broker_record five;
  five.broker_id = 5;
  five.broker_epoch = 15;
  REQUIRE(d.apply(five, image->offset() + 1).ok());
  auto later = std::move(d).image();
  CHECK(barrier.rule(*later, "t", 0, part(*later))(1));
  auto fenced = one_partition({1, 2, 3}, {1, 2, 3, 4}, 2, {1});
  fenced = applied(*fenced, *controller::plan_reassignments(*fenced, {{"t", 0, ids{2, 3, 4}}}, none_caught_up)[0].change);
  controller::completion_barrier fresh;
  CHECK(fresh.rule(*fenced, "t", 0, part(*fenced))(1));   // fenced: its leadership lease has lapsed
}

TEST_CASE("a reassignment whose target is already in sync hands over and completes at once; the same target again is nothing to do") {
  auto image = one_partition({1, 2, 3}, {1, 2, 3}, 2);
  auto plan = plan_one(*image, ids{1, 3});
  REQUIRE(plan.change);
  image = applied(*image, *plan.change);
  CHECK(part(*image).leader == 1);   // 2 is being removed: the first in-sync target replica leads
  CHECK(part(*image).replicas == ids{1, 3, 2});
  image = applied(*image, *tick(*image));
  CHECK(part(*image).replicas == ids{1, 3});
  CHECK(part(*image).in_sync_replicas == ids{1, 3});
  CHECK(part(*image).leader == 1);
  CHECK_FALSE(part(*image).reassigning());
  auto again = plan_one(*image, ids{1, 3});
  CHECK_FALSE(again.refused);
  CHECK_FALSE(again.change);
}

TEST_CASE("a removed leader keeps leading until a target replica can take over") {
  // 4 is fenced: it may be placed, but the move cannot complete while only it could lead.
  auto image = one_partition({1}, {1}, 1, {4});
  auto plan = plan_one(*image, ids{4});
  REQUIRE(plan.change);
  image = applied(*image, *plan.change);
  auto c = isr_expansion(*image, 4);
  CHECK_FALSE(c.replicas.has_value());   // not completed: 4 is not usable to lead
  CHECK(c.leader == -2);
}

TEST_CASE("a cancel puts the original replicas back; a cancel without a reassignment is refused") {
  auto image = one_partition({1, 2, 3}, {1, 2, 3}, 1);
  auto cancel_none = plan_one(*image, std::nullopt);
  REQUIRE(cancel_none.refused);
  CHECK(cancel_none.refused->code == controller::errc::no_reassignment_in_progress);
  image = applied(*image, *plan_one(*image, ids{4, 2, 3}).change);
  image = applied(*image, isr_expansion(*image, 4));   // 4 leads
  image = applied(*image, *tick(*image));              // completes
  image = applied(*image, *plan_one(*image, ids{4, 1, 2}).change);   // 1 adding again, 3 removing
  CHECK(part(*image).adding_replicas == ids{1});
  auto cancel = plan_one(*image, std::nullopt);
  REQUIRE(cancel.change);
  image = applied(*image, *cancel.change);
  CHECK(part(*image).replicas == ids{4, 2, 3});
  CHECK_FALSE(part(*image).reassigning());
  CHECK(part(*image).leader == 4);
}

TEST_CASE("a cancel or a new target after the leadership moved to an adding replica hands it back before removing it") {
  auto moved_to_4 = [] {
    auto image = one_partition({1, 2, 3}, {1, 2, 3}, 1);
    image = applied(*image, *plan_one(*image, ids{4, 2, 3}).change);   // 4 adding, 1 removing
    image = applied(*image, isr_expansion(*image, 4));                  // 3a: 4 leads
    REQUIRE(part(*image).leader == 4);
    return image;
  };
  for (const std::optional<ids>& target : {std::optional<ids>{}, std::optional<ids>{ids{1, 2, 3}}}) {
    auto image = moved_to_4();
    const int32_t epoch = part(*image).leader_epoch;
    auto plan = controller::plan_reassignments(*image, {{"t", 0, target}}, none_caught_up)[0];
    REQUIRE_FALSE(plan.refused);
    REQUIRE(plan.change);
    image = applied(*image, *plan.change);
    // 4 stays a replica, removing; an original in-sync replica leads again in a new epoch.
    CHECK(part(*image).leader != 4);
    CHECK(part(*image).leader_epoch == epoch + 1);
    CHECK(part(*image).removing_replicas == ids{4});
    CHECK(std::find(part(*image).replicas.begin(), part(*image).replicas.end(), 4) != part(*image).replicas.end());
    // 4 leaves once it has applied the hand-over (the barrier), never in the same record.
    CHECK_FALSE(tick(*image, none_caught_up));
    image = applied(*image, *tick(*image));
    CHECK_FALSE(part(*image).reassigning());
    CHECK(std::set<int32_t>(part(*image).replicas.begin(), part(*image).replicas.end()) == std::set<int32_t>{1, 2, 3});
  }
}

TEST_CASE("bad targets are refused naming the partition and what is wrong") {
  auto image = one_partition({1, 2, 3}, {1, 2, 3}, 1);
  auto refused = [&](std::optional<ids> target) {
    auto p = plan_one(*image, std::move(target));
    REQUIRE(p.refused);
    CHECK_FALSE(p.change);
    CHECK(p.refused->message.find("partition 0 of topic 't'") != std::string::npos);
    return p.refused->code;
  };
  CHECK(refused(ids{}) == controller::errc::invalid_replica_assignment);
  CHECK(refused(ids{1, 1}) == controller::errc::invalid_replica_assignment);
  CHECK(refused(ids{1, 9}) == controller::errc::invalid_replica_assignment);
  auto unknown = controller::plan_reassignments(*image, {{"t", 5, ids{1}}, {"nope", 0, ids{1}}}, all_caught_up);
  REQUIRE(unknown.size() == 2);
  CHECK(unknown[0].refused->code == controller::errc::unknown_topic_or_partition);
  CHECK(unknown[1].refused->code == controller::errc::unknown_topic_or_partition);
  auto twice = controller::plan_reassignments(*image, {{"t", 0, ids{1, 2, 4}}, {"t", 0, ids{1, 2}}}, all_caught_up);
  CHECK(twice[0].change);
  REQUIRE(twice[1].refused);
  CHECK(twice[1].refused->code == controller::errc::invalid_replica_assignment);
}

TEST_CASE("a stale reassignment change is refused where it is applied") {
  auto image = one_partition({1, 2, 3}, {1, 2, 3}, 1);
  auto plan = plan_one(*image, ids{4, 2, 3});
  image = applied(*image, isr_expansion(*image, 3));   // any change bumps the partition epoch
  metadata_delta d{*image};
  CHECK_FALSE(d.apply(*plan.change, image->offset() + 1).ok());
}

TEST_CASE("an ongoing reassignment survives a snapshot of the image") {
  auto image = one_partition({1, 2, 3}, {1, 2, 3}, 1);
  image = applied(*image, *plan_one(*image, ids{4, 2, 3}).change);
  auto restored = controller::decode_snapshot(controller::encode_snapshot(*image), image->offset());
  REQUIRE(restored.ok());
  CHECK(part(*restored.value()).adding_replicas == ids{4});
  CHECK(part(*restored.value()).removing_replicas == ids{1});
  CHECK(*restored.value() == *image);
}
