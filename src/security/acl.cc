#include "ringlog/security/acl.h"
#include "ringlog/security/acl_host.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <utility>

namespace ringlog::security {

namespace {

template <typename Enum, size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& names, Enum value) {
  for (const auto& [v, n] : names) {
    if (v == value) return n;
  }
  return "UNKNOWN";
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

template <typename Enum, size_t N>
std::optional<Enum> parse_name(const std::array<std::pair<Enum, std::string_view>, N>& names, std::string_view text) {
  for (const auto& [v, n] : names) {
    if (equal_ignoring_case(n, text)) return v;
  }
  return std::nullopt;
}

constexpr std::array<std::pair<resource_type, std::string_view>, 8> resource_type_names{{
    {resource_type::unknown, "UNKNOWN"},
    {resource_type::any, "ANY"},
    {resource_type::topic, "TOPIC"},
    {resource_type::group, "GROUP"},
    {resource_type::cluster, "CLUSTER"},
    {resource_type::transactional_id, "TRANSACTIONAL_ID"},
    {resource_type::delegation_token, "DELEGATION_TOKEN"},
    {resource_type::user, "USER"},
}};

constexpr std::array<std::pair<pattern_type, std::string_view>, 5> pattern_type_names{{
    {pattern_type::unknown, "UNKNOWN"},
    {pattern_type::any, "ANY"},
    {pattern_type::match, "MATCH"},
    {pattern_type::literal, "LITERAL"},
    {pattern_type::prefixed, "PREFIXED"},
}};

constexpr std::array<std::pair<acl_operation, std::string_view>, 15> operation_names{{
    {acl_operation::unknown, "UNKNOWN"},
    {acl_operation::any, "ANY"},
    {acl_operation::all, "ALL"},
    {acl_operation::read, "READ"},
    {acl_operation::write, "WRITE"},
    {acl_operation::create, "CREATE"},
    {acl_operation::delete_, "DELETE"},
    {acl_operation::alter, "ALTER"},
    {acl_operation::describe, "DESCRIBE"},
    {acl_operation::cluster_action, "CLUSTER_ACTION"},
    {acl_operation::describe_configs, "DESCRIBE_CONFIGS"},
    {acl_operation::alter_configs, "ALTER_CONFIGS"},
    {acl_operation::idempotent_write, "IDEMPOTENT_WRITE"},
    {acl_operation::create_tokens, "CREATE_TOKENS"},
    {acl_operation::describe_tokens, "DESCRIBE_TOKENS"},
}};

constexpr std::array<std::pair<acl_permission_type, std::string_view>, 4> permission_names{{
    {acl_permission_type::unknown, "UNKNOWN"},
    {acl_permission_type::any, "ANY"},
    {acl_permission_type::deny, "DENY"},
    {acl_permission_type::allow, "ALLOW"},
}};

/// Kafka's StandardAuthorizerData.findResult for an ACL whose resource pattern matched: nullopt
/// when the principal, host or operation does not match; else the ACL's permission.
std::optional<authorization_result> acl_result(const acl_binding& acl, std::string_view principal,
                                               std::string_view host, acl_operation wanted) {
  if (acl.principal != principal && acl.principal != "User:*") return std::nullopt;
  if (acl.host != acl_wildcard && acl.host != host) return std::nullopt;
  if (acl.operation != acl_operation::all) {
    if (acl.permission == acl_permission_type::allow) {
      // ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE; ALTER_CONFIGS implies
      // DESCRIBE_CONFIGS (DENY implies nothing).
      const acl_operation o = acl.operation;
      const bool implied =
          (wanted == acl_operation::describe &&
           (o == acl_operation::read || o == acl_operation::write || o == acl_operation::delete_ ||
            o == acl_operation::alter)) ||
          (wanted == acl_operation::describe_configs && o == acl_operation::alter_configs);
      if (o != wanted && !implied) return std::nullopt;
    } else if (acl.operation != wanted) {
      return std::nullopt;
    }
  }
  return acl.permission == acl_permission_type::allow ? authorization_result::allowed : authorization_result::denied;
}

result<void> check_text(std::string_view field, std::string_view value) {
  if (value.empty()) return error{errc::invalid_acl, std::string(field) + " is empty"};
  if (value.size() > acl_text_bytes_max) {
    return error{errc::invalid_acl, std::string(field) + " is " + std::to_string(value.size()) +
                                        " bytes, above the limit of " + std::to_string(acl_text_bytes_max)};
  }
  return base::ok_v;
}

}  // namespace

std::string_view to_string(resource_type v) { return name_of(resource_type_names, v); }
std::string_view to_string(pattern_type v) { return name_of(pattern_type_names, v); }
std::string_view to_string(acl_operation v) { return name_of(operation_names, v); }
std::string_view to_string(acl_permission_type v) { return name_of(permission_names, v); }
std::optional<resource_type> parse_resource_type(std::string_view t) { return parse_name(resource_type_names, t); }
std::optional<pattern_type> parse_pattern_type(std::string_view t) { return parse_name(pattern_type_names, t); }
std::optional<acl_operation> parse_acl_operation(std::string_view t) { return parse_name(operation_names, t); }
std::optional<acl_permission_type> parse_acl_permission_type(std::string_view t) {
  return parse_name(permission_names, t);
}

std::optional<std::string> canonical_acl_host(std::string_view text) {
  if (text == acl_wildcard) return std::string(acl_wildcard);
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string z(text);
  char out[INET6_ADDRSTRLEN] = {};
  in_addr v4{};
  if (inet_pton(AF_INET, z.c_str(), &v4) == 1) return std::string(inet_ntop(AF_INET, &v4, out, sizeof out));
  in6_addr v6{};
  if (inet_pton(AF_INET6, z.c_str(), &v6) != 1) return std::nullopt;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    std::memcpy(&v4, &v6.s6_addr[12], sizeof v4);
    return std::string(inet_ntop(AF_INET, &v4, out, sizeof out));
  }
  return std::string(inet_ntop(AF_INET6, &v6, out, sizeof out));
}

