#pragma once
// Log lines are logfmt (key=value, values with spaces in double quotes): a value put between
// quotes must have its own quotes and backslashes escaped, or a message such as
// `unknown config key "bogus.key"` ends the value early and breaks every logfmt parser.

#include <string>
#include <string_view>

namespace ringlog::base {

/// `text` ready to sit between the double quotes of a logfmt value: `\` -> `\\`, `"` -> `\"`,
/// newline -> `\n`, carriage return -> `\r`; everything else unchanged.
inline std::string logfmt_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace ringlog::base
