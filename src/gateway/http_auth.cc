#include "http_auth.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "errors.h"
#include "http_util.h"
#include "ringlog/base/clock.h"
#include "ringlog/security/audit.h"

namespace ringlog::gateway {

using security::kafka_principal;

void audit_failed_authentication(std::string_view door, std::string_view principal, std::string_view peer,
                                 std::string_view reason) {
  spdlog::warn("{}", security::audit_failed_authentication_line(door, principal, peer, reason));
}

void audit_admin_write(std::string_view door, const kafka_principal& principal, std::string_view peer,
                       std::string_view operation, std::string_view resource, unsigned status, std::string_view change) {
  const std::string line =
      security::audit_admin_write_line(door, principal, peer, operation, resource, "HTTP " + std::to_string(status));
  if (change.empty()) return spdlog::info("{}", line);
  spdlog::info("{} change=\"{}\"", line, security::audit_clipped(change));
}

std::string_view cookie_value(std::string_view header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    const size_t end = std::min(header.find(';', pos), header.size());
    std::string_view pair = header.substr(pos, end - pos);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      std::string_view value = pair.substr(eq + 1);
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      return value;
    }
    pos = end + 1;
  }
  return {};
}

std::string query_access_token(std::string_view target) {
  auto query = parse_query(split_target(target).second);
  if (!query) return {};
  auto it = query->find("access_token");
  return it == query->end() ? std::string() : it->second;
}

namespace {

/// Set-Cookie (RFC 6265 section 4.1): Path=/, SameSite=Strict (no cross-site request carries
/// it), Secure on https, HttpOnly for the session id (script never reads it).
std::string set_cookie(std::string_view name, std::string_view value, int64_t max_age_s, bool http_only, bool secure) {
  std::string c = std::string(name) + "=" + std::string(value) + "; Path=/; Max-Age=" + std::to_string(max_age_s) +
                  "; SameSite=Strict";
  if (http_only) c += "; HttpOnly";
  if (secure) c += "; Secure";
  return c;
}

http_response json_response(unsigned status, const nlohmann::json& body) {
  http_response r;
  r.status = status;
  r.body = body.dump();
  return r;
}

std::string claimed_user(const http_request& request) {
  if (auto basic = security::parse_basic_authorization(request.authorization)) return "User:" + basic->user;
  return kafka_principal{}.to_string();
}

}  // namespace

http_authenticator::http_authenticator(http_auth_options options)
    : options_(std::move(options)), sessions_(options_.session_limits) {
  if (!options_.now_ms) {
    options_.now_ms = [] { return base::system_clock().now_ms(); };
  }
}

namespace {
/// The longest error_description a Bearer challenge carries, bytes.
constexpr size_t bearer_error_description_bytes_max = 200;
}  // namespace

http_response http_authenticator::unauthorized(const http_request& request, std::string_view message,
                                               std::string_view bearer_error) const {
  http_response r = error_response(401, unauthorized_error_code, message);
  if (request.requested_with == "ringlog-console") {
    // A Basic challenge would make the browser ask for a password itself; the console has a page.
    r.headers.emplace_back("WWW-Authenticate", "Session realm=\"" + std::string(auth_realm) + "\"");
    return r;
  }
  if (options_.methods.basic) {
    r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"" + std::string(auth_realm) + "\", charset=\"UTF-8\"");
  }
  if (options_.methods.bearer) {
    // RFC 6750 section 3: error="invalid_token" when a token was sent and refused.
    std::string challenge = "Bearer realm=\"" + std::string(auth_realm) + "\"";
    if (!bearer_error.empty()) {
      // RFC 6750 section 3: error_description holds %x20-21 / %x23-5B / %x5D-7E only. The
      // description may quote the token's header (kid, alg): anything else, CR and LF above all
      // (a header injection), becomes '?', and it is cut to a bounded length.
      std::string description(bearer_error.substr(0, bearer_error_description_bytes_max));
      for (char& ch : description) {
        const auto u = static_cast<unsigned char>(ch);
        if (ch == '"') ch = '\'';
        else if (u < 0x20 || u > 0x7e || ch == '\\') ch = '?';
      }
      challenge += ", error=\"invalid_token\", error_description=\"" + description + "\"";
    }
    r.headers.emplace_back("WWW-Authenticate", challenge);
  }
  return r;
}

