#include "http_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ringlog::gateway {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

struct media_range {
  std::string type;     // "application"
  std::string subtype;  // "json"
  double q = 1.0;
};

// Whether range `r` covers the concrete media type `offered` ("type/subtype").
bool covers(const media_range& r, std::string_view offered) {
  size_t slash = offered.find('/');
  std::string_view type = offered.substr(0, slash);
  std::string_view subtype = offered.substr(slash + 1);
  if (r.type == "*") return true;
  if (r.type != type) return false;
  return r.subtype == "*" || r.subtype == subtype;
}

// Higher means more specific (RFC 9110: the most specific range decides an offer's q).
int specificity(const media_range& r) { return r.type == "*" ? 0 : (r.subtype == "*" ? 1 : 2); }

}  // namespace

std::string media_type_of(std::string_view header_value) {
  size_t semi = header_value.find(';');
  return lower(trim(header_value.substr(0, semi)));
}

namespace {

/// Whether a JSON number's text fits what simdjson's DOM and nlohmann read: an int64 or uint64
/// when it has no fraction or exponent, else a finite double.
bool json_number_fits(std::string_view number) {
  if (number.find_first_of(".eE") == std::string_view::npos) {
    int64_t i = 0;
    if (std::from_chars(number.data(), number.data() + number.size(), i).ec == std::errc{}) return true;
    uint64_t u = 0;
    return number.front() != '-' && std::from_chars(number.data(), number.data() + number.size(), u).ec == std::errc{};
  }
  const std::string text(number);
  return std::isfinite(std::strtod(text.c_str(), nullptr));
}

}  // namespace

std::string_view json_number_out_of_range(std::string_view json) {
  size_t i = 0;
  while (i < json.size()) {
    const char ch = json[i];
    if (ch == '"') {
      ++i;
      while (i < json.size() && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
      ++i;
      continue;
    }
    if (ch != '-' && (ch < '0' || ch > '9')) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < json.size() && std::string_view("0123456789+-.eE").find(json[end]) != std::string_view::npos) ++end;
    const std::string_view number = json.substr(i, end - i);
    if (!json_number_fits(number)) return number;
    i = end;
  }
  return {};
}

std::string json_number_out_of_range_message(std::string_view json, std::string_view what) {
  constexpr size_t shown_max = 40;   // a number of a thousand digits is named by its start
  const std::string_view number = json_number_out_of_range(json);
  std::string message = "a number in the " + std::string(what) + " is out of range: ";
  if (!number.empty()) {
    message += std::string(number.substr(0, shown_max)) + (number.size() > shown_max ? "... " : " ");
  }
  return message + "(integers must fit in 64 bits, other numbers in a double)";
}

std::string latin1_to_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x80) {
      out.push_back(ch);
    } else {
      out.push_back(static_cast<char>(0xC0 | (byte >> 6)));
      out.push_back(static_cast<char>(0x80 | (byte & 0x3F)));
    }
  }
  return out;
}

std::string charset_of(std::string_view header_value) {
  auto params = split(header_value, ';');
  for (size_t i = 1; i < params.size(); ++i) {
    std::string_view param = trim(params[i]);
    size_t eq = param.find('=');
    if (eq == std::string_view::npos || lower(trim(param.substr(0, eq))) != "charset") continue;
    std::string_view value = trim(param.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    return lower(value);
  }
  return "";
}

std::optional<std::string> negotiate(std::string_view accept_header, const std::vector<std::string>& offered) {
  if (offered.empty()) return std::nullopt;
  if (trim(accept_header).empty()) return offered.front();
  std::vector<media_range> ranges;
  for (std::string_view item : split(accept_header, ',')) {
    auto params = split(item, ';');
    std::string type = media_type_of(params[0]);
    if (type.empty()) continue;
    size_t slash = type.find('/');
    media_range r;
    if (slash == std::string::npos) {
      if (type != "*") continue;  // "*" alone: some clients send it
      r.type = "*";
      r.subtype = "*";
    } else {
      r.type = type.substr(0, slash);
      r.subtype = type.substr(slash + 1);
    }
    for (size_t i = 1; i < params.size(); ++i) {
      std::string_view p = trim(params[i]);
      if (p.size() > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
        double q = 0;
        std::string qs(p.substr(2));
        char* end = nullptr;
        q = std::strtod(qs.c_str(), &end);
        if (end == qs.c_str()) q = 1.0;
        r.q = std::clamp(q, 0.0, 1.0);
      }
    }
    ranges.push_back(std::move(r));
  }
  if (ranges.empty()) return offered.front();
  double best_q = 0;
  std::optional<std::string> best;
  for (const std::string& o : offered) {
    int best_spec = -1;
    double q = 0;
    for (const media_range& r : ranges) {
      if (covers(r, o) && specificity(r) > best_spec) {
        best_spec = specificity(r);
        q = r.q;
      }
    }
    if (best_spec >= 0 && q > best_q) {
      best_q = q;
      best = o;
    }
  }
  return best;
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      // from_chars would take a sign ("%-1"): require two hex digits, as RFC 3986 does.
      if (!std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
        return std::nullopt;
      }
      int value = 0;
      auto [ptr, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
      if (ec != std::errc() || ptr != text.data() + i + 3) return std::nullopt;
      out += static_cast<char>(value);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::map<std::string, std::string>> parse_query(std::string_view query) {
  std::map<std::string, std::string> out;
  if (query.empty()) return out;
  for (std::string_view pair : split(query, '&')) {
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true);
    if (!name || !value) return std::nullopt;
    out[*name] = *value;
  }
  return out;
}

std::string without_query_parameter(std::string_view target, std::string_view name) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  const std::string_view query = target.substr(q + 1);
  std::string kept;
  for (size_t start = 0; start <= query.size();) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view pair = query.substr(start, end - start);
    const auto key = percent_decode(pair.substr(0, pair.find('=')), true);
    if (!pair.empty() && !(key && *key == name)) {
      if (!kept.empty()) kept += '&';
      kept += pair;
    }
    start = end + 1;
  }
  return std::string(target.substr(0, q)) + (kept.empty() ? "" : "?" + kept);
}

