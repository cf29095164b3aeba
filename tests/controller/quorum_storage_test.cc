// quorum_storage: the quorum's files in Kafka's layout. A restart rebuilds the same
// raft::persisted_state; a crash (io::sim_file_system) keeps exactly what was made durable.

#include <doctest/doctest.h>

#include "ringlog/codec/record_batch.h"
#include "ringlog/controller/quorum_storage.h"
#include "ringlog/io/sim_file_system.h"

namespace ringlog::controller {
namespace {

using raft::leader_epoch;
using raft::node_id;
using raft::offset;

const std::vector<node_id> voters = {node_id{1}, node_id{2}, node_id{3}};

raft::entry data(int64_t o, int32_t epoch, std::string_view text) {
  raft::entry e;
  e.offset_ = offset{o};
  e.epoch = leader_epoch{epoch};
  e.payload.assign(text.begin(), text.end());
  return e;
}

raft::entry leader_change(int64_t o, int32_t epoch, int32_t leader) {
  raft::entry e;
  e.offset_ = offset{o};
  e.epoch = leader_epoch{epoch};
  e.type = raft::entry_type::leader_change;
  e.payload = {0, 0, 0, static_cast<uint8_t>(leader), 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3};
  return e;
}

std::unique_ptr<quorum_storage> open(io::file_system& fs, const base::clock& clock) {
  auto s = quorum_storage::open(fs, "/data", clock, "cluster-a", voters);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  return std::move(s).value();
}

}  // namespace

TEST_CASE("file names and quorum-state text are Kafka's") {
  CHECK(snapshot_file_name({offset{100}, leader_epoch{3}}) == "00000000000000000100-0000000003.checkpoint");
  auto id = parse_snapshot_file_name("00000000000000000100-0000000003.checkpoint");
  REQUIRE(id);
  CHECK(id->end_offset == offset{100});
  CHECK(id->epoch == leader_epoch{3});
  CHECK(!parse_snapshot_file_name("00000000000000000100.log"));
  CHECK(!parse_snapshot_file_name("0000000000000000010x-0000000003.checkpoint"));

  raft::quorum_state qs{leader_epoch{7}, node_id{2}, node_id{2}};
  const auto text = quorum_state_json(qs, "cluster-a", voters);
  CHECK(text ==
        "{\"clusterId\":\"cluster-a\",\"leaderId\":2,\"leaderEpoch\":7,\"votedId\":2,\"appliedOffset\":0,"
        "\"currentVoters\":[{\"voterId\":1},{\"voterId\":2},{\"voterId\":3}],\"data_version\":0}");
  auto back = parse_quorum_state_json(text);
  REQUIRE(back.ok());
  CHECK(*back == qs);
  auto missing = parse_quorum_state_json("{\"leaderId\":1}");
  REQUIRE(!missing.ok());
  CHECK(missing.error().message == "quorum-state: field leaderEpoch missing");
}

TEST_CASE("a restart rebuilds the same persisted state: quorum-state, snapshot, entries above it") {
  io::sim_file_system fs;
  base::manual_clock clock(1'000'000);
  raft::persisted_state expected;
  {
    auto s = open(fs, clock);
    CHECK(!s->loaded().had_quorum_state_file);
    CHECK(s->loaded().state.entries.empty());
    expected.quorum = {leader_epoch{2}, node_id{1}, node_id{1}};
    REQUIRE(s->write_quorum_state(expected.quorum).ok());
    std::vector<raft::entry> entries = {leader_change(0, 1, 1), data(1, 1, "a"), data(2, 1, "b"),
                                        leader_change(3, 2, 1), data(4, 2, "c"), data(5, 2, "d")};
    REQUIRE(s->append(entries, clock.now_ms()).ok());
    REQUIRE(s->flush().ok());
    // A diverging suffix goes, another takes its place.
    REQUIRE(s->truncate_suffix(offset{5}).ok());
    REQUIRE(s->append(std::vector<raft::entry>{data(5, 2, "e")}, clock.now_ms()).ok());
    REQUIRE(s->flush().ok());
    // A snapshot of everything below offset 3 lets the log start there.
    expected.snapshot_id = {offset{3}, leader_epoch{1}};
    expected.snapshot_payload = {9, 8, 7};
    REQUIRE(s->save_snapshot(expected.snapshot_id, expected.snapshot_payload).ok());
    REQUIRE(s->delete_prefix(offset{3}).ok());
    expected.entries = {leader_change(3, 2, 1), data(4, 2, "c"), data(5, 2, "e")};
  }
  auto s = open(fs, clock);
  const auto& loaded = s->loaded().state;
  CHECK(s->loaded().had_quorum_state_file);
  CHECK(loaded.quorum == expected.quorum);
  CHECK(loaded.snapshot_id == expected.snapshot_id);
  CHECK(loaded.snapshot_payload == expected.snapshot_payload);
  CHECK(loaded.entries == expected.entries);
}

TEST_CASE("a crash keeps everything fsynced; of the rest at most an intact prefix survives") {
  // sim_file_system::crash keeps, per seed, none, some or a torn part of the unsynced writes.
  bool lost_some = false;  // the crash really dropped unsynced entries for some seed
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    CAPTURE(seed);
    io::sim_file_system fs;
    base::manual_clock clock(1'000'000);
    {
      auto s = open(fs, clock);
      REQUIRE(s->write_quorum_state({leader_epoch{1}, node_id{-1}, node_id{2}}).ok());
      REQUIRE(s->append(std::vector<raft::entry>{data(0, 1, "durable")}, clock.now_ms()).ok());
      REQUIRE(s->flush().ok());
      REQUIRE(s->append(std::vector<raft::entry>{data(1, 1, "unsynced-1"), data(2, 1, "unsynced-2")},
                        clock.now_ms())
                  .ok());
      // The quorum-state write is durable when it returns, even without a log flush.
      REQUIRE(s->write_quorum_state({leader_epoch{2}, node_id{3}, node_id{-1}}).ok());
    }
    fs.crash(seed);
    auto s = open(fs, clock);
    const auto& loaded = s->loaded().state;
    CHECK(loaded.quorum == raft::quorum_state{leader_epoch{2}, node_id{3}, node_id{-1}});
    REQUIRE(!loaded.entries.empty());
    REQUIRE(loaded.entries.size() <= 3);
    CHECK(loaded.entries[0] == data(0, 1, "durable"));
    if (loaded.entries.size() > 1) CHECK(loaded.entries[1] == data(1, 1, "unsynced-1"));
    if (loaded.entries.size() > 2) CHECK(loaded.entries[2] == data(2, 1, "unsynced-2"));
    lost_some |= loaded.entries.size() < 3;
  }
  CHECK(lost_some);
}

