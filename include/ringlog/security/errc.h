#pragma once
// Authentication and authorization failures (issues 29 and 30), named as Kafka's error codes.

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::security {

enum class errc {
  invalid_principal,              // a principal text that is not TYPE:NAME (the message quotes it)
  sasl_authentication_failed,     // Kafka's SASL_AUTHENTICATION_FAILED (58): wrong password, unknown user, bad token
  unsupported_sasl_mechanism,     // Kafka's UNSUPPORTED_SASL_MECHANISM (33)
  illegal_sasl_state,             // Kafka's ILLEGAL_SASL_STATE (34): a SASL message out of order
  invalid_config,                 // a security setting out of its bounds (the message names the key)
  invalid_acl                     // an ACL or ACL filter that cannot be stored or asked (the message names the field)
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::security
