// The broker's group service (groups.h) on the deterministic runtime: REST v2 commit semantics,
// replay after a restart, session expiry driven by the simulated clock, the internal topic.

#include <doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>

#include "ringlog/broker/broker.h"
#include "ringlog/io/sim_file_system.h"
#include "call.h"
#include "test_runtime.h"

using namespace ringlog;
using namespace ringlog::broker;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;

using test::call;

struct groups_fixture {
  io::sim_file_system fs;
  base::manual_clock clock{t0};
  std::unique_ptr<test::test_runtime> runtime = std::make_unique<test::test_runtime>(3, clock);
  std::unique_ptr<broker::broker> b;
  /// What open() starts the broker with; a test may change it first.
  broker_config config = [] {
    broker_config c;
    c.log_dir = "/data";
    c.offsets_topic_num_partitions = 4;
    return c;
  }();

  void open() {
    auto opened = open_broker(config, {fs, clock, *runtime});
    REQUIRE_MESSAGE(opened.ok(), (opened.ok() ? "" : opened.error().message));
    b = std::move(opened.value());
  }
  void stop() {
    std::promise<void> p;
    b->shutdown([&p] { p.set_value(); });
    p.get_future().wait();
    b.reset();
  }
  void create(const std::string& name, int32_t partitions) {
    auto r = call<result<topic_description>>(
        [&](auto done) { b->admin().create_topic({name, partitions, std::nullopt, {}, false}, std::move(done)); });
    REQUIRE(r.ok());
    runtime->wait_idle();  // set_topics reached every coordinator
  }
  void produce(const std::string& topic, int32_t partition, int count) {
    produce_request req{topic, {}, acks_mode::all, 1000};
    for (int i = 0; i < count; ++i) {
      produce_record r;
      r.partition = model::partition_id{partition};
      r.value = model::to_bytes("v" + std::to_string(i));
      req.records.push_back(std::move(r));
    }
    auto r = call<result<produce_response>>([&](auto done) { b->produce(std::move(req), std::move(done)); });
    REQUIRE(r.ok());
  }
  std::string join(const std::string& group, group::offset_reset reset = group::offset_reset::earliest,
                   int64_t session_timeout_ms = 300'000) {
    consumer_instance_config cfg;
    cfg.group_id = group;
    cfg.auto_offset_reset = reset;
    cfg.session_timeout_ms = session_timeout_ms;
    auto r = call<result<consumer_instance>>([&](auto done) { b->groups().create_consumer(cfg, std::move(done)); });
    REQUIRE(r.ok());
    return r->instance_id;
  }
  /// A member of `group` subscribed to `topic` that has polled once (read what was there).
  std::string member_that_read(const std::string& group, const std::string& topic) {
    auto id = join(group);
    REQUIRE(subscribe(group, id, topic).ok());
    REQUIRE(poll(group, id).ok());
    return id;
  }
  result<void> subscribe(const std::string& group, const std::string& id, const std::string& topic) {
    group::subscription sub;
    sub.kind = group::subscription_kind::topics;
    sub.topics = {topic};
    return call<result<void>>([&](auto done) { b->groups().subscribe(group, id, sub, std::move(done)); });
  }
  result<std::vector<consumed_record>> poll(const std::string& group, const std::string& id, int64_t max_bytes = 1 << 20) {
    return call<result<std::vector<consumed_record>>>(
        [&](auto done) { b->groups().poll(group, id, poll_request{0, max_bytes, {}, {}}, std::move(done)); });
  }
  result<group::partition_map<group::committed_offset>> commit(const std::string& group, const std::string& id,
                                                              std::optional<std::vector<group::processed_offset>> o) {
    return call<result<group::partition_map<group::committed_offset>>>(
        [&](auto done) { b->groups().commit(group, id, std::move(o), std::move(done)); });
  }
  result<group::partition_map<group::committed_offset>> committed(const std::string& group, const std::string& id) {
    return call<result<group::partition_map<group::committed_offset>>>(
        [&](auto done) { b->groups().committed(group, id, {}, std::move(done)); });
  }
};

std::vector<int64_t> offsets_of(const std::vector<consumed_record>& records) {
  std::vector<int64_t> out;
  for (const auto& r : records) out.push_back(r.record.record_offset.value());
  return out;
}

const model::topic_partition orders0{"orders", model::partition_id{0}};

}  // namespace

