// The gateway's authenticator (issue 29) without a server: which credentials win, the 401's
// challenges and body, CSRF on cookie calls, access tokens on GET only, logout, CORS credentials.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "http_auth.h"

using namespace ringlog;
using namespace ringlog::gateway;

namespace {

http_auth_options basic_and_bearer(int64_t* now_ms) {
  http_auth_options o;
  o.methods.basic = true;
  o.methods.bearer = true;
  o.verify_password = [](std::string_view user, std::string_view password) {
    return user == "alice" && password == "secret";
  };
  o.now_ms = [now_ms] { return *now_ms; };
  o.session_limits.session_max_age_ms = 60'000;
  o.session_limits.token_max_age_ms = 1'000;
  o.cors_credentials_origins = {"https://console.example"};
  return o;
}

http_request get(std::string target = "/topics") {
  http_request r;
  r.method = "GET";
  r.target = std::move(target);
  r.peer = "127.0.0.1:4000";
  return r;
}

std::string header(const http_response& r, std::string_view name) {
  std::string out;
  for (const auto& [k, v] : r.headers) {
    if (k == name) out += (out.empty() ? "" : " | ") + v;
  }
  return out;
}

http_response refusal(const std::variant<auth_outcome, http_response>& v) {
  REQUIRE(std::holds_alternative<http_response>(v));
  return std::get<http_response>(v);
}

auth_outcome accepted(const std::variant<auth_outcome, http_response>& v) {
  if (auto* r = std::get_if<http_response>(&v)) FAIL("refused: " << r->status << " " << r->body);
  return std::get<auth_outcome>(v);
}

}  // namespace

TEST_CASE("off: everyone is User:ANONYMOUS") {
  http_authenticator auth(http_auth_options{});
  CHECK_FALSE(auth.enabled());
  CHECK(accepted(auth.authenticate(get(), "")).principal.anonymous());
}

TEST_CASE("Basic: right password, wrong one, unknown user, none at all") {
  int64_t now = 1'000'000;
  http_authenticator auth(basic_and_bearer(&now));
  auto r = get();
  r.authorization = "Basic YWxpY2U6c2VjcmV0";   // alice:secret
  const auth_outcome who = accepted(auth.authenticate(r, ""));
  CHECK(who.principal.to_string() == "User:alice");
  CHECK(who.via == auth_via::basic);
  for (const char* wrong : {"Basic YWxpY2U6d3Jvbmc=" /* alice:wrong */, "Basic Ym9iOnNlY3JldA==" /* bob:secret */}) {
    r.authorization = wrong;
    const http_response no = refusal(auth.authenticate(r, ""));
    CHECK(no.status == 401);
    CHECK(nlohmann::json::parse(no.body)["error_code"] == 40101);
    CHECK(header(no, "WWW-Authenticate") ==
          "Basic realm=\"ringlog\", charset=\"UTF-8\" | Bearer realm=\"ringlog\"");
  }
  r.authorization.clear();
  CHECK(refusal(auth.authenticate(r, "")).body.find("authentication required") != std::string::npos);
  r.requested_with = "ringlog-console";
  CHECK(header(refusal(auth.authenticate(r, "")), "WWW-Authenticate") == "Session realm=\"ringlog\"");
}

TEST_CASE("Bearer without keys is refused with invalid_token") {
  int64_t now = 0;
  http_authenticator auth(basic_and_bearer(&now));
  auto r = get();
  r.authorization = "Bearer a.b.c";
  const http_response no = refusal(auth.authenticate(r, ""));
  CHECK(no.status == 401);
  CHECK(header(no, "WWW-Authenticate").find("error=\"invalid_token\"") != std::string::npos);
}

TEST_CASE("the session cookie: CSRF on state-changing calls, expiry, logout") {
  int64_t now = 1'000'000;
  http_authenticator auth(basic_and_bearer(&now));
  auto login = auth.login(get("/v1/login"), "alice", "secret");
  REQUIRE(login.status == 200);
  const std::string cookies = header(login, "Set-Cookie");
  CHECK(cookies.find("ringlog_session=") == 0);
  const std::string csrf_cookie = cookies.substr(cookies.find(" | ") + 3);
  CHECK(csrf_cookie.find("ringlog_csrf=") == 0);
  CHECK(csrf_cookie.find("HttpOnly") == std::string::npos);   // the page reads it; the session id it cannot
  CHECK(cookies.find("Max-Age=60; SameSite=Strict; HttpOnly") != std::string::npos);
  CHECK(cookies.find("Secure") == std::string::npos);
  const std::string session_id(cookie_value(cookies.substr(0, cookies.find(';')), "ringlog_session"));
  const std::string csrf = nlohmann::json::parse(login.body)["csrf_token"];

  auto r = get();
  r.cookie = "theme=dark; ringlog_session=" + session_id;
  CHECK(accepted(auth.authenticate(r, "")).via == auth_via::session_cookie);
  r.method = "POST";
  CHECK(refusal(auth.authenticate(r, "")).status == 403);
  r.csrf_token = csrf;
  CHECK(accepted(auth.authenticate(r, "")).principal.to_string() == "User:alice");

  now += 60'000;   // expired
  CHECK(refusal(auth.authenticate(r, "")).status == 401);
  now -= 60'000;
  auto https_login = get("/v1/login");
  https_login.https = true;
  CHECK(header(auth.login(https_login, "alice", "secret"), "Set-Cookie").find("; Secure") != std::string::npos);
  CHECK(auth.logout(r).status == 204);
  CHECK(refusal(auth.authenticate(r, "")).status == 401);
  CHECK(auth.login(get("/v1/login"), "alice", "nope").status == 401);
}

