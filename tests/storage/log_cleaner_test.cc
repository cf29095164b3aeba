// Log compaction (log_cleaner.h): each invariant of issue 17 with a test, the offset map, the
// batch filter, and crashes at every step of the swap on the simulated file system.

#include <doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "ringlog/io/sim_file_system.h"
#include "ringlog/storage/log_cleaner.h"
#include "ringlog/storage/offset_map.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::storage;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;
constexpr int64_t hour = 3600 * 1000;
const model::leader_epoch epoch0{0};

struct kv {
  std::string key;
  std::optional<std::string> value;   // nullopt: tombstone
};

model::bytes keyed_batch(const std::vector<kv>& items, int64_t timestamp,
                         model::compression compression = model::compression::none, int64_t producer = -1) {
  std::vector<model::record> records;
  for (const auto& item : items) {
    model::record r;
    r.timestamp = timestamp;
    r.key = model::to_bytes(item.key);
    if (item.value) r.value = model::to_bytes(*item.value);
    records.push_back(std::move(r));
  }
  codec::batch_options options;
  options.compression = compression;
  if (producer >= 0) {
    options.producer = model::producer_id{producer};
    options.producer_epoch_value = model::producer_epoch{3};
    options.base_sequence = model::sequence{7};
  }
  auto encoded = codec::encode_batch(options, records);
  REQUIRE(encoded.ok());
  return std::move(encoded.value());
}

log_config compact_config() {
  log_config c;
  c.segment_bytes = 4096;
  c.cleanup_policy = "compact";
  c.retention_ms = -1;
  c.delete_retention_ms = hour;
  return c;
}

/// Every record of the log from its start, in offset order (tombstones included).
std::vector<model::record> read_all(partition_log& l) {
  auto read = l.read(l.log_start_offset(), 1 << 30, l.log_end_offset());
  REQUIRE(read.ok());
  return test::records_of(read.value(), l.log_start_offset());
}

/// key -> (offset, value) of the latest record of each key as read back.
std::map<std::string, std::pair<int64_t, std::optional<std::string>>> latest_of(const std::vector<model::record>& rs) {
  std::map<std::string, std::pair<int64_t, std::optional<std::string>>> out;
  for (const auto& r : rs) {
    std::optional<std::string> v;
    if (r.value) v = model::to_string(*r.value);
    out[model::to_string(*r.key)] = {r.record_offset.value(), v};
  }
  return out;
}

void check_ascending(const std::vector<model::record>& rs) {
  for (size_t i = 1; i < rs.size(); ++i) REQUIRE(rs[i].record_offset > rs[i - 1].record_offset);
}

/// A changelog: `keys` keys x `versions` versions, one record per key per batch round; keys
/// divisible by `tombstone_every` get a tombstone after their last version. Returns the
/// expected latest value of each key (nullopt: deleted).
std::map<std::string, std::optional<std::string>> write_changelog(partition_log& l, base::manual_clock& clock, int keys,
                                                                  int versions, int tombstone_every,
                                                                  model::compression compression = model::compression::none) {
  std::map<std::string, std::optional<std::string>> expected;
  constexpr int per_batch = 10;
  for (int v = 0; v < versions; ++v) {
    for (int k = 0; k < keys; k += per_batch) {
      std::vector<kv> items;
      for (int j = k; j < std::min(keys, k + per_batch); ++j) {
        const std::string key = "key-" + std::to_string(j);
        const std::string value = "value-" + std::to_string(j) + "-v" + std::to_string(v);
        items.push_back({key, value});
        expected[key] = value;
      }
      REQUIRE(l.append(keyed_batch(items, clock.now_ms(), compression), epoch0).ok());
    }
  }
  if (tombstone_every > 0) {
    for (int k = 0; k < keys; k += tombstone_every) {
      const std::string key = "key-" + std::to_string(k);
      REQUIRE(l.append(keyed_batch({{key, std::nullopt}}, clock.now_ms(), compression), epoch0).ok());
      expected[key] = std::nullopt;
    }
  }
  REQUIRE(l.roll().ok());   // the active segment is never cleaned: close what was written
  l.set_high_watermark(l.log_end_offset());
  return expected;
}

