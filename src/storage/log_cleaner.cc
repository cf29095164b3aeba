#include "ringlog/storage/log_cleaner.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "checkpoint.h"
#include "ringlog/base/assert.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/partition_log.h"
#include "segment.h"

namespace ringlog::storage {
namespace {

/// Cleaned bytes are collected up to this size before one write: few syscalls, bounded memory.
constexpr size_t cleaner_write_buffer_bytes = 1024 * 1024;

error storage_error(const io::error& e) { return error{errc::kafka_storage_error, e.message}; }

/// "00000000000000000042.log.swap" -> 42 (for `suffix` ".log.swap"); nullopt otherwise.
std::optional<model::offset> parse_base(const std::string& name, std::string_view suffix) {
  constexpr size_t digits = 20;
  if (name.size() != digits + suffix.size() || name.compare(digits, suffix.size(), suffix) != 0) return std::nullopt;
  int64_t value = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + digits, value);
  if (ec != std::errc{} || p != name.data() + digits || value < 0) return std::nullopt;
  return model::offset{value};
}

/// One past the last offset of the batches in `path` (read header by header); `base` if none.
result<model::offset> end_offset_of_file(io::file_system& fs, const std::string& path, model::offset base) {
  auto file = fs.open(path, io::open_mode::read_only);
  if (!file.ok()) return storage_error(file.error());
  auto size = file.value()->size();
  if (!size.ok()) return storage_error(size.error());
  model::offset end = base;
  uint64_t position = 0;
  std::array<std::byte, codec::batch_header_bytes> head{};
  while (position + codec::batch_header_bytes <= size.value()) {
    auto n = file.value()->read_at(model::file_position{position}, head);
    if (!n.ok()) return storage_error(n.error());
    auto header = codec::decode_header(head);
    if (!header.ok() || position + header->size_bytes() > size.value()) break;
    end = header->last_offset() + 1;
    position += header->size_bytes();
  }
  return end;
}

std::string join(const std::string& directory, const std::string& name) { return directory + "/" + name; }

/// The cleaner checkpoint of a log, or nullopt when there is none.
result<std::optional<model::offset>> read_cleaner_checkpoint(io::file_system& fs, const std::string& directory) {
  auto entries = read_checkpoint(fs, join(directory, cleaner_checkpoint_file));
  if (!entries.ok()) return entries.error();
  if (entries->empty()) return std::optional<model::offset>{};
  return std::optional<model::offset>{model::offset{entries->front().second}};
}

/// The newest timestamp of a segment as the tombstone clock sees it: a missing or future one
/// counts as now (the tombstone is kept longer, never shorter).
int64_t tombstone_clock_ms(const segment& seg, int64_t now_ms) {
  const int64_t t = seg.max_timestamp();
  return (t < 0 || t > now_ms) ? now_ms : t;
}

}  // namespace

// ---------------------------------------------------------------- recovery of the swap steps

result<size_t> complete_interrupted_swaps(io::file_system& fs, const std::string& directory) {
  auto names = fs.list_directory(directory);
  if (!names.ok()) {
    if (names.error().code == io::errc::not_found) return size_t{0};
    return storage_error(names.error());
  }
  bool changed = false;
  std::vector<model::offset> swaps;
  std::vector<model::offset> segments;
  for (const auto& name : names.value()) {
    if (name.ends_with(".cleaned")) {
      // Written before its commit point: the segments it would replace are all still there.
      auto removed = fs.remove(join(directory, name));
      if (!removed.ok() && removed.error().code != io::errc::not_found) return storage_error(removed.error());
      changed = true;
    } else if (auto base = parse_base(name, ".log.swap")) {
      swaps.push_back(*base);
    } else if (auto seg = parse_base(name, ".log")) {
      segments.push_back(*seg);
    }
  }
  std::sort(swaps.begin(), swaps.end());
  for (model::offset base : swaps) {
    const std::string swap_path = join(directory, segment_file_stem(base) + ".log.swap");
    auto end = end_offset_of_file(fs, swap_path, base);
    if (!end.ok()) return end.error();
    RINGLOG_ASSERT(end.value() > base, "a swap file is fdatasynced whole before its rename, and never empty");
    // The swap replaces every segment whose base lies in its offsets [base, end).
    for (model::offset old : segments) {
      if (old < base || old >= end.value()) continue;
      for (const char* suffix : {".log", ".index", ".timeindex"}) {
        auto removed = fs.remove(join(directory, segment_file_stem(old) + suffix));
        if (!removed.ok() && removed.error().code != io::errc::not_found) return storage_error(removed.error());
      }
    }
    // Stale index files of the same base are gone with the old segment: recovery rebuilds them.
    for (const char* suffix : {".index", ".timeindex"}) {
      auto removed = fs.remove(join(directory, segment_file_stem(base) + suffix));
      if (!removed.ok() && removed.error().code != io::errc::not_found) return storage_error(removed.error());
    }
    auto renamed = fs.rename(swap_path, join(directory, segment_file_stem(base) + ".log"));
    if (!renamed.ok()) return storage_error(renamed.error());
    changed = true;
  }
  if (changed) {
    auto synced = fs.sync_directory(directory);
    if (!synced.ok()) return storage_error(synced.error());
  }
  return swaps.size();
}

