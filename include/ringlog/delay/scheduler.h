#pragma once
// The delay scheduler of one delay partition (issue 18, design.md section 7): a deterministic
// state machine. It reads the partition in log order into a bounded window of (offset, due)
// entries, moves due records in due order, and commits its progress as checkpoints (checkpoint.h)
// written to the partition itself. It never calls a clock or does I/O: the broker feeds it reads,
// the time and the outcomes of its effects (broker/delay_service.cc), tests drive it by hand.
//
// Protocol of one step (the move is exactly-once across crashes, see docs/delayed-delivery.md):
//   1. poll() selects due records and asks for an intent checkpoint naming them (in_flight) with
//      the time; the broker appends it to the partition (acks=all) and calls checkpoint_written.
//   2. poll() then asks for the moves; the broker produces each record to its target with the
//      dedup header source_header, acks=all, and reports each with move_done.
//   3. Once all are reported, the next checkpoint (the next step's intent, or a plain one) records
//      them as moved. A scheduler that starts from a checkpoint with in_flight entries asks the
//      broker to look each up in its target (move::verify_first) before producing it again.

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

/// What the broker does next. At most one kind is set: a read, a checkpoint or moves.
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
  /// may be read). Returns no effect while a checkpoint or moves are outstanding, unless a read.
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
  [[nodiscard]] bool idle() const { return phase_ == phase::idle; }
  /// The checkpoint that describes the state now (what a plain checkpoint would write).
  [[nodiscard]] checkpoint current_checkpoint() const;

 private:
  enum class phase { idle, writing_intent, intent_written, moving, writing_plain };
  struct entry {
    int64_t due_ms = 0;
    int64_t not_before_ms = 0;   // a retried move waits for its backoff
  };
  void compact();
  std::vector<move> select_batch(int64_t now_ms) const;

  scheduler_limits limits_;
  model::offset position_{0};
  model::offset read_offset_{0};
  std::map<model::offset, entry> window_;                   // unmoved delay records in [position_, read_offset_)
  std::set<std::pair<int64_t, model::offset>> by_time_;     // (max(due, not_before), offset) of window_
  std::set<model::offset> moved_ahead_;                     // moved, >= position_, not in window_
  std::map<model::offset, int64_t> uncertain_;              // offset -> intent ms: may be in the target
  std::vector<move> batch_;                                 // the step's moves
  size_t outstanding_ = 0;                                  // moves of batch_ not yet reported
  phase phase_ = phase::idle;
  int64_t step_intent_ms_ = -1;                             // intent time of the step in flight
  bool dirty_ = false;                                      // moved since the last checkpoint
  uint64_t moved_total_ = 0;
  uint64_t dropped_total_ = 0;
};

}  // namespace ringlog::delay
