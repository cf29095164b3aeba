#include <doctest/doctest.h>

#include "ringlog/security/acl.h"
#include "ringlog/security/acl_host.h"

using namespace ringlog::security;

namespace {

acl_binding acl(resource_type r, std::string name, pattern_type p, std::string principal, acl_operation op,
                acl_permission_type perm, std::string host = "*") {
  return acl_binding{r, std::move(name), p, std::move(principal), std::move(host), op, perm};
}

constexpr auto topic = resource_type::topic;
constexpr auto literal = pattern_type::literal;
constexpr auto prefixed = pattern_type::prefixed;
constexpr auto allow = acl_permission_type::allow;
constexpr auto deny = acl_permission_type::deny;

bool may(const acl_index& index, const char* user, acl_operation op, const char* name,
         const authorizer_settings& settings = {}, const char* host = "10.0.0.1", resource_type r = topic) {
  return index.authorize(kafka_principal::user(user), host, acl_action{r, name, op}, settings).allowed();
}

}  // namespace

TEST_CASE("Kafka's names print and parse, case-insensitively") {
  CHECK(to_string(acl_operation::describe_configs) == "DESCRIBE_CONFIGS");
  CHECK(to_string(acl_operation::delete_) == "DELETE");
  CHECK(parse_acl_operation("Idempotent_Write") == acl_operation::idempotent_write);
  CHECK(parse_resource_type("topic") == resource_type::topic);
  CHECK(parse_pattern_type("PREFIXED") == pattern_type::prefixed);
  CHECK(parse_acl_permission_type("deny") == acl_permission_type::deny);
  CHECK_FALSE(parse_acl_operation("FLY").has_value());
  // Kafka's wire codes.
  CHECK(static_cast<int>(resource_type::transactional_id) == 5);
  CHECK(static_cast<int>(acl_operation::idempotent_write) == 12);
  CHECK(static_cast<int>(pattern_type::prefixed) == 4);
  CHECK(static_cast<int>(acl_permission_type::allow) == 3);
}

TEST_CASE("a literal ACL allows its own operation to its principal only") {
  acl_index index({acl(topic, "orders", literal, "User:alice", acl_operation::read, allow)});
  CHECK(may(index, "alice", acl_operation::read, "orders"));
  CHECK_FALSE(may(index, "bob", acl_operation::read, "orders"));
  CHECK_FALSE(may(index, "alice", acl_operation::write, "orders"));
  CHECK_FALSE(may(index, "alice", acl_operation::read, "orders2"));
  CHECK_FALSE(may(index, "alice", acl_operation::read, "order"));
}

TEST_CASE("ALLOW of READ, WRITE, DELETE, ALTER implies DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; DENY implies nothing") {
  for (auto op : {acl_operation::read, acl_operation::write, acl_operation::delete_, acl_operation::alter}) {
    acl_index index({acl(topic, "t", literal, "User:a", op, allow)});
    CHECK(may(index, "a", acl_operation::describe, "t"));
    CHECK_FALSE(may(index, "a", acl_operation::describe_configs, "t"));
  }
  acl_index create({acl(topic, "t", literal, "User:a", acl_operation::create, allow)});
  CHECK_FALSE(may(create, "a", acl_operation::describe, "t"));
  acl_index configs({acl(topic, "t", literal, "User:a", acl_operation::alter_configs, allow)});
  CHECK(may(configs, "a", acl_operation::describe_configs, "t"));
  CHECK_FALSE(may(configs, "a", acl_operation::describe, "t"));
  // A DENY of READ does not deny DESCRIBE implied by an ALLOW of WRITE.
  acl_index mixed({acl(topic, "t", literal, "User:a", acl_operation::write, allow),
                   acl(topic, "t", literal, "User:a", acl_operation::read, deny)});
  CHECK(may(mixed, "a", acl_operation::describe, "t"));
  CHECK_FALSE(may(mixed, "a", acl_operation::read, "t"));
  CHECK(may(mixed, "a", acl_operation::write, "t"));
}

