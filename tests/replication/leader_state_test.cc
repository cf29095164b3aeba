#include <doctest.h>

#include "ringlog/replication/leader_state.h"

using namespace ringlog;
using replication::leader_state;
using model::offset;

TEST_CASE("high watermark: least log end offset over the ISR, only once every member was heard from") {
  leader_state s(1, {1, 2, 3}, {1, 2, 3}, 0);
  CHECK(s.high_watermark(offset{10}, offset{0}, 1) == offset{0});   // 2 and 3 unknown yet
  CHECK(s.on_fetch(2, offset{10}, offset{10}, 5));
  CHECK(s.high_watermark(offset{10}, offset{0}, 1) == offset{0});   // 3 still unknown
  CHECK(s.on_fetch(3, offset{7}, offset{10}, 6));
  CHECK(s.high_watermark(offset{10}, offset{0}, 1) == offset{7});
  // The leader's own end bounds it (its durable end under fsync).
  CHECK(s.high_watermark(offset{5}, offset{0}, 1) == offset{5});
  // Never backwards.
  CHECK(s.high_watermark(offset{5}, offset{7}, 1) == offset{7});
  // Not a follower: ignored.
  CHECK_FALSE(s.on_fetch(9, offset{100}, offset{10}, 7));
}

TEST_CASE("high watermark holds while the committed ISR is below min.insync.replicas") {
  leader_state s(1, {1, 2, 3}, {1}, 0);
  CHECK(s.high_watermark(offset{10}, offset{3}, 2) == offset{3});
  CHECK(s.high_watermark(offset{10}, offset{3}, 1) == offset{10});   // a lone leader with min 1
  // Negative control of the rule: a follower outside the ISR never holds the high watermark back.
  s.on_fetch(2, offset{4}, offset{10}, 1);
  CHECK(s.high_watermark(offset{10}, offset{3}, 1) == offset{10});
}

