// Idempotent producer state (KIP-98): the leader's append rules, rebuild from the log on open
// and on followers, snapshot files (round trip, clipped, corrupt, unknown version), retention
// and expiration.
#include <doctest.h>

#include <limits>

#include "ringlog/codec/crc32c.h"
#include "ringlog/io/sim_file_system.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::storage;

namespace {
constexpr int64_t t0 = 1'700'000'000'000;

/// A batch of `count` records of producer `pid`/`epoch` starting at sequence `seq`.
model::bytes idempotent_batch(int64_t pid, int16_t epoch, int32_t seq, int count, int64_t tag,
                              model::timestamp_ms ts = t0) {
  std::vector<model::record> records;
  for (int i = 0; i < count; ++i) {
    model::record r;
    r.timestamp = ts;
    r.value = model::to_bytes("p" + std::to_string(pid) + ":" + std::to_string(tag) + ":" + std::to_string(i));
    records.push_back(std::move(r));
  }
  codec::batch_options o;
  o.producer = model::producer_id{pid};
  o.producer_epoch_value = model::producer_epoch{epoch};
  o.base_sequence = model::sequence{seq};
  auto encoded = codec::encode_batch(o, records);
  REQUIRE(encoded.ok());
  return std::move(encoded.value());
}

codec::batch_header header_of(const model::bytes& batch, int64_t base_offset) {
  auto h = codec::decode_header(batch);
  REQUIRE(h.ok());
  h->base_offset = model::offset{base_offset};
  return h.value();
}

log_config small_segments() {
  log_config c;
  c.segment_bytes = 2048;
  c.index_interval_bytes = 256;
  return c;
}

/// Every record value in the log, in offset order.
std::vector<std::string> values_in(partition_log& l) {
  std::vector<std::string> out;
  auto read = l.read(l.log_start_offset(), 1 << 30, l.log_end_offset());
  REQUIRE(read.ok());
  for (const auto& r : test::records_of(read.value(), l.log_start_offset())) out.push_back(model::to_string(*r.value));
  return out;
}
}  // namespace

TEST_CASE("producer_state: in-order batches pass, a retry of any of the last 5 is a duplicate, older ones are out of order") {
  producer_state s;
  int64_t offset = 0;
  for (int b = 0; b < 8; ++b) {
    auto batch = idempotent_batch(7, 0, b * 3, 3, b);
    auto h = header_of(batch, offset);
    auto checked = s.check(h);
    REQUIRE(checked.ok());
    CHECK(!checked.value());
    s.update(h, t0);
    offset += 3;
  }
  const producer_entry* e = s.find(model::producer_id{7});
  REQUIRE(e != nullptr);
  CHECK(e->batches.size() == producer_batches_retained);
  CHECK(e->batches.back().last_sequence.value() == 23);
  // Retries of batches 3..7 are duplicates with their original offsets.
  for (int b = 3; b < 8; ++b) {
    auto h = header_of(idempotent_batch(7, 0, b * 3, 3, b), 999);
    auto checked = s.check(h);
    REQUIRE(checked.ok());
    REQUIRE(checked.value());
    CHECK(checked.value()->base_offset.value() == b * 3);
    CHECK(checked.value()->last_offset.value() == b * 3 + 2);
  }
  // Batch 2 is no longer remembered: its retry is out of order (Kafka answers the same).
  auto old = s.check(header_of(idempotent_batch(7, 0, 6, 3, 2), 999));
  REQUIRE(!old.ok());
  CHECK(old.error().code == errc::out_of_order_sequence_number);
  // A gap: the next batch must start at 24.
  auto gap = s.check(header_of(idempotent_batch(7, 0, 25, 1, 9), 999));
  REQUIRE(!gap.ok());
  CHECK(gap.error().code == errc::out_of_order_sequence_number);
  CHECK(gap.error().message.find("expects 24") != std::string::npos);
  // Same first sequence, different length: not a duplicate, and not in order either.
  auto overlap = s.check(header_of(idempotent_batch(7, 0, 21, 2, 7), 999));
  REQUIRE(!overlap.ok());
  CHECK(overlap.error().code == errc::out_of_order_sequence_number);
  // The next one in order passes.
  auto next = s.check(header_of(idempotent_batch(7, 0, 24, 1, 9), 999));
  REQUIRE(next.ok());
  CHECK(!next.value());
  // Batches without a producer id are never checked.
  auto plain = test::make_batch(2, 1, t0);
  auto none = s.check(header_of(plain, 0));
  REQUIRE(none.ok());
  CHECK(!none.value());
}

