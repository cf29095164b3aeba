// The delay scheduler under a simulated clock, log and target: due order, never early, bounded
// window, and crash/restart at every point of the step protocol with exactly-once delivery.

#include <doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "ringlog/delay/scheduler.h"

using namespace ringlog;
using namespace ringlog::delay;

namespace {

/// A delay partition: delay records (a due time) and checkpoints, all committed.
struct sim_log {
  struct item {
    std::optional<int64_t> due_ms;           // a delay record
    std::optional<delay::checkpoint> saved;  // or a checkpoint
  };
  std::vector<item> items;
  model::offset end() const { return model::offset{static_cast<int64_t>(items.size())}; }
  /// The latest checkpoint, searched from the end as the broker does.
  checkpoint latest_checkpoint() const {
    for (size_t i = items.size(); i-- > 0;) {
      if (items[i].saved) return *items[i].saved;
    }
    return checkpoint{};
  }
};

struct delivery {
  model::offset source{0};
  int64_t at_ms = 0;
};

struct harness {
  sim_log log;
  std::vector<delivery> target;
  int64_t now_ms = 1'000'000;
  std::optional<scheduler> s;
  scheduler_limits limits;
  bool verify_works = true;   // negative control: a verification that never finds the record
  uint64_t verify_lookups = 0;

  void start() { s.emplace(log.latest_checkpoint(), limits); }
  void add(int64_t delay_ms) { log.items.push_back({now_ms + delay_ms, std::nullopt}); }

  bool in_target_since(model::offset o, int64_t since_ms) const {
    return std::any_of(target.begin(), target.end(), [&](const delivery& d) { return d.source == o && d.at_ms >= since_ms; });
  }

  /// Runs the scheduler's effects until it waits. `crash_after_moves`: stop (crash) after this
  /// many moves of a step were delivered, without reporting them. Returns false on a crash.
  bool run(std::optional<size_t> crash_after_moves = std::nullopt, bool fail_checkpoint = false) {
    for (int guard = 0; guard < 100000; ++guard) {
      effects e = s->poll(now_ms, log.end());
      if (e.read_from) {
        std::vector<pending_entry> entries;
        int64_t at = e.read_from->value();
        for (; at < log.end().value() && entries.size() < e.read_records_max; ++at) {
          const auto& it = log.items[static_cast<size_t>(at)];
          if (it.due_ms) entries.push_back({model::offset{at}, *it.due_ms});
        }
        s->on_read(entries, model::offset{at});
        continue;
      }
      if (e.write_checkpoint) {
        if (fail_checkpoint) {
          s->checkpoint_written(false);
          return true;
        }
        log.items.push_back({std::nullopt, *e.write_checkpoint});
        s->checkpoint_written(true);
        continue;
      }
      if (!e.moves.empty()) {
        size_t sent = 0;
        for (const auto& m : e.moves) {
          if (crash_after_moves && sent == *crash_after_moves) return false;
          ++sent;
          const auto due = *log.items[static_cast<size_t>(m.offset.value())].due_ms;
          REQUIRE_MESSAGE(due <= now_ms, "offset ", m.offset.value(), " moved ", due - now_ms, " ms early");
          bool found = false;
          if (m.verify_first) {
            ++verify_lookups;
            found = verify_works && in_target_since(m.offset, m.verify_since_ms);
          }
          if (!found) target.push_back({m.offset, now_ms});
          s->move_done(m.offset, move_outcome::moved, now_ms);
        }
        continue;
      }
      return true;
    }
    FAIL("the scheduler did not settle");
    return true;
  }
  size_t copies_of(int64_t o) const {
    return static_cast<size_t>(std::count_if(target.begin(), target.end(), [&](const delivery& d) { return d.source.value() == o; }));
  }
};

}  // namespace

