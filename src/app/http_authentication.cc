#include "http_authentication.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>

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

/// file:PATH, file:///PATH -> PATH.
std::string path_of_file_url(std::string_view url) {
  url.remove_prefix(5);   // "file:"
  if (url.starts_with("//")) url.remove_prefix(2);
  return std::string(url);
}

/// The file's bytes; nullopt when it cannot be read.
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

base::result<std::shared_ptr<security::jwt_validator>, std::string> make_jwt_validator(const config::server_config& cfg) {
  if (cfg.sasl_oauthbearer_jwks_endpoint_url.empty()) return std::shared_ptr<security::jwt_validator>{};
  security::jwt_validator_config jc;
  jc.clock_skew_seconds = cfg.sasl_oauthbearer_clock_skew_seconds;
  jc.expected_issuer = cfg.sasl_oauthbearer_expected_issuer;
  jc.expected_audience = comma_separated(cfg.sasl_oauthbearer_expected_audience);
  jc.sub_claim_name = cfg.sasl_oauthbearer_sub_claim_name;
  auto validator = std::make_shared<security::jwt_validator>(jc);
  const std::string path = path_of_file_url(cfg.sasl_oauthbearer_jwks_endpoint_url);
  auto text = read_file(path);
  if (!text) return "sasl.oauthbearer.jwks.endpoint.url: cannot read " + path;
  auto loaded = validator->load_jwks(*text);
  if (!loaded.ok()) return "sasl.oauthbearer.jwks.endpoint.url " + path + ": " + loaded.error().message;
  spdlog::info("msg=\"JWKS loaded\" file=\"{}\" keys={}", base::logfmt_escaped(path), loaded.value());
  // An unknown kid re-reads the file (a rotation), at most once per backoff. The hook runs on a
  // shard thread; the file is a few KiB.
  auto last_read_ms = std::make_shared<std::atomic<int64_t>>(steady_ms());
  const int64_t backoff_ms = cfg.sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms;
  std::weak_ptr<security::jwt_validator> weak = validator;
  validator->set_refresh_hook([weak, path, last_read_ms, backoff_ms] {
    int64_t last = last_read_ms->load();
    const int64_t now = steady_ms();
    if (now - last < backoff_ms || !last_read_ms->compare_exchange_strong(last, now)) return;
    auto v = weak.lock();
    auto again = read_file(path);
    if (!v || !again) return;
    auto reloaded = v->load_jwks(*again);
    if (reloaded.ok()) {
      spdlog::info("msg=\"JWKS re-read\" file=\"{}\" keys={}", base::logfmt_escaped(path), reloaded.value());
    } else {
      spdlog::warn("msg=\"JWKS re-read refused; the old keys stay\" file=\"{}\" error=\"{}\"", base::logfmt_escaped(path),
                   base::logfmt_escaped(reloaded.error().message));
    }
  });
  return validator;
}

base::result<void, std::string> configure_http_authentication(const config::server_config& cfg,
                                                              gateway::server_options& options) {
  auto jwt = make_jwt_validator(cfg);
  if (!jwt.ok()) return jwt.error();
  auto methods = security::http_auth_methods::parse(cfg.http_authentication_method);
  if (!methods.ok()) return methods.error().message;
  gateway::http_auth_options& auth = options.authentication;
  auth.methods = methods.value();
  auth.metrics_authenticated = cfg.http_metrics_authentication;
  auth.session_limits.session_max_age_ms = cfg.http_session_max_age_ms;
  auth.session_limits.sessions_max = static_cast<size_t>(cfg.http_sessions_max);
  auth.session_limits.token_max_age_ms = cfg.http_access_token_max_age_ms;
  auth.cors_credentials_origins = comma_separated(cfg.http_cors_credentials_origins);
  auth.jwt = std::move(jwt).value();
  if (methods->bearer && !auth.jwt) {
    return std::string("http.authentication.method has BEARER but sasl.oauthbearer.jwks.endpoint.url names no JWKS");
  }
  if (methods->enabled()) {
    spdlog::info("msg=\"HTTP authentication on\" http.authentication.method={} http.metrics.authentication={}",
                 methods->to_string(), cfg.http_metrics_authentication);
  }
  return base::ok_v;
}

std::function<bool(std::string_view, std::string_view)> scram_password_check(security::scram_lookup lookup) {
  return [lookup = std::move(lookup)](std::string_view user, std::string_view password) {
    for (auto m : {security::scram_mechanism::sha_512, security::scram_mechanism::sha_256}) {
      if (auto credential = lookup(user, m)) return security::password_matches(*credential, password);
    }
    return false;
  };
}

}  // namespace ringlog::app