TEST_CASE("producer_state: epochs fence zombies and a new epoch starts at sequence 0") {
  producer_state s;
  s.update(header_of(idempotent_batch(3, 2, 0, 2, 0), 0), t0);
  auto zombie = s.check(header_of(idempotent_batch(3, 1, 2, 1, 1), 0));
  REQUIRE(!zombie.ok());
  CHECK(zombie.error().code == errc::invalid_producer_epoch);
  CHECK(zombie.error().message.find("epoch 2") != std::string::npos);
  auto bumped_late = s.check(header_of(idempotent_batch(3, 3, 5, 1, 1), 0));
  REQUIRE(!bumped_late.ok());
  CHECK(bumped_late.error().code == errc::out_of_order_sequence_number);
  auto bumped = s.check(header_of(idempotent_batch(3, 3, 0, 1, 1), 2));
  REQUIRE(bumped.ok());
  CHECK(!bumped.value());
  s.update(header_of(idempotent_batch(3, 3, 0, 1, 1), 2), t0);
  CHECK(s.find(model::producer_id{3})->epoch.value() == 3);
  CHECK(s.find(model::producer_id{3})->batches.size() == 1);
  // A retry of the old epoch's batch is fenced, not a duplicate.
  auto old_retry = s.check(header_of(idempotent_batch(3, 2, 0, 2, 0), 0));
  REQUIRE(!old_retry.ok());
  CHECK(old_retry.error().code == errc::invalid_producer_epoch);
}

TEST_CASE("producer_state: unknown producers start at any sequence (KIP-360); sequences wrap after INT32_MAX") {
  producer_state s;
  auto h = header_of(idempotent_batch(11, 0, 500, 1, 0), 0);
  auto checked = s.check(h);
  REQUIRE(checked.ok());
  CHECK(!checked.value());
  constexpr int32_t max = std::numeric_limits<int32_t>::max();
  CHECK(last_sequence_of(model::sequence{max - 1}, 3).value() == 1);
  s.update(header_of(idempotent_batch(12, 0, max - 1, 2, 0), 0), t0);
  CHECK(s.find(model::producer_id{12})->batches.back().last_sequence.value() == max);
  auto wrapped = s.check(header_of(idempotent_batch(12, 0, 0, 1, 1), 2));
  REQUIRE(wrapped.ok());
  CHECK(!wrapped.value());
  // A producer id without epoch/sequence is malformed.
  auto h2 = header_of(idempotent_batch(13, 0, 0, 1, 0), 0);
  h2.base_sequence = model::sequence{-1};
  auto bad = s.check(h2);
  REQUIRE(!bad.ok());
  CHECK(bad.error().code == errc::corrupt_message);
}

