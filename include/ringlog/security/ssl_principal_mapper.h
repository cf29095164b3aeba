#pragma once
// The principal of an mTLS client (issue 29): Kafka's ssl.principal.mapping.rules (KIP-371) over
// the subject of the client's certificate in RFC 2253 form ("CN=alice,OU=eng,O=acme").
//
//   rules  := rule ("," | "\n") rule ...
//   rule   := "DEFAULT"                          the whole subject: User:CN=alice,OU=eng,O=acme
//           | "RULE:" pattern "/" replacement "/" [ "L" | "U" ]
// The first rule whose pattern matches the WHOLE subject wins; its replacement ($1, $2, ... for
// the groups) is the name, lower-cased with L, upper-cased with U. "/" and "\" inside a pattern or
// replacement are escaped with "\". No rule matching is an error (Kafka's NoMatchingRule): the
// connection is refused. Patterns are ECMAScript regular expressions (Java's for these rules).

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/security/principal.h"

namespace ringlog::security {

class ssl_principal_mapper {
 public:
  /// Parses `rules` (empty = DEFAULT). Errors: invalid_config naming ssl.principal.mapping.rules
  /// and the rule that does not parse or whose pattern is not a regular expression.
  static result<ssl_principal_mapper> parse(std::string_view rules);

  /// The principal of a client whose certificate subject is `subject`; nullopt when no rule matches.
  [[nodiscard]] std::optional<kafka_principal> map(const std::string& subject) const;

 private:
  struct rule {
    bool is_default = true;
    std::regex pattern;
    std::string replacement;
    char case_flag = 0;   // 'L', 'U' or 0
  };
  std::vector<rule> rules_;
};

}  // namespace ringlog::security
