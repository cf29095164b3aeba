// v3 admin routes (Confluent REST Proxy v3): clusters, brokers, topics, topic configs, partitions, replicas.

#include "api_routes.h"

#include <charconv>
#include <set>
#include "group_proxy.h"
#include "http_quotas.h"
#include "request_parsing.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {

json cluster_json(const std::string& base, const broker::broker& b) {
  const std::string& id = b.config().cluster_id;
  std::string self = base + "/v3/clusters/" + id;
  return json{{"kind", "KafkaCluster"},
              {"metadata", {{"self", self}, {"resource_name", "crn:///kafka=" + id}}},
              {"cluster_id", id},
              // The active controller (the metadata quorum's leader); null during an election.
              {"controller", b.admin().controller_id() >= 0 ? related(self + "/brokers/" + std::to_string(b.admin().controller_id()))
                                                    : json(nullptr)},
              {"acls", related(self + "/acls")},
              {"brokers", related(self + "/brokers")},
              {"broker_configs", related(self + "/broker-configs")},
              {"consumer_groups", related(self + "/consumer-groups")},
              {"topics", related(self + "/topics")},
              {"partition_reassignments", related(self + "/topics/-/partitions/-/reassignment")}};
}

/// A KafkaTopic as every v3 topic answer (list, get, create, partitions) shows it, with the
/// operations the caller may do on it (so a create and a GET of the same topic agree).
json topic_json(api::call& call, const broker::topic_description& t) {
  const std::string& cluster = call.params["cluster_id"];
  std::string self = call.base_url + "/v3/clusters/" + cluster + "/topics/" + t.name;
  return json{{"kind", "KafkaTopic"},
              {"metadata", {{"self", self}, {"resource_name", "crn:///kafka=" + cluster + "/topic=" + t.name}}},
              {"cluster_id", cluster},
              {"topic_name", t.name},
              {"topic_id", t.topic_id},
              {"is_internal", t.is_internal},
              {"replication_factor", t.replication_factor},
              {"partitions_count", t.partitions.size()},
              // ringlog's additions (metrics.h partition_health): from the cluster's metadata.
              {"under_replicated_partitions_count", health_of(t).under_replicated},
              {"offline_partitions_count", health_of(t).offline},
              {"partitions", related(self + "/partitions")},
              {"configs", related(self + "/configs")},
              {"authorized_operations", authorized_operations(call, security::resource_type::topic, t.name)}};
}

json partition_json(const std::string& base, const std::string& cluster, const std::string& topic,
                    const broker::partition_description& p) {
  std::string self = base + "/v3/clusters/" + cluster + "/topics/" + topic + "/partitions/" +
                     std::to_string(p.partition.value());
  json out{{"kind", "KafkaPartition"},
              {"metadata", {{"self", self},
                            {"resource_name", "crn:///kafka=" + cluster + "/topic=" + topic + "/partition=" +
                                                  std::to_string(p.partition.value())}}},
              {"cluster_id", cluster},
              {"topic_name", topic},
              {"partition_id", p.partition.value()},
              // null while the partition has no leader (its in-sync replicas are all unavailable)
              {"leader", p.leader >= 0 ? related(self + "/replicas/" + std::to_string(p.leader)) : json(nullptr)},
              {"replicas", related(self + "/replicas")},
              {"leader_epoch", p.leader_epoch.value()},
              {"log_start_offset", p.log_start_offset.value()},
              {"high_watermark", p.high_watermark.value()},
              {"log_end_offset", p.log_end_offset.value()},
              // ringlog: false while a new leader establishes its high watermark (KIP-207)
              {"high_watermark_established", p.high_watermark_established},
              {"size_bytes", p.size_bytes}};
  // ringlog: why this broker's replica is offline (its files did not open), when it is
  if (!p.offline_reason.empty()) out["offline_reason"] = p.offline_reason;
  return out;
}

json config_json(const std::string& base, const std::string& cluster, const std::string& topic,
                 const broker::topic_config_entry& c) {
  std::string self = base + "/v3/clusters/" + cluster + "/topics/" + topic + "/configs/" + c.name;
  json synonyms = json::array();
  for (const auto& s : c.synonyms) {
    synonyms.push_back({{"name", s.name}, {"value", s.value}, {"source", std::string(broker::to_string(s.source))}});
  }
  return json{{"kind", "KafkaTopicConfig"},
              {"metadata", {{"self", self},
                            {"resource_name", "crn:///kafka=" + cluster + "/topic=" + topic + "/config=" + c.name}}},
              {"cluster_id", cluster},
              {"topic_name", topic},
              {"name", c.name},
              {"value", c.value},
              // Confluent's is_default is Kafka's: the value is the default (DEFAULT_CONFIG), not
              // set on the topic nor on the brokers.
              {"is_default", c.source == broker::config_source::default_config},
              {"is_read_only", c.read_only},
              {"is_sensitive", false},
              {"source", std::string(broker::to_string(c.source))},
              {"synonyms", synonyms}};
}

namespace {

/// The node ids that vote in the metadata quorum (controller.quorum.voters: process.roles has controller).
std::set<int32_t> voter_ids(const broker::broker& b) {
  std::set<int32_t> out;
  for (const auto& v : b.admin().describe_quorum().voters) out.insert(v.replica_id);
  return out;
}

/// ringlog's `roles` of a node: process.roles as Kafka spells it ("broker", "controller").
json roles_json(bool broker, bool controller) {
  json roles = json::array();
  if (broker) roles.push_back("broker");
  if (controller) roles.push_back("controller");
  return roles;
}

}  // namespace