result<void> validate_acl(const acl_binding& acl) {
  if (acl.resource == resource_type::unknown || acl.resource == resource_type::any) {
    return error{errc::invalid_acl, "resource_type " + std::string(to_string(acl.resource)) +
                                        " cannot be stored: name TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, "
                                        "DELEGATION_TOKEN or USER"};
  }
  if (acl.pattern != pattern_type::literal && acl.pattern != pattern_type::prefixed) {
    return error{errc::invalid_acl, "pattern_type " + std::string(to_string(acl.pattern)) +
                                        " cannot be stored: name LITERAL or PREFIXED"};
  }
  if (acl.operation == acl_operation::unknown || acl.operation == acl_operation::any) {
    return error{errc::invalid_acl, "operation " + std::string(to_string(acl.operation)) + " cannot be stored"};
  }
  if (acl.permission != acl_permission_type::allow && acl.permission != acl_permission_type::deny) {
    return error{errc::invalid_acl,
                 "permission " + std::string(to_string(acl.permission)) + " cannot be stored: name ALLOW or DENY"};
  }
  if (auto ok = check_text("resource_name", acl.resource_name); !ok.ok()) return ok;
  if (auto ok = check_text("principal", acl.principal); !ok.ok()) return ok;
  if (auto ok = check_text("host", acl.host); !ok.ok()) return ok;
  if (!canonical_acl_host(acl.host)) {
    return error{errc::invalid_acl, "host '" + acl.host + "' is neither * nor an IPv4 or IPv6 address"};
  }
  if (auto p = kafka_principal::parse(acl.principal); !p.ok()) return error{errc::invalid_acl, p.error().message};
  if (acl.resource == resource_type::cluster && acl.resource_name != cluster_resource_name) {
    return error{errc::invalid_acl, "a CLUSTER resource is named '" + std::string(cluster_resource_name) +
                                        "', not '" + acl.resource_name + "'"};
  }
  return base::ok_v;
}

result<void> validate_acl_filter(const acl_filter& f) {
  if (f.resource == resource_type::unknown) return error{errc::invalid_acl, "the filter's resource_type is UNKNOWN"};
  if (f.pattern == pattern_type::unknown) return error{errc::invalid_acl, "the filter's pattern_type is UNKNOWN"};
  if (f.operation == acl_operation::unknown) return error{errc::invalid_acl, "the filter's operation is UNKNOWN"};
  if (f.permission == acl_permission_type::unknown) return error{errc::invalid_acl, "the filter's permission is UNKNOWN"};
  if (f.pattern == pattern_type::match && !f.resource_name) {
    return error{errc::invalid_acl, "a filter with pattern_type MATCH names the resource_name it matches"};
  }
  return base::ok_v;
}

bool acl_filter::matches(const acl_binding& acl) const {
  if (resource != resource_type::any && resource != acl.resource) return false;
  if (principal && *principal != acl.principal) return false;
  if (host && *host != acl.host) return false;
  if (operation != acl_operation::any && operation != acl.operation) return false;
  if (permission != acl_permission_type::any && permission != acl.permission) return false;
  switch (pattern) {
    case pattern_type::any:
      return !resource_name || *resource_name == acl.resource_name;
    case pattern_type::match:
      // The ACLs that apply to the named resource: the same name, the LITERAL wildcard, and
      // PREFIXED patterns the name starts with (Kafka's ResourcePatternFilter.matches).
      if (!resource_name) return true;
      if (acl.pattern == pattern_type::literal) {
        return acl.resource_name == *resource_name || acl.resource_name == acl_wildcard;
      }
      return resource_name->starts_with(acl.resource_name);
    default:
      return pattern == acl.pattern && (!resource_name || *resource_name == acl.resource_name);
  }
}

