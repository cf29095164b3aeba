#pragma once
// At most one log line per interval for an event a stranger can repeat at will (a port scanner's
// failed TLS handshakes), with the count of the lines left out: the log stays readable and the
// count still says how many there were.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <map>
#include <string>

#include "ringlog/runtime/constants.h"

namespace ringlog::runtime {

/// One listener's budget of lines, per cause (a failed handshake's reason: a scanner's garbage
/// must not hide the one line that says a real client's certificate is refused). Thread-safe: a
/// listener's connections run on every shard. Not for the data path (it takes a lock): for
/// failures, which are rare unless someone is probing, and then a lock per failure costs less
/// than the line it saves.
class log_rate_limit {
 public:
  explicit log_rate_limit(int64_t interval_ms) : interval_(interval_ms) {}

  /// True when a line about `cause` may be written now (its first event, or the first one
  /// `interval_ms` after its last line); `suppressed` then gets how many events of that cause were
  /// not logged since that line. False (the event counted) otherwise.
  bool admit(const std::string& cause, uint64_t& suppressed) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    // Bounded: causes are a short list (OpenSSL's reasons, read errors, partition names); past
    // this many the map starts over (each cause then gets one line again).
    if (causes_.size() >= causes_tracked_max) causes_.clear();
    auto [it, fresh] = causes_.try_emplace(cause, cause_state{now, 0});
    if (!fresh && now - it->second.last_line < interval_) {
      ++it->second.suppressed;
      return false;
    }
    suppressed = it->second.suppressed;
    it->second = cause_state{now, 0};
    return true;
  }

 private:
  struct cause_state {
    std::chrono::steady_clock::time_point last_line;
    uint64_t suppressed = 0;
  };
  static constexpr size_t causes_tracked_max = 64;
  std::mutex mutex_;
  const std::chrono::milliseconds interval_;
  std::map<std::string, cause_state> causes_;
};

/// The text a rate-limited failed-handshake line ends with: how many were left out before it
/// (empty when none was).
inline std::string handshakes_not_logged(uint64_t suppressed) {
  if (suppressed == 0) return {};
  return " (" + std::to_string(suppressed) + " more failed TLS handshakes on this listener not logged since the last "
         "line of this reason; at most one line per reason per " + std::to_string(constants::tls_handshake_warning_interval_ms / 1000) + " s)";
}

/// The text a rate-limited line of another kind ends with: how many `what` were left out before
/// it (empty when none was), at most one line per reason per `interval_ms`.
inline std::string not_logged(uint64_t suppressed, const std::string& what, int64_t interval_ms) {
  if (suppressed == 0) return {};
  return " (" + std::to_string(suppressed) + " more " + what + " not logged since the last line of this reason; at "
         "most one line per reason per " + std::to_string(interval_ms / 1000) + " s)";
}

}  // namespace ringlog::runtime