json broker_json(const std::string& base, const std::string& cluster, const broker::broker_description& b,
                 bool voter) {
  const std::string id = std::to_string(b.node_id);
  const bool no_http = b.host.empty() || b.port <= 0;
  return json{{"kind", "KafkaBroker"},
              {"metadata", {{"self", base + "/v3/clusters/" + cluster + "/brokers/" + id},
                            {"resource_name", "crn:///kafka=" + cluster + "/broker=" + id}}},
              {"cluster_id", cluster},
              {"broker_id", b.node_id},
              // ringlog: the HTTP listener; null (host, port, scheme) on a broker that has none
              // (listeners without http:// or https://, a Kafka-only broker)
              {"host", no_http ? json(nullptr) : json(b.host)},
              {"port", no_http ? json(nullptr) : json(b.port)},
              // ringlog: the scheme of that HTTP listener (https for a node whose only one is https://)
              {"scheme", no_http ? json(nullptr) : json(b.http_tls ? "https" : "http")},
              {"rack", b.rack.empty() ? json(nullptr) : json(b.rack)},
              // ringlog: the registration state (unfenced, fenced, controlled_shutdown) and epoch
              {"state", b.state},
              {"broker_epoch", b.broker_epoch},
              {"is_controller", b.is_controller},
              // ringlog: DECOMMISSIONING while its replicas move off (issue 33), else null
              {"decommission", b.decommissioning ? json("DECOMMISSIONING") : json(nullptr)},
              {"roles", roles_json(true, voter)}};
}

namespace {

/// A dedicated controller (process.roles=controller, KIP-631) as a KafkaBroker, so the cluster's
/// `controller` link (.../brokers/{id}, as Confluent's) resolves when one is the active controller.
/// It never registers as a broker: no listener address is in the metadata (host, port null), no
/// registration state or epoch (null); it is not in the broker list.
json dedicated_controller_json(const std::string& base, const std::string& cluster, int32_t node_id,
                               bool active) {
  const std::string id = std::to_string(node_id);
  return json{{"kind", "KafkaBroker"},
              {"metadata", {{"self", base + "/v3/clusters/" + cluster + "/brokers/" + id},
                            {"resource_name", "crn:///kafka=" + cluster + "/broker=" + id}}},
              {"cluster_id", cluster},
              {"broker_id", node_id},
              {"host", nullptr},
              {"port", nullptr},
              {"scheme", nullptr},
              {"rack", nullptr},
              {"state", nullptr},
              {"broker_epoch", nullptr},
              {"is_controller", active},
              {"roles", roles_json(false, true)}};
}

}  // namespace

/// GET /v3/clusters/{cluster_id}/quorum (ringlog): the metadata quorum as `kafka-metadata-quorum
/// describe --status` shows it, as this node knows it (voters' offsets are known on the leader).
void v3_get_quorum(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const std::string& cluster = c->params["cluster_id"];
  const broker::quorum_status q = c->broker().admin().describe_quorum();
  auto replicas = [](const std::vector<broker::quorum_status::voter>& list) {
    json out = json::array();
    for (const auto& v : list) {
      out.push_back({{"replica_id", v.replica_id},
                     {"log_end_offset", v.log_end_offset >= 0 ? json(v.log_end_offset) : json(nullptr)},
                     {"lag", v.lag >= 0 ? json(v.lag) : json(nullptr)},
                     {"last_fetch_timestamp", v.last_fetch_timestamp_ms >= 0 ? json(v.last_fetch_timestamp_ms)
                                                                             : json(nullptr)}});
    }
    return out;
  };
  const std::string self = c->base_url + "/v3/clusters/" + cluster + "/quorum";
  c->respond_json(200, {{"kind", "KafkaMetadataQuorum"},
                        {"metadata", {{"self", self}, {"resource_name", "crn:///kafka=" + cluster + "/quorum"}}},
                        {"cluster_id", cluster},
                        {"node_id", q.node_id},
                        {"leader_id", q.leader_id >= 0 ? json(q.leader_id) : json(nullptr)},
                        {"leader_epoch", q.leader_epoch},
                        {"high_watermark", q.high_watermark},
                        {"log_start_offset", q.log_start_offset},
                        {"log_end_offset", q.log_end_offset},
                        {"applied_offset", q.applied_offset},
                        {"role", q.role},
                        {"is_observer", q.observer},
                        {"voters", replicas(q.voters)},
                        {"observers", replicas(q.observers)}});
}

