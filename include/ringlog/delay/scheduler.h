#pragma once
// The delay scheduler of one delay partition (issue 18, design.md section 7): a deterministic
// state machine. It reads the partition in log order into a bounded window of (offset, due)
// entries, moves due records in due order, and commits its progress as checkpoints (checkpoint.h)
// written to the partition itself. It never calls a clock or does I/O: the broker feeds it reads,
// the time and the outcomes of its effects (broker/delay_service.cc), tests drive it by hand.
//
// Protocol (the move is exactly-once across crashes, see docs/delayed-delivery.md):
//   1. Intents, ahead of time: poll() asks for an intent checkpoint naming window records due
//      within intent_ahead_ms that no durable checkpoint names yet (in_flight), with the time; the
//      broker appends it to the partition (acks=all) and calls checkpoint_written.
//   2. Moves: once records are due and named by a durable intent, poll() asks for them (at most
//      move_batch_records_max, in due order); the broker produces each to its target with the
//      dedup header source_header, acks=all, and reports each with move_done.
//   3. Every later checkpoint (the next intent, or a plain one) records the moved as moved and
//      keeps naming the rest of the intents. A scheduler that starts from a checkpoint with
//      in_flight entries asks the broker to look each up in its target (move::verify_first)
//      before producing it again.
//   An intent and a step's moves may be outstanding at the same time (one of each): the intent's
//   fsync is off the path of records already named, which is what keeps lateness to one produce
//   round trip at 10,000 records/s (docs/benchmarks.md). A record due sooner than an intent
//   round trip after it was read waits for its intent.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "ringlog/delay/checkpoint.h"
#include "ringlog/delay/constants.h"
#include "ringlog/model/types.h"

namespace ringlog::delay {

struct scheduler_limits {
  size_t window_records_max = delay::window_records_max;
  size_t window_read_records_min = delay::window_read_records_min;
  int64_t intent_ahead_ms = delay::intent_ahead_ms;
  size_t intent_records_max = delay::intent_records_max;
  size_t move_batch_records_max = delay::move_batch_records_max;
  size_t moved_ahead_max = delay::moved_ahead_max;
  int64_t move_retry_backoff_ms = delay::move_retry_backoff_ms;
};

/// A delay record as the scheduler sees it: its offset and due time (ms since the epoch).
struct pending_entry {
  model::offset offset{0};
  int64_t due_ms = 0;
};

struct move {
  model::offset offset{0};
  /// The record may already be in its target (an intent of an earlier step or life that did not
  /// finish): look for its dedup key in the target's records since verify_since_ms first.
  bool verify_first = false;
  int64_t verify_since_ms = -1;
};

enum class move_outcome {
  moved,     // in the target (appended now, or found there by the verification)
  dropped,   // cannot ever be delivered (the target topic or partition is gone): counts as done
  retry,     // may or may not be in the target: verify, then move again after the backoff
};

/// What the broker does next. At most one kind is set: a read, a checkpoint or moves. A
/// checkpoint and moves may be outstanding together: the broker polls again after starting either.
struct effects {
  std::optional<model::offset> read_from;     // read delay records from here (up to the high watermark)
  size_t read_records_max = 0;                // at most this many delay records (checkpoints do not count)
  std::optional<checkpoint> write_checkpoint; // append this checkpoint (acks=all), then checkpoint_written
  std::vector<move> moves;                    // produce these, then move_done for each
};

class scheduler {
 public:
  /// Starts from the partition's latest checkpoint (a default one: from offset 0, or the log start).
  explicit scheduler(checkpoint start, scheduler_limits limits = {});

  /// What to do now, given the time and the partition's high watermark (exclusive end of what
  /// may be read). Never a second checkpoint while one is outstanding, nor moves while moves are.
  [[nodiscard]] effects poll(int64_t now_ms, model::offset high_watermark);
  /// The result of effects::read_from: `entries` are the delay records read, ascending, each
  /// >= the read offset and < next_offset; every other offset below next_offset was not a delay
  /// record (a checkpoint, or a record that does not decode: the broker logs it).
  void on_read(std::span<const pending_entry> entries, model::offset next_offset);
  /// The checkpoint asked for was appended (ok) or not (its moves are not sent; tried again).
  void checkpoint_written(bool ok);
  /// The outcome of one of the moves asked for.
  void move_done(model::offset offset, move_outcome outcome, int64_t now_ms);

  // ---- observation (console, metrics, tests)
  [[nodiscard]] model::offset position() const { return position_; }
  [[nodiscard]] model::offset read_offset() const { return read_offset_; }
  [[nodiscard]] size_t window_size() const { return window_.size(); }
  /// Earliest due time in the window, or nullopt.
  [[nodiscard]] std::optional<int64_t> next_due_ms() const;
  /// Due times of the window's entries, ascending by (due, offset); for histograms.
  [[nodiscard]] std::vector<int64_t> due_times() const;
  [[nodiscard]] uint64_t moved_total() const { return moved_total_; }
  [[nodiscard]] uint64_t dropped_total() const { return dropped_total_; }
  [[nodiscard]] bool idle() const { return checkpoint_ == checkpoint_kind::none && batch_outstanding_.empty(); }
  /// The checkpoint that describes the state now (what a plain checkpoint would write).
  [[nodiscard]] checkpoint current_checkpoint() const;

 private:
  enum class checkpoint_kind { none, intent, plain };
  struct entry {
    int64_t due_ms = 0;
    int64_t not_before_ms = 0;   // a retried move waits for its backoff
  };
  void compact();
  /// Due records that may be sent now (named by a durable checkpoint), in due order.
  std::vector<move> select_batch(int64_t now_ms) const;
  /// Window records due by now + intent_ahead_ms that no checkpoint names yet, in due order.
  std::vector<model::offset> select_intent(int64_t now_ms) const;

  scheduler_limits limits_;
  model::offset position_{0};
  model::offset read_offset_{0};
  std::map<model::offset, entry> window_;                   // unmoved delay records in [position_, read_offset_)
  std::set<std::pair<int64_t, model::offset>> by_time_;     // (max(due, not_before), offset) of window_
  std::set<model::offset> moved_ahead_;                     // moved, >= position_, not in window_
  // Every window record a durable checkpoint names as in flight is in exactly one of these two:
  std::map<model::offset, int64_t> uncertain_;              // offset -> intent ms: may be in the target (verify)
  std::map<model::offset, int64_t> intended_;               // offset -> intent ms: not sent in this life
  std::map<model::offset, int64_t> intent_writing_;         // named by the intent being written
  std::set<model::offset> batch_outstanding_;               // the step's moves not yet reported
  checkpoint_kind checkpoint_ = checkpoint_kind::none;      // the checkpoint being written
  bool dirty_ = false;                                      // moved since the last checkpoint began
  uint64_t moved_total_ = 0;
  uint64_t dropped_total_ = 0;
};

}  // namespace ringlog::delay
