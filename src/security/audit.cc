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

}  // namespace ringlog::security
