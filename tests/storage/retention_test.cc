#include <doctest.h>

#include "ringlog/io/sim_file_system.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::storage;
using test::make_batch;

namespace {
constexpr int64_t t0 = 1'700'000'000'000;
constexpr int64_t hour = 3600 * 1000;

log_config retention_config() {
  log_config c;
  c.segment_bytes = 2048;
  c.retention_ms = hour;
  return c;
}
}  // namespace

TEST_CASE("time retention deletes whole expired segments, rolling an idle active one, and keeps the log end offset") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  {
    auto log = partition_log::open(fs, "/d/r-0", retention_config(), clock);
    REQUIRE(log.ok());
    auto& l = *log.value();
    for (int b = 0; b < 40; ++b) REQUIRE(l.append(make_batch(2, b, clock.now_ms()), model::leader_epoch{0}).ok());
    const auto segments_before = l.segments().size();
    CHECK(segments_before >= 3);
    CHECK(l.apply_retention().value() == 0);  // nothing is old yet
    clock.advance_ms(hour + 1);
    auto deleted = l.apply_retention();
    REQUIRE(deleted.ok());
    CHECK(deleted.value() == segments_before);  // every segment, the idle active one included
    CHECK(l.log_start_offset().value() == 80);
    CHECK(l.log_end_offset().value() == 80);
    CHECK(l.size_bytes() == 0);
    auto read = l.read(model::offset{0}, 100, model::offset{80});
    CHECK(read.error().code == errc::offset_out_of_range);
    REQUIRE(l.close().ok());
  }
  SUBCASE("restart after the log was emptied keeps the log end offset: offsets are never reused") {
    auto log = partition_log::open(fs, "/d/r-0", retention_config(), clock);
    REQUIRE(log.ok());
    CHECK(log.value()->log_end_offset().value() == 80);
    CHECK(log.value()->log_start_offset().value() == 80);
    auto r = log.value()->append(make_batch(1, 1, clock.now_ms()), model::leader_epoch{0});
    REQUIRE(r.ok());
    CHECK(r->base_offset.value() == 80);
  }
  SUBCASE("also after a crash") {
    fs.crash(7);
    auto log = partition_log::open(fs, "/d/r-0", retention_config(), clock);
    REQUIRE(log.ok());
    CHECK(log.value()->log_end_offset().value() == 80);
  }
}

TEST_CASE("timestamps far in the future or in seconds do not break time retention") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto log = partition_log::open(fs, "/d/r-1", retention_config(), clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  const int64_t far_future = t0 + 100LL * 365 * 24 * hour;
  const int64_t in_seconds = t0 / 1000;
  for (int b = 0; b < 20; ++b) {
    const int64_t ts = b % 2 == 0 ? far_future : in_seconds;
    REQUIRE(l.append(make_batch(2, b, ts), model::leader_epoch{0}).ok());
  }
  // Seconds-looking timestamps are "already expired" by their own clock: fresh data must stay.
  CHECK(l.apply_retention().value() == 0);
  CHECK(l.log_start_offset().value() == 0);
  clock.advance_ms(hour / 2);
  CHECK(l.apply_retention().value() == 0);
  // Future timestamps must not pin the segments forever.
  clock.advance_ms(hour);
  CHECK(l.apply_retention().value() > 0);
  CHECK(l.log_start_offset().value() == 40);
  // Lookup by time still answers from the record timestamps themselves.
  REQUIRE(l.append(make_batch(1, 99, in_seconds), model::leader_epoch{0}).ok());
  CHECK(l.offset_for_timestamp(in_seconds).value()->found_offset.value() == 40);
}

TEST_CASE("size retention deletes the oldest whole segments beyond retention.bytes, never the active one") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_config c = retention_config();
  c.retention_ms = -1;
  c.retention_bytes = 5000;
  auto log = partition_log::open(fs, "/d/r-2", c, clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  for (int b = 0; b < 100; ++b) REQUIRE(l.append(make_batch(2, b, t0), model::leader_epoch{0}).ok());
  const auto before = l.size_bytes();
  CHECK(before > 5000);
  auto deleted = l.apply_retention();
  REQUIRE(deleted.ok());
  CHECK(deleted.value() > 0);
  CHECK(l.size_bytes() <= 5000 + 2048);
  CHECK(l.size_bytes() >= 5000 - 2048);
  CHECK(l.log_start_offset() == l.segments().front().base_offset);
  CHECK(l.log_end_offset().value() == 200);
}

TEST_CASE("segment.ms rolls an old active segment on the next append") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_config c;
  c.segment_ms = 1000;
  auto log = partition_log::open(fs, "/d/r-3", c, clock);
  REQUIRE(log.ok());
  REQUIRE(log.value()->append(make_batch(1, 1, t0), model::leader_epoch{0}).ok());
  clock.advance_ms(1000);
  REQUIRE(log.value()->append(make_batch(1, 2, t0), model::leader_epoch{0}).ok());
  CHECK(log.value()->segments().size() == 2);
}

TEST_CASE("a compacted log rolls its active segment at max.compaction.lag.ms when below segment.ms (KIP-354)") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_config c;
  c.cleanup_policy = "compact";
  c.max_compaction_lag_ms = 1000;   // segment.ms keeps its 7-day default
  CHECK(c.max_segment_ms() == 1000);
  auto log = partition_log::open(fs, "/d/r-lag", c, clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  REQUIRE(l.append(make_batch(1, 1, t0), model::leader_epoch{0}).ok());
  clock.advance_ms(999);
  CHECK(l.roll_if_idle().value() == false);
  REQUIRE(l.append(make_batch(1, 2, t0), model::leader_epoch{0}).ok());
  CHECK(l.segments().size() == 1);
  clock.advance_ms(1);
  SUBCASE("on the next append") {
    REQUIRE(l.append(make_batch(1, 3, t0), model::leader_epoch{0}).ok());
    CHECK(l.segments().size() == 2);
  }
  SUBCASE("idle: roll_if_idle (the broker's cleaner tick) and the retention check") {
    CHECK(l.roll_if_idle().value() == true);
    CHECK(l.segments().size() == 2);
    CHECK(l.roll_if_idle().value() == false);   // the new active segment is empty
    CHECK(l.apply_retention().value() == 0);    // a compacted log loses nothing to retention
    CHECK(l.segments().size() == 2);
  }
  SUBCASE("only compacted logs: under cleanup.policy=delete max.compaction.lag.ms is not read") {
    c.cleanup_policy = "delete";
    CHECK(c.max_segment_ms() == c.segment_ms);
    l.set_config(c);
    CHECK(l.roll_if_idle().value() == false);
    REQUIRE(l.append(make_batch(1, 3, t0), model::leader_epoch{0}).ok());
    CHECK(l.segments().size() == 1);
  }
}

TEST_CASE("advance_log_start_offset hides records below it and survives restart") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  {
    auto log = partition_log::open(fs, "/d/r-4", retention_config(), clock);
    REQUIRE(log.ok());
    for (int b = 0; b < 30; ++b) REQUIRE(log.value()->append(make_batch(2, b, t0), model::leader_epoch{0}).ok());
    REQUIRE(log.value()->advance_log_start_offset(model::offset{33}).ok());
    CHECK(log.value()->read(model::offset{32}, 10, model::offset{60}).error().code == errc::offset_out_of_range);
    REQUIRE(log.value()->flush().ok());
  }
  fs.crash(1);
  auto log = partition_log::open(fs, "/d/r-4", retention_config(), clock);
  REQUIRE(log.ok());
  CHECK(log.value()->log_start_offset().value() == 33);
}
