// The Kafka listener's authorization table (src/kafka/authorization.cc, issue 30): every api the
// listener serves has a row, and only the SASL and ApiVersions requests check nothing.

#include <doctest/doctest.h>

#include <set>

#include "authorization.h"
#include "ringlog/kafka/request_handler.h"

using namespace ringlog;

TEST_CASE("every served api has a row in the authorization table, and every row an api") {
  std::set<int16_t> served;
  for (const auto& api : kafka::handled_apis()) served.insert(api.api_key);
  std::set<int16_t> rows;
  for (const auto& row : kafka::detail::api_authorizations()) {
    CAPTURE(row.api_name);
    CHECK(served.contains(row.api_key));
    CHECK(rows.insert(row.api_key).second);
    const bool unchecked = row.api_key == 17 || row.api_key == 18 || row.api_key == 36;   // SASL, ApiVersions
    CHECK(row.checks.empty() == unchecked);
    for (const auto& check : row.checks) {
      CHECK((check.refusal == 29 || check.refusal == 30 || check.refusal == 31 || check.refusal == 53));
      CHECK(!check.each.empty());
    }
  }
  CHECK(rows == served);
}

TEST_CASE("authorized_operations: the operations each resource type supports (Kafka's AclEntry)") {
  using security::acl_operation;
  using security::resource_type;
  CHECK(kafka::detail::supported_operations(resource_type::topic).size() == 8);
  CHECK(kafka::detail::supported_operations(resource_type::group).size() == 3);
  CHECK(kafka::detail::supported_operations(resource_type::cluster).size() == 7);
  CHECK(kafka::detail::supported_operations(resource_type::user).empty());
}