TEST_CASE("access tokens: GET only, short-lived") {
  int64_t now = 1'000'000;
  http_authenticator auth(basic_and_bearer(&now));
  auth_outcome alice{security::kafka_principal::user("alice"), auth_via::basic, {}, {}};
  auto issued = auth.issue_token(alice);
  REQUIRE(issued.status == 201);
  const std::string token = nlohmann::json::parse(issued.body)["access_token"];
  CHECK(query_access_token("/v1/ws?x=1&access_token=" + token) == token);
  auto r = get("/v1/ws?access_token=" + token);
  CHECK(accepted(auth.authenticate(r, token)).via == auth_via::access_token);
  r.method = "POST";
  CHECK(refusal(auth.authenticate(r, token)).status == 401);
  r.method = "GET";
  now += 1'000;
  CHECK(refusal(auth.authenticate(r, token)).status == 401);
}

TEST_CASE("CORS credentials only to the named origins; cookie parsing") {
  int64_t now = 0;
  http_authenticator auth(basic_and_bearer(&now));
  http_response r;
  auth.add_cors_credentials(r, "https://console.example");
  CHECK(header(r, "Access-Control-Allow-Credentials") == "true");
  http_response other;
  auth.add_cors_credentials(other, "https://evil.example");
  auth.add_cors_credentials(other, "");
  CHECK(other.headers.empty());
  CHECK(cookie_value("a=1; b=\"two\"; c=", "b") == "two");
  CHECK(cookie_value("a=1; b=2", "c").empty());
  CHECK(cookie_value("ab=1", "b").empty());
}

TEST_CASE("credential_ended: a long-lived connection's session, token or Basic credential") {
  int64_t now = 1'000'000;
  std::string fingerprint = "v1";   // alice's credentials; "" = deleted
  http_auth_options o = basic_and_bearer(&now);
  o.credential_fingerprint = [&fingerprint](std::string_view user) { return user == "alice" ? fingerprint : ""; };
  http_authenticator auth(o);
  auto r = get("/v1/ws");
  r.authorization = "Basic YWxpY2U6c2VjcmV0";   // alice:secret
  const auth_outcome by_basic = accepted(auth.authenticate(r, ""));
  CHECK(by_basic.credential_fingerprint == "v1");
  const auto login = auth.login(get("/v1/login"), "alice", "secret");
  r.authorization.clear();
  r.cookie = "ringlog_session=" + std::string(cookie_value(header(login, "Set-Cookie").substr(0, header(login, "Set-Cookie").find(';')), "ringlog_session"));
  const auth_outcome by_cookie = accepted(auth.authenticate(r, ""));
  const std::string token = nlohmann::json::parse(auth.issue_token(by_basic).body)["access_token"];
  r.cookie.clear();
  const auth_outcome by_token = accepted(auth.authenticate(r, token));
  // A token asked for with a token, and one given to a caller another broker passed on (the
  // caller's credential as this node knows it): each ends with alice's password too (a
  // breaker's HIGH, session 27: the latter was tied to nothing).
  const std::string token_of_token = nlohmann::json::parse(auth.issue_token(by_token).body)["access_token"];
  const auth_outcome by_token_of_token = accepted(auth.authenticate(r, token_of_token));
  const auth_outcome passed_on{security::kafka_principal::user("alice"), auth_via::none, {}, auth.fingerprint_of("alice")};
  const std::string token_of_passed_on = nlohmann::json::parse(auth.issue_token(passed_on).body)["access_token"];
  const auth_outcome by_token_of_passed_on = accepted(auth.authenticate(r, token_of_passed_on));
  CHECK(by_token_of_token.credential_fingerprint == "v1");
  CHECK(by_token_of_passed_on.credential_fingerprint == "v1");
  for (const auto* who : {&by_basic, &by_cookie, &by_token, &by_token_of_token, &by_token_of_passed_on}) {
    CHECK_FALSE(auth.credential_ended(*who));
  }

  now += 1'000;   // the token expired: a socket it opened goes on
  CHECK_FALSE(auth.credential_ended(by_token));
  CHECK(auth.logout(r).status == 204);   // no cookie in r: nothing ends
  CHECK_FALSE(auth.credential_ended(by_cookie));
  fingerprint = "v2";   // a new password
  for (const auto* who : {&by_basic, &by_cookie, &by_token, &by_token_of_token, &by_token_of_passed_on}) {
    CHECK(auth.credential_ended(*who).value_or("").find("deleted or its password changed") != std::string::npos);
  }
  fingerprint = "v1";
  auto with_cookie = get();
  with_cookie.cookie = "ringlog_session=" + by_cookie.session_id;
  CHECK(auth.logout(with_cookie).status == 204);
  CHECK(auth.credential_ended(by_cookie).value_or("").find("session ended") != std::string::npos);
  CHECK_FALSE(auth.credential_ended(auth_outcome{security::kafka_principal::user("carol"), auth_via::bearer, {}, {}}));
}