void check_latest_values(partition_log& l, const std::map<std::string, std::optional<std::string>>& expected,
                         bool tombstones_present) {
  auto rs = read_all(l);
  check_ascending(rs);
  auto latest = latest_of(rs);
  for (const auto& [key, value] : expected) {
    INFO("key " << key);
    if (value) {
      REQUIRE(latest.contains(key));
      CHECK(latest[key].second == value);
    } else if (tombstones_present) {
      REQUIRE(latest.contains(key));
      CHECK(!latest[key].second.has_value());
    } else {
      CHECK(!latest.contains(key));
    }
  }
}

}  // namespace

TEST_CASE("offset_map keeps the latest offset per key, refuses a new key when full, and costs 24 bytes a slot") {
  offset_map map(24 * 100);
  CHECK(map.memory_bytes() == 16 * 24);   // small until a pass sizes it
  map.reset_for(1000);
  CHECK(map.capacity() == 75);             // bounded by the memory given
  CHECK(map.memory_bytes() == 2400);
  CHECK(map.put(model::to_bytes("a"), model::offset{5}));
  CHECK(map.put(model::to_bytes("a"), model::offset{3}));   // older: ignored
  CHECK(map.get(model::to_bytes("a")) == model::offset{5});
  CHECK(map.put(model::to_bytes("a"), model::offset{9}));
  CHECK(map.get(model::to_bytes("a")) == model::offset{9});
  CHECK(!map.get(model::to_bytes("b")).has_value());
  CHECK(!map.get(model::bytes{}).has_value());
  size_t accepted = 1;
  for (int i = 0; i < 200; ++i) accepted += map.put(model::to_bytes("k" + std::to_string(i)), model::offset{i}) ? 1 : 0;
  CHECK(accepted == map.capacity());
  CHECK(map.size() == map.capacity());
  CHECK(map.put(model::to_bytes("a"), model::offset{10}));   // a known key still updates when full
  CHECK(!map.put(model::to_bytes("new"), model::offset{11}));
  map.clear();
  CHECK(map.size() == 0);
  map.reset_for(10);   // a small pass uses a small map, within the bound
  CHECK(map.capacity() >= 10);
  CHECK(map.memory_bytes() < 2400);
  map.reset_for(1'000'000);
  CHECK(map.capacity() == 75);
  CHECK(!map.get(model::to_bytes("a")).has_value());
  // Distinct 128-bit hashes for near keys, and the published MurmurHash3 x64-128 vector for "".
  CHECK(murmur3_128(model::to_bytes("key-1")) != murmur3_128(model::to_bytes("key-2")));
  CHECK(murmur3_128({}) == std::pair<uint64_t, uint64_t>{0, 0});
}

