#pragma once
// Waits for one asynchronous broker call: `start(done)` must call `done` exactly once.

#include <doctest.h>

#include <chrono>
#include <future>

namespace ringlog::test {

template <typename T, typename F>
T call(F&& start) {
  std::promise<T> p;
  auto f = p.get_future();
  start([&p](T v) { p.set_value(std::move(v)); });
  REQUIRE(f.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  return f.get();
}

}  // namespace ringlog::test