TEST_CASE("producer_state: past the per-partition bound the least recently used idle producer makes room") {
  // Breaker of session 36: the 10,001st producer of a partition was refused until
  // producer.id.expiration.ms (a day) passed. Now it takes the place of the one that
  // appended least recently (the lowest offset of a last batch), and the bound holds.
  producer_state s;
  for (size_t i = 0; i < producers_per_partition_max; ++i) {
    const auto id = static_cast<int64_t>(i);
    s.update(header_of(idempotent_batch(id, 0, 0, 1, 0, t0 + id), id), t0);
  }
  // Producer 0 writes again: producer 1 is now the least recently used.
  const auto max = static_cast<int64_t>(producers_per_partition_max);
  s.update(header_of(idempotent_batch(0, 0, 1, 1, 1, t0 + max), max), t0);
  auto newcomer = header_of(idempotent_batch(1'000'000, 0, 0, 1, 0, t0 + max + 1), max + 1);
  auto checked = s.check(newcomer);
  REQUIRE(checked.ok());
  CHECK(!checked.value());
  s.update(newcomer, t0);
  CHECK(s.producers().size() == producers_per_partition_max);
  CHECK(s.find(model::producer_id{1}) == nullptr);
  CHECK(s.find(model::producer_id{0}) != nullptr);
  CHECK(s.find(model::producer_id{1'000'000}) != nullptr);
  // The newcomer's retry is still a duplicate; the next newcomer evicts producer 2.
  auto retry = s.check(newcomer);
  REQUIRE(retry.ok());
  CHECK(retry.value());
  s.update(header_of(idempotent_batch(1'000'001, 0, 0, 1, 0, t0 + max + 2), max + 2), t0);
  CHECK(s.find(model::producer_id{2}) == nullptr);
  CHECK(s.producers().size() == producers_per_partition_max);
  // A newcomer whose timestamp is the oldest of all is kept (producer 3 goes, not it).
  s.update(header_of(idempotent_batch(1'000'002, 0, 0, 1, 0, t0 - 5), max + 3), t0);
  CHECK(s.find(model::producer_id{1'000'002}) != nullptr);
  CHECK(s.find(model::producer_id{3}) == nullptr);
  // The snapshot reads back the same state, eviction order included: the next newcomer evicts
  // the same producer in both (producer 4, the least recently appended; the newcomer of t0 - 5
  // appended after it, whatever its timestamp says).
  auto back = producer_state::decode_snapshot(s.encode_snapshot(model::offset{max + 4}));
  REQUIRE(back.ok());
  CHECK(back->second == s);
  auto next = header_of(idempotent_batch(1'000'003, 0, 0, 1, 0, t0 + max + 4), max + 4);
  s.update(next, t0);
  back->second.update(next, t0);
  CHECK(back->second == s);
  CHECK(s.find(model::producer_id{4}) == nullptr);
  CHECK(s.find(model::producer_id{1'000'002}) != nullptr);
  // Expiration still forgets idle producers, oldest first, and keeps the recent ones.
  CHECK(s.remove_expired(t0 + max + 1000, 1000) == producers_per_partition_max - 3);
  CHECK(s.producers().size() == 3);
  CHECK(s.find(model::producer_id{1'000'003}) != nullptr);
}

TEST_CASE("producer_state: eviction follows the log's append order, never the client's record timestamps") {
  // The breaker of session 38 (repro/producer_lru_timestamp.py): 9,999 producers wrote one
  // record each; a live producer wrote sequences 0-4 with CreateTime in 2020; the 10,001st
  // producer evicted the live one (idle_ was keyed by the batches' max timestamp), so its retry
  // of sequence 4 was stored again at a new offset.
  constexpr int64_t t2020 = 1'580'000'000'000;
  producer_state s;
  const auto others = static_cast<int64_t>(producers_per_partition_max) - 1;
  for (int64_t id = 0; id < others; ++id) s.update(header_of(idempotent_batch(id, 0, 0, 1, 0, t0), id), t0);
  constexpr int64_t live = 5'000'000;
  for (int32_t seq = 0; seq < 5; ++seq) s.update(header_of(idempotent_batch(live, 0, seq, 1, seq, t2020), others + seq), t0);
  REQUIRE(s.producers().size() == producers_per_partition_max);
  s.update(header_of(idempotent_batch(6'000'000, 0, 0, 1, 0, t0), others + 5), t0);
  CHECK(s.producers().size() == producers_per_partition_max);
  REQUIRE(s.find(model::producer_id{live}) != nullptr);
  CHECK(s.find(model::producer_id{0}) == nullptr);   // the least recently appended
  auto retry = s.check(header_of(idempotent_batch(live, 0, 4, 1, 4, t2020), others + 6));
  REQUIRE(retry.ok());
  REQUIRE(retry.value());
  CHECK(retry.value()->base_offset.value() == others + 4);   // answered with the stored offset
  // The order survives a snapshot (version 3 stores last_append_offset).
  auto back = producer_state::decode_snapshot(s.encode_snapshot(model::offset{others + 6}));
  REQUIRE(back.ok());
  CHECK(back->second == s);
  CHECK(back->second.find(model::producer_id{live})->last_append_offset == others + 4);
}

