// What quota accounting costs one produce request (issue 31: under 2% of the produce path), as
// the broker does it per request (broker_impl::record_client_quota, without its mutex and the
// metadata view's load): no quota of the key anywhere (the bit test), a quota set only for another
// client (the index lookup that finds nothing), a quota on this client never reached (the lookup,
// then the sensor's record and rate). Run: meson configure build -Dbenchmarks=true, then
// build/bench/quota_bench; set beside the broker's CPU per record (bench/run-quota-bench.py
// MODE=cost).

#include <benchmark/benchmark.h>

#include "ringlog/security/client_quota_sensors.h"
#include "ringlog/security/quota.h"

using namespace ringlog::security;

namespace {

client_quota_index index_with(const char* client_id, double bound) {
  return client_quota_index(
      {{client_quota_entity{{}, quota_entity_name::named(client_id), {}}, {{quota_key::producer_byte_rate, bound}}}});
}

void bm_no_quota_set(benchmark::State& state) {
  const client_quota_index index;
  for (auto _ : state) benchmark::DoNotOptimize(index.any(quota_key::producer_byte_rate));
}
BENCHMARK(bm_no_quota_set);

void bm_quota_on_another_client(benchmark::State& state) {
  const auto index = index_with("other", 1024);
  for (auto _ : state) {
    if (index.any(quota_key::producer_byte_rate)) {
      benchmark::DoNotOptimize(index.quota_for(quota_key::producer_byte_rate, "ANONYMOUS", "bench"));
    }
  }
}
BENCHMARK(bm_quota_on_another_client);

void bm_quota_on_this_client_never_reached(benchmark::State& state) {
  const auto index = index_with("bench", 1e12);
  client_quota_sensors sensors(100'000, 3'600'000);
  int64_t now_ms = 0;
  for (auto _ : state) {
    const auto match = index.quota_for(quota_key::producer_byte_rate, "ANONYMOUS", "bench");
    benchmark::DoNotOptimize(sensors.record(quota_key::producer_byte_rate, *match, 16'384, {11, 1000}, now_ms++ / 20));
  }
}
BENCHMARK(bm_quota_on_this_client_never_reached);

}  // namespace

BENCHMARK_MAIN();
