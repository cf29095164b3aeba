#include "ringlog/delay/scheduler.h"

#include <algorithm>

#include "ringlog/base/assert.h"

namespace ringlog::delay {

scheduler::scheduler(checkpoint start, scheduler_limits limits)
    : limits_(limits), position_(start.position), read_offset_(start.position) {
  RINGLOG_ASSERT(limits_.window_records_max > 0 && limits_.move_batch_records_max > 0, "limits are positive");
  moved_ahead_.insert(start.moved_ahead.begin(), start.moved_ahead.end());
  for (auto o : start.in_flight) uncertain_[o] = start.intent_ms;
}

effects scheduler::poll(int64_t now_ms, model::offset high_watermark) {
  effects out;
  // Fill the window first: reads are synchronous for the broker, and a due record may be among them.
  if (window_.size() < limits_.window_records_max && read_offset_ < high_watermark) {
    out.read_from = read_offset_;
    out.read_records_max = limits_.window_records_max - window_.size();
    return out;
  }
  if (phase_ == phase::intent_written) {
    phase_ = phase::moving;
    outstanding_ = batch_.size();
    out.moves = batch_;
    return out;
  }
  if (phase_ != phase::idle) return out;
  auto batch = select_batch(now_ms);
  if (!batch.empty()) {
    // The intent: every move that may be in its target after this point, and a time before any
    // of them is sent, so that a restarted scheduler can look for them there.
    checkpoint c = current_checkpoint();
    std::set<model::offset> in_flight(c.in_flight.begin(), c.in_flight.end());
    for (const auto& m : batch) in_flight.insert(m.offset);
    c.in_flight.assign(in_flight.begin(), in_flight.end());
    c.intent_ms = c.intent_ms < 0 ? now_ms : std::min(c.intent_ms, now_ms);
    batch_ = std::move(batch);
    step_intent_ms_ = now_ms;
    phase_ = phase::writing_intent;
    out.write_checkpoint = std::move(c);
    return out;
  }
  if (dirty_) {
    phase_ = phase::writing_plain;
    out.write_checkpoint = current_checkpoint();
  }
  return out;
}

std::vector<move> scheduler::select_batch(int64_t now_ms) const {
  std::vector<move> batch;
  if (window_.empty()) return batch;
  const model::offset head = window_.begin()->first;
  auto as_move = [this](model::offset o) {
    move m{o, false, -1};
    if (auto u = uncertain_.find(o); u != uncertain_.end()) {
      m.verify_first = true;
      m.verify_since_ms = u->second;
    }
    return m;
  };
  const auto& h = window_.begin()->second;
  const bool head_due = std::max(h.due_ms, h.not_before_ms) <= now_ms;
  // Moves out of log order are remembered in the checkpoint (moved_ahead) until the position
  // passes them; when that list is full only the head may move (it frees the list as it goes).
  size_t slots = limits_.moved_ahead_max > moved_ahead_.size() ? limits_.moved_ahead_max - moved_ahead_.size() : 0;
  bool head_taken = false;
  for (const auto& [at_ms, o] : by_time_) {
    if (at_ms > now_ms || batch.size() >= limits_.move_batch_records_max) break;
    if (o == head) {
      head_taken = true;
    } else if (slots == 0) {
      break;
    } else {
      --slots;
    }
    batch.push_back(as_move(o));
  }
  if (head_due && !head_taken && batch.size() < limits_.move_batch_records_max) {
    batch.push_back(as_move(head));
    // In due order (the head may be due earlier than the last ones taken).
    auto at = [this](const move& m) {
      const auto& e = window_.at(m.offset);
      return std::pair{std::max(e.due_ms, e.not_before_ms), m.offset};
    };
    std::sort(batch.begin(), batch.end(), [&](const move& a, const move& b) { return at(a) < at(b); });
  }
  return batch;
}

void scheduler::on_read(std::span<const pending_entry> entries, model::offset next_offset) {
  RINGLOG_ASSERT_OP(next_offset.value(), >=, read_offset_.value());
  for (const auto& e : entries) {
    RINGLOG_ASSERT(e.offset >= read_offset_ && e.offset < next_offset, "read entries lie in [read offset, next offset)");
    if (moved_ahead_.contains(e.offset)) continue;   // moved before the last checkpoint
    window_[e.offset] = entry{e.due_ms, e.due_ms};
    by_time_.insert({e.due_ms, e.offset});
  }
  read_offset_ = next_offset;
  compact();
}

void scheduler::checkpoint_written(bool ok) {
  RINGLOG_ASSERT(phase_ == phase::writing_intent || phase_ == phase::writing_plain, "a checkpoint was asked for");
  if (phase_ == phase::writing_plain) {
    if (ok) dirty_ = false;
    phase_ = phase::idle;
    return;
  }
  if (!ok) {
    batch_.clear();
    phase_ = phase::idle;
    return;
  }
  // The intent also recorded everything moved before it.
  dirty_ = false;
  phase_ = phase::intent_written;
}

void scheduler::move_done(model::offset offset, move_outcome outcome, int64_t now_ms) {
  RINGLOG_ASSERT(phase_ == phase::moving && outstanding_ > 0, "a move was outstanding");
  auto w = window_.find(offset);
  RINGLOG_ASSERT(w != window_.end(), "a moved offset is in the window until its move is done");
  auto in_batch = std::find_if(batch_.begin(), batch_.end(), [&](const move& m) { return m.offset == offset; });
  RINGLOG_ASSERT(in_batch != batch_.end(), "the offset was in the step's moves");
  by_time_.erase({std::max(w->second.due_ms, w->second.not_before_ms), offset});
  if (outcome == move_outcome::retry) {
    // It may have reached the target (a timeout): the next attempt looks there first, from the
    // intent of this step (never later than it was sent).
    auto [u, fresh] = uncertain_.try_emplace(offset, step_intent_ms_);
    if (!fresh) u->second = std::min(u->second, step_intent_ms_);
    w->second.not_before_ms = now_ms + limits_.move_retry_backoff_ms;
    by_time_.insert({std::max(w->second.due_ms, w->second.not_before_ms), offset});
  } else {
    if (outcome == move_outcome::moved) ++moved_total_;
    else ++dropped_total_;
    window_.erase(w);
    uncertain_.erase(offset);
    moved_ahead_.insert(offset);
  }
  batch_.erase(in_batch);
  if (--outstanding_ == 0) {
    phase_ = phase::idle;
    dirty_ = true;
    compact();
  }
}

void scheduler::compact() {
  position_ = window_.empty() ? read_offset_ : std::min(window_.begin()->first, read_offset_);
  moved_ahead_.erase(moved_ahead_.begin(), moved_ahead_.lower_bound(position_));
}

std::optional<int64_t> scheduler::next_due_ms() const {
  if (by_time_.empty()) return std::nullopt;
  return by_time_.begin()->first;
}

std::vector<int64_t> scheduler::due_times() const {
  std::vector<int64_t> out;
  out.reserve(window_.size());
  for (const auto& [o, e] : window_) out.push_back(e.due_ms);
  std::sort(out.begin(), out.end());
  return out;
}

checkpoint scheduler::current_checkpoint() const {
  checkpoint c;
  c.position = position_;
  c.moved_ahead.assign(moved_ahead_.begin(), moved_ahead_.end());
  for (const auto& [o, at] : uncertain_) {
    c.in_flight.push_back(o);
    c.intent_ms = c.intent_ms < 0 ? at : std::min(c.intent_ms, at);
  }
  return c;
}

}  // namespace ringlog::delay
