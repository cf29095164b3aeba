// DescribeConfigs, AlterConfigs, IncrementalAlterConfigs (KIP-339) on topic and broker configs.
// A broker resource names a node id, or "" for the cluster-wide dynamic defaults (KIP-226); its
// dynamic configs are ConfigRecords in the metadata log (broker::alter_broker_configs).

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "handlers.h"
#include "ringlog/base/text.h"

namespace ringlog::kafka::detail {

namespace {

/// The node id a broker resource names: its decimal node id, or cluster_default_broker for "".
std::optional<int32_t> broker_of_resource(const std::string& name) {
  if (name.empty()) return broker::cluster_default_broker;
  int32_t id = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc{} || end != name.data() + name.size() || id < 0) return std::nullopt;
  return id;
}

std::string not_a_broker(const std::string& name) {
  return "broker resource '" + name + "' is not a node id (or \"\" for the cluster-wide defaults)";
}

/// One DescribeConfigs entry from a topic's or a broker's config; synonyms when asked (v1+).
template <typename Entry>
protocol::describe_configs_response_data::describe_configs_resource_result describe_entry(const Entry& c, bool read_only,
                                                                                         bool include_synonyms,
                                                                                         int16_t version) {
  protocol::describe_configs_response_data::describe_configs_resource_result e;
  e.name = c.name;
  e.value = c.value;
  e.read_only = read_only;
  // Kafka's isDefault (v0) and DEFAULT_CONFIG: neither the resource nor a broker level sets it.
  if (version == 0) e.is_default = c.source == broker::config_source::default_config;
  e.config_source = config_source_code(c.source);
  if (include_synonyms) {
    for (const auto& syn : c.synonyms) {
      protocol::describe_configs_response_data::describe_configs_synonym y;
      y.name = syn.name;
      y.value = syn.value;
      y.source = config_source_code(syn.source);
      e.synonyms.push_back(std::move(y));
    }
  }
  return e;
}

bool wanted(const std::optional<std::vector<std::string>>& keys, const std::string& name) {
  if (!keys || keys->empty()) return true;
  for (const auto& k : *keys) {
    if (k == name) return true;
  }
  return false;
}

using alter_result = protocol::alter_configs_response_data::alter_configs_resource_response;

/// KIP-339's operation codes in IncrementalAlterConfigs.
constexpr int8_t op_set = 0, op_delete = 1, op_append = 2, op_subtract = 3;

/// The configs whose type is LIST in Kafka's ConfigDef among those ringlog serves: the only ones
/// APPEND and SUBTRACT apply to (Kafka answers any other INVALID_CONFIG... "not allowed").
bool is_list_config(std::string_view name) { return name == "cleanup.policy" || name == "log.cleanup.policy"; }

/// The items of a LIST config value (base::split_list), blank items left out.
/// "compact, delete" -> {"compact", "delete"}.
std::vector<std::string> list_items(std::string_view list) {
  std::vector<std::string> out;
  for (std::string_view item : base::split_list(list)) {
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

/// A list config's value after APPEND or SUBTRACT of `value` (comma-separated) to `current`, as
/// Kafka's ConfigAdminManager computes it: APPEND adds each item not already present, at the end;
/// SUBTRACT removes every occurrence of each item. Items compare trimmed (list_items).
std::string list_config_after(std::string_view current, int8_t operation, std::string_view value) {
  auto items = list_items(current);
  for (auto& item : list_items(value)) {
    const bool present = std::find(items.begin(), items.end(), item) != items.end();
    if (operation == op_append && !present) items.push_back(std::move(item));
    if (operation == op_subtract) std::erase(items, item);
  }
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

/// One APPEND or SUBTRACT of an IncrementalAlterConfigs resource, applied to the current value
/// once it is read.
struct list_change {
  std::string name;
  int8_t operation = op_append;
  std::string value;
};

/// `changes` with each list change turned into a SET of the value it leaves, read from `described`
/// (a topic's or a broker's described configs: each entry's effective value, its own or the
/// default it inherits; "" for a name not among them).
template <typename Entries>
std::map<std::string, std::optional<std::string>> with_list_changes(std::map<std::string, std::optional<std::string>> changes,
                                                                    const std::vector<list_change>& list_changes,
                                                                    const Entries& described) {
  for (const auto& c : list_changes) {
    const auto& earlier = changes[c.name];
    std::string current;
    for (const auto& e : described) {
      if (e.name == c.name) current = e.value;
    }
    changes[c.name] = list_config_after(earlier ? *earlier : current, c.operation, c.value);
  }
  return changes;
}

/// Runs one topic's config change and records its outcome in `slot`.
void alter_topic(broker::broker& b, const std::string& topic, std::map<std::string, std::optional<std::string>> changes,
                 bool validate_only, std::function<void(int16_t, std::optional<std::string>)> done) {
  b.admin().alter_topic_configs(topic, std::move(changes), validate_only,
                        [done](broker::result<broker::topic_description> r) {
                          if (r.ok()) return done(error_code::none, std::nullopt);
                          done(code_of(r.error()), r.error().message);
                        });
}

/// Runs one broker resource's dynamic config change (a node id, or "" for the cluster-wide
/// defaults) and records its outcome through `done`. With `replace` (AlterConfigs), the
/// resource's dynamic configs not in `changes` are removed.
void alter_broker(broker::broker& b, const std::string& resource, std::map<std::string, std::optional<std::string>> changes,
                  bool replace, bool validate_only, std::function<void(int16_t, std::optional<std::string>)> done) {
  auto node = broker_of_resource(resource);
  if (!node) return done(error_code::invalid_request, not_a_broker(resource));
  if (replace) {
    auto described = b.admin().describe_broker_configs(*node);
    if (!described.ok()) return done(code_of(described.error()), described.error().message);
    const auto own = *node == broker::cluster_default_broker ? broker::config_source::dynamic_default_broker_config
                                                             : broker::config_source::dynamic_broker_config;
    for (const auto& c : *described) {
      if (c.source == own && !changes.count(c.name)) changes[c.name] = std::nullopt;
    }
  }
  b.admin().alter_broker_configs(*node, std::move(changes), validate_only, [done](broker::result<void> r) {
    if (r.ok()) return done(error_code::none, std::nullopt);
    done(code_of(r.error()), r.error().message);
  });
}

/// The refusal of `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config resource, or
/// nullopt: a TOPIC resource asks it of the topic (TOPIC_AUTHORIZATION_FAILED), a BROKER one of
/// the cluster (CLUSTER_AUTHORIZATION_FAILED), as KafkaApis' config handlers do.
std::optional<std::pair<int16_t, std::string>> config_refusal(const request_context& ctx, int8_t resource,
                                                              const std::string& name, security::acl_operation operation) {
  const bool topic = resource == resource_type_topic;
  if (!topic && resource != resource_type_broker) return std::nullopt;   // answered INVALID_REQUEST below
  const bool allowed = topic ? ctx.authorized(security::resource_type::topic, name, operation)
                             : ctx.authorized_cluster(operation);
  if (allowed) return std::nullopt;
  return std::pair(topic ? error_code::topic_authorization_failed : error_code::cluster_authorization_failed,
                   std::string(security::to_string(operation)) + " on the " + (topic ? "topic" : "cluster") +
                       " is not allowed for " + ctx.principal.to_string());
}

}  // namespace

void handle_describe_configs(const request_context& ctx, protocol::describe_configs_request_data request) {
  using result_t = protocol::describe_configs_response_data::describe_configs_result;
  broker::broker& b = ctx.broker_api();
  const size_t n = request.resources.size();
  const int16_t version = ctx.api_version;
  auto g = std::make_shared<gather<result_t>>(n, [ctx](std::vector<result_t>& results) {
    protocol::describe_configs_response_data out;
    out.results = std::move(results);
    ctx.answer(out);
  });
  for (size_t i = 0; i < n; ++i) {
    const auto& res = request.resources[i];
    result_t& slot = g->slot(i);
    slot.resource_type = res.resource_type;
    slot.resource_name = res.resource_name;
    if (auto refused = config_refusal(ctx, res.resource_type, res.resource_name, security::acl_operation::describe_configs)) {
      std::tie(slot.error_code, slot.error_message) = *refused;
      g->complete_one();
      continue;
    }
    if (res.resource_type == resource_type_broker) {
      auto node = broker_of_resource(res.resource_name);
      auto described = node ? b.admin().describe_broker_configs(*node)
                            : broker::result<std::vector<broker::broker_config_entry>>(
                                  broker::error{broker::errc::invalid_request, not_a_broker(res.resource_name)});
      if (!described.ok()) {
        slot.error_code = code_of(described.error());
        slot.error_message = described.error().message;
      } else {
        for (const auto& c : *described) {
          if (!wanted(res.configuration_keys, c.name)) continue;
          slot.configs.push_back(describe_entry(c, c.is_read_only, request.include_synonyms, version));
        }
      }
      g->complete_one();
      continue;
    }
    if (res.resource_type != resource_type_topic) {
      slot.error_code = error_code::invalid_request;
      slot.error_message = "resource type " + std::to_string(res.resource_type) + " is not served (topic 2, broker 4)";
      g->complete_one();
      continue;
    }
    b.admin().describe_topic(res.resource_name, [g, i, keys = res.configuration_keys, version,
                                         synonyms = request.include_synonyms](broker::result<broker::topic_description> d) {
      result_t& r = g->slot(i);
      if (!d.ok()) {
        r.error_code = code_of(d.error());
        r.error_message = d.error().message;
      } else {
        for (const auto& c : d->configs) {
          if (wanted(keys, c.name)) r.configs.push_back(describe_entry(c, c.read_only, synonyms, version));
        }
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

/// The first config name `configs` holds twice, or nullopt.
template <typename Configs>
std::optional<std::string> duplicate_config_key(const Configs& configs) {
  std::set<std::string_view> seen;
  for (const auto& config : configs) {
    if (!seen.insert(config.name).second) return config.name;
  }
  return std::nullopt;
}

void handle_alter_configs(const request_context& ctx, protocol::alter_configs_request_data request) {
  // AlterConfigs replaces a resource's whole set of overrides: keys not named go back to default.
  broker::broker& b = ctx.broker_api();
  const size_t n = request.resources.size();
  auto g = std::make_shared<gather<alter_result>>(n, [ctx](std::vector<alter_result>& results) {
    protocol::alter_configs_response_data out;
    out.responses = std::move(results);
    ctx.answer(out);
  });
  const bool validate_only = request.validate_only;
  for (size_t i = 0; i < n; ++i) {
    auto& res = request.resources[i];
    g->slot(i).resource_type = res.resource_type;
    g->slot(i).resource_name = res.resource_name;
    auto finish = [g, i](int16_t code, std::optional<std::string> message) {
      g->slot(i).error_code = code;
      g->slot(i).error_message = std::move(message);
      g->complete_one();
    };
    if (auto refused = config_refusal(ctx, res.resource_type, res.resource_name, security::acl_operation::alter_configs)) {
      finish(refused->first, refused->second);
      continue;
    }
    if (auto twice = duplicate_config_key(res.configs)) {
      finish(error_code::invalid_request, "Error due to duplicate config keys: " + *twice + " is named twice");
      continue;
    }
    std::map<std::string, std::optional<std::string>> wanted_values;
    for (const auto& c : res.configs) wanted_values[c.name] = c.value;
    if (res.resource_type == resource_type_broker) {
      alter_broker(b, res.resource_name, std::move(wanted_values), true, validate_only, finish);
      continue;
    }
    if (res.resource_type != resource_type_topic) {
      finish(error_code::invalid_request,
             "resource type " + std::to_string(res.resource_type) + " has no configs here (topic 2, broker 4)");
      continue;
    }
    b.admin().describe_topic(res.resource_name, [&b, name = res.resource_name, wanted_values, validate_only, finish](
                                            broker::result<broker::topic_description> d) mutable {
      if (!d.ok()) return finish(code_of(d.error()), d.error().message);
      std::map<std::string, std::optional<std::string>> changes = wanted_values;
      for (const auto& c : d->configs) {
        if (!c.is_default && !changes.count(c.name)) changes[c.name] = std::nullopt;
      }
      alter_topic(b, name, std::move(changes), validate_only, finish);
    });
  }
  g->finish_if_empty();
}

/// An IncrementalAlterConfigs resource's entries (KIP-339 operations: 0 SET, 1 DELETE back to the
/// default, 2 APPEND and 3 SUBTRACT on list configs) as SETs and DELETEs, the list changes that
/// need the current value, and the refusal of an APPEND/SUBTRACT on a config that is not a list
/// or of an unknown operation (INVALID_CONFIG, as Kafka).
struct incremental_changes_t {
  std::map<std::string, std::optional<std::string>> changes;
  std::vector<list_change> list_changes;
  std::optional<std::string> refused;
};
template <typename Entries>
incremental_changes_t incremental_changes(const Entries& configs) {
  incremental_changes_t out;
  for (const auto& c : configs) {
    if (c.config_operation == op_set) {
      out.changes[c.name] = c.value.value_or("");
    } else if (c.config_operation == op_delete) {
      out.changes[c.name] = std::nullopt;
    } else if (c.config_operation != op_append && c.config_operation != op_subtract) {
      out.refused = "config " + c.name + ": unknown operation " + std::to_string(c.config_operation) +
                    " (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)";
    } else if (!is_list_config(c.name)) {
      out.refused = "config " + c.name + ": " + (c.config_operation == op_append ? "APPEND" : "SUBTRACT") +
                    " is for list configs (cleanup.policy); use SET";
    } else {
      out.list_changes.push_back({c.name, c.config_operation, c.value.value_or("")});
    }
  }
  return out;
}

/// IncrementalAlterConfigs of a broker resource: list changes read the resource's effective value.
void alter_broker_incrementally(broker::broker& b, const std::string& resource,
                                std::map<std::string, std::optional<std::string>> changes,
                                const std::vector<list_change>& list_changes, bool validate_only,
                                std::function<void(int16_t, std::optional<std::string>)> done) {
  if (!list_changes.empty()) {
    auto node = broker_of_resource(resource);
    if (!node) return done(error_code::invalid_request, not_a_broker(resource));
    auto described = b.admin().describe_broker_configs(*node);
    if (!described.ok()) return done(code_of(described.error()), described.error().message);
    changes = with_list_changes(std::move(changes), list_changes, *described);
  }
  alter_broker(b, resource, std::move(changes), false, validate_only, std::move(done));
}

void handle_incremental_alter_configs(const request_context& ctx,
                                      protocol::incremental_alter_configs_request_data request) {
  using result_t = protocol::incremental_alter_configs_response_data::alter_configs_resource_response;
  broker::broker& b = ctx.broker_api();
  const size_t n = request.resources.size();
  auto g = std::make_shared<gather<result_t>>(n, [ctx](std::vector<result_t>& results) {
    protocol::incremental_alter_configs_response_data out;
    out.responses = std::move(results);
    ctx.answer(out);
  });
  for (size_t i = 0; i < n; ++i) {
    auto& res = request.resources[i];
    g->slot(i).resource_type = res.resource_type;
    g->slot(i).resource_name = res.resource_name;
    auto finish = [g, i](int16_t code, std::optional<std::string> message) {
      g->slot(i).error_code = code;
      g->slot(i).error_message = std::move(message);
      g->complete_one();
    };
    if (auto refused = config_refusal(ctx, res.resource_type, res.resource_name, security::acl_operation::alter_configs)) {
      finish(refused->first, refused->second);
      continue;
    }
    if (res.resource_type != resource_type_topic && res.resource_type != resource_type_broker) {
      finish(error_code::invalid_request,
             "resource type " + std::to_string(res.resource_type) + " has no configs here (topic 2, broker 4)");
      continue;
    }
    // Kafka's KafkaApis refuses a resource naming a key twice (which one wins is undefined).
    if (auto twice = duplicate_config_key(res.configs)) {
      finish(error_code::invalid_request, "Error due to duplicate config keys: " + *twice + " is named twice");
      continue;
    }
    auto [changes, list_changes, refused] = incremental_changes(res.configs);
    if (refused) {
      finish(error_code::invalid_config, refused);
      continue;
    }
    if (res.resource_type == resource_type_broker) {
      alter_broker_incrementally(b, res.resource_name, std::move(changes), list_changes, request.validate_only, finish);
      continue;
    }
    if (list_changes.empty()) {
      alter_topic(b, res.resource_name, std::move(changes), request.validate_only, finish);
      continue;
    }
    b.admin().describe_topic(res.resource_name, [&b, name = res.resource_name, changes, list_changes,
                                                 validate_only = request.validate_only,
                                                 finish](broker::result<broker::topic_description> d) mutable {
      if (!d.ok()) return finish(code_of(d.error()), d.error().message);
      alter_topic(b, name, with_list_changes(std::move(changes), list_changes, d->configs), validate_only, finish);
    });
  }
  g->finish_if_empty();
}

}  // namespace ringlog::kafka::detail
