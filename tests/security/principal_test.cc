#include <doctest/doctest.h>

#include "ringlog/security/principal.h"

using ringlog::security::kafka_principal;

TEST_CASE("a principal prints and parses as Kafka's TYPE:NAME") {
  CHECK(kafka_principal{}.to_string() == "User:ANONYMOUS");
  CHECK(kafka_principal{}.anonymous());
  auto p = kafka_principal::parse("User:CN=broker,O=ringlog:x");
  REQUIRE(p.ok());
  CHECK(p->principal_type == "User");
  CHECK(p->name == "CN=broker,O=ringlog:x");
  CHECK(p.value() == kafka_principal::user("CN=broker,O=ringlog:x"));
  for (const char* bad : {"alice", ":alice", "User:", ""}) {
    auto r = kafka_principal::parse(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("TYPE:NAME") != std::string::npos);
  }
}
