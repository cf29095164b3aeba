#include <doctest/doctest.h>

#include "ringlog/security/http_auth.h"

using namespace ringlog::security;

TEST_CASE("http.authentication.method: NONE, BASIC, BEARER and lists") {
  CHECK_FALSE(http_auth_methods::parse("NONE")->enabled());
  auto both = http_auth_methods::parse(" basic , Bearer");
  REQUIRE(both.ok());
  CHECK(both->basic);
  CHECK(both->bearer);
  CHECK(both->to_string() == "BASIC,BEARER");
  CHECK(http_auth_methods::parse("BEARER")->to_string() == "BEARER");
  for (const char* bad : {"DIGEST", "", "BASIC,", "NONE,BASIC"}) {
    CAPTURE(bad);
    auto r = http_auth_methods::parse(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("http.authentication.method") != std::string::npos);
  }
}

TEST_CASE("Authorization: Basic and Bearer") {
  auto c = parse_basic_authorization("Basic YWxpY2U6czNjcjp0");   // alice:s3cr:t
  REQUIRE(c);
  CHECK(c->user == "alice");
  CHECK(c->password == "s3cr:t");
  CHECK(parse_basic_authorization("basic YWxpY2U6czNjcjp0"));
  CHECK_FALSE(parse_basic_authorization("Basic !!!"));
  CHECK_FALSE(parse_basic_authorization("Basic YWxpY2U="));   // "alice": no ':'
  CHECK_FALSE(parse_basic_authorization("Bearer abc"));
  CHECK(parse_bearer_authorization("Bearer abc.def.ghi") == std::optional<std::string_view>("abc.def.ghi"));
  CHECK_FALSE(parse_bearer_authorization("Bearer "));
  CHECK_FALSE(parse_bearer_authorization("Basic YWxpY2U6czNjcjp0"));
}

TEST_CASE("sessions and tokens expire, end, and are bounded") {
  http_session_limits limits;
  limits.sessions_max = 2;
  limits.tokens_max = 1;
  limits.session_max_age_ms = 1000;
  limits.token_max_age_ms = 100;
  http_session_table t(limits);
  auto alice = t.create_session(kafka_principal::user("alice"), 0);
  auto bob = t.create_session(kafka_principal::user("bob"), 10);
  REQUIRE(alice);
  REQUIRE(bob);
  CHECK(alice->first != bob->first);
  CHECK(alice->first.size() == 43);   // 256 bits, base64url
  CHECK(alice->second.csrf_token.size() == 43);
  CHECK_FALSE(t.create_session(kafka_principal::user("carol"), 20));   // full
  CHECK(t.find_session(alice->first, 999)->principal.to_string() == "User:alice");
  CHECK_FALSE(t.find_session(alice->first, 1000));   // expired, and dropped
  CHECK(t.create_session(kafka_principal::user("carol"), 1000));
  CHECK(t.end_session(bob->first));
  CHECK_FALSE(t.find_session(bob->first, 20));
  CHECK_FALSE(t.end_session(bob->first));
  CHECK_FALSE(t.find_session("guess", 0));

  auto token = t.issue_token(kafka_principal::user("alice"), 0);
  REQUIRE(token);
  CHECK(token->second.csrf_token.empty());
  CHECK_FALSE(t.issue_token(kafka_principal::user("alice"), 50));
  CHECK(t.find_token(token->first, 99));
  CHECK_FALSE(t.find_token(token->first, 100));
  CHECK(t.issue_token(kafka_principal::user("alice"), 100));
  CHECK_FALSE(t.find_token(alice->first, 0));   // a session id is no token
}

TEST_CASE("constant_time_equal") {
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "ab"));
}

#include "ringlog/security/audit.h"

TEST_CASE("audit lines name door, principal, peer and what happened, logfmt-escaped") {
  CHECK(audit_failed_authentication_line("http", "User:bo\"b", "127.0.0.1:5000", "wrong password") ==
        "audit=authentication msg=\"authentication failed\" door=http principal=\"User:bo\\\"b\" "
        "peer=127.0.0.1:5000 reason=\"wrong password\"");
  CHECK(audit_admin_write_line("kafka", kafka_principal::user("alice"), "", "CreateTopics", "orders", "NONE") ==
        "audit=admin msg=\"admin write\" door=kafka principal=\"User:alice\" peer=- operation=\"CreateTopics\" "
        "resource=\"orders\" outcome=\"NONE\"");
}

TEST_CASE("an authorization denial's audit line, and the budget that bounds them per second") {
  CHECK(audit_authorization_denied_line("kafka", kafka_principal::user("bob"), "127.0.0.1",
                                        acl_action{resource_type::topic, "sec\"ret", acl_operation::read}, "Fetch") ==
        "audit=authorization msg=\"authorization denied\" door=kafka principal=\"User:bob\" host=127.0.0.1 "
        "operation=READ resource=\"TOPIC:sec\\\"ret\" request=\"Fetch\"");
  // A client-chosen field is cut (the breaker's 60 KB topic names wrote 3 MB/s of log).
  const std::string long_name(5000, 'x');
  const std::string clipped = audit_authorization_denied_line(
      "http", kafka_principal::user("bob"), "::1", acl_action{resource_type::topic, long_name, acl_operation::read}, "GET");
  CHECK(clipped.size() < 700);
  CHECK(clipped.find("...(4744 more bytes)") != std::string::npos);
  audit_denial_budget budget;
  int64_t logged = 0;
  for (int i = 0; i < 200; ++i) logged += budget.admit(100).log ? 1 : 0;
  CHECK(logged == audit_denial_lines_per_second_max);
  // The next second: the budget is whole again, and the lines refused in the last one are told.
  const auto next = budget.admit(101);
  CHECK(next.log);
  CHECK(next.suppressed == 200 - audit_denial_lines_per_second_max);
  CHECK(budget.admit(101).suppressed == 0);
  CHECK(audit_denials_suppressed_line("http", 150) ==
        "audit=authorization msg=\"authorization denials not logged\" door=http count=150 "
        "reason=\"over audit_denial_lines_per_second_max\"");
}
