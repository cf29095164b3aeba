#pragma once
// TLS for serve (issue 29): each TLS listener's settings (ssl.* with listener.name.<name>.ssl.*
// overrides) as a runtime::reloading_tls_context, and the reloader that re-reads them when their
// files change (every ssl.reload.check.interval.ms) and on SIGHUP.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringlog/config/server_config.h"
#include "ringlog/runtime/tls.h"
#include "ringlog/security/ssl_principal_mapper.h"

namespace ringlog::app {

/// The TLS settings of `listener`: its listener.name.<name>.ssl.* keys over the ssl.* ones; the
/// key prefix in errors is the one that was set.
runtime::tls_settings tls_settings_for(const config::server_config& cfg, const config::listener_record& listener);

/// The listener's TLS context (errors name the key: a missing file, a key that does not match
/// its certificate, a wrong ssl.key.password, ...).
base::result<std::shared_ptr<runtime::reloading_tls_context>, std::string> listener_tls(
    const config::server_config& cfg, const config::listener_record& listener, runtime::tls_role role);

/// ssl.principal.mapping.rules of `listener`. Errors name the key.
base::result<std::shared_ptr<const security::ssl_principal_mapper>, std::string> listener_principal_mapper(
    const config::server_config& cfg, const config::listener_record& listener);

/// Re-reads every TLS context whose files changed, every `interval_ms`, and all of them on
/// reload_now() (SIGHUP). One log line per reload (or per failed one: the old certificate stays).
class tls_reloader {
 public:
  explicit tls_reloader(int64_t interval_ms) : interval_ms_(interval_ms) {}
  ~tls_reloader() { stop(); }
  void add(std::string listener_name, std::shared_ptr<runtime::reloading_tls_context> context);
  void start();
  void reload_now();
  void stop();

 private:
  void run();
  int64_t interval_ms_;
  std::vector<std::pair<std::string, std::shared_ptr<runtime::reloading_tls_context>>> contexts_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool reload_requested_ = false;
  std::thread thread_;
};

}  // namespace ringlog::app
