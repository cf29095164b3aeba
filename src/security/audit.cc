#include "ringlog/security/audit.h"

#include "ringlog/base/logfmt.h"

namespace ringlog::security {

std::string audit_failed_authentication_line(std::string_view door, std::string_view claimed, std::string_view peer,
                                             std::string_view reason) {
  return "audit=authentication msg=\"authentication failed\" door=" + std::string(door) + " principal=\"" +
         base::logfmt_escaped(claimed) + "\" peer=" + std::string(peer.empty() ? "-" : peer) + " reason=\"" +
         base::logfmt_escaped(reason) + "\"";
}

std::string audit_admin_write_line(std::string_view door, const kafka_principal& principal, std::string_view peer,
                                   std::string_view operation, std::string_view resource, std::string_view outcome) {
  return "audit=admin msg=\"admin write\" door=" + std::string(door) + " principal=\"" +
         base::logfmt_escaped(principal.to_string()) + "\" peer=" + std::string(peer.empty() ? "-" : peer) +
         " operation=\"" + base::logfmt_escaped(operation) + "\" resource=\"" + base::logfmt_escaped(resource) +
         "\" outcome=\"" + base::logfmt_escaped(outcome) + "\"";
}

std::string audit_clipped(std::string_view text) {
  if (text.size() <= audit_field_bytes_max) return base::logfmt_escaped(text);
  return base::logfmt_escaped(text.substr(0, audit_field_bytes_max)) + "...(" +
         std::to_string(text.size() - audit_field_bytes_max) + " more bytes)";
}

std::string audit_authorization_denied_line(std::string_view door, const kafka_principal& principal, std::string_view host,
                                            const acl_action& action, std::string_view request) {
  return "audit=authorization msg=\"authorization denied\" door=" + std::string(door) + " principal=\"" +
         audit_clipped(principal.to_string()) + "\" host=" + audit_clipped(host.empty() ? "-" : host) +
         " operation=" + std::string(to_string(action.operation)) + " resource=\"" +
         std::string(to_string(action.resource)) + ":" + audit_clipped(action.name) + "\" request=\"" +
         audit_clipped(request) + "\"";
}

audit_denial_budget::verdict audit_denial_budget::admit(int64_t now_s) {
  verdict v;
  int64_t seen = second_.load(std::memory_order_relaxed);
  if (seen != now_s && second_.compare_exchange_strong(seen, now_s, std::memory_order_relaxed)) {
    // The first denial of a new second: the budget starts again (another thread's line of the
    // old second may still count against it: the bound is approximate by a few lines).
    written_.store(0, std::memory_order_relaxed);
    v.suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
  }
  if (written_.fetch_add(1, std::memory_order_relaxed) < audit_denial_lines_per_second_max) {
    v.log = true;
  } else {
    suppressed_.fetch_add(1, std::memory_order_relaxed);
  }
  return v;
}

std::string audit_denials_suppressed_line(std::string_view door, int64_t count) {
  return "audit=authorization msg=\"authorization denials not logged\" door=" + std::string(door) +
         " count=" + std::to_string(count) + " reason=\"over audit_denial_lines_per_second_max\"";
}

}  // namespace ringlog::security
