#include "ringlog/base/text.h"

#include <algorithm>
#include <charconv>

namespace ringlog::base {

std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max) {
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::string_view trim_blanks(std::string_view text) {
  constexpr std::string_view blanks = " \t\f\r";
  const size_t first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return text.substr(text.size());
  return text.substr(first, text.find_last_not_of(blanks) + 1 - first);
}

std::vector<std::string_view> split_list(std::string_view list) {
  std::vector<std::string_view> out;
  if (trim_blanks(list).empty()) return out;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    out.push_back(trim_blanks(list.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

std::string percent_encode_segment(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char ch : text) {
    const bool unreserved = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                            ch == '-' || ch == '.' || ch == '_' || ch == '~';
    if (unreserved) {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 0xF];
    }
  }
  return out;
}

}  // namespace ringlog::base
