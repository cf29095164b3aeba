#pragma once
// The only way cores read time (design.md section 3): a clock interface, real or simulated.

#include <chrono>
#include <cstdint>

namespace ringlog::base {

class clock {
 public:
  virtual ~clock() = default;
  /// Wall-clock milliseconds since the Unix epoch (record timestamps, retention).
  [[nodiscard]] virtual int64_t now_ms() const = 0;
  /// Milliseconds of a clock that never steps (CLOCK_MONOTONIC), for the durations that decide
  /// something: the leadership lease, brokers' heartbeats and sessions, raft's timers, the ISR's
  /// lag time, start-up deadlines. NTP may step the wall clock: back, it would stretch a lease
  /// past the controller's session timeout (a fenced leader could answer offsets another leader
  /// moved on from); forward, it would fence live brokers and start elections. Its origin is
  /// arbitrary: never compare it with now_ms() or send it to another process. Test and simulated
  /// clocks never step, so by default it is now_ms().
  [[nodiscard]] virtual int64_t monotonic_ms() const { return now_ms(); }
};

/// std::chrono::system_clock; monotonic_ms from std::chrono::steady_clock.
class system_clock final : public clock {
 public:
  [[nodiscard]] int64_t now_ms() const override;
  [[nodiscard]] int64_t monotonic_ms() const override;
};

/// Elapsed monotonic time of a piece of work, for measurements only (histograms, log lines): it
/// decides nothing, so the cores may read it and a simulation stays deterministic.
class stopwatch {
 public:
  stopwatch() : started_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] std::chrono::steady_clock::duration elapsed() const { return std::chrono::steady_clock::now() - started_; }

 private:
  std::chrono::steady_clock::time_point started_;
};

/// A clock tests move by hand.
class manual_clock final : public clock {
 public:
  explicit manual_clock(int64_t start_ms) : now_ms_(start_ms) {}
  [[nodiscard]] int64_t now_ms() const override { return now_ms_; }
  void advance_ms(int64_t delta_ms) { now_ms_ += delta_ms; }
  void set_ms(int64_t now_ms) { now_ms_ = now_ms; }

 private:
  int64_t now_ms_;
};

}  // namespace ringlog::base
