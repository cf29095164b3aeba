// metadata_quorum on real threads, files and sockets: one voter (no transport) electing itself,
// committing, snapshotting and restarting; an upgraded single-node directory; three voters over
// the rpc transport on loopback electing a leader, committing, losing the leader and electing a
// new one that commits. Every wait polls with a deadline.

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "ringlog/codec/record_batch.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/controller/quorum_storage.h"
#include "ringlog/rpc/cluster_transport.h"
#include "ringlog/runtime/shard_threads.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::controller {
namespace {

using namespace std::chrono_literals;

/// A state machine that keeps every applied payload as text; its snapshot is those texts joined
/// by '\n'.
class recording_machine final : public quorum_state_machine {
 public:
  void apply(std::span<const committed_entry> entries) override {
    std::lock_guard lock(mutex_);
    for (const auto& e : entries) {
      RINGLOG_ASSERT_OP(e.offset, >=, next_offset_);
      next_offset_ = e.offset + 1;
      std::string text(e.payload.begin(), e.payload.end());
      if (e.legacy_key) text = model::to_string(*e.legacy_key) + ":" + text;
      values_.push_back(text);
    }
  }
  std::vector<uint8_t> snapshot() override {
    std::lock_guard lock(mutex_);
    std::string joined;
    for (const auto& v : values_) joined += v + "\n";
    return {joined.begin(), joined.end()};
  }
  void load_snapshot(std::span<const uint8_t> payload, int64_t end_offset) override {
    std::lock_guard lock(mutex_);
    values_.clear();
    std::string cur;
    for (auto b : payload) {
      if (b == '\n') {
        values_.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(static_cast<char>(b));
      }
    }
    next_offset_ = end_offset;
    ++snapshots_loaded_;
  }
  void on_leader_change(int32_t leader_id, int32_t epoch) override {
    std::lock_guard lock(mutex_);
    leader_changes_.emplace_back(leader_id, epoch);
  }
  void applied_through(int64_t end_offset) override {
    std::lock_guard lock(mutex_);
    RINGLOG_ASSERT_OP(end_offset, >, applied_through_);
    RINGLOG_ASSERT_OP(end_offset, >=, next_offset_);
    applied_through_ = end_offset;
  }
  int64_t applied_through_end() const {
    std::lock_guard lock(mutex_);
    return applied_through_;
  }
  std::vector<std::string> values() const {
    std::lock_guard lock(mutex_);
    return values_;
  }
  int snapshots_loaded() const {
    std::lock_guard lock(mutex_);
    return snapshots_loaded_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> values_;
  int64_t next_offset_ = 0;
  int snapshots_loaded_ = 0;
  int64_t applied_through_ = 0;   // the last applied_through end (0: none yet)
  std::vector<std::pair<int32_t, int32_t>> leader_changes_;
};

template <typename F>
bool wait_for(F done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

std::unique_ptr<runtime::shard_threads> make_runtime(size_t shards) {
  auto r = runtime::shard_threads::create(shards, io::backend_kind::posix, nullptr);
  REQUIRE(r.ok());
  auto rt = std::move(r).value();
  rt->start();
  return rt;
}

struct temp_dir {
  std::string path;
  temp_dir() {
    char pattern[] = "/tmp/ringlog-quorum-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

/// Proposes and waits (bounded) for the outcome.
result<int64_t> propose(metadata_quorum& q, std::string_view text) {
  auto p = std::make_shared<std::promise<result<int64_t>>>();
  auto f = p->get_future();
  q.propose(std::vector<uint8_t>(text.begin(), text.end()), [p](result<int64_t> r) { p->set_value(std::move(r)); });
  REQUIRE(f.wait_for(15s) == std::future_status::ready);
  return f.get();
}

metadata_quorum_config single_voter_config(const std::string& dir) {
  metadata_quorum_config c;
  c.node_id = 1;
  c.voters = {{1, rpc::peer_address{"127.0.0.1", 0}}};
  c.cluster_id = "cluster-a";
  c.election_timeout_ms = 100;
  c.fetch_timeout_ms = 500;
  c.election_backoff_max_ms = 50;
  c.log_dir = dir;
  c.random_seed = 1;
  return c;
}

/// A free loopback port (bound then released; the listener binds it with SO_REUSEADDR).
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

TEST_CASE("one voter elects itself, commits after its own fsync, snapshots, and restarts from its files") {
  temp_dir dir;
  auto rt = make_runtime(1);
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  auto config = single_voter_config(dir.path);
  config.snapshot_interval_entries = 5;
  {
    recording_machine machine;
    metadata_quorum q(config, *fs, *rt, 0, clock, nullptr, machine);
    REQUIRE(q.start().ok());
    REQUIRE(wait_for([&] { return q.leader_id() == 1; }));
    for (int i = 0; i < 12; ++i) {
      auto r = propose(q, "v" + std::to_string(i));
      REQUIRE_MESSAGE(r.ok(), r.error().message);
    }
    CHECK(machine.values().size() == 12);
    // describe() is published right after the event that completed the last proposal.
    CHECK(wait_for([&] {
      auto now = q.describe();
      return now.high_watermark == now.log_end_offset;
    }));
    auto d = q.describe();
    CHECK(d.leader_id == 1);
    CHECK(d.role == "leader");
    REQUIRE(d.voters.size() == 1);
    CHECK(d.voters[0].lag == 0);
    CHECK(d.log_start_offset > 0);  // snapshots moved the log start
    q.stop();
    auto late = propose(q, "after stop");
    REQUIRE(!late.ok());
    CHECK(late.error().code == errc::shutting_down);
  }
  bool has_checkpoint = false;
  bool has_quorum_state = false;
  for (const auto& e : std::filesystem::directory_iterator(dir.path + "/__cluster_metadata-0")) {
    has_checkpoint |= parse_snapshot_file_name(e.path().filename().string()).has_value();
    has_quorum_state |= e.path().filename() == "quorum-state";
  }
  CHECK(has_checkpoint);
  CHECK(has_quorum_state);

  recording_machine machine;
  metadata_quorum q(config, *fs, *rt, 0, clock, nullptr, machine);
  REQUIRE(q.start().ok());
  CHECK(machine.snapshots_loaded() == 1);
  REQUIRE(wait_for([&] { return q.leader_id() == 1 && machine.values().size() == 12; }));
  std::vector<std::string> expected;
  for (int i = 0; i < 12; ++i) expected.push_back("v" + std::to_string(i));
  CHECK(machine.values() == expected);
  CHECK(q.epoch() >= 2);  // a restarted leader comes back in a new epoch
  auto r = propose(q, "v12");
  REQUIRE(r.ok());
  q.stop();
  rt->stop();
}

TEST_CASE("a committed run that ends with a leader change's control entry is reported through applied_through") {
  // The broker's metadata barrier waits until every entry below the quorum's high watermark is
  // applied; apply() never sees control entries, so without applied_through a barrier after an
  // election that no data entry followed waited its whole timeout (the breaker, session 22).
  temp_dir dir;
  auto rt = make_runtime(1);
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  auto config = single_voter_config(dir.path);
  {
    recording_machine machine;
    metadata_quorum q(config, *fs, *rt, 0, clock, nullptr, machine);
    REQUIRE(q.start().ok());
    REQUIRE(wait_for([&] { return q.leader_id() == 1 && q.describe().high_watermark > 0; }));
    // The epoch's LeaderChange is the only committed entry: applied, and said so.
    CHECK(wait_for([&] { return machine.applied_through_end() == q.describe().high_watermark; }));
    CHECK(machine.values().empty());
    REQUIRE(propose(q, "v0").ok());
    q.stop();
  }
  recording_machine machine;
  metadata_quorum q(config, *fs, *rt, 0, clock, nullptr, machine);
  REQUIRE(q.start().ok());
  // Restarted in a new epoch: its LeaderChange follows the data entry v0.
  REQUIRE(wait_for([&] { return q.leader_id() == 1 && machine.values().size() == 1; }));
  CHECK(wait_for([&] { return machine.applied_through_end() == q.describe().high_watermark; }));
  CHECK(machine.applied_through_end() >= 3);   // control, v0, control
  q.stop();
  rt->stop();
}

TEST_CASE("an upgraded single-node directory: the old metadata log is committed history, applied at start") {
  temp_dir dir;
  auto rt = make_runtime(1);
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  {
    storage::log_config config;
    auto log = storage::partition_log::open(*fs, dir.path + "/__cluster_metadata-0", config, clock);
    REQUIRE(log.ok());
    for (const char* key : {"topic", "remove_topic"}) {
      model::record rec;
      rec.key = model::to_bytes(key);
      rec.value = model::to_bytes("name=orders");
      auto batch = codec::encode_batch(codec::batch_options{}, std::span<const model::record>(&rec, 1));
      REQUIRE(batch.ok());
      REQUIRE((*log)->append(std::move(batch).value(), model::leader_epoch{0}).ok());
    }
    REQUIRE((*log)->close().ok());
  }
  recording_machine machine;
  auto config = single_voter_config(dir.path);
  config.election_timeout_ms = 300;  // start() applies the history before the node even exists
  metadata_quorum q(config, *fs, *rt, 0, clock, nullptr, machine);
  REQUIRE(q.start().ok());
  CHECK(machine.values() == std::vector<std::string>{"topic:name=orders", "remove_topic:name=orders"});
  REQUIRE(wait_for([&] { return q.leader_id() == 1; }));
  auto r = propose(q, "binary record");
  REQUIRE(r.ok());
  CHECK(*r >= 3);  // after the two old records and the new epoch's leader change
  REQUIRE(wait_for([&] { return machine.values().size() == 3; }));
  q.stop();
  rt->stop();
}

TEST_CASE(
    "three voters over the cluster transport: elect, commit, lose the leader, elect again, commit; the old leader "
    "restarts and catches up through a snapshot; a resigning leader hands over") {
  temp_dir dir;
  auto rt = make_runtime(3);
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  std::map<int32_t, rpc::peer_address> voters;
  for (int32_t id = 1; id <= 3; ++id) voters[id] = rpc::peer_address{"127.0.0.1", free_port()};

  std::vector<std::unique_ptr<recording_machine>> machines(3);
  std::vector<std::unique_ptr<rpc::cluster_transport>> transports(3);
  std::vector<std::unique_ptr<metadata_quorum>> quorums(3);
  // Starts (or restarts) node i+1 from its directory, on shard i.
  auto boot = [&](size_t i) {
    const int32_t id = static_cast<int32_t>(i + 1);
    auto t = rpc::cluster_transport::create(*rt, i, id, voters.at(id), voters);
    REQUIRE_MESSAGE(t.ok(), t.error().message);
    metadata_quorum_config c;
    c.node_id = id;
    c.voters = voters;
    c.cluster_id = "cluster-a";
    c.election_timeout_ms = 300;
    c.fetch_timeout_ms = 600;
    c.election_backoff_max_ms = 150;
    c.log_dir = dir.path + "/node-" + std::to_string(id);
    c.snapshot_interval_entries = 5;
    machines[i] = std::make_unique<recording_machine>();
    quorums[i] = std::make_unique<metadata_quorum>(c, *fs, *rt, i, clock, t->get(), *machines[i]);
    transports[i] = std::move(t).value();
    REQUIRE(quorums[i]->start().ok());
    transports[i]->start();  // after the quorum registered its handlers
  };
  for (size_t i = 0; i < 3; ++i) boot(i);

  auto agreed_leader = [&](const std::vector<size_t>& alive) -> int32_t {
    const int32_t leader = quorums[alive[0]]->leader_id();
    const int32_t epoch = quorums[alive[0]]->epoch();
    for (size_t i : alive) {
      if (quorums[i]->leader_id() != leader || quorums[i]->epoch() != epoch) return -1;
    }
    if (leader < 0 || quorums[static_cast<size_t>(leader - 1)]->describe().role != "leader") return -1;
    return leader;
  };
  int32_t leader = -1;
  REQUIRE(wait_for([&] { return (leader = agreed_leader({0, 1, 2})) > 0; }));
  const int32_t first_epoch = quorums[static_cast<size_t>(leader - 1)]->epoch();
  MESSAGE("first leader: node " << leader << " epoch " << first_epoch);

  // A follower refuses proposals and names the leader.
  const size_t follower = static_cast<size_t>(leader % 3);
  auto refused = propose(*quorums[follower], "nope");
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == errc::not_leader_or_follower);
  CHECK(refused.error().message.find("the leader is node " + std::to_string(leader)) != std::string::npos);

  std::vector<std::string> expected;
  for (int i = 0; i < 10; ++i) {
    expected.push_back("p" + std::to_string(i));
    auto r = propose(*quorums[static_cast<size_t>(leader - 1)], expected.back());
    REQUIRE_MESSAGE(r.ok(), r.error().message);
  }
  for (auto& m : machines) {
    CHECK(wait_for([&] { return m->values() == expected; }));
  }
  auto d = quorums[static_cast<size_t>(leader - 1)]->describe();
  REQUIRE(d.voters.size() == 3);
  CHECK(wait_for([&] {
    auto now = quorums[static_cast<size_t>(leader - 1)]->describe();
    for (const auto& v : now.voters) {
      if (v.lag != 0 || v.last_fetch_timestamp_ms < 0) return false;
    }
    return true;
  }));

  // The leader dies: its quorum and its transport stop (nothing answers on its port any more).
  const size_t dead = static_cast<size_t>(leader - 1);
  quorums[dead]->stop();
  transports[dead]->stop();
  std::vector<size_t> alive;
  for (size_t i = 0; i < 3; ++i) {
    if (i != dead) alive.push_back(i);
  }
  const auto failover_started = std::chrono::steady_clock::now();
  int32_t next_leader = -1;
  REQUIRE(wait_for([&] {
    next_leader = agreed_leader(alive);
    return next_leader > 0 && next_leader != leader;
  }));
  const auto failover_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - failover_started).count();
  MESSAGE("new leader: node " << next_leader << " after " << failover_ms << " ms");
  CHECK(quorums[static_cast<size_t>(next_leader - 1)]->epoch() > first_epoch);
  expected.push_back("after failover");
  auto r = propose(*quorums[static_cast<size_t>(next_leader - 1)], expected.back());
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  for (size_t i : alive) {
    CHECK(wait_for([&] { return machines[i]->values() == expected; }));
  }

  // More entries while the old leader is down: snapshots move the log start past its log end, so
  // when it returns it must fetch a snapshot (FetchSnapshot) before it can fetch entries.
  for (int i = 0; i < 15; ++i) {
    expected.push_back("q" + std::to_string(i));
    auto more = propose(*quorums[static_cast<size_t>(next_leader - 1)], expected.back());
    REQUIRE_MESSAGE(more.ok(), more.error().message);
  }
  const int64_t leader_log_start = quorums[static_cast<size_t>(next_leader - 1)]->describe().log_start_offset;
  quorums[dead].reset();
  transports[dead].reset();
  boot(dead);
  const int64_t restarted_log_end = quorums[dead]->describe().log_end_offset;
  MESSAGE("restarted node log end " << restarted_log_end << ", leader log start " << leader_log_start);
  CHECK(leader_log_start > restarted_log_end);
  CHECK(wait_for([&] { return machines[dead]->values() == expected; }));
  CHECK(machines[dead]->snapshots_loaded() >= 1);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(wait_for([&] { return quorums[i]->leader_id() == next_leader; }));
  }

  // Controlled shutdown: the leader resigns and another voter leads within the fetch timeout.
  const size_t resigning = static_cast<size_t>(next_leader - 1);
  const int32_t resigned_epoch = quorums[resigning]->epoch();
  quorums[resigning]->resign();
  int32_t successor = -1;
  REQUIRE(wait_for([&] {
    successor = agreed_leader({0, 1, 2});
    return successor > 0 && successor != next_leader && quorums[0]->epoch() > resigned_epoch;
  }));
  expected.push_back("after resign");
  auto last = propose(*quorums[static_cast<size_t>(successor - 1)], expected.back());
  REQUIRE_MESSAGE(last.ok(), last.error().message);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(wait_for([&] { return machines[i]->values() == expected; }));
  }

  for (size_t i = 0; i < 3; ++i) {
    quorums[i]->stop();
    transports[i]->stop();
  }
  rt->stop();
}

}  // namespace ringlog::controller