TEST_CASE("records are moved at their due time, in due order, never early") {
  harness h;
  h.start();
  h.add(300);
  h.add(100);
  h.add(200);
  h.add(0);
  REQUIRE(h.run());
  REQUIRE(h.target.size() == 1);   // the one due now
  CHECK(h.target[0].source.value() == 3);
  for (int step = 0; step < 40; ++step) {
    h.now_ms += 10;
    REQUIRE(h.run());
  }
  REQUIRE(h.target.size() == 4);
  CHECK(h.target[1].source.value() == 1);
  CHECK(h.target[2].source.value() == 2);
  CHECK(h.target[3].source.value() == 0);
  for (const auto& d : h.target) {
    const int64_t due = *h.log.items[static_cast<size_t>(d.source.value())].due_ms;
    CHECK(d.at_ms >= due);
    CHECK(d.at_ms - due < 10);   // at the first tick at or after it
  }
  // Everything moved and checkpointed: the position passed every record and checkpoint.
  CHECK(h.s->window_size() == 0);
  CHECK(h.s->position() == h.log.end());   // its own checkpoints read past too
}

TEST_CASE("the window is bounded and slides; a full moved-ahead list still lets the head go") {
  harness h;
  h.limits.window_records_max = 8;
  h.limits.moved_ahead_max = 2;
  h.limits.move_batch_records_max = 3;
  h.start();
  h.add(1000);                                   // offset 0: the head, due last
  for (int i = 0; i < 20; ++i) h.add(10 + i);    // due soon
  REQUIRE(h.run());
  CHECK(h.s->window_size() <= 8);
  h.now_ms += 100;
  REQUIRE(h.run());
  // Only moved_ahead_max records may pass the undue head.
  CHECK(h.target.size() == 2);
  CHECK(h.s->window_size() <= 8);
  h.now_ms += 1000;
  for (int step = 0; step < 50; ++step) REQUIRE(h.run());
  CHECK(h.target.size() == 21);
  for (int64_t o = 0; o <= 20; ++o) CHECK(h.copies_of(o) == 1);
}

TEST_CASE("a failed checkpoint sends nothing; a retried move is verified before it is sent again") {
  harness h;
  h.start();
  h.add(0);
  REQUIRE(h.run(std::nullopt, true));   // the intent failed
  CHECK(h.target.empty());
  REQUIRE(h.run());
  CHECK(h.target.size() == 1);

  h.add(0);
  const model::offset o = h.log.end() - 1;
  auto e = h.s->poll(h.now_ms, h.log.end());
  REQUIRE(e.read_from);
  h.s->on_read(std::vector<pending_entry>{{o, h.now_ms}}, h.log.end());
  e = h.s->poll(h.now_ms, h.log.end());
  REQUIRE(e.write_checkpoint);
  CHECK(e.write_checkpoint->in_flight == std::vector<model::offset>{o});
  h.log.items.push_back({std::nullopt, *e.write_checkpoint});
  h.s->checkpoint_written(true);
  e = h.s->poll(h.now_ms, o + 1);   // not reading its own checkpoint yet
  REQUIRE(e.moves.size() == 1);
  CHECK_FALSE(e.moves[0].verify_first);
  h.target.push_back({o, h.now_ms});   // it arrived, but the answer was a timeout
  h.s->move_done(o, move_outcome::retry, h.now_ms);
  h.now_ms += h.limits.move_retry_backoff_ms;
  REQUIRE(h.run());
  CHECK(h.copies_of(o.value()) == 1);
  CHECK(h.verify_lookups == 1);
}

namespace {

/// One seeded run: records with random delays arrive over time, the scheduler crashes at random
/// points (between intent and moves, in the middle of the moves, at rest). Returns the number of
/// records delivered other than once.
size_t run_with_crashes(uint64_t seed, bool verify_works, size_t& lateness_max_ms) {
  harness h;
  h.verify_works = verify_works;
  h.limits.window_records_max = 64;
  h.limits.move_batch_records_max = 7;
  h.limits.moved_ahead_max = 16;
  std::mt19937_64 rng(seed);
  h.start();
  size_t added = 0;
  const int64_t start_ms = h.now_ms;
  for (int tick = 0; tick < 3000; ++tick) {
    h.now_ms += 1 + static_cast<int64_t>(rng() % 10);
    const size_t arriving = rng() % 4;
    for (size_t i = 0; i < arriving && tick < 2500; ++i, ++added) h.add(static_cast<int64_t>(rng() % 2000));
    const uint64_t roll = rng() % 100;
    if (roll < 3) {
      h.run(rng() % 8);   // crash in the middle of a step's moves (or at its start)
      h.start();
    } else if (roll < 5) {
      h.start();          // crash at rest (or after an intent that had no moves yet)
    } else {
      REQUIRE(h.run());
    }
  }
  for (int tick = 0; tick < 500; ++tick) {
    h.now_ms += 10;
    REQUIRE(h.run());
  }
  size_t wrong = 0;
  for (size_t o = 0; o < h.log.items.size(); ++o) {
    if (!h.log.items[o].due_ms) continue;
    if (h.copies_of(static_cast<int64_t>(o)) != 1) ++wrong;
  }
  lateness_max_ms = 0;
  for (const auto& d : h.target) {
    const int64_t due = *h.log.items[static_cast<size_t>(d.source.value())].due_ms;
    REQUIRE(d.at_ms >= due);
    lateness_max_ms = std::max(lateness_max_ms, static_cast<size_t>(d.at_ms - due));
  }
  CHECK(added > 3000);
  CHECK(h.now_ms > start_ms);
  return wrong;
}

}  // namespace