std::variant<auth_outcome, http_response> http_authenticator::authenticate(const http_request& request,
                                                                             std::string_view query_token) {
  if (!enabled()) return auth_outcome{};
  auto refuse = [&](std::string principal, const std::string& reason, std::string_view bearer_error = {}) {
    audit_failed_authentication("http", principal, request.peer, reason);
    return unauthorized(request, reason, bearer_error);
  };
  // Credentials that were checked and refused: the answer waits (a guesser's next try too).
  auto refuse_checked = [&](std::string principal, const std::string& reason, std::string_view bearer_error = {}) {
    http_response r = refuse(std::move(principal), reason, bearer_error);
    r.delay_ms = options_.failed_authentication_delay_ms;
    return r;
  };
  if (!request.authorization.empty()) {
    if (auto basic = security::parse_basic_authorization(request.authorization)) {
      if (!options_.methods.basic) return refuse("User:" + basic->user, "Basic authentication is not enabled (http.authentication.method=" + options_.methods.to_string() + ")");
      if (!options_.verify_password || !options_.verify_password(basic->user, basic->password)) {
        return refuse_checked("User:" + basic->user, "wrong user name or password");
      }
      return auth_outcome{kafka_principal::user(basic->user), auth_via::basic, {}, fingerprint_of(basic->user)};
    }
    if (auto token = security::parse_bearer_authorization(request.authorization)) {
      if (!options_.methods.bearer) return refuse(claimed_user(request), "Bearer authentication is not enabled (http.authentication.method=" + options_.methods.to_string() + ")");
      if (!options_.jwt) return refuse(claimed_user(request), "no JWT keys are configured (sasl.oauthbearer.jwks.endpoint.url)", "no keys");
      auto claims = options_.jwt->validate(*token, now() / 1000);
      if (!claims.ok()) {
        const std::string reason = std::string(security::to_string(claims.error().code)) + ": " + claims.error().message;
        return refuse_checked(claimed_user(request), "bearer token refused: " + reason, reason);
      }
      return auth_outcome{claims->principal, auth_via::bearer, {}, {}};
    }
    return refuse(claimed_user(request), "Authorization header is neither Basic nor Bearer");
  }
  if (const std::string_view id = cookie_value(request.cookie, session_cookie_name); !id.empty()) {
    auto session = sessions_.find_session(id, now());
    if (!session) return refuse_checked(claimed_user(request), "the session ended or expired: log in again");
    if (!credentials_unchanged(session->principal.name, session->credential_fingerprint)) {
      sessions_.end_session(id);
      return refuse_checked(session->principal.to_string(), "the session's user was deleted or its password changed since "
                                                    "the login: log in again");
    }
    if (state_changing(request.method) && !security::constant_time_equal(request.csrf_token, session->csrf_token)) {
      audit_failed_authentication("http", session->principal.to_string(), request.peer, "CSRF token missing or wrong");
      return error_response(403, error_codes::forbidden,
                            "a call authenticated by the session cookie must carry the session's X-CSRF-Token header");
    }
    return auth_outcome{session->principal, auth_via::session_cookie, std::string(id), session->credential_fingerprint};
  }
  if (!query_token.empty() && request.method == "GET") {
    auto token = sessions_.find_token(query_token, now());
    if (!token) return refuse_checked(claimed_user(request), "access_token unknown or expired (POST /v1/tokens gives a new one)");
    if (!credentials_unchanged(token->principal.name, token->credential_fingerprint)) {
      return refuse_checked(token->principal.to_string(), "the access_token's user was deleted or its password changed since "
                                                  "it was issued (POST /v1/tokens gives a new one)");
    }
    return auth_outcome{token->principal, auth_via::access_token, {}, token->credential_fingerprint};
  }
  if (!query_token.empty()) {
    // An access_token in the query serves GET only (WebSocket upgrades and streams): a write
    // carries its credentials in the Authorization header, where logs and Referer do not see them.
    return refuse(claimed_user(request), "an access_token in the query authenticates GET requests only (WebSocket "
                                         "and streams); send this " + request.method +
                                         " with an Authorization header (http.authentication.method=" +
                                         options_.methods.to_string() + ")");
  }
  return refuse(claimed_user(request), "authentication required (http.authentication.method=" +
                                           options_.methods.to_string() + ")");
}

std::string http_authenticator::fingerprint_of(std::string_view user) const {
  return options_.credential_fingerprint ? options_.credential_fingerprint(user) : std::string();
}

bool http_authenticator::credentials_unchanged(std::string_view user, std::string_view fingerprint) const {
  if (fingerprint.empty() || !options_.credential_fingerprint) return true;
  return security::constant_time_equal(options_.credential_fingerprint(user), fingerprint);
}

