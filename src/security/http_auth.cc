#include "ringlog/security/http_auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>

#include "ringlog/base/assert.h"
#include "ringlog/codec/base64.h"
#include "ringlog/security/jwt.h"

namespace ringlog::security {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// The credentials after `scheme ` in an Authorization header (RFC 9110 section 11.4).
std::optional<std::string_view> credentials_of(std::string_view header, std::string_view scheme) {
  header = trim(header);
  if (header.size() <= scheme.size() || !iequals(header.substr(0, scheme.size()), scheme) ||
      header[scheme.size()] != ' ') {
    return std::nullopt;
  }
  std::string_view rest = trim(header.substr(scheme.size() + 1));
  if (rest.empty()) return std::nullopt;
  return rest;
}

}  // namespace

result<http_auth_methods> http_auth_methods::parse(std::string_view text) {
  http_auth_methods m;
  bool none = false;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view word = trim(text.substr(start, comma - start));
    if (iequals(word, "NONE")) none = true;
    else if (iequals(word, "BASIC")) m.basic = true;
    else if (iequals(word, "BEARER")) m.bearer = true;
    else {
      return error{errc::invalid_config, "http.authentication.method: \"" + std::string(word) +
                                             "\" is not NONE, BASIC or BEARER (a list such as BASIC,BEARER)"};
    }
    start = comma + 1;
  }
  if (none && m.enabled()) {
    return error{errc::invalid_config, "http.authentication.method: NONE cannot be listed with BASIC or BEARER"};
  }
  return m;
}

std::string http_auth_methods::to_string() const {
  if (!enabled()) return "NONE";
  if (basic && bearer) return "BASIC,BEARER";
  return basic ? "BASIC" : "BEARER";
}

std::optional<basic_credentials> parse_basic_authorization(std::string_view header) {
  auto encoded = credentials_of(header, "Basic");
  if (!encoded) return std::nullopt;
  auto bytes = codec::base64_decode(*encoded);   // RFC 7617: standard base64, padded
  if (!bytes) return std::nullopt;
  const std::string decoded_text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  const std::string* decoded = &decoded_text;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  return basic_credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

std::optional<std::string_view> parse_bearer_authorization(std::string_view header) {
  return credentials_of(header, "Bearer");
}

std::string random_token() {
  std::array<unsigned char, 32> bytes{};
  RINGLOG_ASSERT(RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) == 1, "RAND_bytes failed");
  return base64url_encode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::pair<std::string, http_session>> http_session_table::add(table& t, size_t max, http_session s,
                                                                             int64_t now_ms) {
  if (t.size() >= max) std::erase_if(t, [&](const auto& entry) { return entry.second.expires_at_ms <= now_ms; });
  if (t.size() >= max) return std::nullopt;
  std::string id = random_token();
  t.emplace(id, s);
  return std::pair{std::move(id), std::move(s)};
}

std::optional<http_session> http_session_table::find(table& t, std::string_view id, int64_t now_ms) {
  auto it = t.find(std::string(id));
  if (it == t.end()) return std::nullopt;
  if (it->second.expires_at_ms <= now_ms) {
    t.erase(it);
    return std::nullopt;
  }
  return it->second;
}

std::optional<std::pair<std::string, http_session>> http_session_table::create_session(
    const kafka_principal& principal, int64_t now_ms, std::string credential_fingerprint) {
  std::lock_guard lock(mutex_);
  return add(sessions_, limits_.sessions_max,
             {principal, now_ms + limits_.session_max_age_ms, random_token(), std::move(credential_fingerprint)}, now_ms);
}

std::optional<http_session> http_session_table::find_session(std::string_view id, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  return find(sessions_, id, now_ms);
}

bool http_session_table::session_live(std::string_view id, int64_t now_ms) const {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(std::string(id));
  return it != sessions_.end() && it->second.expires_at_ms > now_ms;
}

bool http_session_table::end_session(std::string_view id) {
  std::lock_guard lock(mutex_);
  return sessions_.erase(std::string(id)) > 0;
}

std::optional<std::pair<std::string, http_session>> http_session_table::issue_token(const kafka_principal& principal,
                                                                                     int64_t now_ms,
                                                                                     std::string credential_fingerprint) {
  std::lock_guard lock(mutex_);
  return add(tokens_, limits_.tokens_max,
             {principal, now_ms + limits_.token_max_age_ms, {}, std::move(credential_fingerprint)}, now_ms);
}

std::optional<http_session> http_session_table::find_token(std::string_view token, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  return find(tokens_, token, now_ms);
}

size_t http_session_table::live_sessions() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace ringlog::security