TEST_CASE("encode_filtered_batch keeps offsets, producer fields, leader epoch and codec; an empty batch keeps its last offset") {
  for (auto codec_value : {model::compression::none, model::compression::gzip, model::compression::lz4,
                           model::compression::zstd, model::compression::snappy}) {
    auto batch = keyed_batch({{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}, t0, codec_value, 42);
    codec::set_base_offset(batch, model::offset{100});
    codec::set_partition_leader_epoch(batch, model::leader_epoch{7});
    auto header = codec::validate_batch(batch);
    REQUIRE(header.ok());
    auto records = codec::decode_records(batch);
    REQUIRE(records.ok());
    std::vector<model::record> kept{(*records)[1], (*records)[3]};
    auto filtered = codec::encode_filtered_batch(*header, kept);
    REQUIRE(filtered.ok());
    auto h = codec::validate_batch(*filtered);
    REQUIRE(h.ok());
    CHECK(h->base_offset.value() == 100);
    CHECK(h->last_offset().value() == 103);
    CHECK(h->records_count == 2);
    CHECK(h->partition_leader_epoch.value() == 7);
    CHECK(h->producer.value() == 42);
    CHECK(h->producer_epoch_value.value() == 3);
    CHECK(h->base_sequence.value() == 7);
    CHECK(h->compression() == codec_value);
    auto back = codec::decode_records(*filtered);
    REQUIRE(back.ok());
    REQUIRE(back->size() == 2);
    CHECK((*back)[0].record_offset.value() == 101);
    CHECK((*back)[1].record_offset.value() == 103);
    CHECK(model::to_string(*(*back)[1].value) == "4");
    CHECK((*back)[1].timestamp == t0);
    auto empty = codec::encode_filtered_batch(*header, {});
    REQUIRE(empty.ok());
    CHECK(empty->size() == codec::batch_header_bytes);
    auto eh = codec::validate_batch(*empty);
    REQUIRE(eh.ok());
    CHECK(eh->records_count == 0);
    CHECK(eh->last_offset().value() == 103);
    CHECK(eh->producer.value() == 42);
    CHECK(codec::decode_records(*empty)->empty());
  }
}

TEST_CASE("a changelog compacts to the latest value per key: offsets kept with gaps, log end offset unchanged, tombstones until delete.retention.ms") {
  for (auto codec_value : {model::compression::none, model::compression::lz4}) {
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    log_cleaner cleaner(cleaner_config{1 << 20});
    auto opened = partition_log::open(fs, "/d/c-0", compact_config(), clock);
    REQUIRE(opened.ok());
    auto& l = *opened.value();
    auto expected = write_changelog(l, clock, 500, 6, 7, codec_value);
    const auto end_before = l.log_end_offset();
    const auto offsets_before = read_all(l);
    const size_t segments_before = l.segments().size();
    CHECK(segments_before > 10);

    auto stats = cleaner.clean(l);
    REQUIRE(stats.ok());
    CHECK(stats->cleaned);
    CHECK(stats->dirty_ratio == doctest::Approx(1.0));
    CHECK(stats->keys_in_map == 500);
    CHECK(stats->tombstones_removed == 0);   // delete.retention.ms has not passed
    CHECK(l.log_end_offset() == end_before);
    // Each full segment is its own group the first time (grouping goes by the sizes before
    // cleaning, as Kafka's groupSegmentsBySize); the next pass merges the small cleaned ones.
    CHECK(l.segments().size() == segments_before);
    CHECK(l.size_bytes() < stats->bytes_read);
    check_latest_values(l, expected, true);
    auto after = read_all(l);
    CHECK(after.size() == 500);   // one record per key: the latest value or the tombstone
    // Offsets are the ones they had: every record read now was read at the same offset before.
    std::map<int64_t, std::string> before_by_offset;
    for (const auto& r : offsets_before) before_by_offset[r.record_offset.value()] = model::to_string(*r.key);
    for (const auto& r : after) CHECK(before_by_offset.at(r.record_offset.value()) == model::to_string(*r.key));
    // Cleaned segments still end where the segments they replaced ended.
    auto segs = l.segments();
    for (size_t i = 1; i < segs.size(); ++i) CHECK(segs[i].base_offset == segs[i - 1].next_offset);

    // Nothing dirty now: not due, and a forced pass finds nothing to do.
    auto state = cleaner.inspect(l);
    REQUIRE(state.ok());
    CHECK(state->dirty_bytes == 0);
    CHECK(!state->due);

    // After delete.retention.ms the tombstones go, and their keys are gone altogether.
    clock.advance_ms(hour + 1);
    REQUIRE(l.append(keyed_batch({{"key-1", "fresh"}}, clock.now_ms()), epoch0).ok());
    REQUIRE(l.roll().ok());
    l.set_high_watermark(l.log_end_offset());
    expected["key-1"] = "fresh";
    auto second = cleaner.clean(l, force_clean::yes);
    REQUIRE(second.ok());
    CHECK(second->cleaned);
    CHECK(second->tombstones_removed == 72);   // keys 0, 7, ..., 497
    check_latest_values(l, expected, false);
    CHECK(l.segments().size() < segments_before / 2);
    const auto end_after = l.log_end_offset();
    CHECK(end_after == end_before + 1);

    // A restart finds the same log: same end offset, same records.
    auto kept = read_all(l);
    REQUIRE(l.close().ok());
    opened = partition_log::open(fs, "/d/c-0", compact_config(), clock);
    REQUIRE(opened.ok());
    CHECK(opened.value()->log_end_offset() == end_after);
    CHECK(read_all(*opened.value()) == kept);
  }
}

TEST_CASE("the last batch of a segment stays as an empty header, so an unclean restart keeps the log end offset") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto opened = partition_log::open(fs, "/d/e-0", compact_config(), clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  // Segment 1: a, b (offsets 0-1); segment 2: a, b again (2-3); then the active segment: a, b (4-5).
  for (int round = 0; round < 3; ++round) {
    REQUIRE(l.append(keyed_batch({{"a", "x" + std::to_string(round)}, {"b", "y" + std::to_string(round)}}, t0), epoch0).ok());
    REQUIRE(l.roll().ok());
  }
  REQUIRE(l.append(keyed_batch({{"c", "z"}}, t0), epoch0).ok());   // active, never cleaned
  l.set_high_watermark(l.log_end_offset());
  auto stats = cleaner.clean(l, force_clean::yes);
  REQUIRE(stats.ok());
  CHECK(stats->cleaned);
  CHECK(stats->map_end_offset.value() == 6);
  auto rs = read_all(l);
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].record_offset.value() == 4);
  CHECK(rs[1].record_offset.value() == 5);
  CHECK(rs[2].record_offset.value() == 6);
  // Reading from 0 returns the empty headers too: the cleaned segment ends at offset 3.
  auto raw = l.read(model::offset{0}, 1 << 20, l.log_end_offset());
  REQUIRE(raw.ok());
  auto first = codec::decode_header(raw->batches);
  REQUIRE(first.ok());
  CHECK(first->records_count == 0);
  CHECK(first->last_offset().value() == 1);
  // The three small segments were one group: one cleaned segment [0, 6) holding three batches,
  // the first two emptied.
  CHECK(stats->segments_before == 3);
  CHECK(stats->segments_after == 1);
  CHECK(l.segments().front().next_offset.value() == 6);
  // Unclean restart (no close): every segment is scanned, gaps accepted, the end is kept.
  opened.value().reset();
  fs.crash(1);
  opened = partition_log::open(fs, "/d/e-0", compact_config(), clock);
  REQUIRE(opened.ok());
  CHECK(opened.value()->log_end_offset().value() == 7);
  CHECK(read_all(*opened.value()).size() == 3);
}