std::optional<std::string> http_authenticator::credential_ended(const auth_outcome& who) const {
  if (who.via == auth_via::session_cookie && !sessions_.session_live(who.session_id, now())) {
    return "the session ended (logout) or expired: log in again";
  }
  // A Bearer JWT carries no fingerprint: it holds until the connection closes.
  if (credentials_unchanged(who.principal.name, who.credential_fingerprint)) return std::nullopt;
  return "the user " + who.principal.name + " was deleted or its password changed since this connection "
         "authenticated: authenticate again";
}

http_response http_authenticator::login(const http_request& request, std::string_view user, std::string_view password) {
  if (!enabled()) {
    return error_response(409, error_codes::illegal_state, "authentication is off (http.authentication.method=NONE)");
  }
  if (user.empty() || !options_.verify_password || !options_.verify_password(user, password)) {
    audit_failed_authentication("http", "User:" + std::string(user), request.peer, "console login: wrong user name or password");
    http_request console_request = request;
    console_request.requested_with = "ringlog-console";
    http_response r = unauthorized(console_request, "wrong user name or password");
    r.delay_ms = options_.failed_authentication_delay_ms;
    return r;
  }
  auto session = sessions_.create_session(kafka_principal::user(std::string(user)), now(), fingerprint_of(user));
  if (!session) {
    return error_response(429, error_codes::too_many_requests,
                          "too many console sessions (http.sessions.max=" +
                              std::to_string(options_.session_limits.sessions_max) + "); log out elsewhere or wait");
  }
  const int64_t max_age_s = options_.session_limits.session_max_age_ms / 1000;
  http_response r = json_response(200, {{"principal", session->second.principal.to_string()},
                                        {"csrf_token", session->second.csrf_token},
                                        {"expires_at_ms", session->second.expires_at_ms}});
  r.headers.emplace_back("Set-Cookie", set_cookie(session_cookie_name, session->first, max_age_s, true, request.https));
  r.headers.emplace_back("Set-Cookie",
                         set_cookie(csrf_cookie_name, session->second.csrf_token, max_age_s, false, request.https));
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

http_response http_authenticator::logout(const http_request& request) {
  if (const std::string_view id = cookie_value(request.cookie, session_cookie_name); !id.empty()) sessions_.end_session(id);
  http_response r;
  r.status = 204;
  r.content_type.clear();
  r.headers.emplace_back("Set-Cookie", set_cookie(session_cookie_name, "", 0, true, request.https));
  r.headers.emplace_back("Set-Cookie", set_cookie(csrf_cookie_name, "", 0, false, request.https));
  return r;
}

http_response http_authenticator::issue_token(const auth_outcome& who) {
  // A token ends with the credential its caller's login ends with: Basic's password, a session's
  // or an access token's (a token asked for with a token does not outlive the first one's
  // password), a forwarded caller's as this node knows it (authenticate_call); a Bearer JWT's
  // has none.
  auto token = sessions_.issue_token(who.principal, now(), who.credential_fingerprint);
  if (!token) return error_response(429, error_codes::too_many_requests, "too many live access tokens: retry later");
  http_response r = json_response(201, {{"access_token", token->first},
                                        {"token_type", "ringlog-access-token"},
                                        {"principal", who.principal.to_string()},
                                        {"expires_in_s", options_.session_limits.token_max_age_ms / 1000}});
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

void http_authenticator::remember_producer(int64_t producer_id, const kafka_principal& owner) {
  std::lock_guard lock(producers_mutex_);
  if (producer_owners_.insert_or_assign(producer_id, owner.to_string()).second) producer_order_.push_back(producer_id);
  while (producer_order_.size() > producer_sessions_remembered_max) {
    producer_owners_.erase(producer_order_.front());
    producer_order_.pop_front();
  }
}

bool http_authenticator::producer_allowed(int64_t producer_id, const kafka_principal& who) const {
  std::lock_guard lock(producers_mutex_);
  auto it = producer_owners_.find(producer_id);
  return it == producer_owners_.end() || it->second == who.to_string();
}

void http_authenticator::add_cors_credentials(http_response& r, std::string_view origin) const {
  if (origin.empty()) return;
  for (const auto& allowed : options_.cors_credentials_origins) {
    if (allowed == origin) {
      r.headers.emplace_back("Access-Control-Allow-Credentials", "true");
      return;
    }
  }
}

bool http_authenticator::session_origin_allowed(std::string_view origin, std::string_view host) const {
  if (origin == "http://" + std::string(host) || origin == "https://" + std::string(host)) return true;
  return std::find(options_.cors_credentials_origins.begin(), options_.cors_credentials_origins.end(), origin) !=
         options_.cors_credentials_origins.end();
}

}  // namespace ringlog::gateway
