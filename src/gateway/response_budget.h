#pragma once
// The bound on HTTP answers held in memory until they are sent (design.md: nothing unbounded,
// every buffer has a named limit).

#include <atomic>
#include <cstdint>
#include <memory>

namespace ringlog::gateway {

/// Bytes of HTTP record answers (GET .../records, v2 consumer records) built and not yet on the
/// wire, all connections of the server together. A client that asks for a 64 MiB answer and never
/// reads it holds that answer until its connection closes; past this bound a read answers 503
/// (50301, Retry-After) naming it instead of building another. As large as the WebSocket's
/// ws_write_queue_total_bytes_max: many slow readers cost at most this much (plus kernel buffers).
inline constexpr int64_t http_response_bytes_held_max = int64_t{256} << 20;

/// Counts bytes held against a maximum. Thread safe (connections of every shard share one).
class held_bytes_budget {
 public:
  explicit held_bytes_budget(int64_t max) : max_(max) {}

  /// A hold on `bytes`, given back when its last copy is destroyed (the answer was sent or its
  /// connection closed); nullptr when it would pass the maximum. When nothing is held one hold
  /// of any size is granted, so an answer larger than the maximum is still served alone.
  [[nodiscard]] std::shared_ptr<const void> hold(int64_t bytes) {
    int64_t now = held_->load();
    do {
      if (now > 0 && now + bytes > max_) return nullptr;
    } while (!held_->compare_exchange_weak(now, now + bytes));
    return {held_.get(), [held = held_, bytes](const void*) { *held -= bytes; }};
  }

  /// Bytes held now.
  [[nodiscard]] int64_t held() const { return held_->load(); }
  [[nodiscard]] int64_t max() const { return max_; }

 private:
  // Shared with the holds: one may outlive the budget (a write finishing after the server).
  std::shared_ptr<std::atomic<int64_t>> held_ = std::make_shared<std::atomic<int64_t>>(0);
  int64_t max_;
};

}  // namespace ringlog::gateway
