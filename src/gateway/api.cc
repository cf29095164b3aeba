#include "api_routes.h"

#include <array>
#include <limits>

#include "metrics.h"
#include "ringlog/base/assert.h"

namespace ringlog::gateway::routes {

json related(const std::string& url) { return json{{"related", url}}; }

json list_json(const std::string& kind, const std::string& self, json data) {
  return json{{"kind", kind}, {"metadata", {{"self", self}, {"next", nullptr}}}, {"data", std::move(data)}};
}

const broker::partition_description* find_partition(const broker::topic_description& t, int32_t p) {
  for (const auto& d : t.partitions) {
    if (d.partition.value() == p) return &d;
  }
  return nullptr;
}

std::string error_json(const api_error& e) { return error_body(e.error_code, e.message); }

void keep_authorized(api::call& call, security::resource_type resource, security::acl_operation operation,
                     std::vector<std::string>& names) {
  std::erase_if(names, [&](const std::string& name) { return !call.authorized(resource, name, operation); });
}

void keep_authorized(api::call& call, security::acl_operation operation, std::vector<broker::topic_description>& topics) {
  std::erase_if(topics, [&](const broker::topic_description& t) {
    return !call.authorized(security::resource_type::topic, t.name, operation);
  });
}

bool may_list_group(api::call& call, const std::string& group_id) {
  return call.authorized(security::resource_type::cluster, security::cluster_resource_name,
                         security::acl_operation::describe) ||
         call.authorized(security::resource_type::group, group_id, security::acl_operation::describe);
}

bool require_topics(api::call& call, const std::vector<model::topic_partition>& partitions,
                    security::acl_operation operation) {
  return std::all_of(partitions.begin(), partitions.end(), [&](const model::topic_partition& tp) {
    return call.require(security::resource_type::topic, tp.topic, operation);
  });
}

json authorized_operations(api::call& call, security::resource_type resource, std::string_view name) {
  using op = security::acl_operation;
  static const std::vector<op> topic_ops = {op::read, op::write, op::create, op::describe, op::delete_,
                                            op::alter, op::describe_configs, op::alter_configs};
  static const std::vector<op> cluster_ops = {op::create, op::cluster_action, op::describe_configs, op::alter_configs,
                                              op::idempotent_write, op::alter, op::describe};
  static const std::vector<op> group_ops = {op::read, op::describe, op::delete_};
  static const std::vector<op> transactional_id_ops = {op::describe, op::write};
  const auto& ops = resource == security::resource_type::topic     ? topic_ops
                    : resource == security::resource_type::cluster ? cluster_ops
                    : resource == security::resource_type::group   ? group_ops
                                                                   : transactional_id_ops;
  json out = json::array();
  for (op o : ops) {
    if (call.authorized(resource, name, o)) out.push_back(std::string(security::to_string(o)));
  }
  return out;
}

/// Describes every topic (internal ones when asked), then calls `done` on the connection thread.
void describe_all(const call_ptr& c, bool include_internal,
                  std::function<void(api::call&, std::vector<broker::topic_description>)> done) {
  auto names = c->broker().admin().list_topics(include_internal);
  struct gather {
    std::vector<broker::topic_description> topics;
    size_t remaining = 0;
    std::function<void(api::call&, std::vector<broker::topic_description>)> done;
  };
  auto g = std::make_shared<gather>();
  g->remaining = names.size();
  g->done = std::move(done);
  if (names.empty()) {
    g->done(*c, {});
    return;
  }
  for (const auto& name : names) {
    c->broker().admin().describe_topic(name, [c, g](broker::result<broker::topic_description> r) {
      c->later([g, r = std::move(r)](api::call& call) mutable {
        if (r.ok()) g->topics.push_back(std::move(r).value());   // a topic deleted meanwhile is skipped
        if (--g->remaining == 0) {
          std::sort(g->topics.begin(), g->topics.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
          g->done(call, std::move(g->topics));
        }
      });
    });
  }
}

void fail_partition_not_found(api::call& call, const broker::topic_description& t, int32_t p) {
  call.fail(404, ec::partition_not_found, "partition " + std::to_string(p) + " of topic \"" + t.name +
                                              "\" not found (it has " + std::to_string(t.partitions.size()) +
                                              " partitions)");
}

void with_topic(const call_ptr& c, const std::string& key, error_scope scope,
                std::function<void(api::call&, broker::topic_description)> done) {
  std::string topic = c->params[key];
  c->broker().admin().describe_topic(topic, [c, topic, scope, done = std::move(done)](broker::result<broker::topic_description> r) {
    c->later([r = std::move(r), topic, scope, done](api::call& call) mutable {
      if (!r.ok()) return call.fail_broker(r.error(), scope, topic);
      done(call, std::move(r).value());
    });
  });
}

void with_offset_bounds(const call_ptr& c, const model::topic_partition& tp,
                        std::function<void(api::call&, int64_t earliest, int64_t latest)> done) {
  broker::list_offsets_request earliest{tp, broker::offset_spec::earliest, 0};
  c->broker().list_offsets(std::move(earliest), [c, tp, done = std::move(done)](
                                                    broker::result<broker::list_offsets_response> first) mutable {
    c->later([first = std::move(first), tp, done = std::move(done)](api::call& call) mutable {
      if (!first.ok()) return call.fail_broker(first.error(), error_scope::partition, tp.topic);
      int64_t beginning = first->found_offset ? first->found_offset->value() : 0;
      broker::list_offsets_request latest{tp, broker::offset_spec::latest, 0};
      call.broker().list_offsets(std::move(latest), [c = call.shared_from_this(), tp, beginning, done = std::move(done)](
                                                        broker::result<broker::list_offsets_response> last) mutable {
        c->later([last = std::move(last), tp, beginning, done = std::move(done)](api::call& call2) {
          if (!last.ok()) return call2.fail_broker(last.error(), error_scope::partition, tp.topic);
          done(call2, beginning, last->found_offset ? last->found_offset->value() : beginning);
        });
      });
    });
  });
}

void health(const call_ptr& c) {
  if (c->self->stopping_flag()) {
    return c->respond_json(503, {{"status", "stopping"}});
  }
  // Issue 33: a decommissioned broker still running holds nothing and may not register again: a
  // load balancer should stop sending it clients.
  const int32_t self = c->broker().config().node_id;
  for (const auto& d : c->broker().admin().list_decommissions()) {
    if (d.broker_id == self && d.status == "SUCCESS") {
      return c->respond_json(503, {{"status", "decommissioned"},
                                   {"message", "broker " + std::to_string(self) +
                                                   " was decommissioned: it holds no partitions and may not register "
                                                   "again; stop it"}});
    }
  }
  c->respond_json(200, {{"status", "ok"}});
}

void get_metrics(const call_ptr& c) {
  auto type = c->accept(metrics_offers);
  if (!type) return;
  describe_all(c, false, [](api::call& call, std::vector<broker::topic_description> topics) {
    http_response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    const auto& latency = call.self->options().fsync_latency;
    r.body = call.self->metrics_registry().render(topics, latency ? latency() : io::latency_histogram::snapshot{},
                                                  call.broker().cleaner_step_time());
    r.body += render_client_quota_metrics(call.broker().security().client_quota_usages());   // issue 31
    r.body += render_replication_throttle_metrics(call.broker().replication_throttling());   // issue 33
    r.body += render_autobalancer_metrics(call.broker().autobalancer_moves());               // issue 33
    r.body += render_broker_partition_metrics(topics, call.broker().config().node_id);
    r.body += render_controller_metrics(call.broker().config().node_id, call.broker().admin().controller_id());
    if (const auto& extra = call.self->options().extra_metrics) r.body += extra();
    call.respond(std::move(r));
  });
}

namespace {

struct route {
  const char* method;
  const char* pattern;
  handler fn;
  /// What the route needs (issue 30), Kafka's operations on resources: parse_route_needs'
  /// grammar, e.g. "READ GROUP:{group}; READ TOPIC:body" (both), "DELETE TOPIC:{topic_name} |
  /// DELETE CLUSTER:kafka-cluster" (either: Kafka's grant on the cluster for every topic or group,
  /// as its DeleteTopics, CreateTopics and ListGroups take it). Every route declares it, "none"
  /// for the open routes and the caller's own session (tests/integration/test_acls_http.py walks
  /// the table and the OpenAPI's x-acl of each operation, which must say the same).
  const char* needs;
};

/// The parsed `needs` of every route, in table order; a malformed text stops the server at
/// its first request (a table edit, caught by every test).
const std::vector<std::vector<route_requirement>>& route_needs();

const std::vector<route>& route_table();   // every route: the two arrays below, in order

/// The routes, matched in this order ("-" paths before the {name} ones of the same shape).
const route core_routes[] = {
    {"GET", "/v1/health", health, "none"}, {"GET", "/v1/whoami", auth_whoami, "none"},   // whoami, login, logout, tokens: issue 29
    {"POST", "/v1/login", auth_login, "none"}, {"POST", "/v1/logout", auth_logout, "none"}, {"POST", "/v1/tokens", auth_tokens, "none"},
    {"GET", "/metrics", get_metrics, "DESCRIBE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters", v3_list_clusters, "none"}, {"GET", "/v3/clusters/{cluster_id}", v3_get_cluster, "none"},
    {"GET", "/v3/clusters/{cluster_id}/acls", v3_list_acls, "DESCRIBE CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/acls", v3_create_acl, "ALTER CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/acls:batch", v3_create_acls_batch, "ALTER CLUSTER:kafka-cluster"},
    {"DELETE", "/v3/clusters/{cluster_id}/acls", v3_delete_acls, "ALTER CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/client-quotas", v3_list_client_quotas, "DESCRIBE_CONFIGS CLUSTER:kafka-cluster"},
    {"PUT", "/v3/clusters/{cluster_id}/client-quotas", v3_alter_client_quotas, "ALTER_CONFIGS CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/brokers", v3_list_brokers, "none"},
    {"GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}", v3_get_broker, "none"},
    {"GET", "/v3/clusters/{cluster_id}/quorum", v3_get_quorum, "DESCRIBE CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/elect-leaders", v3_elect_leaders, "ALTER CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}/partition-replicas", v3_list_broker_replicas, "DESCRIBE CLUSTER:kafka-cluster"},
    // "-" means every broker (Confluent's paths), before the {broker_id} routes.
    {"GET", "/v3/clusters/{cluster_id}/brokers/-/configs", v3_list_all_broker_configs, "DESCRIBE_CONFIGS CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}/configs", v3_list_broker_configs, "DESCRIBE_CONFIGS CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/brokers/{broker_id}/configs:alter", v3_alter_broker_configs, "ALTER_CONFIGS CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}/configs/{name}", v3_get_broker_config, "DESCRIBE_CONFIGS CLUSTER:kafka-cluster"},
    {"PUT", "/v3/clusters/{cluster_id}/brokers/{broker_id}/configs/{name}", v3_set_broker_config, "ALTER_CONFIGS CLUSTER:kafka-cluster"},
    {"DELETE", "/v3/clusters/{cluster_id}/brokers/{broker_id}/configs/{name}", v3_reset_broker_config, "ALTER_CONFIGS CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/users", v3_list_users, "DESCRIBE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/users/{name}", v3_get_user, "DESCRIBE CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/users/{name}", v3_set_user, "ALTER CLUSTER:kafka-cluster"},
    {"DELETE", "/v3/clusters/{cluster_id}/users/{name}", v3_delete_user, "ALTER CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/broker-configs", v3_list_cluster_broker_configs, "DESCRIBE_CONFIGS CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/broker-configs:alter", v3_alter_cluster_broker_configs, "ALTER_CONFIGS CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/broker-configs/{name}", v3_get_cluster_broker_config, "DESCRIBE_CONFIGS CLUSTER:kafka-cluster"},
    {"PUT", "/v3/clusters/{cluster_id}/broker-configs/{name}", v3_set_cluster_broker_config, "ALTER_CONFIGS CLUSTER:kafka-cluster"},
    {"DELETE", "/v3/clusters/{cluster_id}/broker-configs/{name}", v3_reset_cluster_broker_config, "ALTER_CONFIGS CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/topics", v3_list_topics, "DESCRIBE TOPIC:listed"},
    {"POST", "/v3/clusters/{cluster_id}/topics", v3_create_topic, "CREATE TOPIC:body | CREATE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_get_topic, "DESCRIBE TOPIC:{topic_name}"},
    {"PATCH", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_patch_topic, "ALTER TOPIC:{topic_name}"},
    {"DELETE", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_delete_topic, "DELETE TOPIC:{topic_name} | DELETE CLUSTER:kafka-cluster"},
    // Before the {topic_name} routes: "-" means every topic, as Confluent's paths (a topic "-" keeps its other routes).
    {"GET", "/v3/clusters/{cluster_id}/topics/-/configs", v3_list_all_topic_configs, "DESCRIBE_CONFIGS TOPIC:listed"},
    {"GET", "/v3/clusters/{cluster_id}/topics/-/partitions/-/reassignment", v3_list_reassignments, "DESCRIBE CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/topics/-/partitions/-/reassignment:alter", v3_alter_reassignments, "ALTER CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/topics/-/configs:alter", v3_alter_all_topic_configs, "ALTER_CONFIGS TOPIC:body"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs", v3_list_configs, "DESCRIBE_CONFIGS TOPIC:{topic_name}"},
    {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs:alter", v3_alter_configs, "ALTER_CONFIGS TOPIC:{topic_name}"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", v3_get_config, "DESCRIBE_CONFIGS TOPIC:{topic_name}"},
    {"PUT", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", v3_set_config, "ALTER_CONFIGS TOPIC:{topic_name}"},
    {"DELETE", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", v3_reset_config, "ALTER_CONFIGS TOPIC:{topic_name}"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions", v3_list_partitions, "DESCRIBE TOPIC:{topic_name}"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/-/reassignment", v3_list_topic_reassignments, "DESCRIBE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}", v3_get_partition, "DESCRIBE TOPIC:{topic_name}"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/reassignment", v3_get_reassignment, "DESCRIBE CLUSTER:kafka-cluster"},
    {"PATCH", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/reassignment", v3_patch_reassignment, "ALTER CLUSTER:kafka-cluster"},
    {"DELETE", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/reassignment", v3_cancel_reassignment, "ALTER CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offset", v3_get_partition_offset, "DESCRIBE TOPIC:{topic_name}"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas", v3_list_replicas, "DESCRIBE TOPIC:{topic_name}"},
    {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas/{broker_id}", v3_get_replica, "DESCRIBE TOPIC:{topic_name}"},
    {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/records", v3_produce, "WRITE TOPIC:{topic_name}; WRITE TRANSACTIONAL_ID:body"},
    {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch", v3_produce_batch, "WRITE TOPIC:{topic_name}; WRITE TRANSACTIONAL_ID:body"},
    {"POST", "/v3/clusters/{cluster_id}/producers", v3_create_producer, "IDEMPOTENT_WRITE CLUSTER:body"},
    {"GET", "/v3/clusters/{cluster_id}/delayed-records", v3_delayed_records, "DESCRIBE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/transactions", v3_list_transactions, "DESCRIBE TRANSACTIONAL_ID:listed"},
    {"POST", "/v3/clusters/{cluster_id}/transactions", v3_begin_transaction, "WRITE TRANSACTIONAL_ID:body"},
    {"GET", "/v3/clusters/{cluster_id}/transactions/{transactional_id}", v3_get_transaction, "DESCRIBE TRANSACTIONAL_ID:{transactional_id}"},
    {"POST", "/v3/clusters/{cluster_id}/transactions/{transactional_id}/partitions", v3_add_transaction_partitions, "WRITE TRANSACTIONAL_ID:{transactional_id}; WRITE TOPIC:body"},
    {"POST", "/v3/clusters/{cluster_id}/transactions/{transactional_id}/offsets", v3_add_transaction_offsets, "WRITE TRANSACTIONAL_ID:{transactional_id}; READ GROUP:body; READ TOPIC:body"},
    {"POST", "/v3/clusters/{cluster_id}/transactions/{transactional_id}/commit", v3_commit_transaction, "WRITE TRANSACTIONAL_ID:{transactional_id}"},
    {"POST", "/v3/clusters/{cluster_id}/transactions/{transactional_id}/abort", v3_abort_transaction, "WRITE TRANSACTIONAL_ID:{transactional_id}"},
    {"GET", "/topics", v2_list_topics, "DESCRIBE TOPIC:listed"},
    {"GET", "/topics/{topic}", v2_get_topic, "DESCRIBE TOPIC:{topic}"},
    {"POST", "/topics/{topic}", v2_produce_topic, "WRITE TOPIC:{topic}"},
    {"GET", "/topics/{topic}/partitions", v2_list_partitions, "DESCRIBE TOPIC:{topic}"},
    {"GET", "/topics/{topic}/partitions/{partition}", v2_get_partition, "DESCRIBE TOPIC:{topic}"},
    {"POST", "/topics/{topic}/partitions/{partition}", v2_produce_partition, "WRITE TOPIC:{topic}"},
    {"GET", "/topics/{topic}/partitions/{partition}/offsets", v2_offsets, "DESCRIBE TOPIC:{topic}"},
    {"GET", "/topics/{topic}/partitions/{partition}/records", fetch_records, "READ TOPIC:{topic}"},
    {"GET", "/brokers", v2_brokers, "none"},
    {"POST", "/consumers/{group}", v2_create_consumer, "READ GROUP:{group}"},
    {"DELETE", "/consumers/{group}/instances/{instance}", v2_delete_consumer, "READ GROUP:{group}"},
    {"POST", "/consumers/{group}/instances/{instance}/subscription", v2_subscribe, "READ GROUP:{group}; READ TOPIC:body"},
    {"GET", "/consumers/{group}/instances/{instance}/subscription", v2_get_subscription, "READ GROUP:{group}"},
    {"DELETE", "/consumers/{group}/instances/{instance}/subscription", v2_unsubscribe, "READ GROUP:{group}"},
    {"POST", "/consumers/{group}/instances/{instance}/assignments", v2_assign, "READ GROUP:{group}; READ TOPIC:body"},
    {"GET", "/consumers/{group}/instances/{instance}/assignments", v2_get_assignments, "READ GROUP:{group}"},
    {"POST", "/consumers/{group}/instances/{instance}/positions", v2_seek, "READ GROUP:{group}; READ TOPIC:body"},
    {"POST", "/consumers/{group}/instances/{instance}/positions/beginning", v2_seek_beginning, "READ GROUP:{group}; READ TOPIC:body"},
    {"POST", "/consumers/{group}/instances/{instance}/positions/end", v2_seek_end, "READ GROUP:{group}; READ TOPIC:body"},
    {"GET", "/consumers/{group}/instances/{instance}/records", v2_consumer_records, "READ GROUP:{group}; READ TOPIC:body"},
    {"POST", "/consumers/{group}/instances/{instance}/offsets", v2_commit_offsets, "READ GROUP:{group}; READ TOPIC:body"},
    {"GET", "/consumers/{group}/instances/{instance}/offsets", v2_committed_offsets, "DESCRIBE GROUP:{group}; DESCRIBE TOPIC:body"},
    {"POST", "/consumers/{group}/instances/{instance}/nacks", v2_nack, "READ GROUP:{group}; READ TOPIC:body"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups", v3_list_groups, "DESCRIBE GROUP:listed | DESCRIBE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}", v3_get_group, "DESCRIBE GROUP:{consumer_group_id}"},
    {"DELETE", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}", v3_delete_group, "DELETE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/consumers", v3_group_consumers, "DESCRIBE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lag-summary", v3_group_lag_summary, "DESCRIBE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/consumers/{consumer_id}", v3_group_consumer, "DESCRIBE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/consumers/{consumer_id}/assignments", v3_group_consumer_assignments, "DESCRIBE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}", v3_group_consumer_assignment, "DESCRIBE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lags", v3_group_lags, "DESCRIBE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lags/{topic_name}/partitions/{partition_id}", v3_group_partition_lag, "DESCRIBE GROUP:{consumer_group_id}; DESCRIBE TOPIC:{topic_name}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lag-history", v3_group_lag_history, "DESCRIBE GROUP:{consumer_group_id}; DESCRIBE TOPIC:listed"},
    {"POST", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/offsets:reset", v3_reset_group_offsets, "READ GROUP:{consumer_group_id}; READ TOPIC:body"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/dead-letters", v3_dead_letter_topics, "DESCRIBE GROUP:{consumer_group_id}"},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/dead-letters/{topic_name}/records", v3_dead_letters, "DESCRIBE GROUP:{consumer_group_id}; READ TOPIC:{topic_name}"},
    {"POST", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/dead-letters/{topic_name}/redrive", v3_redrive, "READ GROUP:{consumer_group_id}; READ TOPIC:{topic_name}; WRITE TOPIC:body"},
    {"GET", "/console", console_get, "none"}, {"HEAD", "/console", console_get, "none"},
    {"GET", "/console/{file}", console_get, "none"}, {"HEAD", "/console/{file}", console_get, "none"},
};

/// Rebalance and decommission (issue 33, api_v3_balance.cc).
const route cluster_balance_routes[] = {
    {"DELETE", "/v3/clusters/{cluster_id}/brokers/{broker_id}", v3_remove_broker, "ALTER CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/brokers/-/tasks", v3_list_broker_tasks, "DESCRIBE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}/tasks", v3_list_broker_tasks, "DESCRIBE CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}/tasks/remove-broker", v3_get_remove_broker_task, "DESCRIBE CLUSTER:kafka-cluster"},
    {"DELETE", "/v3/clusters/{cluster_id}/brokers/{broker_id}/tasks/remove-broker", v3_cancel_remove_broker_task, "ALTER CLUSTER:kafka-cluster"},
    {"GET", "/v3/clusters/{cluster_id}/rebalance", v3_get_rebalance, "DESCRIBE CLUSTER:kafka-cluster"},
    {"POST", "/v3/clusters/{cluster_id}/rebalance", v3_post_rebalance, "ALTER CLUSTER:kafka-cluster"},
    {"DELETE", "/v3/clusters/{cluster_id}/rebalance", v3_cancel_rebalance, "ALTER CLUSTER:kafka-cluster"},
};

const std::vector<route>& route_table() {
  static const std::vector<route> table = [] {
    std::vector<route> all(std::begin(core_routes), std::end(core_routes));
    all.insert(all.end(), std::begin(cluster_balance_routes), std::end(cluster_balance_routes));
    return all;
  }();
  return table;
}

const std::vector<std::vector<route_requirement>>& route_needs() {
  static const std::vector<std::vector<route_requirement>> parsed = [] {
    std::vector<std::vector<route_requirement>> out;
    for (const auto& r : route_table()) {
      auto needs = parse_route_needs(r.needs);
      RINGLOG_ASSERT(needs.has_value(), r.needs);   // the message: the malformed text
      out.push_back(std::move(*needs));
    }
    return out;
  }();
  return parsed;
}

}  // namespace

}  // namespace ringlog::gateway::routes

namespace ringlog::gateway {

using routes::route_needs;
using routes::route_table;

namespace {

/// The record reads are GETs that a HEAD must not run: a consumer instance's read moves its
/// position (a poll), and a partition read may long-poll or stream for minutes.
constexpr std::array<std::string_view, 2> head_refused = {"/topics/{topic}/partitions/{partition}/records",
                                                          "/consumers/{group}/instances/{instance}/records"};

bool head_allowed(std::string_view pattern) {
  return std::find(head_refused.begin(), head_refused.end(), pattern) == head_refused.end();
}

/// What the HTTP listener of a dedicated controller (process.roles=controller, KIP-631) serves:
/// health, metrics, the console and the cluster's metadata (brokers, quorum, topics, configs,
/// partitions, reassignments: read from its own image, writes committed as the active controller
/// or forwarded to it; the consumer group list, gathered from the brokers). Not the records,
/// consumer instances, a group's own routes, transactions or producers: it hosts no partition and
/// runs no coordinator, as Kafka's controllers serve no clients. A route added later is refused
/// there until it is listed here.
bool served_by_dedicated_controller(std::string_view method, std::string_view pattern) {
  if (pattern == "/v1/health" || pattern == "/metrics" || pattern == "/brokers" || pattern.starts_with("/console")) {
    return true;
  }
  if (pattern.starts_with("/topics")) {
    return method != "POST" && pattern.find("/offsets") == std::string_view::npos &&
           pattern.find("/records") == std::string_view::npos;
  }
  if (!pattern.starts_with("/v3/clusters")) return false;
  // The list of consumer groups is gathered from the brokers (gather_group_lists), as on a broker.
  if (method == "GET" && pattern == "/v3/clusters/{cluster_id}/consumer-groups") return true;
  for (std::string_view data_plane : {"/records", "/consumer-groups", "/transactions", "/producers", "/offset"}) {
    if (pattern.find(data_plane) != std::string_view::npos) return false;
  }
  return true;
}

/// A dedicated controller's 421 (Misdirected Request): what it cannot do, and the brokers' HTTP
/// listeners to ask instead.
void refuse_on_dedicated_controller(const std::shared_ptr<api::call>& c, const broker::broker& b,
                                    const std::string& what) {
  std::string brokers;
  for (const auto& d : b.admin().list_brokers()) {
    if (d.state != "unfenced" || d.host.empty()) continue;   // none: no HTTP listener
    brokers += (brokers.empty() ? "" : ", ") + std::string("http://") + d.host + ":" + std::to_string(d.port);
  }
  c->fail(421, ec::misdirected_request,
          "node " + std::to_string(b.config().node_id) + " is a dedicated controller (process.roles=controller): " +
              what + "; send " + c->request.method + " " + c->request.target + " to a broker: " +
              (brokers.empty() ? "none registered now" : brokers));
}

bool head_allowed_on(std::string_view path) {
  std::map<std::string, std::string> unused;
  return std::none_of(head_refused.begin(), head_refused.end(),
                      [&](std::string_view pattern) { return match_path(pattern, path, unused); });
}

/// Whether this node's image has `topic` and the partition the path names ("partition" or
/// "partition_id"; one that is no partition number is left to the route to refuse).
bool known_here(const broker::admin_api& admin, const std::string& topic,
                const std::map<std::string, std::string>& params) {
  if (!admin.topic_exists(topic)) return false;
  auto p = params.find(params.contains("partition_id") ? "partition_id" : "partition");
  if (p == params.end()) return true;
  auto index = base::parse_int(p->second, 0, std::numeric_limits<int32_t>::max());
  if (!index) return true;
  return admin.check_partition_exists({topic, model::partition_id(static_cast<int32_t>(*index))}).ok();
}

/// Runs route `fn` for `c`. A topic created a moment ago through another node may not be in
/// this node's image yet (a new user's describe on node 2 right after a create on node 1
/// answered 404): a route naming a topic this node does not know passes the metadata barrier
/// first, then runs against the image as it is then, as the broker's produce, fetch and offsets
/// do. Likewise a partition added a moment ago (the new user of session 36: a definitive 404
/// 40402 from nodes 2 and 3 for about 200 ms after a partition count was raised on node 1).
void run_when_known(broker::broker& b, const std::shared_ptr<api::call>& c, routes::handler fn) {
  const auto topic = c->params.find(c->params.contains("topic_name") ? "topic_name" : "topic");
  if (topic != c->params.end() && !known_here(b.admin(), topic->second, c->params)) {
    return b.await_metadata_barrier([c, fn] { c->later([fn](api::call& call) { fn(call.shared_from_this()); }); });
  }
  fn(c);
}

}  // namespace

api::api(broker::broker& broker, metrics& metrics, api_options options)
    : broker_(broker), metrics_(metrics), options_(std::move(options)) {}

std::vector<std::string> api::routes() {
  std::vector<std::string> out;
  for (const auto& r : route_table()) out.push_back(std::string(r.method) + " " + r.pattern);
  return out;
}

void api::handle(http_request request, std::shared_ptr<response_sink> sink) {
  auto c = std::make_shared<call>();
  c->self = this;
  c->sink = std::move(sink);
  c->request = std::move(request);
  c->base_url = std::string(c->request.https ? "https://" : "http://") +
                (c->request.host.empty() ? std::string("localhost") : c->request.host);
  auto [path, query_text] = split_target(c->request.target);
  if (!percent_decode(path, false)) {
    return c->fail(400, ec::bad_request, "malformed percent-escape in the path (RFC 3986 needs '%' and two hex digits)");
  }
  auto query = parse_query(query_text);
  if (!query) return c->fail(400, ec::bad_request, "malformed percent-escape in the query string");
  c->query = std::move(*query);

  std::vector<std::string> allowed;
  const auto& table = route_table();
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& r = table[i];
    std::map<std::string, std::string> params;
    if (!match_path(r.pattern, path, params)) continue;
    // Two patterns may match one path (.../brokers/-/tasks and .../brokers/{broker_id}/tasks).
    if (std::find(allowed.begin(), allowed.end(), r.method) == allowed.end()) allowed.emplace_back(r.method);
    // HEAD is GET without the body (RFC 9110 9.3.2) on every GET route; the server drops the body
    // and keeps its Content-Length.
    const bool head_as_get = c->request.method == "HEAD" && std::string_view(r.method) == "GET" && head_allowed(r.pattern);
    if (c->request.method != r.method && !head_as_get) continue;
    c->route = c->request.method + " " + r.pattern;
    c->params = std::move(params);
    routes::identify_client(c);
    // A call a peer passed on is served against an image at least as new as the peer's.
    return routes::after_passing_brokers_metadata(c, [this, c, i] { serve_route(c, i); });
  }
  answer_unmatched(c, path, std::move(allowed));
}

void api::serve_route(const std::shared_ptr<call>& c, size_t i) {
  const auto& r = route_table()[i];
  if (!routes::authenticate_call(c, r.pattern)) return;
  // Issue 30: the needs named by the path (or the cluster) before the handler runs; the
  // handler checks those named in the body and filters its lists.
  if (!routes::authorize_call(c, r.pattern, route_needs()[i])) return;
  c->audit_admin = routes::is_admin_write(c->request.method, r.pattern);
  if (!broker_.config().process_role_broker && !served_by_dedicated_controller(r.method, r.pattern)) {
    return refuse_on_dedicated_controller(
        c, broker_, "it hosts no partitions and serves no records, consumers, consumer groups or transactions");
  }
  // Issue 31: a client throttled by its byte quota is refused (429) before anything is done.
  if (!routes::admit_quota_client(c, r.method, r.pattern)) return;
  // A group call another broker coordinates is passed on there (api_group_forward.cc).
  if (routes::forward_group_call(c)) return;
  if (routes::forward_broker_config_call(c, r.pattern)) return;   // a broker's own configs: served by it
  if (r.fn == routes::v3_list_groups && routes::gather_group_lists(c)) return;
  if (!broker_.config().process_role_broker && r.fn == routes::v3_list_groups) {
    return refuse_on_dedicated_controller(c, broker_, "it has no groups and cannot gather the brokers' lists here");
  }
  // Issue 29: a consumer instance is its creator's; checked where the instance is served.
  if (std::string_view(r.pattern).starts_with("/consumers/{group}/instances/{instance}")) {
    return routes::check_instance_owner(c, r.fn);
  }
  return run_when_known(broker_, c, r.fn);
}

void api::answer_unmatched(const std::shared_ptr<call>& c, std::string_view path, std::vector<std::string> allowed) {
  if (c->request.method == "OPTIONS") {
    // CORS preflight (Fetch standard): which methods and headers a browser may use here.
    c->route = "OPTIONS *";
    std::string methods = "OPTIONS";
    for (const auto& m : allowed) methods += ", " + m;
    if (allowed.empty()) methods = "GET, POST, PATCH, DELETE, OPTIONS";
    http_response r;
    r.status = 204;
    r.content_type.clear();
    r.headers.emplace_back("Access-Control-Allow-Methods", methods);
    r.headers.emplace_back("Access-Control-Allow-Headers", c->request.access_control_request_headers.empty()
                                                               ? "Content-Type, Accept"
                                                               : c->request.access_control_request_headers);
    r.headers.emplace_back("Access-Control-Max-Age", "600");
    return c->respond(std::move(r));
  }
  if (std::find(allowed.begin(), allowed.end(), "GET") != allowed.end() &&
      std::find(allowed.begin(), allowed.end(), "HEAD") == allowed.end() && head_allowed_on(path)) {
    allowed.emplace_back("HEAD");
  }
  if (!allowed.empty()) {
    std::string allow;
    for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    auto r = error_response(405, ec::method_not_allowed,
                            "method " + c->request.method + " is not allowed on " + std::string(path) + "; allowed: " + allow);
    r.headers.emplace_back("Allow", allow + ", OPTIONS");
    return c->respond(std::move(r));
  }
  if (path == "/v1/ws") {   // the WebSocket endpoint asked as plain HTTP (a breaker's LOW, session 28: it said "no route")
    auto r = error_response(426, ec::upgrade_required,
                            "/v1/ws is the WebSocket endpoint: open it with GET and the headers Upgrade: websocket and "
                            "Connection: Upgrade (http-api/ws-protocol.md)");
    r.headers.emplace_back("Upgrade", "websocket");
    return c->respond(std::move(r));
  }
  c->fail(404, ec::not_found, "no route for " + c->request.method + " " + std::string(path));
}

}  // namespace ringlog::gateway