TEST_CASE("crashes at any point of a step neither lose nor repeat a record (seeded)") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    size_t lateness = 0;
    CHECK(run_with_crashes(seed, true, lateness) == 0);
  }
}

TEST_CASE("negative control: without the target lookup, crashes repeat records") {
  size_t repeated = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    size_t lateness = 0;
    repeated += run_with_crashes(seed, false, lateness);
  }
  CHECK(repeated > 0);
}

TEST_CASE("records named by an intent ahead of time move at their due time with no checkpoint in front") {
  harness h;
  h.start();
  h.add(500);   // offset 0, within intent_ahead_ms
  h.add(700);   // offset 1
  auto e = h.s->poll(h.now_ms, h.log.end());
  REQUIRE(e.read_from);
  h.s->on_read(std::vector<pending_entry>{{model::offset{0}, h.now_ms + 500}, {model::offset{1}, h.now_ms + 700}},
               h.log.end());
  e = h.s->poll(h.now_ms, h.log.end());
  REQUIRE(e.write_checkpoint);   // the intent, 500 ms before the first is due
  CHECK(e.write_checkpoint->in_flight == std::vector<model::offset>{model::offset{0}, model::offset{1}});
  CHECK(e.moves.empty());
  h.log.items.push_back({std::nullopt, *e.write_checkpoint});
  h.s->checkpoint_written(true);
  CHECK(h.s->poll(h.now_ms, model::offset{2}).moves.empty());   // not due: never early
  h.now_ms += 500;
  e = h.s->poll(h.now_ms, model::offset{2});
  REQUIRE(e.moves.size() == 1);   // straight to the move
  CHECK_FALSE(e.write_checkpoint);
  CHECK(e.moves[0].offset.value() == 0);
  CHECK_FALSE(e.moves[0].verify_first);
  // While the move is out, the next checkpoint may be written; it names no moved record below
  // or at its position and still names the record in flight.
  h.s->move_done(model::offset{0}, move_outcome::moved, h.now_ms);
  e = h.s->poll(h.now_ms, model::offset{2});
  REQUIRE(e.write_checkpoint);
  CHECK(e.write_checkpoint->position.value() == 1);
  CHECK(e.write_checkpoint->in_flight == std::vector<model::offset>{model::offset{1}});
  auto round = decode_checkpoint(encode_checkpoint(*e.write_checkpoint));
  REQUIRE(round.ok());
  h.s->checkpoint_written(true);
  h.now_ms += 200;
  REQUIRE(h.run());
  CHECK(h.copies_of(1) == 1);
}

TEST_CASE("a record due at once waits for its intent, and a failed intent sends nothing") {
  harness h;
  h.start();
  h.add(0);
  auto e = h.s->poll(h.now_ms, h.log.end());
  REQUIRE(e.read_from);
  h.s->on_read(std::vector<pending_entry>{{model::offset{0}, h.now_ms}}, h.log.end());
  e = h.s->poll(h.now_ms, h.log.end());
  REQUIRE(e.write_checkpoint);
  CHECK(h.s->poll(h.now_ms, h.log.end()).moves.empty());   // the intent is not durable yet
  h.s->checkpoint_written(false);
  CHECK(h.s->poll(h.now_ms, h.log.end()).write_checkpoint);   // named again
  h.s->checkpoint_written(true);
  e = h.s->poll(h.now_ms, h.log.end());
  REQUIRE(e.moves.size() == 1);
}
