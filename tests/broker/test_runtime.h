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
  [[nodiscard]] size_t current_shard() const override { return current_; }
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
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
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

  base::manual_clock& clock_;
  std::vector<std::unique_ptr<io::disk_executor>> disks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  bool busy_ = false;
  std::deque<std::pair<size_t, task>> queue_;
  std::multimap<int64_t, std::pair<size_t, task>> timers_;
  bool stop_ = false;
  size_t current_ = 0;
  std::thread worker_;
};

}  // namespace ringlog::test
