#pragma once
// Log lines are logfmt (key=value, values with spaces in double quotes): a value put between
// quotes must have its own quotes and backslashes escaped, or a message such as
// `unknown config key "bogus.key"` ends the value early and breaks every logfmt parser.

#include <string>
#include <string_view>

namespace ringlog::base {

/// `text` ready to sit between the double quotes of a logfmt value: `\` -> `\\`, `"` -> `\"`,
/// newline -> `\n`, carriage return -> `\r`, every other control character (and DEL) -> `\xHH`,
/// so a client's name cannot move the cursor or clear a terminal reading the log; everything else
/// (UTF-8 included) unchanged.
inline std::string logfmt_escaped(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    switch (ch) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          out += "\\x";
          out += hex[byte >> 4];
          out += hex[byte & 0xf];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace ringlog::base
