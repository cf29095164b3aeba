#pragma once
// Private to the kafka module: what each Kafka api asks the authorizer (issue 30), as Kafka's
// KafkaApis and AuthHelper do it (core/src/main/scala/kafka/server/KafkaApis.scala). The table
// is the one list of the listener's checks: every api of handled_apis() has a row (a unit test
// walks both), and each handler asks request_context::authorized for the rows' checks.

#include <cstdint>
#include <span>
#include <string_view>

#include "ringlog/security/acl.h"

namespace ringlog::kafka::detail {

/// One check an api makes: `operation` on a resource of `resource` type. `refusal` is the Kafka
/// error code of a refusal (29 TOPIC_, 30 GROUP_, 31 CLUSTER_, 53 TRANSACTIONAL_ID_
/// AUTHORIZATION_FAILED); `each` names what the check is made for ("every topic named",
/// "the group", ...; Kafka's order is the row's order).
struct acl_check {
  security::resource_type resource = security::resource_type::topic;
  security::acl_operation operation = security::acl_operation::describe;
  int16_t refusal = 0;
  std::string_view each;
};

/// An api's checks (none: ApiVersions, SaslHandshake, SaslAuthenticate, served before login).
struct api_authorization {
  int16_t api_key = 0;
  std::string_view api_name;
  std::span<const acl_check> checks;
};

/// Every row, sorted by api key.
std::span<const api_authorization> api_authorizations();
/// The row of `api_key`, or nullptr.
const api_authorization* find_api_authorization(int16_t api_key);

/// Kafka's authorized_operations bitfield (Utils.to32BitField): bit `code` set for each
/// AclOperation code the principal may do on the resource, among the operations the resource
/// type supports (Kafka's AclEntry.supportedOperations).
std::span<const security::acl_operation> supported_operations(security::resource_type resource);

}  // namespace ringlog::kafka::detail