TEST_CASE("an installed snapshot restarts the log at its end offset, also past the old log end") {
  io::sim_file_system fs;
  base::manual_clock clock(1'000'000);
  raft::bytes big(quorum_storage::snapshot_record_bytes_max + 10, 0x5a);  // spans two records
  {
    auto s = open(fs, clock);
    REQUIRE(s->append(std::vector<raft::entry>{data(0, 1, "old")}, clock.now_ms()).ok());
    REQUIRE(s->flush().ok());
    REQUIRE(s->install_snapshot({offset{50}, leader_epoch{4}}, big).ok());
    CHECK(s->log_end_offset() == offset{50});
    REQUIRE(s->append(std::vector<raft::entry>{data(50, 4, "new")}, clock.now_ms()).ok());
    REQUIRE(s->flush().ok());
  }
  fs.crash(7);
  auto s = open(fs, clock);
  const auto& loaded = s->loaded().state;
  CHECK(loaded.snapshot_id == raft::offset_and_epoch{offset{50}, leader_epoch{4}});
  CHECK(loaded.snapshot_payload == big);
  REQUIRE(loaded.entries.size() == 1);
  CHECK(loaded.entries[0] == data(50, 4, "new"));
}

TEST_CASE("the single-node broker's metadata log opens: keyed text records at epoch 0, no quorum-state") {
  io::sim_file_system fs;
  base::manual_clock clock(1'000'000);
  {
    storage::log_config config;
    auto log = storage::partition_log::open(fs, "/data/__cluster_metadata-0", config, clock);
    REQUIRE(log.ok());
    for (const char* key : {"topic", "topic", "remove_topic"}) {
      model::record r;
      r.key = model::to_bytes(key);
      r.value = model::to_bytes("name=orders\n");
      auto batch = codec::encode_batch(codec::batch_options{}, std::span<const model::record>(&r, 1));
      REQUIRE(batch.ok());
      REQUIRE((*log)->append(std::move(batch).value(), leader_epoch{0}).ok());
    }
    REQUIRE((*log)->close().ok());
  }
  auto s = open(fs, clock);
  CHECK(!s->loaded().had_quorum_state_file);
  const auto& loaded = s->loaded().state;
  REQUIRE(loaded.entries.size() == 3);
  CHECK(loaded.entries[2].offset_ == offset{2});
  CHECK(loaded.entries[2].epoch == leader_epoch{0});
  CHECK(std::string(loaded.entries[0].payload.begin(), loaded.entries[0].payload.end()) == "name=orders\n");
  REQUIRE(s->loaded().legacy_keys.size() == 3);
  CHECK(model::to_string(s->loaded().legacy_keys.at(2)) == "remove_topic");
}

}  // namespace ringlog::controller