// ---------------------------------------------------------------- throttle

void cleaner_throttle::record(int64_t now_ms, uint64_t bytes) {
  if (!(bytes_per_second_ > 0) || std::isinf(bytes_per_second_)) return;
  const double wait_ms = static_cast<double>(bytes) * 1000.0 / bytes_per_second_;
  next_start_ms_ = now_ms + static_cast<int64_t>(std::min(wait_ms, 3.6e6));  // at most an hour
}

// ---------------------------------------------------------------- the cleaner

log_cleaner::log_cleaner(cleaner_config config) : map_(config.dedupe_buffer_bytes) {}

result<void> log_cleaner::step(std::string_view name) {
  if (step_hook && !step_hook(name)) {
    return error{errc::kafka_storage_error, "log cleaner stopped at step '" + std::string(name) + "' (test hook)"};
  }
  return base::ok_v;
}

result<cleanable_state> log_cleaner::inspect(partition_log& log) {
  RINGLOG_TRY(log.check_usable());
  cleanable_state out;
  const int64_t now = log.clock_.now_ms();
  const log_config& config = log.config_;
  auto cached = first_dirty_cache_.find(log.directory_);
  std::optional<model::offset> checkpointed;
  if (cached != first_dirty_cache_.end()) {
    checkpointed = cached->second;
  } else {
    auto checkpoint = read_cleaner_checkpoint(log.fs_, log.directory_);
    if (!checkpoint.ok()) return checkpoint.error();
    checkpointed = checkpoint.value();
    if (checkpointed) first_dirty_cache_[log.directory_] = *checkpointed;
  }
  model::offset first_dirty = checkpointed.value_or(log.log_start_offset_);
  // A checkpoint outside the log (truncation, a log started anew) restarts from the log start.
  if (first_dirty < log.log_start_offset_ || first_dirty > log.log_end_offset_) first_dirty = log.log_start_offset_;

  // The first segment that may not be cleaned: the active one, one reaching above the high
  // watermark (it could still be truncated), or one with records newer than the lag.
  const segment* active = log.segments_.rbegin()->second.get();
  model::offset first_uncleanable = active->base_offset();
  for (const auto& [base, seg] : log.segments_) {
    if (seg.get() == active) break;
    const bool above_high_watermark = seg->next_offset() > log.high_watermark_;
    const bool too_new = config.min_compaction_lag_ms > 0 && tombstone_clock_ms(*seg, now) > now - config.min_compaction_lag_ms;
    if (above_high_watermark || too_new) {
      first_uncleanable = base;
      break;
    }
  }
  first_dirty = std::min(first_dirty, first_uncleanable);
  out.first_dirty_offset = first_dirty;
  out.first_uncleanable_offset = first_uncleanable;
  bool first_dirty_segment = true;
  for (const auto& [base, seg] : log.segments_) {
    if (base >= first_uncleanable) break;
    if (seg->next_offset() <= first_dirty) {
      out.clean_bytes += seg->size_bytes();
      continue;
    }
    out.dirty_bytes += seg->size_bytes();
    if (first_dirty_segment) {
      first_dirty_segment = false;
      // KIP-354: the oldest dirty record's timestamp, from the first batch at the dirty start.
      auto located = seg->find_batch(first_dirty);
      if (!located.ok()) return located.error();
      if (located.value()) {
        const int64_t first_ts = located.value()->header.base_timestamp;
        out.max_lag_passed = first_ts >= 0 && now - first_ts > config.max_compaction_lag_ms;
      }
    }
  }
  const uint64_t total = out.clean_bytes + out.dirty_bytes;
  out.dirty_ratio = total == 0 ? 0.0 : static_cast<double>(out.dirty_bytes) / static_cast<double>(total);
  auto tombstones = tombstone_due_ms_.find(log.directory_);
  out.tombstones_due = tombstones != tombstone_due_ms_.end() && now >= tombstones->second;
  out.due = config.compacted() &&
            ((out.dirty_bytes > 0 && (out.dirty_ratio >= config.min_cleanable_dirty_ratio || out.max_lag_passed)) ||
             (out.clean_bytes > 0 && out.tombstones_due));
  return out;
}