TEST_CASE("a fetch at an offset inside a gap returns the next record after it") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto opened = partition_log::open(fs, "/d/g-0", compact_config(), clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  // Offsets 0-9: k0..k9; offsets 10-14: k0..k4 again; so 0-4 become a gap.
  std::vector<kv> first, second;
  for (int i = 0; i < 10; ++i) first.push_back({"k" + std::to_string(i), "old"});
  for (int i = 0; i < 5; ++i) second.push_back({"k" + std::to_string(i), "new"});
  REQUIRE(l.append(keyed_batch(first, t0), epoch0).ok());
  REQUIRE(l.append(keyed_batch(second, t0), epoch0).ok());
  REQUIRE(l.roll().ok());
  l.set_high_watermark(l.log_end_offset());
  REQUIRE(cleaner.clean(l, force_clean::yes)->cleaned);
  for (int64_t at = 0; at <= 5; ++at) {
    auto read = l.read(model::offset{at}, 1 << 20, l.log_end_offset());
    REQUIRE(read.ok());
    auto rs = test::records_of(read.value(), model::offset{at});
    REQUIRE(!rs.empty());
    CHECK(rs.front().record_offset.value() == 5);   // the first record at or after the gap
    CHECK(read->next_offset.value() == 15);
  }
}

TEST_CASE("the active segment is never cleaned, nor segments above the high watermark or newer than min.compaction.lag.ms") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto config = compact_config();
  auto opened = partition_log::open(fs, "/d/a-0", config, clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  for (int i = 0; i < 20; ++i) REQUIRE(l.append(keyed_batch({{"k", std::to_string(i)}}, t0), epoch0).ok());
  // Only an active segment (high watermark at its end): nothing cleanable.
  l.set_high_watermark(l.log_end_offset());
  auto stats = cleaner.clean(l, force_clean::yes);
  REQUIRE(stats.ok());
  CHECK(!stats->cleaned);
  CHECK(read_all(l).size() == 20);
  // Rolled, but the high watermark is below the closed segment's end: still nothing.
  REQUIRE(l.roll().ok());
  REQUIRE(l.append(keyed_batch({{"k", "20"}}, t0), epoch0).ok());
  auto reopened = partition_log::open(fs, "/d/a-1", config, clock);
  REQUIRE(reopened.ok());
  auto& l2 = *reopened.value();
  for (int i = 0; i < 20; ++i) REQUIRE(l2.append(keyed_batch({{"k", std::to_string(i)}}, t0), epoch0).ok());
  REQUIRE(l2.roll().ok());
  REQUIRE(l2.append(keyed_batch({{"k", "20"}}, t0), epoch0).ok());
  l2.set_high_watermark(model::offset{10});
  CHECK(!cleaner.clean(l2, force_clean::yes)->cleaned);
  l2.set_high_watermark(l2.log_end_offset());
  // min.compaction.lag.ms: records of t0 are too new at t0 + 1 s with a one-minute lag.
  config.min_compaction_lag_ms = 60'000;
  l2.set_config(config);
  clock.advance_ms(1000);
  auto state = cleaner.inspect(l2);
  REQUIRE(state.ok());
  CHECK(state->first_uncleanable_offset.value() == 0);
  CHECK(!cleaner.clean(l2, force_clean::yes)->cleaned);
  clock.advance_ms(60'000);
  state = cleaner.inspect(l2);
  REQUIRE(state.ok());
  CHECK(state->first_uncleanable_offset.value() == 20);
  auto cleaned = cleaner.clean(l2, force_clean::yes);
  REQUIRE(cleaned.ok());
  CHECK(cleaned->cleaned);
  auto rs = read_all(l2);
  REQUIRE(rs.size() == 2);   // offset 19 (the latest of the cleaned segment) and 20 (active)
  CHECK(rs[0].record_offset.value() == 19);
  CHECK(rs[1].record_offset.value() == 20);
}

TEST_CASE("min.cleanable.dirty.ratio and max.compaction.lag.ms decide when a pass is due") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto config = compact_config();
  config.min_cleanable_dirty_ratio = 0.9;
  auto opened = partition_log::open(fs, "/d/r-0", config, clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  write_changelog(l, clock, 100, 3, 0);
  auto first = cleaner.clean(l);   // all dirty: ratio 1
  REQUIRE(first.ok());
  CHECK(first->cleaned);
  // A small dirty tail on a large clean head: below 0.9.
  REQUIRE(l.append(keyed_batch({{"key-1", "again"}}, clock.now_ms()), epoch0).ok());
  REQUIRE(l.roll().ok());
  l.set_high_watermark(l.log_end_offset());
  auto state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(state->dirty_ratio < 0.9);
  CHECK(state->dirty_ratio > 0.0);
  CHECK(!state->due);
  CHECK(!cleaner.clean(l)->cleaned);
  // max.compaction.lag.ms passed: due whatever the ratio.
  config.max_compaction_lag_ms = 10'000;
  l.set_config(config);
  clock.advance_ms(10'001);
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(state->max_lag_passed);
  CHECK(state->due);
  CHECK(cleaner.clean(l)->cleaned);
  // A delete-only log is never cleaned.
  config.cleanup_policy = "delete";
  l.set_config(config);
  CHECK(!cleaner.clean(l, force_clean::yes)->cleaned);
}

TEST_CASE("a dedupe buffer smaller than the key count cleans in several passes, each bounded, to the same result") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_cleaner cleaner(cleaner_config{24 * 64});   // 48 keys per pass
  auto opened = partition_log::open(fs, "/d/m-0", compact_config(), clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  auto expected = write_changelog(l, clock, 200, 4, 0);
  const auto end = l.log_end_offset();
  int passes = 0;
  model::offset previous_end{0};
  while (true) {
    auto stats = cleaner.clean(l, force_clean::yes);
    REQUIRE(stats.ok());
    if (!stats->cleaned) break;
    CHECK(stats->keys_in_map <= cleaner.map().capacity());
    CHECK(stats->map_end_offset > previous_end);   // every pass makes progress
    previous_end = stats->map_end_offset;
    check_latest_values(l, expected, true);         // and never loses a latest value
    REQUIRE(++passes < 100);
  }
  CHECK(passes > 3);
  CHECK(read_all(l).size() == 200);
  CHECK(l.log_end_offset() == end);
}

TEST_CASE("compact,delete: retention deletes only segments compaction left without records, never a key's latest value") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto config = compact_config();
  config.cleanup_policy = "compact,delete";
  config.retention_ms = hour;
  config.retention_bytes = 1;   // far too small: size retention wants every segment gone
  auto opened = partition_log::open(fs, "/d/cd-0", config, clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  // Old keys written once at t0 (their only copy), then a churning key rewritten many times.
  REQUIRE(l.append(keyed_batch({{"once-a", "1"}, {"once-b", "2"}}, t0), epoch0).ok());
  REQUIRE(l.roll().ok());
  for (int i = 0; i < 200; ++i) REQUIRE(l.append(keyed_batch({{"churn", std::to_string(i)}}, t0), epoch0).ok());
  REQUIRE(l.roll().ok());
  l.set_high_watermark(l.log_end_offset());
  clock.advance_ms(2 * hour);
  CHECK(l.apply_retention().value() == 0);   // plain retention never deletes from a compacted log
  const auto segments_before = l.segments().size();
  auto stats = cleaner.clean(l, force_clean::yes);
  REQUIRE(stats.ok());
  CHECK(stats->cleaned);
  CHECK(stats->segments_deleted == 0);   // the first segment holds once-a/once-b: kept
  auto latest = latest_of(read_all(l));
  CHECK(latest["once-a"].second == "1");
  CHECK(latest["once-b"].second == "2");
  CHECK(latest["churn"].second == "199");
  CHECK(l.segments().size() <= segments_before);
  // Once both keys are deleted and their tombstones expire, the emptied segments may go.
  REQUIRE(l.append(keyed_batch({{"once-a", std::nullopt}, {"once-b", std::nullopt}, {"churn", std::nullopt}}, clock.now_ms()), epoch0).ok());
  REQUIRE(l.roll().ok());
  l.set_high_watermark(l.log_end_offset());
  const auto end = l.log_end_offset();
  REQUIRE(cleaner.clean(l, force_clean::yes)->cleaned);   // tombstones written now: kept
  CHECK(!cleaner.inspect(l)->due);
  clock.advance_ms(2 * hour);
  auto state = cleaner.inspect(l);   // nothing dirty, but the kept tombstones expired (KIP-534)
  REQUIRE(state.ok());
  CHECK(state->dirty_bytes == 0);
  CHECK(state->tombstones_due);
  CHECK(state->due);
  auto last = cleaner.clean(l);
  REQUIRE(last.ok());
  CHECK(last->tombstones_removed == 3);
  CHECK(last->segments_deleted >= 1);
  CHECK(read_all(l).empty());
  CHECK(l.log_end_offset() == end);
  CHECK(l.log_start_offset() > model::offset{0});
}

TEST_CASE("a crash at every step of a cleaning pass leaves a log with every key's latest value (simulated file system)") {
  const std::vector<std::string> steps{"cleaned-written", "cleaned-synced",   "swap-renamed", "swap-committed",
                                       "old-segment-removed", "group-done"};
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (const auto& stop_at : steps) {
      for (int stop_group = 0; stop_group < 2; ++stop_group) {
        INFO("seed " << seed << " step " << stop_at << " group " << stop_group);
        io::sim_file_system fs;
        base::manual_clock clock(t0);
        auto config = compact_config();
        config.segment_bytes = 2048;
        std::map<std::string, std::optional<std::string>> expected;
        model::offset end{0};
        {
          auto opened = partition_log::open(fs, "/d/k-0", config, clock);
          REQUIRE(opened.ok());
          auto& l = *opened.value();
          expected = write_changelog(l, clock, 60, 5, 0);
          REQUIRE(l.flush().ok());
          REQUIRE(l.checkpoint().ok());
          end = l.log_end_offset();
          log_cleaner cleaner(cleaner_config{1 << 20});
          int seen = 0;
          cleaner.step_hook = [&](std::string_view step) {
            if (step != stop_at) return true;
            return seen++ != stop_group;
          };
          auto stats = cleaner.clean(l, force_clean::yes);
          CHECK(!stats.ok());   // stopped as by a crash
        }
        fs.crash(seed);
        auto reopened = partition_log::open(fs, "/d/k-0", config, clock);
        REQUIRE(reopened.ok());
        auto& l = *reopened.value();
        CHECK(l.log_end_offset() == end);
        check_latest_values(l, expected, true);
        auto names = fs.list_directory("/d/k-0");
        REQUIRE(names.ok());
        for (const auto& n : names.value()) CHECK((!n.ends_with(".cleaned") && !n.ends_with(".swap")));
        // And the next pass completes the job.
        l.set_high_watermark(l.log_end_offset());
        log_cleaner cleaner(cleaner_config{1 << 20});
        auto again = cleaner.clean(l, force_clean::yes);
        REQUIRE(again.ok());
        CHECK(read_all(l).size() == 60);
        check_latest_values(l, expected, true);
      }
    }
  }
}

TEST_CASE("complete_interrupted_swaps: a .swap replaces the segments inside its offsets, a .cleaned is discarded") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto config = compact_config();
  std::string cleaned_stem;
  {
    auto opened = partition_log::open(fs, "/d/s-0", config, clock);
    REQUIRE(opened.ok());
    auto& l = *opened.value();
    for (int i = 0; i < 3; ++i) {
      REQUIRE(l.append(keyed_batch({{"k", std::to_string(i)}}, t0), epoch0).ok());
      REQUIRE(l.roll().ok());
    }
    REQUIRE(l.close().ok());
  }
  // A swap file for [0, 2) holding only offset 1 (as a cleaner would write it), and a stray .cleaned.
  auto batch = keyed_batch({{"k", "1"}}, t0);
  codec::set_base_offset(batch, model::offset{1});
  REQUIRE(io::write_file_atomic(fs, "/d/s-0/00000000000000000000.log.swap", batch).ok());
  REQUIRE(io::write_file_atomic(fs, "/d/s-0/00000000000000000002.log.cleaned", batch).ok());
  auto done = complete_interrupted_swaps(fs, "/d/s-0");
  REQUIRE(done.ok());
  CHECK(done.value() == 1);
  CHECK(!fs.exists("/d/s-0/00000000000000000001.log"));
  CHECK(!fs.exists("/d/s-0/00000000000000000000.log.swap"));
  CHECK(!fs.exists("/d/s-0/00000000000000000002.log.cleaned"));
  CHECK(fs.exists("/d/s-0/00000000000000000002.log"));
  auto opened = partition_log::open(fs, "/d/s-0", config, clock);
  REQUIRE(opened.ok());
  auto rs = read_all(*opened.value());
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].record_offset.value() == 1);
  CHECK(rs[1].record_offset.value() == 2);
  CHECK(opened.value()->log_end_offset().value() == 3);
}

