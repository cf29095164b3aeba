#pragma once
// The app's wiring of issue 29's HTTP authentication: the JWT validator from the sasl.oauthbearer.*
// keys (shared with SASL OAUTHBEARER: build it once and hand the same object to both doors) and
// the http.* authentication keys into the HTTP server's options.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/base/result.h"
#include "ringlog/config/server_config.h"
#include "ringlog/security/scram.h"
#include "ringlog/gateway/http_server.h"
#include "ringlog/security/jwt.h"

namespace ringlog::app {

/// The validator of sasl.oauthbearer.* with the keys of sasl.oauthbearer.jwks.endpoint.url
/// (file:PATH) loaded; nullptr when no JWKS is configured. A token naming an unknown kid re-reads
/// the file, at most once per sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms (a key
/// rotation needs no restart). Errors: the file cannot be read, or is not a usable JWKS (the
/// message names the key and the file).
base::result<std::shared_ptr<security::jwt_validator>, std::string> make_jwt_validator(const config::server_config& cfg);

/// Fills options' authentication fields from cfg (http.authentication.method, the session keys,
/// http.metrics.authentication, http.cors.credentials.origins) and the JWT validator of
/// make_jwt_validator() for Bearer. Errors: an unreadable or unusable JWKS; BEARER without a JWKS.
base::result<void, std::string> configure_http_authentication(const config::server_config& cfg,
                                                              gateway::server_options& options);

/// The items of a comma-separated setting, each trimmed of spaces; empty items dropped.
std::vector<std::string> comma_separated(std::string_view text);

/// HTTP Basic's and the console login's password check against the SCRAM users (issue 29): the
/// SCRAM-SHA-512 credential of the user, else its SCRAM-SHA-256 one; false for an unknown user.
std::function<bool(std::string_view, std::string_view)> scram_password_check(security::scram_lookup lookup);

}  // namespace ringlog::app
