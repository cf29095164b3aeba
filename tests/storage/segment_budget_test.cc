// The broker-wide budget of sealed segments' open files (segment_file_budget.h) and how a
// partition log keeps to it: the breaker of session 31 rolled a segment per batch with
// segment.ms=1 until the broker met its open-file limit and halted.
#include <doctest.h>

#include <string>
#include <vector>

#include "ringlog/io/sim_file_system.h"
#include "ringlog/storage/segment_file_budget.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::storage;
using test::make_batch;

namespace {
constexpr int64_t t0 = 1'700'000'000'000;

/// Every record of `l` from its log start, as values.
std::vector<std::string> values_of(partition_log& l) {
  auto read = l.read(l.log_start_offset(), 1 << 24, l.log_end_offset());
  REQUIRE(read.ok());
  std::vector<std::string> out;
  for (const auto& r : test::records_of(read.value(), l.log_start_offset())) {
    out.emplace_back(reinterpret_cast<const char*>(r.value->data()), r.value->size());
  }
  return out;
}
/// The value make_batch(_, tag, _) gives its record `i` (16 bytes).
std::string value_of(int64_t tag, int i) {
  std::string value = "v" + std::to_string(tag) + ":" + std::to_string(i) + ":";
  while (value.size() < 16) value.push_back(static_cast<char>('a' + (value.size() % 26)));
  return value;
}
}  // namespace

TEST_CASE("segment_file_budget: taken up to its limit, forced past it, given back; refusals warn once an interval") {
  std::vector<std::string> warned;
  segment_file_budget b(2, [&warned](const std::string& what) { warned.push_back(what); }, 1000);
  CHECK(b.try_acquire());
  CHECK(b.try_acquire());
  CHECK_FALSE(b.try_acquire());
  b.force_acquire(3);
  CHECK(b.used() == 5);
  b.release(4);
  CHECK(b.used() == 1);
  CHECK(b.try_acquire());
  CHECK(b.refused("/d/a-0", t0));
  CHECK_FALSE(b.refused("/d/b-0", t0 + 999));
  CHECK(b.refused("/d/c-0", t0 + 1000));
  CHECK(warned == std::vector<std::string>{"/d/a-0", "/d/c-0"});
  CHECK(b.refusals() == 3);
}

TEST_CASE("segment.ms rolls wait while the budget is used up: appends go on into the active segment") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  int warnings = 0;
  segment_file_budget budget(2, [&warnings](const std::string&) { ++warnings; });
  log_config c;
  c.segment_ms = 1;
  {
    auto log = partition_log::open(fs, "/d/tiny-0", c, clock);
    REQUIRE(log.ok());
    auto& l = *log.value();
    l.charge_segments_to(&budget);
    for (int b = 0; b < 50; ++b) {
      REQUIRE(l.append(make_batch(1, b, clock.now_ms()), model::leader_epoch{0}).ok());
      clock.advance_ms(5);
    }
    CHECK(l.segments().size() == 3);   // two sealed (the budget), one active holding the rest
    CHECK(budget.used() == 2);
    CHECK(warnings == 1);              // one line a minute, not one per append
    CHECK(values_of(l).size() == 50);
    CHECK_FALSE(l.roll_if_idle().value());
  }
  CHECK(budget.used() == 0);   // a closed log gives its files back
}

TEST_CASE("a size roll past the budget refuses the append (retriable), and retention gives room back") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  segment_file_budget budget(3);
  log_config c;
  c.segment_bytes = 1024;
  c.retention_ms = 3600 * 1000;
  auto log = partition_log::open(fs, "/d/full-0", c, clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  l.charge_segments_to(&budget);
  int stored = 0;
  result<append_result> last = append_result{};
  for (int b = 0; b < 200 && last.ok(); ++b) {
    last = l.append(make_batch(4, b, clock.now_ms()), model::leader_epoch{0});
    if (last.ok()) ++stored;
  }
  REQUIRE_FALSE(last.ok());
  CHECK(last.error().code == errc::too_many_segments);
  CHECK(last.error().message.find("segment file budget") != std::string::npos);
  CHECK(l.check_usable().ok());   // not a failed log: reads and later appends go on
  CHECK(budget.used() == 3);
  CHECK(values_of(l).size() == static_cast<size_t>(stored) * 4);
  clock.advance_ms(3600 * 1000 + 1);
  REQUIRE(l.apply_retention().ok());
  CHECK(budget.used() == 0);
  CHECK(l.append(make_batch(4, 999, clock.now_ms()), model::leader_epoch{0}).ok());
}

