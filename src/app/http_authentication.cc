#include "http_authentication.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

#include "ringlog/base/assert.h"
#include "ringlog/base/logfmt.h"
#include "ringlog/security/http_auth.h"
#include "ringlog/security/scram.h"

namespace ringlog::app {

std::vector<std::string> comma_separated(std::string_view text) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item(text.substr(start, comma - start));
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

jwks_refresher::jwks_refresher(std::string url, jwks_trust trust, std::weak_ptr<security::jwt_validator> validator, timing t)
    : url_(std::move(url)), trust_(std::move(trust)), validator_(std::move(validator)), timing_(t),
      last_request_ms_(steady_ms()) {}

void jwks_refresher::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void jwks_refresher::request() {
  int64_t last = last_request_ms_.load();
  const int64_t now = steady_ms();
  if (now - last < timing_.retry_backoff_max_ms || !last_request_ms_.compare_exchange_strong(last, now)) return;
  {
    std::lock_guard lock(mutex_);
    requested_ = true;
  }
  wake_.notify_one();
}

void jwks_refresher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true);
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void jwks_refresher::run() {
  int64_t backoff_ms = timing_.retry_backoff_ms;
  int64_t next_due_ms = steady_ms() + timing_.refresh_ms;   // make_jwt_validator fetched at start
  std::unique_lock lock(mutex_);
  while (!stopping_.load()) {
    wake_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(0, next_due_ms - steady_ms())),
                   [&] { return stopping_.load() || requested_ || steady_ms() >= next_due_ms; });
    if (stopping_.load()) break;
    requested_ = false;
    lock.unlock();
    fetch_once(backoff_ms, next_due_ms);
    lock.lock();
  }
}

void jwks_refresher::fetch_once(int64_t& backoff_ms, int64_t& next_due_ms) {
  auto text = read_jwks(url_, trust_, stopping_);
  auto validator = validator_.lock();
  if (!validator || stopping_.load()) return;
  std::string error;
  if (!text.ok()) {
    error = text.error().message;
  } else if (auto loaded = validator->load_jwks(text.value()); !loaded.ok()) {
    error = url_ + ": " + loaded.error().message;
  } else {
    spdlog::info("msg=\"JWKS fetched again\" url=\"{}\" keys={}", base::logfmt_escaped(url_), loaded.value());
    backoff_ms = timing_.retry_backoff_ms;
    next_due_ms = steady_ms() + timing_.refresh_ms;
    return;
  }
  spdlog::warn("msg=\"JWKS refresh failed; the old keys stay\" url=\"{}\" error=\"{}\" retry_in_ms={}",
               base::logfmt_escaped(url_), base::logfmt_escaped(error), backoff_ms);
  next_due_ms = steady_ms() + backoff_ms;
  backoff_ms = std::min(backoff_ms * 2, std::max(timing_.retry_backoff_max_ms, timing_.retry_backoff_ms));
}

base::result<jwt_keys, std::string> make_jwt_validator(const config::server_config& cfg) {
  const std::string& url = cfg.sasl_oauthbearer_jwks_endpoint_url;
  if (url.empty()) return jwt_keys{};
  security::jwt_validator_config jc;
  jc.clock_skew_seconds = cfg.sasl_oauthbearer_clock_skew_seconds;
  jc.expected_issuer = cfg.sasl_oauthbearer_expected_issuer;
  jc.expected_audience = comma_separated(cfg.sasl_oauthbearer_expected_audience);
  jc.sub_claim_name = cfg.sasl_oauthbearer_sub_claim_name;
  auto validator = std::make_shared<security::jwt_validator>(jc);
  jwks_trust trust;
  if (auto it = cfg.ssl.find("ssl.truststore.location"); it != cfg.ssl.end()) trust.truststore_location = it->second;
  const std::atomic<bool> not_stopping{false};
  auto text = read_jwks(url, trust, not_stopping);
  if (!text.ok()) return "sasl.oauthbearer.jwks.endpoint.url: " + text.error().message;
  auto loaded = validator->load_jwks(text.value());
  if (!loaded.ok()) return "sasl.oauthbearer.jwks.endpoint.url " + url + ": " + loaded.error().message;
  spdlog::info("msg=\"JWKS loaded\" url=\"{}\" keys={}", base::logfmt_escaped(url), loaded.value());
  auto refresher = std::make_shared<jwks_refresher>(
      url, std::move(trust), validator,
      jwks_refresher::timing{cfg.sasl_oauthbearer_jwks_endpoint_refresh_ms, cfg.sasl_oauthbearer_jwks_endpoint_retry_backoff_ms,
                             cfg.sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms});
  // The hook runs on a shard thread: it only wakes the refresher. Weak: serve owns the refresher.
  validator->set_refresh_hook([weak = std::weak_ptr<jwks_refresher>(refresher)] {
    if (auto r = weak.lock()) r->request();
  });
  return jwt_keys{std::move(validator), std::move(refresher)};
}

base::result<void, std::string> configure_http_authentication(const config::server_config& cfg,
                                                              gateway::server_options& options,
                                                              std::shared_ptr<jwks_refresher>& refresher) {
  auto jwt = make_jwt_validator(cfg);
  if (!jwt.ok()) return jwt.error();
  refresher = jwt->refresher;
  auto methods = security::http_auth_methods::parse(cfg.http_authentication_method);
  if (!methods.ok()) return methods.error().message;
  gateway::http_auth_options& auth = options.authentication;
  auth.methods = methods.value();
  auth.metrics_authenticated = cfg.http_metrics_authentication;
  auth.session_limits.session_max_age_ms = cfg.http_session_max_age_ms;
  auth.session_limits.sessions_max = static_cast<size_t>(cfg.http_sessions_max);
  auth.session_limits.token_max_age_ms = cfg.http_access_token_max_age_ms;
  auth.cors_credentials_origins = comma_separated(cfg.http_cors_credentials_origins);
  auth.failed_authentication_delay_ms = cfg.connection_failed_authentication_delay_ms;
  auth.jwt = std::move(jwt->validator);
  RINGLOG_ASSERT(!methods->bearer || auth.jwt,
                 "config validation (check_jwks_needed) refuses BEARER without sasl.oauthbearer.jwks.endpoint.url");
  if (methods->enabled()) {
    spdlog::info("msg=\"HTTP authentication on\" http.authentication.method={} http.metrics.authentication={}",
                 methods->to_string(), cfg.http_metrics_authentication);
  }
  return base::ok_v;
}

std::function<bool(std::string_view, std::string_view)> scram_password_check(security::scram_lookup lookup) {
  return [lookup = std::move(lookup)](std::string_view user, std::string_view password) {
    // HTTP Basic sends the password with every request: each shard thread remembers the ones it
    // verified (security::verified_passwords) instead of one PBKDF2 per request.
    thread_local security::verified_passwords verified;
    return verified.matches(lookup, user, password);
  };
}

void use_scram_store(gateway::http_auth_options& options, const security::scram_lookup& lookup) {
  options.verify_password = scram_password_check(lookup);
  options.credential_fingerprint = [lookup](std::string_view user) {
    return security::credential_fingerprint(lookup, user);
  };
}

}  // namespace ringlog::app