/// POST /v3/clusters/{cluster_id}/elect-leaders (ringlog's; Kafka's ElectLeaders with PREFERRED,
/// as kafka-leader-election.sh --election-type preferred): 200 with one KafkaLeaderElection per
/// partition - leader_id after the call, and error_code/error/message when nothing changed
/// (84 election_not_needed, 80 preferred_leader_not_available, 3 unknown_topic_or_partition).
void v3_elect_leaders(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  if (!is_blank(c->request.body) && !c->content_type_in({"application/json"})) return;
  auto req = parse_elect_leaders(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  c->broker().admin().elect_preferred_leaders(std::move(req).value(), [c](broker::result<std::vector<broker::leader_election_result>> r) {
    c->later([r = std::move(r)](api::call& call) mutable {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
      const std::string& cluster = call.params["cluster_id"];
      json data = json::array();
      for (const auto& e : r.value()) {
        json item = {{"kind", "KafkaLeaderElection"},
                     {"topic_name", e.topic},
                     {"partition_id", e.partition},
                     {"leader_id", e.leader >= 0 ? json(e.leader) : json(nullptr)},
                     {"error_code", nullptr},
                     {"error", nullptr},
                     {"message", nullptr}};
        if (e.refused) {
          item["error_code"] = broker::kafka_error_code(e.refused->code);
          item["error"] = std::string(broker::to_string(e.refused->code));
          item["message"] = e.refused->message;
        }
        data.push_back(std::move(item));
      }
      call.respond_json(200, {{"kind", "KafkaLeaderElectionList"},
                              {"metadata", {{"self", call.base_url + "/v3/clusters/" + cluster + "/elect-leaders"}}},
                              {"data", data}});
    });
  });
}

/// The replica of partition `p` on broker `broker_id` (Confluent's KafkaReplica).
json replica_json(const std::string& base, const std::string& cluster, const std::string& topic,
                  const broker::partition_description& p, int32_t broker_id) {
  const std::string partition = std::to_string(p.partition.value());
  const std::string id = std::to_string(broker_id);
  const bool in_sync = std::find(p.in_sync_replicas.begin(), p.in_sync_replicas.end(), broker_id) != p.in_sync_replicas.end();
  return json{{"kind", "KafkaReplica"},
              {"metadata", {{"self", base + "/v3/clusters/" + cluster + "/topics/" + topic + "/partitions/" + partition +
                                         "/replicas/" + id},
                            {"resource_name", "crn:///kafka=" + cluster + "/topic=" + topic + "/partition=" + partition +
                                                  "/replica=" + id}}},
              {"cluster_id", cluster},
              {"topic_name", topic},
              {"partition_id", p.partition.value()},
              {"broker_id", broker_id},
              {"is_leader", broker_id == p.leader},
              {"is_in_sync", in_sync},
              {"broker", related(base + "/v3/clusters/" + cluster + "/brokers/" + id)}};
}

// -- v3 admin

/// cluster_json with the cluster's partition health (every topic, internal ones too), then `done`.
void with_cluster_json(const call_ptr& c, std::function<void(api::call&, json)> done) {
  describe_all(c, true, [done = std::move(done)](api::call& call, std::vector<broker::topic_description> topics) {
    partition_health all;
    for (const auto& t : topics) all += health_of(t);
    json j = cluster_json(call.base_url, call.broker());
    // ringlog's additions (metrics.h partition_health).
    j["under_replicated_partitions_count"] = all.under_replicated;
    j["offline_partitions_count"] = all.offline;
    j["authorized_operations"] = authorized_operations(call, security::resource_type::cluster, security::cluster_resource_name);
    done(call, std::move(j));
  });
}

void v3_list_clusters(const call_ptr& c) {
  if (!c->accept(v3_offers)) return;
  with_cluster_json(c, [](api::call& call, json cluster) {
    call.respond_json(200, list_json("KafkaClusterList", call.base_url + "/v3/clusters", json::array({std::move(cluster)})));
  });
}

void v3_get_cluster(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_cluster_json(c, [](api::call& call, json cluster) { call.respond_json(200, cluster); });
}

void with_partition(const call_ptr& c,
                    std::function<void(api::call&, const broker::topic_description&, const broker::partition_description&)> done);

/// Confluent's KafkaReassignment: a partition being moved (KIP-455). `r` with empty adding and
/// removing replicas: no move under way (the answer to a PATCH that completed at once).
json reassignment_json(const std::string& base, const std::string& cluster, const broker::partition_reassignment& r) {
  const std::string partition = std::to_string(r.partition);
  const std::string path = base + "/v3/clusters/" + cluster + "/topics/" + r.topic + "/partitions/" + partition;
  return json{{"kind", "KafkaReassignment"},
              {"metadata", {{"self", path + "/reassignment"},
                            {"resource_name", "crn:///kafka=" + cluster + "/topic=" + r.topic + "/partition=" + partition}}},
              {"cluster_id", cluster},
              {"topic_name", r.topic},
              {"partition_id", r.partition},
              // ringlog: the replica list as the metadata has it (the target, then the removing ones)
              {"replica_ids", r.replicas},
              {"adding_replicas", r.adding_replicas},
              {"removing_replicas", r.removing_replicas},
              {"replicas", related(path + "/replicas")}};
}

/// KafkaReassignmentList of the reassignments under way in this node's metadata; `topic` empty:
/// of every topic.
void respond_reassignments(api::call& call, const std::string& topic, const std::string& self) {
  const std::string& cluster = call.params["cluster_id"];
  json data = json::array();
  for (const auto& r : call.broker().admin().list_partition_reassignments(topic)) {
    data.push_back(reassignment_json(call.base_url, cluster, r));
  }
  call.respond_json(200, list_json("KafkaReassignmentList", self, data));
}

/// GET .../topics/-/partitions/-/reassignment: the partitions being reassigned, of every topic.
void v3_list_reassignments(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  respond_reassignments(*c, "", c->base_url + "/v3/clusters/" + c->params["cluster_id"] + "/topics/-/partitions/-/reassignment");
}

/// GET .../topics/{t}/partitions/-/reassignment: the partitions of one topic being reassigned.
void v3_list_topic_reassignments(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    respond_reassignments(call, t.name, call.base_url + "/v3/clusters/" + call.params["cluster_id"] + "/topics/" + t.name +
                                            "/partitions/-/reassignment");
  });
}

/// GET .../topics/{t}/partitions/{p}/reassignment: the partition's reassignment; 404 (40402)
/// when none is under way (as Confluent's).
void v3_get_reassignment(const call_ptr& c) {
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    for (const auto& r : call.broker().admin().list_partition_reassignments(t.name)) {
      if (r.partition == d.partition.value()) {
        return call.respond_json(200, reassignment_json(call.base_url, call.params["cluster_id"], r));
      }
    }
    call.fail(404, ec::partition_not_found,
              "partition " + std::to_string(d.partition.value()) + " of topic '" + t.name + "' is not being reassigned");
  });
}

