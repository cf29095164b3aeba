// TxnOffsetCommit in the group coordinator: offsets of a transaction are held pending, become
// the group's committed offsets when its commit marker lands, are dropped on abort, and the
// pending ones survive a replay of __consumer_offsets.

#include <doctest.h>

#include "ringlog/group/group_coordinator.h"
#include "ringlog/group/offsets_codec.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::group;
using namespace ringlog::group::test;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;
const auto all_groups = [](std::string_view) { return true; };

std::vector<offset_commit> at(const std::string& topic, int32_t p, int64_t next) {
  return {offset_commit{tp(topic, p), offset(next), "m"}};
}

std::optional<int64_t> committed(const group_coordinator& c, const std::string& g, const topic_partition& t) {
  auto r = c.committed_offsets(g);
  if (!r.ok()) return std::nullopt;
  auto it = r->find(t);
  if (it == r->end()) return std::nullopt;
  return it->second.committed.value();
}

}  // namespace

TEST_CASE("transactional offsets are pending until the commit marker, then committed") {
  group_coordinator c(1, 0);
  auto r = c.txn_commit_offsets("g", "", std::nullopt, -1, 42, at("in", 0, 10), t0);
  REQUIRE(r.ok());
  REQUIRE(r->records.size() == 1);
  CHECK(r->records[0].value.has_value());
  CHECK_FALSE(committed(c, "g", tp("in", 0)).has_value());   // not visible yet
  // Another producer's end changes nothing.
  CHECK(c.complete_txn_offsets(7, true, all_groups, t0).empty());
  auto done = c.complete_txn_offsets(42, true, all_groups, t0);
  REQUIRE(done.size() == 2);   // the commit record and the pending key's tombstone
  CHECK(committed(c, "g", tp("in", 0)) == 10);
  CHECK_FALSE(done[1].value.has_value());
  // Ending again is a no-op (a retried marker).
  CHECK(c.complete_txn_offsets(42, true, all_groups, t0).empty());
}

TEST_CASE("a transactional offset is stored as given, negative too (Kafka's TxnOffsetCommit)") {
  group_coordinator c(1, 0);
  REQUIRE(c.txn_commit_offsets("g", "", std::nullopt, -1, 42, at("in", 0, -1), t0).ok());
  REQUIRE(c.complete_txn_offsets(42, true, all_groups, t0).size() == 2);
  CHECK(committed(c, "g", tp("in", 0)) == -1);
}

TEST_CASE("an abort drops the pending offsets and keeps the committed ones") {
  group_coordinator c(1, 0);
  REQUIRE(c.commit_offsets_standalone("g", at("in", 0, 5), t0).ok());
  REQUIRE(c.txn_commit_offsets("g", "", std::nullopt, -1, 42, at("in", 0, 10), t0).ok());
  auto done = c.complete_txn_offsets(42, false, all_groups, t0);
  REQUIRE(done.size() == 1);
  CHECK_FALSE(done[0].value.has_value());
  CHECK(committed(c, "g", tp("in", 0)) == 5);
}

TEST_CASE("only the groups of the marker's partition are completed") {
  group_coordinator c(1, 0);
  REQUIRE(c.txn_commit_offsets("a", "", std::nullopt, -1, 42, at("in", 0, 1), t0).ok());
  REQUIRE(c.txn_commit_offsets("b", "", std::nullopt, -1, 42, at("in", 0, 2), t0).ok());
  c.complete_txn_offsets(42, true, [](std::string_view g) { return g == "a"; }, t0);
  CHECK(committed(c, "a", tp("in", 0)) == 1);
  CHECK_FALSE(committed(c, "b", tp("in", 0)).has_value());
}

