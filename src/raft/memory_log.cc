#include "ringlog/raft/memory_log.h"

#include "ringlog/base/assert.h"

namespace ringlog::raft {

memory_log::memory_log(offset_and_epoch snapshot_id) : snapshot_id_(snapshot_id) {}

leader_epoch memory_log::last_epoch() const { return entries_.empty() ? snapshot_id_.epoch : entries_.back().epoch; }

std::optional<leader_epoch> memory_log::epoch_at(offset o) const {
  if (o == log_start_offset() - 1) {
    return snapshot_id_.epoch;
  }
  if (o < log_start_offset() || o >= log_end_offset()) {
    return std::nullopt;
  }
  return at(o).epoch;
}

const entry& memory_log::at(offset o) const {
  RINGLOG_ASSERT_OP(o.value(), >=, log_start_offset().value());
  RINGLOG_ASSERT_OP(o.value(), <, log_end_offset().value());
  return entries_[static_cast<size_t>(o - log_start_offset())];
}

std::optional<offset_and_epoch> memory_log::end_offset_for_epoch(leader_epoch epoch) const {
  if (epoch >= last_epoch()) {
    // The latest epoch (or a newer one this log has not seen) ends at the log end.
    return offset_and_epoch{log_end_offset(), last_epoch()};
  }
  // Largest cached epoch <= epoch; its end is the start of the next cached epoch. The cache is
  // short (one element per leader change still in the log), so a linear scan from the back.
  for (size_t i = epoch_cache_.size(); i > 0; --i) {
    const auto& e = epoch_cache_[i - 1];
    if (e.epoch <= epoch) {
      const offset end = i < epoch_cache_.size() ? epoch_cache_[i].start_offset : log_end_offset();
      return offset_and_epoch{end, e.epoch};
    }
  }
  if (snapshot_id_.epoch <= epoch) {
    return offset_and_epoch{log_start_offset(), snapshot_id_.epoch};
  }
  return std::nullopt;
}

void memory_log::append(entry e) {
  RINGLOG_ASSERT_OP(e.offset_.value(), ==, log_end_offset().value());
  RINGLOG_ASSERT_OP(e.epoch.value(), >=, last_epoch().value());
  if (epoch_cache_.empty() || epoch_cache_.back().epoch != e.epoch) {
    epoch_cache_.push_back({e.epoch, e.offset_});
  }
  entries_.push_back(std::move(e));
}

void memory_log::truncate_suffix(offset end) {
  RINGLOG_ASSERT_OP(end.value(), >=, log_start_offset().value());
  RINGLOG_ASSERT_OP(end.value(), <=, log_end_offset().value());
  entries_.resize(static_cast<size_t>(end - log_start_offset()));
  while (!epoch_cache_.empty() && epoch_cache_.back().start_offset >= end) {
    epoch_cache_.pop_back();
  }
}

void memory_log::delete_prefix(offset_and_epoch snapshot_id) {
  RINGLOG_ASSERT_OP(snapshot_id.end_offset.value(), >, log_start_offset().value());
  RINGLOG_ASSERT_OP(snapshot_id.end_offset.value(), <=, log_end_offset().value());
  RINGLOG_ASSERT_OP(at(snapshot_id.end_offset - 1).epoch.value(), ==, snapshot_id.epoch.value());
  while (!entries_.empty() && entries_.front().offset_ < snapshot_id.end_offset) {
    entries_.pop_front();
  }
  snapshot_id_ = snapshot_id;
  rebuild_epoch_cache();
}

void memory_log::reset(offset_and_epoch snapshot_id) {
  entries_.clear();
  epoch_cache_.clear();
  snapshot_id_ = snapshot_id;
}

void memory_log::rebuild_epoch_cache() {
  epoch_cache_.clear();
  for (const auto& e : entries_) {
    if (epoch_cache_.empty() || epoch_cache_.back().epoch != e.epoch) {
      epoch_cache_.push_back({e.epoch, e.offset_});
    }
  }
}

}  // namespace ringlog::raft