TEST_CASE("segments on disk past the budget are charged at open: the log opens and rolls nothing until room returns") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_config c;
  c.segment_ms = 1;
  {
    auto log = partition_log::open(fs, "/d/many-0", c, clock);
    REQUIRE(log.ok());
    for (int b = 0; b < 10; ++b) {
      REQUIRE(log.value()->append(make_batch(1, b, clock.now_ms()), model::leader_epoch{0}).ok());
      clock.advance_ms(5);
    }
    REQUIRE(log.value()->segments().size() == 10);
    REQUIRE(log.value()->close().ok());
  }
  segment_file_budget budget(4);
  auto log = partition_log::open(fs, "/d/many-0", c, clock);
  REQUIRE(log.ok());
  log.value()->charge_segments_to(&budget);
  CHECK(budget.used() == 9);
  clock.advance_ms(5);
  REQUIRE(log.value()->append(make_batch(1, 10, clock.now_ms()), model::leader_epoch{0}).ok());
  CHECK(log.value()->segments().size() == 10);
  CHECK(values_of(*log.value()).size() == 11);
  REQUIRE(log.value()->advance_log_start_offset(model::offset{8}).ok());
  CHECK(budget.used() == 1);
  clock.advance_ms(5);
  REQUIRE(log.value()->append(make_batch(1, 11, clock.now_ms()), model::leader_epoch{0}).ok());
  CHECK(budget.used() == 2);   // room again: the segment.ms roll was made
}

TEST_CASE("a roll that meets the open-file limit (EMFILE) refuses the append, retriable, and the log goes on after") {
  // Every opening a roll makes may be the one refused: the new .log, its indexes, the producer
  // snapshot, the directory. Whichever it is, the append is refused with too_many_open_files (not
  // a failed log directory), nothing stored is lost, and once files are free again appends and a
  // reopen find every record in order.
  int refused = 0;
  for (int64_t room = 0; room <= 6; ++room) {
    CAPTURE(room);
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    log_config c;
    c.segment_bytes = 1024;
    std::vector<std::string> expected;
    int next = 0;
    auto append = [&](partition_log& l) {
      auto r = l.append(make_batch(4, next, clock.now_ms()), model::leader_epoch{0});
      if (r.ok()) {
        for (int i = 0; i < 4; ++i) expected.push_back(value_of(next, i));
        ++next;
      }
      return r;
    };
    {
      auto log = partition_log::open(fs, "/d/emfile-0", c, clock);
      REQUIRE(log.ok());
      auto& l = *log.value();
      while (l.segments().size() < 2) REQUIRE(append(l).ok());   // one roll made with room
      const size_t segments = l.segments().size();
      fs.set_open_files_max(fs.open_files() + room);
      result<append_result> last = append_result{};
      for (int b = 0; b < 50 && last.ok() && l.segments().size() == segments; ++b) last = append(l);
      if (!last.ok()) {
        ++refused;
        CHECK(last.error().code == errc::too_many_open_files);
        CHECK(last.error().message.find("ulimit -n") != std::string::npos);
        CHECK(l.check_usable().ok());   // not a failed log directory
      }
      fs.set_open_files_max(-1);
      for (int b = 0; b < 20; ++b) REQUIRE(append(l).ok());
      CHECK(values_of(l) == expected);
    }
    auto reopened = partition_log::open(fs, "/d/emfile-0", c, clock);
    REQUIRE(reopened.ok());
    CHECK(values_of(*reopened.value()) == expected);
  }
  // Rooms 0 and 1 are refused (at the new .timeindex, then at the producer snapshot: the sealed
  // segment's index files are closed first, which gives two back); larger rooms roll.
  CHECK(refused >= 2);
}