/// The result item of one partition of a reassignment request (as elect-leaders' items).
json reassignment_result_json(const broker::partition_reassignment_result& r) {
  json item = {{"kind", "KafkaReassignmentResult"},
               {"topic_name", r.topic},
               {"partition_id", r.partition},
               {"error_code", nullptr},
               {"error", nullptr},
               {"message", nullptr}};
  if (r.refused) {
    item["error_code"] = broker::kafka_error_code(r.refused->code);
    item["error"] = std::string(broker::to_string(r.refused->code));
    item["message"] = r.refused->message;
  }
  return item;
}

/// POST .../topics/-/partitions/-/reassignment:alter (ringlog's; Kafka's
/// AlterPartitionReassignments as kafka-reassign-partitions.sh --execute sends it, in the
/// shape of Confluent's configs:alter): {"data": [{"topic_name", "partition_id", "replicas":
/// [ids] | null}]}, null cancelling. 200 with one KafkaReassignmentResult per partition, in
/// order; error_code/error/message set when that partition was refused (39
/// invalid_replica_assignment, 85 no_reassignment_in_progress, 3 unknown_topic_or_partition).
/// The moves run on after the answer: the list routes show them until they complete.
void v3_alter_reassignments(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  if (!c->content_type_in({"application/json"})) return;
  auto req = parse_reassignments(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  c->broker().admin().alter_partition_reassignments(
      std::move(req).value(), [c](broker::result<std::vector<broker::partition_reassignment_result>> r) {
        c->later([r = std::move(r)](api::call& call) mutable {
          if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
          json data = json::array();
          for (const auto& e : r.value()) data.push_back(reassignment_result_json(e));
          call.respond_json(200, list_json("KafkaReassignmentResultList",
                                           call.base_url + "/v3/clusters/" + call.params["cluster_id"] +
                                               "/topics/-/partitions/-/reassignment:alter",
                                           data));
        });
      });
}

/// One partition's reassignment through PATCH (a target) or DELETE (a cancel): the refusal as an
/// error answer; else 200 with the partition's KafkaReassignment as this node's metadata has it
/// after the change (empty adding/removing: the move completed at once) or 204 for a cancel.
void reassign_one(const call_ptr& c, std::optional<std::vector<int32_t>> replicas) {
  auto p = c->path_partition("partition_id");
  if (!p) return;
  const std::string topic = c->params["topic_name"];
  const bool cancel = !replicas;
  std::vector<broker::partition_reassignment_target> targets{{topic, *p, std::move(replicas)}};
  c->broker().admin().alter_partition_reassignments(
      std::move(targets), [c, topic, partition = *p, cancel](broker::result<std::vector<broker::partition_reassignment_result>> r) {
        c->later([r = std::move(r), topic, partition, cancel](api::call& call) mutable {
          if (!r.ok()) return call.fail_broker(r.error(), error_scope::partition, topic);
          const auto& one = r.value().at(0);
          if (one.refused) return call.fail_broker(*one.refused, error_scope::partition, topic);
          if (cancel) return call.respond_no_content();
          broker::partition_reassignment now{topic, partition, {}, {}, {}};
          for (const auto& ongoing : call.broker().admin().list_partition_reassignments(topic)) {
            if (ongoing.partition == partition) now = ongoing;
          }
          call.respond_json(200, reassignment_json(call.base_url, call.params["cluster_id"], now));
        });
      });
}

/// PATCH .../topics/{t}/partitions/{p}/reassignment (ringlog's): {"replicas": [ids]} moves the
/// partition to those replicas, the first its preferred leader.
void v3_patch_reassignment(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  if (!c->content_type_in({"application/json"})) return;
  auto replicas = parse_reassignment_replicas(c->request.body);
  if (!replicas.ok()) return c->fail(replicas.error());
  reassign_one(c, std::move(replicas).value());
}

/// DELETE .../topics/{t}/partitions/{p}/reassignment (ringlog's): cancels the partition's move
/// (its original replicas stay); 409 when none is under way.
void v3_cancel_reassignment(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  reassign_one(c, std::nullopt);
}

void v3_list_topics(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  // As Confluent's v3 list: internal topics too, marked is_internal (v2's list leaves them out).
  describe_all(c, true, [](api::call& call, std::vector<broker::topic_description> topics) {
    keep_authorized(call, security::acl_operation::describe, topics);
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (const auto& t : topics) {
      data.push_back(topic_json(call, t));
    }
    call.respond_json(200, list_json("KafkaTopicList", call.base_url + "/v3/clusters/" + cluster + "/topics", data));
  });
}

/// KIP-599 over HTTP (issue 31): `partitions` created or deleted count against the caller's
/// controller_mutation_rate, as CreateTopics v6+, CreatePartitions v3+ and DeleteTopics v5+ do on
/// the Kafka listener; over it the call is answered 429 + Retry-After (Kafka's
/// THROTTLING_QUOTA_EXCEEDED) and nothing is done. False when refused (answered).
bool admit_mutations(api::call& call, int64_t partitions) {
  if (partitions <= 0) return true;
  const int64_t wait_ms = call.broker().security().charge_controller_mutations(call.principal().name, call.client_id,
                                                                    static_cast<double>(partitions), true);
  if (wait_ms == 0) return true;
  auto r = error_response(429, ec::too_many_requests,
                          "client user=" + call.principal().name + ", client-id=" + call.client_id +
                              " is over its controller_mutation_rate quota: creating or deleting " +
                              std::to_string(partitions) + " partitions must wait " + std::to_string(wait_ms) +
                              " ms (KIP-599); retry after Retry-After seconds");
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds(wait_ms)));
  call.respond(std::move(r));
  return false;
}

