#pragma once
// Produces of one topic held in call order while the first of them waits (for the metadata
// barrier, or for the auto-create of its topic): none may overtake it, so a client that pipelines
// produces (WebSocket) finds its records stored in the order it sent them (session 27's local run
// stored a WebSocket's records 0, 2, 3, 4, 1 before the barrier had a line). Any shard's thread
// calls in. Bounded by what callers have in flight (ws_produce_in_flight_max per socket, one per
// HTTP request, the Kafka listener's connection_in_flight_requests_max).

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "ringlog/base/assert.h"
#include "ringlog/broker/broker.h"

namespace ringlog::broker::detail {

/// One produce held in a line: the request and its answer.
struct held_produce {
  produce_request request;
  std::function<void(result<produce_response>)> done;
};

/// Per-topic lines of held produces. A line exists from the produce that opened it until
/// `drain` found it empty; while it exists, every produce of its topic joins its end.
class produce_lines {
 public:
  /// Where join_or_open put a produce.
  enum class placed {
    joined,   // behind the line's earlier produces: `request` and `done` were moved into it
    opened,   // first of a new line: the caller runs it when ready, then drain(topic, ...)
    none,     // no line: the caller runs it now
  };

  /// Under one lock: when `topic`'s line exists, `request` and `done` join its end (joined).
  /// Otherwise `opens()` is asked: true opens the line (opened), false leaves none (none); in
  /// both, `request` and `done` stay with the caller. `topic` is read before anything moves, so
  /// it may be `request.topic`. With no line anywhere and `opens()` false, no lock is taken and
  /// nothing is moved (the common path of every produce).
  template <typename Opens>
  placed join_or_open(const std::string& topic, produce_request& request,
                      std::function<void(result<produce_response>)>& done, Opens opens) {
    if (lines_count_.load() == 0 && !opens()) return placed::none;
    std::lock_guard lock(mutex_);
    if (auto it = lines_.find(topic); it != lines_.end()) {
      it->second.push_back({std::move(request), std::move(done)});
      return placed::joined;
    }
    if (!opens()) return placed::none;
    lines_.try_emplace(topic);
    ++lines_count_;
    return placed::opened;
  }

  /// Runs `topic`'s held produces with `run(held_produce&&)`, oldest first, outside the lock,
  /// until the line is empty, then closes it. Only the opener's continuation calls it, once.
  template <typename Run>
  void drain(const std::string& topic, Run run) {
    while (true) {
      std::deque<held_produce> ready;
      {
        std::lock_guard lock(mutex_);
        auto it = lines_.find(topic);
        RINGLOG_ASSERT(it != lines_.end(), "only the produce that opened a line closes it");
        if (it->second.empty()) {
          lines_.erase(it);
          --lines_count_;
          return;
        }
        ready.swap(it->second);
      }
      for (auto& h : ready) run(std::move(h));
    }
  }

 private:
  std::mutex mutex_;   // guards lines_
  std::map<std::string, std::deque<held_produce>> lines_;
  std::atomic<size_t> lines_count_{0};   // lines_.size(): join_or_open skips the lock at 0
};

}  // namespace ringlog::broker::detail
