// The log directory's failure channel (log_dir_failure.h): a failed write, fdatasync, segment roll
// or checkpoint of a partition log is reported once, naming the directory, the operation and the
// error; reads and refusals that are no disk failure are not reported.
#include <doctest.h>

#include <thread>
#include <vector>

#include "ringlog/io/disk_executor.h"
#include "ringlog/io/sim_file_system.h"
#include "ringlog/storage/log_dir_failure.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::storage;
using test::make_batch;

namespace {
constexpr int64_t t0 = 1'700'000'000'000;

/// A channel that records what its handler was given, as a simulation's does.
struct recording_channel {
  std::vector<log_dir_failure> handled;
  log_dir_failure_channel channel{"/data", [this](const log_dir_failure& f) { handled.push_back(f); }};
};

/// The log of /data/`name` on `fs`, reporting to `r`'s channel, with one batch of two records
/// appended (its leader epoch's checkpoint written).
std::unique_ptr<partition_log> reporting_log(io::sim_file_system& fs, const base::clock& clock, recording_channel& r,
                                             const std::string& name) {
  auto log = partition_log::open(fs, "/data/" + name, log_config{}, clock);
  REQUIRE(log.ok());
  log.value()->report_failures_to(&r.channel);
  REQUIRE(log.value()->append(make_batch(2, 0, t0), model::leader_epoch{1}).ok());
  return std::move(log.value());
}

/// One reporting_log "t-0" on a disk of its own.
struct one_log {
  io::sim_file_system fs;
  base::manual_clock clock{t0};
  recording_channel r;
  std::unique_ptr<partition_log> log = reporting_log(fs, clock, r, "t-0");
};
}  // namespace

TEST_CASE("log_dir_failure_channel: the first report reaches the handler once, later ones are counted") {
  recording_channel r;
  CHECK_FALSE(r.channel.offline());
  r.channel.report("append", error{errc::kafka_storage_error, "pwrite /data/t-0/x.log: No space left on device"});
  r.channel.report("fdatasync", error{errc::kafka_storage_error, "fdatasync /data/t-1/x.log: Input/output error"});
  REQUIRE(r.handled.size() == 1);
  CHECK(r.handled[0].log_dir == "/data");
  CHECK(r.handled[0].operation == "append");
  CHECK(r.handled[0].error == "pwrite /data/t-0/x.log: No space left on device");
  CHECK(r.channel.offline());
  CHECK(r.channel.reports() == 2u);
}

TEST_CASE("log_dir_failure_channel: shards reporting at the same time call the handler once") {
  std::atomic<int> calls{0};
  log_dir_failure_channel channel("/data", [&calls](const log_dir_failure&) { calls.fetch_add(1); });
  constexpr int threads = 4;
  std::vector<std::thread> shards;
  for (int i = 0; i < threads; ++i) {
    shards.emplace_back([&channel] {
      for (int k = 0; k < 100; ++k) channel.report("append", error{errc::kafka_storage_error, "ENOSPC"});
    });
  }
  for (auto& t : shards) t.join();
  CHECK(calls.load() == 1);
  CHECK(channel.reports() == static_cast<uint64_t>(threads) * 100u);
}

TEST_CASE("partition_log reports a failed append (ENOSPC) and refuses appends after it") {
  one_log f;
  auto& l = *f.log;
  auto& r = f.r;
  CHECK(r.handled.empty());
  f.fs.inject_failures(io::errc::no_space, 1);
  auto failed = l.append(make_batch(2, 1, t0), model::leader_epoch{1});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == errc::kafka_storage_error);
  REQUIRE(r.handled.size() == 1);
  CHECK(r.handled[0].operation == "append");
  CHECK(r.handled[0].error.find("/data/t-0/") != std::string::npos);
  CHECK(r.handled[0].error.find("No space left on device") != std::string::npos);
  // The log is not served any more (the failure is sticky until a restart recovers it).
  CHECK_FALSE(l.append(make_batch(2, 2, t0), model::leader_epoch{1}).ok());
  CHECK(r.handled.size() == 1);
}

TEST_CASE("partition_log reports a failed follower append, flush and checkpoint by operation") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto leader = partition_log::open(fs, "/data/leader-0", log_config{}, clock);
  REQUIRE(leader.ok());
  REQUIRE(leader.value()->append(make_batch(3, 0, t0), model::leader_epoch{1}).ok());
  auto fetched = leader.value()->read(model::offset{0}, 1 << 20, model::offset{3});
  REQUIRE(fetched.ok());

  SUBCASE("a follower's replicated append") {
    recording_channel r;
    auto follower = partition_log::open(fs, "/data/t-0", log_config{}, clock);
    REQUIRE(follower.ok());
    follower.value()->report_failures_to(&r.channel);
    REQUIRE(follower.value()->begin_leader_epoch(model::leader_epoch{1}).ok());   // its checkpoint written
    fs.inject_failures(io::errc::io_error, 1);
    CHECK_FALSE(follower.value()->append_replicated(fetched->batches).ok());
    REQUIRE(r.handled.size() == 1);
    CHECK(r.handled[0].operation == "append");
  }
  SUBCASE("fdatasync") {
    recording_channel r;
    auto log = reporting_log(fs, clock, r, "t-1");
    fs.inject_failures(io::errc::io_error, 1);
    CHECK_FALSE(log->flush().ok());
    REQUIRE(r.handled.size() == 1);
    CHECK(r.handled[0].operation == "fdatasync");
  }
  SUBCASE("group commit's fdatasync on the disk executor") {
    recording_channel r;
    auto log = reporting_log(fs, clock, r, "t-2");
    auto executor = io::make_posix_disk_executor();
    fs.inject_failures(io::errc::io_error, 1);
    bool answered = false;
    log->flush_async(*executor, [&answered](result<void> done) {
      CHECK_FALSE(done.ok());
      answered = true;
    });
    for (int i = 0; i < 10 && !answered; ++i) executor->poll(std::chrono::milliseconds(100));
    REQUIRE(answered);
    REQUIRE(r.handled.size() == 1);
    CHECK(r.handled[0].operation == "fdatasync");
  }
  SUBCASE("checkpoint") {
    recording_channel r;
    auto log = reporting_log(fs, clock, r, "t-3");
    REQUIRE(log->flush().ok());
    log->set_high_watermark(model::offset{1});
    fs.inject_failures(io::errc::no_space, 1);
    CHECK_FALSE(log->checkpoint().ok());
    REQUIRE(r.handled.size() == 1);
    CHECK(r.handled[0].operation == "checkpoint");
  }
}

TEST_CASE("partition_log does not report what is no disk failure") {
  one_log f;
  auto& l = *f.log;
  auto& r = f.r;
  // A read outside the log, a batch that does not validate, a batch over max.message.bytes.
  CHECK_FALSE(l.read(model::offset{50}, 1024, model::offset{60}).ok());
  model::bytes garbage(64, std::byte{0x5a});
  CHECK_FALSE(l.append(garbage, model::leader_epoch{1}).ok());
  CHECK_FALSE(l.append(make_batch(1, 1, t0, model::compression::none, 2 * 1024 * 1024), model::leader_epoch{1}).ok());
  // A closed log refuses appends as kafka_storage_error, but its directory is fine.
  REQUIRE(l.close().ok());
  CHECK_FALSE(l.append(make_batch(1, 2, t0), model::leader_epoch{1}).ok());
  CHECK(r.handled.empty());
  CHECK(r.channel.reports() == 0u);
}