TEST_CASE("ALL matches every operation, on ALLOW and on DENY") {
  acl_index all({acl(topic, "t", literal, "User:a", acl_operation::all, allow)});
  for (auto op : {acl_operation::read, acl_operation::write, acl_operation::describe, acl_operation::alter_configs,
                  acl_operation::delete_}) {
    CHECK(may(all, "a", op, "t"));
  }
  acl_index denied({acl(topic, "t", literal, "User:a", acl_operation::all, allow),
                    acl(topic, "t", literal, "User:a", acl_operation::all, deny)});
  CHECK_FALSE(may(denied, "a", acl_operation::read, "t"));
}

TEST_CASE("DENY wins over ALLOW wherever it comes from: literal, wildcard or prefix") {
  acl_index index({acl(topic, "orders", literal, "User:a", acl_operation::read, allow),
                   acl(topic, "ord", prefixed, "User:*", acl_operation::read, deny)});
  const auto d = index.authorize(kafka_principal::user("a"), "10.0.0.1", {topic, "orders", acl_operation::read}, {});
  CHECK_FALSE(d.allowed());
  CHECK(d.by == authorization_decision::rule::matching_deny);
  REQUIRE(d.acl.has_value());
  CHECK(d.acl->resource_name == "ord");
  acl_index wildcard({acl(topic, "orders", literal, "User:a", acl_operation::read, allow),
                      acl(topic, "*", literal, "User:a", acl_operation::read, deny)});
  CHECK_FALSE(may(wildcard, "a", acl_operation::read, "orders"));
}

TEST_CASE("wildcards: resource '*', principal User:*, host '*' or the peer's address") {
  acl_index index({acl(topic, "*", literal, "User:*", acl_operation::read, allow, "10.0.0.1"),
                   acl(topic, "logs-", prefixed, "User:b", acl_operation::write, allow)});
  CHECK(may(index, "anyone", acl_operation::read, "whatever"));
  CHECK_FALSE(may(index, "anyone", acl_operation::read, "whatever", {}, "10.0.0.2"));
  CHECK(may(index, "b", acl_operation::write, "logs-app"));
  CHECK(may(index, "b", acl_operation::write, "logs-"));
  CHECK_FALSE(may(index, "b", acl_operation::write, "logs"));
  // A literal '*' is the wildcard for LITERAL only; a PREFIXED "*" is a prefix like any other.
  acl_index star_prefix({acl(topic, "*", prefixed, "User:b", acl_operation::write, allow)});
  CHECK_FALSE(may(star_prefix, "b", acl_operation::write, "logs"));
  CHECK(may(star_prefix, "b", acl_operation::write, "*logs"));
}

TEST_CASE("no ACL on the resource: denied, unless allow.everyone.if.no.acl.found; an ACL of another principal counts") {
  acl_index index({acl(topic, "secret", literal, "User:a", acl_operation::read, allow)});
  authorizer_settings open;
  open.allow_everyone_if_no_acl_found = true;
  CHECK_FALSE(may(index, "b", acl_operation::read, "public"));
  CHECK(may(index, "b", acl_operation::read, "public", open));
  // "secret" has an ACL (of alice): bob is denied even with the setting.
  CHECK_FALSE(may(index, "b", acl_operation::read, "secret", open));
  const auto d = index.authorize(kafka_principal::user("b"), "h", {topic, "secret", acl_operation::read}, open);
  CHECK(d.by == authorization_decision::rule::no_matching_acl);
  // Resource types are separate: a GROUP named "secret" has no ACLs.
  CHECK(may(index, "b", acl_operation::read, "secret", open, "h", resource_type::group));
}

TEST_CASE("super users are allowed everything, even against a DENY") {
  auto su = parse_super_users(" User:admin ; User:ops;");
  REQUIRE(su.ok());
  CHECK(su.value() == std::vector<std::string>{"User:admin", "User:ops"});
  authorizer_settings settings;
  settings.super_users = su.value();
  acl_index index({acl(topic, "*", literal, "User:*", acl_operation::all, deny)});
  const auto d = index.authorize(kafka_principal::user("admin"), "h", {topic, "t", acl_operation::delete_}, settings);
  CHECK(d.allowed());
  CHECK(d.by == authorization_decision::rule::super_user);
  CHECK_FALSE(may(index, "alice", acl_operation::read, "t", settings));
  auto bad = parse_super_users("User:admin;admin");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("super.users") != std::string::npos);
}

