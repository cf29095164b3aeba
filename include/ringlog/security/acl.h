#pragma once
// Kafka's ACL model (KIP-11, KIP-290 prefixed patterns) and the index the authorizer answers
// from (issue 30). The semantics are Kafka's StandardAuthorizer's:
//   - an ACL matches a request when its resource type is the request's, its pattern matches the
//     resource name (LITERAL: equal, or the name "*"; PREFIXED: the name starts with it), its
//     principal is the caller's or `User:*`, its host is the caller's address or `*`, and its
//     operation is the request's or ALL;
//   - ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE; ALLOW of ALTER_CONFIGS also
//     allows DESCRIBE_CONFIGS (DENY implies nothing beyond its own operation, except ALL);
//   - a matching DENY wins over any ALLOW; with no matching ACL the answer is DENIED, unless no
//     ACL at all names the resource (of any principal or operation) and
//     allow.everyone.if.no.acl.found is set; super.users are allowed everything.
// Enum values are Kafka's wire codes (ResourceType, PatternType, AclOperation,
// AclPermissionType in clients/src/main/java/org/apache/kafka/common/{resource,acl}).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ringlog/security/errc.h"
#include "ringlog/security/principal.h"

namespace ringlog::security {

enum class resource_type : int8_t {
  unknown = 0,
  any = 1,   // filters only
  topic = 2,
  group = 3,
  cluster = 4,
  transactional_id = 5,
  delegation_token = 6,
  user = 7,
};

enum class pattern_type : int8_t {
  unknown = 0,
  any = 1,     // filters only: every pattern type
  match = 2,   // filters only: the ACLs that would apply to the named resource
  literal = 3,
  prefixed = 4,
};

enum class acl_operation : int8_t {
  unknown = 0,
  any = 1,   // filters only
  all = 2,
  read = 3,
  write = 4,
  create = 5,
  delete_ = 6,   // Kafka's DELETE
  alter = 7,
  describe = 8,
  cluster_action = 9,
  describe_configs = 10,
  alter_configs = 11,
  idempotent_write = 12,
  create_tokens = 13,
  describe_tokens = 14,
};

enum class acl_permission_type : int8_t {
  unknown = 0,
  any = 1,   // filters only
  deny = 2,
  allow = 3,
};

/// Kafka's names (TOPIC, PREFIXED, DESCRIBE_CONFIGS, ALLOW, ...), as kafka-acls.sh prints them.
std::string_view to_string(resource_type);
std::string_view to_string(pattern_type);
std::string_view to_string(acl_operation);
std::string_view to_string(acl_permission_type);
/// Parses Kafka's names, case-insensitively ("Topic", "topic", "TOPIC"); nullopt when unknown.
std::optional<resource_type> parse_resource_type(std::string_view);
std::optional<pattern_type> parse_pattern_type(std::string_view);
std::optional<acl_operation> parse_acl_operation(std::string_view);
std::optional<acl_permission_type> parse_acl_permission_type(std::string_view);

/// The name of the single CLUSTER resource (Kafka's "kafka-cluster").
inline constexpr std::string_view cluster_resource_name = "kafka-cluster";
/// The wildcard of LITERAL resource names, of principals (`User:*`) and hosts.
inline constexpr std::string_view acl_wildcard = "*";
/// Longest resource name, principal or host an ACL may hold, bytes (a Kafka topic name is at
/// most 249; group and transactional ids are client strings: this bounds what the index keys).
inline constexpr size_t acl_text_bytes_max = 4096;

/// One ACL: Kafka's AclBinding (a resource pattern and an access control entry).
struct acl_binding {
  resource_type resource = resource_type::unknown;
  std::string resource_name;
  pattern_type pattern = pattern_type::literal;
  std::string principal;   // TYPE:NAME, or User:*
  std::string host = "*";  // an IP address as the peer's address prints, or *
  acl_operation operation = acl_operation::unknown;
  acl_permission_type permission = acl_permission_type::unknown;