result<clean_stats> log_cleaner::clean(partition_log& log, force_clean force) {
  clean_stats stats;
  if (!log.config_.compacted()) return stats;
  auto state = inspect(log);
  if (!state.ok()) return state.error();
  stats.dirty_ratio = state->dirty_ratio;
  stats.first_dirty_offset = state->first_dirty_offset;
  if (!state->due && force == force_clean::no) return stats;
  // Nothing dirty: only the clean section is rewritten (expired tombstones), with an empty map.
  const bool clean_section_only = state->dirty_bytes == 0;
  if (clean_section_only && !(state->clean_bytes > 0 && state->tombstones_due)) return stats;
  const int64_t now = log.clock_.now_ms();
  const log_config& config = log.config_;

  // ---- 1. the offset map over [first_dirty, first_uncleanable), until it is full
  // At most one key per offset of the dirty range: size the map for that, within the buffer.
  map_.reset_for(static_cast<size_t>(state->first_uncleanable_offset - state->first_dirty_offset));
  model::offset map_end = state->first_uncleanable_offset;
  bool full = false;
  model::bytes buffer;
  for (auto& [base, seg] : log.segments_) {
    if (full || base >= state->first_uncleanable_offset) break;
    if (seg->next_offset() <= state->first_dirty_offset) continue;
    auto located = seg->find_batch(state->first_dirty_offset);
    if (!located.ok()) return located.error();
    std::optional<located_batch> batch = located.value();
    while (batch && !full) {
      const auto& h = batch->header;
      if (!h.is_control()) {
        buffer.clear();
        RINGLOG_TRY(seg->read_into(batch->position, h.size_bytes(), buffer));
        auto records = codec::decode_records(buffer);
        if (!records.ok()) return error{errc::corrupt_message, log.directory_ + ": " + records.error().message};
        for (const auto& r : records.value()) {
          if (r.record_offset < state->first_dirty_offset || !r.key) continue;
          if (!map_.put(*r.key, r.record_offset)) {
            full = true;
            map_end = r.record_offset;
            break;
          }
        }
      }
      auto next = seg->header_at(model::file_position{batch->position.value() + h.size_bytes()});
      if (!next.ok()) return next.error();
      batch = next.value();
    }
  }
  if (map_end <= state->first_dirty_offset && !clean_section_only) return stats;  // not one key fits
  stats.map_end_offset = map_end;
  stats.keys_in_map = map_.size();

  // ---- 2. groups of segments below map_end, each at most segment.bytes
  std::vector<std::vector<segment*>> groups;
  uint64_t group_bytes = 0;
  for (auto& [base, seg] : log.segments_) {
    if (base >= map_end) break;
    RINGLOG_ASSERT(seg.get() != log.segments_.rbegin()->second.get(), "the active segment is never cleaned");
    const bool offsets_fit = !groups.empty() && !groups.back().empty() &&
                             seg->next_offset() - groups.back().front()->base_offset() <
                                 std::numeric_limits<int32_t>::max();
    if (groups.empty() || !offsets_fit ||
        group_bytes + seg->size_bytes() > static_cast<uint64_t>(config.segment_bytes)) {
      groups.emplace_back();
      group_bytes = 0;
    }
    groups.back().push_back(seg.get());
    group_bytes += seg->size_bytes();
  }

  // ---- 3. rewrite and swap each group
  int64_t next_tombstone_due = std::numeric_limits<int64_t>::max();
  for (const auto& group : groups) {
    const model::offset group_base = group.front()->base_offset();
    const std::string stem = log.directory_ + "/" + segment_file_stem(group_base);
    const std::string cleaned_path = stem + ".log.cleaned";
    const std::string swap_path = stem + ".log.swap";
    auto out = log.fs_.open(cleaned_path, io::open_mode::read_write_create);
    if (!out.ok()) return storage_error(out.error());
    auto cut = out.value()->truncate(0);   // a stale file of an earlier cut pass
    if (!cut.ok()) return storage_error(cut.error());
    uint64_t written = 0;
    model::bytes pending;
    auto flush_pending = [&]() -> result<void> {
      if (pending.empty()) return base::ok_v;
      auto w = out.value()->write_at(model::file_position{written}, pending);
      if (!w.ok()) return storage_error(w.error());
      written += pending.size();
      pending.clear();
      return base::ok_v;
    };
    for (segment* seg : group) {
      stats.bytes_read += seg->size_bytes();
      ++stats.segments_before;
      const bool tombstones_expired = now - tombstone_clock_ms(*seg, now) > config.delete_retention_ms;
      auto first = seg->header_at(model::file_position{0});
      if (!first.ok()) return first.error();
      std::optional<located_batch> batch = first.value();
      while (batch) {
        const auto h = batch->header;
        auto next = seg->header_at(model::file_position{batch->position.value() + h.size_bytes()});
        if (!next.ok()) return next.error();
        const bool last_of_segment = !next.value().has_value();
        buffer.clear();
        RINGLOG_TRY(seg->read_into(batch->position, h.size_bytes(), buffer));
        if (h.is_control()) {
          pending.insert(pending.end(), buffer.begin(), buffer.end());
        } else {
          auto records = codec::decode_records(buffer);
          if (!records.ok()) return error{errc::corrupt_message, log.directory_ + ": " + records.error().message};
          std::vector<model::record> kept;
          for (auto& r : records.value()) {
            ++stats.records_read;
            if (!r.key) continue;   // a keyless record is no key's value (Kafka drops them too)
            auto latest = map_.get(*r.key);
            if (latest && *latest > r.record_offset) continue;   // superseded
            const bool latest_known = latest.has_value() || r.record_offset < state->first_dirty_offset;
            if (!r.value && latest_known && r.record_offset < map_end) {
              if (tombstones_expired) {
                ++stats.tombstones_removed;
                continue;
              }
              next_tombstone_due = std::min(next_tombstone_due, tombstone_clock_ms(*seg, now) + config.delete_retention_ms + 1);
            }
            kept.push_back(std::move(r));
          }
          stats.records_kept += kept.size();
          if (kept.size() == static_cast<size_t>(h.records_count)) {
            pending.insert(pending.end(), buffer.begin(), buffer.end());   // unchanged: bytes as stored
          } else if (!kept.empty() || last_of_segment) {
            auto encoded = codec::encode_filtered_batch(h, kept);
            if (!encoded.ok()) return error{errc::corrupt_message, log.directory_ + ": " + encoded.error().message};
            pending.insert(pending.end(), encoded->begin(), encoded->end());
          }
        }
        if (pending.size() >= cleaner_write_buffer_bytes) RINGLOG_TRY(flush_pending());
        batch = next.value();
      }
    }
    RINGLOG_TRY(flush_pending());
    RINGLOG_ASSERT(written > 0, "the last batch of every segment is kept, so a cleaned segment is never empty");
    RINGLOG_TRY(step("cleaned-written"));
    auto synced = out.value()->datasync();
    if (!synced.ok()) return storage_error(synced.error());
    out.value().reset();
    RINGLOG_TRY(step("cleaned-synced"));
    auto renamed = log.fs_.rename(cleaned_path, swap_path);
    if (!renamed.ok()) return storage_error(renamed.error());
    RINGLOG_TRY(step("swap-renamed"));
    auto dir = log.fs_.sync_directory(log.directory_);
    if (!dir.ok()) return storage_error(dir.error());
    RINGLOG_TRY(step("swap-committed"));
    // Past the commit point: a failure from here on leaves the directory for recovery to finish,
    // and this log must not be served from its now stale segment objects.
    auto fail = [&log](error e) -> error {
      log.failure_ = e;
      return e;
    };
    for (size_t i = 0; i < group.size(); ++i) {
      auto removed = group[i]->remove_files();
      if (!removed.ok()) return fail(removed.error());
      if (i == 0) {
        auto s = step("old-segment-removed");
        if (!s.ok()) return fail(s.error());
      }
    }
    auto final_name = log.fs_.rename(swap_path, stem + ".log");
    if (!final_name.ok()) return fail(storage_error(final_name.error()));
    auto dir2 = log.fs_.sync_directory(log.directory_);
    if (!dir2.ok()) return fail(storage_error(dir2.error()));
    auto fresh = segment::open(log.fs_, log.directory_, group_base, config.direct_io);
    if (!fresh.ok()) return fail(fresh.error());
    auto rebuilt = fresh.value()->recover(now, config.retention_ms, config.index_interval_bytes, nullptr);
    if (!rebuilt.ok()) return fail(rebuilt.error());
    RINGLOG_ASSERT_OP(rebuilt.value(), ==, 0u);
    RINGLOG_ASSERT_OP(fresh.value()->next_offset().value(), ==, group.back()->next_offset().value());
    auto released = fresh.value()->release_write_files();
    if (!released.ok()) return fail(released.error());
    stats.bytes_written += fresh.value()->size_bytes();
    ++stats.segments_after;
    for (segment* seg : group) log.segments_.erase(seg->base_offset());
    log.segments_.emplace(group_base, std::move(fresh.value()));
    auto s = step("group-done");
    if (!s.ok()) return fail(s.error());
  }

  // ---- 4. the checkpoint, then compact,delete retention of segments left with no record
  RINGLOG_TRY(write_checkpoint(log.fs_, log.directory_ + "/" + cleaner_checkpoint_file,
                               {{log.checkpoint_key(), map_end.value()}}));
  first_dirty_cache_[log.directory_] = map_end;
  if (config.deletes()) {
    // By the newest record timestamp (a rewritten segment's retention clock restarted at its
    // rewrite, segment.cc's effective_timestamp).
    auto expired = [&](const segment& s) {
      return config.retention_ms >= 0 && now - tombstone_clock_ms(s, now) > config.retention_ms;
    };
    int64_t excess = config.retention_bytes >= 0 ? static_cast<int64_t>(log.size_bytes()) - config.retention_bytes : 0;
    while (log.segments_.size() > 1 && log.segments_.begin()->first < map_end) {
      segment& front = *log.segments_.begin()->second;
      if (!expired(front) && static_cast<int64_t>(front.size_bytes()) > excess) break;
      bool holds_records = false;
      auto batch = front.header_at(model::file_position{0});
      while (batch.ok() && batch.value() && !holds_records) {
        holds_records = batch.value()->header.records_count > 0;
        const auto& b = *batch.value();
        batch = front.header_at(model::file_position{b.position.value() + b.header.size_bytes()});
      }
      if (!batch.ok()) return batch.error();
      if (holds_records) break;   // it may hold a key's only value: never deleted by retention
      excess -= static_cast<int64_t>(front.size_bytes());
      RINGLOG_TRY(log.delete_segment_front());
      ++stats.segments_deleted;
    }
    if (stats.segments_deleted > 0) {
      log.high_watermark_ = std::max(log.high_watermark_, log.log_start_offset_);
      auto dir = log.fs_.sync_directory(log.directory_);
      if (!dir.ok()) return storage_error(dir.error());
      RINGLOG_TRY(log.checkpoint());
    }
  }
  if (next_tombstone_due == std::numeric_limits<int64_t>::max()) {
    tombstone_due_ms_.erase(log.directory_);
  } else {
    tombstone_due_ms_[log.directory_] = next_tombstone_due;
  }
  stats.cleaned = true;
  return stats;
}

}  // namespace ringlog::storage
