// The partition side of transactions through the broker API (KIP-98) on the one-voter quorum:
// transactional Kafka batches, write_txn_markers (per-partition results, stale epochs refused,
// unknown partitions named), the last stable offset on fetch and list-offsets, read_committed
// decoded reads dropping aborted records and stepping over markers, raw read_committed fetches
// carrying the aborted transactions, and the state across a restart.
#include <doctest.h>

#include <future>

#include "ringlog/broker/broker.h"
#include "ringlog/codec/record_batch.h"
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
  void create(const std::string& name, int32_t partitions) {
    auto made = call<result<topic_description>>(
        [&](auto done) { b->admin().create_topic({name, partitions, std::nullopt, {}, false}, std::move(done)); });
    REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().message));
  }
  result<produce_batches_response> produce(const std::string& topic, int32_t partition, model::bytes batch) {
    produce_batches_request r;
    r.partition = {topic, model::partition_id{partition}};
    r.batches.push_back(std::move(batch));
    return call<result<produce_batches_response>>([&](auto done) { b->produce_batches(std::move(r), std::move(done)); });
  }
  result<std::vector<txn_marker_result>> markers(std::vector<txn_marker> m) {
    return call<result<std::vector<txn_marker_result>>>(
        [&](auto done) { b->write_txn_markers(std::move(m), std::move(done)); });
  }
  result<fetch_response> fetch(const std::string& topic, int32_t partition, int64_t offset, isolation_level isolation,
                               bool raw = false) {
    fetch_request f;
    f.partition = {topic, model::partition_id{partition}};
    f.fetch_offset = model::offset{offset};
    f.isolation = isolation;
    f.raw_batches = raw;
    return call<result<fetch_response>>([&](auto done) { b->fetch(std::move(f), std::move(done)); });
  }
  int64_t latest(const std::string& topic, int32_t partition, isolation_level isolation) {
    list_offsets_request r;
    r.partition = {topic, model::partition_id{partition}};
    r.isolation = isolation;
    auto got = call<result<list_offsets_response>>([&](auto done) { b->list_offsets(std::move(r), std::move(done)); });
    REQUIRE(got.ok());
    REQUIRE(got->found_offset);
    return got->found_offset->value();
  }
  /// Every value a reader sees from offset 0 with `isolation`, following next_fetch_offset.
  std::vector<std::string> read_all(const std::string& topic, int32_t partition, isolation_level isolation) {
    std::vector<std::string> out;
    int64_t at = 0;
    for (int guard = 0; guard < 100; ++guard) {
      auto r = fetch(topic, partition, at, isolation);
      REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
      for (const auto& rec : r->records) out.push_back(model::to_string(*rec.value));
      // Past the last record, and past the markers after it (next_fetch_offset is never behind).
      const int64_t last = r->records.empty() ? at : r->records.back().record_offset.value() + 1;
      CHECK(r->next_fetch_offset.value() >= last);
      const int64_t next = r->next_fetch_offset.value();
      if (next == at) return out;
      at = next;
    }
    FAIL("the reader never reached the end");
    return out;
  }
};

model::bytes txn_batch(int64_t pid, int16_t epoch, int32_t seq, std::vector<std::string> values, bool transactional = true) {
  std::vector<model::record> records;
  for (auto& v : values) {
    model::record r;
    r.timestamp = t0;
    r.value = model::to_bytes(v);
    records.push_back(std::move(r));
  }
  codec::batch_options o;
  o.producer = model::producer_id{pid};
  o.producer_epoch_value = model::producer_epoch{epoch};
  o.base_sequence = model::sequence{seq};
  o.is_transactional = transactional;
  auto encoded = codec::encode_batch(o, records);
  REQUIRE(encoded.ok());
  return std::move(encoded.value());
}

txn_marker end_of(int64_t pid, int16_t epoch, bool commit, std::vector<model::topic_partition> parts) {
  txn_marker m;
  m.producer_id = model::producer_id{pid};
  m.producer_epoch = model::producer_epoch{epoch};
  m.committed = commit;
  m.coordinator_epoch = 0;
  m.partitions = std::move(parts);
  return m;
}

}  // namespace