TEST_CASE("cleaner_throttle spaces passes by bytes / log.cleaner.io.max.bytes.per.second") {
  cleaner_throttle unlimited(0);
  unlimited.record(1000, 1 << 30);
  CHECK(unlimited.may_start(1000));
  cleaner_throttle paced(1024 * 1024);   // 1 MiB/s
  CHECK(paced.may_start(0));
  paced.record(1000, 2 * 1024 * 1024);
  CHECK(!paced.may_start(2999));
  CHECK(paced.may_start(3000));
}

TEST_CASE("SIGKILL of a process that appends and cleans, at seeded moments, keeps every key's latest value") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/kc-0";
  const uint64_t seed = 20261201;
  uint64_t state = seed;
  auto next = [&state]() {   // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  constexpr int keys = 300;
  auto config = compact_config();
  int acked_version = -1;
  int64_t acked_end = 0;
  int version = 0;
  size_t kills_while_cleaning = 0;
  for (int round = 0; round < 10; ++round) {
    INFO("seed " << seed << " round " << round);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const int first_version = version;
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: append one version of every key (flushed: acknowledged), report it, clean, repeat.
      close(fds[0]);
      auto fs = io::make_posix_file_system();
      base::system_clock clock;
      auto log = partition_log::open(*fs, path, config, clock);
      if (!log.ok()) _exit(3);
      auto& l = *log.value();
      log_cleaner cleaner(cleaner_config{1 << 20});
      for (int v = first_version;; ++v) {
        for (int k = 0; k < keys; k += 10) {
          std::vector<kv> items;
          for (int j = k; j < k + 10; ++j) {
            items.push_back({"key-" + std::to_string(j), "v" + std::to_string(v) + "-" + std::string(100, 'x')});
          }
          if (!l.append(keyed_batch(items, clock.now_ms()), epoch0).ok()) _exit(4);
        }
        if (!l.flush().ok() || !l.roll().ok()) _exit(5);
        l.set_high_watermark(l.log_end_offset());
        char line[64];
        const int n = std::snprintf(line, sizeof(line), "A %d %lld\n", v, static_cast<long long>(l.log_end_offset().value()));
        if (write(fds[1], line, static_cast<size_t>(n)) != n) _exit(6);
        if (write(fds[1], "C\n", 2) != 2) _exit(6);   // cleaning starts
        if (!cleaner.clean(l, force_clean::yes).ok()) _exit(7);
        if (write(fds[1], "D\n", 2) != 2) _exit(6);   // cleaning done
      }
    }
    close(fds[1]);
    FILE* in = fdopen(fds[0], "r");
    REQUIRE(in != nullptr);
    const uint64_t kill_after = 1 + next() % 6;   // lines read before the kill
    uint64_t seen = 0;
    char tag = 0;
    bool cleaning = false;
    auto read_line = [&]() -> bool {
      int v = 0;
      long long end = 0;
      if (std::fscanf(in, " %c", &tag) != 1) return false;
      if (tag == 'A') {
        if (std::fscanf(in, "%d %lld", &v, &end) != 2) return false;
        acked_version = v;
        acked_end = end;
        version = v + 1;
      }
      cleaning = tag == 'C';
      return true;
    };
    while (seen < kill_after && read_line()) ++seen;
    std::this_thread::sleep_for(std::chrono::microseconds(next() % 20000));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    while (read_line()) {
    }
    kills_while_cleaning += cleaning ? 1 : 0;
    fclose(in);
    auto fs = io::make_posix_file_system();
    base::system_clock clock;
    auto log = partition_log::open(*fs, path, config, clock);
    REQUIRE(log.ok());
    auto& l = *log.value();
    CHECK(l.log_end_offset().value() >= acked_end);
    if (acked_version < 0) continue;
    auto latest = latest_of(read_all(l));
    for (int k = 0; k < keys; ++k) {
      const std::string key = "key-" + std::to_string(k);
      REQUIRE(latest.contains(key));
      const std::string& value = *latest[key].second;
      const int stored_version = std::stoi(value.substr(1, value.find('-') - 1));
      CHECK(stored_version >= acked_version);   // the acknowledged latest value or a newer one
    }
    version = std::max(version, acked_version + 1);
    // Versions written after the last acknowledged one may be there too: continue above them.
    for (const auto& [key, entry] : latest) {
      const int v = std::stoi(entry.second->substr(1, entry.second->find('-') - 1));
      version = std::max(version, v + 1);
    }
  }
  MESSAGE("kills that landed while a pass was running: " << kills_while_cleaning << " of 10");
  CHECK(acked_version >= 0);
}
