#include "ringlog/delay/scheduler.h"

#include <algorithm>

#include "ringlog/base/assert.h"

namespace ringlog::delay {

scheduler::scheduler(checkpoint start, scheduler_limits limits)
    : limits_(limits), position_(start.position), read_offset_(start.position) {
  RINGLOG_ASSERT(limits_.window_records_max > 0 && limits_.move_batch_records_max > 0, "limits are positive");
  RINGLOG_ASSERT(limits_.intent_records_max > 0 && limits_.intent_ahead_ms >= 0, "intent limits are valid");
  moved_ahead_.insert(start.moved_ahead.begin(), start.moved_ahead.end());
  for (auto o : start.in_flight) uncertain_[o] = start.intent_ms;
}

effects scheduler::poll(int64_t now_ms, model::offset high_watermark) {
  effects out;
  // Fill the window first: reads are synchronous for the broker, and a due record may be among
  // them. Refill in chunks (window_read_records_min): every read decodes whole batches.
  const size_t chunk = std::max<size_t>(1, std::min(limits_.window_read_records_min, limits_.window_records_max / 4));
  if (window_.size() + chunk <= limits_.window_records_max && read_offset_ < high_watermark) {
    out.read_from = read_offset_;
    out.read_records_max = limits_.window_records_max - window_.size();
    return out;
  }
  // Moves first: due records a durable checkpoint names go out at once.
  if (batch_outstanding_.empty()) {
    auto batch = select_batch(now_ms);
    if (!batch.empty()) {
      for (const auto& m : batch) batch_outstanding_.insert(m.offset);
      out.moves = std::move(batch);
      return out;
    }
  }
  if (checkpoint_ != checkpoint_kind::none) return out;
  auto named = select_intent(now_ms);
  if (!named.empty()) {
    // The intent: every record that may be sent after this point, and a time before any of them
    // is sent, so that a restarted scheduler can look for them in their targets.
    for (auto o : named) intent_writing_[o] = now_ms;
    checkpoint_ = checkpoint_kind::intent;
    dirty_ = false;
    out.write_checkpoint = current_checkpoint();
    return out;
  }
  if (dirty_) {
    checkpoint_ = checkpoint_kind::plain;
    dirty_ = false;
    out.write_checkpoint = current_checkpoint();
  }
  return out;
}

std::vector<model::offset> scheduler::select_intent(int64_t now_ms) const {
  std::vector<model::offset> out;
  const size_t named = intended_.size();
  if (named >= limits_.intent_records_max) return out;
  const size_t room = limits_.intent_records_max - named;
  const int64_t horizon = now_ms > INT64_MAX - limits_.intent_ahead_ms ? INT64_MAX : now_ms + limits_.intent_ahead_ms;
  // Scans past the named ones (at most intended_ + uncertain_ of them) to the first unnamed.
  for (const auto& [at_ms, o] : by_time_) {
    if (at_ms > horizon || out.size() >= room) break;
    if (intended_.contains(o) || uncertain_.contains(o)) continue;
    out.push_back(o);
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
  auto sendable = [this](model::offset o) { return intended_.contains(o) || uncertain_.contains(o); };
  const auto& h = window_.begin()->second;
  const bool head_due = std::max(h.due_ms, h.not_before_ms) <= now_ms;
  // Moves out of log order are remembered in the checkpoint (moved_ahead) until the position
  // passes them; when that list is full only the head may move (it frees the list as it goes).
  size_t slots = limits_.moved_ahead_max > moved_ahead_.size() ? limits_.moved_ahead_max - moved_ahead_.size() : 0;
  bool head_taken = false;
  // The due records in due order, as far as a durable checkpoint names them: one not named yet
  // waits for its intent, and so do the ones due after it (due order is kept).
  for (const auto& [at_ms, o] : by_time_) {
    if (at_ms > now_ms || batch.size() >= limits_.move_batch_records_max || !sendable(o)) break;
    if (o == head) {
      head_taken = true;
    } else if (slots == 0) {
      break;
    } else {
      --slots;
    }
    batch.push_back(as_move(o));
  }
  if (head_due && !head_taken && sendable(head) && batch.size() < limits_.move_batch_records_max) {
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
  RINGLOG_ASSERT(checkpoint_ != checkpoint_kind::none, "a checkpoint was asked for");
  const bool intent = checkpoint_ == checkpoint_kind::intent;
  checkpoint_ = checkpoint_kind::none;
  if (!ok) {
    // Moved records it would have recorded are recorded by the next one; records it would have
    // named are not sent (they wait for the next intent).
    dirty_ = true;
    intent_writing_.clear();
    return;
  }
  if (intent) {
    for (const auto& [o, at] : intent_writing_) {
      // Moved or dropped meanwhile? Then it is no longer in the window: nothing to send.
      if (window_.contains(o) && !uncertain_.contains(o)) intended_.emplace(o, at);
    }
    intent_writing_.clear();
  }
}

void scheduler::move_done(model::offset offset, move_outcome outcome, int64_t now_ms) {
  auto in_batch = batch_outstanding_.find(offset);
  RINGLOG_ASSERT(in_batch != batch_outstanding_.end(), "the offset was in the step's moves, not reported yet");
  auto w = window_.find(offset);
  RINGLOG_ASSERT(w != window_.end(), "a moved offset is in the window until its move is done");
  by_time_.erase({std::max(w->second.due_ms, w->second.not_before_ms), offset});
  if (outcome == move_outcome::retry) {
    // It may have reached the target (a timeout): the next attempt looks there first, from the
    // intent that named it (never later than it was sent).
    int64_t since = now_ms;
    if (auto i = intended_.find(offset); i != intended_.end()) {
      since = i->second;
      intended_.erase(i);
    }
    auto [u, fresh] = uncertain_.try_emplace(offset, since);
    if (!fresh) u->second = std::min(u->second, since);
    w->second.not_before_ms = now_ms + limits_.move_retry_backoff_ms;
    by_time_.insert({std::max(w->second.due_ms, w->second.not_before_ms), offset});
  } else {
    if (outcome == move_outcome::moved) ++moved_total_;
    else ++dropped_total_;
    window_.erase(w);
    uncertain_.erase(offset);
    intended_.erase(offset);
    intent_writing_.erase(offset);
    moved_ahead_.insert(offset);
    dirty_ = true;
  }
  batch_outstanding_.erase(in_batch);
  // At once, not at the end of the step: a checkpoint may be written while moves are out, and
  // its position must not name a moved record (moved_ahead entries lie above the position).
  compact();
}

void scheduler::compact() {
  position_ = window_.empty() ? read_offset_ : std::min(window_.begin()->first, read_offset_);
  // Moved records at or past the position stay remembered; below it the position says it.
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
  std::map<model::offset, int64_t> named(uncertain_.begin(), uncertain_.end());
  named.insert(intended_.begin(), intended_.end());
  named.insert(intent_writing_.begin(), intent_writing_.end());
  for (const auto& [o, at] : named) {
    c.in_flight.push_back(o);
    c.intent_ms = c.intent_ms < 0 ? at : std::min(c.intent_ms, at);
  }
  return c;
}

}  // namespace ringlog::delay
