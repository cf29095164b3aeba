#include <doctest.h>

#include <algorithm>
#include <future>

#include "ringlog/broker/broker.h"
#include "ringlog/broker/partitioner.h"
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
  std::unique_ptr<test::test_runtime> runtime = std::make_unique<test::test_runtime>(3, clock);
  std::unique_ptr<broker::broker> b;

  void open(broker_config config = {}) {
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
  result<topic_description> create(const std::string& name, int32_t partitions,
                                   std::map<std::string, std::string> configs = {}) {
    return call<result<topic_description>>([&](auto done) {
      b->admin().create_topic({name, partitions, std::nullopt, std::move(configs), false}, std::move(done));
    });
  }
  result<produce_response> produce(produce_request r) {
    return call<result<produce_response>>([&](auto done) { b->produce(std::move(r), std::move(done)); });
  }
  result<fetch_response> fetch(const std::string& topic, int32_t p, int64_t offset, int64_t wait_ms = 0) {
    fetch_request r{{{topic, model::partition_id{p}}, model::offset{offset}, 1 << 20, wait_ms, 1}};
    return call<result<fetch_response>>([&](auto done) { b->fetch(std::move(r), std::move(done)); });
  }
};

produce_record keyed(const std::string& key, const std::string& value) {
  produce_record r;
  r.key = model::to_bytes(key);
  r.value = model::to_bytes(value);
  return r;
}

}  // namespace

TEST_CASE_FIXTURE(fixture, "produce keyed records, read them back in order from the murmur2 partition") {
  open();
  auto created = create("orders", 4);
  REQUIRE(created.ok());
  CHECK(created->partitions.size() == 4);
  produce_request req{"orders", {}, acks_mode::all, 1000};
  for (int i = 0; i < 40; ++i) req.records.push_back(keyed("key-" + std::to_string(i % 7), "value-" + std::to_string(i)));
  auto produced = produce(req);
  REQUIRE(produced.ok());
  std::map<int32_t, int64_t> next_offset;
  for (int i = 0; i < 40; ++i) {
    const auto& r = produced->results[static_cast<size_t>(i)];
    REQUIRE(!r.failure);
    const auto key = model::to_bytes("key-" + std::to_string(i % 7));
    CHECK(r.partition.value() == partition_for_key(key, 4));
    CHECK(r.record_offset.value() == next_offset[r.partition.value()]++);
  }
  for (auto [p, count] : next_offset) {
    auto fetched = fetch("orders", p, 0);
    REQUIRE(fetched.ok());
    REQUIRE(static_cast<int64_t>(fetched->records.size()) == count);
    CHECK(fetched->high_watermark.value() == count);
    for (size_t i = 0; i < fetched->records.size(); ++i) CHECK(fetched->records[i].record_offset.value() == static_cast<int64_t>(i));
  }
  auto latest = call<result<list_offsets_response>>([&](auto done) {
    b->list_offsets({{"orders", model::partition_id{next_offset.begin()->first}}, offset_spec::latest, 0}, std::move(done));
  });
  REQUIRE(latest.ok());
  CHECK(latest->found_offset->value() == next_offset.begin()->second);
  stop();
}

TEST_CASE_FIXTURE(fixture, "a restart keeps topics, configs and records; a crash keeps every acknowledged record") {
  open();
  REQUIRE(create("logs", 2, {{"retention.ms", "123456"}}).ok());
  produce_request req{"logs", {}, acks_mode::all, 1000};
  for (int i = 0; i < 10; ++i) {
    produce_record r = keyed("k", "v" + std::to_string(i));
    r.headers.push_back({"h", model::to_bytes("x")});
    req.records.push_back(r);
  }
  auto produced = produce(req);
  REQUIRE(produced.ok());
  const int32_t p = produced->results[0].partition.value();
  SUBCASE("clean restart") { stop(); }
  SUBCASE("power loss") {
    b.reset();  // the broker dies without closing anything
    fs.crash(42);
  }
  runtime = std::make_unique<test::test_runtime>(3, clock);
  open();
  auto topics = b->admin().list_topics(false);
  REQUIRE(topics == std::vector<std::string>{"logs"});
  auto d = call<result<topic_description>>([&](auto done) { b->admin().describe_topic("logs", std::move(done)); });
  REQUIRE(d.ok());
  bool found = false;
  for (const auto& c : d->configs) {
    if (c.name == "retention.ms") {
      CHECK(c.value == "123456");
      CHECK(!c.is_default);
      found = true;
    }
  }
  CHECK(found);
  auto fetched = fetch("logs", p, 0);
  REQUIRE_MESSAGE(fetched.ok(), (fetched.ok() ? "" : fetched.error().message));
  REQUIRE(fetched->records.size() == 10);
  CHECK(model::to_string(*fetched->records[9].value) == "v9");
  CHECK(fetched->records[9].headers.at(0).key == "h");
  stop();
}

