// connection_limits (issue 31): max.connections.per.ip and its overrides, max.connections with the
// cluster listener outside it, the creation rate's token bucket (held, with the delay it asks),
// slots given back when destroyed, and the /metrics counters by listener and reason.

#include "ringlog/runtime/connection_limits.h"

#include <doctest/doctest.h>

#include <vector>

namespace ringlog::runtime {
namespace {

std::shared_ptr<connection_limits> limits_of(connection_limits_config c) {
  auto l = std::make_shared<connection_limits>(std::move(c));
  l->add_listener("PLAINTEXT", {});
  l->add_listener("CLUSTER", {std::nullopt, std::nullopt, true, false});
  return l;
}

TEST_CASE("max.connections.per.ip caps one address; another is admitted; slots come back") {
  auto l = limits_of({.max_connections = 100, .max_connections_per_ip = 2,
                      .max_connections_per_ip_overrides = {{"10.0.0.9", 0}}, .max_connection_creation_rate = 1000});
  std::vector<connection_slot> held;
  for (int i = 0; i < 2; ++i) {
    auto a = l->admit("PLAINTEXT", "10.0.0.1", 0);
    REQUIRE_FALSE(a.refused);
    held.push_back(std::move(a.slot));
  }
  auto third = l->admit("PLAINTEXT", "10.0.0.1", 0);
  REQUIRE(third.refused);
  CHECK(*third.refused == connection_refusal::max_connections_per_ip);
  CHECK(third.delay_ms == 0);
  CHECK_FALSE(l->admit("PLAINTEXT", "10.0.0.2", 0).refused);
  CHECK(l->admit("PLAINTEXT", "10.0.0.9", 0).refused == connection_refusal::max_connections_per_ip);
  held.pop_back();   // one closes: its place is free again
  CHECK_FALSE(l->admit("PLAINTEXT", "10.0.0.1", 0).refused);
  const std::string text = l->metrics_text();
  CHECK(text.find("ringlog_connections_refused_total{listener=\"PLAINTEXT\",reason=\"max.connections.per.ip\"} 2") !=
        std::string::npos);
}

TEST_CASE("max.connections counts every listener but the cluster one; a listener's own limit on top") {
  auto l = limits_of({.max_connections = 2, .max_connections_per_ip = 100, .max_connections_per_ip_overrides = {}, .max_connection_creation_rate = 1000});
  l->add_listener("SSL", {1, std::nullopt, false, false});
  l->add_listener("HTTP", {std::nullopt, std::nullopt, false, true});
  auto a = l->admit("PLAINTEXT", "10.0.0.1", 0);
  auto b = l->admit("SSL", "10.0.0.2", 0);
  REQUIRE_FALSE(a.refused);
  REQUIRE_FALSE(b.refused);
  CHECK(l->admit("SSL", "10.0.0.3", 0).refused == connection_refusal::max_connections);
  CHECK(l->admit("PLAINTEXT", "10.0.0.3", 0).refused == connection_refusal::max_connections);
  CHECK_FALSE(l->admit("CLUSTER", "10.0.0.3", 0).refused);   // inter-broker: outside max.connections
  // http:// has its own total (http.connections.max): slow HTTP clients take no Kafka places
  // (the breaker's https slowloris locked every Kafka listener out).
  CHECK_FALSE(l->admit("HTTP", "10.0.0.4", 0).refused);
  CHECK_FALSE(l->admit("HTTP", "10.0.0.5", 0).refused);
}

TEST_CASE("max.connection.creation.rate: a second's burst passes, then each waits for its token") {
  auto l = limits_of({.max_connections = 100, .max_connections_per_ip = 100, .max_connections_per_ip_overrides = {}, .max_connection_creation_rate = 10});
  std::vector<connection_slot> held;
  for (int i = 0; i < 10; ++i) {
    auto a = l->admit("PLAINTEXT", "10.0.0." + std::to_string(i), 1000);
    REQUIRE_FALSE(a.refused);
    held.push_back(std::move(a.slot));
  }
  auto over = l->admit("PLAINTEXT", "10.0.0.50", 1000);
  REQUIRE(over.refused == connection_refusal::max_connection_creation_rate);
  CHECK(over.delay_ms == 100);   // one token at 10 per second
  CHECK_FALSE(l->admit("PLAINTEXT", "10.0.0.50", 1100).refused);
  CHECK_FALSE(l->admit("CLUSTER", "10.0.0.51", 1100).refused);   // the cluster listener has no broker-wide rate
}

TEST_CASE("http's connect storm takes its own bucket of max.connection.creation.rate, not the Kafka listeners'") {
  // The breaker's t4_storm.py: twenty addresses looping connect/close on http:// used up the
  // broker-wide rate and fresh PLAINTEXT clients were refused.
  auto l = limits_of({.max_connections = 100, .max_connections_per_ip = 100, .max_connections_per_ip_overrides = {}, .max_connection_creation_rate = 10});
  l->add_listener("HTTP", {std::nullopt, std::nullopt, false, true});
  for (int i = 0; i < 10; ++i) CHECK_FALSE(l->admit("HTTP", "10.0.1." + std::to_string(i), 1000).refused);
  CHECK(l->admit("HTTP", "10.0.1.99", 1000).refused == connection_refusal::max_connection_creation_rate);
  for (int i = 0; i < 10; ++i) CHECK_FALSE(l->admit("PLAINTEXT", "10.0.2." + std::to_string(i), 1000).refused);
}

TEST_CASE("connection_creation_rate of an ip entity (KIP-612): that address alone is held, others pass") {
  auto l = limits_of({.max_connections = 100, .max_connections_per_ip = 100, .max_connections_per_ip_overrides = {}, .max_connection_creation_rate = 1000});
  l->set_ip_creation_rate([](std::string_view address) -> std::optional<double> {
    if (address == "10.0.0.1") return 2.0;
    return std::nullopt;
  });
  std::vector<connection_slot> held;
  for (int i = 0; i < 2; ++i) {
    auto a = l->admit("PLAINTEXT", "10.0.0.1", 1000);
    REQUIRE_FALSE(a.refused);
    held.push_back(std::move(a.slot));
  }
  auto over = l->admit("PLAINTEXT", "10.0.0.1", 1000);
  REQUIRE(over.refused == connection_refusal::connection_creation_rate);
  CHECK(over.delay_ms == 500);   // one token at 2 per second
  CHECK_FALSE(l->admit("PLAINTEXT", "10.0.0.2", 1000).refused);   // another address: no quota
  CHECK_FALSE(l->admit("CLUSTER", "10.0.0.1", 1000).refused);     // the cluster listener is outside it
  CHECK_FALSE(l->admit("PLAINTEXT", "10.0.0.1", 1500).refused);   // its token is back
  CHECK(l->metrics_text().find("reason=\"connection_creation_rate\"} 1") != std::string::npos);
}

}  // namespace
}  // namespace ringlog::runtime
