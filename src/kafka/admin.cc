// Metadata, CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster, FindCoordinator.

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <set>

#include "handlers.h"

namespace ringlog::kafka::detail {

namespace {

/// A topic's metadata answer, or the error to give for it. `name` is null (Metadata v12+) for a
/// topic named by an id that is unknown or that the principal may not describe; `topic_id` is the
/// id the request named it by, else the topic's own once described.
struct topic_lookup {
  std::optional<std::string> name;
  std::optional<broker::topic_description> description;
  int16_t error = error_code::none;
  protocol::uuid topic_id;
};

protocol::metadata_response_data::metadata_response_topic to_metadata_topic(const topic_lookup& t) {
  protocol::metadata_response_data::metadata_response_topic out;
  out.name = t.name;
  out.error_code = t.error;
  out.topic_id = t.topic_id;
  if (!t.description) return out;
  const auto& d = *t.description;
  out.topic_id = parse_uuid(d.topic_id);
  out.is_internal = d.is_internal;
  for (const auto& p : d.partitions) {
    protocol::metadata_response_data::metadata_response_partition mp;
    mp.partition_index = p.partition.value();
    mp.leader_id = p.leader;
    // Kafka: a partition without a leader (its whole ISR is gone) says LEADER_NOT_AVAILABLE.
    if (p.leader < 0) mp.error_code = error_code::leader_not_available;
    mp.leader_epoch = p.leader_epoch.value();
    mp.replica_nodes = p.replicas;
    mp.isr_nodes = p.in_sync_replicas;
    out.partitions.push_back(std::move(mp));
  }
  return out;
}

/// Describes `name`, creating it first when it is missing and `auto_create` allows (Kafka
/// creates topics on Metadata when auto.create.topics.enable and the client allows it).
void lookup_topic(broker::broker& b, std::string name, bool auto_create, std::function<void(topic_lookup)> done) {
  auto describe = [&b, name, done](int16_t error_if_missing) {
    b.admin().describe_topic(name, [name, done, error_if_missing](broker::result<broker::topic_description> d) {
      topic_lookup out{name, std::nullopt, error_code::none, {}};
      if (d.ok()) {
        out.description = std::move(d).value();
      } else {
        out.error = d.error().code == broker::errc::unknown_topic_or_partition ? error_if_missing : code_of(d.error());
      }
      done(std::move(out));
    });
  };
  if (b.admin().topic_exists(name) || !auto_create) return describe(error_code::unknown_topic_or_partition);
  if (!broker::validate_topic_name(name).ok()) {
    return done(topic_lookup{name, std::nullopt, error_code::invalid_topic_exception, {}});
  }
  broker::create_topic_request create;
  create.name = name;
  b.admin().create_topic(std::move(create), [name, done, describe](broker::result<broker::topic_description> created) {
    if (created.ok()) return done(topic_lookup{name, std::move(created).value(), error_code::none, {}});
    if (created.error().code == broker::errc::topic_already_exists) return describe(error_code::unknown_topic_or_partition);
    done(topic_lookup{name, std::nullopt, code_of(created.error()), {}});
  });
}

/// KIP-599: the first version of CreateTopics, CreatePartitions and DeleteTopics whose clients
/// are refused (THROTTLING_QUOTA_EXCEEDED) past controller_mutation_rate; older ones are admitted
/// and only throttled (Kafka's ControllerMutationQuotaManager, strict from these versions).
constexpr int16_t create_topics_strict_quota_version = 6;
constexpr int16_t create_partitions_strict_quota_version = 3;
/// CreatePartitions' field for the new partition count (CreatePartitionsTopic.Count), as its
/// errors name it (the broker's default is REST v3's partitions_count).
constexpr std::string_view kafka_count_field = "count";
constexpr int16_t delete_topics_strict_quota_version = 5;

/// Charges `partitions` created or deleted against the client's controller_mutation_rate and
/// raises `throttle` to the throttle time that asks. With `strict`, a client over its quota is
/// refused (nothing charged): the message to answer with; nullopt = go ahead.
std::optional<std::string> controller_mutation_refused(const request_context& ctx, double partitions, bool strict,
                                                       std::atomic<int64_t>& throttle) {
  const int64_t ms = ctx.broker_api().security().charge_controller_mutations(quota_user(ctx), ctx.client_id, partitions, strict);
  int64_t seen = throttle.load();
  while (ms > seen && !throttle.compare_exchange_weak(seen, ms)) {
  }
  if (!strict || ms == 0) return std::nullopt;
  return "controller_mutation_rate exceeded for user " + std::string(quota_user(ctx)) + ", client-id '" +
         ctx.client_id + "': retry in " + std::to_string(ms) + " ms (KIP-599)";
}

/// A topic CreateTopics refuses with `code` and `message`: its partitions, replication factor and
/// configs are left unknown (-1, null), as Kafka answers a topic it did not create.
void refuse_topic(protocol::create_topics_response_data::creatable_topic_result& slot, int16_t code,
                  std::string message) {
  slot.error_code = code;
  slot.error_message = std::move(message);
  slot.num_partitions = -1;
  slot.replication_factor = -1;
  slot.configs = std::nullopt;
}

/// One entry of a CreateTopics or CreatePartitions request to answer: `index` in the request.
struct named_entry {
  size_t index = 0;
  bool duplicated = false;   ///< its name is given more than once in the request
};

/// The entries of a request naming topics (CreateTopics, CreatePartitions) to answer: one per
/// distinct name, at its first place, in request order (as DeleteTopics answers a repeated name).
/// A name given more than once is `duplicated`: Kafka's ControllerApis.createTopics and
/// createPartitions (ZkAdminManager before them) answer it INVALID_REQUEST "Duplicate topic
/// name." once, whatever the caller's rights, and do nothing for it. Bounded by the request.
template <class Topics>
std::vector<named_entry> distinct_named_entries(const Topics& topics) {
  std::map<std::string_view, size_t> counts;
  for (const auto& t : topics) ++counts[t.name];
  std::set<std::string_view> seen;
  std::vector<named_entry> out;
  for (size_t i = 0; i < topics.size(); ++i) {
    if (seen.insert(topics[i].name).second) out.push_back({i, counts.at(topics[i].name) > 1});
  }
  return out;
}

/// Kafka's message for a name given twice (ControllerApis).
constexpr const char* duplicate_topic_name_message = "Duplicate topic name.";

/// The names of the configs given with a null value, comma-separated in request order ("" = none).
std::string null_config_names(const std::vector<protocol::create_topics_request_data::creatable_topic_config>& configs) {
  std::string names;
  for (const auto& c : configs) {
    if (!c.value) names += (names.empty() ? "" : ",") + c.name;
  }
  return names;
}

}  // namespace

/// A broker's Kafka address, as Metadata, DescribeCluster and FindCoordinator name it.
struct kafka_node {
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
  std::string rack;
};

/// The brokers Kafka clients may connect to: every registered broker that is not fenced and has
/// an endpoint of the listener name the client connected on (Kafka's Metadata lists alive brokers only), this node always (its own
/// listener answers even before its registration names it).
std::vector<kafka_node> kafka_nodes(const request_context& ctx) {
  const auto& o = ctx.options();
  std::vector<kafka_node> out;
  bool self_listed = false;
  for (const auto& b : ctx.broker_api().admin().list_brokers()) {
    if (b.node_id == o.node_id) {
      out.push_back({o.node_id, o.advertised_host, o.advertised_port, b.rack});
      self_listed = true;
      continue;
    }
    if (b.state == "fenced") continue;
    const auto* endpoint = b.kafka_endpoint(o.listener_name);
    if (endpoint == nullptr) continue;   // no listener of this name on that broker (Kafka omits it too)
    out.push_back({b.node_id, endpoint->host, endpoint->port, b.rack});
  }
  if (!self_listed) out.push_back({o.node_id, o.advertised_host, o.advertised_port, ""});
  return out;
}

/// The controller id Kafka clients are told (Metadata, DescribeCluster): the active controller
/// when it is a broker they can reach, else this broker, which forwards admin writes to it. A
/// dedicated controller (process.roles=controller) has no client listener, so naming it would
/// send admin clients to a node absent from the brokers list (Kafka's KRaft brokers answer a
/// live broker's id for the same reason).
int32_t client_controller_id(const request_context& ctx, const std::vector<kafka_node>& nodes) {
  const int32_t active = ctx.broker_api().admin().controller_id();
  if (active < 0) return active;
  for (const auto& n : nodes) {
    if (n.node_id == active) return active;
  }
  return ctx.options().node_id;
}

/// Metadata names topics by id from this version on (KIP-516); v10-11 carry the field unused.
constexpr int16_t metadata_topic_id_version = 12;

namespace {

/// `nodes` as a response's broker entries, in order: `id` is the entry's node id field
/// (Metadata's node_id, DescribeCluster's broker_id); a node without a rack has a null one.
template <class Broker>
std::vector<Broker> broker_entries(const std::vector<kafka_node>& nodes, int32_t Broker::*id) {
  std::vector<Broker> out;
  for (const auto& n : nodes) {
    Broker entry;
    entry.*id = n.node_id;
    entry.host = n.host;
    entry.port = n.port;
    if (!n.rack.empty()) entry.rack = n.rack;
    out.push_back(std::move(entry));
  }
  return out;
}

/// The Metadata answer: the brokers, the controller, and `found` in order, with each topic's
/// authorized operations when `topic_operations` (v8+) and the cluster's when `cluster_operations`
/// (v8-10).
void answer_metadata(const request_context& ctx, const std::vector<topic_lookup>& found, bool topic_operations,
                     bool cluster_operations) {
  protocol::metadata_response_data out;
  const auto& o = ctx.options();
  const auto nodes = kafka_nodes(ctx);
  out.brokers = broker_entries(nodes, &protocol::metadata_response_data::metadata_response_broker::node_id);
  out.cluster_id = o.cluster_id;
  out.controller_id = client_controller_id(ctx, nodes);
  for (const auto& t : found) {
    out.topics.push_back(to_metadata_topic(t));
    if (topic_operations && t.name && t.error != error_code::topic_authorization_failed) {
      out.topics.back().topic_authorized_operations = ctx.authorized_operations(security::resource_type::topic, *t.name);
    }
  }
  if (cluster_operations) {
    out.cluster_authorized_operations =
        ctx.authorized_operations(security::resource_type::cluster, security::cluster_resource_name);
  }
  ctx.answer(out);
}

/// The topics of a Metadata v12+ request that names any by id (KIP-516), as Kafka's
/// KafkaApis.handleTopicMetadataRequest takes them: by their ids alone, each distinct non-zero id
/// once in request order; the names are not read, so an entry with a name and an id asks for the
/// id's topic, and one with only a name is left out. An unknown id answers UNKNOWN_TOPIC_ID; a
/// topic the principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED with its id and no
/// name (Kafka holds ids not secret, names are); the rest are described (never created: they
/// exist). Slot i of `g` answers ids[i].
void metadata_by_topic_ids(const request_context& ctx, const std::vector<protocol::uuid>& ids,
                           const std::shared_ptr<gather<topic_lookup>>& g) {
  const auto names = ctx.broker_api().admin().topic_names_of_ids(ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!names[i]) {
      g->slot(i) = topic_lookup{std::nullopt, std::nullopt, error_code::unknown_topic_id, ids[i]};
      g->complete_one();
    } else if (!ctx.authorized(security::resource_type::topic, *names[i], security::acl_operation::describe)) {
      g->slot(i) = topic_lookup{std::nullopt, std::nullopt, error_code::topic_authorization_failed, ids[i]};
      g->complete_one();
    } else {
      lookup_topic(ctx.broker_api(), *names[i], false, [g, i](topic_lookup t) {
        g->slot(i) = std::move(t);
        g->complete_one();
      });
    }
  }
}

/// The distinct non-zero topic ids a Metadata request names, in request order; empty when it
/// names none or is older than v12 (then it is answered by name).
std::vector<protocol::uuid> metadata_topic_ids(const request_context& ctx, const protocol::metadata_request_data& request) {
  std::vector<protocol::uuid> ids;
  if (!request.topics || ctx.api_version < metadata_topic_id_version) return ids;
  for (const auto& t : *request.topics) {
    if (!t.topic_id.is_zero() && std::find(ids.begin(), ids.end(), t.topic_id) == ids.end()) ids.push_back(t.topic_id);
  }
  return ids;
}

/// Metadata v10-11 carry a topic id field but do not take ids, and their names are not null:
/// Kafka's KafkaApis.handleTopicMetadataRequest refuses a request naming a topic either way with
/// INVALID_REQUEST, and MetadataRequest.getErrorResponse answers it: every topic asked, with the
/// name it was given ("" for null) and its id, INVALID_REQUEST and no partitions; no brokers.
/// True when `request` was refused so.
bool refuse_metadata_topic_ids(const request_context& ctx, const protocol::metadata_request_data& request) {
  if (!request.topics || ctx.api_version >= metadata_topic_id_version) return false;
  const auto misnamed = [](const auto& t) { return !t.name || !t.topic_id.is_zero(); };
  if (std::none_of(request.topics->begin(), request.topics->end(), misnamed)) return false;
  protocol::metadata_response_data out;
  for (const auto& t : *request.topics) {
    protocol::metadata_response_data::metadata_response_topic topic;
    topic.name = t.name.value_or("");
    topic.topic_id = t.topic_id;
    topic.error_code = error_code::invalid_request;
    out.topics.push_back(std::move(topic));
  }
  ctx.answer(out);
  return true;
}

}  // namespace