/// Topic `topic`'s partition count, then `done` (the broker's answer to a describe that fails).
void with_partition_count(const call_ptr& c, const std::string& topic, std::function<void(api::call&, int64_t)> done) {
  c->broker().admin().describe_topic(topic, [c, topic, done = std::move(done)](broker::result<broker::topic_description> r) {
    c->later([r = std::move(r), topic, done](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, topic);
      done(call, static_cast<int64_t>(r->partitions.size()));
    });
  });
}

void v3_create_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto req = parse_create_topic(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  std::string name = req->name;
  // Kafka's CreateTopics: CREATE on the cluster allows any topic, else CREATE on the topic (the
  // route's "CREATE TOPIC:body | CREATE CLUSTER:kafka-cluster"; every door's rule).
  if (!broker::may_create_topic(c->broker().security(), c->principal(), c->peer_ip(), name) &&
      !c->require(security::resource_type::topic, name, security::acl_operation::create)) {
    return;
  }
  req->principal = c->principal();
  if (!req->validate_only && !admit_mutations(*c, req->partitions_count.value_or(c->broker().config().num_partitions))) {
    return;
  }
  // Confluent: a dry run (validate_only) answers 200 with the topic it would create; only a real
  // create is 201 Created.
  const unsigned status = req->validate_only ? 200 : 201;
  c->broker().admin().create_topic(std::move(req).value(), [c, name, status](broker::result<broker::topic_description> r) {
    c->later([r = std::move(r), name, status](api::call& call) mutable {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, name);
      call.respond_json(status, topic_json(call, r.value()));
    });
  });
}

void v3_get_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    call.respond_json(200, topic_json(call, t));
  });
}

void v3_patch_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto count = parse_patch_topic(c->request.body);
  if (!count.ok()) return c->fail(count.error());
  std::string topic = c->params["topic_name"];
  with_partition_count(c, topic, [topic, count = *count](api::call& call, int64_t now) {
    if (!admit_mutations(call, count - now)) return;
    auto self = call.shared_from_this();
    call.broker().admin().create_partitions(topic, count, broker::partitions_count_field, [self, topic](broker::result<broker::topic_description> r) {
      self->later([r = std::move(r), topic](api::call& call2) mutable {
        if (!r.ok()) return call2.fail_broker(r.error(), error_scope::topic, topic);
        call2.respond_json(200, topic_json(call2, r.value()));
      });
    });
  });
}

void v3_delete_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  std::string topic = c->params["topic_name"];
  with_partition_count(c, topic, [topic](api::call& call, int64_t partitions) {
    if (!admit_mutations(call, partitions)) return;
    auto self = call.shared_from_this();
    call.broker().admin().delete_topic(topic, [self, topic](broker::result<void> r) {
      self->later([r = std::move(r), topic](api::call& call2) {
        if (!r.ok()) return call2.fail_broker(r.error(), error_scope::topic, topic);
        call2.respond_no_content();
      });
    });
  });
}

void v3_list_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (const auto& e : t.configs) data.push_back(config_json(call.base_url, cluster, t.name, e));
    call.respond_json(200, list_json("KafkaTopicConfigList",
                                     call.base_url + "/v3/clusters/" + cluster + "/topics/" + t.name + "/configs", data));
  });
}

/// 404 naming `name`, which is not one of topic `t`'s configs (GET, PUT, DELETE and alter alike).
void fail_config_not_found(api::call& call, const std::string& topic, const std::string& name) {
  call.fail(404, ec::not_found, "topic config \"" + name + "\" not found for topic \"" + topic + "\"");
}

void v3_get_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    const std::string& name = call.params["name"];
    for (const auto& e : t.configs) {
      if (e.name == name) return call.respond_json(200, config_json(call.base_url, call.params["cluster_id"], t.name, e));
    }
    fail_config_not_found(call, t.name, name);
  });
}

/// Applies `changes` (a value to set, or nullopt to reset to the default) to {topic_name}'s
/// configs and answers 204. A name that is not a topic config is 404 for the whole request, as
/// GET .../configs/{name} answers it (Confluent); nothing is changed then.
void change_configs(const call_ptr& c, std::map<std::string, std::optional<std::string>> changes, bool validate_only) {
  with_topic(c, "topic_name", error_scope::topic, [changes = std::move(changes), validate_only](
                                                       api::call& call, broker::topic_description t) mutable {
    for (const auto& [name, unused] : changes) {
      const bool known = std::any_of(t.configs.begin(), t.configs.end(), [&](const auto& e) { return e.name == name; });
      if (!known) return fail_config_not_found(call, t.name, name);
    }
    auto self = call.shared_from_this();
    const std::string topic = t.name;
    call.broker().admin().alter_topic_configs(topic, std::move(changes), validate_only,
                                      [self, topic](broker::result<broker::topic_description> r) {
                                        self->later([r = std::move(r), topic](api::call& call2) {
                                          if (!r.ok()) return call2.fail_broker(r.error(), error_scope::topic, topic);
                                          call2.respond_no_content();
                                        });
                                      });
  });
}

void v3_alter_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto req = parse_alter_configs(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  change_configs(c, std::move(req->changes), req->validate_only);
}

/// PUT .../configs/{name} with {"value": "..."} (Confluent's single-config update).
void v3_set_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  if (is_blank(c->request.body)) return c->fail(empty_body_error("{\"value\": \"...\"}"));
  api_error refusal;
  json body = parse_json(c->request.body, "request body", refusal);
  if (body.is_discarded()) return c->fail(refusal);
  if (!body.is_object() || !body.contains("value") || !body["value"].is_string()) {
    return c->fail(422, ec::unprocessable, "the body must be {\"value\": \"...\"} with a string value");
  }
  for (const auto& [name, unused] : body.items()) {
    if (name != "value") return c->fail(422, ec::unprocessable, "unknown field \"" + name + "\"; the body takes value");
  }
  change_configs(c, {{c->params["name"], body["value"].get<std::string>()}}, false);
}

