#include <doctest.h>

#include "ringlog/raft/memory_log.h"

using namespace ringlog::raft;

namespace {
entry make(int64_t o, int32_t epoch) { return entry{offset{o}, leader_epoch{epoch}, entry_type::data, {1, 2}}; }
}  // namespace

TEST_CASE("memory_log: end_offset_for_epoch answers like Kafka's epoch cache") {
  memory_log log;
  CHECK(log.end_offset_for_epoch(leader_epoch{0}) == offset_and_epoch{offset{0}, leader_epoch{0}});
  // epochs: 1 at [0,3), 3 at [3,5), 4 at [5,6)
  for (int64_t o = 0; o < 3; ++o) log.append(make(o, 1));
  for (int64_t o = 3; o < 5; ++o) log.append(make(o, 3));
  log.append(make(5, 4));
  CHECK(log.end_offset_for_epoch(leader_epoch{1}) == offset_and_epoch{offset{3}, leader_epoch{1}});
  CHECK(log.end_offset_for_epoch(leader_epoch{2}) == offset_and_epoch{offset{3}, leader_epoch{1}});  // 2 never led
  CHECK(log.end_offset_for_epoch(leader_epoch{3}) == offset_and_epoch{offset{5}, leader_epoch{3}});
  CHECK(log.end_offset_for_epoch(leader_epoch{4}) == offset_and_epoch{offset{6}, leader_epoch{4}});
  CHECK(log.end_offset_for_epoch(leader_epoch{9}) == offset_and_epoch{offset{6}, leader_epoch{4}});
  CHECK(log.end_offset_for_epoch(leader_epoch{0}) == offset_and_epoch{offset{0}, leader_epoch{0}});
}

TEST_CASE("memory_log: truncate_suffix drops whole epochs from the cache") {
  memory_log log;
  for (int64_t o = 0; o < 3; ++o) log.append(make(o, 1));
  for (int64_t o = 3; o < 5; ++o) log.append(make(o, 2));
  log.truncate_suffix(offset{3});
  CHECK(log.log_end_offset() == offset{3});
  CHECK(log.last_epoch() == leader_epoch{1});
  CHECK(log.end_offset_for_epoch(leader_epoch{2}) == offset_and_epoch{offset{3}, leader_epoch{1}});
  log.append(make(3, 5));
  CHECK(log.end_offset_for_epoch(leader_epoch{2}) == offset_and_epoch{offset{3}, leader_epoch{1}});
}

TEST_CASE("memory_log: delete_prefix moves the log start to the snapshot; epochs inside it are unknown") {
  memory_log log;
  for (int64_t o = 0; o < 3; ++o) log.append(make(o, 1));
  for (int64_t o = 3; o < 6; ++o) log.append(make(o, 2));
  log.delete_prefix({offset{4}, leader_epoch{2}});
  CHECK(log.log_start_offset() == offset{4});
  CHECK(log.entries().size() == 2);
  CHECK(log.epoch_at(offset{3}) == leader_epoch{2});  // the snapshot's epoch
  CHECK_FALSE(log.epoch_at(offset{2}).has_value());
  CHECK_FALSE(log.end_offset_for_epoch(leader_epoch{1}).has_value());
  CHECK(log.end_offset_for_epoch(leader_epoch{2}) == offset_and_epoch{offset{6}, leader_epoch{2}});
  log.reset({offset{10}, leader_epoch{3}});
  CHECK(log.log_start_offset() == offset{10});
  CHECK(log.log_end_offset() == offset{10});
  CHECK(log.last_epoch() == leader_epoch{3});
}