std::pair<std::string_view, std::string_view> split_target(std::string_view target) {
  // Absolute form (RFC 9112 section 3.2.2, "GET http://host/path"): servers must accept it.
  if (target.starts_with("http://") || target.starts_with("https://")) {
    const size_t scheme_end = target.find("//") + 2;
    const size_t path_start = target.find('/', scheme_end);
    target = path_start == std::string_view::npos ? std::string_view("/") : target.substr(path_start);
  }
  size_t q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

bool match_path(std::string_view pattern, std::string_view path, std::map<std::string, std::string>& params) {
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);  // "/topics/" == "/topics"
  // The segments ('/'-separated, empty ones kept) are compared in step, without splitting either
  // string into a vector: every request tries every route's pattern (issue 32).
  if (std::count(pattern.begin(), pattern.end(), '/') != std::count(path.begin(), path.end(), '/')) return false;
  std::map<std::string, std::string> found;
  size_t pattern_at = 0, path_at = 0;
  while (true) {
    const size_t pattern_end = std::min(pattern.find('/', pattern_at), pattern.size());
    const size_t path_end = std::min(path.find('/', path_at), path.size());
    std::string_view p = pattern.substr(pattern_at, pattern_end - pattern_at);
    std::string_view part = path.substr(path_at, path_end - path_at);
    if (p.size() >= 2 && p.front() == '{' && p.back() == '}') {
      if (part.empty()) return false;
      auto decoded = percent_decode(part, false);
      if (!decoded) return false;
      found[std::string(p.substr(1, p.size() - 2))] = *decoded;
    } else if (p != part) {
      return false;
    }
    if (pattern_end == pattern.size()) break;
    pattern_at = pattern_end + 1;
    path_at = path_end + 1;
  }
  params = std::move(found);
  return true;
}

bool origin_allowed(const std::vector<std::string>& allowed, std::string_view origin) {
  std::string wanted = lower(origin);
  for (const std::string& a : allowed) {
    if (a == "*" || lower(a) == wanted) return true;
  }
  return false;
}

bool same_origin(std::string_view origin, std::string_view host, bool https) {
  const size_t scheme = origin.find("://");
  if (scheme == std::string_view::npos || host.empty()) return false;
  // RFC 6454 section 5: an origin is scheme, host and port; "ftp://x" is not the origin of http://x.
  if (lower(origin.substr(0, scheme)) != (https ? "https" : "http")) return false;
  return lower(origin.substr(scheme + 3)) == lower(host);
}

std::optional<std::pair<std::string, std::string>> origin_form(std::string_view target, bool https) {
  const std::string_view scheme = https ? "https://" : "http://";
  if (target.size() < scheme.size() || lower(target.substr(0, scheme.size())) != scheme) return std::nullopt;
  target.remove_prefix(scheme.size());
  const size_t path = target.find_first_of("/?");
  const std::string authority(target.substr(0, path));
  if (authority.empty() || authority.find('@') != std::string::npos) return std::nullopt;   // no userinfo (RFC 9110 4.2.4)
  if (path == std::string_view::npos) return std::pair{std::string("/"), authority};
  if (target[path] == '?') return std::pair{"/" + std::string(target.substr(path)), authority};
  return std::pair{std::string(target.substr(path)), authority};
}

bool host_permitted(const std::vector<std::string>& names, std::string_view host) {
  if (host.empty()) return true;
  if (host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string inside(host.substr(1, close - 1));
    in6_addr v6{};
    return inet_pton(AF_INET6, inside.c_str(), &v6) == 1 &&
           (close + 1 == host.size() || host[close + 1] == ':');
  }
  std::string name = lower(host.substr(0, host.find(':')));
  if (!name.empty() && name.back() == '.') name.pop_back();
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) return true;
  if (name == "localhost" || name.ends_with(".localhost")) return true;
  for (const std::string& n : names) {
    if (n == "*" || lower(n) == name) return true;
  }
  return false;
}

bool origin_permitted(const std::vector<std::string>& allowed, std::string_view origin, std::string_view host,
                      bool https) {
  return same_origin(origin, host, https) || origin_allowed(allowed, origin);
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  auto opaque = [](std::string_view tag) {
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    return tag;
  };
  for (std::string_view item : split(if_none_match, ',')) {
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item == "*" || (!item.empty() && opaque(item) == opaque(etag))) return true;
  }
  return false;
}

}  // namespace ringlog::gateway