TEST_CASE("producer snapshot: version 2 files still read, last_append_offset from the newest batch") {
  producer_state s;
  s.update(header_of(idempotent_batch(7, 0, 0, 3, 0, t0), 40), t0);
  auto v3 = s.encode_snapshot(model::offset{43});
  // The same producer as version 2 wrote it: no last_append_offset (8 bytes after
  // last_timestamp, at header 18 + 8 + 2 + 4 + 8 + 8).
  model::bytes v2(v3.begin(), v3.end());
  v2.erase(v2.begin() + 48, v2.begin() + 56);
  v2[1] = std::byte{2};
  const uint32_t crc = codec::crc32c(std::span<const std::byte>(v2).subspan(6));
  for (int i = 0; i < 4; ++i) v2[2 + static_cast<size_t>(i)] = static_cast<std::byte>(crc >> (8 * (3 - i)));
  CHECK(v2.size() == producer_snapshot_header_bytes + producer_snapshot_producer_bytes_v2 + producer_snapshot_batch_bytes);
  auto old = producer_state::decode_snapshot(v2);
  REQUIRE(old.ok());
  CHECK(old->second == s);
  CHECK(old->second.find(model::producer_id{7})->last_append_offset == 42);
}

TEST_CASE("producer snapshot: round trip, clipped, corrupt CRC, unknown version, trailing bytes") {
  producer_state s;
  s.update(header_of(idempotent_batch(1, 0, 0, 2, 0, t0), 0), t0);
  for (int b = 0; b < 7; ++b) s.update(header_of(idempotent_batch(2, 4, b, 1, b, t0 + b), 2 + b), t0);
  auto bytes = s.encode_snapshot(model::offset{9});
  CHECK(bytes.size() == producer_snapshot_header_bytes + 2 * producer_snapshot_producer_bytes +
                            (1 + producer_batches_retained) * producer_snapshot_batch_bytes);
  auto back = producer_state::decode_snapshot(bytes);
  REQUIRE(back.ok());
  CHECK(back->first.value() == 9);
  CHECK(back->second == s);
  CHECK(back->second.find(model::producer_id{2})->last_timestamp() == t0 + 6);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto clipped = producer_state::decode_snapshot(std::span(bytes).first(cut));
    REQUIRE(!clipped.ok());
    CHECK(clipped.error().code == errc::corrupt_snapshot);
  }
  for (size_t at = 2; at < bytes.size(); ++at) {
    auto flipped = bytes;
    flipped[at] ^= std::byte{0x20};
    auto bad = producer_state::decode_snapshot(flipped);
    REQUIRE(!bad.ok());
    CHECK(bad.error().code == errc::corrupt_snapshot);
  }
  auto future = bytes;
  future[1] = std::byte{4};
  auto unknown = producer_state::decode_snapshot(future);
  REQUIRE(!unknown.ok());
  CHECK(unknown.error().message.find("unknown version 4") != std::string::npos);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  CHECK(!producer_state::decode_snapshot(longer).ok());
  producer_state empty;
  auto e = producer_state::decode_snapshot(empty.encode_snapshot(model::offset{0}));
  REQUIRE(e.ok());
  CHECK(e->second.producers().empty());
}

