// The broker's transaction service (transactions.h) on the deterministic runtime: the
// coordinator on __transaction_state, fencing, replay after a restart, the timeout abort driven
// by the simulated clock, markers and the group offsets of a transaction.

#include <doctest.h>

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
using id_epoch = std::pair<model::producer_id, model::producer_epoch>;

struct txn_fixture {
  io::sim_file_system fs;
  base::manual_clock clock{t0};
  std::unique_ptr<test::test_runtime> runtime = std::make_unique<test::test_runtime>(3, clock);
  std::unique_ptr<broker::broker> b;

  void open() {
    broker_config config;
    config.log_dir = "/data";
    config.offsets_topic_num_partitions = 2;
    config.transaction_state_log_num_partitions = 3;
    config.transaction_abort_timed_out_transaction_cleanup_interval_ms = 100;
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
    runtime->wait_idle();
  }
  result<id_epoch> init(const std::string& id, int32_t timeout_ms = 60'000) {
    return call<result<id_epoch>>(
        [&](auto done) { b->transactions().init_producer_id(id, timeout_ms, std::nullopt, std::move(done)); });
  }
  result<void> add(const std::string& id, id_epoch p, std::vector<model::topic_partition> tps) {
    return call<result<void>>(
        [&](auto done) { b->transactions().add_partitions(id, p.first, p.second, std::move(tps), std::move(done)); });
  }
  result<id_epoch> end(const std::string& id, id_epoch p, bool commit, bool bump) {
    return call<result<id_epoch>>(
        [&](auto done) { b->transactions().end_txn(id, p.first, p.second, commit, bump, std::move(done)); });
  }
  result<transaction_description> describe(const std::string& id) {
    return call<result<transaction_description>>(
        [&](auto done) { b->transactions().describe_transaction(id, std::move(done)); });
  }
  /// Lets the markers and completions run (they retry every 100 ms of simulated time).
  void settle() {
    for (int i = 0; i < 50; ++i) {
      runtime->wait_idle();
      runtime->advance_ms(100);
    }
    runtime->wait_idle();
  }
};

model::topic_partition tp(const std::string& t, int32_t p) { return {t, model::partition_id{p}}; }

}  // namespace

TEST_CASE_FIXTURE(txn_fixture, "__transaction_state is created with the coordinators; InitProducerId fences by epoch") {
  open();
  auto listed = b->admin().list_topics(true);
  CHECK(std::find(listed.begin(), listed.end(), transaction_state_topic) != listed.end());
  CHECK(b->transactions().coordinator_id("app") == 0);
  auto first = init("app");
  REQUIRE(first.ok());
  CHECK(first->second.value() == 0);
  auto second = init("app");
  REQUIRE(second.ok());
  CHECK(second->first == first->first);
  CHECK(second->second.value() == 1);
  create("out", 2);
  CHECK(add("app", *first, {tp("out", 0)}).error().code == errc::producer_fenced);
  CHECK(add("app", *second, {tp("nope", 0)}).error().code == errc::unknown_topic_or_partition);
  REQUIRE(add("app", *second, {tp("out", 0), tp("out", 1)}).ok());
  auto d = describe("app");
  REQUIRE(d.ok());
  CHECK(d->state == "Ongoing");
  CHECK(d->partitions.size() == 2);
  CHECK(describe("never").error().code == errc::transactional_id_not_found);
  auto all = call<result<std::vector<transaction_listing>>>(
      [&](auto done) { b->transactions().list_transactions({}, std::move(done)); });
  REQUIRE(all.ok());
  CHECK(all->size() == 1);
  stop();
}

TEST_CASE_FIXTURE(txn_fixture, "the coordinator's state is replayed after a restart") {
  open();
  create("out", 1);
  auto p = init("app");
  REQUIRE(p.ok());
  REQUIRE(add("app", *p, {tp("out", 0)}).ok());
  stop();
  open();
  auto d = describe("app");
  REQUIRE(d.ok());
  CHECK(d->state == "Ongoing");
  CHECK(d->producer_id == p->first);
  CHECK(d->producer_epoch == p->second);
  // The next InitProducerId fences the producer of before the restart.
  auto fresh = init("app");
  CHECK((!fresh.ok() && fresh.error().code == errc::concurrent_transactions));
  stop();
}

TEST_CASE_FIXTURE(txn_fixture, "commit: markers are written, the transaction completes, the epoch is bumped (v5)") {
  open();
  create("out", 1);
  auto p = init("app");
  REQUIRE(p.ok());
  REQUIRE(add("app", *p, {tp("out", 0)}).ok());
  auto next = end("app", *p, true, true);
  REQUIRE(next.ok());
  CHECK(next->second.value() == p->second.value() + 1);
  settle();
  auto d = describe("app");
  REQUIRE(d.ok());
  CHECK(d->state == "CompleteCommit");
  // The delayed duplicate of that commit, after the next transaction began, is refused.
  REQUIRE(add("app", *next, {tp("out", 0)}).ok());
  CHECK(end("app", *p, true, true).error().code == errc::producer_fenced);
  CHECK(describe("app")->state == "Ongoing");
  stop();
}

