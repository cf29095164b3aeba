// The partition autobalancer's decisions (issue 33, controller/autobalancer.h): modes, which
// brokers are unavailable and since when, which are drained after the timeout, node_add's new
// brokers, continuous mode's periodic balance, and waiting while moves or a decommission run.
// With the planner's unavailable_brokers option: their replicas move off and they take none.

#include <doctest.h>

#include <algorithm>

#include "cluster_image.h"
#include "ringlog/controller/autobalancer.h"
#include "ringlog/controller/constants.h"
#include "ringlog/controller/rebalance_planner.h"

namespace ringlog::controller {
namespace {

constexpr int64_t timeout_ms = 3'000;

/// Brokers 1-3 holding "t" (6 partitions, rf 2 over 1-3) and broker 4, holding nothing.
cluster three_and_a_new_one() {
  cluster c;
  for (int32_t id = 1; id <= 4; ++id) c.add_broker(id);
  std::vector<std::vector<int32_t>> assignments;
  for (int32_t p = 0; p < 6; ++p) assignments.push_back({p % 3 + 1, (p + 1) % 3 + 1});
  c.add_topic("t", assignments);
  return c;
}

autobalancer_inputs inputs_of(autobalancer_mode mode, int64_t now_ms) {
  autobalancer_inputs in;
  in.mode = mode;
  in.now_ms = now_ms;
  in.node_availability_timeout_ms = timeout_ms;
  in.tick_interval_ms = 10'000;
  return in;
}

rebalance_options options_with(std::set<int32_t> unavailable, bool drain_only) {
  rebalance_options o;
  o.min_insync_replicas = [](const std::string&) { return 1; };
  o.unavailable_brokers = std::move(unavailable);
  o.drain_only = drain_only;
  return o;
}

}  // namespace

TEST_CASE("modes: Redpanda's names, anything else refused") {
  CHECK(parse_autobalancer_mode("off") == autobalancer_mode::off);
  CHECK(parse_autobalancer_mode("node_add") == autobalancer_mode::node_add);
  CHECK(parse_autobalancer_mode("continuous") == autobalancer_mode::continuous);
  CHECK_FALSE(parse_autobalancer_mode("Continuous").has_value());
  CHECK_FALSE(parse_autobalancer_mode("").has_value());
  for (auto m : {autobalancer_mode::off, autobalancer_mode::node_add, autobalancer_mode::continuous}) {
    CHECK(parse_autobalancer_mode(to_string(m)) == m);
  }
  CHECK(to_string(autobalance_reason::unavailable) == "unavailable");
}

TEST_CASE("off never moves anything; node_add plans for a broker holding no replica, retried no more than once a second") {
  const auto image = three_and_a_new_one().image();
  CHECK(autobalance_reason::none == decide_autobalance(*image, {}, inputs_of(autobalancer_mode::off, 0)).reason);

  auto in = inputs_of(autobalancer_mode::node_add, 5'000);
  auto d = decide_autobalance(*image, {}, in);
  CHECK(d.reason == autobalance_reason::node_add);
  CHECK(d.new_brokers == std::vector<int32_t>{4});
  in.last_attempt_ms = 5'000 - constants::autobalancer_retry_interval_ms + 1;
  CHECK(decide_autobalance(*image, {}, in).reason == autobalance_reason::none);
  in.last_attempt_ms = 5'000 - constants::autobalancer_retry_interval_ms;
  CHECK(decide_autobalance(*image, {}, in).reason == autobalance_reason::node_add);

  // node_add never balances by the clock, nor drains.
  cluster c = three_and_a_new_one();
  c.add_topic("u", {{4, 1}});
  auto no_new = c.image();
  CHECK(decide_autobalance(*no_new, {}, inputs_of(autobalancer_mode::node_add, 100'000)).reason == autobalance_reason::none);
  c.add_fenced_broker(4);
  const auto since = track_unavailable(*c.image(), {}, 0);
  const auto nothing = decide_autobalance(*c.image(), since, inputs_of(autobalancer_mode::node_add, 100'000));
  CHECK(nothing.reason == autobalance_reason::none);
  CHECK(nothing.unavailable_brokers_draining.empty());
}

TEST_CASE("unavailable brokers: fenced, in controlled shutdown or unregistered; the first time seen is kept") {
  cluster c = three_and_a_new_one();
  c.add_topic("ghost", {{1, 7}});   // broker 7 never registered
  c.add_fenced_broker(2);
  auto image = c.image();
  CHECK(unavailable_brokers(*image) == std::set<int32_t>{2, 7});
  auto since = track_unavailable(*image, {}, 1'000);
  CHECK(since == std::map<int32_t, int64_t>{{2, 1'000}, {7, 1'000}});
  since = track_unavailable(*image, since, 2'000);
  CHECK(since.at(2) == 1'000);   // still the first time

  c.records.push_back(broker(2));   // registered again, unfenced
  since = track_unavailable(*c.image(), since, 3'000);
  CHECK(since == std::map<int32_t, int64_t>{{7, 1'000}});

  // In controlled shutdown (SIGTERM, until it is gone) counts too.
  protocol::broker_registration_change_record stopping;
  stopping.broker_id = 1;
  stopping.broker_epoch = 1;   // the offset of its registration, the first record
  stopping.in_controlled_shutdown = 1;
  c.records.push_back(stopping);
  CHECK(unavailable_brokers(*c.image()).contains(1));

  // A decommissioning broker is its decommission's business.
  c.decommission(3, 1);
  c.add_fenced_broker(3);
  CHECK_FALSE(unavailable_brokers(*c.image()).contains(3));
}

TEST_CASE("continuous: a broker unavailable longer than the timeout is drained; before it, nothing balances") {
  cluster c = three_and_a_new_one();
  c.add_topic("on4", {{4, 1}, {2, 4}});
  c.add_fenced_broker(4);
  const auto image = c.image();
  const auto since = track_unavailable(*image, {}, 10'000);

  auto early = decide_autobalance(*image, since, inputs_of(autobalancer_mode::continuous, 10'000 + timeout_ms));
  CHECK(early.reason == autobalance_reason::none);   // exactly the timeout: not longer
  CHECK(early.unavailable_brokers_draining.empty());
  CHECK(std::string(early.waiting).find("unavailable for less than") != std::string::npos);

  auto late = decide_autobalance(*image, since, inputs_of(autobalancer_mode::continuous, 10'001 + timeout_ms));
  CHECK(late.reason == autobalance_reason::unavailable);
  CHECK(late.unavailable_brokers_draining == std::set<int32_t>{4});

  // The drain plan: every replica of broker 4 moves to 1-3, none to 4; the partitions keep rf 2.
  const auto plan = plan_rebalance(*image, {}, options_with(late.unavailable_brokers_draining, true));
  CHECK(plan.moves.size() == 2);
  for (const auto& m : plan.moves) {
    CHECK(std::find(m.target_replicas.begin(), m.target_replicas.end(), 4) == m.target_replicas.end());
    CHECK(m.target_replicas.size() == 2);
  }
  CHECK(plan.balanced);
  for (const auto& b : plan.brokers) {
    if (b.broker_id == 4) CHECK((b.excluded && b.replicas_after == 0));
  }

  // Drained (it holds nothing): not draining any more, and nothing to do while it stays away.
  cluster drained = three_and_a_new_one();
  drained.add_fenced_broker(4);
  auto after = decide_autobalance(*drained.image(), since, inputs_of(autobalancer_mode::continuous, 10'001 + timeout_ms));
  CHECK(after.unavailable_brokers_draining.empty());
  CHECK(after.reason == autobalance_reason::balance);   // the periodic balance, which moves nothing to 4
  const auto balance = plan_rebalance(*drained.image(), {}, options_with({}, false));
  for (const auto& m : balance.moves) {
    CHECK(std::find(m.target_replicas.begin(), m.target_replicas.end(), 4) == m.target_replicas.end());
  }
}

TEST_CASE("continuous balances every tick interval; nothing starts while partitions move or a broker is decommissioned") {
  cluster c = three_and_a_new_one();
  c.add_topic("u", {{4, 1}});
  auto in = inputs_of(autobalancer_mode::continuous, 50'000);
  CHECK(decide_autobalance(*c.image(), {}, in).reason == autobalance_reason::balance);
  in.last_balance_ms = 45'000;
  CHECK(decide_autobalance(*c.image(), {}, in).reason == autobalance_reason::none);
  in.last_balance_ms = 40'000;
  CHECK(decide_autobalance(*c.image(), {}, in).reason == autobalance_reason::balance);

  cluster moving = c;
  protocol::partition_record p;
  p.topic_id = id_of(2);   // "u"
  p.partition_id = 0;
  p.replicas = {2, 1, 4};
  p.isr = {4, 1};
  p.adding_replicas = {2};
  p.removing_replicas = {4};
  p.leader = 4;
  moving.records.push_back(p);
  auto busy = decide_autobalance(*moving.image(), {}, in);
  CHECK(busy.reason == autobalance_reason::none);
  CHECK(std::string(busy.waiting) == "partitions are being reassigned");

  cluster leaving = three_and_a_new_one();
  leaving.decommission(3, 1);
  auto waiting = decide_autobalance(*leaving.image(), {}, inputs_of(autobalancer_mode::node_add, 0));
  CHECK(waiting.reason == autobalance_reason::none);
  CHECK(std::string(waiting.waiting) == "a broker is being decommissioned");
}

TEST_CASE("the planner's unavailable brokers: an unregistered one is drained; a partition under min.insync stays") {
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  c.add_topic("t", {{1, 7}, {2, 7}}, {{1}, {2}});
  auto options = options_with({7}, true);
  auto plan = plan_rebalance(*c.image(), {}, options);
  REQUIRE(plan.moves.size() == 2);
  for (const auto& m : plan.moves) CHECK(m.removing_replicas() == std::vector<int32_t>{7});
  options.min_insync_replicas = [](const std::string&) { return 2; };
  auto stuck = plan_rebalance(*c.image(), {}, options);
  CHECK(stuck.moves.empty());
  CHECK(stuck.skipped.size() == 2);
  CHECK_FALSE(stuck.balanced);
}

}  // namespace ringlog::controller