TEST_CASE("partition_log: a retried batch is answered with its original offsets and stored once") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto log = partition_log::open(fs, "/data/idem-0", small_segments(), clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  REQUIRE(l.append(test::make_batch(2, 0, t0), model::leader_epoch{1}).ok());   // offsets 0, 1
  auto first = l.append(idempotent_batch(5, 0, 0, 3, 0), model::leader_epoch{1});
  REQUIRE(first.ok());
  CHECK(first->base_offset.value() == 2);
  CHECK(!first->duplicate);
  auto retry = l.append(idempotent_batch(5, 0, 0, 3, 0), model::leader_epoch{1});
  REQUIRE(retry.ok());
  CHECK(retry->duplicate);
  CHECK(retry->base_offset.value() == 2);
  CHECK(retry->last_offset.value() == 4);
  CHECK(l.log_end_offset().value() == 5);
  auto gap = l.append(idempotent_batch(5, 0, 4, 1, 1), model::leader_epoch{1});
  REQUIRE(!gap.ok());
  CHECK(gap.error().code == errc::out_of_order_sequence_number);
  CHECK(l.log_end_offset().value() == 5);
  CHECK(values_in(l).size() == 5);
}

TEST_CASE("partition_log: producer state survives a clean restart, a crash (rebuilt from the log) and retention") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto cfg = small_segments();
  cfg.retention_bytes = 4096;
  std::vector<int64_t> bases;
  constexpr int batches = 150;   // about 6 segments of 2 KiB
  {
    auto log = partition_log::open(fs, "/data/r-0", cfg, clock);
    REQUIRE(log.ok());
    auto& l = *log.value();
    for (int b = 0; b < batches; ++b) {
      auto r = l.append(idempotent_batch(9, 0, b * 2, 2, b, t0), model::leader_epoch{0});
      REQUIRE(r.ok());
      bases.push_back(r->base_offset.value());
    }
    CHECK(l.segments().size() > 3);
    CHECK(!l.producer_snapshots().empty());
    REQUIRE(l.close().ok());
  }
  {
    // Clean restart: the snapshot at the log end holds everything, nothing is replayed.
    auto log = partition_log::open(fs, "/data/r-0", cfg, clock);
    REQUIRE(log.ok());
    auto& l = *log.value();
    auto retry = l.append(idempotent_batch(9, 0, (batches - 1) * 2, 2, batches - 1), model::leader_epoch{0});
    REQUIRE(retry.ok());
    CHECK(retry->duplicate);
    CHECK(retry->base_offset.value() == bases.back());
    // Retention deletes every old segment; the producer is still known.
    auto deleted = l.apply_retention();
    REQUIRE(deleted.ok());
    CHECK(deleted.value() > 0);
    CHECK(l.log_start_offset().value() > 0);
    for (auto o : l.producer_snapshots()) CHECK(o >= l.segments().front().base_offset);
    auto again = l.append(idempotent_batch(9, 0, (batches - 2) * 2, 2, batches - 2), model::leader_epoch{0});
    REQUIRE(again.ok());
    CHECK(again->duplicate);
    // New batches after it, then a crash without close: rebuilt from the snapshot + the log.
    REQUIRE(l.append(idempotent_batch(9, 0, batches * 2, 2, batches), model::leader_epoch{0}).ok());
    REQUIRE(l.flush().ok());
  }
  fs.crash(7);
  {
    auto log = partition_log::open(fs, "/data/r-0", cfg, clock);
    REQUIRE(log.ok());
    auto& l = *log.value();
    CHECK(!l.last_recovery().clean_shutdown);
    auto retry = l.append(idempotent_batch(9, 0, batches * 2, 2, batches), model::leader_epoch{0});
    REQUIRE(retry.ok());
    CHECK(retry->duplicate);
    auto gap = l.append(idempotent_batch(9, 0, batches * 2 + 10, 1, batches + 1), model::leader_epoch{0});
    REQUIRE(!gap.ok());
    CHECK(gap.error().code == errc::out_of_order_sequence_number);
    // Idle past producer.id.expiration.ms: forgotten at the next retention pass.
    auto c2 = cfg;
    c2.producer_id_expiration_ms = 1000;
    l.set_config(c2);
    clock.advance_ms(2000);
    REQUIRE(l.apply_retention().ok());
    CHECK(l.producers().producers().empty());
  }
}