TEST_CASE("pending transactional offsets survive a replay; completion records replay too") {
  group_coordinator c(1, 0);
  record_list log;
  auto r = c.txn_commit_offsets("g", "", std::nullopt, -1, 42, at("in", 0, 10), t0);
  REQUIRE(r.ok());
  log.insert(log.end(), r->records.begin(), r->records.end());
  auto r2 = c.txn_commit_offsets("g", "", std::nullopt, -1, 43, at("in", 1, 20), t0);
  REQUIRE(r2.ok());
  log.insert(log.end(), r2->records.begin(), r2->records.end());
  auto done = c.complete_txn_offsets(43, true, all_groups, t0);
  log.insert(log.end(), done.begin(), done.end());

  group_coordinator replayed(2, 0);
  for (const auto& rec : log) REQUIRE(replayed.replay(rec, t0).ok());
  CHECK(committed(replayed, "g", tp("in", 1)) == 20);
  CHECK_FALSE(committed(replayed, "g", tp("in", 0)).has_value());
  // The transaction of producer 42 is still open after the replay: its commit marker lands now.
  auto late = replayed.complete_txn_offsets(42, true, all_groups, t0);
  CHECK(late.size() == 2);
  CHECK(committed(replayed, "g", tp("in", 0)) == 10);
}

TEST_CASE("pending_txn_partitions names every partition an open transaction holds, until its end (KIP-447)") {
  group_coordinator c(1, 0);
  CHECK(c.pending_txn_partitions("g").empty());   // unknown group
  REQUIRE(c.commit_offsets_standalone("g", at("in", 0, 5), t0).ok());
  CHECK(c.pending_txn_partitions("g").empty());   // a plain commit is stable at once
  REQUIRE(c.txn_commit_offsets("g", "", std::nullopt, -1, 42, at("in", 0, 10), t0).ok());
  REQUIRE(c.txn_commit_offsets("g", "", std::nullopt, -1, 43, at("in", 1, 20), t0).ok());
  REQUIRE(c.txn_commit_offsets("other", "", std::nullopt, -1, 44, at("in", 2, 30), t0).ok());
  CHECK(c.pending_txn_partitions("g") == partition_set{tp("in", 0), tp("in", 1)});
  CHECK(committed(c, "g", tp("in", 0)) == 5);   // the older commit stays the committed one meanwhile
  c.complete_txn_offsets(42, false, all_groups, t0);
  CHECK(c.pending_txn_partitions("g") == partition_set{tp("in", 1)});
  c.complete_txn_offsets(43, true, all_groups, t0);
  CHECK(c.pending_txn_partitions("g").empty());
  CHECK(c.pending_txn_partitions("other") == partition_set{tp("in", 2)});
}

TEST_CASE("a transactional commit naming a stale generation of a classic group is fenced (KIP-447)") {
  group_coordinator c(1, 0);
  classic_join_request j;
  j.member_id = "";
  j.client_id = "c";
  j.protocol_type = "consumer";
  j.session_timeout_ms = 10'000;
  j.rebalance_timeout_ms = 10'000;
  j.protocols = {classic_protocol{"range", {}}};
  j.require_known_member_id = false;
  auto joined = c.classic_join("g", j, 1, t0);
  REQUIRE(joined.joins.size() <= 1);
  auto r = c.txn_commit_offsets("g", "someone-else", std::nullopt, 1, 42, at("in", 0, 10), t0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::unknown_member_id);
  CHECK(c.txn_commit_offsets("g", "", std::nullopt, -1, 42, at("in", 0, 10), t0).ok());   // v0-v2: not checked
}

TEST_CASE("transactional offset keys round-trip and clip") {
  const auto key = encode_txn_offset_key("g", tp("in", 3), 77);
  auto k = decode_offsets_topic_key(key);
  REQUIRE(k.ok());
  REQUIRE(std::holds_alternative<txn_offset_key>(*k));
  CHECK(std::get<txn_offset_key>(*k) == txn_offset_key{"g", tp("in", 3), 77});
  for (size_t n = 0; n < key.size(); ++n) CHECK_FALSE(decode_offsets_topic_key(std::span(key.data(), n)).ok());
}
