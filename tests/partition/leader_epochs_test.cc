// partition_runtime::end_offset_for_leader_epoch (partition.h): OffsetForLeaderEpoch answered from
// the leader's epoch cache, as Kafka's LeaderEpochFileCache.endOffsetFor (KIP-101, KIP-279,
// KIP-320). Before it (breaker, session 37) every epoch below the current one was answered
// undefined, which KIP-320 consumers read as log truncation: they reset by auto.offset.reset
// after each leader change. Also KIP-320's CurrentLeaderEpoch fence and the epoch of an offset.

#include <doctest.h>

#include <map>

#include "partition_fixture.h"

namespace ringlog::partition {
namespace {

/// One replica of "t-0" that this node (1) leads alone.
struct fixture : test::partition_fixture {
  fixture() : partition_fixture("replication", {1}) {}

  /// Appends `count` one-record batches written in leader epoch `epoch`.
  void append(int count, int32_t epoch) {
    for (int i = 0; i < count; ++i) REQUIRE(rt->log->append(one_record_batch(), model::leader_epoch{epoch}).ok());
  }

  /// Leads in `epoch` from the log's end on (as replication.cc begins a leadership).
  void lead_in(int32_t epoch) {
    rt->epoch = model::leader_epoch{epoch};
    rt->epoch_start_offset = rt->log->log_end_offset();
  }

  [[nodiscard]] epoch_end_offset ask(int32_t asked, int32_t current_leader_epoch = -1) const {
    auto r = rt->end_offset_for_leader_epoch(current_leader_epoch, model::leader_epoch{asked});
    REQUIRE(r.ok());
    return r.value();
  }
};

epoch_end_offset ends(int32_t epoch, int64_t end_offset) {
  return epoch_end_offset{model::leader_epoch{epoch}, model::offset{end_offset}};
}

}  // namespace

TEST_CASE("an older epoch ends where the next epoch with records starts; the current one at the log end") {
  fixture f;
  f.append(3, 0);   // offsets 0-2
  f.append(2, 2);   // 3-4
  f.append(2, 5);   // 5-6
  f.lead_in(7);     // no record yet in epoch 7
  CHECK(f.ask(7, 7) == ends(7, 7));
  CHECK(f.ask(6) == ends(5, 7));
  CHECK(f.ask(5) == ends(5, 7));
  CHECK(f.ask(4) == ends(2, 5));
  CHECK(f.ask(2) == ends(2, 5));
  CHECK(f.ask(1) == ends(0, 3));
  CHECK(f.ask(0, 7) == ends(0, 3));
  f.append(1, 7);   // offset 7
  CHECK(f.ask(7) == ends(7, 8));
  CHECK(f.ask(6) == ends(5, 7));
  // Kafka's UNDEFINED: a negative epoch, or one newer than the leader's.
  CHECK(f.ask(-1) == epoch_end_offset{});
  CHECK(f.ask(8) == epoch_end_offset{});
}

TEST_CASE("an epoch older than every cached one ends where the first cached epoch starts (KIP-279)") {
  fixture f;
  f.lead_in(3);
  CHECK(f.ask(1) == ends(1, 0));   // an empty log: this leadership's start
  f.append(4, 3);
  CHECK(f.ask(1) == ends(1, 0));
  CHECK(f.ask(3) == ends(3, 4));
}

TEST_CASE("CurrentLeaderEpoch fences a stale or future epoch before a follower refuses (KIP-320)") {
  fixture f;
  f.append(2, 0);
  f.lead_in(4);
  auto stale = f.rt->end_offset_for_leader_epoch(3, model::leader_epoch{0});
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().code == errc::fenced_leader_epoch);
  auto future = f.rt->end_offset_for_leader_epoch(5, model::leader_epoch{0});
  REQUIRE_FALSE(future.ok());
  CHECK(future.error().code == errc::unknown_leader_epoch);
  f.rt->leader.reset();   // a follower in epoch 4
  auto follower = f.rt->end_offset_for_leader_epoch(4, model::leader_epoch{0});
  REQUIRE_FALSE(follower.ok());
  CHECK(follower.error().code == errc::not_leader_or_follower);
  CHECK(f.rt->end_offset_for_leader_epoch(2, model::leader_epoch{0}).error().code == errc::fenced_leader_epoch);
  CHECK(check_current_leader_epoch(-1, model::leader_epoch{4}, "t-0").ok());
  CHECK(check_current_leader_epoch(4, model::leader_epoch{4}, "t-0").ok());
}

TEST_CASE("the epoch of an offset is the last cached epoch starting at or below it") {
  const std::map<int32_t, model::offset> epochs{{0, model::offset{0}}, {2, model::offset{3}}, {5, model::offset{5}}};
  CHECK(epoch_of_offset(epochs, model::offset{0}) == model::leader_epoch{0});
  CHECK(epoch_of_offset(epochs, model::offset{2}) == model::leader_epoch{0});
  CHECK(epoch_of_offset(epochs, model::offset{3}) == model::leader_epoch{2});
  CHECK(epoch_of_offset(epochs, model::offset{100}) == model::leader_epoch{5});
  CHECK(epoch_of_offset({{2, model::offset{10}}}, model::offset{4}) == model::leader_epoch{-1});
  CHECK(epoch_of_offset({}, model::offset{0}) == model::leader_epoch{-1});
}

}  // namespace ringlog::partition