TEST_CASE("partition_log: a corrupt newest snapshot is removed and the state rebuilt from an older one and the log") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto cfg = small_segments();
  {
    auto log = partition_log::open(fs, "/data/c-0", cfg, clock);
    REQUIRE(log.ok());
    for (int b = 0; b < 30; ++b) REQUIRE(log.value()->append(idempotent_batch(4, 1, b, 1, b), model::leader_epoch{0}).ok());
    REQUIRE(log.value()->close().ok());
  }
  // Damage the close-time snapshot (the newest).
  auto snaps = [&] {
    std::vector<std::string> out;
    auto names = fs.list_directory("/data/c-0");
    REQUIRE(names.ok());
    for (const auto& n : names.value()) {
      if (n.ends_with(".snapshot")) out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto before = snaps();
  REQUIRE(before.size() >= 2);
  const std::string newest = "/data/c-0/" + before.back();
  auto bytes = io::read_whole_file(fs, newest);
  REQUIRE(bytes.ok());
  bytes.value()[bytes.value().size() - 1] ^= std::byte{1};
  REQUIRE(io::write_file_atomic(fs, newest, bytes.value()).ok());
  auto log = partition_log::open(fs, "/data/c-0", cfg, clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  auto after = snaps();
  CHECK(std::find(after.begin(), after.end(), before.back()) == after.end());
  const producer_entry* e = l.producers().find(model::producer_id{4});
  REQUIRE(e != nullptr);
  CHECK(e->batches.back().last_sequence.value() == 29);
  auto retry = l.append(idempotent_batch(4, 1, 29, 1, 29), model::leader_epoch{0});
  REQUIRE(retry.ok());
  CHECK(retry->duplicate);
  CHECK(retry->base_offset.value() == 29);
}

TEST_CASE("partition_log: followers rebuild the state from replicated batches; truncation rolls it back") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto leader = partition_log::open(fs, "/data/lead-0", small_segments(), clock);
  auto follower = partition_log::open(fs, "/data/follow-0", small_segments(), clock);
  REQUIRE(leader.ok());
  REQUIRE(follower.ok());
  for (int b = 0; b < 10; ++b) REQUIRE(leader.value()->append(idempotent_batch(8, 0, b * 2, 2, b), model::leader_epoch{0}).ok());
  auto read = leader.value()->read(model::offset{0}, 1 << 20, model::offset{20});
  REQUIRE(read.ok());
  REQUIRE(follower.value()->append_replicated(read->batches).ok());
  CHECK(follower.value()->producers() == leader.value()->producers());
  // The follower becomes leader: a retry of the last batch is a duplicate there too.
  auto retry = follower.value()->append(idempotent_batch(8, 0, 18, 2, 9), model::leader_epoch{1});
  REQUIRE(retry.ok());
  CHECK(retry->duplicate);
  CHECK(retry->base_offset.value() == 18);
  // Truncation below the last two batches: they are forgotten, so they are new again.
  REQUIRE(follower.value()->truncate_to(model::offset{16}).ok());
  auto e = follower.value()->producers().find(model::producer_id{8});
  REQUIRE(e != nullptr);
  CHECK(e->batches.back().last_sequence.value() == 15);
  auto resend = follower.value()->append(idempotent_batch(8, 0, 16, 2, 8), model::leader_epoch{1});
  REQUIRE(resend.ok());
  CHECK(!resend->duplicate);
  CHECK(resend->base_offset.value() == 16);
}
