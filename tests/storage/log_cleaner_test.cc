// Log compaction (log_cleaner.h): each invariant of issue 17 with a test, the offset map, the
// batch filter, and crashes at every step of the swap on the simulated file system.

#include <doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "ringlog/io/disk_executor.h"
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
    auto filtered = codec::encode_filtered_batch(*header, kept, std::nullopt);
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
    auto empty = codec::encode_filtered_batch(*header, {}, std::nullopt);
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
    // The producer snapshots of merged segments went with them (one per roll stayed before).
    const auto merged = l.segments();
    for (model::offset snapshot : l.producer_snapshots()) {
      const bool at_a_base = std::any_of(merged.begin(), merged.end(),
                                         [&](const auto& seg) { return seg.base_offset == snapshot; });
      CHECK(at_a_base);
    }
    CHECK(l.producer_snapshots().size() <= l.segments().size());
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

namespace {

/// A changelog of 60 keys x 5 versions in 2 KiB segments, flushed; `cut_pass` runs a pass over
/// it that stops as a crash would; then the simulated crash with `seed`, and the reopened log
/// must have its log end offset, every latest value and no .cleaned or .swap file; a next pass
/// then completes the job.
void check_crash_during_pass(uint64_t seed, const std::function<void(partition_log&)>& cut_pass) {
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
    cut_pass(l);
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

}  // namespace

TEST_CASE("a crash at every step of a cleaning pass leaves a log with every key's latest value (simulated file system)") {
  const std::vector<std::string> steps{"cleaned-written", "cleaned-synced",   "swap-renamed", "swap-committed",
                                       "old-segment-removed", "txn-index-written", "group-done"};
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (const auto& stop_at : steps) {
      for (int stop_group = 0; stop_group < 2; ++stop_group) {
        INFO("seed " << seed << " step " << stop_at << " group " << stop_group);
        check_crash_during_pass(seed, [&](partition_log& l) {
          log_cleaner cleaner(cleaner_config{1 << 20});
          int seen = 0;
          cleaner.step_hook = [&](std::string_view step) {
            if (step != stop_at) return true;
            return seen++ != stop_group;
          };
          auto stats = cleaner.clean(l, force_clean::yes);
          CHECK(!stats.ok());   // stopped as by a crash
        });
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

TEST_CASE("a .swap that is not whole (empty, torn, garbage, corrupt CRC) is removed with a warning; the segments it covers stay") {
  auto batch = keyed_batch({{"k", "1"}}, t0);
  codec::set_base_offset(batch, model::offset{1});
  model::bytes corrupt_crc = batch;
  corrupt_crc.back() = std::byte{static_cast<unsigned char>(std::to_integer<unsigned>(corrupt_crc.back()) ^ 0xffU)};
  model::bytes torn(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(batch.size() / 2));
  model::bytes trailing = batch;
  trailing.push_back(std::byte{7});
  model::bytes garbage(500, std::byte{0x5a});
  const std::vector<std::pair<const char*, model::bytes>> cases = {
      {"empty", {}}, {"torn", torn}, {"garbage", garbage}, {"corrupt CRC", corrupt_crc}, {"bytes after the last batch", trailing}};
  for (const auto& [name, bytes] : cases) {
    CAPTURE(name);
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    auto config = compact_config();
    {
      auto opened = partition_log::open(fs, "/d/s-0", config, clock);
      REQUIRE(opened.ok());
      for (int i = 0; i < 3; ++i) {
        REQUIRE(opened.value()->append(keyed_batch({{"k" + std::to_string(i), std::to_string(i)}}, t0), epoch0).ok());
        REQUIRE(opened.value()->roll().ok());
      }
      REQUIRE(opened.value()->close().ok());
    }
    REQUIRE(io::write_file_atomic(fs, "/d/s-0/00000000000000000000.log.swap", bytes).ok());
    // Before: an empty or garbage .swap failed an assertion (abort at every start), a torn one
    // replaced segments 0 and 1 by its half batch and the open then cut every later segment.
    auto opened = partition_log::open(fs, "/d/s-0", config, clock);
    REQUIRE(opened.ok());
    CHECK(!fs.exists("/d/s-0/00000000000000000000.log.swap"));
    const auto& warnings = opened.value()->last_recovery().warnings;
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("00000000000000000000.log.swap") != std::string::npos);
    CHECK(warnings[0].find("kept") != std::string::npos);
    CHECK(opened.value()->log_end_offset().value() == 3);
    CHECK(read_all(*opened.value()).size() == 3);
  }
}

TEST_CASE("an unreadable cleaner checkpoint is removed at open with a warning, and the cleaner cleans the whole log") {
  for (const std::string& bytes : {std::string(), std::string("garbage\n"), std::string("0\n1\n")}) {
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    auto config = compact_config();
    {
      auto opened = partition_log::open(fs, "/d/k-0", config, clock);
      REQUIRE(opened.ok());
      write_changelog(*opened.value(), clock, 50, 4, 0);
      REQUIRE(opened.value()->close().ok());
    }
    REQUIRE(io::write_file_atomic(fs, std::string("/d/k-0/") + cleaner_checkpoint_file,
                                  std::as_bytes(std::span(bytes.data(), bytes.size()))).ok());
    auto opened = partition_log::open(fs, "/d/k-0", config, clock);
    REQUIRE(opened.ok());
    REQUIRE(opened.value()->last_recovery().warnings.size() == 1);
    CHECK(opened.value()->last_recovery().warnings[0].find(cleaner_checkpoint_file) != std::string::npos);
    log_cleaner cleaner(cleaner_config{1 << 20});
    auto state = cleaner.inspect(*opened.value());
    REQUIRE(state.ok());
    CHECK(state->due);   // before: the parse error made every inspect fail, so never due
    auto stats = cleaner.clean(*opened.value());
    REQUIRE(stats.ok());
    CHECK(stats->cleaned);
    CHECK(read_all(*opened.value()).size() == 50);
  }
}

TEST_CASE("delete.retention.ms of Long.MAX_VALUE keeps tombstones for good (the horizon saturates, never wraps)") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto config = compact_config();
  config.delete_retention_ms = std::numeric_limits<int64_t>::max();
  auto opened = partition_log::open(fs, "/d/r-0", config, clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  REQUIRE(l.append(keyed_batch({{"a", "old"}, {"b", "keep"}}, t0), epoch0).ok());
  REQUIRE(l.append(keyed_batch({{"a", std::nullopt}}, t0), epoch0).ok());
  REQUIRE(l.roll().ok());
  l.set_high_watermark(l.log_end_offset());
  log_cleaner cleaner(cleaner_config{1 << 20});
  REQUIRE(cleaner.clean(l, force_clean::yes).ok());
  clock.advance_ms(365 * 24 * hour);
  REQUIRE(l.append(keyed_batch({{"c", "new"}}, clock.now_ms()), epoch0).ok());
  REQUIRE(l.roll().ok());
  l.set_high_watermark(l.log_end_offset());
  auto second = cleaner.clean(l, force_clean::yes);
  REQUIRE(second.ok());
  CHECK(second->tombstones_removed == 0);   // before: the wrapped horizon had passed, and it went
  auto latest = latest_of(read_all(l));
  REQUIRE(latest.contains("a"));
  CHECK(!latest.at("a").second.has_value());
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

TEST_CASE("SIGKILL of a process that appends and cleans (syncs inline or through a disk executor), at seeded moments, keeps every key's latest value") {
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
      // Odd rounds send the swap's syncs through a disk executor, as the broker does.
      auto executor = io::make_posix_disk_executor();
      const bool through_executor = round % 2 == 1;
      auto clean = [&]() -> bool {
        if (!through_executor) return cleaner.clean(l, force_clean::yes).ok();
        auto begun = cleaner.begin(l, force_clean::yes, cleaner_io{executor.get(), nullptr});
        if (!begun.ok()) return false;
        while (begun.value()) {
          auto s = cleaner.step(l);
          if (!s.ok()) return false;
          if (s->done) break;
          if (s->waiting_for_io) executor->poll(std::chrono::milliseconds(0));
        }
        return true;
      };
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
        if (!clean()) _exit(7);
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

// ---------------------------------------------------------------- transactions (KIP-98) and KIP-534

namespace {

model::bytes txn_batch(const std::vector<kv>& items, int64_t timestamp, int64_t producer, int32_t sequence,
                       bool transactional = true) {
  std::vector<model::record> records;
  for (const auto& item : items) {
    model::record r;
    r.timestamp = timestamp;
    r.key = model::to_bytes(item.key);
    if (item.value) r.value = model::to_bytes(*item.value);
    records.push_back(std::move(r));
  }
  codec::batch_options options;
  options.producer = model::producer_id{producer};
  options.producer_epoch_value = model::producer_epoch{0};
  options.base_sequence = model::sequence{sequence};
  options.is_transactional = transactional;
  auto encoded = codec::encode_batch(options, records);
  REQUIRE(encoded.ok());
  return std::move(encoded.value());
}

void end_txn(partition_log& l, int64_t producer, bool commit) {
  auto written = l.append_marker(model::producer_id{producer}, model::producer_epoch{0},
                                 {commit ? codec::control_type::commit : codec::control_type::abort, 0}, epoch0);
  REQUIRE(written.ok());
}

struct stored_batch {
  codec::batch_header header;
  std::optional<codec::control_type> marker;   // of a control batch holding one
  std::vector<model::record> records;          // data records (none for control batches)
};

/// Every batch of the log from its start, with its marker or records.
std::vector<stored_batch> batches_of(partition_log& l) {
  auto read = l.read(l.log_start_offset(), 1 << 30, l.log_end_offset());
  REQUIRE(read.ok());
  std::vector<stored_batch> out;
  std::span<const std::byte> rest(read->batches);
  while (!rest.empty()) {
    auto h = codec::decode_header(rest);
    REQUIRE(h.ok());
    auto bytes = rest.subspan(0, h->size_bytes());
    auto records = codec::decode_records(bytes);
    REQUIRE(records.ok());
    stored_batch b{h.value(), std::nullopt, {}};
    if (h->is_control()) {
      if (!records->empty()) {
        auto m = codec::decode_control_record(records->front());
        REQUIRE(m.ok());
        b.marker = m->type;
      }
    } else {
      b.records = std::move(records.value());
    }
    out.push_back(std::move(b));
    rest = rest.subspan(h->size_bytes());
  }
  return out;
}

/// The records a read_committed reader gets below the last stable offset: control batches
/// skipped, aborted transactions (the log's txn index) dropped with the consumer's algorithm.
std::vector<model::record> read_committed(partition_log& l) {
  const model::offset upper = l.last_stable_offset();
  auto read = l.read(l.log_start_offset(), 1 << 30, upper);
  REQUIRE(read.ok());
  aborted_txn_filter filter(l.aborted_transactions(l.log_start_offset(), upper));
  std::vector<model::record> out;
  std::span<const std::byte> rest(read->batches);
  while (!rest.empty()) {
    auto h = codec::decode_header(rest);
    REQUIRE(h.ok());
    auto records = codec::decode_records(rest.subspan(0, h->size_bytes()));
    REQUIRE(records.ok());
    std::optional<codec::control_type> marker;
    if (h->is_control() && !records->empty()) {
      auto m = codec::decode_control_record(records->front());
      REQUIRE(m.ok());
      marker = m->type;
    }
    if (filter.keep(h.value(), marker) && !h->is_control()) {
      for (auto& r : records.value()) {
        if (r.record_offset >= l.log_start_offset() && r.record_offset < upper) out.push_back(std::move(r));
      }
    }
    rest = rest.subspan(h->size_bytes());
  }
  return out;
}

/// Whether the latest committed value of every key in `expected` is what read_committed reads
/// (a deleted key: its tombstone or nothing). Returns the first difference, empty when none.
std::string committed_view_differs(partition_log& l, const std::map<std::string, std::optional<std::string>>& expected) {
  auto latest = latest_of(read_committed(l));
  for (const auto& [key, value] : expected) {
    auto found = latest.find(key);
    if (value) {
      if (found == latest.end()) return key + ": missing, expected " + *value;
      if (found->second.second != value) return key + ": read " + found->second.second.value_or("<tombstone>") + ", expected " + *value;
    } else if (found != latest.end() && found->second.second) {
      return key + ": read " + *found->second.second + ", expected deleted";
    }
  }
  for (const auto& [key, v] : latest) {
    if (v.second && !expected.contains(key)) return key + ": read " + *v.second + " but never committed";
  }
  return {};
}

/// The txn index matches the stored abort markers: every indexed transaction's abort marker is
/// in the log, and every abort marker of the log is indexed.
void check_index_matches_markers(partition_log& l) {
  std::set<int64_t> markers;
  for (const auto& b : batches_of(l)) {
    if (b.marker == codec::control_type::abort) markers.insert(b.header.last_offset().value());
  }
  std::set<int64_t> indexed;
  for (const auto& e : l.aborted_transactions()) indexed.insert(e.last_offset.value());
  std::string only_indexed, only_stored;
  for (int64_t o : indexed) {
    if (!markers.contains(o)) only_indexed += " " + std::to_string(o);
  }
  for (int64_t o : markers) {
    if (!indexed.contains(o)) only_stored += " " + std::to_string(o);
  }
  INFO("indexed without a marker:" << only_indexed << "; markers not indexed:" << only_stored);
  CHECK(indexed == markers);
}

size_t txn_index_files(io::file_system& fs, const std::string& dir) {
  auto names = fs.list_directory(dir);
  REQUIRE(names.ok());
  return static_cast<size_t>(std::count_if(names->begin(), names->end(), [](const std::string& n) { return n.ends_with(".txnindex"); }));
}

}  // namespace

TEST_CASE("transactions: aborted records go, committed ones stay, and an aborted value never hides an older committed one (negative control)") {
  for (bool broken_log : {false, true}) {
    INFO("broken_log " << broken_log);
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    log_cleaner cleaner(cleaner_config{1 << 20});
    auto opened = partition_log::open(fs, "/d/t-0", compact_config(), clock);
    REQUIRE(opened.ok());
    auto& l = *opened.value();
    REQUIRE(l.append(keyed_batch({{"a", "a1"}, {"b", "b1"}}, t0), epoch0).ok());   // 0-1
    // Producer 100 writes a newer "a" in a transaction that aborts. The negative control writes
    // the same value without a transaction, as a cleaner that took aborted records for committed
    // ones would see it: the check below must then fail.
    REQUIRE(l.append(txn_batch({{"a", "a-aborted"}}, t0, 100, 0, !broken_log), epoch0).ok());   // 2
    if (!broken_log) end_txn(l, 100, false);   // 3
    REQUIRE(l.append(txn_batch({{"b", "b-committed"}}, t0, 200, 0), epoch0).ok());
    end_txn(l, 200, true);
    REQUIRE(l.append(keyed_batch({{"z", "z1"}}, t0), epoch0).ok());
    REQUIRE(l.roll().ok());
    REQUIRE(l.append(keyed_batch({{"c", "c1"}}, t0), epoch0).ok());   // active
    l.set_high_watermark(l.log_end_offset());
    const std::map<std::string, std::optional<std::string>> expected{{"a", "a1"}, {"b", "b-committed"}, {"c", "c1"}, {"z", "z1"}};
    const auto end = l.log_end_offset();
    auto stats = cleaner.clean(l, force_clean::yes);
    REQUIRE(stats.ok());
    CHECK(stats->cleaned);
    CHECK(l.log_end_offset() == end);
    const std::string differs = committed_view_differs(l, expected);
    if (broken_log) {
      CHECK(differs == "a: read a-aborted, expected a1");   // the check catches the lost value
      continue;
    }
    CHECK(differs.empty());
    CHECK(stats->aborted_records_removed == 1);
    // No stored record holds the aborted value any more, and "a1" survived at offset 0.
    bool a1 = false;
    for (const auto& b : batches_of(l)) {
      for (const auto& r : b.records) {
        CHECK(model::to_string(*r.value) != "a-aborted");
        if (model::to_string(*r.key) == "a") a1 = r.record_offset.value() == 0 && model::to_string(*r.value) == "a1";
      }
    }
    CHECK(a1);
    // Both markers stay this pass: the cleaner met data of both transactions.
    CHECK(stats->markers_removed == 0);
    check_index_matches_markers(l);
    CHECK(l.aborted_transactions().size() == 1);
  }
}

TEST_CASE("transactions: markers stay while their data does, then get a delete horizon and go after delete.retention.ms; the txn index follows; an open transaction is never cleaned") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_cleaner cleaner(cleaner_config{1 << 20});
  const std::string dir = "/d/tm-0";
  auto opened = partition_log::open(fs, dir, compact_config(), clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  // Segment [0, 3): an aborted transaction of producer 1 and a plain record after it.
  REQUIRE(l.append(txn_batch({{"k1", "aborted"}}, t0, 1, 0), epoch0).ok());   // 0
  end_txn(l, 1, false);                                                         // 1: abort marker
  REQUIRE(l.append(keyed_batch({{"p1", "x"}}, t0), epoch0).ok());             // 2
  REQUIRE(l.roll().ok());
  // Segment [3, 6): a committed transaction of producer 2.
  REQUIRE(l.append(txn_batch({{"k2", "committed"}}, t0, 2, 0), epoch0).ok()); // 3
  end_txn(l, 2, true);                                                          // 4: commit marker
  REQUIRE(l.append(keyed_batch({{"p2", "x"}}, t0), epoch0).ok());             // 5
  REQUIRE(l.roll().ok());
  // Segment [6, 8): producer 3's transaction stays open (the last stable offset is 6).
  REQUIRE(l.append(txn_batch({{"k3", "open"}}, t0, 3, 0), epoch0).ok());      // 6
  REQUIRE(l.append(keyed_batch({{"p1", "superseded-later"}}, t0), epoch0).ok()); // 7
  REQUIRE(l.roll().ok());
  REQUIRE(l.append(keyed_batch({{"p3", "x"}}, t0), epoch0).ok());             // 8: active
  l.set_high_watermark(l.log_end_offset());
  REQUIRE(l.last_stable_offset().value() == 6);
  CHECK(txn_index_files(fs, dir) == 1);

  auto state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(state->first_uncleanable_offset.value() == 6);   // the open transaction's segment waits

  auto marker_at = [&](int64_t offset) -> std::optional<stored_batch> {
    for (auto& b : batches_of(l)) {
      if (b.header.last_offset().value() == offset && b.marker) return b;
    }
    return std::nullopt;
  };
  // Pass 1: the aborted data goes; both markers stay (their data was met); nothing past offset 6.
  auto pass1 = cleaner.clean(l, force_clean::yes);
  REQUIRE(pass1.ok());
  CHECK(pass1->map_end_offset.value() == 6);
  CHECK(pass1->aborted_records_removed == 1);
  CHECK(pass1->markers_removed == 0);
  CHECK(pass1->horizons_set == 0);
  REQUIRE(marker_at(1));
  CHECK(!marker_at(1)->header.has_delete_horizon());
  REQUIRE(marker_at(4));
  check_index_matches_markers(l);
  CHECK(l.aborted_transactions().size() == 1);
  // The open transaction's record is untouched, and so is "p1" at 7, above the stable offset.
  bool open_kept = false;
  for (const auto& b : batches_of(l)) {
    for (const auto& r : b.records) open_kept = open_kept || model::to_string(*r.value) == "open";
  }
  CHECK(open_kept);

  // Producer 3 commits, and the log is cleaned a minute later: the open transaction's segment
  // is cleanable now. The abort marker's transaction has no data left: it gets a delete horizon
  // of now + delete.retention.ms and stays until then. The commit markers' data ("k2", "k3") is
  // still there: no horizon.
  end_txn(l, 3, true);                                                          // 9
  REQUIRE(l.roll().ok());
  REQUIRE(l.append(keyed_batch({{"p4", "x"}}, t0), epoch0).ok());             // 10: active
  l.set_high_watermark(l.log_end_offset());
  CHECK(l.last_stable_offset() == l.high_watermark());
  clock.advance_ms(60'000);
  const int64_t pass2_time = clock.now_ms();
  auto pass2 = cleaner.clean(l, force_clean::yes);
  REQUIRE(pass2.ok());
  CHECK(pass2->map_end_offset.value() == 10);
  CHECK(pass2->horizons_set == 1);
  REQUIRE(marker_at(1));
  CHECK(marker_at(1)->header.has_delete_horizon());
  CHECK(marker_at(1)->header.delete_horizon_ms() == pass2_time + hour);
  REQUIRE(marker_at(4));
  CHECK(!marker_at(4)->header.has_delete_horizon());
  REQUIRE(marker_at(9));
  check_index_matches_markers(l);
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(!state->due);   // nothing dirty, and the horizon has not come

  // "k2" is superseded by a plain record: the pass that removes producer 2's data still meets
  // it, so its commit marker stays; the next pass gives the marker its horizon.
  REQUIRE(l.append(keyed_batch({{"k2", "plain"}}, t0), epoch0).ok());         // 11
  REQUIRE(l.roll().ok());
  REQUIRE(l.append(keyed_batch({{"p5", "x"}}, t0), epoch0).ok());             // 12: active
  l.set_high_watermark(l.log_end_offset());
  clock.advance_ms(60'000);
  auto pass3 = cleaner.clean(l, force_clean::yes);
  REQUIRE(pass3.ok());
  REQUIRE(marker_at(4));
  CHECK(!marker_at(4)->header.has_delete_horizon());
  REQUIRE(l.roll().ok());
  REQUIRE(l.append(keyed_batch({{"p6", "x"}}, t0), epoch0).ok());             // 13: active
  l.set_high_watermark(l.log_end_offset());
  clock.advance_ms(60'000);
  const int64_t pass4_time = clock.now_ms();
  auto pass4 = cleaner.clean(l, force_clean::yes);
  REQUIRE(pass4.ok());
  CHECK(pass4->horizons_set == 1);
  REQUIRE(marker_at(4));
  CHECK(marker_at(4)->header.delete_horizon_ms() == pass4_time + hour);
  REQUIRE(marker_at(1));   // its horizon (pass 2 + 1 h) has not come
  CHECK(marker_at(1)->header.delete_horizon_ms() == pass2_time + hour);
  REQUIRE(marker_at(9));
  CHECK(!marker_at(9)->header.has_delete_horizon());   // "k3" is still there

  // At the abort marker's horizon it goes, with its txn index entry and file, without any new
  // write (the clean section alone is due); the commit marker's horizon is 3 minutes later.
  clock.set_ms(pass2_time + hour - 1);
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(!state->due);
  clock.set_ms(pass2_time + hour);
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(state->due);
  CHECK(state->tombstones_due);
  auto pass5 = cleaner.clean(l);
  REQUIRE(pass5.ok());
  CHECK(pass5->cleaned);
  CHECK(pass5->markers_removed == 1);
  CHECK(!marker_at(1));
  REQUIRE(marker_at(4));
  CHECK(l.aborted_transactions().empty());
  CHECK(txn_index_files(fs, dir) == 0);
  check_index_matches_markers(l);
  clock.set_ms(pass4_time + hour);
  auto pass6 = cleaner.clean(l);
  REQUIRE(pass6.ok());
  CHECK(pass6->markers_removed == 1);
  CHECK(!marker_at(4));
  REQUIRE(marker_at(9));

  // The committed view never changed, and a restart (unclean: producer state rebuilt by
  // replaying the segments) finds no transaction open and the same records.
  const std::map<std::string, std::optional<std::string>> expected{
      {"k2", "plain"}, {"k3", "open"}, {"p1", "superseded-later"}, {"p2", "x"}, {"p3", "x"},
      {"p4", "x"},     {"p5", "x"},    {"p6", "x"}};
  CHECK(committed_view_differs(l, expected).empty());
  REQUIRE(l.flush().ok());
  const auto end = l.log_end_offset();
  opened.value().reset();
  fs.crash(3);
  opened = partition_log::open(fs, dir, compact_config(), clock);
  REQUIRE(opened.ok());
  auto& again = *opened.value();
  again.set_high_watermark(again.log_end_offset());
  CHECK(again.log_end_offset() == end);
  CHECK(!again.first_unstable_offset().has_value());
  CHECK(committed_view_differs(again, expected).empty());
  check_index_matches_markers(again);
}

TEST_CASE("KIP-534: a tombstone's delete horizon starts at the first clean that sees it, is stored in its batch, and survives a restart") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  const std::string dir = "/d/h-0";
  auto opened = partition_log::open(fs, dir, compact_config(), clock);
  REQUIRE(opened.ok());
  // "gone" is deleted by a tombstone whose record timestamp is ten days old: by the segment's
  // newest timestamp (the rule before KIP-534) it would be past delete.retention.ms at once.
  const int64_t old = t0 - 10 * 24 * hour;
  REQUIRE(opened.value()->append(keyed_batch({{"gone", "v"}, {"kept", "v"}}, old), epoch0).ok());
  REQUIRE(opened.value()->append(keyed_batch({{"gone", std::nullopt}, {"kept", "v2"}}, old), epoch0).ok());
  REQUIRE(opened.value()->roll().ok());
  REQUIRE(opened.value()->append(keyed_batch({{"other", "x"}}, t0), epoch0).ok());
  opened.value()->set_high_watermark(opened.value()->log_end_offset());
  auto tombstone_batch = [](partition_log& l) -> std::optional<stored_batch> {
    for (auto& b : batches_of(l)) {
      for (const auto& r : b.records) {
        if (!r.value) return b;
      }
    }
    return std::nullopt;
  };
  int64_t horizon = 0;
  {
    log_cleaner cleaner(cleaner_config{1 << 20});
    auto pass = cleaner.clean(*opened.value(), force_clean::yes);
    REQUIRE(pass.ok());
    CHECK(pass->tombstones_removed == 0);
    CHECK(pass->horizons_set == 1);
    auto b = tombstone_batch(*opened.value());
    REQUIRE(b);
    CHECK(b->header.has_delete_horizon());
    horizon = b->header.delete_horizon_ms();
    CHECK(horizon == t0 + hour);
    // Record timestamps are unchanged by the horizon in the base timestamp.
    for (const auto& r : b->records) CHECK(r.timestamp == old);
    CHECK(b->header.max_timestamp == old);
    // A second pass before the horizon keeps it as it is (it is not moved on).
    clock.advance_ms(hour / 2);
    REQUIRE(opened.value()->append(keyed_batch({{"x", "1"}}, clock.now_ms()), epoch0).ok());
    REQUIRE(opened.value()->roll().ok());
    REQUIRE(opened.value()->append(keyed_batch({{"y", "1"}}, clock.now_ms()), epoch0).ok());
    opened.value()->set_high_watermark(opened.value()->log_end_offset());
    auto second = cleaner.clean(*opened.value(), force_clean::yes);
    REQUIRE(second.ok());
    CHECK(second->horizons_set == 0);
    b = tombstone_batch(*opened.value());
    REQUIRE(b);
    CHECK(b->header.delete_horizon_ms() == horizon);
  }
  // A restart (clean close) with a new cleaner: the horizon comes back from the batch.
  REQUIRE(opened.value()->close().ok());
  opened = partition_log::open(fs, dir, compact_config(), clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  l.set_high_watermark(l.log_end_offset());
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto b = tombstone_batch(l);
  REQUIRE(b);
  CHECK(b->header.delete_horizon_ms() == horizon);
  clock.set_ms(horizon - 1);
  auto state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(!state->due);
  auto early = cleaner.clean(l, force_clean::yes);   // nothing dirty: not even forced
  REQUIRE(early.ok());
  CHECK(!early->cleaned);
  CHECK(tombstone_batch(l));
  clock.set_ms(horizon);
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(state->tombstones_due);   // known after the restart from the batch headers
  CHECK(state->due);
  auto pass = cleaner.clean(l);
  REQUIRE(pass.ok());
  CHECK(pass->cleaned);
  CHECK(pass->tombstones_removed == 1);
  CHECK(!tombstone_batch(l));
  // The batch that held it lost its horizon with it (kept: "kept"="v2"): nothing more is due.
  for (const auto& sb : batches_of(l)) CHECK(!sb.header.has_delete_horizon());
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(!state->tombstones_due);
  auto latest = latest_of(read_all(l));
  CHECK(!latest.contains("gone"));
  CHECK(latest["kept"].second == "v2");
}

TEST_CASE("a pass runs in bounded steps: each reads about cleaner_step_bytes, appends go on between them, the result equals a whole pass") {
  // Two logs written alike: one cleaned whole, one step by step with appends between steps.
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto config = compact_config();
  config.segment_bytes = 64 * 1024;
  auto whole_log = partition_log::open(fs, "/d/w-0", config, clock);
  auto stepped_log = partition_log::open(fs, "/d/s-0", config, clock);
  REQUIRE(whole_log.ok());
  REQUIRE(stepped_log.ok());
  auto expected = write_changelog(*whole_log.value(), clock, 2000, 5, 9);
  REQUIRE(write_changelog(*stepped_log.value(), clock, 2000, 5, 9) == expected);
  log_cleaner whole(cleaner_config{1 << 20});
  auto whole_stats = whole.clean(*whole_log.value(), force_clean::yes);
  REQUIRE(whole_stats.ok());
  REQUIRE(whole_stats->cleaned);

  auto& l = *stepped_log.value();
  log_cleaner stepped(cleaner_config{1 << 20});
  constexpr size_t budget = 16 * 1024;
  auto started = stepped.begin(l, force_clean::yes);
  REQUIRE(started.ok());
  REQUIRE(started.value());
  CHECK(stepped.in_progress());
  CHECK(stepped.cleaning() == &l);
  size_t steps = 0;
  size_t swaps = 0;
  size_t largest_batch = 0;
  for (const auto& b : batches_of(l)) largest_batch = std::max(largest_batch, b.header.size_bytes());
  for (;;) {
    auto s = stepped.step(l, budget);
    REQUIRE(s.ok());
    ++steps;
    CHECK(s->bytes_read < budget + largest_batch);   // the bound, give or take one batch
    swaps += s->records_changed ? 1 : 0;
    if (s->done) break;
    // A produce between steps: the active segment only, above the cleaned range.
    REQUIRE(l.append(keyed_batch({{"between-" + std::to_string(steps), "x"}}, clock.now_ms()), epoch0).ok());
    REQUIRE(steps < 10'000);
  }
  CHECK(!stepped.in_progress());
  const auto& stats = stepped.stats();
  CHECK(stats.cleaned);
  CHECK(stats.steps == steps);
  CHECK(steps >= 2 * stats.bytes_read / (budget + largest_batch));   // the map reads them too
  CHECK(swaps == stats.segments_after);
  CHECK(stats.records_kept == whole_stats->records_kept);
  CHECK(stats.bytes_written == whole_stats->bytes_written);
  CHECK(stats.map_end_offset == whole_stats->map_end_offset);
  // Same records below the cleaned end, and every append made between the steps is there.
  auto whole_records = read_all(*whole_log.value());
  auto stepped_records = read_all(l);
  std::vector<model::record> stepped_below;
  size_t between = 0;
  for (auto& r : stepped_records) {
    if (r.record_offset < stats.map_end_offset) stepped_below.push_back(r);
    if (model::to_string(*r.key).starts_with("between-")) ++between;
  }
  CHECK(stepped_below == whole_records);
  CHECK(between == steps - 1);
}

TEST_CASE("a stepped pass gives up when retention or truncation changes the segments between steps; the log keeps every latest value") {
  for (int change = 0; change < 2; ++change) {
    INFO("change " << change);
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    auto config = compact_config();
    auto opened = partition_log::open(fs, "/d/x-0", config, clock);
    REQUIRE(opened.ok());
    auto& l = *opened.value();
    auto expected = write_changelog(l, clock, 300, 4, 0);
    REQUIRE(l.append(keyed_batch({{"tail", "t"}}, t0), epoch0).ok());
    expected["tail"] = "t";
    log_cleaner cleaner(cleaner_config{1 << 20});
    REQUIRE(cleaner.begin(l, force_clean::yes).value());
    // Into the rewrite: run until a group was swapped, then change the log under the pass.
    bool swapped = false;
    while (!swapped) {
      auto s = cleaner.step(l, 4096);
      REQUIRE(s.ok());
      REQUIRE(!s->done);
      swapped = s->records_changed;
    }
    if (change == 0) {
      REQUIRE(l.truncate_to(l.log_end_offset() - 1).ok());   // a follower's truncation of "tail"
      expected.erase("tail");
    } else {
      REQUIRE(l.close().ok());   // the partition stops
    }
    auto s = cleaner.step(l, 4096);
    REQUIRE(s.ok());
    CHECK(s->done);
    CHECK(s->abandoned);
    CHECK(!cleaner.in_progress());
    if (change == 1) {
      opened = partition_log::open(fs, "/d/x-0", config, clock);
      REQUIRE(opened.ok());
    }
    auto& log = *opened.value();
    auto names = fs.list_directory("/d/x-0");
    REQUIRE(names.ok());
    for (const auto& n : names.value()) CHECK(!n.ends_with(".cleaned"));
    check_latest_values(log, expected, true);
    // The next pass finishes the job.
    log.set_high_watermark(log.log_end_offset());
    auto again = cleaner.clean(log, force_clean::yes);
    REQUIRE(again.ok());
    CHECK(again->cleaned);
    check_latest_values(log, expected, true);
  }
}

TEST_CASE("seeded transactional changelogs: the read_committed view of every key survives every pass, crashes included") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    uint64_t state = seed * 7919;
    auto next = [&state](uint64_t n) {   // splitmix64, below n
      uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return (z ^ (z >> 31)) % n;
    };
    io::sim_file_system fs;
    base::manual_clock clock(t0);
    auto config = compact_config();
    config.segment_bytes = 1024;
    const std::string dir = "/d/r-0";
    auto opened = partition_log::open(fs, dir, config, clock);
    REQUIRE(opened.ok());
    log_cleaner cleaner(cleaner_config{1 << 20});
    // Every record written: offset -> (key, value, producer or -1); outcome per transaction.
    struct written {
      std::string key;
      std::optional<std::string> value;
      int64_t producer;
      int txn;   // index in outcomes, -1 when not transactional
    };
    std::map<int64_t, written> log_model;
    std::vector<int> outcomes;                     // 0 open, 1 committed, 2 aborted
    std::map<int64_t, int> open_txn;               // producer -> index in outcomes
    std::map<int64_t, int32_t> sequence;           // producer -> next sequence
    auto expected_view = [&]() {
      std::map<std::string, std::optional<std::string>> out;
      const int64_t stable = opened.value()->last_stable_offset().value();
      for (const auto& [offset, w] : log_model) {
        if (offset >= stable) break;
        if (w.txn >= 0 && outcomes[w.txn] != 1) continue;
        out[w.key] = w.value;
      }
      std::erase_if(out, [](const auto& kv) { return !kv.second.has_value(); });
      return out;
    };
    for (int action = 0; action < 600; ++action) {
      auto& l = *opened.value();
      const uint64_t dice = next(100);
      const std::string key = "k" + std::to_string(next(25));
      std::optional<std::string> value = "v" + std::to_string(action);
      if (next(10) == 0) value.reset();
      if (dice < 40) {
        auto a = l.append(keyed_batch({{key, value}}, clock.now_ms()), epoch0);
        REQUIRE(a.ok());
        log_model[a->base_offset.value()] = {key, value, -1, -1};
      } else if (dice < 80) {
        const int64_t producer = 1 + static_cast<int64_t>(next(4));
        if (!open_txn.contains(producer)) {
          open_txn[producer] = static_cast<int>(outcomes.size());
          outcomes.push_back(0);
        }
        auto a = l.append(txn_batch({{key, value}}, clock.now_ms(), producer, sequence[producer]++), epoch0);
        REQUIRE(a.ok());
        log_model[a->base_offset.value()] = {key, value, producer, open_txn[producer]};
      } else if (dice < 92 && !open_txn.empty()) {
        auto it = std::next(open_txn.begin(), static_cast<long>(next(open_txn.size())));
        const bool commit = next(2) == 0;
        end_txn(l, it->first, commit);
        outcomes[it->second] = commit ? 1 : 2;
        open_txn.erase(it);
      } else if (dice < 96) {
        REQUIRE(l.roll().ok());
      } else {
        // A pass (sometimes cut by a crash at a random step), a clock that moves past horizons.
        l.set_high_watermark(l.log_end_offset());
        clock.advance_ms(static_cast<int64_t>(next(3)) * hour / 2);
        const auto before = expected_view();
        REQUIRE(committed_view_differs(l, before).empty());   // the checker agrees with the model
        REQUIRE(l.flush().ok());   // a crash below then loses no append, only the pass's work
        const auto unstable_before = l.first_unstable_offset();
        const auto end_before = l.log_end_offset();
        const bool crash = next(4) == 0;
        int stop_after = static_cast<int>(next(8));
        cleaner.step_hook = [&](std::string_view) { return !crash || stop_after-- > 0; };
        auto pass = cleaner.clean(l, force_clean::yes);
        cleaner.step_hook = nullptr;
        if (!pass.ok()) {
          REQUIRE(crash);
          opened.value().reset();
          fs.crash(seed + static_cast<uint64_t>(action));
          opened = partition_log::open(fs, dir, config, clock);
          REQUIRE(opened.ok());
          opened.value()->set_high_watermark(opened.value()->log_end_offset());
          REQUIRE(opened.value()->log_end_offset() == end_before);
        }
        auto& after = *opened.value();
        INFO("action " << action << " crash " << !pass.ok() << " lso " << after.last_stable_offset().value()
                       << " end " << after.log_end_offset().value());
        const std::string differs = committed_view_differs(after, expected_view());
        CHECK_MESSAGE(differs.empty(), differs);
        check_index_matches_markers(after);
        // Open transactions are the same, also when rebuilt by replaying the log after a crash.
        CHECK(after.first_unstable_offset() == unstable_before);
      }
    }
  }
}

// ---------------------------------------------------------------- syncs through a disk executor

namespace {

/// Runs the pass begin() started with `executor` to its end: steps until one waits for a sync,
/// then polls the executor (which calls resume). Returns the steps that waited; `before_poll`
/// runs before each poll with the number of waits so far (a test may crash or change the log
/// there) and returns false to stop without polling.
struct async_run {
  size_t waits = 0;
  size_t resumes = 0;
  bool stopped = false;
  bool abandoned = false;
};
async_run run_async_pass(log_cleaner& cleaner, partition_log& l, io::disk_executor& executor, size_t& resumes,
                         const std::function<bool(size_t waits)>& before_poll = nullptr) {
  async_run out;
  for (size_t guard = 0; guard < 100'000; ++guard) {
    auto s = cleaner.step(l, 16 * 1024);
    REQUIRE(s.ok());
    if (s->done) {
      out.abandoned = s->abandoned;
      out.resumes = resumes;
      return out;
    }
    if (!s->waiting_for_io) continue;
    // While the sync is in flight the pass stands still.
    auto again = cleaner.step(l, 16 * 1024);
    REQUIRE(again.ok());
    CHECK(again->waiting_for_io);
    CHECK(again->bytes_read == 0);
    ++out.waits;
    if (before_poll && !before_poll(out.waits)) {
      out.stopped = true;
      out.resumes = resumes;
      return out;
    }
    const size_t before = resumes;
    executor.poll(std::chrono::milliseconds(0));
    CHECK(resumes == before + 1);   // the completion resumed the pass
  }
  FAIL("the pass did not end");
  return out;
}

}  // namespace

TEST_CASE("through a disk executor each swap waits for its three syncs without holding the step; the result equals an inline pass") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto config = compact_config();
  auto inline_log = partition_log::open(fs, "/d/i-0", config, clock);
  auto async_log = partition_log::open(fs, "/d/a-0", config, clock);
  REQUIRE(inline_log.ok());
  REQUIRE(async_log.ok());
  auto expected = write_changelog(*inline_log.value(), clock, 300, 4, 7);
  REQUIRE(write_changelog(*async_log.value(), clock, 300, 4, 7) == expected);
  log_cleaner whole(cleaner_config{1 << 20});
  auto whole_stats = whole.clean(*inline_log.value(), force_clean::yes);
  REQUIRE(whole_stats.ok());
  REQUIRE(whole_stats->segments_after >= 2);

  auto& l = *async_log.value();
  auto executor = io::make_posix_disk_executor();
  size_t resumes = 0;
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto started = cleaner.begin(l, force_clean::yes, cleaner_io{executor.get(), [&resumes] { ++resumes; }});
  REQUIRE(started.ok());
  REQUIRE(started.value());
  auto run = run_async_pass(cleaner, l, *executor, resumes);
  CHECK(!run.abandoned);
  const auto& stats = cleaner.stats();
  REQUIRE(stats.cleaned);
  // The first pass over a log begins by reading its horizons back (not a sync); then per group
  // the .cleaned fdatasync, the commit's directory fsync and the final directory fsync; at the
  // end the cleaner checkpoint's fdatasync and directory fsync.
  CHECK(run.waits == 3 * stats.segments_after + 2);
  CHECK(executor->in_flight() == 0);
  CHECK(stats.records_kept == whole_stats->records_kept);
  CHECK(stats.bytes_written == whole_stats->bytes_written);
  CHECK(read_all(l) == read_all(*inline_log.value()));
  check_latest_values(l, expected, true);
}

TEST_CASE("a swap installs the cleaned segment from what the rewrite tracked: its index files equal a scan's, through an executor too") {
  // Negative control in spirit: the index files written from the tracker are compared byte for
  // byte with the ones recovery rebuilds by scanning the same files (index files removed, log
  // reopened), for plain and lz4 batches, inline syncs and a disk executor.
  for (bool through_executor : {false, true}) {
    for (auto codec_value : {model::compression::none, model::compression::lz4}) {
      CAPTURE(through_executor);
      io::sim_file_system fs;
      base::manual_clock clock(t0);
      auto config = compact_config();
      config.index_interval_bytes = 256;   // several index entries per segment
      auto opened = partition_log::open(fs, "/d/t-0", config, clock);
      REQUIRE(opened.ok());
      auto& l = *opened.value();
      write_changelog(l, clock, 300, 5, 7, codec_value);
      log_cleaner cleaner(cleaner_config{1 << 20});
      if (through_executor) {
        auto executor = io::make_posix_disk_executor();
        size_t resumes = 0;
        auto started = cleaner.begin(l, force_clean::yes, cleaner_io{executor.get(), [&resumes] { ++resumes; }});
        REQUIRE(started.ok());
        REQUIRE(started.value());
        CHECK(!run_async_pass(cleaner, l, *executor, resumes).abandoned);
      } else {
        REQUIRE(cleaner.clean(l, force_clean::yes).ok());
      }
      REQUIRE(cleaner.stats().cleaned);
      const auto records = read_all(l);
      const auto end = l.log_end_offset();
      REQUIRE(l.close().ok());
      auto index_files = [&fs] {
        std::map<std::string, std::vector<std::byte>> out;
        auto names = fs.list_directory("/d/t-0");
        REQUIRE(names.ok());
        for (const auto& name : names.value()) {
          if (name.ends_with(".index") || name.ends_with(".timeindex")) {
            auto bytes = io::read_whole_file(fs, "/d/t-0/" + name);
            REQUIRE(bytes.ok());
            out[name] = bytes.value();
          }
        }
        return out;
      };
      const auto tracked = index_files();
      CHECK(tracked.size() >= 4);
      size_t entries = 0;
      for (const auto& [name, bytes] : tracked) entries += bytes.size();
      CHECK(entries > 0);
      for (const auto& [name, bytes] : tracked) REQUIRE(fs.remove("/d/t-0/" + name).ok());
      opened = partition_log::open(fs, "/d/t-0", config, clock);   // rebuilds them by scanning
      REQUIRE(opened.ok());
      CHECK(opened.value()->log_end_offset() == end);
      CHECK(read_all(*opened.value()) == records);
      REQUIRE(opened.value()->close().ok());
      CHECK(index_files() == tracked);
    }
  }
}

TEST_CASE("forget() ends a pass waiting for its sync, so the cleaner can start another; a re-created log starts from its own checkpoint") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto config = compact_config();
  auto first = partition_log::open(fs, "/d/f-0", config, clock);
  REQUIRE(first.ok());
  write_changelog(*first.value(), clock, 200, 4, 0);
  auto executor = io::make_posix_disk_executor();
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto started = cleaner.begin(*first.value(), force_clean::yes, cleaner_io{executor.get(), [] {}});
  REQUIRE(started.ok());
  REQUIRE(started.value());
  bool waiting = false;
  for (int i = 0; i < 10'000 && !waiting; ++i) {
    auto s = cleaner.step(*first.value());
    REQUIRE(s.ok());
    REQUIRE(!s->done);
    waiting = s->waiting_for_io;
  }
  REQUIRE(waiting);
  // The partition goes while its sync is in flight (a deleted topic): before forget(), the pass
  // stayed in progress for good and no other log of the shard was cleaned again.
  cleaner.forget(*first.value());
  CHECK(!cleaner.in_progress());
  executor->poll(std::chrono::milliseconds(0));
  REQUIRE(first.value()->close().ok());
  first.value().reset();
  REQUIRE(fs.remove_all("/d/f-0").ok());
  auto second = partition_log::open(fs, "/d/f-0", config, clock);
  REQUIRE(second.ok());
  write_changelog(*second.value(), clock, 20, 4, 0);
  auto state = cleaner.inspect(*second.value());
  REQUIRE(state.ok());
  CHECK(state->first_dirty_offset.value() == 0);
  auto stats = cleaner.clean(*second.value());
  REQUIRE(stats.ok());
  CHECK(stats->cleaned);
  CHECK(read_all(*second.value()).size() == 20);
}

TEST_CASE("a crash while a swap's sync is in flight leaves every key's latest value (simulated file system, seeded)") {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    for (size_t crash_at_wait = 1; crash_at_wait <= 6; ++crash_at_wait) {   // 3 syncs x 2 groups
      INFO("seed " << seed << " crash at wait " << crash_at_wait);
      check_crash_during_pass(seed * 100 + crash_at_wait, [&](partition_log& l) {
        auto executor = io::make_posix_disk_executor();
        size_t resumes = 0;
        log_cleaner cleaner(cleaner_config{1 << 20});
        REQUIRE(cleaner.begin(l, force_clean::yes, cleaner_io{executor.get(), [&resumes] { ++resumes; }}).value());
        auto run = run_async_pass(cleaner, l, *executor, resumes, [&](size_t waits) { return waits < crash_at_wait; });
        REQUIRE(run.stopped);   // the sync never ran: the crash finds it undone
      });
    }
  }
}

TEST_CASE("a change of the segments while a swap waits for its commit rolls the .swap back first, so a crash never completes it over them") {
  // 0: follower truncation; 1: a follower starting over above the leader's log start; 2: close;
  // 3: DeleteRecords (log start moves, front segments go).
  for (int change = 0; change < 4; ++change) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      INFO("change " << change << " seed " << seed);
      io::sim_file_system fs;
      base::manual_clock clock(t0);
      auto config = compact_config();
      const std::string dir = "/d/x-0";
      auto opened = partition_log::open(fs, dir, config, clock);
      REQUIRE(opened.ok());
      auto& l = *opened.value();
      auto expected = write_changelog(l, clock, 300, 4, 0);
      REQUIRE(l.append(keyed_batch({{"tail", "t"}}, t0), epoch0).ok());
      expected["tail"] = "t";
      REQUIRE(l.flush().ok());
      auto executor = io::make_posix_disk_executor();
      size_t resumes = 0;
      log_cleaner cleaner(cleaner_config{1 << 20});
      REQUIRE(cleaner.begin(l, force_clean::yes, cleaner_io{executor.get(), [&resumes] { ++resumes; }}).value());
      // Wait 2 is the first group's commit: its .swap file exists, its old segments too.
      auto run = run_async_pass(cleaner, l, *executor, resumes, [](size_t waits) { return waits < 2; });
      REQUIRE(run.stopped);
      auto before = fs.list_directory(dir);
      REQUIRE(before.ok());
      CHECK(std::count_if(before->begin(), before->end(), [](const std::string& n) { return n.ends_with(".swap"); }) == 1);
      const model::offset start_over = l.log_end_offset() + 100;
      const model::offset new_start = l.segments().at(2).base_offset;
      if (change == 0) {
        REQUIRE(l.truncate_to(l.log_end_offset() - 1).ok());
        expected.erase("tail");
      } else if (change == 1) {
        REQUIRE(l.truncate_fully_and_start_at(start_over).ok());
      } else if (change == 2) {
        REQUIRE(l.close().ok());
      } else {
        REQUIRE(l.advance_log_start_offset(new_start).ok());
      }
      auto after = fs.list_directory(dir);
      REQUIRE(after.ok());
      for (const auto& n : after.value()) CHECK(!n.ends_with(".swap"));   // rolled back, durably
      // The sync completes late: the pass finds the segments changed and gives up.
      executor->poll(std::chrono::milliseconds(0));
      auto s = cleaner.step(l, 16 * 1024);
      REQUIRE(s.ok());
      CHECK(s->done);
      CHECK(s->abandoned);
      opened.value().reset();
      fs.crash(seed);
      auto reopened = partition_log::open(fs, dir, config, clock);
      REQUIRE(reopened.ok());
      auto& r = *reopened.value();
      if (change == 1) {
        // Recovery completing the swap would have brought back offsets below the new start and
        // cut the log there (offsets reused).
        CHECK(r.log_start_offset() == start_over);
        CHECK(r.log_end_offset() == start_over);
        CHECK(read_all(r).empty());
      } else if (change == 3) {
        CHECK(r.log_start_offset() == new_start);
        for (const auto& rec : read_all(r)) CHECK(rec.record_offset >= new_start);
      } else {
        check_latest_values(r, expected, true);
      }
    }
  }
}

TEST_CASE("after a restart the first pass reads the delete horizons back in bounded steps before it decides to clean") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto config = compact_config();
  const std::string dir = "/d/h-0";
  model::offset end{0};
  {
    auto opened = partition_log::open(fs, dir, config, clock);
    REQUIRE(opened.ok());
    write_changelog(*opened.value(), clock, 400, 3, 2);   // tombstones for half the keys
    log_cleaner cleaner(cleaner_config{1 << 20});
    auto pass = cleaner.clean(*opened.value(), force_clean::yes);
    REQUIRE(pass.ok());
    REQUIRE(pass->horizons_set > 0);
    end = opened.value()->log_end_offset();
    REQUIRE(opened.value()->close().ok());
  }
  auto opened = partition_log::open(fs, dir, config, clock);
  REQUIRE(opened.ok());
  auto& l = *opened.value();
  l.set_high_watermark(l.log_end_offset());
  size_t largest_batch = 0;
  uint64_t clean_bytes = 0;
  for (const auto& b : batches_of(l)) largest_batch = std::max(largest_batch, b.header.size_bytes());
  const auto segs = l.segments();
  for (size_t i = 0; i + 1 < segs.size(); ++i) clean_bytes += segs[i].size_bytes;   // all but the active one
  log_cleaner cleaner(cleaner_config{1 << 20});
  CHECK(!cleaner.horizons_known(l));
  auto state = cleaner.inspect(l);   // cheap: no header is read by inspect()
  REQUIRE(state.ok());
  CHECK(!state->tombstones_due);
  clock.advance_ms(hour + 1);   // past every horizon
  REQUIRE(cleaner.begin(l).value());   // not due by ratio: started to read the horizons
  constexpr size_t budget = 1024;
  size_t steps = 0;
  for (;;) {
    auto s = cleaner.step(l, budget);
    REQUIRE(s.ok());
    CHECK(s->bytes_read < budget + largest_batch);
    if (cleaner.horizons_known(l)) break;
    ++steps;
    REQUIRE(!s->done);
  }
  CHECK(steps >= clean_bytes / (budget + largest_batch));   // many steps, each bounded
  // With the horizons known the same pass goes on and removes the expired tombstones.
  for (;;) {
    auto s = cleaner.step(l, budget);
    REQUIRE(s.ok());
    if (s->done) break;
  }
  CHECK(cleaner.stats().cleaned);
  CHECK(cleaner.stats().tombstones_removed == 200);
  CHECK(l.log_end_offset() == end);
}

TEST_CASE("a quiet log is cleaned at the first inspect past its earliest delete horizon, with nothing dirty and no new write (issue 27 item 6)") {
  // The shape: 4,000 records of 200 keys, 20 tombstones, one more record, then no write.
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  log_config config = compact_config();
  config.delete_retention_ms = 2000;
  config.segment_bytes = 64 * 1024;
  auto opened = partition_log::open(fs, "/d/quiet-0", config, clock);
  REQUIRE(opened.ok());
  partition_log& l = *opened.value();
  for (int round = 0; round < 20; ++round) {
    std::vector<kv> items;
    for (int k = 0; k < 200; ++k) items.push_back({"k" + std::to_string(k), "v" + std::to_string(round) + std::string(50, 'x')});
    REQUIRE(l.append(keyed_batch(items, clock.now_ms()), epoch0).ok());
  }
  std::vector<kv> tombstones;
  for (int k = 0; k < 20; ++k) tombstones.push_back({"k" + std::to_string(k), std::nullopt});
  REQUIRE(l.append(keyed_batch(tombstones, clock.now_ms()), epoch0).ok());
  REQUIRE(l.append(keyed_batch({{"k199", "last"}}, clock.now_ms()), epoch0).ok());
  REQUIRE(l.roll().ok());
  l.set_high_watermark(l.log_end_offset());
  log_cleaner cleaner(cleaner_config{1 << 20});
  auto first = cleaner.clean(l);   // dirty: cleaned, the tombstones kept with a horizon 2000 ms on
  REQUIRE(first.ok());
  CHECK(first->cleaned);
  CHECK(first->horizons_set == 1);
  CHECK(first->tombstones_removed == 0);
  const int64_t horizon = clock.now_ms() + 2000;
  auto tombstones_read = [&] {
    auto rs = read_all(l);
    return std::count_if(rs.begin(), rs.end(), [](const model::record& r) { return !r.value; });
  };
  CHECK(tombstones_read() == 20);
  // No write from here on: each tick of the cleaner is an inspect, then a pass when due.
  clock.set_ms(horizon - 1);
  auto state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(state->dirty_bytes == 0);
  CHECK(!state->due);
  clock.set_ms(horizon);
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(state->dirty_bytes == 0);
  CHECK(state->tombstones_due);
  CHECK(state->due);
  auto second = cleaner.clean(l);
  REQUIRE(second.ok());
  CHECK(second->cleaned);
  CHECK(second->tombstones_removed == 20);   // what ringlog_log_cleaner_tombstones_removed_total adds
  CHECK(tombstones_read() == 0);
  state = cleaner.inspect(l);
  REQUIRE(state.ok());
  CHECK(!state->due);
  auto latest = latest_of(read_all(l));
  CHECK(latest.size() == 180);
  CHECK(latest["k199"].second == "last");
}