void handle_metadata(const request_context& ctx, protocol::metadata_request_data request) {
  broker::broker& b = ctx.broker_api();
  const bool topic_operations = ctx.api_version >= 8 && request.include_topic_authorized_operations;
  const bool cluster_operations = ctx.api_version >= 8 && ctx.api_version <= 10 && request.include_cluster_authorized_operations;
  auto answer = [ctx, topic_operations, cluster_operations](std::vector<topic_lookup>& found) {
    answer_metadata(ctx, found, topic_operations, cluster_operations);
  };
  if (refuse_metadata_topic_ids(ctx, request)) return;
  const bool all = !request.topics || (ctx.api_version == 0 && request.topics->empty());
  if (auto ids = all ? std::vector<protocol::uuid>{} : metadata_topic_ids(ctx, request); !ids.empty()) {
    auto g = std::make_shared<gather<topic_lookup>>(ids.size(), answer);
    return metadata_by_topic_ids(ctx, ids, g);
  }
  std::vector<std::string> names;
  if (all) {
    // DESCRIBE on each topic (KafkaApis.getTopicMetadata): the others are left out, unnamed.
    for (auto& name : b.admin().list_topics(true)) {
      if (ctx.authorized(security::resource_type::topic, name, security::acl_operation::describe)) {
        names.push_back(std::move(name));
      }
    }
  } else {
    for (const auto& t : *request.topics) names.push_back(t.name.value_or(""));
  }
  // Kafka: Metadata v0-3 always allowed auto-creation; v4+ carries the client's wish.
  const bool auto_create =
      !all && b.config().auto_create_topics_enable && (ctx.api_version < 4 || request.allow_auto_topic_creation);
  // Auto-creation needs CREATE on the cluster or on the topic; without it a missing topic
  // answers TOPIC_AUTHORIZATION_FAILED, as one the principal may not describe (never revealed).
  // Asked only for a missing topic and not logged (Kafka's logIfDenied=false): a producer's
  // Metadata refresh of a topic that exists is no refusal (the breaker's t3_noise.py).
  auto may_create = [&ctx](const std::string& topic) {
    return broker::may_create_topic(ctx.broker_api().security(), ctx.principal, ctx.client_host, topic);
  };
  auto g = std::make_shared<gather<topic_lookup>>(names.size(), answer);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) {   // a null name without an id (v12+; v10-11 refused it above)
      g->slot(i) = topic_lookup{"", std::nullopt, error_code::unknown_topic_id, {}};
      g->complete_one();
      continue;
    }
    if (!all && !ctx.authorized(security::resource_type::topic, names[i], security::acl_operation::describe)) {
      g->slot(i) = topic_lookup{names[i], std::nullopt, error_code::topic_authorization_failed, {}};
      g->complete_one();
      continue;
    }
    const bool creatable = auto_create && !b.admin().topic_exists(names[i]) && may_create(names[i]);
    if (auto_create && !creatable && !b.admin().topic_exists(names[i])) {
      g->slot(i) = topic_lookup{names[i], std::nullopt, error_code::topic_authorization_failed, {}};
      g->complete_one();
      continue;
    }
    lookup_topic(b, names[i], creatable, [g, i](topic_lookup t) {
      g->slot(i) = std::move(t);
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

void handle_create_topics(const request_context& ctx, protocol::create_topics_request_data request) {
  using result_t = protocol::create_topics_response_data::creatable_topic_result;
  broker::broker& b = ctx.broker_api();
  const auto entries = distinct_named_entries(request.topics);
  const size_t n = entries.size();
  auto throttle = std::make_shared<std::atomic<int64_t>>(0);
  auto g = std::make_shared<gather<result_t>>(n, [ctx, throttle](std::vector<result_t>& results) {
    protocol::create_topics_response_data out;
    out.topics = std::move(results);
    out.throttle_time_ms = static_cast<int32_t>(throttle->load());
    ctx.answer(out);
  });
  const bool strict_quota = ctx.api_version >= create_topics_strict_quota_version;
  for (size_t i = 0; i < n; ++i) {
    auto& t = request.topics[entries[i].index];
    result_t& slot = g->slot(i);
    slot.name = t.name;
    if (entries[i].duplicated) {
      refuse_topic(slot, error_code::invalid_request, duplicate_topic_name_message);
      g->complete_one();
      continue;
    }
    // CREATE on the cluster, else on each topic (ControllerApis.createTopics), every door's rule.
    if (!broker::may_create_topic(b.security(), ctx.principal, ctx.client_host, t.name)) {
      ctx.log_denial(security::acl_action{security::resource_type::topic, t.name, security::acl_operation::create});
      refuse_topic(slot, error_code::topic_authorization_failed,
                   "CREATE on the cluster or the topic is not allowed for " + ctx.principal.to_string());
      g->complete_one();
      continue;
    }
    if (!t.assignments.empty()) {
      slot.error_code = error_code::invalid_replica_assignment;
      slot.error_message = "manual replica assignments are not supported: the controller places replicas (move them "
                            "afterwards with AlterPartitionReassignments)";
      g->complete_one();
      continue;
    }
    if (auto nulls = null_config_names(t.configs); !nulls.empty()) {
      // Kafka's ReplicationControlManager: INVALID_CONFIG naming every config given without a
      // value (a null was taken as "the default" here, silently; the breaker of session 34).
      refuse_topic(slot, error_code::invalid_config, "Null value not supported for topic configs: " + nulls);
      g->complete_one();
      continue;
    }
    const int32_t partitions = t.num_partitions != -1 ? t.num_partitions : b.config().num_partitions;
    if (auto refused = request.validate_only ? std::nullopt
                                             : controller_mutation_refused(ctx, partitions, strict_quota, *throttle)) {
      refuse_topic(slot, error_code::throttling_quota_exceeded, std::move(*refused));
      g->complete_one();
      continue;
    }
    broker::create_topic_request create;
    create.name = t.name;
    if (t.num_partitions != -1) create.partitions_count = t.num_partitions;
    if (t.replication_factor != -1) create.replication_factor = t.replication_factor;
    // Every value is set: a null one refused the topic above (null_config_names).
    for (const auto& c : t.configs) create.configs[c.name] = *c.value;
    create.validate_only = request.validate_only;
    create.partitions_field = "num_partitions";   // CreateTopics' NumPartitions, as errors name it
    b.admin().create_topic(std::move(create), [g, i](broker::result<broker::topic_description> created) {
      result_t& r = g->slot(i);
      if (!created.ok()) {
        refuse_topic(r, code_of(created.error()), created.error().message);
      } else {
        const auto& d = created.value();
        r.topic_id = parse_uuid(d.topic_id);
        r.num_partitions = static_cast<int32_t>(d.partitions.size());
        r.replication_factor = d.replication_factor;
        std::vector<protocol::create_topics_response_data::creatable_topic_configs> configs;
        for (const auto& c : d.configs) {
          protocol::create_topics_response_data::creatable_topic_configs e;
          e.name = c.name;
          e.value = c.value;
          e.read_only = c.read_only;
          e.config_source = config_source_code(c.source);
          configs.push_back(std::move(e));
        }
        r.configs = std::move(configs);
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

namespace {

/// DeleteTopics names each topic by name or by id from this version on (KIP-516).
constexpr int16_t delete_topics_topic_id_version = 6;

using deletable_topic_result = protocol::delete_topics_response_data::deletable_topic_result;
using uuid_bytes = std::array<uint8_t, 16>;

/// One DeleteTopics entry as asked: by name (every entry before v6), by id, or with both or
/// neither (refused). For one by id, `resolved` is the name of the current topic of that id
/// (nullopt: no topic has it).
struct delete_entry {
  std::optional<std::string> name;
  protocol::uuid topic_id;
  bool by_id = false;
  std::optional<std::string> resolved;
};

/// One answer of a DeleteTopics response: refused already (answer.error_code set), or a topic
/// to delete (`pending`) by its name, only while its id is answer.topic_id when `by_id`.
struct delete_plan {
  deletable_topic_result answer;
  bool pending = false;
  bool by_id = false;
};

/// How many entries by name name each name, how many by id name each id, and the names the
/// entries by id resolve to (with their ids), for the rules across entries.
struct delete_counts {
  std::map<std::string, int> names;
  std::map<uuid_bytes, int> ids;
  std::map<std::string, protocol::uuid> named_by_id;
};

/// The entries of a DeleteTopics request in request order, those by id resolved to their
/// topics' names in one lookup.
std::vector<delete_entry> delete_entries(const request_context& ctx, const protocol::delete_topics_request_data& request) {
  std::vector<delete_entry> out;
  if (ctx.api_version < delete_topics_topic_id_version) {
    for (const auto& name : request.topic_names) out.push_back({name, {}, false, std::nullopt});
    return out;
  }
  std::vector<protocol::uuid> ids;
  for (const auto& t : request.topics) {
    const bool by_id = !t.name && !t.topic_id.is_zero();
    out.push_back({t.name, t.topic_id, by_id, std::nullopt});
    if (by_id) ids.push_back(t.topic_id);
  }
  const auto names = ctx.broker_api().admin().topic_names_of_ids(ids);
  size_t next = 0;
  for (auto& t : out) {
    if (t.by_id) t.resolved = names[next++];
  }
  return out;
}

delete_counts count_delete_entries(const std::vector<delete_entry>& entries) {
  delete_counts counts;
  for (const auto& e : entries) {
    if (e.by_id) {
      ++counts.ids[e.topic_id.value];
      if (e.resolved) counts.named_by_id.emplace(*e.resolved, e.topic_id);
    } else if (e.name && e.topic_id.is_zero()) {
      ++counts.names[*e.name];
    }
  }
  return counts;
}

delete_plan refused_delete(std::optional<std::string> name, protocol::uuid topic_id, int16_t code, std::string message) {
  delete_plan out;
  out.answer.name = std::move(name);
  out.answer.topic_id = topic_id;
  out.answer.error_code = code;
  out.answer.error_message = std::move(message);
  return out;
}

delete_plan pending_delete(std::string name, protocol::uuid topic_id, bool by_id) {
  delete_plan out;
  out.answer.name = std::move(name);
  out.answer.topic_id = topic_id;
  out.pending = true;
  out.by_id = by_id;
  return out;
}

/// broker::topic_deletion_rights_of for the connection's principal; a refused DELETE is logged
/// as the listener logs every refusal.
broker::topic_deletion_rights deletion_rights(const request_context& ctx, const std::string& topic) {
  const auto rights = broker::topic_deletion_rights_of(ctx.broker_api().security(), ctx.principal, ctx.client_host, topic);
  if (!rights.delete_) ctx.log_denial(security::acl_action{security::resource_type::topic, topic, security::acl_operation::delete_});
  return rights;
}

std::string delete_refusal_message(const request_context& ctx) {
  return "DELETE on the topic (or on the cluster) is not allowed for " + ctx.principal.to_string();
}

/// The answer to an entry by id named once (Kafka's ControllerApis.deleteTopics): an id no topic
/// has is UNKNOWN_TOPIC_ID; a topic the principal may not delete is TOPIC_AUTHORIZATION_FAILED,
/// named only when it may DESCRIBE it (ids are not secret, names are). nullopt: the entry by name
/// of the same topic answers for both.
std::optional<delete_plan> plan_by_id(const request_context& ctx, const delete_entry& e, const delete_counts& counts) {
  if (!e.resolved) {
    // Kafka's UNKNOWN_TOPIC_ID message.
    return refused_delete(std::nullopt, e.topic_id, error_code::unknown_topic_id, "This server does not host this topic ID.");
  }
  const auto rights = deletion_rights(ctx, *e.resolved);
  if (!rights.delete_) {
    return refused_delete(rights.describe ? e.resolved : std::nullopt, e.topic_id, error_code::topic_authorization_failed,
                          delete_refusal_message(ctx));
  }
  const auto by_name = counts.names.find(*e.resolved);
  if (by_name != counts.names.end() && by_name->second == 1) return std::nullopt;
  return pending_delete(*e.resolved, e.topic_id, true);
}

/// The answer to an entry by name named once (Kafka's ControllerApis.deleteTopics): a topic the
/// principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED, whether it exists or not; then a
/// missing one is UNKNOWN_TOPIC_OR_PARTITION; then one it may not delete is
/// TOPIC_AUTHORIZATION_FAILED; a topic an entry by id names too is INVALID_REQUEST, and neither
/// entry deletes it (said only to whom may delete it: it ties a name to an id).
delete_plan plan_by_name(const request_context& ctx, const std::string& name, const delete_counts& counts) {
  const auto rights = deletion_rights(ctx, name);
  if (!rights.describe) {
    return refused_delete(name, {}, error_code::topic_authorization_failed, delete_refusal_message(ctx));
  }
  if (!rights.delete_) {
    if (!ctx.broker_api().admin().topic_exists(name)) {
      return refused_delete(name, {}, error_code::unknown_topic_or_partition, "topic '" + name + "' does not exist");
    }
    return refused_delete(name, {}, error_code::topic_authorization_failed, delete_refusal_message(ctx));
  }
  if (auto id = counts.named_by_id.find(name); id != counts.named_by_id.end()) {
    return refused_delete(name, id->second, error_code::invalid_request,
                          "The provided topic name maps to an ID that was already supplied.");   // Kafka's message
  }
  return pending_delete(name, {}, false);
}

/// One answer per distinct entry, in request order (Kafka shuffles its answers; the order here is
/// the request's, a repeated entry answered once at its first place): a name or id named twice
/// is INVALID_REQUEST and deletes nothing; an entry with both a name and an id, or neither, is
/// INVALID_REQUEST; the others as plan_by_name and plan_by_id say.
std::vector<delete_plan> plan_deletes(const request_context& ctx, const std::vector<delete_entry>& entries) {
  const delete_counts counts = count_delete_entries(entries);
  std::set<std::string> names_seen;
  std::set<uuid_bytes> ids_seen;
  std::vector<delete_plan> out;
  for (const auto& e : entries) {
    if (!e.by_id && !e.topic_id.is_zero()) {
      out.push_back(refused_delete(e.name, e.topic_id, error_code::invalid_request,
                                   "You may not specify both topic name and topic id."));
    } else if (!e.by_id && !e.name) {
      out.push_back(refused_delete(std::nullopt, {}, error_code::invalid_request, "Neither topic name nor id were specified."));
    } else if (e.by_id) {
      if (!ids_seen.insert(e.topic_id.value).second) continue;
      if (counts.ids.at(e.topic_id.value) > 1) {
        out.push_back(refused_delete(std::nullopt, e.topic_id, error_code::invalid_request, "Duplicate topic id."));
      } else if (auto plan = plan_by_id(ctx, e, counts)) {
        out.push_back(std::move(*plan));
      }
    } else {
      if (!names_seen.insert(*e.name).second) continue;
      if (counts.names.at(*e.name) > 1) {
        out.push_back(refused_delete(e.name, {}, error_code::invalid_request, "Duplicate topic name."));
      } else {
        out.push_back(plan_by_name(ctx, *e.name, counts));
      }
    }
  }
  return out;
}

}  // namespace

void handle_delete_topics(const request_context& ctx, protocol::delete_topics_request_data request) {
  broker::broker& b = ctx.broker_api();
  const auto plans = plan_deletes(ctx, delete_entries(ctx, request));
  auto throttle = std::make_shared<std::atomic<int64_t>>(0);
  auto g = std::make_shared<gather<deletable_topic_result>>(
      plans.size(), [ctx, throttle](std::vector<deletable_topic_result>& results) {
        protocol::delete_topics_response_data out;
        out.responses = std::move(results);
        out.throttle_time_ms = static_cast<int32_t>(throttle->load());
        ctx.answer(out);
      });
  const bool strict_quota = ctx.api_version >= delete_topics_strict_quota_version;
  const bool answer_ids = ctx.api_version >= delete_topics_topic_id_version;
  for (size_t i = 0; i < plans.size(); ++i) {
    const delete_plan& t = plans[i];
    g->slot(i) = t.answer;
    if (!t.pending) {
      g->complete_one();
      continue;
    }
    const std::string name = *t.answer.name;
    // KIP-599 counts the partitions deleted: the topic's count first.
    b.admin().describe_topic(name, [&b, ctx, g, i, throttle, strict_quota, answer_ids, name, by_id = t.by_id](
                                       broker::result<broker::topic_description> d) {
      // v6 answers carry the topic's id, however it was named (ControllerApis.deleteTopics).
      if (answer_ids && d.ok() && !by_id) g->slot(i).topic_id = parse_uuid(d->topic_id);
      const double partitions = d.ok() ? static_cast<double>(d->partitions.size()) : 0;
      if (auto refused = controller_mutation_refused(ctx, partitions, strict_quota, *throttle)) {
        g->slot(i).error_code = error_code::throttling_quota_exceeded;
        g->slot(i).error_message = std::move(*refused);
        return g->complete_one();
      }
      auto deleted = [g, i, by_id](broker::result<void> r) {
        if (!r.ok()) {
          // By id, a topic gone since its id was resolved is an unknown id.
          const bool gone = by_id && r.error().code == broker::errc::unknown_topic_or_partition;
          g->slot(i).error_code = gone ? error_code::unknown_topic_id : code_of(r.error());
          g->slot(i).error_message = r.error().message;
        }
        g->complete_one();
      };
      if (by_id) return b.admin().delete_topic_of_id(name, g->slot(i).topic_id, std::move(deleted));
      b.admin().delete_topic(name, std::move(deleted));
    });
  }
  g->finish_if_empty();
}

void handle_create_partitions(const request_context& ctx, protocol::create_partitions_request_data request) {
  using result_t = protocol::create_partitions_response_data::create_partitions_topic_result;
  broker::broker& b = ctx.broker_api();
  const auto entries = distinct_named_entries(request.topics);
  const size_t n = entries.size();
  auto throttle = std::make_shared<std::atomic<int64_t>>(0);
  auto g = std::make_shared<gather<result_t>>(n, [ctx, throttle](std::vector<result_t>& results) {
    protocol::create_partitions_response_data out;
    out.results = std::move(results);
    out.throttle_time_ms = static_cast<int32_t>(throttle->load());
    ctx.answer(out);
  });
  const bool strict_quota = ctx.api_version >= create_partitions_strict_quota_version;
  for (size_t i = 0; i < n; ++i) {
    const auto& t = request.topics[entries[i].index];
    g->slot(i).name = t.name;
    if (entries[i].duplicated) {
      g->slot(i).error_code = error_code::invalid_request;
      g->slot(i).error_message = duplicate_topic_name_message;
      g->complete_one();
      continue;
    }
    if (!ctx.authorized(security::resource_type::topic, t.name, security::acl_operation::alter)) {
      g->slot(i).error_code = error_code::topic_authorization_failed;
      g->slot(i).error_message = "ALTER on the topic is not allowed for " + ctx.principal.to_string();
      g->complete_one();
      continue;
    }
    if (t.assignments && !t.assignments->empty()) {
      g->slot(i).error_code = error_code::invalid_replica_assignment;
      g->slot(i).error_message = "manual replica assignments are not supported: the controller places replicas (move them "
                            "afterwards with AlterPartitionReassignments)";
      g->complete_one();
      continue;
    }
    auto record = [g, i](const broker::error& e) {
      g->slot(i).error_code = code_of(e);
      g->slot(i).error_message = e.message;
    };
    if (request.validate_only) {
      // The broker's create_partitions has no dry run: check the rule it applies (never fewer).
      b.admin().describe_topic(t.name, [g, i, count = t.count, record](broker::result<broker::topic_description> d) {
        if (!d.ok()) {
          record(d.error());
        } else if (count <= static_cast<int32_t>(d->partitions.size())) {
          g->slot(i).error_code = error_code::invalid_partitions;
          g->slot(i).error_message = "topic '" + d->name + "' has " + std::to_string(d->partitions.size()) +
                                     " partitions; " + std::string(kafka_count_field) + " must be larger (got " +
                                     std::to_string(count) + ")";
        }
        g->complete_one();
      });
      continue;
    }
    // KIP-599 counts the partitions added: the topic's count first.
    b.admin().describe_topic(t.name, [&b, ctx, g, i, throttle, strict_quota, record, name = t.name, count = t.count](
                                 broker::result<broker::topic_description> now) {
      const double added = now.ok() ? std::max<double>(count - static_cast<double>(now->partitions.size()), 0) : 0;
      if (auto refused = controller_mutation_refused(ctx, added, strict_quota, *throttle)) {
        g->slot(i).error_code = error_code::throttling_quota_exceeded;
        g->slot(i).error_message = std::move(*refused);
        return g->complete_one();
      }
      b.admin().create_partitions(name, count, kafka_count_field, [g, record](broker::result<broker::topic_description> d) {
        if (!d.ok()) record(d.error());
        g->complete_one();
      });
    });
  }
  g->finish_if_empty();
}

void handle_alter_partition_reassignments(const request_context& ctx,
                                          protocol::alter_partition_reassignments_request_data request) {
  // Every partition in one call (one metadata entry); the answers go back grouped by topic, in
  // the request's order (KIP-455).
  if (!ctx.authorized_cluster(security::acl_operation::alter)) {
    protocol::alter_partition_reassignments_response_data out;
    out.error_code = error_code::cluster_authorization_failed;
    out.error_message = "ALTER on the cluster is not allowed for " + ctx.principal.to_string();
    return ctx.answer(out);
  }
  std::vector<broker::partition_reassignment_target> targets;
  for (const auto& t : request.topics) {
    for (const auto& p : t.partitions) targets.push_back({t.name, p.partition_index, p.replicas});
  }
  ctx.broker_api().admin().alter_partition_reassignments(
      targets, [ctx, request = std::move(request)](broker::result<std::vector<broker::partition_reassignment_result>> r) {
        using response = protocol::alter_partition_reassignments_response_data;
        response out;
        if (!r.ok()) {
          out.error_code = code_of(r.error());
          out.error_message = r.error().message;
          return ctx.answer(out);
        }
        size_t i = 0;
        for (const auto& t : request.topics) {
          response::reassignable_topic_response topic;
          topic.name = t.name;
          for (size_t n = 0; n < t.partitions.size(); ++n, ++i) {
            const auto& one = r.value().at(i);
            response::reassignable_partition_response p;
            p.partition_index = one.partition;
            if (one.refused) {
              p.error_code = code_of(*one.refused);
              p.error_message = one.refused->message;
            }
            topic.partitions.push_back(std::move(p));
          }
          out.responses.push_back(std::move(topic));
        }
        ctx.answer(out);
      });
}

void handle_list_partition_reassignments(const request_context& ctx,
                                         protocol::list_partition_reassignments_request_data request) {
  using response = protocol::list_partition_reassignments_response_data;
  response out;
  if (!ctx.authorized_cluster(security::acl_operation::describe)) {
    out.error_code = error_code::cluster_authorization_failed;
    out.error_message = "DESCRIBE on the cluster is not allowed for " + ctx.principal.to_string();
    return ctx.answer(out);
  }
  // (topic, partition) pairs asked for; null topics: every ongoing reassignment.
  auto wanted = [&request](const std::string& topic, int32_t partition) {
    if (!request.topics) return true;
    for (const auto& t : *request.topics) {
      if (t.name != topic) continue;
      for (int32_t p : t.partition_indexes) {
        if (p == partition) return true;
      }
    }
    return false;
  };
  for (const auto& r : ctx.broker_api().admin().list_partition_reassignments("")) {
    if (!wanted(r.topic, r.partition)) continue;
    if (out.topics.empty() || out.topics.back().name != r.topic) {
      response::ongoing_topic_reassignment topic;
      topic.name = r.topic;
      out.topics.push_back(std::move(topic));
    }
    response::ongoing_partition_reassignment p;
    p.partition_index = r.partition;
    p.replicas = r.replicas;
    p.adding_replicas = r.adding_replicas;
    p.removing_replicas = r.removing_replicas;
    out.topics.back().partitions.push_back(std::move(p));
  }
  ctx.answer(out);
}

void handle_describe_cluster(const request_context& ctx, protocol::describe_cluster_request_data request) {
  protocol::describe_cluster_response_data out;
  if (!ctx.authorized_cluster(security::acl_operation::describe)) {
    out.error_code = error_code::cluster_authorization_failed;
    out.error_message = "DESCRIBE on the cluster is not allowed for " + ctx.principal.to_string();
    return ctx.answer(out);
  }
  if (request.include_cluster_authorized_operations) {
    out.cluster_authorized_operations =
        ctx.authorized_operations(security::resource_type::cluster, security::cluster_resource_name);
  }
  const auto& o = ctx.options();
  out.cluster_id = o.cluster_id;
  const auto nodes = kafka_nodes(ctx);
  out.controller_id = client_controller_id(ctx, nodes);
  out.brokers = broker_entries(nodes, &protocol::describe_cluster_response_data::describe_cluster_broker::broker_id);
  ctx.answer(out);
}

void handle_find_coordinator(const request_context& ctx, protocol::find_coordinator_request_data request) {
  // A group's coordinator is the leader of its __consumer_offsets partition, a transactional
  // id's the leader of its __transaction_state partition (key_type 1); any broker answers.
  const bool transaction = request.key_type == 1;
  const auto nodes = kafka_nodes(ctx);
  struct answer {
    int16_t error_code = error_code::none;
    std::string message;
    kafka_node node;
  };
  auto find = [&](const std::string& key) {
    answer a;
    // DESCRIBE on the group or the transactional id (KafkaApis.handleFindCoordinatorRequest).
    if (!ctx.authorized(transaction ? security::resource_type::transactional_id : security::resource_type::group, key,
                        security::acl_operation::describe)) {
      a.error_code = transaction ? error_code::transactional_id_authorization_failed : error_code::group_authorization_failed;
      a.message = "DESCRIBE on the " + std::string(transaction ? "transactional id" : "group") + " is not allowed for " +
                  ctx.principal.to_string();
      return a;
    }
    const int32_t id = transaction ? ctx.broker_api().transactions().coordinator_id(key)
                                   : ctx.broker_api().group_coordinator_id(key);
    const std::string what = transaction ? "transactional id '" + key + "'" : "group '" + key + "'";
    const char* internal = transaction ? "__transaction_state" : "__consumer_offsets";
    for (const auto& n : nodes) {
      if (n.node_id == id) {
        a.node = n;
        return a;
      }
    }
    a.error_code = error_code::coordinator_not_available;
    a.message = id < 0 ? what + " has no coordinator now (its " + internal + " partition has no leader)"
                       : what + " is coordinated by broker " + std::to_string(id) +
                             ", which has no kafka:// listener or is fenced";
    return a;
  };
  protocol::find_coordinator_response_data out;
  if (ctx.api_version < 4) {
    auto a = find(request.key);
    out.error_code = a.error_code;
    if (!a.message.empty()) out.error_message = a.message;
    out.node_id = a.node.node_id;
    out.host = a.node.host;
    out.port = a.node.port;
  } else {
    for (const auto& key : request.coordinator_keys) {
      auto a = find(key);
      protocol::find_coordinator_response_data::coordinator c;
      c.key = key;
      c.error_code = a.error_code;
      if (!a.message.empty()) c.error_message = a.message;
      c.node_id = a.node.node_id;
      c.host = a.node.host;
      c.port = a.node.port;
      out.coordinators.push_back(std::move(c));
    }
  }
  ctx.answer(out);
}

}  // namespace ringlog::kafka::detail