/// DELETE .../configs/{name}: back to the default (Confluent's single-config reset).
void v3_reset_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  change_configs(c, {{c->params["name"], std::nullopt}}, false);
}

namespace {

using figures_fn = std::function<void(api::call&, broker::topic_description, std::vector<std::string> unanswered)>;

/// How long a leader has to give its figures to a node that holds replicas of its partitions, ms:
/// its own replicas' figures (high_watermark_established false) are the answer past that. Well
/// above a LAN round trip; below the 1-2 s timeouts monitoring pollers use, so an isolated or
/// stopped leader does not make them time out on every other partition.
constexpr int64_t leader_figures_timeout_ms = 500;

/// Copies a leader's figures (its KafkaPartition `p`) into `d`.
void take_figures(broker::partition_description& d, const json& p) {
  d.log_start_offset = model::offset{p.value("log_start_offset", d.log_start_offset.value())};
  d.high_watermark = model::offset{p.value("high_watermark", d.high_watermark.value())};
  d.log_end_offset = model::offset{p.value("log_end_offset", d.log_end_offset.value())};
  d.high_watermark_established = p.value("high_watermark_established", d.high_watermark_established);
  d.size_bytes = p.value("size_bytes", d.size_bytes);
}

/// A partition's figures (log_start_offset, high_watermark, log_end_offset, size_bytes) come from
/// its leader (KAFKA-2334: a follower's high watermark lags the leader's by a fetch round, so it
/// can be below an offset already acknowledged to an acks=all producer). For each partition of
/// `t` this node does not lead, they are asked of its leader: one GET .../topics/{t}/partitions
/// per such leader on its HTTP listener, marked forwarded so the leader answers from its own
/// replicas and never passes it on. Then `done` on the call's thread, with the ids of the leaders
/// that did not answer (or cannot: a leader without an HTTP listener is not asked): their partitions keep this node's figures (0s where it holds no replica)
/// with high_watermark_established false, since they are not the leader's. A leader whose
/// partitions all have a replica here gets leader_figures_timeout_ms to answer (this node's own
/// figures are a fallback, and a stalled leader must not stall the route); others the forwarder's.
void with_leader_figures(const call_ptr& c, broker::topic_description t, figures_fn done) {
  http_forwarder* forwarder = c->self->options().forwarder;
  const int32_t self = c->broker().config().node_id;
  std::map<int32_t, broker::broker_description> leaders;
  std::set<int32_t> without_fallback;   // leaders of a partition this node holds no replica of
  std::set<std::string> without_http;   // registered leaders without an HTTP listener: unanswered
  if (forwarder != nullptr && c->request.forwarded_by.empty()) {
    std::map<int32_t, broker::broker_description> brokers;
    for (auto& b : c->broker().admin().list_brokers()) brokers.emplace(b.node_id, std::move(b));
    for (auto& p : t.partitions) {
      if (p.leader == self) continue;
      p.high_watermark_established = false;   // until the leader answers with its own
      auto it = brokers.find(p.leader);
      if (it == brokers.end()) continue;
      if (it->second.host.empty() || it->second.port <= 0) {
        without_http.insert(std::to_string(p.leader));
        continue;
      }
      leaders.emplace(it->first, it->second);
      if (std::find(p.replicas.begin(), p.replicas.end(), self) == p.replicas.end()) without_fallback.insert(p.leader);
    }
  }
  std::vector<std::string> unreachable(without_http.begin(), without_http.end());
  if (leaders.empty()) return done(*c, std::move(t), std::move(unreachable));
  struct gather {
    broker::topic_description topic;
    std::vector<std::string> unanswered;
    size_t remaining = 0;
    figures_fn done;
  };
  auto g = std::make_shared<gather>();
  g->topic = std::move(t);
  g->unanswered = std::move(unreachable);
  g->remaining = leaders.size();
  g->done = std::move(done);
  // Passed on as the group calls are: a leader cannot check this node's access tokens or
  // console sessions, so it gets the caller's principal, signed (a new user's MEDIUM: the console
  // on a session cookie showed other leaders' partitions as not established).
  http_request request = passed_on_request(*c);
  request.method = "GET";
  request.body.clear();
  request.accept = "application/json";
  request.target = "/v3/clusters/" + percent_encode_segment(c->params["cluster_id"]) + "/topics/" +
                   percent_encode_segment(g->topic.name) + "/partitions";
  for (const auto& [node, b] : leaders) {
    const int64_t timeout_ms = without_fallback.contains(node)
                                   ? proxy_limits::connect_timeout_ms + proxy_limits::exchange_slack_ms
                                   : leader_figures_timeout_ms;
    forwarder->forward(request, {node, b.host, static_cast<uint16_t>(b.port), b.http_tls}, timeout_ms, [c, g, node = node](forward_result r) {
      c->later([g, node, r = std::move(r)](api::call& call) {
        json body = r.answered && r.response.status == 200 ? json::parse(r.response.body, nullptr, false) : json();
        if (body.is_object() && body.contains("data") && body["data"].is_array()) {
          for (const auto& p : body["data"]) {
            if (!p.is_object() || !p.contains("partition_id") || !p["partition_id"].is_number_integer()) continue;
            const int32_t id = p["partition_id"].get<int32_t>();
            for (auto& d : g->topic.partitions) {
              if (d.partition.value() == id && d.leader == node) take_figures(d, p);
            }
          }
        } else {
          g->unanswered.push_back(std::to_string(node));
        }
        if (--g->remaining == 0) g->done(call, std::move(g->topic), std::move(g->unanswered));
      });
    });
  }
}

/// `unanswered` (leaders that did not give their figures) in a v3 answer's metadata, as the
/// gathered group list names them.
void note_unanswered(json& answer, std::vector<std::string> unanswered) {
  if (unanswered.empty()) return;
  std::sort(unanswered.begin(), unanswered.end());
  answer["metadata"]["unanswered_brokers"] = unanswered;
}

}  // namespace