TEST_CASE_FIXTURE(groups_fixture, "REST v2 commit: offset N is stored as N + 1 and a new member starts there") {
  open();
  create("orders", 1);
  produce("orders", 0, 10);
  auto first = join("g");
  REQUIRE(subscribe("g", first, "orders").ok());
  auto got = poll("g", first);
  REQUIRE(got.ok());
  CHECK(offsets_of(*got) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto stored = commit("g", first, std::vector<group::processed_offset>{{orders0, model::offset{9}, ""}});
  REQUIRE(stored.ok());
  CHECK(stored->at(orders0).committed == model::offset{10});
  REQUIRE(call<result<void>>([&](auto done) { b->groups().delete_consumer("g", first, std::move(done)); }).ok());

  produce("orders", 0, 3);
  auto second = join("g");
  REQUIRE(subscribe("g", second, "orders").ok());
  got = poll("g", second);
  REQUIRE(got.ok());
  CHECK(offsets_of(*got) == std::vector<int64_t>{10, 11, 12});
  auto all = commit("g", second, std::nullopt);  // empty body: everything returned
  REQUIRE(all.ok());
  CHECK(all->at(orders0).committed == model::offset{13});
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "max_bytes smaller than one record still returns one record") {
  open();
  create("orders", 1);
  produce("orders", 0, 3);
  auto id = join("g");
  REQUIRE(subscribe("g", id, "orders").ok());
  for (int64_t expected = 0; expected < 3; ++expected) {
    auto got = poll("g", id, 1);
    REQUIRE(got.ok());
    CHECK(offsets_of(*got) == std::vector<int64_t>{expected});
  }
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "a waiting poll whose requester is gone takes nothing: the next poll returns the records") {
  // A broker passed the poll on and died while it waited (poll_request::requester_connected).
  open();
  create("orders", 1);
  auto id = join("g");
  REQUIRE(subscribe("g", id, "orders").ok());
  REQUIRE(poll("g", id).ok());   // assigned, nothing yet
  auto connected = std::make_shared<std::atomic<bool>>(true);
  poll_request waiting{5'000, 1 << 20, {}, [connected] { return connected->load(); }};
  std::promise<result<std::vector<consumed_record>>> answer;
  b->groups().poll("g", id, waiting, [&answer](result<std::vector<consumed_record>> r) { answer.set_value(std::move(r)); });
  runtime->wait_idle();   // the poll waits for appends
  connected->store(false);
  produce("orders", 0, 3);
  runtime->wait_idle();
  runtime->advance_ms(1);   // the next round of the wait is a timer of the simulated clock
  auto orphaned = answer.get_future().get();
  CHECK_FALSE(orphaned.ok());
  auto got = poll("g", id);
  REQUIRE(got.ok());
  CHECK(offsets_of(*got) == std::vector<int64_t>{0, 1, 2});
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "committed offsets and instances come back after a restart; a dynamic member rejoins") {
  open();
  create("orders", 2);
  produce("orders", 0, 5);
  consumer_instance_config cfg;
  cfg.group_id = "g";
  cfg.name = "worker";
  cfg.format = consumer_format::json;
  cfg.auto_commit_enable = true;
  cfg.request_timeout_ms = 2'500;
  cfg.auto_offset_reset = group::offset_reset::earliest;
  REQUIRE(call<result<consumer_instance>>([&](auto done) { b->groups().create_consumer(cfg, std::move(done)); }).ok());
  const std::string id = "worker";
  REQUIRE(subscribe("g", id, "orders").ok());
  REQUIRE(poll("g", id).ok());   // auto-commit: offsets 0..4 of partition 0 are committed
  REQUIRE(commit("g", id, std::vector<group::processed_offset>{{orders0, model::offset{2}, "meta"}}).ok());
  stop();
  open();
  // The instance's settings survive with its lease (issue 14 item 28).
  auto described = call<result<consumer_instance>>(
      [&](auto done) { b->groups().describe_consumer("g", id, std::move(done)); });
  REQUIRE(described.ok());
  CHECK(described->format == consumer_format::json);
  CHECK(described->auto_commit_enable);
  CHECK(described->request_timeout_ms == 2'500);
  auto c = committed("g", id);
  REQUIRE(c.ok());
  CHECK(c->at(orders0).committed == model::offset{3});
  CHECK(c->at(orders0).metadata == "meta");
  // Its membership did not survive (a dynamic member): its first poll joins again with its subscription.
  auto got = poll("g", id);
  REQUIRE(got.ok());
  CHECK(offsets_of(*got) == std::vector<int64_t>{3, 4});
  auto sub = call<result<group::subscription>>([&](auto done) { b->groups().subscription("g", id, std::move(done)); });
  REQUIRE(sub.ok());
  CHECK(sub->topics == std::vector<std::string>{"orders"});
  // A deleted instance stays deleted across a restart.
  REQUIRE(call<result<void>>([&](auto done) { b->groups().delete_consumer("g", id, std::move(done)); }).ok());
  stop();
  open();
  CHECK(poll("g", id).error().code == errc::unknown_member_id);
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "an instance joins its group on subscribe, not when created (no generation bump)") {
  open();
  create("orders", 2);
  produce("orders", 0, 3);
  auto describe = [&] {
    auto d = call<result<group_details>>([&](auto done) { b->groups().describe_group("g", std::move(done)); });
    REQUIRE(d.ok());
    return d->description;
  };
  auto first = join("g");
  REQUIRE(subscribe("g", first, "orders").ok());
  REQUIRE(poll("g", first).ok());
  const auto generation = describe().generation;
  REQUIRE(describe().members.size() == 1);
  // Created, not subscribed: not a member, nothing moves; it owns and reads nothing.
  auto idle = join("g");
  CHECK(describe().generation == generation);
  CHECK(describe().members.size() == 1);
  auto owned = call<result<group::partition_set>>(
      [&](auto done) { b->groups().assignments("g", idle, std::move(done)); });
  REQUIRE(owned.ok());
  CHECK(owned->empty());
  auto nothing = poll("g", idle);
  REQUIRE(nothing.ok());
  CHECK(nothing->empty());
  CHECK(commit("g", idle, std::nullopt).value().empty());
  CHECK(commit("g", idle, std::vector<group::processed_offset>{{orders0, model::offset{0}, ""}}).error().code ==
        errc::partition_not_owned);
  CHECK(describe().generation == generation);
  // A duplicate name is refused while it waits, as for a member.
  consumer_instance_config dup;
  dup.group_id = "g";
  dup.name = idle;
  CHECK(call<result<consumer_instance>>([&](auto done) { b->groups().create_consumer(dup, std::move(done)); })
            .error()
            .code == errc::duplicate_consumer_instance);
  // Subscribing joins: now the group rebalances.
  REQUIRE(subscribe("g", idle, "orders").ok());
  CHECK(describe().members.size() == 2);
  CHECK(describe().generation > generation);
  // A refused subscription of a waiting instance leaves nothing behind.
  auto waiting = join("g");
  group::subscription bad;
  bad.kind = group::subscription_kind::pattern;
  bad.pattern = "((a|aa)*)*c";
  CHECK(call<result<void>>([&](auto done) { b->groups().subscribe("g", waiting, bad, std::move(done)); })
            .error()
            .code == errc::invalid_regular_expression);
  CHECK(describe().members.size() == 2);
  CHECK(call<result<group::subscription>>([&](auto done) { b->groups().subscription("g", waiting, std::move(done)); })
            ->kind == group::subscription_kind::none);
  // A waiting instance's lease lapses like a member's session.
  auto lapsing = join("g", group::offset_reset::earliest, 6'000);
  for (int i = 0; i < 8; ++i) {
    runtime->advance_ms(1'000);
    runtime->wait_idle();
  }
  CHECK(poll("g", lapsing).error().code == errc::unknown_member_id);
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "a member past its session timeout is swept by the timer and its partitions move") {
  open();
  create("orders", 2);
  auto quiet = join("g", group::offset_reset::earliest, 6'000);
  auto busy = join("g", group::offset_reset::earliest, 60'000);
  REQUIRE(subscribe("g", quiet, "orders").ok());
  REQUIRE(subscribe("g", busy, "orders").ok());
  REQUIRE(poll("g", quiet).ok());
  REQUIRE(poll("g", busy).ok());
  for (int i = 0; i < 8; ++i) {
    runtime->advance_ms(1'000);
    runtime->wait_idle();
    REQUIRE(poll("g", busy).ok());
  }
  auto details = call<result<group_details>>([&](auto done) { b->groups().describe_group("g", std::move(done)); });
  REQUIRE(details.ok());
  REQUIRE(details->description.members.size() == 1);
  CHECK(details->description.members[0].member_id == busy);
  CHECK(details->description.members[0].owned.size() == 2);
  CHECK(poll("g", quiet).error().code == errc::unknown_member_id);
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "__consumer_offsets is internal, and a deleted topic takes its committed offsets") {
  open();
  auto listed = b->admin().list_topics(false);
  CHECK(std::find(listed.begin(), listed.end(), consumer_offsets_topic) == listed.end());
  listed = b->admin().list_topics(true);
  CHECK(std::find(listed.begin(), listed.end(), consumer_offsets_topic) != listed.end());
  produce_request req{consumer_offsets_topic, {produce_record{}}, acks_mode::all, 1000};
  auto refused = call<result<produce_response>>([&](auto done) { b->produce(std::move(req), std::move(done)); });
  CHECK(refused.error().code == errc::invalid_topic_exception);

  create("orders", 1);
  produce("orders", 0, 2);
  auto id = member_that_read("g", "orders");
  REQUIRE(commit("g", id, std::nullopt).ok());
  CHECK(committed("g", id)->size() == 1);
  REQUIRE(call<result<void>>([&](auto done) { b->admin().delete_topic("orders", std::move(done)); }).ok());
  runtime->wait_idle();
  CHECK(committed("g", id)->empty());
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "lag history: one total-lag sample per interval, bounded, gone with the group") {
  open();
  create("orders", 1);
  produce("orders", 0, 10);
  auto id = member_that_read("g", "orders");
  auto history = [&](const std::string& group) {
    return call<result<std::vector<lag_sample>>>([&](auto done) { b->groups().lag_history(group, std::move(done)); });
  };
  auto tick = [&] {
    runtime->advance_ms(lag_history_interval_ms);
    runtime->wait_idle();
  };
  REQUIRE(history("g").ok());
  CHECK(history("g")->empty());   // nothing sampled before the first interval

  REQUIRE(commit("g", id, std::vector<group::processed_offset>{{orders0, model::offset{3}, ""}}).ok());   // lag 6
  tick();
  REQUIRE(commit("g", id, std::vector<group::processed_offset>{{orders0, model::offset{9}, ""}}).ok());   // lag 0
  produce("orders", 0, 2);                                                                              // lag 2
  tick();
  auto samples = history("g");
  REQUIRE(samples.ok());
  REQUIRE(samples->size() == 2);
  CHECK((*samples)[0].total_lag == 6);
  CHECK((*samples)[1].total_lag == 2);
  CHECK((*samples)[1].timestamp_ms - (*samples)[0].timestamp_ms == lag_history_interval_ms);

  for (size_t i = 0; i < lag_history_samples_max; ++i) tick();
  samples = history("g");
  REQUIRE(samples.ok());
  CHECK(samples->size() == lag_history_samples_max);   // the oldest dropped first
  CHECK(samples->front().timestamp_ms == t0 + 3 * lag_history_interval_ms);

  CHECK(history("nope").error().code == errc::group_id_not_found);
  // An hour of ticks outlived the member's session (300 s): the group is empty, its offsets stay.
  auto deleted = call<result<void>>([&](auto done) { b->groups().delete_group("g", std::move(done)); });
  REQUIRE_MESSAGE(deleted.ok(), (deleted.ok() ? std::string() : deleted.error().message));
  tick();
  CHECK(history("g").error().code == errc::group_id_not_found);
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "classic protocol: join, sync, commit, lag; the stable group comes back after a restart") {
  open();
  create("orders", 2);
  produce("orders", 0, 5);
  group::classic_join_request r;
  r.client_id = "kc";
  r.client_host = "/127.0.0.1";
  r.session_timeout_ms = 10'000;
  r.rebalance_timeout_ms = 10'000;
  r.protocol_type = "consumer";
  r.protocols = {{"range", group::encode_consumer_subscription({"orders"})}};
  r.require_known_member_id = true;
  auto first = call<join_group_answer>([&](auto done) { b->groups().join_group("kg", r, std::move(done)); });
  REQUIRE(first.failure.has_value());
  CHECK(first.failure->code == errc::member_id_required);
  r.member_id = first.data.member_id;
  // The second join waits out group.initial.rebalance.delay.ms (3000 ms): driven by the clock.
  std::promise<join_group_answer> joined;
  auto joined_future = joined.get_future();
  b->groups().join_group("kg", r, [&joined](join_group_answer a) { joined.set_value(std::move(a)); });
  for (int step = 0; step < 40 && joined_future.wait_for(std::chrono::seconds(0)) != std::future_status::ready; ++step) {
    runtime->wait_idle();
    runtime->advance_ms(100);
  }
  REQUIRE(joined_future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  auto j = joined_future.get();
  REQUIRE_FALSE(j.failure.has_value());
  CHECK(j.data.generation == group::generation_id(1));
  CHECK(j.data.leader == r.member_id);
  group::partition_set both{orders0, {"orders", model::partition_id{1}}};
  group::classic_sync_request s;
  s.member_id = r.member_id;
  s.generation = group::generation_id(1);
  s.assignments = {{r.member_id, group::encode_consumer_assignment(both)}};
  auto synced = call<sync_group_answer>([&](auto done) { b->groups().sync_group("kg", s, std::move(done)); });
  REQUIRE_FALSE(synced.failure.has_value());
  CHECK(group::decode_consumer_assignment(synced.data.assignment).value() == both);
  auto stale = call<result<offset_commit_answer>>([&](auto done) {
    b->groups().commit_kafka("kg", r.member_id, std::nullopt, 0, {{orders0, model::offset{4}, ""}}, std::move(done));
  });
  CHECK(stale.error().code == errc::illegal_generation);
  // KafkaApis: a partition the metadata does not hold is refused per partition, the rest stored.
  const model::topic_partition orders99{"orders", model::partition_id{99}};
  const model::topic_partition nowhere0{"nowhere", model::partition_id{0}};
  auto committed = call<result<offset_commit_answer>>([&](auto done) {
    b->groups().commit_kafka("kg", r.member_id, std::nullopt, 1,
                             {{orders0, model::offset{4}, ""}, {orders99, model::offset{1}, ""}, {nowhere0, model::offset{1}, ""}},
                             std::move(done));
  });
  REQUIRE(committed.ok());
  CHECK(committed->committed.contains(orders0));
  CHECK_FALSE(committed->committed.contains(orders99));
  REQUIRE(committed->refused.size() == 2);
  CHECK(committed->refused.at(orders99).code == errc::unknown_topic_or_partition);
  CHECK(committed->refused.at(nowhere0).code == errc::unknown_topic_or_partition);
  auto stored = call<result<group::partition_map<group::committed_offset>>>(
      [&](auto done) { b->groups().group_committed("kg", std::move(done)); });
  REQUIRE(stored.ok());
  CHECK(stored->size() == 1);
  auto lag = call<result<std::vector<group::partition_lag>>>([&](auto done) { b->groups().group_lag("kg", std::move(done)); });
  REQUIRE(lag.ok());
  REQUIRE(lag->size() == 2);   // the committed partition and the member's other owned one
  CHECK(lag->at(0).lag == std::optional<int64_t>(1));
  // A REST consumer may not join a classic group.
  consumer_instance_config cfg;
  cfg.group_id = "kg";
  auto refused = call<result<consumer_instance>>([&](auto done) { b->groups().create_consumer(cfg, std::move(done)); });
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == errc::inconsistent_group_protocol);
  stop();
  open();
  // The member heartbeats on at its generation; the group is stable with its assignment.
  auto hb = call<result<void>>([&](auto done) {
    b->groups().heartbeat_group("kg", r.member_id, std::nullopt, 1, std::move(done));
  });
  CHECK(hb.ok());
  auto d = call<result<group_details>>([&](auto done) { b->groups().describe_group("kg", std::move(done)); });
  REQUIRE(d.ok());
  CHECK(d->description.classic);
  CHECK(d->description.state == group::group_state::stable);
  REQUIRE(d->description.members.size() == 1);
  CHECK(d->description.members[0].owned == both);
  auto left = call<result<std::vector<std::optional<error>>>>([&](auto done) {
    b->groups().leave_group("kg", {{r.member_id, std::nullopt}}, std::move(done));
  });
  REQUIRE(left.ok());
  CHECK_FALSE(left->at(0).has_value());
  runtime->wait_idle();
  auto after = call<result<group_details>>([&](auto done) { b->groups().describe_group("kg", std::move(done)); });
  CHECK(after->description.state == group::group_state::empty);
  stop();
}

TEST_CASE_FIXTURE(groups_fixture, "offsets.retention.minutes: a group whose last instance was deleted loses its offsets after the retention, durably (KIP-211)") {
  config.offsets_retention_minutes = 1;
  config.offsets_retention_check_interval_ms = 500;
  open();
  create("orders", 1);
  produce("orders", 0, 10);
  auto group_committed = [&](const std::string& group) {
    return call<result<group::partition_map<group::committed_offset>>>(
        [&](auto done) { b->groups().group_committed(group, std::move(done)); });
  };
  auto listed = [&](const std::string& group) {
    auto groups = call<result<std::vector<group::group_listing>>>([&](auto done) { b->groups().list_groups(std::move(done)); });
    REQUIRE(groups.ok());
    return std::any_of(groups->begin(), groups->end(), [&](const auto& l) { return l.group_id == group; });
  };
  auto advance = [&](int64_t ms) {
    for (int64_t done_ms = 0; done_ms < ms; done_ms += 1'000) {
      runtime->advance_ms(1'000);
      runtime->wait_idle();
    }
  };
  // "kept" has a live member for two minutes, committing once at the start; "gone" is left at once.
  auto kept = member_that_read("kept", "orders");
  REQUIRE(commit("kept", kept, std::vector<group::processed_offset>{{orders0, model::offset{4}, ""}}).ok());
  auto id = member_that_read("gone", "orders");
  REQUIRE(commit("gone", id, std::vector<group::processed_offset>{{orders0, model::offset{9}, ""}}).ok());
  REQUIRE(call<result<void>>([&](auto done) { b->groups().delete_consumer("gone", id, std::move(done)); }).ok());
  for (int i = 0; i < 58; ++i) {
    advance(1'000);
    REQUIRE(poll("kept", kept).ok());
  }
  // 58 s after the group became empty: still there.
  REQUIRE(group_committed("gone").ok());
  CHECK(group_committed("gone")->at(orders0).committed == model::offset{10});
  for (int i = 0; i < 4; ++i) {
    advance(1'000);
    REQUIRE(poll("kept", kept).ok());
  }
  // Past the minute (and a check since): the offsets and the group are gone; the live group keeps its own.
  CHECK(group_committed("gone")->empty());
  CHECK_FALSE(listed("gone"));
  CHECK(listed("kept"));
  CHECK(group_committed("kept")->at(orders0).committed == model::offset{5});
  // The tombstones are in __consumer_offsets: a restart does not bring the group back.
  stop();
  open();
  CHECK(group_committed("gone")->empty());
  CHECK_FALSE(listed("gone"));
  CHECK(group_committed("kept")->at(orders0).committed == model::offset{5});
  stop();
}

TEST_CASE("a call refused for not reaching the group's coordinator never names this broker as another's coordinator") {
  // The metadata may make this broker the leader of the group's __consumer_offsets partition
  // between the check that it is not and the refusal: the refusal then said "coordinated by
  // broker 1 ..., not by this broker" answered by broker 1 (operator finding, session 35).
  group_coordinator_route here;
  here.where = group_coordinator_route::place::here;
  here.node_id = 1;
  here.offsets_partition = 7;
  here.description = "broker 1 at http://127.0.0.1:28101";
  const error becoming = not_coordinator_refusal("g", here);
  CHECK(becoming.code == errc::coordinator_load_in_progress);
  CHECK(becoming.message ==
        "this broker is becoming the coordinator of group 'g' (the new leader of __consumer_offsets-7): retry");

  group_coordinator_route peer = here;
  peer.where = group_coordinator_route::place::peer;
  peer.node_id = 2;
  peer.description = "broker 2 at http://127.0.0.1:28102";
  const error elsewhere = not_coordinator_refusal("g", peer);
  CHECK(elsewhere.code == errc::not_coordinator);
  CHECK(elsewhere.message == "group 'g' is coordinated by broker 2 at http://127.0.0.1:28102 (the leader of "
                             "__consumer_offsets-7), not by this broker: send the group's calls there");

  group_coordinator_route none;
  none.offsets_partition = 7;
  const error nobody = not_coordinator_refusal("g", none);
  CHECK(nobody.code == errc::not_coordinator);
  CHECK(nobody.message == "group 'g' has no coordinator now: __consumer_offsets-7 has no leader; retry");
}
