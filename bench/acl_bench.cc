// What authorization costs one produce request (issue 30: produce throughput with 1,000 ACLs
// under 3% of no authorizer), as the Kafka listener checks it per partition of a Produce
// (request_context::authorized -> broker_impl::authorize -> acl_index::authorize, without the
// metadata view's load): no authorizer (the flag test the broker makes first), and the
// StandardAuthorizer's check of WRITE on the topic against 1,000 ACLs, LITERAL and PREFIXED over
// 100 principals, the producer's among them (bench/run-acl-bench.py sets up the same rule set on
// a real broker). Set beside the broker's CPU per produce request: end to end the machine's
// noise hides the difference. Run: meson configure build -Dbenchmarks=true, then
// build/bench/acl_bench.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "ringlog/security/acl.h"

using namespace ringlog::security;

namespace {

/// 1,000 ACLs: for each of 100 principals, LITERAL READ/WRITE/DESCRIBE on five topics of its
/// own and a PREFIXED WRITE on its prefix; the producer `User:p42` among them.
std::vector<acl_binding> thousand_acls() {
  std::vector<acl_binding> out;
  const acl_operation ops[] = {acl_operation::read, acl_operation::write};
  for (int p = 0; p < 100; ++p) {
    const std::string principal = "User:p" + std::to_string(p);
    for (int t = 0; t < 5; ++t) {
      for (auto op : ops) {
        out.push_back({resource_type::topic, "team" + std::to_string(p) + "-topic" + std::to_string(t),
                       pattern_type::literal, principal, "*", op, acl_permission_type::allow});
      }
    }
  }
  for (int p = 0; p < 100 && out.size() < 1000; ++p) {
    const std::string principal = "User:p" + std::to_string(p);
    for (int k = 0; k < 10 && out.size() < 1000; ++k) {
      out.push_back({resource_type::topic, "team" + std::to_string(p) + "-area" + std::to_string(k) + "-",
                     pattern_type::prefixed, principal, "*", acl_operation::write, acl_permission_type::allow});
    }
  }
  return out;
}

void bm_no_authorizer(benchmark::State& state) {
  // The broker answers "allowed" when authorizer.class.name is unset, before any index.
  volatile bool authorizer_enabled = false;
  for (auto _ : state) benchmark::DoNotOptimize(authorizer_enabled ? 0 : 1);
}
BENCHMARK(bm_no_authorizer);

void bm_write_check_with_1000_acls(benchmark::State& state) {
  const acl_index index(thousand_acls());
  const authorizer_settings settings{{"User:admin"}, false};
  const auto producer = kafka_principal::user("p42");
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        index.authorize(producer, "127.0.0.1", acl_action{resource_type::topic, "team42-area3-orders", acl_operation::write},
                        settings));
  }
}
BENCHMARK(bm_write_check_with_1000_acls);

void bm_refused_check_with_1000_acls(benchmark::State& state) {
  const acl_index index(thousand_acls());
  const authorizer_settings settings{{"User:admin"}, false};
  const auto stranger = kafka_principal::user("nobody");
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        index.authorize(stranger, "127.0.0.1", acl_action{resource_type::topic, "team42-topic1", acl_operation::write},
                        settings));
  }
}
BENCHMARK(bm_refused_check_with_1000_acls);

}  // namespace

BENCHMARK_MAIN();
