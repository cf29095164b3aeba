#include "ringlog/security/scram_spec.h"

#include <charconv>
#include <map>
#include <optional>

#include "ringlog/codec/base64.h"

namespace ringlog::security {

namespace {

error bad(std::string_view text, const std::string& why) {
  return error{errc::invalid_config, "--add-scram '" + std::string(text) + "': " + why};
}

/// `key=value` pairs of the bracketed list, values unquoted. nullopt when malformed.
std::optional<std::map<std::string, std::string>> parse_pairs(std::string_view list) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < list.size()) {
    const size_t eq = list.find('=', i);
    if (eq == std::string_view::npos || eq == i) return std::nullopt;
    std::string key(list.substr(i, eq - i));
    std::string value;
    i = eq + 1;
    if (i < list.size() && list[i] == '"') {
      const size_t close = list.find('"', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      value = std::string(list.substr(i + 1, close - i - 1));
      i = close + 1;
      if (i < list.size() && list[i] != ',') return std::nullopt;
    } else {
      const size_t comma = list.find(',', i);
      value = std::string(list.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i));
      i = comma == std::string_view::npos ? list.size() : comma;
    }
    if (i < list.size()) ++i;   // the ','
    if (!out.emplace(std::move(key), std::move(value)).second) return std::nullopt;
  }
  return out;
}

}  // namespace

result<scram_user_spec> parse_add_scram(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || text.size() < eq + 3 || text[eq + 1] != '[' || text.back() != ']') {
    return bad(text, "expected MECHANISM=[name=NAME,password=PASSWORD]");
  }
  auto mechanism = parse_scram_mechanism(text.substr(0, eq));
  if (!mechanism) return bad(text, "mechanism '" + std::string(text.substr(0, eq)) + "' (SCRAM-SHA-256 or SCRAM-SHA-512)");
  auto pairs = parse_pairs(text.substr(eq + 2, text.size() - eq - 3));
  if (!pairs) return bad(text, "expected key=value pairs separated by ',' inside [ ]");
  for (const auto& [k, v] : *pairs) {
    if (k != "name" && k != "password" && k != "salt" && k != "saltedpassword" && k != "iterations") {
      return bad(text, "unknown key '" + k + "' (name, password, salt, saltedpassword, iterations)");
    }
  }
  auto get = [&](const char* key) -> std::optional<std::string> {
    auto it = pairs->find(key);
    return it == pairs->end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  scram_user_spec out;
  out.user = get("name").value_or("");
  if (out.user.empty()) return bad(text, "name is required");
  int32_t iterations = constants::scram_iterations_default;
  if (auto i = get("iterations")) {
    auto [ptr, ec] = std::from_chars(i->data(), i->data() + i->size(), iterations);
    if (ec != std::errc() || ptr != i->data() + i->size()) return bad(text, "iterations '" + *i + "' is not a number");
  }
  bytes salt;
  if (auto s = get("salt")) {
    auto decoded = codec::base64_decode(*s);
    if (!decoded || decoded->empty()) return bad(text, "salt is not base64");
    salt = std::move(*decoded);
  } else {
    salt = random_bytes(constants::scram_salt_bytes);
  }
  const auto password = get("password");
  const auto salted = get("saltedpassword");
  if (password.has_value() == salted.has_value()) return bad(text, "give exactly one of password and saltedpassword");
  if (password && password->empty()) return bad(text, "password must not be empty");
  result<scram_credential> credential = error{errc::invalid_config, ""};
  if (password) {
    credential = derive_scram_credential(*mechanism, *password, salt, iterations);
  } else {
    if (!get("salt")) return bad(text, "saltedpassword needs the salt it was made with");
    auto decoded = codec::base64_decode(*salted);
    if (!decoded) return bad(text, "saltedpassword is not base64");
    credential = credential_from_salted_password(*mechanism, *decoded, salt, iterations);
  }
  if (!credential.ok()) return bad(text, credential.error().message);
  out.credential = std::move(credential).value();
  return out;
}

}  // namespace ringlog::security
