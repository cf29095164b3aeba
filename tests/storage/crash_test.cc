// Crash tests: every acknowledged batch (ack = its fdatasync completed) must survive, byte for
// byte, a power loss (simulated file system) or a SIGKILL of the writing process (real files);
// offsets stay dense, no acknowledged offset is ever reused, and the tail is valid.

#include <doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <thread>

#include "ringlog/io/sim_file_system.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::storage;
using test::make_batch;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;

struct splitmix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

/// What the log must still hold: acknowledged batch base offset -> (last offset, CRC).
using acked_map = std::map<int64_t, std::pair<int64_t, uint32_t>>;

void verify_log(partition_log& l, const acked_map& acked, const std::string& context) {
  INFO(context);
  const int64_t acked_end = acked.empty() ? 0 : acked.rbegin()->second.first + 1;
  CHECK(l.log_end_offset().value() >= acked_end);  // never lose or reuse an acknowledged offset
  // Walk the whole log: dense offsets, valid batches.
  model::offset at = l.log_start_offset();
  std::map<int64_t, std::pair<int64_t, uint32_t>> found;
  while (at < l.log_end_offset()) {
    auto r = l.read(at, 1 << 20, l.log_end_offset());
    REQUIRE(r.ok());
    size_t pos = 0;
    while (pos < r->batches.size()) {
      auto h = codec::validate_batch(std::span(r->batches).subspan(pos, codec::decode_header(std::span(r->batches).subspan(pos))->size_bytes()));
      REQUIRE(h.ok());
      REQUIRE(h->base_offset == at);  // dense: each batch starts where the previous ended
      found[h->base_offset.value()] = {h->last_offset().value(), h->crc};
      at = h->last_offset() + 1;
      pos += h->size_bytes();
    }
  }
  for (const auto& [base, expect] : acked) {
    auto it = found.find(base);
    REQUIRE_MESSAGE(it != found.end(), "acknowledged batch at offset " << base << " is missing");
    CHECK(it->second == expect);
  }
}

}  // namespace

TEST_CASE("simulated power loss at seeded moments never loses an acknowledged batch") {
  const uint64_t seeds = 40;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    INFO("replay with seed " << seed);
    splitmix rng{seed};
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    log_config config;
    config.segment_bytes = 1024 + static_cast<int64_t>(rng.below(8192));
    config.index_interval_bytes = static_cast<int32_t>(rng.below(512));
    config.direct_io = seed % 2 == 0;  // both append paths: page cache and O_DIRECT
    acked_map acked;
    for (int round = 0; round < 6; ++round) {
      auto log = partition_log::open(fs, "/data/t-0", config, clock);
      REQUIRE(log.ok());
      auto& l = *log.value();
      verify_log(l, acked, "after crash, seed " + std::to_string(seed) + " round " + std::to_string(round));
      std::vector<std::pair<int64_t, std::pair<int64_t, uint32_t>>> pending;
      const int appends = 1 + static_cast<int>(rng.below(60));
      for (int a = 0; a < appends; ++a) {
        auto batch = make_batch(1 + static_cast<int>(rng.below(5)), a, clock.now_ms(),
                                rng.below(3) == 0 ? model::compression::lz4 : model::compression::none,
                                static_cast<size_t>(rng.below(300)));
        auto r = l.append(batch, model::leader_epoch{round});
        REQUIRE(r.ok());
        auto stored = l.read(r->base_offset, 1, r->last_offset + 1);
        REQUIRE(stored.ok());
        const uint32_t crc = codec::decode_header(stored->batches)->crc;
        pending.push_back({r->base_offset.value(), {r->last_offset.value(), crc}});
        if (rng.below(4) == 0) {
          REQUIRE(l.flush().ok());
          for (auto& p : pending) acked.insert(p);
          pending.clear();
        }
        if (rng.below(20) == 0) REQUIRE(l.apply_retention().ok());
      }
      fs.crash(rng.next());
    }
  }
}

