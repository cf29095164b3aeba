#pragma once
// The memory of request frames being received and handled, shared by every Kafka client
// listener of the broker: Kafka's queued.max.request.bytes (its SocketServer's MemoryPool,
// KIP-72). A connection reserves a frame's declared size once it has read the 4-byte size,
// before it reads the body, and gives it back when the request is answered (or the connection
// closes). A frame that does not fit waits: the connection stops reading (TCP backpressure
// reaches the client) until enough is given back; nothing is refused. Room goes to the waiters
// in arrival order, each that fits (first fit): a small request (a heartbeat, a metadata call)
// is not held behind a 100 MiB frame waiting for room, as Kafka's pool holds no order either.
// A frame larger than the whole pool can never fit: the listener closes its connection with a
// log line naming the key (Kafka's pool allows such a frame to overshoot instead).
// Why: every connection may legally declare up to socket.request.max.bytes (100 MiB) and send it
// slowly; 20 such connections held about 2 GB (breaker of session 36). The pool bounds the
// total to queued.max.request.bytes plus the growth step of the frames being read.
// Thread-safe: connections of every shard share one pool; callbacks of granted waiters run on
// the thread that released the room, outside the pool's lock (post them to your own shard).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

namespace ringlog::runtime {

class request_memory_pool {
 public:
  /// `capacity_bytes` >= 1: queued.max.request.bytes.
  explicit request_memory_pool(size_t capacity_bytes);

  enum class reserve_outcome {
    reserved,    // the bytes are the caller's now
    queued,      // `on_reserved` runs once they are (or never, after cancel() returned true)
    too_large,   // bytes > capacity: it can never fit
  };
  struct reservation {
    reserve_outcome outcome = reserve_outcome::reserved;
    uint64_t ticket = 0;   // queued: what cancel() takes
  };
  /// Reserves `bytes` (>= 1) at once when they fit; else queues the request after the earlier
  /// waiters. `on_reserved` runs at most once, on the thread of a later release(), with the
  /// bytes reserved.
  reservation reserve(size_t bytes, std::function<void()> on_reserved);
  /// Gives back `bytes` reserved before; grants the waiters that now fit, oldest first.
  void release(size_t bytes);
  /// Drops a queued waiter: true when it was still queued (nothing was reserved for it), false
  /// when it was granted already (its on_reserved has run or is running: it owns the bytes).
  bool cancel(uint64_t ticket);

  [[nodiscard]] size_t capacity_bytes() const { return capacity_bytes_; }
  [[nodiscard]] size_t reserved_bytes() const;
  [[nodiscard]] size_t waiters() const;

 private:
  struct waiter {
    uint64_t ticket = 0;
    size_t bytes = 0;
    std::function<void()> on_reserved;
  };
  /// Under mutex_: reserves for every waiter that fits, oldest first, moving their callbacks to
  /// `granted` (run after the lock is dropped).
  void grant_fitting(std::vector<std::function<void()>>& granted);

  const size_t capacity_bytes_;
  mutable std::mutex mutex_;
  size_t reserved_bytes_ = 0;         // [0, capacity_bytes_]
  uint64_t next_ticket_ = 1;
  std::deque<waiter> waiting_;        // oldest first; bounded by the open connections (one each)
};

}  // namespace ringlog::runtime