  friend bool operator==(const acl_binding&, const acl_binding&) = default;
  friend auto operator<=>(const acl_binding&, const acl_binding&) = default;
};

/// Checks an ACL to be stored (CreateAcls, the HTTP and CLI create): concrete types only (no
/// ANY/MATCH/UNKNOWN), a principal of the form TYPE:NAME, a CLUSTER resource named
/// kafka-cluster, a non-empty name, texts within acl_text_bytes_max. Errors: invalid_acl, the
/// message naming the field and the value.
result<void> validate_acl(const acl_binding& acl);

/// Kafka's AclBindingFilter (DescribeAcls, DeleteAcls): nullopt/ANY fields match everything;
/// pattern MATCH with a name selects the ACLs that apply to that resource name.
struct acl_filter {
  resource_type resource = resource_type::any;
  std::optional<std::string> resource_name;
  pattern_type pattern = pattern_type::any;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  acl_operation operation = acl_operation::any;
  acl_permission_type permission = acl_permission_type::any;

  [[nodiscard]] bool matches(const acl_binding& acl) const;
};

/// Checks a filter (DescribeAcls, DeleteAcls): no UNKNOWN values; MATCH needs a resource name.
/// Errors: invalid_acl naming the field.
result<void> validate_acl_filter(const acl_filter& filter);

/// One authorization question: may `principal`, connected from `host`, do `operation` on the
/// resource `resource`/`name`?
struct acl_action {
  resource_type resource = resource_type::topic;
  std::string_view name;
  acl_operation operation = acl_operation::describe;
};

enum class authorization_result : int8_t { allowed, denied };

/// Which rule decided, for audit lines and tests (Kafka's MatchingRule).
struct authorization_decision {
  authorization_result result = authorization_result::denied;
  enum class rule : int8_t { super_user, matching_allow, matching_deny, no_acl_default, no_matching_acl } by =
      rule::no_matching_acl;
  /// The ACL that decided (matching_allow, matching_deny), else nullopt.
  std::optional<acl_binding> acl;
  [[nodiscard]] bool allowed() const { return result == authorization_result::allowed; }
};

struct authorizer_settings {
  /// super.users: principals allowed everything (`User:admin`), parsed from Kafka's
  /// semicolon-separated list.
  std::vector<std::string> super_users;
  /// allow.everyone.if.no.acl.found (Kafka's default false).
  bool allow_everyone_if_no_acl_found = false;
};

/// Parses super.users (`User:a;User:b`, spaces around entries ignored). Errors: invalid_config
/// naming super.users and the entry that is not TYPE:NAME.
result<std::vector<std::string>> parse_super_users(std::string_view text);

/// An immutable index of a set of ACLs: built once per metadata image (on apply, on the
/// controller shard) and then read without locks by every shard. A check costs hash lookups
/// of the name's LITERAL entry, of "*", and of each distinct PREFIXED length present for the
/// resource type, plus the ACLs found there.
class acl_index {
 public:
  acl_index() = default;
  explicit acl_index(std::vector<acl_binding> acls);

  [[nodiscard]] authorization_decision authorize(const kafka_principal& principal, std::string_view host,
                                                 const acl_action& action, const authorizer_settings& settings) const;
  /// Every stored ACL the filter selects, in a stable order (resource type, name, pattern, ...).
  [[nodiscard]] std::vector<acl_binding> select(const acl_filter& filter) const;
  [[nodiscard]] const std::vector<acl_binding>& all() const { return acls_; }
  [[nodiscard]] size_t size() const { return acls_.size(); }

 private:
  struct per_resource_type {
    std::unordered_map<std::string, std::vector<size_t>> literal;    // name (or "*") -> acls_
    std::unordered_map<std::string, std::vector<size_t>> prefixed;   // prefix -> acls_
    std::vector<size_t> prefix_lengths;                              // distinct, ascending
  };
  std::vector<acl_binding> acls_;   // sorted, no duplicates
  std::map<resource_type, per_resource_type> by_type_;
};

}  // namespace ringlog::security
