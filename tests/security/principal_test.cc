#include <doctest/doctest.h>

#include "ringlog/security/principal.h"
#include "ringlog/security/user_admin.h"

using ringlog::security::is_super_user;
using ringlog::security::kafka_principal;
using ringlog::security::users_change_refusal;

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

TEST_CASE("without an authorizer a logged-in caller changes users only as a super user") {
  const std::vector<std::string> supers = {"User:admin"};
  CHECK(is_super_user(supers, kafka_principal::user("admin")));
  CHECK_FALSE(is_super_user(supers, kafka_principal::user("alice")));
  CHECK_FALSE(users_change_refusal(supers, kafka_principal::user("admin"), true).has_value());
  // A caller that did not log in (PLAINTEXT, HTTP without authentication) is not asked.
  CHECK_FALSE(users_change_refusal(supers, kafka_principal{}, false).has_value());
  auto refused = users_change_refusal(supers, kafka_principal::user("alice"), true);
  REQUIRE(refused.has_value());
  CHECK(refused->find("User:alice may not change users") != std::string::npos);
  CHECK(refused->find("super.users=User:alice") != std::string::npos);
}