TEST_CASE("an ACL to store: concrete types, TYPE:NAME principals, kafka-cluster, bounded texts") {
  auto good = acl(topic, "t", literal, "User:a", acl_operation::read, allow);
  CHECK(validate_acl(good).ok());
  auto check_refused = [](acl_binding a, const char* words) {
    auto r = validate_acl(a);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::invalid_acl);
    CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
  };
  auto a = good;
  a.resource = resource_type::any;
  check_refused(a, "resource_type ANY");
  a = good;
  a.pattern = pattern_type::match;
  check_refused(a, "pattern_type MATCH");
  a = good;
  a.operation = acl_operation::any;
  check_refused(a, "operation ANY");
  a = good;
  a.permission = acl_permission_type::unknown;
  check_refused(a, "permission UNKNOWN");
  a = good;
  a.principal = "alice";
  check_refused(a, "TYPE:NAME");
  a = good;
  a.resource = resource_type::cluster;
  check_refused(a, "kafka-cluster");
  a.resource_name = "kafka-cluster";
  CHECK(validate_acl(a).ok());
  a = good;
  a.resource_name = std::string(acl_text_bytes_max + 1, 'x');
  check_refused(a, "above the limit");
  a = good;
  a.resource_name.clear();
  check_refused(a, "resource_name is empty");
}

TEST_CASE("filters select as Kafka's AclBindingFilter, MATCH picks the ACLs that apply to a name") {
  acl_index index({acl(topic, "orders", literal, "User:a", acl_operation::read, allow),
                   acl(topic, "*", literal, "User:b", acl_operation::write, allow),
                   acl(topic, "ord", prefixed, "User:c", acl_operation::read, deny),
                   acl(topic, "x", prefixed, "User:c", acl_operation::read, deny),
                   acl(resource_type::group, "orders", literal, "User:a", acl_operation::read, allow)});
  CHECK(index.select({}).size() == 5);
  acl_filter by_type;
  by_type.resource = topic;
  CHECK(index.select(by_type).size() == 4);
  acl_filter match;
  match.resource = topic;
  match.pattern = pattern_type::match;
  match.resource_name = "orders";
  CHECK(index.select(match).size() == 3);
  acl_filter literal_only = match;
  literal_only.pattern = literal;
  CHECK(index.select(literal_only).size() == 1);
  acl_filter by_principal;
  by_principal.principal = "User:c";
  by_principal.permission = deny;
  CHECK(index.select(by_principal).size() == 2);
  acl_filter bad;
  bad.pattern = pattern_type::match;
  CHECK_FALSE(validate_acl_filter(bad).ok());
  // Duplicates collapse: an ACL is a set member.
  acl_index twice({acl(topic, "t", literal, "User:a", acl_operation::read, allow),
                   acl(topic, "t", literal, "User:a", acl_operation::read, allow)});
  CHECK(twice.size() == 1);
}

TEST_CASE("ACL hosts compare in one form: IPv4-mapped as IPv4, IPv6 compressed, anything else refused") {
  CHECK(canonical_acl_host("*") == "*");
  CHECK(canonical_acl_host("127.0.0.1") == "127.0.0.1");
  CHECK(canonical_acl_host("::ffff:127.0.0.1") == "127.0.0.1");
  CHECK(canonical_acl_host("0:0:0:0:0:0:0:1") == "::1");
  CHECK(canonical_acl_host("FE80:0:0:0:0:0:0:1") == "fe80::1");
  CHECK_FALSE(canonical_acl_host("not an ip").has_value());
  CHECK_FALSE(canonical_acl_host(" 127.0.0.1").has_value());
  CHECK_FALSE(canonical_acl_host("").has_value());
  CHECK_FALSE(validate_acl(acl(topic, "t", literal, "User:a", acl_operation::read, deny, "localhost")).ok());
  CHECK(validate_acl(acl(topic, "t", literal, "User:a", acl_operation::read, deny, "::1")).ok());
  // A DENY written as Java prints an address matches the client the doors report as "::1".
  acl_index index({acl(topic, "t", literal, "User:a", acl_operation::read, allow),
                   acl(topic, "t", literal, "User:a", acl_operation::read, deny, "0:0:0:0:0:0:0:1")});
  CHECK_FALSE(may(index, "a", acl_operation::read, "t", {}, "::1"));
  CHECK(may(index, "a", acl_operation::read, "t", {}, "10.0.0.1"));
}