TEST_CASE_FIXTURE(txn_fixture, "a transaction past its timeout is aborted by the coordinator, its producer fenced") {
  open();
  create("out", 1);
  auto p = init("app", 1'000);
  REQUIRE(p.ok());
  REQUIRE(add("app", *p, {tp("out", 0)}).ok());
  runtime->advance_ms(1'100);
  settle();
  auto d = describe("app");
  REQUIRE(d.ok());
  CHECK(d->state == "CompleteAbort");
  CHECK(d->producer_epoch.value() == p->second.value() + 1);
  CHECK(end("app", *p, true, false).error().code == errc::producer_fenced);
  stop();
}

TEST_CASE_FIXTURE(txn_fixture, "group offsets of a transaction are committed with it, and dropped with an abort") {
  open();
  create("in", 1);
  create("out", 1);
  auto committed = [&](const std::string& g) {
    return call<result<group::partition_map<group::committed_offset>>>(
        [&](auto done) { b->groups().group_committed(g, std::move(done)); });
  };
  auto p = init("app");
  REQUIRE(p.ok());
  for (bool commit : {false, true}) {
    REQUIRE(call<result<void>>([&](auto done) {
              b->transactions().add_offsets("app", p->first, p->second, "g", std::move(done));
            }).ok());
    auto pending = call<result<offset_commit_answer>>([&](auto done) {
      b->groups().txn_commit("g", "", std::nullopt, -1, p->first,
                             {group::offset_commit{tp("in", 0), model::offset{commit ? 11 : 7}, ""}}, std::move(done));
    });
    REQUIRE(pending.ok());
    auto before = committed("g");
    CHECK((!before.ok() || before->empty()));   // pending: not the group's committed offset yet
    REQUIRE(end("app", *p, commit, false).ok());
    settle();
    CHECK(describe("app")->state == (commit ? "CompleteCommit" : "CompleteAbort"));
  }
  auto after = committed("g");
  REQUIRE(after.ok());
  REQUIRE(after->size() == 1);
  CHECK(after->begin()->second.committed.value() == 11);
  stop();
}

TEST_CASE_FIXTURE(txn_fixture, "a transactional produce joins its partitions and is read_committed only after the commit") {
  open();
  create("out", 2);
  auto p = init("app");
  REQUIRE(p.ok());
  auto request = [](id_epoch who, std::vector<std::pair<int32_t, int32_t>> records) {
    produce_request r;
    r.topic = "out";
    r.producer = producer_identity{who.first, who.second, std::string("app")};
    for (auto [partition, sequence] : records) {
      produce_record rec;
      rec.partition = model::partition_id{partition};
      rec.sequence = model::sequence{sequence};
      rec.value = model::to_bytes("v");
      r.records.push_back(std::move(rec));
    }
    return r;
  };
  auto latest = [&](int32_t partition, isolation_level isolation) {
    list_offsets_request r;
    r.partition = tp("out", partition);
    r.isolation = isolation;
    auto got = call<result<list_offsets_response>>([&](auto done) { b->list_offsets(std::move(r), std::move(done)); });
    REQUIRE(got.ok());
    return got->found_offset.value_or(model::offset{-1}).value();
  };
  auto produced = call<result<produce_response>>(
      [&](auto done) { b->produce(request(*p, {{0, 0}, {0, 1}, {1, 0}}), std::move(done)); });
  REQUIRE(produced.ok());
  for (const auto& r : produced->results) CHECK_FALSE(r.failure.has_value());
  auto d = describe("app");
  REQUIRE(d.ok());
  CHECK(d->state == "Ongoing");
  CHECK(d->partitions.size() == 2);   // joined by the produce itself
  CHECK(latest(0, isolation_level::read_uncommitted) == 2);
  CHECK(latest(0, isolation_level::read_committed) == 0);   // open: the last stable offset waits
  auto next = end("app", *p, true, true);
  REQUIRE(next.ok());
  // Right after the commit answered its markers may still be written: the next produce waits
  // for them (retrying the join every few ms of the clock) instead of failing.
  std::promise<result<produce_response>> waiting;
  auto answered = waiting.get_future();
  b->produce(request(*next, {{0, 0}}), [&waiting](result<produce_response> r) { waiting.set_value(std::move(r)); });
  for (int i = 0; i < 200 && answered.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready; ++i) {
    runtime->wait_idle();
    runtime->advance_ms(5);
  }
  REQUIRE(answered.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  auto second = answered.get();
  REQUIRE(second.ok());
  CHECK_FALSE(second->results[0].failure.has_value());
  CHECK(second->results[0].record_offset.value() == 3);   // after c0, c1 and the commit marker
  CHECK(latest(0, isolation_level::read_committed) == 3);  // the first transaction is readable
  // The ended transaction's epoch is fenced and stores nothing.
  auto zombie = call<result<produce_response>>([&](auto done) { b->produce(request(*p, {{0, 2}}), std::move(done)); });
  REQUIRE_FALSE(zombie.ok());
  CHECK(zombie.error().code == errc::producer_fenced);
  // Internal topics never join a transaction (a group's offsets go through add_offsets).
  CHECK(add("app", *next, {tp("__consumer_offsets", 0)}).error().code == errc::topic_authorization_failed);
  CHECK(add("app", *next, {tp(transaction_state_topic, 0)}).error().code == errc::topic_authorization_failed);
  stop();
}
