// The audit lines of the Kafka door's admin writes (issue 29): one per resource an answer names,
// with that resource's result, written as the answer is sent (request_context::answer), so a
// failed CreateTopics says TOPIC_ALREADY_EXISTS and not "requested". The HTTP door writes one line
// per call with its path and HTTP status; the line format is security::audit_admin_write_line's.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "handlers.h"

#include <spdlog/spdlog.h>

#include "ringlog/security/acl.h"
#include "ringlog/security/audit.h"

namespace ringlog::kafka::detail {

namespace {

/// Kafka's names of the codes the handlers answer whose broker::errc has another name or none.
constexpr std::pair<int16_t, std::string_view> names_not_in_errc[] = {
    {-1, "UNKNOWN_SERVER_ERROR"},  {35, "UNSUPPORTED_VERSION"}, {55, "OPERATION_NOT_ATTEMPTED"},
    {68, "NON_EMPTY_GROUP"},       {79, "MEMBER_ID_REQUIRED"},
};

/// `text` cut at security::audit_field_bytes_max (a topic or user name is the client's choice).
std::string clipped(std::string_view text) {
  if (text.size() <= security::audit_field_bytes_max) return std::string(text);
  return std::string(text.substr(0, security::audit_field_bytes_max)) + "...(" +
         std::to_string(text.size() - security::audit_field_bytes_max) + " more bytes)";
}

/// One line: `operation` (Kafka's api name) on `resource` ("TOPIC:orders") answered `code`.
void audit_line(const request_context& ctx, std::string_view operation, std::string_view resource, int16_t code) {
  spdlog::info("{} client_id=\"{}\"",
               security::audit_admin_write_line("kafka", ctx.principal, ctx.client_host, operation, clipped(resource),
                                                kafka_error_name(code)),
               security::audit_clipped(ctx.client_id));
}

/// A config resource as Kafka's ConfigResource prints it: TOPIC:orders, BROKER:0, and the
/// cluster-wide broker defaults (BROKER with an empty name) as BROKER:<default>.
std::string config_resource(int8_t type, const std::string& name) {
  if (type == resource_type_topic) return "TOPIC:" + name;
  if (type == resource_type_broker) return "BROKER:" + (name.empty() ? std::string("<default>") : name);
  return "RESOURCE_TYPE_" + std::to_string(type) + ":" + name;
}

/// The subject `i` of the request (audit_subjects), or `fallback` when there is none.
std::string subject(const request_context& ctx, size_t i, std::string_view fallback) {
  if (ctx.audit_subjects && i < ctx.audit_subjects->size()) return (*ctx.audit_subjects)[i];
  return std::string(fallback);
}

template <typename Enum>
std::string_view name_of(int8_t code) {
  return security::to_string(static_cast<Enum>(code));
}

}  // namespace

std::string kafka_error_name(int16_t code) {
  if (code == 0) return "NONE";
  for (const auto& [known, name] : names_not_in_errc) {
    if (known == code) return std::string(name);
  }
  const broker::errc e = broker::errc_of_kafka_code(code);
  if (broker::kafka_error_code(e) != code) return "ERROR_CODE_" + std::to_string(code);
  std::string out(broker::to_string(e));
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::vector<std::string> audit_subjects_of(const protocol::create_acls_request_data& request) {
  std::vector<std::string> out;
  for (const auto& c : request.creations) {
    out.push_back("ACL " + std::string(name_of<security::resource_type>(c.resource_type)) + ":" + c.resource_name + " " +
                  std::string(name_of<security::pattern_type>(c.resource_pattern_type)) + " " + c.principal + " " +
                  std::string(name_of<security::acl_operation>(c.operation)) + " " +
                  std::string(name_of<security::acl_permission_type>(c.permission_type)) + " host=" + c.host);
  }
  return out;
}

std::vector<std::string> audit_subjects_of(const protocol::offset_delete_request_data& request) {
  return {request.group_id};
}

void audit_answer(const request_context& ctx, const protocol::create_topics_response_data& answer) {
  for (const auto& t : answer.topics) audit_line(ctx, "CreateTopics", "TOPIC:" + t.name, t.error_code);
}

void audit_answer(const request_context& ctx, const protocol::delete_topics_response_data& answer) {
  for (const auto& t : answer.responses) {
    audit_line(ctx, "DeleteTopics", "TOPIC:" + t.name.value_or("<by topic id>"), t.error_code);
  }
}

void audit_answer(const request_context& ctx, const protocol::alter_configs_response_data& answer) {
  for (const auto& r : answer.responses) {
    audit_line(ctx, "AlterConfigs", config_resource(r.resource_type, r.resource_name), r.error_code);
  }
}

void audit_answer(const request_context& ctx, const protocol::incremental_alter_configs_response_data& answer) {
  for (const auto& r : answer.responses) {
    audit_line(ctx, "IncrementalAlterConfigs", config_resource(r.resource_type, r.resource_name), r.error_code);
  }
}

void audit_answer(const request_context& ctx, const protocol::create_partitions_response_data& answer) {
  for (const auto& t : answer.results) audit_line(ctx, "CreatePartitions", "TOPIC:" + t.name, t.error_code);
}

void audit_answer(const request_context& ctx, const protocol::delete_groups_response_data& answer) {
  for (const auto& g : answer.results) audit_line(ctx, "DeleteGroups", "GROUP:" + g.group_id, g.error_code);
}

void audit_answer(const request_context& ctx, const protocol::create_acls_response_data& answer) {
  for (size_t i = 0; i < answer.results.size(); ++i) {
    audit_line(ctx, "CreateAcls", subject(ctx, i, "ACL #" + std::to_string(i)), answer.results[i].error_code);
  }
}

void audit_answer(const request_context& ctx, const protocol::delete_acls_response_data& answer) {
  // One line per ACL deleted, and one per filter that failed (it deleted none).
  for (size_t i = 0; i < answer.filter_results.size(); ++i) {
    const auto& f = answer.filter_results[i];
    if (f.error_code != 0) audit_line(ctx, "DeleteAcls", "ACL filter #" + std::to_string(i), f.error_code);
    for (const auto& a : f.matching_acls) {
      audit_line(ctx, "DeleteAcls",
                 "ACL " + std::string(name_of<security::resource_type>(a.resource_type)) + ":" + a.resource_name + " " +
                     std::string(name_of<security::pattern_type>(a.pattern_type)) + " " + a.principal + " " +
                     std::string(name_of<security::acl_operation>(a.operation)) + " " +
                     std::string(name_of<security::acl_permission_type>(a.permission_type)) + " host=" + a.host,
                 a.error_code);
    }
  }
}

void audit_answer(const request_context& ctx, const protocol::alter_partition_reassignments_response_data& answer) {
  if (answer.error_code != 0) audit_line(ctx, "AlterPartitionReassignments", "CLUSTER:kafka-cluster", answer.error_code);
  for (const auto& t : answer.responses) {
    for (const auto& p : t.partitions) {
      audit_line(ctx, "AlterPartitionReassignments", "TOPIC:" + t.name + "-" + std::to_string(p.partition_index),
                 p.error_code);
    }
  }
}

void audit_answer(const request_context& ctx, const protocol::delete_records_response_data& answer) {
  for (const auto& t : answer.topics) {
    for (const auto& p : t.partitions) {
      audit_line(ctx, "DeleteRecords", "TOPIC:" + t.name + "-" + std::to_string(p.partition_index), p.error_code);
    }
  }
}

void audit_answer(const request_context& ctx, const protocol::offset_delete_response_data& answer) {
  const std::string group = "GROUP:" + subject(ctx, 0, "?");
  if (answer.error_code != 0 || answer.topics.empty()) audit_line(ctx, "OffsetDelete", group, answer.error_code);
  for (const auto& t : answer.topics) {
    for (const auto& p : t.partitions) {
      audit_line(ctx, "OffsetDelete", group + " TOPIC:" + t.name + "-" + std::to_string(p.partition_index), p.error_code);
    }
  }
}

void audit_answer(const request_context& ctx, const protocol::alter_client_quotas_response_data& answer) {
  for (const auto& e : answer.entries) {
    std::string entity = "CLIENT_QUOTA";
    for (const auto& part : e.entity) entity += " " + part.entity_type + "=" + part.entity_name.value_or("<default>");
    audit_line(ctx, "AlterClientQuotas", entity, e.error_code);
  }
}

void audit_answer(const request_context& ctx, const protocol::alter_user_scram_credentials_response_data& answer) {
  for (const auto& u : answer.results) audit_line(ctx, "AlterUserScramCredentials", "USER:" + u.user, u.error_code);
}

}  // namespace ringlog::kafka::detail
