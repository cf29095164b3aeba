#pragma once
// The app's wiring of issue 29's HTTP authentication: the JWT validator from the sasl.oauthbearer.*
// keys (shared with SASL OAUTHBEARER: build it once and hand the same object to both doors) and
// the http.* authentication keys into the HTTP server's options, and the thread that keeps the
// JWKS fresh.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ringlog/base/result.h"
#include "ringlog/config/server_config.h"
#include "ringlog/security/scram.h"
#include "ringlog/gateway/http_server.h"
#include "ringlog/security/jwt.h"
#include "jwks_fetch.h"

namespace ringlog::app {

/// Keeps a JWT validator's keys those of sasl.oauthbearer.jwks.endpoint.url (KIP-768): fetches
/// it again every sasl.oauthbearer.jwks.endpoint.refresh.ms and when a token names an unknown kid
/// (request(), at most once per ...retry.backoff.max.ms: a key rotation needs no restart). A
/// failed fetch keeps the old keys, logs a warning and is retried after ...retry.backoff.ms,
/// doubling up to ...retry.backoff.max.ms. Fetches run one at a time on the refresher's own
/// thread, never on a shard thread (an https fetch may take up to jwks_fetch_timeout_ms).
class jwks_refresher {
 public:
  struct timing {
    int64_t refresh_ms;              // sasl.oauthbearer.jwks.endpoint.refresh.ms
    int64_t retry_backoff_ms;        // ...retry.backoff.ms: the first retry after a failed fetch
    int64_t retry_backoff_max_ms;    // ...retry.backoff.max.ms: retries and unknown-kid fetches at most this often
  };
  jwks_refresher(std::string url, jwks_trust trust, std::weak_ptr<security::jwt_validator> validator, timing t);
  ~jwks_refresher() { stop(); }
  jwks_refresher(const jwks_refresher&) = delete;
  jwks_refresher& operator=(const jwks_refresher&) = delete;

  /// Starts the thread (after the signals are blocked: it must never take SIGTERM).
  void start();
  /// A token named an unknown kid: a fetch soon, unless one was asked for within
  /// retry_backoff_max_ms. Never blocks on the network (any thread).
  void request();
  /// Ends a fetch under way (within about 100 ms) and joins the thread. Idempotent.
  void stop();

 private:
  void run();
  void fetch_once(int64_t& backoff_ms, int64_t& next_due_ms);
  std::string url_;
  jwks_trust trust_;
  std::weak_ptr<security::jwt_validator> validator_;
  timing timing_;
  std::atomic<int64_t> last_request_ms_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool requested_ = false;   // under mutex_
  std::thread thread_;
};

/// The validator of sasl.oauthbearer.* with the keys of sasl.oauthbearer.jwks.endpoint.url
/// (file:PATH or https://HOST[:PORT]/PATH) loaded once, now, and the refresher that keeps them
/// fresh (not started); both nullptr when no JWKS is configured. Errors: the file cannot be read,
/// the URL cannot be fetched (jwks_fetch.h: not trusted, not 200, too large, timed out), or the
/// text is not a usable JWKS (the message names the key and the URL).
struct jwt_keys {
  std::shared_ptr<security::jwt_validator> validator;
  std::shared_ptr<jwks_refresher> refresher;
};
base::result<jwt_keys, std::string> make_jwt_validator(const config::server_config& cfg);

/// Fills options' authentication fields from cfg (http.authentication.method, the session keys,
/// http.metrics.authentication, http.cors.credentials.origins) and the JWT validator of
/// make_jwt_validator() for Bearer; `refresher` gets its refresher, for serve to start and stop.
/// Errors: an unreadable or unusable JWKS; BEARER without a JWKS.
base::result<void, std::string> configure_http_authentication(const config::server_config& cfg,
                                                              gateway::server_options& options,
                                                              std::shared_ptr<jwks_refresher>& refresher);

/// The items of a comma-separated setting, each trimmed of spaces; empty items dropped.
std::vector<std::string> comma_separated(std::string_view text);

/// HTTP Basic's and the console login's password check against the SCRAM users (issue 29): the
/// SCRAM-SHA-512 credential of the user, else its SCRAM-SHA-256 one; false for an unknown user.
std::function<bool(std::string_view, std::string_view)> scram_password_check(security::scram_lookup lookup);
/// Basic, the console login and their sessions against the SCRAM store: `options`'
/// verify_password (scram_password_check) and credential_fingerprint (a session ends when its
/// user's credentials change).
void use_scram_store(gateway::http_auth_options& options, const security::scram_lookup& lookup);

}  // namespace ringlog::app