result<std::vector<std::string>> parse_super_users(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t semicolon = text.find(';');
    std::string_view entry = text.substr(0, semicolon);
    text = semicolon == std::string_view::npos ? std::string_view{} : text.substr(semicolon + 1);
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.front()))) entry.remove_prefix(1);
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.back()))) entry.remove_suffix(1);
    if (entry.empty()) continue;
    auto p = kafka_principal::parse(entry);
    if (!p.ok()) return error{errc::invalid_config, "super.users: " + p.error().message};
    out.push_back(p->to_string());
  }
  return out;
}

acl_index::acl_index(std::vector<acl_binding> acls) : acls_(std::move(acls)) {
  // Hosts as the doors give them (canonical_acl_host), also for ACLs stored before hosts were
  // checked: "0:0:0:0:0:0:0:1" matches a "::1" client.
  for (auto& a : acls_) {
    if (auto host = canonical_acl_host(a.host)) a.host = std::move(*host);
  }
  std::sort(acls_.begin(), acls_.end());
  acls_.erase(std::unique(acls_.begin(), acls_.end()), acls_.end());
  for (size_t i = 0; i < acls_.size(); ++i) {
    const acl_binding& a = acls_[i];
    per_resource_type& t = by_type_[a.resource];
    if (a.pattern == pattern_type::prefixed) {
      t.prefixed[a.resource_name].push_back(i);
      t.prefix_lengths.push_back(a.resource_name.size());
    } else {
      t.literal[a.resource_name].push_back(i);
    }
  }
  for (auto& [type, t] : by_type_) {
    std::sort(t.prefix_lengths.begin(), t.prefix_lengths.end());
    t.prefix_lengths.erase(std::unique(t.prefix_lengths.begin(), t.prefix_lengths.end()), t.prefix_lengths.end());
  }
}

authorization_decision acl_index::authorize(const kafka_principal& principal, std::string_view host,
                                            const acl_action& action, const authorizer_settings& settings) const {
  const std::string who = principal.to_string();
  if (std::find(settings.super_users.begin(), settings.super_users.end(), who) != settings.super_users.end()) {
    return {authorization_result::allowed, authorization_decision::rule::super_user, std::nullopt};
  }
  authorization_decision decision;
  bool resource_has_acls = false;
  const acl_binding* allow = nullptr;
  auto scan = [&](const std::vector<size_t>& found) {
    for (size_t i : found) {
      resource_has_acls = true;
      const auto r = acl_result(acls_[i], who, host, action.operation);
      if (r == authorization_result::denied) return &acls_[i];
      if (r == authorization_result::allowed && allow == nullptr) allow = &acls_[i];
    }
    return static_cast<const acl_binding*>(nullptr);
  };
  const acl_binding* deny = nullptr;
  if (auto type = by_type_.find(action.resource); type != by_type_.end()) {
    const per_resource_type& t = type->second;
    const std::string name(action.name);
    if (auto it = t.literal.find(name); it != t.literal.end()) deny = scan(it->second);
    if (auto it = t.literal.find(std::string(acl_wildcard)); deny == nullptr && it != t.literal.end()) {
      deny = scan(it->second);
    }
    for (size_t length : t.prefix_lengths) {
      if (deny != nullptr || length > name.size()) break;
      if (auto it = t.prefixed.find(name.substr(0, length)); it != t.prefixed.end()) deny = scan(it->second);
    }
  }
  if (deny != nullptr) return {authorization_result::denied, authorization_decision::rule::matching_deny, *deny};
  if (allow != nullptr) return {authorization_result::allowed, authorization_decision::rule::matching_allow, *allow};
  if (!resource_has_acls && settings.allow_everyone_if_no_acl_found) {
    return {authorization_result::allowed, authorization_decision::rule::no_acl_default, std::nullopt};
  }
  decision.by = resource_has_acls ? authorization_decision::rule::no_matching_acl
                                  : authorization_decision::rule::no_acl_default;
  return decision;
}

std::vector<acl_binding> acl_index::select(const acl_filter& filter) const {
  std::vector<acl_binding> out;
  for (const auto& a : acls_) {
    if (filter.matches(a)) out.push_back(a);
  }
  return out;
}

}  // namespace ringlog::security
