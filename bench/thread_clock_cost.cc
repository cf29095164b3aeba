// The cost of one clock read (issue 33): clock_gettime(CLOCK_THREAD_CPUTIME_ID), which every
// base::cpu_scope reads twice, next to CLOCK_MONOTONIC (served by the vDSO without entering the
// kernel). Prints one JSON object: ns per call of each, the median of 7 rounds of 1,000,000 calls.
// Not part of the build: bench/run-capacity-bench.py compiles it (c++ -O2 thread_clock_cost.cc).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

double ns_per_call(clockid_t clock) {
  constexpr int calls = 1'000'000;
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    timespec ts{};
    long long sink = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      clock_gettime(clock, &ts);
      sink += ts.tv_nsec;
    }
    const auto end = std::chrono::steady_clock::now();
    if (sink == 42) std::puts("");   // keeps the loop
    rounds.push_back(std::chrono::duration<double, std::nano>(end - start).count() / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main() {
  std::printf("{\"thread_cputime_ns\": %.1f, \"monotonic_ns\": %.1f}\n", ns_per_call(CLOCK_THREAD_CPUTIME_ID),
              ns_per_call(CLOCK_MONOTONIC));
}
