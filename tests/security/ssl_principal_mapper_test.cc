#include <doctest/doctest.h>

#include "ringlog/security/ssl_principal_mapper.h"

using ringlog::security::ssl_principal_mapper;

TEST_CASE("ssl.principal.mapping.rules: DEFAULT is the whole subject, as Kafka") {
  auto m = ssl_principal_mapper::parse("");
  REQUIRE(m.ok());
  CHECK(m->map("CN=alice,OU=eng,O=acme")->to_string() == "User:CN=alice,OU=eng,O=acme");
}

TEST_CASE("ssl.principal.mapping.rules: the first matching RULE wins, with groups and case flags") {
  // Kafka's documentation examples (KIP-371).
  auto m = ssl_principal_mapper::parse(
      "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\nRULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
      "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT");
  REQUIRE(m.ok());
  CHECK(m->map("CN=kafka-client,OU=ServiceUsers,O=Unknown")->name == "kafka-client");
  CHECK(m->map("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US")->name == "duke@javasoft");
  CHECK(m->map("OU=x,CN=Bob.Smith")->name == "BOB.SMITH");
  CHECK(m->map("O=nocn")->name == "O=nocn");   // DEFAULT last
}

TEST_CASE("ssl.principal.mapping.rules: no matching rule is refused; bad rules name the key") {
  auto m = ssl_principal_mapper::parse("RULE:^CN=(.*)$/$1/");
  REQUIRE(m.ok());
  CHECK(m->map("CN=alice")->name == "alice");
  CHECK_FALSE(m->map("O=acme").has_value());
  for (const char* bad : {"RULE:^CN=(.*)$", "NOPE", "RULE:([/x/", "DEFAULT DEFAULT"}) {
    auto r = ssl_principal_mapper::parse(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("ssl.principal.mapping.rules=") == 0);
  }
}
