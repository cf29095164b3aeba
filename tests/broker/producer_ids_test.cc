// Producer ids (KIP-98) through the broker API on the one-voter quorum: blocks committed to the
// metadata log (never handed out twice, also across restarts), and the HTTP-style idempotent
// produce (produce_request::producer) answering a resent request with the original offsets.
#include <doctest.h>

#include <future>
#include <set>

#include "ringlog/broker/broker.h"
#include "ringlog/io/sim_file_system.h"
#include "call.h"
#include "test_runtime.h"

using namespace ringlog;
using namespace ringlog::broker;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;
using test::call;

struct fixture {
  io::sim_file_system fs;
  base::manual_clock clock{t0};
  std::unique_ptr<test::test_runtime> runtime = std::make_unique<test::test_runtime>(2, clock);
  std::unique_ptr<broker::broker> b;

  void open() {
    broker_config config;
    config.log_dir = "/data";
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
  result<producer_identity> init() {
    return call<result<producer_identity>>([&](auto done) { b->init_producer_id(std::move(done)); });
  }
  result<produce_response> produce(produce_request r) {
    return call<result<produce_response>>([&](auto done) { b->produce(std::move(r), std::move(done)); });
  }
};

produce_record sequenced(int32_t partition, int32_t sequence, const std::string& value) {
  produce_record r;
  r.partition = model::partition_id{partition};
  r.sequence = model::sequence{sequence};
  r.value = model::to_bytes(value);
  return r;
}

}  // namespace

TEST_CASE_FIXTURE(fixture, "init_producer_id hands out distinct ids from controller blocks, also after a restart") {
  open();
  std::set<int64_t> seen;
  for (int i = 0; i < 1500; ++i) {   // more than one block of producer_id_block_size (1000)
    auto id = init();
    REQUIRE_MESSAGE(id.ok(), (id.ok() ? "" : id.error().message));
    CHECK(id->producer_epoch.value() == 0);
    CHECK(id->producer_id.value() >= 0);
    CHECK(seen.insert(id->producer_id.value()).second);
  }
  CHECK(b->check_producer_id(model::producer_id{*seen.rbegin()}).ok());
  auto unknown = b->check_producer_id(model::producer_id{*seen.rbegin() + 10'000});
  REQUIRE(!unknown.ok());
  CHECK(unknown.error().code == errc::unknown_producer_id);
  stop();
  open();
  auto after = init();
  REQUIRE(after.ok());
  CHECK(after->producer_id.value() > *seen.rbegin());
  stop();
}

TEST_CASE_FIXTURE(fixture, "an idempotent produce resent unchanged gets the same offsets and is stored once") {
  open();
  auto created = call<result<topic_description>>([&](auto done) {
    b->admin().create_topic({"idem", 2, std::nullopt, {}, false}, std::move(done));
  });
  REQUIRE(created.ok());
  auto id = init();
  REQUIRE(id.ok());
  produce_request req{"idem", {}, acks_mode::all, 1000, *id};
  for (int i = 0; i < 6; ++i) req.records.push_back(sequenced(i % 2, i / 2, "v" + std::to_string(i)));
  auto first = produce(req);
  REQUIRE(first.ok());
  auto second = produce(req);
  REQUIRE(second.ok());
  for (size_t i = 0; i < 6; ++i) {
    REQUIRE(!first->results[i].failure);
    REQUIRE(!second->results[i].failure);
    CHECK(first->results[i].record_offset.value() == static_cast<int64_t>(i / 2));
    CHECK(second->results[i].record_offset == first->results[i].record_offset);
    CHECK(second->results[i].partition == first->results[i].partition);
  }
  // The next request goes on at sequence 3; one that skips is refused, naming the sequence.
  produce_request gap{"idem", {sequenced(0, 5, "x")}, acks_mode::all, 1000, *id};
  auto refused = produce(gap);
  REQUIRE(refused.ok());
  REQUIRE(refused->results[0].failure);
  CHECK(refused->results[0].failure->code == errc::out_of_order_sequence_number);
  CHECK(refused->results[0].failure->message.find("expects 3") != std::string::npos);
  // Records without a partition or a sequence are refused per record.
  produce_record loose;
  loose.value = model::to_bytes("y");
  produce_request unnamed{"idem", {loose}, acks_mode::all, 1000, *id};
  auto refused2 = produce(unnamed);
  REQUIRE(refused2.ok());
  REQUIRE(refused2->results[0].failure);
  CHECK(refused2->results[0].failure->code == errc::invalid_request);
  // An id never handed out is unknown_producer_id for the whole request.
  produce_request stranger{"idem", {sequenced(0, 0, "z")}, acks_mode::all, 1000,
                           producer_identity{model::producer_id{id->producer_id.value() + 50'000}, model::producer_epoch{0}}};
  auto refused3 = produce(stranger);
  REQUIRE(!refused3.ok());
  CHECK(refused3.error().code == errc::unknown_producer_id);
  // After a restart the resend is still a duplicate.
  stop();
  open();
  auto third = produce(req);
  REQUIRE(third.ok());
  for (size_t i = 0; i < 6; ++i) CHECK(third->results[i].record_offset == first->results[i].record_offset);
  stop();
}