void v3_list_partitions(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    with_leader_figures(call.shared_from_this(), std::move(t),
                        [](api::call& call2, broker::topic_description t2, std::vector<std::string> unanswered) {
      const std::string& cluster = call2.params["cluster_id"];
      json data = json::array();
      for (const auto& p : t2.partitions) data.push_back(partition_json(call2.base_url, cluster, t2.name, p));
      json answer = list_json("KafkaPartitionList",
                              call2.base_url + "/v3/clusters/" + cluster + "/topics/" + t2.name + "/partitions", data);
      note_unanswered(answer, std::move(unanswered));
      call2.respond_json(200, answer);
    });
  });
}

/// Answers for partition {partition_id} of {topic_name}: `done` with the topic and the partition,
/// or 404 (40401 / 40402) naming what is missing.
void with_partition(const call_ptr& c,
                    std::function<void(api::call&, const broker::topic_description&, const broker::partition_description&)> done) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto p = c->path_partition("partition_id");
  if (!p) return;
  with_topic(c, "topic_name", error_scope::partition, [p = *p, done = std::move(done)](api::call& call, broker::topic_description t) {
    const auto* d = find_partition(t, p);
    if (!d) return fail_partition_not_found(call, t, p);
    done(call, t, *d);
  });
}

void v3_get_partition(const call_ptr& c) {
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    broker::topic_description one = t;
    one.partitions = {d};
    with_leader_figures(call.shared_from_this(), std::move(one),
                        [](api::call& call2, broker::topic_description t2, std::vector<std::string> unanswered) {
      json answer = partition_json(call2.base_url, call2.params["cluster_id"], t2.name, t2.partitions.front());
      note_unanswered(answer, std::move(unanswered));
      call2.respond_json(200, answer);
    });
  });
}

/// GET .../partitions/{p}/offset?offset_type=earliest_and_latest: the partition's earliest offset
/// (log start) and latest offset (high watermark: the next offset a read_uncommitted reader sees),
/// both as the partition's leader has them (asked through with_offset_bounds).
/// offset_type takes only its default value; anything else is 400 naming it.
void v3_get_partition_offset(const call_ptr& c) {
  if (auto t = c->query.find("offset_type"); t != c->query.end() && t->second != "earliest_and_latest") {
    return c->fail(400, ec::invalid_request,
                   "query parameter offset_type must be earliest_and_latest, got \"" + t->second + "\"");
  }
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    model::topic_partition tp{t.name, d.partition};
    with_offset_bounds(call.shared_from_this(), tp, [topic = t.name, p = d.partition.value()](
                                                        api::call& call2, int64_t earliest, int64_t latest) {
      const std::string& cluster = call2.params["cluster_id"];
      const std::string partition = std::to_string(p);
      call2.respond_json(200, json{{"kind", "KafkaPartitionWithOffsets"},
                                   {"metadata", {{"self", call2.base_url + "/v3/clusters/" + cluster + "/topics/" + topic +
                                                              "/partitions/" + partition + "/offset"},
                                                 {"resource_name", "crn:///kafka=" + cluster + "/topic=" + topic +
                                                                       "/partition=" + partition}}},
                                   {"cluster_id", cluster},
                                   {"topic_name", topic},
                                   {"partition_id", p},
                                   {"earliest_offset", earliest},
                                   {"latest_offset", latest}});
    });
  });
}

/// The {broker_id} path parameter as a number in its canonical spelling (no sign, no leading
/// zero: "04" names no broker); nullopt when it is not one.
std::optional<int32_t> path_broker_id(api::call& call) {
  const std::string& text = call.params["broker_id"];
  if (text.size() > 1 && text[0] == '0') return std::nullopt;
  int32_t id = -1;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (err != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

/// The {broker_id} path parameter as a broker; nullopt (404 answered) when it is none of them.
std::optional<broker::broker_description> path_broker(api::call& call) {
  const std::string& text = call.params["broker_id"];
  const auto id = path_broker_id(call);
  std::string known;
  for (const auto& b : call.broker().admin().list_brokers()) {
    if (id == b.node_id) return b;
    known += (known.empty() ? "" : ", ") + std::to_string(b.node_id);
  }
  call.fail(404, ec::not_found, "broker \"" + text + "\" does not exist; this cluster's brokers: " + known);
  return std::nullopt;
}

void v3_list_brokers(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const std::string& cluster = c->params["cluster_id"];
  json data = json::array();
  const auto voters = voter_ids(c->broker());
  for (const auto& b : c->broker().admin().list_brokers()) data.push_back(broker_json(c->base_url, cluster, b, voters.contains(b.node_id)));
  c->respond_json(200, list_json("KafkaBrokerList", c->base_url + "/v3/clusters/" + cluster + "/brokers", data));
}

/// GET .../brokers/{broker_id}: a registered broker, or a voter that never registered as one (a
/// dedicated controller), so the cluster's `controller` link always resolves.
void v3_get_broker(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const std::string& cluster = c->params["cluster_id"];
  const broker::broker& b = c->broker();
  const auto id = path_broker_id(*c);
  const auto brokers = b.admin().list_brokers();
  const bool registered = std::any_of(brokers.begin(), brokers.end(), [&](const auto& d) { return id == d.node_id; });
  const auto voters = voter_ids(b);
  if (id && !registered && voters.contains(*id)) {
    return c->respond_json(200, dedicated_controller_json(c->base_url, cluster, *id, b.admin().controller_id() == *id));
  }
  if (auto d = path_broker(*c)) c->respond_json(200, broker_json(c->base_url, cluster, *d, voters.contains(d->node_id)));
}

void v3_list_replicas(const call_ptr& c) {
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (int32_t r : d.replicas) data.push_back(replica_json(call.base_url, cluster, t.name, d, r));
    call.respond_json(200, list_json("KafkaReplicaList", call.base_url + "/v3/clusters/" + cluster + "/topics/" + t.name +
                                                             "/partitions/" + std::to_string(d.partition.value()) + "/replicas",
                                     data));
  });
}

