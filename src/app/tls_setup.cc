#include "tls_setup.h"

#include <spdlog/spdlog.h>

#include <cctype>

#include "ringlog/base/logfmt.h"

namespace ringlog::app {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

runtime::tls_settings tls_settings_for(const config::server_config& cfg, const config::listener_record& listener) {
  auto get = [&](const char* key) { return config::listener_setting(cfg, listener.name, key); };
  runtime::tls_settings s;
  s.keystore_type = get("ssl.keystore.type");
  s.keystore_location = get("ssl.keystore.location");
  s.keystore_key = get("ssl.keystore.key");
  s.keystore_certificate_chain = get("ssl.keystore.certificate.chain");
  s.key_password = get("ssl.key.password");
  s.truststore_type = get("ssl.truststore.type");
  s.truststore_location = get("ssl.truststore.location");
  s.truststore_certificates = get("ssl.truststore.certificates");
  s.client_auth = get("ssl.client.auth");
  s.enabled_protocols = get("ssl.enabled.protocols");
  s.cipher_suites = get("ssl.cipher.suites");
  // The cluster listener is mutual TLS whatever ssl.client.auth says (docs/security.md).
  if (listener.is_cluster()) s.client_auth = "required";
  auto overrides = cfg.listener_overrides.find(lower(listener.name));
  const bool overridden = overrides != cfg.listener_overrides.end() &&
                          (overrides->second.contains("ssl.keystore.location") || overrides->second.contains("ssl.keystore.key"));
  s.key_prefix = overridden ? "listener.name." + lower(listener.name) + ".ssl." : "ssl.";
  return s;
}

base::result<std::shared_ptr<runtime::reloading_tls_context>, std::string> listener_tls(
    const config::server_config& cfg, const config::listener_record& listener, runtime::tls_role role) {
  auto made = runtime::reloading_tls_context::create(tls_settings_for(cfg, listener), role);
  if (!made.ok()) return "listener " + listener.name + ": " + made.error();
  return made;
}

base::result<std::shared_ptr<const security::ssl_principal_mapper>, std::string> listener_principal_mapper(
    const config::server_config& cfg, const config::listener_record& listener) {
  auto parsed = security::ssl_principal_mapper::parse(config::listener_setting(cfg, listener.name, "ssl.principal.mapping.rules"));
  if (!parsed.ok()) return parsed.error().message;
  return std::make_shared<const security::ssl_principal_mapper>(std::move(parsed).value());
}

void tls_reloader::add(std::string listener_name, std::shared_ptr<runtime::reloading_tls_context> context) {
  contexts_.emplace_back(std::move(listener_name), std::move(context));
}

void tls_reloader::start() {
  if (contexts_.empty()) return;
  thread_ = std::thread([this] { run(); });
}

void tls_reloader::reload_now() {
  std::lock_guard lock(mutex_);
  reload_requested_ = true;
  wake_.notify_all();
}

void tls_reloader::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void tls_reloader::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stopping_ || reload_requested_; });
    if (stopping_) return;
    const bool forced = reload_requested_;
    reload_requested_ = false;
    lock.unlock();
    for (const auto& [name, context] : contexts_) {
      auto r = forced ? context->reload() : context->check();
      if (!r.ok()) {
        spdlog::error("msg=\"TLS certificate not reloaded; the previous one keeps serving\" listener={} error=\"{}\"",
                      name, base::logfmt_escaped(r.error()));
      } else if (r.value()) {
        spdlog::info("msg=\"TLS certificate reloaded: new handshakes use it, open connections stay\" listener={} "
                     "trigger={}",
                     name, forced ? "SIGHUP" : "file changed");
      }
    }
    lock.lock();
  }
}

}  // namespace ringlog::app
