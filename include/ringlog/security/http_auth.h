#pragma once
// HTTP authentication (issue 29), the pure parts: `http.authentication.method`, the Authorization
// header's Basic (RFC 7617) and Bearer (RFC 6750) forms, and the table of the console's login
// sessions and of the short-lived access tokens that WebSocket and SSE/NDJSON clients put in the
// URL (they cannot send an Authorization header from a browser).
//
// Sessions and tokens live in this node's memory only (bounded, expiring): a restart logs the
// console out, and a browser talks to the node it logged in to (a load balancer keeps it there).

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringlog/security/principal.h"

namespace ringlog::security {

/// http.authentication.method: NONE (the default: every caller is User:ANONYMOUS, as before
/// issue 29), or a comma-separated list of BASIC and BEARER.
struct http_auth_methods {
  bool basic = false;
  bool bearer = false;
  [[nodiscard]] bool enabled() const { return basic || bearer; }
  /// "NONE", "BASIC", "BEARER" or "BASIC,BEARER" (case-insensitive, spaces allowed). Errors:
  /// invalid_config naming the key and the word it does not know.
  static result<http_auth_methods> parse(std::string_view text);
  [[nodiscard]] std::string to_string() const;
};

struct basic_credentials {
  std::string user;
  std::string password;
};

/// `Basic base64(user:password)` (RFC 7617 section 2; the scheme is case-insensitive, the
/// password may hold ':'); nullopt for another scheme, bad base64 or no ':'.
std::optional<basic_credentials> parse_basic_authorization(std::string_view header);
/// The token of `Bearer <token>` (RFC 6750 section 2.1); nullopt for another scheme or none.
std::optional<std::string_view> parse_bearer_authorization(std::string_view header);

/// Bounds and lifetimes of the session table (the defaults of the config keys named).
struct http_session_limits {
  /// http.session.max.age.ms: a console login lasts this long, [60000, 604800000] (1 min..7 days);
  /// 8 hours: a working day, then the password again.
  int64_t session_max_age_ms = 8 * 3600 * 1000;
  /// http.sessions.max: live sessions at once; a login past it is refused (429) until one ends.
  size_t sessions_max = 10'000;
  /// http.access.token.max.age.ms: a POST /v1/tokens token is good this long, [1000, 3600000];
  /// one minute covers opening a WebSocket or an EventSource after asking for it.
  int64_t token_max_age_ms = 60'000;
  /// Live tokens at once (each ~100 bytes); asking past it is refused (429).
  size_t tokens_max = 100'000;
};

/// One console login (or one access token): who it is, until when, and (sessions) the CSRF token
/// that every state-changing call it makes must carry in X-CSRF-Token.
struct http_session {
  kafka_principal principal;
  int64_t expires_at_ms = 0;
  std::string csrf_token;   // empty for access tokens
  /// The user's credentials when it began (security::credential_fingerprint); empty when it
  /// began without a password (a Bearer token). The authenticator ends a session or token whose
  /// user was deleted or changed its password since.
  std::string credential_fingerprint;
};

/// The node's sessions and access tokens. Ids and tokens are 256 random bits from OpenSSL's
/// RAND_bytes, base64url. Thread safe (connections of every shard use one table); each call
/// takes the clock reading from its caller (ms, any monotonic-enough wall clock).
class http_session_table {
 public:
  explicit http_session_table(http_session_limits limits) : limits_(limits) {}

  /// A new session for `principal`: its id (the cookie's value) and record. nullopt when
  /// sessions_max live sessions exist (expired ones are dropped first).
  std::optional<std::pair<std::string, http_session>> create_session(const kafka_principal& principal, int64_t now_ms,
                                                                      std::string credential_fingerprint = {});
  /// The live session of `id`; nullopt when unknown, ended or expired.
  std::optional<http_session> find_session(std::string_view id, int64_t now_ms);
  /// Whether `id` names a live session (not ended, not expired); drops nothing, copies nothing.
  [[nodiscard]] bool session_live(std::string_view id, int64_t now_ms) const;
  /// Ends a session (logout); false when there was none.
  bool end_session(std::string_view id);

  /// A short-lived access token for `principal` (POST /v1/tokens); nullopt when tokens_max are live.
  std::optional<std::pair<std::string, http_session>> issue_token(const kafka_principal& principal, int64_t now_ms,
                                                                   std::string credential_fingerprint = {});
  std::optional<http_session> find_token(std::string_view token, int64_t now_ms);

  [[nodiscard]] const http_session_limits& limits() const { return limits_; }
  [[nodiscard]] size_t live_sessions() const;

 private:
  using table = std::unordered_map<std::string, http_session>;
  std::optional<std::pair<std::string, http_session>> add(table& t, size_t max, http_session s, int64_t now_ms);
  static std::optional<http_session> find(table& t, std::string_view id, int64_t now_ms);

  http_session_limits limits_;
  mutable std::mutex mutex_;
  table sessions_;
  table tokens_;
};

/// 32 random bytes (OpenSSL RAND_bytes) as base64url: session ids, CSRF and access tokens.
std::string random_token();
/// Equality in time independent of where the texts differ (CSRF tokens, passwords' digests).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace ringlog::security