void v3_get_replica(const call_ptr& c) {
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    const auto id = path_broker_id(call);
    for (int32_t r : d.replicas) {
      if (id == r) return call.respond_json(200, replica_json(call.base_url, call.params["cluster_id"], t.name, d, r));
    }
    call.fail(404, ec::not_found, "partition " + std::to_string(d.partition.value()) + " of topic \"" + t.name +
                                      "\" has no replica on broker \"" + call.params["broker_id"] + "\"");
  });
}

/// GET .../topics/-/configs: the configs of every topic (internal ones too, as the v3 topic
/// list), each entry naming its topic_name.
void v3_list_all_topic_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  describe_all(c, true, [](api::call& call, std::vector<broker::topic_description> topics) {
    keep_authorized(call, security::acl_operation::describe_configs, topics);
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (const auto& t : topics) {
      for (const auto& e : t.configs) data.push_back(config_json(call.base_url, cluster, t.name, e));
    }
    call.respond_json(200, list_json("KafkaTopicConfigList", call.base_url + "/v3/clusters/" + cluster + "/topics/-/configs", data));
  });
}

/// POST .../topics/-/configs:alter (Confluent's AlterMultipleTopicsConfigs): {"data":
/// [{"topic_name", "configs": [{"name", "value", "operation"}]}], "validate_only"}. An unknown
/// topic or config name is 404 for the whole request and nothing changes. Each topic's changes
/// are then one alter (only checked with validate_only, which changes nothing): 204 when all
/// succeed, else 207 {"failures": [{topic_name, error_code, message}]} naming those that did not,
/// in topic name order (Confluent answers a validate_only refusal with the same 207).
void v3_alter_all_topic_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto req = parse_alter_configs(c->request.body, true);
  if (!req.ok()) return c->fail(req.error());
  auto by_topic = std::make_shared<std::map<std::string, std::map<std::string, std::optional<std::string>>>>(
      std::move(req->by_topic));
  const bool validate_only = req->validate_only;
  for (const auto& entry : *by_topic) {
    if (!c->require(security::resource_type::topic, entry.first, security::acl_operation::alter_configs)) return;
  }
  describe_all(c, true, [by_topic, validate_only](api::call& call, std::vector<broker::topic_description> topics) {
    for (const auto& entry : *by_topic) {
      const std::string& topic = entry.first;
      auto t = std::find_if(topics.begin(), topics.end(), [&topic](const auto& d) { return d.name == topic; });
      if (t == topics.end()) return call.fail(404, ec::topic_not_found, "topic \"" + topic + "\" not found");
      for (const auto& change : entry.second) {
        const std::string& name = change.first;
        const bool known = std::any_of(t->configs.begin(), t->configs.end(), [&name](const auto& e) { return e.name == name; });
        if (!known) return fail_config_not_found(call, topic, name);
      }
    }
    if (by_topic->empty()) return call.respond_no_content();
    struct gather {
      size_t remaining = 0;
      std::vector<std::pair<std::string, broker::error>> failures;   // in topic name order
    };
    auto g = std::make_shared<gather>();
    g->remaining = by_topic->size();
    auto self = call.shared_from_this();
    for (const auto& entry : *by_topic) {
      const std::string topic = entry.first;
      call.broker().admin().alter_topic_configs(topic, entry.second, validate_only, [self, g, topic](
                                                                           broker::result<broker::topic_description> r) {
        self->later([g, topic, r = std::move(r)](api::call& call2) {
          if (!r.ok()) g->failures.emplace_back(topic, r.error());
          if (--g->remaining > 0) return;
          if (g->failures.empty()) return call2.respond_no_content();
          std::sort(g->failures.begin(), g->failures.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
          json failures = json::array();
          for (const auto& [name, e] : g->failures) {
            const api_error a = to_api_error(e, error_scope::topic, call2.topic_exists(name));
            failures.push_back({{"topic_name", name}, {"error_code", a.error_code}, {"message", a.message}});
          }
          call2.respond_json(207, {{"failures", failures}});
        });
      });
    }
  });
}

/// GET .../brokers/{broker_id}/partition-replicas: every replica the broker holds (KafkaReplicaList).
void v3_list_broker_replicas(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto b = path_broker(*c);
  if (!b) return;
  const int32_t id = b->node_id;
  describe_all(c, true, [id](api::call& call, std::vector<broker::topic_description> topics) {
    const std::string& cluster = call.params["cluster_id"];
    const bool self = id == call.broker().config().node_id;
    json data = json::array();
    for (const auto& t : topics) {
      for (const auto& p : t.partitions) {
        if (std::find(p.replicas.begin(), p.replicas.end(), id) == p.replicas.end()) continue;
        data.push_back(replica_json(call.base_url, cluster, t.name, p, id));
        // ringlog: the broker answering for itself gives its replica's size on disk (issue 33)
        if (self && p.replica_here) data.back()["size_bytes"] = p.size_bytes;
      }
    }
    call.respond_json(200, list_json("KafkaReplicaList", call.base_url + "/v3/clusters/" + cluster + "/brokers/" +
                                                             std::to_string(id) + "/partition-replicas",
                                     data));
  });
}

}  // namespace ringlog::gateway::routes
