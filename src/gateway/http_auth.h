#pragma once
// HTTP authentication (issue 29) for every route, WebSocket upgrade and stream: who the caller
// is (a security::kafka_principal, carried with the broker calls the request makes), or the 401
// that says how to authenticate. No Beast here.
//
// Credentials, in this order:
//  1. `Authorization: Basic` (http.authentication.method has BASIC): user and password checked
//     by verify_password (the SCRAM user store: no plaintext passwords are kept).
//  2. `Authorization: Bearer <JWT>` (BEARER): the JWT checked by the same validator and keys as
//     SASL OAUTHBEARER (sasl.oauthbearer.*).
//  3. The console's session cookie `ringlog_session` (POST /v1/login with a user and password);
//     a state-changing call (not GET, HEAD or OPTIONS) must also carry the session's CSRF token in
//     `X-CSRF-Token` (the synchronizer-token pattern: the token is the session's, kept on the
//     server, handed to the console in the login answer and in the readable `ringlog_csrf`
//     cookie). Calls authenticated by 1 or 2 need no CSRF token: a browser never adds those
//     headers to a cross-site request by itself.
//  4. `?access_token=` (GET only: WebSocket upgrades, NDJSON/SSE streams): a token from
//     POST /v1/tokens, good for http.access.token.max.age.ms.
// Open without credentials: GET /v1/health (load balancers), the console's files, POST /v1/login,
// POST /v1/logout, CORS preflights, and /metrics unless http.metrics.authentication=true.

#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "http_types.h"
#include "ringlog/gateway/http_auth_options.h"

namespace ringlog::gateway {

inline constexpr std::string_view session_cookie_name = "ringlog_session";
inline constexpr std::string_view csrf_cookie_name = "ringlog_csrf";
inline constexpr std::string_view auth_realm = "ringlog";
/// Confluent's error code for "authentication required / failed" (REST Proxy's 40101).
inline constexpr int unauthorized_error_code = 40101;

/// How a request proved who it is.
enum class auth_via : uint8_t { none, basic, bearer, session_cookie, access_token };

struct auth_outcome {
  security::kafka_principal principal;
  auth_via via = auth_via::none;
  std::string session_id;   // via session_cookie: the session (logout ends it)
  /// The user's credentials when it authenticated (security::credential_fingerprint): via basic,
  /// read at the check; via session_cookie or access_token, the session's or token's (empty when
  /// it began without a password). Lets a long-lived connection notice they changed.
  std::string credential_fingerprint;
};

/// One line per refused authentication (issue 29's audit): principal (the claimed user, or
/// User:ANONYMOUS), door, peer and reason, as logfmt on the `audit` logger.
void audit_failed_authentication(std::string_view door, std::string_view principal, std::string_view peer,
                                 std::string_view reason);
/// One line per admin write (topics, configs, users, reassignments, ...) that succeeded or not;
/// `change` (empty: none) says what it changed where `resource` (the path) does not, clipped at
/// security::audit_field_bytes_max.
void audit_admin_write(std::string_view door, const security::kafka_principal& principal, std::string_view peer,
                       std::string_view operation, std::string_view resource, unsigned status, std::string_view change);

class http_authenticator {
 public:
  explicit http_authenticator(http_auth_options options);

  [[nodiscard]] bool enabled() const { return options_.methods.enabled(); }
  [[nodiscard]] const http_auth_options& options() const { return options_; }

  /// The caller of `request`, or the 401 (or 403 for a missing CSRF token) to answer it with.
  /// `query_token`: the request's ?access_token= (empty when none; honoured for GET only).
  /// Refusals are audited. With authentication off: User:ANONYMOUS.
  std::variant<auth_outcome, http_response> authenticate(const http_request& request, std::string_view query_token);

  /// Why the credential a long-lived connection (a WebSocket) authenticated with has ended since,
  /// nullopt while it holds: the session logged out or expired (via session_cookie), or the user
  /// deleted or its password changed (via basic, session_cookie, access_token). A Bearer JWT and
  /// an access token's own expiry (it serves to open the connection) do not end it. Cheap (a
  /// table look-up and the user's SCRAM record in the metadata image, no PBKDF2); thread safe.
  [[nodiscard]] std::optional<std::string> credential_ended(const auth_outcome& who) const;

  /// POST /v1/login: checks the password and opens a session; answers the response (200 with
  /// Set-Cookie and {"principal","csrf_token","expires_at_ms"}; 401; 429 when sessions are full).
  http_response login(const http_request& request, std::string_view user, std::string_view password);
  /// POST /v1/logout: ends the cookie's session (if any) and clears the cookies; 204.
  http_response logout(const http_request& request);
  /// POST /v1/tokens: a short-lived access token for `who` (201 {"access_token","expires_in_s"}).
  http_response issue_token(const auth_outcome& who);

  /// v3 producer sessions (POST .../producers) belong to their creator: remembered here (this
  /// node's sessions, the newest producer_sessions_remembered_max), checked on each produce.
  void remember_producer(int64_t producer_id, const security::kafka_principal& owner);
  /// False when `producer_id` was handed out here to another principal (unknown ids pass: one
  /// made on another node, or forgotten).
  [[nodiscard]] bool producer_allowed(int64_t producer_id, const security::kafka_principal& who) const;

  /// Adds Access-Control-Allow-Credentials when `origin` is in http.cors.credentials.origins.
  void add_cors_credentials(http_response& r, std::string_view origin) const;
  /// Whether a page of `origin` may use the session cookie on a WebSocket to this server (whose
  /// Host header is `host`): its own origin (http:// or https:// and the Host), or one named in
  /// http.cors.credentials.origins. Browsers send the cookie with any page's WebSocket, and CORS
  /// does not apply to WebSockets (cross-site WebSocket hijacking).
  [[nodiscard]] bool session_origin_allowed(std::string_view origin, std::string_view host) const;

  /// The 401 with WWW-Authenticate for each enabled method (a console's fetch, which names
  /// itself by X-Requested-With, gets the `Session` scheme so the browser shows no password
  /// dialog of its own) and Confluent's {"error_code":40101,"message":...}.
  [[nodiscard]] http_response unauthorized(const http_request& request, std::string_view message,
                                           std::string_view bearer_error = {}) const;
  /// The user's credential as this node's metadata image has it (options_.credential_fingerprint):
  /// "" when unset or when the user has no SCRAM credential. A caller another broker passed on
  /// carries it, so what this node gives that caller ends with the credential.
  [[nodiscard]] std::string fingerprint_of(std::string_view user) const;

 private:
  int64_t now() const { return options_.now_ms(); }
  /// False when `user` was deleted or changed its password since `fingerprint` was read (true
  /// when it is empty: a credential that began without a password).
  [[nodiscard]] bool credentials_unchanged(std::string_view user, std::string_view fingerprint) const;

  http_auth_options options_;
  security::http_session_table sessions_;
  mutable std::mutex producers_mutex_;   // guards the two below (connections of every shard)
  std::unordered_map<int64_t, std::string> producer_owners_;
  std::deque<int64_t> producer_order_;   // oldest first, for forgetting past the bound
};

/// Producer sessions whose owner a node remembers (~60 bytes each): far more than live at once.
inline constexpr size_t producer_sessions_remembered_max = 100'000;

/// The ?access_token= of a request target ("" when none or the query does not parse).
std::string query_access_token(std::string_view target);

/// The value of cookie `name` in a Cookie header (RFC 6265 section 5.4); empty when absent.
std::string_view cookie_value(std::string_view cookie_header, std::string_view name);

}  // namespace ringlog::gateway
