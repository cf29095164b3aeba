#include "ringlog/security/ssl_principal_mapper.h"

#include <cctype>

namespace ringlog::security {

namespace {

error bad_rules(std::string_view rules, const std::string& why) {
  return {errc::invalid_config, "ssl.principal.mapping.rules=" + std::string(rules) + ": " + why};
}

/// Reads up to the next unescaped '/' from `pos`, unescaping "\/" (other escapes stay for the
/// regex); nullopt when there is none.
std::optional<std::string> read_part(std::string_view text, size_t& pos, bool keep_escapes) {
  std::string out;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '\\' && pos + 1 < text.size()) {
      if (text[pos + 1] != '/' || keep_escapes) out += c;
      out += text[pos + 1];
      pos += 2;
      continue;
    }
    ++pos;
    if (c == '/') return out;
    out += c;
  }
  return std::nullopt;
}

}  // namespace

result<ssl_principal_mapper> ssl_principal_mapper::parse(std::string_view rules) {
  ssl_principal_mapper out;
  size_t pos = 0;
  auto skip_separators = [&] {
    while (pos < rules.size() && (rules[pos] == ',' || rules[pos] == '\n' || rules[pos] == ' ' || rules[pos] == '\t')) ++pos;
  };
  skip_separators();
  while (pos < rules.size()) {
    if (rules.substr(pos, 7) == "DEFAULT") {
      out.rules_.push_back(rule{});
      pos += 7;
    } else if (rules.substr(pos, 5) == "RULE:") {
      pos += 5;
      auto pattern = read_part(rules, pos, true);
      auto replacement = pattern ? read_part(rules, pos, false) : std::nullopt;
      if (!pattern || !replacement) return bad_rules(rules, "a RULE needs RULE:pattern/replacement/[LU]");
      rule r;
      r.is_default = false;
      try {
        r.pattern = std::regex(*pattern, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return bad_rules(rules, "pattern '" + *pattern + "' is not a regular expression: " + e.what());
      }
      r.replacement = *replacement;
      if (pos < rules.size() && (rules[pos] == 'L' || rules[pos] == 'U')) r.case_flag = rules[pos++];
      out.rules_.push_back(std::move(r));
    } else {
      return bad_rules(rules, "each rule is DEFAULT or RULE:pattern/replacement/[LU], got '" +
                                  std::string(rules.substr(pos, rules.find_first_of(",\n", pos) - pos)) + "'");
    }
    while (pos < rules.size() && (rules[pos] == ' ' || rules[pos] == '\t')) ++pos;
    if (pos < rules.size() && rules[pos] != ',' && rules[pos] != '\n') {
      return bad_rules(rules, "rules are separated by ',' or newlines (unexpected '" + std::string(1, rules[pos]) + "')");
    }
    skip_separators();
  }
  if (out.rules_.empty()) out.rules_.push_back(rule{});
  return out;
}

std::optional<kafka_principal> ssl_principal_mapper::map(const std::string& subject) const {
  for (const auto& r : rules_) {
    if (r.is_default) return kafka_principal::user(subject);
    std::smatch m;
    if (!std::regex_match(subject, m, r.pattern)) continue;
    std::string name = m.format(r.replacement);
    for (char& c : name) {
      if (r.case_flag == 'L') c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (r.case_flag == 'U') c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return kafka_principal::user(std::move(name));
  }
  return std::nullopt;
}

}  // namespace ringlog::security
