#pragma once
// Log lines are logfmt (key=value, values with spaces in double quotes): a value put between
// quotes must have its own quotes and backslashes escaped, or a message such as
// `unknown config key "bogus.key"` ends the value early and breaks every logfmt parser.

#include <cstddef>
#include <string>
#include <string_view>

namespace ringlog::base {

/// The length of the well-formed UTF-8 sequence starting at text[i] (RFC 3629 section 4: no
/// overlong forms, no surrogates, nothing above U+10FFFF), 0 when the bytes there are not one.
/// text[i] must be >= 0x80.
inline size_t utf8_sequence_bytes(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  size_t length = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) second_min = 0xa0;   // overlong below U+0800
    if (lead == 0xed) second_max = 0x9f;   // surrogates U+D800-U+DFFF
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) second_min = 0x90;   // overlong below U+10000
    if (lead == 0xf4) second_max = 0x8f;   // above U+10FFFF
  }
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    const auto byte = static_cast<unsigned char>(text[i + k]);
    if (byte < (k == 1 ? second_min : 0x80) || byte > (k == 1 ? second_max : 0xbf)) return 0;
  }
  return length;
}

/// `text` ready to sit between the double quotes of a logfmt value: `\` -> `\\`, `"` -> `\"`,
/// newline -> `\n`, carriage return -> `\r`, every other control character (and DEL) -> `\xHH`,
/// so a client's name cannot move the cursor or clear a terminal reading the log; a byte that does
/// not start a well-formed UTF-8 sequence -> `\xHH` too (a damaged file's bytes quoted in a
/// message would otherwise make the log invalid UTF-8 for every tool reading it); everything else
/// (well-formed UTF-8 included) unchanged.
inline std::string logfmt_escaped(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const auto byte = static_cast<unsigned char>(ch);
    if (byte >= 0x80) {
      const size_t sequence = utf8_sequence_bytes(text, i);
      if (sequence > 0) {
        out.append(text.substr(i, sequence));
        i += sequence - 1;
      } else {
        out += "\\x";
        out += hex[byte >> 4];
        out += hex[byte & 0xf];
      }
      continue;
    }
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