TEST_CASE_FIXTURE(fixture, "long-poll fetch waits for new records and ends at its timeout") {
  open();
  REQUIRE(create("live", 1).ok());
  std::promise<result<fetch_response>> waiting;
  auto waited = waiting.get_future();
  b->fetch({{{"live", model::partition_id{0}}, model::offset{0}, 1 << 20, 5000, 1}},
           [&](result<fetch_response> r) { waiting.set_value(std::move(r)); });
  CHECK(waited.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  REQUIRE(produce({"live", {keyed("a", "first")}, acks_mode::all, 1000}).ok());
  REQUIRE(waited.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto r = waited.get();
  REQUIRE(r.ok());
  REQUIRE(r->records.size() == 1);
  CHECK(model::to_string(*r->records[0].value) == "first");

  std::promise<result<fetch_response>> idle;
  auto idle_f = idle.get_future();
  b->fetch({{{"live", model::partition_id{0}}, model::offset{1}, 1 << 20, 2000, 1}},
           [&](result<fetch_response> r2) { idle.set_value(std::move(r2)); });
  runtime->wait_idle();  // the fetch is parked and its deadline set
  runtime->advance_ms(1999);
  CHECK(idle_f.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  runtime->advance_ms(1);
  REQUIRE(idle_f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(idle_f.get()->records.empty());
  stop();
}

TEST_CASE_FIXTURE(fixture, "fetches parked at one position share one read; each gets the records, others read alone") {
  open();
  REQUIRE(create("tail", 1).ok());
  REQUIRE(produce({"tail", {keyed("k", "zero")}, acks_mode::all, 1000}).ok());
  // Three live tails at offset 1 with the same limit, one with a smaller limit, one at offset 0
  // (answered at once: its record is there).
  auto park = [&](int64_t offset, int32_t max_bytes) {
    auto p = std::make_shared<std::promise<result<fetch_response>>>();
    b->fetch({{{"tail", model::partition_id{0}}, model::offset{offset}, max_bytes, 5000, 1}},
             [p](result<fetch_response> r) { p->set_value(std::move(r)); });
    return p->get_future();
  };
  std::vector<std::future<result<fetch_response>>> same;
  for (int i = 0; i < 3; ++i) same.push_back(park(1, 1 << 20));
  auto smaller = park(1, 4);
  auto behind = park(0, 1 << 20);
  REQUIRE(behind.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto at_zero = behind.get();
  REQUIRE(at_zero.ok());
  REQUIRE(at_zero->records.size() == 1);
  runtime->wait_idle();   // the four others are parked
  REQUIRE(produce({"tail", {keyed("k", "one"), keyed("k", "two")}, acks_mode::all, 1000}).ok());
  std::vector<fetch_response> got;
  for (auto& f : same) {
    REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    auto r = f.get();
    REQUIRE(r.ok());
    got.push_back(std::move(*r));
  }
  for (const auto& r : got) {
    REQUIRE(r.records.size() == 2);
    CHECK(r.records[0].record_offset == model::offset{1});
    CHECK(model::to_string(*r.records[1].value) == "two");
    CHECK(r.read_id != 0);
    CHECK(r.read_id == got[0].read_id);   // one read for the three
    CHECK(r.high_watermark == model::offset{3});
  }
  CHECK(got[0].read_id != at_zero->read_id);
  REQUIRE(smaller.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto cut = smaller.get();
  REQUIRE(cut.ok());
  REQUIRE(cut->records.size() == 1);   // max_bytes 4: the first record only, its own read
  CHECK(model::to_string(*cut->records[0].value) == "one");
  CHECK(cut->read_id != got[0].read_id);

  // A fetch of the same records later (not parked) reuses the read while nothing moved.
  auto again = fetch("tail", 0, 1);
  REQUIRE(again.ok());
  CHECK(again->read_id == got[0].read_id);
  CHECK(again->records.size() == 2);
  // Not once the high watermark moved, nor for a re-created topic of the same name.
  REQUIRE(produce({"tail", {keyed("k", "three")}, acks_mode::all, 1000}).ok());
  auto moved = fetch("tail", 0, 1);
  REQUIRE(moved.ok());
  CHECK(moved->read_id != got[0].read_id);
  CHECK(moved->records.size() == 3);
  REQUIRE(call<result<void>>([&](auto done) { b->admin().delete_topic("tail", std::move(done)); }).ok());
  REQUIRE(create("tail", 1).ok());
  REQUIRE(produce({"tail", {keyed("k", "new-zero"), keyed("k", "new-one"), keyed("k", "new-two"), keyed("k", "new-three")},
                   acks_mode::all, 1000}).ok());
  auto recreated = fetch("tail", 0, 1);
  REQUIRE(recreated.ok());
  REQUIRE(recreated->records.size() == 3);
  CHECK(model::to_string(*recreated->records[0].value) == "new-one");
  CHECK(recreated->read_id != moved->read_id);
  stop();
}

TEST_CASE_FIXTURE(fixture, "reads not kept: many empty records (records count, not only payload), a lone reader's") {
  open();
  REQUIRE(create("empties", 1).ok());
  // Two readers parked at offset 0 (many readers), woken by 10,000 records of 0 payload bytes.
  auto park = [&] {
    auto p = std::make_shared<std::promise<result<fetch_response>>>();
    b->fetch({{{"empties", model::partition_id{0}}, model::offset{0}, 1 << 20, 5000, 1}},
             [p](result<fetch_response> r) { p->set_value(std::move(r)); });
    return p->get_future();
  };
  auto first_f = park();
  auto second_f = park();
  runtime->wait_idle();
  produce_request many{"empties", {}, acks_mode::all, 1000};
  many.records.resize(10'000);   // null keys and values: 0 payload bytes, ~1.6 MB decoded
  REQUIRE(produce(std::move(many)).ok());
  REQUIRE(first_f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  REQUIRE(second_f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto first = first_f.get();
  auto second = second_f.get();
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first->records.size() == 10'000);
  CHECK(second->records.size() == 10'000);
  CHECK(second->read_id != first->read_id);
  // Nor is a read of a partition with one reader: nobody else would ask for it.
  REQUIRE(create("smalls", 1).ok());
  REQUIRE(produce({"smalls", {keyed("k", "v1"), keyed("k", "v2")}, acks_mode::all, 1000}).ok());
  auto a = fetch("smalls", 0, 0);
  auto c = fetch("smalls", 0, 0);
  REQUIRE(a.ok());
  REQUIRE(c.ok());
  CHECK(a->records.size() == 2);
  CHECK(c->read_id != a->read_id);
  stop();
}

TEST_CASE_FIXTURE(fixture, "bad requests get named errors and change nothing") {
  open();
  REQUIRE(create("t", 2).ok());
  CHECK(create("t", 2).error().code == errc::topic_already_exists);
  CHECK(create("t.x", 1).ok());
  CHECK(create("t_x", 1).error().code == errc::invalid_topic_exception);  // collides with t.x
  CHECK(create("bad name", 1).error().code == errc::invalid_topic_exception);
  CHECK(create(std::string(250, 'a'), 1).error().code == errc::invalid_topic_exception);
  // Each door's field is named: REST v3's partitions_count, Kafka CreateTopics' num_partitions.
  CHECK(create("z", 0).error().message.find("partitions_count 0 is out of range") != std::string::npos);
  auto kafka_zero = call<result<topic_description>>([&](auto done) {
    create_topic_request request{"z", 0, std::nullopt, {}, false};
    request.partitions_field = "num_partitions";
    b->admin().create_topic(std::move(request), std::move(done));
  });
  CHECK(kafka_zero.error().message.find("num_partitions 0 is out of range") != std::string::npos);
  CHECK(kafka_zero.error().message.find("partitions_count") == std::string::npos);
  CHECK(create("..", 1).error().code == errc::invalid_topic_exception);
  CHECK(create("zero", 0).error().code == errc::invalid_partitions);
  auto bad_config = create("c", 1, {{"retention.ms", "-5"}});
  CHECK(bad_config.error().code == errc::invalid_config);
  CHECK(bad_config.error().message.find("retention.ms") != std::string::npos);
  CHECK(create("c", 1, {{"no.such.config", "1"}}).error().code == errc::invalid_config);
  auto unknown = fetch("nope", 0, 0);
  CHECK(unknown.error().code == errc::unknown_topic_or_partition);
  auto bad_partition = fetch("t", 2, 0);
  CHECK(bad_partition.error().code == errc::unknown_topic_or_partition);
  CHECK(bad_partition.error().message.find("2 partitions") != std::string::npos);
  REQUIRE(produce({"t", {keyed("a", "b")}, acks_mode::all, 1000}).ok());
  auto out_of_range = fetch("t", partition_for_key(model::to_bytes("a"), 2), 5);
  CHECK(out_of_range.error().code == errc::offset_out_of_range);
  produce_record explicit_bad = keyed("a", "b");
  explicit_bad.partition = model::partition_id{7};
  auto partial = produce({"t", {explicit_bad, keyed("a", "c")}, acks_mode::all, 1000});
  REQUIRE(partial.ok());
  CHECK(partial->results[0].failure->code == errc::unknown_topic_or_partition);
  CHECK(!partial->results[1].failure);
  CHECK(partial->results[1].record_offset.value() == 1);
  produce_record huge = keyed("a", std::string(2'000'000, 'x'));
  auto too_large = produce({"t", {huge}, acks_mode::all, 1000});
  REQUIRE(too_large.ok());
  CHECK(too_large->results[0].failure->code == errc::message_too_large);
  CHECK(too_large->results[0].failure->message.find("max.message.bytes") != std::string::npos);
  auto shrink = call<result<topic_description>>([&](auto done) { b->admin().create_partitions("t", 1, partitions_count_field, std::move(done)); });
  CHECK(shrink.error().code == errc::invalid_partitions);
  CHECK(shrink.error().message.find("partitions_count must be larger") != std::string::npos);
  auto kafka_shrink = call<result<topic_description>>([&](auto done) { b->admin().create_partitions("t", 1, "count", std::move(done)); });
  CHECK(kafka_shrink.error().message.find("count must be larger") != std::string::npos);
  CHECK(kafka_shrink.error().message.find("partitions_count") == std::string::npos);
  auto grow = call<result<topic_description>>([&](auto done) { b->admin().create_partitions("t", 3, partitions_count_field, std::move(done)); });
  REQUIRE(grow.ok());
  CHECK(grow->partitions.size() == 3);
  CHECK(fetch("t", 2, 0).ok());
  stop();
}

TEST_CASE_FIXTURE(fixture, "a deleted topic is gone, and a new topic of the same name starts empty") {
  open();
  REQUIRE(create("gone", 1).ok());
  REQUIRE(produce({"gone", {keyed("a", "old")}, acks_mode::all, 1000}).ok());
  auto deleted = call<result<void>>([&](auto done) { b->admin().delete_topic("gone", std::move(done)); });
  REQUIRE(deleted.ok());
  CHECK(b->admin().list_topics(false).empty());
  CHECK(b->admin().list_topics(true) == std::vector<std::string>{"__consumer_offsets", "__transaction_state"});  // internal topics stay
  CHECK(fetch("gone", 0, 0).error().code == errc::unknown_topic_or_partition);
  REQUIRE(create("gone", 1).ok());
  auto fresh = fetch("gone", 0, 0);
  REQUIRE(fresh.ok());
  CHECK(fresh->records.empty());
  CHECK(fresh->high_watermark.value() == 0);
  stop();
  runtime = std::make_unique<test::test_runtime>(3, clock);
  open();
  CHECK(fetch("gone", 0, 0)->high_watermark.value() == 0);
  stop();
}

TEST_CASE_FIXTURE(fixture, "auto-create on produce uses num.partitions; disabled auto-create is an unknown topic") {
  broker_config c;
  c.num_partitions = 3;
  open(c);
  auto r = produce({"auto", {keyed("a", "b")}, acks_mode::all, 1000});
  REQUIRE(r.ok());
  auto d = call<result<topic_description>>([&](auto done) { b->admin().describe_topic("auto", std::move(done)); });
  CHECK(d->partitions.size() == 3);
  // Records only for partitions the new topic would lack: refused, and no topic is left behind.
  produce_record far = keyed("k", "v");
  far.partition = model::partition_id{5};
  CHECK(produce({"nowhere", {far}, acks_mode::all, 1000}).error().code == errc::unknown_topic_or_partition);
  CHECK(!b->admin().topic_exists("nowhere"));
  // One such record among storable ones fails alone; the topic is created for the others.
  produce_record near = keyed("k", "w");
  near.partition = model::partition_id{2};
  auto mixed = produce({"mixed", {far, near}, acks_mode::all, 1000});
  REQUIRE(mixed.ok());
  REQUIRE(mixed->results.size() == 2);
  CHECK(mixed->results[0].failure->code == errc::unknown_topic_or_partition);
  CHECK(!mixed->results[1].failure);
  CHECK(mixed->results[1].partition.value() == 2);
  stop();
  runtime = std::make_unique<test::test_runtime>(3, clock);
  c.auto_create_topics_enable = false;
  open(c);
  CHECK(produce({"other", {keyed("a", "b")}, acks_mode::all, 1000}).error().code == errc::unknown_topic_or_partition);
  stop();
}

TEST_CASE_FIXTURE(fixture, "produces that auto-create a topic are stored in call order") {
  // A WebSocket client pipelines produces: the one that creates the topic waits for the
  // metadata write and the partitions to open, and the calls after it must not overtake it.
  open();
  constexpr int calls = 8;
  std::vector<std::promise<result<produce_response>>> answers(calls);
  for (int i = 0; i < calls; ++i) {
    produce_record rec;
    rec.partition = model::partition_id{0};
    rec.value = model::to_bytes("v" + std::to_string(i));
    b->produce({"pipelined", {std::move(rec)}, acks_mode::all, 1000},
               [&answers, i](result<produce_response> r) { answers[static_cast<size_t>(i)].set_value(std::move(r)); });
  }
  for (int i = 0; i < calls; ++i) {
    auto f = answers[static_cast<size_t>(i)].get_future();
    REQUIRE(f.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    auto r = f.get();
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    CHECK(r->results.at(0).record_offset.value() == i);
  }
  auto read = fetch("pipelined", 0, 0);
  REQUIRE(read.ok());
  REQUIRE(read->records.size() == static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) CHECK(model::to_string(read->records[static_cast<size_t>(i)].value.value()) == "v" + std::to_string(i));
  stop();
}

namespace {

const broker_config_entry* find_entry(const std::vector<broker_config_entry>& entries, const std::string& name) {
  for (const auto& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string topic_config_value(const topic_description& t, const std::string& name) {
  for (const auto& c : t.configs) {
    if (c.name == name) return c.value;
  }
  return "<missing>";
}

}  // namespace

TEST_CASE_FIXTURE(fixture, "dynamic broker configs: precedence, behaviour, refusals, and a restart keeps them") {
  broker_config config;
  config.log_retention_ms = 1000;   // static, not the built-in default
  open(config);
  REQUIRE(create("orders", 1).ok());
  auto alter = [&](int32_t node, std::map<std::string, std::optional<std::string>> changes, bool validate_only = false) {
    return call<result<void>>([&](auto done) { b->admin().alter_broker_configs(node, std::move(changes), validate_only, std::move(done)); });
  };
  auto describe_topic = [&] {
    return call<result<topic_description>>([&](auto done) { b->admin().describe_topic("orders", std::move(done)); });
  };

  auto before = b->admin().describe_broker_configs(0);
  REQUIRE(before.ok());
  const auto* retention = find_entry(*before, "log.retention.ms");
  REQUIRE(retention != nullptr);
  CHECK(retention->value == "1000");
  CHECK(retention->source == config_source::static_broker_config);
  CHECK(!retention->is_read_only);
  REQUIRE(retention->synonyms.size() == 2);
  CHECK(retention->synonyms[1].source == config_source::default_config);
  CHECK(find_entry(*before, "log.dirs")->is_read_only);
  CHECK(b->admin().describe_broker_configs(cluster_default_broker)->empty());
  CHECK(b->admin().describe_broker_configs(7).error().code == errc::invalid_request);

  // Refusals change nothing.
  CHECK(alter(0, {{"log.dirs", "/elsewhere"}}).error().code == errc::invalid_config);
  CHECK(alter(0, {{"no.such.config", "1"}}).error().code == errc::invalid_config);
  CHECK(alter(0, {{"log.retention.ms", "soon"}}).error().code == errc::invalid_config);
  CHECK(alter(7, {{"log.retention.ms", "5"}}).error().code == errc::invalid_request);
  REQUIRE(alter(0, {{"log.retention.ms", "5"}}, true).ok());   // validate_only
  CHECK(find_entry(*b->admin().describe_broker_configs(0), "log.retention.ms")->value == "1000");

  // Cluster-wide, then the broker's own value wins; topics without an override follow.
  REQUIRE(alter(cluster_default_broker, {{"log.retention.ms", "2000"}}).ok());
  CHECK(topic_config_value(describe_topic().value(), "retention.ms") == "2000");
  const auto described = describe_topic();
  REQUIRE(described.ok());
  for (const auto& e : described.value().configs) {
    if (e.name != "retention.ms") continue;
    CHECK(e.is_default);
    CHECK(e.source == config_source::dynamic_default_broker_config);
    REQUIRE(e.synonyms.size() == 3);   // cluster-wide, static, built-in default
    CHECK(e.synonyms[0].name == "log.retention.ms");
    CHECK(e.synonyms[2].source == config_source::default_config);
  }
  REQUIRE(alter(0, {{"log.retention.ms", "3000"}, {"min.insync.replicas", "2"}}).ok());
  auto after = b->admin().describe_broker_configs(0);
  retention = find_entry(*after, "log.retention.ms");
  CHECK(retention->value == "3000");
  CHECK(retention->source == config_source::dynamic_broker_config);
  CHECK(retention->synonyms.size() == 4);
  CHECK(topic_config_value(describe_topic().value(), "retention.ms") == "3000");
  // min.insync.replicas=2 on one node: acks=all produce is refused (behaviour, not only a display).
  produce_request req{"orders", {keyed("k", "v")}, acks_mode::all, 1000};
  auto refused = produce(req);
  REQUIRE(refused.ok());   // per record, as Kafka answers per partition
  REQUIRE(refused->results[0].failure.has_value());
  CHECK(refused->results[0].failure->code == errc::not_enough_replicas);
  CHECK(refused->results[0].failure->message.find("nothing was written") != std::string::npos);
  req.acks = acks_mode::leader;
  auto taken = produce(req);
  REQUIRE(taken.ok());
  CHECK_FALSE(taken->results[0].failure.has_value());

  stop();
  open(config);
  retention = nullptr;
  auto reopened = b->admin().describe_broker_configs(0);
  CHECK(find_entry(*reopened, "log.retention.ms")->value == "3000");
  CHECK(find_entry(*reopened, "min.insync.replicas")->value == "2");
  auto cluster_wide = b->admin().describe_broker_configs(cluster_default_broker);
  REQUIRE(cluster_wide->size() == 1);
  CHECK(cluster_wide->front().value == "2000");
  CHECK(topic_config_value(describe_topic().value(), "retention.ms") == "3000");

  // Removing the broker's values falls back to the cluster-wide default, then to the static one.
  REQUIRE(alter(0, {{"log.retention.ms", std::nullopt}, {"min.insync.replicas", std::nullopt}}).ok());
  CHECK(topic_config_value(describe_topic().value(), "retention.ms") == "2000");
  req.acks = acks_mode::all;
  CHECK(produce(req).ok());
  REQUIRE(alter(cluster_default_broker, {{"log.retention.ms", std::nullopt}}).ok());
  CHECK(topic_config_value(describe_topic().value(), "retention.ms") == "1000");
  CHECK(b->admin().describe_broker_configs(cluster_default_broker)->empty());
  stop();
}

TEST_CASE_FIXTURE(fixture, "a quiet compacted log's tombstones go within a cleaner tick of their delete horizon, also behind other compacted logs of its shard") {
  // Issue 27 item 6, the shape: 4,000 records of 200 keys, 20 tombstones, one more
  // record, then no write. Other compacted logs the cleaner has not met yet share every shard
  // (created after the writes, as __consumer_offsets is at a group's first use): before, a tick
  // started one pass per shard and every other log of the shard waited for a later tick, so
  // the quiet log's tombstones could wait ticks times the logs ahead of it.
  broker_config config;
  config.log_cleaner_backoff_ms = 1000;   // the tick
  open(config);
  const std::map<std::string, std::string> compact = {{"cleanup.policy", "compact"}, {"delete.retention.ms", "2000"},
                                                      {"min.cleanable.dirty.ratio", "0.01"}, {"segment.ms", "1000"}};
  REQUIRE(create("quiet", 1, compact).ok());
  auto write = [&](std::vector<produce_record> records) {
    produce_request req{"quiet", std::move(records), acks_mode::all, 1000};
    for (auto& r : req.records) r.partition = model::partition_id{0};
    auto produced = produce(req);
    REQUIRE(produced.ok());
    for (const auto& r : produced->results) REQUIRE(!r.failure);
  };
  for (int round = 0; round < 20; ++round) {
    std::vector<produce_record> records;
    for (int k = 0; k < 200; ++k) records.push_back(keyed("k" + std::to_string(k), "v" + std::to_string(round) + std::string(50, 'x')));
    write(std::move(records));
  }
  std::vector<produce_record> tombstones;
  for (int k = 0; k < 20; ++k) {
    produce_record r = keyed("k" + std::to_string(k), "");
    r.value.reset();
    tombstones.push_back(std::move(r));
  }
  write(std::move(tombstones));
  write({keyed("k199", "last")});
  REQUIRE(create("others", 30, compact).ok());
  const int64_t written_at = clock.now_ms();
  auto tombstones_left = [&] {
    auto fetched = fetch("quiet", 0, 0);
    REQUIRE(fetched.ok());
    return std::count_if(fetched->records.begin(), fetched->records.end(), [](const model::record& r) { return !r.value; });
  };
  // The last segment rolls at the tick once segment.ms old, the next pass keeps the tombstones
  // and gives them a horizon 2000 ms on; the pass after it removes them: a tick past each step.
  const int64_t bound_ms = 1000 + 2 * 1000 + 2000 + 2 * 1000;
  while (tombstones_left() > 0 && clock.now_ms() - written_at <= bound_ms + 10 * 1000) {
    runtime->advance_ms(100);
    runtime->wait_idle();
  }
  INFO("tombstones gone after ", clock.now_ms() - written_at, " ms");
  CHECK(tombstones_left() == 0);
  CHECK(clock.now_ms() - written_at <= bound_ms);
  auto d = call<result<topic_description>>([&](auto done) { b->admin().describe_topic("quiet", std::move(done)); });
  REQUIRE(d.ok());
  CHECK(d->partitions[0].cleaner.tombstones_removed_total == 20);
  stop();
}
