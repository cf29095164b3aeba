// The Kafka listener's authorization table (issue 30): for every served api, the operations on
// the resources it asks for, as Kafka's KafkaApis (core/src/main/scala/kafka/server/KafkaApis.scala)
// and AuthHelper check them, with Kafka's refusal codes.

#include "authorization.h"

#include <algorithm>
#include <array>

#include <spdlog/spdlog.h>

#include "handlers.h"
#include "ringlog/base/logfmt.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/security/audit.h"

namespace ringlog::kafka::detail {

namespace {

using security::acl_operation;
using security::resource_type;
namespace ec = error_code;

constexpr acl_check topic_read{resource_type::topic, acl_operation::read, ec::topic_authorization_failed, "every topic named"};
constexpr acl_check topic_write{resource_type::topic, acl_operation::write, ec::topic_authorization_failed, "every topic named"};
constexpr acl_check topic_describe{resource_type::topic, acl_operation::describe, ec::topic_authorization_failed,
                                   "every topic named (an all-topics list omits the others)"};
constexpr acl_check topic_create{resource_type::topic, acl_operation::create, ec::topic_authorization_failed,
                                 "every topic named, unless CREATE on the cluster"};
constexpr acl_check topic_delete{resource_type::topic, acl_operation::delete_, ec::topic_authorization_failed, "every topic named"};
// ControllerApis.deleteTopics: DELETE on the cluster deletes (and describes) every topic, else
// DESCRIBE and DELETE on each (broker::topic_deletion_rights_of, every door's rule).
constexpr acl_check cluster_delete{resource_type::cluster, acl_operation::delete_, ec::topic_authorization_failed,
                                   "the cluster, else DELETE on each topic"};
constexpr acl_check topic_delete_unless_cluster{resource_type::topic, acl_operation::delete_,
                                                ec::topic_authorization_failed,
                                                "every topic named, unless DELETE on the cluster (a missing topic "
                                                "the principal may DESCRIBE: UNKNOWN_TOPIC_OR_PARTITION)"};
constexpr acl_check topic_alter{resource_type::topic, acl_operation::alter, ec::topic_authorization_failed, "every topic named"};
constexpr acl_check topic_describe_configs{resource_type::topic, acl_operation::describe_configs,
                                           ec::topic_authorization_failed, "every TOPIC resource named"};
constexpr acl_check topic_alter_configs{resource_type::topic, acl_operation::alter_configs, ec::topic_authorization_failed,
                                        "every TOPIC resource named"};
constexpr acl_check group_read{resource_type::group, acl_operation::read, ec::group_authorization_failed, "the group"};
constexpr acl_check group_describe{resource_type::group, acl_operation::describe, ec::group_authorization_failed,
                                   "every group named (a list omits the others)"};
constexpr acl_check group_delete{resource_type::group, acl_operation::delete_, ec::group_authorization_failed, "every group named"};
constexpr acl_check txn_write{resource_type::transactional_id, acl_operation::write,
                              ec::transactional_id_authorization_failed, "the transactional id"};
constexpr acl_check txn_describe{resource_type::transactional_id, acl_operation::describe,
                                 ec::transactional_id_authorization_failed, "every transactional id (a list omits the others)"};
constexpr acl_check cluster_create{resource_type::cluster, acl_operation::create, ec::cluster_authorization_failed,
                                   "the cluster, else CREATE on each topic"};
constexpr acl_check cluster_describe{resource_type::cluster, acl_operation::describe, ec::cluster_authorization_failed, "the cluster"};
constexpr acl_check cluster_alter{resource_type::cluster, acl_operation::alter, ec::cluster_authorization_failed, "the cluster"};
constexpr acl_check cluster_describe_configs{resource_type::cluster, acl_operation::describe_configs,
                                             ec::cluster_authorization_failed, "every BROKER resource named"};
constexpr acl_check cluster_alter_configs{resource_type::cluster, acl_operation::alter_configs,
                                          ec::cluster_authorization_failed, "every BROKER resource named"};
constexpr acl_check cluster_describe_configs_quotas{resource_type::cluster, acl_operation::describe_configs,
                                                    ec::cluster_authorization_failed, "the cluster"};
constexpr acl_check cluster_alter_configs_quotas{resource_type::cluster, acl_operation::alter_configs,
                                                 ec::cluster_authorization_failed, "the cluster (every entry refused)"};
constexpr acl_check cluster_idempotent_write{resource_type::cluster, acl_operation::idempotent_write,
                                             ec::cluster_authorization_failed,
                                             "the cluster, unless WRITE on some topic (KIP-679), without a transactional id"};
constexpr acl_check group_describe_all{resource_type::group, acl_operation::describe, ec::group_authorization_failed,
                                       "each listed group, unless DESCRIBE on the cluster (never refused: filtered)"};

constexpr std::array<acl_check, 2> produce_checks{txn_write, topic_write};
constexpr std::array<acl_check, 1> fetch_checks{topic_read};
constexpr std::array<acl_check, 1> describe_topic_checks{topic_describe};
// KIP-320 opened OffsetForLeaderEpoch to consumers: CLUSTER_ACTION on the cluster (a follower's
// right, its first use) serves every topic, else DESCRIBE on each (KafkaApis, whatever ReplicaId).
constexpr acl_check topic_describe_unless_cluster_action{resource_type::topic, acl_operation::describe,
                                                         ec::topic_authorization_failed,
                                                         "every topic named, unless CLUSTER_ACTION on the cluster"};
constexpr std::array<acl_check, 1> offset_for_leader_epoch_checks{topic_describe_unless_cluster_action};
constexpr std::array<acl_check, 3> metadata_checks{topic_describe, cluster_create, topic_create};
constexpr std::array<acl_check, 2> offset_commit_checks{group_read, topic_read};
constexpr std::array<acl_check, 2> offset_fetch_checks{group_describe, topic_describe};
constexpr std::array<acl_check, 2> find_coordinator_checks{group_describe, txn_describe};
constexpr std::array<acl_check, 1> group_read_checks{group_read};
constexpr std::array<acl_check, 1> describe_groups_checks{group_describe};
constexpr std::array<acl_check, 2> list_groups_checks{cluster_describe, group_describe_all};
constexpr std::array<acl_check, 2> create_topics_checks{cluster_create, topic_create};
constexpr std::array<acl_check, 1> topic_delete_checks{topic_delete};
constexpr std::array<acl_check, 2> delete_topics_checks{cluster_delete, topic_delete_unless_cluster};
constexpr std::array<acl_check, 3> init_producer_id_checks{txn_write, cluster_idempotent_write, topic_write};
constexpr std::array<acl_check, 2> add_partitions_to_txn_checks{txn_write, topic_write};
constexpr std::array<acl_check, 2> add_offsets_to_txn_checks{txn_write, group_read};
constexpr std::array<acl_check, 1> end_txn_checks{txn_write};
constexpr std::array<acl_check, 3> txn_offset_commit_checks{txn_write, group_read, topic_read};
constexpr std::array<acl_check, 2> describe_configs_checks{topic_describe_configs, cluster_describe_configs};
constexpr std::array<acl_check, 2> alter_configs_checks{topic_alter_configs, cluster_alter_configs};
constexpr std::array<acl_check, 1> create_partitions_checks{topic_alter};
constexpr std::array<acl_check, 1> delete_groups_checks{group_delete};
constexpr std::array<acl_check, 1> cluster_alter_checks{cluster_alter};
constexpr std::array<acl_check, 1> cluster_describe_checks{cluster_describe};
constexpr std::array<acl_check, 2> offset_delete_checks{group_delete, topic_read};
constexpr std::array<acl_check, 1> describe_producers_checks{topic_read};
constexpr std::array<acl_check, 1> txn_describe_checks{txn_describe};
constexpr std::array<acl_check, 1> describe_client_quotas_checks{cluster_describe_configs_quotas};
constexpr std::array<acl_check, 1> alter_client_quotas_checks{cluster_alter_configs_quotas};

constexpr std::array<api_authorization, 44> table{{
    {0, "Produce", produce_checks},
    {1, "Fetch", fetch_checks},
    {2, "ListOffsets", describe_topic_checks},
    {3, "Metadata", metadata_checks},
    {8, "OffsetCommit", offset_commit_checks},
    {9, "OffsetFetch", offset_fetch_checks},
    {10, "FindCoordinator", find_coordinator_checks},
    {11, "JoinGroup", group_read_checks},
    {12, "Heartbeat", group_read_checks},
    {13, "LeaveGroup", group_read_checks},
    {14, "SyncGroup", group_read_checks},
    {15, "DescribeGroups", describe_groups_checks},
    {16, "ListGroups", list_groups_checks},
    {17, "SaslHandshake", {}},
    {18, "ApiVersions", {}},
    {19, "CreateTopics", create_topics_checks},
    {20, "DeleteTopics", delete_topics_checks},
    {21, "DeleteRecords", topic_delete_checks},
    {22, "InitProducerId", init_producer_id_checks},
    {23, "OffsetForLeaderEpoch", offset_for_leader_epoch_checks},
    {24, "AddPartitionsToTxn", add_partitions_to_txn_checks},
    {25, "AddOffsetsToTxn", add_offsets_to_txn_checks},
    {26, "EndTxn", end_txn_checks},
    {28, "TxnOffsetCommit", txn_offset_commit_checks},
    {29, "DescribeAcls", cluster_describe_checks},
    {30, "CreateAcls", cluster_alter_checks},
    {31, "DeleteAcls", cluster_alter_checks},
    {32, "DescribeConfigs", describe_configs_checks},
    {33, "AlterConfigs", alter_configs_checks},
    {36, "SaslAuthenticate", {}},
    {37, "CreatePartitions", create_partitions_checks},
    {42, "DeleteGroups", delete_groups_checks},
    {44, "IncrementalAlterConfigs", alter_configs_checks},
    {45, "AlterPartitionReassignments", cluster_alter_checks},
    {46, "ListPartitionReassignments", cluster_describe_checks},
    {47, "OffsetDelete", offset_delete_checks},
    {48, "DescribeClientQuotas", describe_client_quotas_checks},
    {49, "AlterClientQuotas", alter_client_quotas_checks},
    {50, "DescribeUserScramCredentials", cluster_describe_checks},
    {51, "AlterUserScramCredentials", cluster_alter_checks},
    {60, "DescribeCluster", cluster_describe_checks},
    {61, "DescribeProducers", describe_producers_checks},
    {65, "DescribeTransactions", txn_describe_checks},
    {66, "ListTransactions", txn_describe_checks},
}};

constexpr std::array<acl_operation, 8> topic_operations{acl_operation::read,   acl_operation::write,
                                                        acl_operation::create, acl_operation::delete_,
                                                        acl_operation::alter,  acl_operation::describe,
                                                        acl_operation::describe_configs, acl_operation::alter_configs};
constexpr std::array<acl_operation, 3> group_operations{acl_operation::read, acl_operation::describe, acl_operation::delete_};
constexpr std::array<acl_operation, 7> cluster_operations{
    acl_operation::create,        acl_operation::cluster_action,   acl_operation::describe_configs,
    acl_operation::alter_configs, acl_operation::idempotent_write, acl_operation::alter,
    acl_operation::describe};
constexpr std::array<acl_operation, 2> transactional_id_operations{acl_operation::describe, acl_operation::write};

}  // namespace

std::span<const api_authorization> api_authorizations() { return table; }

const api_authorization* find_api_authorization(int16_t api_key) {
  for (const auto& row : table) {
    if (row.api_key == api_key) return &row;
  }
  return nullptr;
}

std::span<const security::acl_operation> supported_operations(security::resource_type resource) {
  switch (resource) {
    case resource_type::topic: return topic_operations;
    case resource_type::group: return group_operations;
    case resource_type::cluster: return cluster_operations;
    case resource_type::transactional_id: return transactional_id_operations;
    default: return {};
  }
}

bool request_context::authorized_unlogged(security::resource_type resource, std::string_view name,
                                          security::acl_operation operation) const {
  return broker_api().security().authorize(principal, client_host, security::acl_action{resource, name, operation}).allowed();
}

bool request_context::authorized(security::resource_type resource, std::string_view name,
                                 security::acl_operation operation) const {
  if (authorized_unlogged(resource, name, operation)) return true;
  log_denial(security::acl_action{resource, name, operation});
  return false;
}

void request_context::log_denial(const security::acl_action& action) const {
  // Kafka's authorizer logs each denial (logIfDenied), a list's filtered names too; bounded here.
  static security::audit_denial_budget budget;
  const auto verdict = budget.admit(base::monotonic_ns() / 1'000'000'000);
  if (verdict.suppressed > 0) spdlog::info("{}", security::audit_denials_suppressed_line("kafka", verdict.suppressed));
  if (verdict.log) {
    const api_authorization* row = find_api_authorization(api_key);
    spdlog::info("{} client_id=\"{}\"",
                 security::audit_authorization_denied_line("kafka", principal, client_host, action,
                                                           row != nullptr ? row->api_name : std::string_view("?")),
                 security::audit_clipped(client_id));
  }
}

int32_t request_context::authorized_operations(security::resource_type resource, std::string_view name) const {
  uint32_t bits = 0;
  for (auto op : supported_operations(resource)) {
    // Not authorized(): asking what the principal may do is no refusal, and is not logged.
    if (authorized_unlogged(resource, name, op)) {
      bits |= uint32_t{1} << static_cast<uint32_t>(op);
    }
  }
  return static_cast<int32_t>(bits);
}

}  // namespace ringlog::kafka::detail
