// Kafka's ACL APIs (KIP-11, KIP-140): DescribeAcls (29), CreateAcls (30), DeleteAcls (31), onto
// the broker's ACL calls. Codes out of Kafka's enums read as UNKNOWN and are refused by the
// broker's checks (INVALID_REQUEST naming the field).

#include "handlers.h"

namespace ringlog::kafka::detail {

namespace {

template <typename Enum>
Enum enum_of(int8_t code, int8_t last) {
  return code >= 0 && code <= last ? static_cast<Enum>(code) : Enum{};
}

security::acl_filter filter_of(int8_t resource_type, const std::optional<std::string>& name, int8_t pattern_type,
                               const std::optional<std::string>& principal, const std::optional<std::string>& host,
                               int8_t operation, int8_t permission) {
  security::acl_filter f;
  f.resource = enum_of<security::resource_type>(resource_type, 7);
  f.resource_name = name;
  f.pattern = enum_of<security::pattern_type>(pattern_type, 4);
  f.principal = principal;
  f.host = host;
  f.operation = enum_of<security::acl_operation>(operation, 14);
  f.permission = enum_of<security::acl_permission_type>(permission, 3);
  return f;
}

}  // namespace

void handle_describe_acls(const request_context& ctx, protocol::describe_acls_request_data request) {
  using response = protocol::describe_acls_response_data;
  response out;
  // DESCRIBE on the cluster (KafkaApis/AclApis.handleDescribeAcls).
  if (!ctx.authorized_cluster(security::acl_operation::describe)) {
    out.error_code = error_code::cluster_authorization_failed;
    out.error_message = "DESCRIBE on the cluster is not allowed for " + ctx.principal.to_string();
    return ctx.answer(out);
  }
  auto found = ctx.broker_api().security().describe_acls(filter_of(request.resource_type_filter, request.resource_name_filter,
                                                        request.pattern_type_filter, request.principal_filter,
                                                        request.host_filter, request.operation, request.permission_type));
  if (!found.ok()) {
    out.error_code = code_of(found.error());
    out.error_message = found.error().message;
    return ctx.answer(out);
  }
  // Grouped by resource pattern, as Kafka answers (the ACLs come sorted by it).
  for (const auto& acl : found.value()) {
    if (out.resources.empty() || out.resources.back().resource_type != static_cast<int8_t>(acl.resource) ||
        out.resources.back().resource_name != acl.resource_name ||
        out.resources.back().pattern_type != static_cast<int8_t>(acl.pattern)) {
      response::describe_acls_resource resource;
      resource.resource_type = static_cast<int8_t>(acl.resource);
      resource.resource_name = acl.resource_name;
      resource.pattern_type = static_cast<int8_t>(acl.pattern);
      out.resources.push_back(std::move(resource));
    }
    response::acl_description d;
    d.principal = acl.principal;
    d.host = acl.host;
    d.operation = static_cast<int8_t>(acl.operation);
    d.permission_type = static_cast<int8_t>(acl.permission);
    out.resources.back().acls.push_back(std::move(d));
  }
  ctx.answer(out);
}

void handle_create_acls(const request_context& ctx, protocol::create_acls_request_data request) {
  std::vector<security::acl_binding> acls;
  for (const auto& c : request.creations) {
    acls.push_back({enum_of<security::resource_type>(c.resource_type, 7), c.resource_name,
                    enum_of<security::pattern_type>(c.resource_pattern_type, 4), c.principal, c.host,
                    enum_of<security::acl_operation>(c.operation, 14),
                    enum_of<security::acl_permission_type>(c.permission_type, 3)});
  }
  const size_t count = acls.size();
  // ALTER on the cluster (AclApis.handleCreateAcls): every creation refused.
  if (!ctx.authorized_cluster(security::acl_operation::alter)) {
    protocol::create_acls_response_data out;
    out.results.resize(count);
    for (auto& one : out.results) {
      one.error_code = error_code::cluster_authorization_failed;
      one.error_message = "ALTER on the cluster is not allowed for " + ctx.principal.to_string();
    }
    return ctx.answer(out);
  }
  ctx.broker_api().security().create_acls(std::move(acls), [ctx, count](broker::result<std::vector<std::optional<broker::error>>> r) {
    using response = protocol::create_acls_response_data;
    response out;
    for (size_t i = 0; i < count; ++i) {
      response::acl_creation_result one;
      const broker::error* failed = !r.ok() ? &r.error() : r.value().at(i) ? &*r.value().at(i) : nullptr;
      if (failed != nullptr) {
        one.error_code = code_of(*failed);
        one.error_message = failed->message;
      }
      out.results.push_back(std::move(one));
    }
    ctx.answer(out);
  });
}

void handle_delete_acls(const request_context& ctx, protocol::delete_acls_request_data request) {
  std::vector<security::acl_filter> filters;
  for (const auto& f : request.filters) {
    filters.push_back(filter_of(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                                f.principal_filter, f.host_filter, f.operation, f.permission_type));
  }
  const size_t count = filters.size();
  // ALTER on the cluster (AclApis.handleDeleteAcls): every filter refused, nothing deleted.
  if (!ctx.authorized_cluster(security::acl_operation::alter)) {
    protocol::delete_acls_response_data out;
    out.filter_results.resize(count);
    for (auto& one : out.filter_results) {
      one.error_code = error_code::cluster_authorization_failed;
      one.error_message = "ALTER on the cluster is not allowed for " + ctx.principal.to_string();
    }
    return ctx.answer(out);
  }
  ctx.broker_api().security().delete_acls(
      std::move(filters), [ctx, count](broker::result<std::vector<broker::result<std::vector<security::acl_binding>>>> r) {
        using response = protocol::delete_acls_response_data;
        response out;
        for (size_t i = 0; i < count; ++i) {
          response::delete_acls_filter_result one;
          if (!r.ok() || !r.value().at(i).ok()) {
            const broker::error& e = !r.ok() ? r.error() : r.value().at(i).error();
            one.error_code = code_of(e);
            one.error_message = e.message;
            out.filter_results.push_back(std::move(one));
            continue;
          }
          for (const auto& acl : r.value().at(i).value()) {
            response::delete_acls_matching_acl m;
            m.resource_type = static_cast<int8_t>(acl.resource);
            m.resource_name = acl.resource_name;
            m.pattern_type = static_cast<int8_t>(acl.pattern);
            m.principal = acl.principal;
            m.host = acl.host;
            m.operation = static_cast<int8_t>(acl.operation);
            m.permission_type = static_cast<int8_t>(acl.permission);
            one.matching_acls.push_back(std::move(m));
          }
          out.filter_results.push_back(std::move(one));
        }
        ctx.answer(out);
      });
}

}  // namespace ringlog::kafka::detail