TEST_CASE("a follower lagging past replica.lag.time.max.ms leaves the ISR; the leader never does") {
  leader_state s(1, {1, 2, 3}, {1, 2, 3}, 0);
  s.on_fetch(2, offset{10}, offset{10}, 100);
  s.on_fetch(3, offset{10}, offset{10}, 100);
  CHECK_FALSE(s.isr_change(5000, 10'000, offset{10}, offset{10}, offset{0}).has_value());
  // 3 stops fetching; 2 keeps up with every append.
  for (int64_t t = 1000; t <= 20'000; t += 1000) s.on_fetch(2, offset{10 + t / 1000}, offset{10 + t / 1000}, t);
  auto change = s.isr_change(20'000, 10'000, offset{30}, offset{10}, offset{0});
  REQUIRE(change.has_value());
  CHECK(*change == std::vector<int32_t>{1, 2});
  // A follower at the leader's end is never out of sync, however long it was idle (no appends).
  leader_state idle(1, {1, 2}, {1, 2}, 0);
  idle.on_fetch(2, offset{10}, offset{10}, 0);
  CHECK_FALSE(idle.isr_change(60'000, 10'000, offset{10}, offset{10}, offset{0}).has_value());
}

TEST_CASE("caught up at the previous fetch counts (Kafka's updateFetchState)") {
  leader_state s(1, {1, 2}, {1, 2}, 0);
  s.on_fetch(2, offset{0}, offset{5}, 1000);     // behind: the leader had 5
  s.on_fetch(2, offset{5}, offset{9}, 2000);     // reached what the leader had at 1000: caught up at 1000
  CHECK(s.follower(2)->last_caught_up_ms == 1000);
  s.on_fetch(2, offset{9}, offset{9}, 3000);     // at the end: caught up now
  CHECK(s.follower(2)->last_caught_up_ms == 3000);
}

TEST_CASE("a follower that reached the high watermark and the epoch start joins; one change in flight") {
  leader_state s(1, {1, 2, 3}, {1, 2}, 0);
  s.on_fetch(2, offset{20}, offset{20}, 10);
  s.on_fetch(3, offset{15}, offset{20}, 10);
  CHECK_FALSE(s.isr_change(10, 10'000, offset{20}, offset{20}, offset{0}).has_value());   // 3 below the HW
  s.on_fetch(3, offset{20}, offset{20}, 20);
  // Below the epoch start: it may still hold an older leadership's records there.
  CHECK_FALSE(s.isr_change(20, 10'000, offset{20}, offset{20}, offset{25}).has_value());
  auto change = s.isr_change(20, 10'000, offset{20}, offset{20}, offset{10});
  REQUIRE(change.has_value());
  CHECK(*change == std::vector<int32_t>{1, 2, 3});
  s.proposal_sent(*change);
  CHECK(s.proposal_in_flight());
  CHECK_FALSE(s.isr_change(20, 10'000, offset{20}, offset{20}, offset{10}).has_value());
  // Maximal ISR: 3 holds the high watermark back as soon as the expansion is sent (KIP-497).
  s.on_fetch(2, offset{30}, offset{30}, 30);
  CHECK(s.high_watermark(offset{30}, offset{20}, 1) == offset{20});
  s.on_fetch(3, offset{26}, offset{30}, 31);
  CHECK(s.high_watermark(offset{30}, offset{20}, 1) == offset{26});
  s.set_committed({1, 2, 3}, {1, 2, 3}, 40);
  CHECK_FALSE(s.proposal_in_flight());
  CHECK(s.isr() == std::vector<int32_t>{1, 2, 3});
  CHECK(s.follower(3)->log_end_offset == offset{26});   // kept across the commit
  s.proposal_sent({1, 2});
  s.proposal_failed();
  CHECK_FALSE(s.proposal_in_flight());
}

TEST_CASE("divergence (KIP-320): the leader names the epoch and end offset; the follower cuts there") {
  using replication::check_divergence;
  using replication::epoch_end;
  using replication::truncation_offset;
  using model::leader_epoch;
  // Follower: epochs 0@0, 1@50, 3@80 (epoch 3 it wrote as a deposed leader), log end 100.
  // Leader: epochs 0@0, 1@50, 2@70, log end 120. The follower fetches at 100 with epoch 3.
  const epoch_end leader_for_3{{leader_epoch{2}, offset{120}}};   // largest <= 3 is 2, ends at its end
  auto d = check_divergence(3, offset{100}, leader_for_3, offset{0});
  REQUIRE(d.has_value());
  CHECK(d->epoch == 2);
  CHECK(d->end_offset == 120);
  // The follower knows no epoch 2: its largest <= 2 is 1, ending at 80 -> cut at 80.
  const epoch_end follower_for_2{{leader_epoch{1}, offset{80}}};
  CHECK(truncation_offset(*d, follower_for_2, offset{100}, offset{60}) == offset{80});
  // The same epoch on both: cut at the leader's end of it, never past the follower's end.
  auto same = check_divergence(1, offset{75}, epoch_end{{leader_epoch{1}, offset{70}}}, offset{0});
  REQUIRE(same.has_value());
  CHECK(truncation_offset(*same, epoch_end{{leader_epoch{1}, offset{75}}}, offset{75}, offset{40}) == offset{70});
  // The same epoch, ending later on the leader (found by replication_sim): the follower's epoch 0
  // ends at 274 and its records 274..347 are of epoch 1, which the leader never had (the leader
  // kept epoch 0 up to 290 and then began epoch 3 there). Cut at 274, where the follower's epoch
  // 0 ends; cutting at 290 would keep epoch-1 records 274..289 and the same divergence forever.
  auto later = check_divergence(1, offset{348}, epoch_end{{leader_epoch{0}, offset{290}}}, offset{0});
  REQUIRE(later.has_value());
  CHECK(later->epoch == 0);
  CHECK(later->end_offset == 290);
  CHECK(truncation_offset(*later, epoch_end{{leader_epoch{0}, offset{274}}}, offset{348}, offset{200}) == offset{274});
  // No divergence: the epoch is known and ends at or past the fetch offset; or no epoch yet.
  CHECK_FALSE(check_divergence(1, offset{70}, epoch_end{{leader_epoch{1}, offset{70}}}, offset{0}).has_value());
  CHECK_FALSE(check_divergence(-1, offset{0}, epoch_end{}, offset{0}).has_value());
  // The leader knows no epoch that old: epoch 0 ending at its log start, a cut that makes progress.
  auto old = check_divergence(0, offset{30}, epoch_end{}, offset{25});
  REQUIRE(old.has_value());
  CHECK(old->end_offset == 25);
  CHECK(truncation_offset(*old, epoch_end{{leader_epoch{0}, offset{30}}}, offset{30}, offset{10}) == offset{25});
  // Negative control: truncating to the high watermark alone (the rule KIP-101 replaced) would
  // keep the follower's epoch-3 records 80..99 that the leader never had at those offsets.
  CHECK(truncation_offset(*d, follower_for_2, offset{100}, offset{60}) != offset{100});
}

TEST_CASE("KIP-841: a caught-up follower that is fenced or stopping is not proposed; the others still join") {
  // Broker 3 was killed at the leader's end (no appends since: it looks caught up forever), then
  // fenced; broker 4 is a reassignment's new replica that caught up. Proposing 3 was refused
  // (INELIGIBLE_REPLICA) and the same refused proposal kept 4 out of the ISR.
  leader_state s(1, {1, 2, 3, 4}, {1, 2}, 0);
  s.on_fetch(2, offset{10}, offset{10}, 100);
  s.on_fetch(3, offset{10}, offset{10}, 100);
  s.on_fetch(4, offset{10}, offset{10}, 100);
  auto unfiltered = s.isr_change(200, 10'000, offset{10}, offset{10}, offset{0});
  REQUIRE(unfiltered.has_value());
  CHECK(*unfiltered == std::vector<int32_t>{1, 2, 3, 4});
  auto change = s.isr_change(200, 10'000, offset{10}, offset{10}, offset{0}, [](int32_t id) { return id != 3; });
  REQUIRE(change.has_value());
  CHECK(*change == std::vector<int32_t>{1, 2, 4});
  // Nothing eligible to add: no change at all.
  leader_state t(1, {1, 2, 3}, {1, 2}, 0);
  t.on_fetch(2, offset{10}, offset{10}, 100);
  t.on_fetch(3, offset{10}, offset{10}, 100);
  CHECK_FALSE(t.isr_change(200, 10'000, offset{10}, offset{10}, offset{0}, [](int32_t id) { return id != 3; }).has_value());
}

TEST_CASE("low watermark (KIP-107): least log start offset over the leader and its live followers") {
  leader_state s(1, {1, 2, 3}, {1, 2, 3}, 0);
  auto every_one = [](int32_t) { return true; };
  // Followers not heard from in this leadership count as unknown (-1): a DeleteRecords waits.
  CHECK(s.low_watermark(offset{5}, every_one) == offset{-1});
  CHECK(s.on_follower_log_start(2, offset{5}));
  CHECK(s.low_watermark(offset{5}, every_one) == offset{-1});   // 3 still unknown
  CHECK(s.on_follower_log_start(3, offset{3}));
  CHECK(s.low_watermark(offset{5}, every_one) == offset{3});
  CHECK(s.on_follower_log_start(3, offset{5}));
  CHECK(s.low_watermark(offset{5}, every_one) == offset{5});
  // The leader's own log start bounds it.
  CHECK(s.low_watermark(offset{4}, every_one) == offset{4});
  // A fetch that reports no log start (-1) keeps what was known.
  CHECK(s.on_follower_log_start(2, offset{-1}));
  CHECK(s.low_watermark(offset{5}, every_one) == offset{5});
  // A follower on a broker that is not alive (fenced) does not hold it back.
  CHECK(s.on_follower_log_start(2, offset{1}));
  CHECK(s.low_watermark(offset{5}, every_one) == offset{1});
  CHECK(s.low_watermark(offset{5}, [](int32_t id) { return id != 2; }) == offset{5});
  // Not a follower: ignored.
  CHECK_FALSE(s.on_follower_log_start(9, offset{0}));
  // A follower kept across a committed change keeps what it reported.
  s.set_committed({1, 2, 3}, {1, 2}, 10);
  CHECK(s.low_watermark(offset{5}, every_one) == offset{1});
}

TEST_CASE("delete_records_offset (KIP-107): -1 is the high watermark; above it or other negatives are out of range") {
  using replication::delete_records_offset;
  CHECK(delete_records_offset(-1, offset{42}) == offset{42});
  CHECK(delete_records_offset(0, offset{42}) == offset{0});
  CHECK(delete_records_offset(17, offset{42}) == offset{17});
  CHECK(delete_records_offset(42, offset{42}) == offset{42});   // inclusive: every committed record
  CHECK_FALSE(delete_records_offset(43, offset{42}).has_value());
  CHECK_FALSE(delete_records_offset(-2, offset{42}).has_value());
  CHECK(delete_records_offset(-1, offset{0}) == offset{0});      // an empty log: nothing to delete
}

TEST_CASE("KIP-903: what a broker's previous process fetched does not let its new one join the ISR") {
  leader_state s(1, {1, 2, 3}, {1, 2, 3}, 0);
  CHECK(s.on_fetch(2, offset{100}, offset{100}, 10, 40));   // broker 2's process of broker epoch 40
  CHECK(s.on_fetch(3, offset{100}, offset{100}, 10, 41));
  CHECK(s.fetched_under(2, 40));
  // Broker 2 restarts with an empty disk and registers as epoch 50, which takes it out of the ISR.
  s.set_committed({1, 2, 3}, {1, 3}, 20);
  CHECK_FALSE(s.fetched_under(2, 50));   // the leader still knows offset 100, of epoch 40
  auto stale = s.isr_change(30, 30'000, offset{100}, offset{100}, offset{0},
                            [&s](int32_t id) { return s.fetched_under(id, id == 2 ? 50 : 41); });
  CHECK_FALSE(stale.has_value());
  // Its own first fetch names epoch 50 at offset 0: it joins only once it reached the high watermark.
  CHECK(s.on_fetch(2, offset{0}, offset{100}, 40, 50));
  CHECK(s.fetched_under(2, 50));
  auto eligible = [&s](int32_t id) { return s.fetched_under(id, id == 2 ? 50 : 41); };
  CHECK_FALSE(s.isr_change(50, 30'000, offset{100}, offset{100}, offset{0}, eligible).has_value());
  CHECK(s.on_fetch(2, offset{100}, offset{100}, 60, 50));
  auto joined = s.isr_change(70, 30'000, offset{100}, offset{100}, offset{0}, eligible);
  REQUIRE(joined.has_value());
  CHECK(*joined == std::vector<int32_t>{1, 2, 3});
  // Negative control: without the epoch rule the stale offset would have let it join at once.
  leader_state unguarded(1, {1, 2, 3}, {1, 2, 3}, 0);
  unguarded.on_fetch(2, offset{100}, offset{100}, 10, 40);
  unguarded.on_fetch(3, offset{100}, offset{100}, 10, 41);
  unguarded.set_committed({1, 2, 3}, {1, 3}, 20);
  CHECK(unguarded.isr_change(30, 30'000, offset{100}, offset{100}, offset{0}).has_value());
}
