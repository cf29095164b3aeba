// shard_threads: tasks run on their shard in FIFO order, timers fire, and the admission bound
// (cross_shard_queue_tasks_max) refuses new client work while a shard's queue is full.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "ringlog/runtime/constants.h"
#include "ringlog/runtime/shard_threads.h"

namespace ringlog::runtime {
namespace {

/// Polls `done` until it holds or 10 s pass (never a fixed sleep standing in for a condition).
template <typename F>
bool wait_for(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

std::unique_ptr<shard_threads> make(size_t shards) {
  auto r = shard_threads::create(shards, io::backend_kind::posix, nullptr);
  REQUIRE(r.ok());
  return std::move(r).value();
}

}  // namespace

TEST_CASE("tasks run on their own shard, in the order posted") {
  auto rt = make(2);
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<int> wrong_shard{0};
  for (int i = 0; i < 100; ++i) {
    rt->post(1, [&, i] {
      if (rt->current_shard() != 1) ++wrong_shard;
      std::lock_guard lock(mutex);
      order.push_back(i);
    });
  }
  rt->start();
  REQUIRE(wait_for([&] {
    std::lock_guard lock(mutex);
    return order.size() == 100;
  }));
  CHECK(wrong_shard == 0);
  for (int i = 0; i < 100; ++i) CHECK(order[static_cast<size_t>(i)] == i);
  CHECK(rt->current_shard() == 2);   // not called from a shard
  rt->stop();
}

TEST_CASE("a full shard queue refuses new client work until it drains") {
  auto rt = make(2);
  std::atomic<size_t> ran{0};
  // Not started: everything posted stays queued.
  for (size_t i = 0; i + 1 < constants::cross_shard_queue_tasks_max; ++i) rt->post(0, [&] { ++ran; });
  CHECK(rt->admits(0));
  rt->post(0, [&] { ++ran; });
  CHECK(rt->queued_tasks(0) == constants::cross_shard_queue_tasks_max);
  CHECK_FALSE(rt->admits(0));
  CHECK(rt->admits(1));   // the bound is per shard
  rt->start();
  REQUIRE(wait_for([&] { return ran.load() == constants::cross_shard_queue_tasks_max; }));
  REQUIRE(wait_for([&] { return rt->queued_tasks(0) == 0; }));
  CHECK(rt->admits(0));
  rt->stop();
}

TEST_CASE("post_after runs the task on its shard") {
  auto rt = make(1);
  rt->start();
  std::atomic<bool> fired{false};
  rt->post_after(0, 5, [&] { fired = true; });
  REQUIRE(wait_for([&] { return fired.load(); }));
  rt->stop();
}

}  // namespace ringlog::runtime
