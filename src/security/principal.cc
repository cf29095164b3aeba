#include "ringlog/security/principal.h"

namespace ringlog::security {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::invalid_principal: return "invalid_principal";
    case errc::sasl_authentication_failed: return "sasl_authentication_failed";
    case errc::unsupported_sasl_mechanism: return "unsupported_sasl_mechanism";
    case errc::illegal_sasl_state: return "illegal_sasl_state";
    case errc::invalid_config: return "invalid_config";
    case errc::invalid_acl: return "invalid_acl";
  }
  return "unknown";
}

std::string kafka_principal::to_string() const { return principal_type + ":" + name; }

result<kafka_principal> kafka_principal::parse(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return error{errc::invalid_principal,
                 "principal '" + std::string(text) + "' is not TYPE:NAME (for example User:alice)"};
  }
  return kafka_principal{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
}

}  // namespace ringlog::security