TEST_CASE_FIXTURE(fixture, "write_txn_markers ends transactions on every partition; read_committed sees committed records only") {
  open();
  create("tx", 2);
  const model::topic_partition p0{"tx", model::partition_id{0}};
  const model::topic_partition p1{"tx", model::partition_id{1}};
  REQUIRE(produce("tx", 0, txn_batch(-1, -1, -1, {"plain-0"}, false)).ok());      // 0
  REQUIRE(produce("tx", 0, txn_batch(7, 0, 0, {"a7-0", "a7-1"})).ok());           // 1-2: aborted below
  REQUIRE(produce("tx", 1, txn_batch(7, 0, 0, {"a7-p1"})).ok());                  // p1 0
  REQUIRE(produce("tx", 0, txn_batch(8, 0, 0, {"c8-0"})).ok());                   // 3: committed below
  REQUIRE(produce("tx", 0, txn_batch(-1, -1, -1, {"plain-1"}, false)).ok());      // 4
  // Open transactions hold the last stable offset at their first offset; uncommitted readers see all.
  CHECK(latest("tx", 0, isolation_level::read_uncommitted) == 5);
  CHECK(latest("tx", 0, isolation_level::read_committed) == 1);
  CHECK(read_all("tx", 0, isolation_level::read_committed) == std::vector<std::string>{"plain-0"});
  CHECK(read_all("tx", 0, isolation_level::read_uncommitted).size() == 5);
  // A producer inside a transaction may not write outside it.
  auto plain = produce("tx", 0, txn_batch(8, 0, 1, {"x"}, false));
  REQUIRE(!plain.ok());
  CHECK(plain.error().code == errc::invalid_txn_state);
  // Clients never write markers themselves.
  codec::batch_options o;
  o.producer = model::producer_id{8};
  o.producer_epoch_value = model::producer_epoch{0};
  auto forged = codec::encode_control_batch(o, {codec::control_type::commit, 0}, t0);
  auto refused = produce("tx", 0, forged.value());
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == errc::invalid_request);

  auto written = markers({end_of(7, 0, false, {p0, p1}), end_of(8, 0, true, {p0, {"missing", model::partition_id{0}}})});
  REQUIRE(written.ok());
  REQUIRE(written->size() == 2);
  CHECK((*written)[0].producer_id.value() == 7);
  REQUIRE((*written)[0].partitions.size() == 2);
  CHECK(!(*written)[0].partitions[0].failure);
  CHECK(!(*written)[0].partitions[1].failure);
  REQUIRE((*written)[1].partitions.size() == 2);
  CHECK(!(*written)[1].partitions[0].failure);
  REQUIRE((*written)[1].partitions[1].failure);
  CHECK((*written)[1].partitions[1].failure->code == errc::unknown_topic_or_partition);
  // Answered once committed: the markers (offsets 5 and 6) are below the high watermark.
  CHECK(latest("tx", 0, isolation_level::read_uncommitted) == 7);
  CHECK(latest("tx", 0, isolation_level::read_committed) == 7);
  CHECK(read_all("tx", 0, isolation_level::read_committed) == std::vector<std::string>{"plain-0", "c8-0", "plain-1"});
  CHECK(read_all("tx", 1, isolation_level::read_committed).empty());
  // Markers are never records: an uncommitted reader gets the five records and steps over them.
  CHECK(read_all("tx", 0, isolation_level::read_uncommitted) ==
        std::vector<std::string>{"plain-0", "a7-0", "a7-1", "c8-0", "plain-1"});
  auto at_marker = fetch("tx", 0, 5, isolation_level::read_uncommitted);
  REQUIRE(at_marker.ok());
  CHECK(at_marker->records.empty());
  CHECK(at_marker->next_fetch_offset.value() == 7);
  // Kafka Fetch (raw): the batches as stored, and the aborted transaction for the client.
  auto raw = fetch("tx", 0, 0, isolation_level::read_committed, true);
  REQUIRE(raw.ok());
  CHECK(!raw->batches.empty());
  CHECK(raw->last_stable_offset.value() == 7);
  REQUIRE(raw->aborted_transactions.size() == 1);
  CHECK(raw->aborted_transactions[0] == aborted_transaction{model::producer_id{7}, model::offset{1}});
  auto raw_uncommitted = fetch("tx", 0, 0, isolation_level::read_uncommitted, true);
  REQUIRE(raw_uncommitted.ok());
  CHECK(raw_uncommitted->aborted_transactions.empty());
  // A marker of an older producer epoch is refused (KIP-890 bumps the epoch at every end).
  auto bumped = markers({end_of(8, 1, true, {p0})});
  REQUIRE(bumped.ok());
  CHECK(!(*bumped)[0].partitions[0].failure);
  auto stale = markers({end_of(8, 0, true, {p0})});
  REQUIRE(stale.ok());
  REQUIRE((*stale)[0].partitions[0].failure);
  CHECK((*stale)[0].partitions[0].failure->code == errc::invalid_producer_epoch);
  auto bad = markers({end_of(-1, 0, true, {p0})});
  REQUIRE(bad.ok());
  CHECK((*bad)[0].partitions[0].failure->code == errc::invalid_request);
  // A new transaction after a restart: the open one and the index come back.
  REQUIRE(produce("tx", 0, txn_batch(9, 0, 0, {"open-9"})).ok());   // 8
  const int64_t stable = latest("tx", 0, isolation_level::read_committed);
  CHECK(stable == 8);
  stop();
  open();
  CHECK(latest("tx", 0, isolation_level::read_committed) == 8);
  CHECK(read_all("tx", 0, isolation_level::read_committed) == std::vector<std::string>{"plain-0", "c8-0", "plain-1"});
  REQUIRE(markers({end_of(9, 0, true, {p0})}).ok());
  CHECK(read_all("tx", 0, isolation_level::read_committed) ==
        std::vector<std::string>{"plain-0", "c8-0", "plain-1", "open-9"});
  stop();
}