TEST_CASE("group commit: flush_async acknowledges only after the covering fdatasync") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto log = partition_log::open(fs, "/data/g-0", log_config{}, clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  auto executor = io::make_posix_disk_executor();
  int acked = 0;
  REQUIRE(l.append(make_batch(1, 1, t0), model::leader_epoch{0}).ok());
  l.flush_async(*executor, [&](result<void> r) { REQUIRE(r.ok()); ++acked; });
  REQUIRE(l.append(make_batch(1, 2, t0), model::leader_epoch{0}).ok());
  l.flush_async(*executor, [&](result<void> r) { REQUIRE(r.ok()); ++acked; });  // joins the next sync
  CHECK(acked == 0);
  CHECK(fs.unsynced_bytes() > 0);
  for (int i = 0; i < 10 && acked < 2; ++i) executor->poll(std::chrono::milliseconds(100));
  CHECK(acked == 2);
  CHECK(l.recovery_point().value() == 2);
  fs.crash(3);
  auto reopened = partition_log::open(fs, "/data/g-0", log_config{}, clock);
  REQUIRE(reopened.ok());
  CHECK(reopened.value()->log_end_offset().value() == 2);
}

TEST_CASE("SIGKILL of a writing process at seeded moments never loses an acknowledged batch") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/t-0";
  const uint64_t seed = 20261129;
  splitmix rng{seed};
  acked_map acked;
  for (int round = 0; round < 12; ++round) {
    INFO("seed " << seed << " round " << round);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const uint64_t child_seed = rng.next();
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: append forever, report each batch once its fdatasync completed.
      close(fds[0]);
      auto fs = io::make_posix_file_system();
      base::system_clock clock;
      log_config config;
      config.segment_bytes = 64 * 1024;
      config.direct_io = round % 2 == 1;
      auto log = partition_log::open(*fs, path, config, clock);
      if (!log.ok()) _exit(3);
      splitmix child_rng{child_seed};
      for (int a = 0;; ++a) {
        auto batch = make_batch(1 + static_cast<int>(child_rng.below(8)), a, clock.now_ms(), model::compression::none,
                                static_cast<size_t>(child_rng.below(2000)));
        auto r = log.value()->append(batch, model::leader_epoch{0});
        if (!r.ok()) _exit(4);
        auto stored = log.value()->read(r->base_offset, 1, r->last_offset + 1);
        if (!stored.ok()) _exit(5);
        if (!log.value()->flush().ok()) _exit(6);
        char line[96];
        const int n = std::snprintf(line, sizeof(line), "%lld %lld %u\n", static_cast<long long>(r->base_offset.value()),
                                    static_cast<long long>(r->last_offset.value()),
                                    codec::decode_header(stored->batches)->crc);
        if (write(fds[1], line, static_cast<size_t>(n)) != n) _exit(7);
      }
    }
    close(fds[1]);
    FILE* in = fdopen(fds[0], "r");
    REQUIRE(in != nullptr);
    const uint64_t kill_after = 1 + rng.below(200);
    long long base = 0, last = 0;
    unsigned crc = 0;
    uint64_t seen = 0;
    while (seen < kill_after && std::fscanf(in, "%lld %lld %u", &base, &last, &crc) == 3) {
      acked[base] = {last, crc};
      ++seen;
    }
    // A seeded extra delay so the kill lands anywhere in the write/fdatasync cycle.
    std::this_thread::sleep_for(std::chrono::microseconds(rng.below(3000)));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    while (std::fscanf(in, "%lld %lld %u", &base, &last, &crc) == 3) acked[base] = {last, crc};  // acked before death
    fclose(in);
    auto fs = io::make_posix_file_system();
    base::system_clock clock;
    log_config config;
    config.segment_bytes = 64 * 1024;
    auto log = partition_log::open(*fs, path, config, clock);
    REQUIRE(log.ok());
    CHECK(!log.value()->last_recovery().clean_shutdown);
    verify_log(*log.value(), acked, "after SIGKILL round " + std::to_string(round));
  }
  CHECK(acked.size() > 12);
}
