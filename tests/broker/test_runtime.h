#pragma once
// A deterministic shard_runtime for broker tests: one worker thread runs every shard's tasks
// from a single FIFO queue (so the order is reproducible), timers fire only when the test
// advances the simulated clock, and each shard's disk executor is the portable one, polled
// after every task while it has work in flight.

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "ringlog/base/clock.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::test {

class test_runtime final : public runtime::shard_runtime {
 public:
  test_runtime(size_t shards, base::manual_clock& clock) : clock_(clock) {
    for (size_t i = 0; i < shards; ++i) disks_.push_back(io::make_posix_disk_executor());
    worker_ = std::thread([this] { run(); });
  }
  ~test_runtime() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  [[nodiscard]] size_t shard_count() const override { return disks_.size(); }
  /// The shard whose task runs on the calling thread; shard_count() on any other thread (the
  /// test's own thread is never a shard).
  [[nodiscard]] size_t current_shard() const override {
    return std::this_thread::get_id() == worker_.get_id() ? current_ : disks_.size();
  }
  void post(size_t shard, task t) override {
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(shard, std::move(t));
    }
    wake_.notify_all();
  }
  void post_after(size_t shard, int64_t delay_ms, task t) override {
    std::lock_guard lock(mutex_);
    timers_.emplace(clock_.now_ms() + delay_ms, std::make_pair(shard, std::move(t)));
  }
  io::disk_executor& disk(size_t shard) override { return *disks_[shard]; }

  /// Blocks until every queued task has run (timers not yet due stay pending).
  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  }

  /// Moves the simulated clock and queues every timer that became due.
  void advance_ms(int64_t ms) {
    std::lock_guard lock(mutex_);
    clock_.advance_ms(ms);
    while (!timers_.empty() && timers_.begin()->first <= clock_.now_ms()) {
      queue_.push_back(std::move(timers_.begin()->second));
      timers_.erase(timers_.begin());
    }
    wake_.notify_all();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      idle_.notify_all();
      // A disk with work in flight (an fsync the metadata quorum or a produce waits for) is
      // polled until it completes, as a shard's loop would; otherwise wait for a task.
      if (disks_busy()) {
        wake_.wait_for(lock, std::chrono::milliseconds(1), [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty() && !stop_) {
          busy_ = true;
          lock.unlock();
          poll_disks();
          lock.lock();
          busy_ = false;
          continue;
        }
      } else {
        wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      }
      if (stop_ && queue_.empty()) return;
      auto [shard, t] = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      current_ = shard;
      t();
      if (disks_[shard]->in_flight() > 0) {
        disks_[shard]->poll(std::chrono::milliseconds(0));
      }
      current_ = disks_.size();
      lock.lock();
      busy_ = false;
    }
  }

  bool disks_busy() const {
    for (const auto& d : disks_) {
      if (d->in_flight() > 0) return true;
    }
    return false;
  }
  void poll_disks() {
    for (size_t shard = 0; shard < disks_.size(); ++shard) {
      if (disks_[shard]->in_flight() == 0) continue;
      current_ = shard;
      disks_[shard]->poll(std::chrono::milliseconds(0));
    }
    current_ = disks_.size();
  }

  base::manual_clock& clock_;
  std::vector<std::unique_ptr<io::disk_executor>> disks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  bool busy_ = false;
  std::deque<std::pair<size_t, task>> queue_;
  std::multimap<int64_t, std::pair<size_t, task>> timers_;
  bool stop_ = false;
  size_t current_ = 0;   // touched by the worker only
  std::thread worker_;
};

}  // namespace ringlog::test
