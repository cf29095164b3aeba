#pragma once
// The settings of HTTP authentication (issue 29; src/gateway/http_auth.h says which credentials
// are taken, in which order, and which routes stay open). Set by the app from the http.* and
// sasl.oauthbearer.* keys (docs/security.md "HTTP authentication and the console").

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/security/http_auth.h"
#include "ringlog/security/jwt.h"

namespace ringlog::gateway {

struct http_auth_options {
  /// http.authentication.method (NONE: every caller is User:ANONYMOUS, as before).
  security::http_auth_methods methods;
  /// Basic and POST /v1/login: true when `password` is the user's (the SCRAM store).
  std::function<bool(std::string_view user, std::string_view password)> verify_password;
  /// The user's credentials now (security::credential_fingerprint; "" for no such user): a
  /// console session or access token ends once it differs from the one it began with (the user
  /// was deleted or its password changed). Unset: sessions last until logout or expiry.
  std::function<std::string(std::string_view user)> credential_fingerprint;
  /// Bearer: the JWT validator shared with SASL OAUTHBEARER; nullptr: Bearer refuses every token.
  std::shared_ptr<const security::jwt_validator> jwt;
  /// http.metrics.authentication: /metrics needs credentials too (false: open, as /v1/health).
  bool metrics_authenticated = false;
  /// http.session.max.age.ms, http.sessions.max, http.access.token.max.age.ms.
  security::http_session_limits session_limits;
  /// http.cors.credentials.origins: browser origins answered with
  /// Access-Control-Allow-Credentials: true (cookies and Authorization from script); never "*".
  std::vector<std::string> cors_credentials_origins;
  /// connection.failed.authentication.delay.ms: a 401 for credentials that were checked and
  /// refused (a wrong password or unknown user, a refused Bearer JWT, an unknown or ended session
  /// or access token) is sent this long after the check (http_response::delay_ms); a request
  /// without credentials, or with a method that is not enabled, is answered at once.
  int64_t failed_authentication_delay_ms = 0;
  /// Wall clock, ms since the epoch (JWT exp/nbf and session expiry); unset: the system clock.
  std::function<int64_t()> now_ms;
};

}  // namespace ringlog::gateway
