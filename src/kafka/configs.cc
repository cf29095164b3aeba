// DescribeConfigs, AlterConfigs, IncrementalAlterConfigs (KIP-339) on topic configs. Broker
// configs are static here (the properties file and --set): they are described, never altered.

#include <set>

#include "handlers.h"

namespace ringlog::kafka::detail {

namespace {

/// Kafka's DescribeConfigsResponse.ConfigSource.
constexpr int8_t source_dynamic_topic = 1;
constexpr int8_t source_static_broker = 4;
constexpr int8_t source_default = 5;

/// Broker configs answered for a broker resource: the keys Kafka tools ask for most, with this
/// node's values (read-only: they come from the properties file).
std::vector<std::pair<std::string, std::string>> broker_configs(const broker::broker_config& c) {
  return {
      {"node.id", std::to_string(c.node_id)},
      {"broker.id", std::to_string(c.node_id)},
      {"num.partitions", std::to_string(c.num_partitions)},
      {"default.replication.factor", std::to_string(c.default_replication_factor)},
      {"auto.create.topics.enable", c.auto_create_topics_enable ? "true" : "false"},
      {"message.max.bytes", std::to_string(c.message_max_bytes)},
      {"log.segment.bytes", std::to_string(c.log_segment_bytes)},
      {"log.retention.ms", std::to_string(c.log_retention_ms)},
      {"log.retention.bytes", std::to_string(c.log_retention_bytes)},
      {"min.insync.replicas", std::to_string(c.min_insync_replicas)},
      {"offsets.topic.num.partitions", std::to_string(c.offsets_topic_num_partitions)},
  };
}

bool wanted(const std::optional<std::vector<std::string>>& keys, const std::string& name) {
  if (!keys || keys->empty()) return true;
  for (const auto& k : *keys) {
    if (k == name) return true;
  }
  return false;
}

using alter_result = protocol::alter_configs_response_data::alter_configs_resource_response;

/// Runs one topic's config change and records its outcome in `slot`.
void alter_topic(broker::broker& b, const std::string& topic, std::map<std::string, std::optional<std::string>> changes,
                 bool validate_only, std::function<void(int16_t, std::optional<std::string>)> done) {
  b.alter_topic_configs(topic, std::move(changes), validate_only,
                        [done](broker::result<broker::topic_description> r) {
                          if (r.ok()) return done(error_code::none, std::nullopt);
                          done(code_of(r.error()), r.error().message);
                        });
}

}  // namespace

void handle_describe_configs(const request_context& ctx, protocol::describe_configs_request_data request) {
  using result_t = protocol::describe_configs_response_data::describe_configs_result;
  using entry_t = protocol::describe_configs_response_data::describe_configs_resource_result;
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
    if (res.resource_type == resource_type_broker) {
      if (res.resource_name != std::to_string(ctx.options().node_id) && !res.resource_name.empty()) {
        slot.error_code = error_code::invalid_request;
        slot.error_message = "no broker " + res.resource_name + " here (node.id is " +
                             std::to_string(ctx.options().node_id) + ")";
      } else {
        for (auto& [name, value] : broker_configs(b.config())) {
          if (!wanted(res.configuration_keys, name)) continue;
          entry_t e;
          e.name = name;
          e.value = value;
          e.read_only = true;
          e.config_source = source_static_broker;
          slot.configs.push_back(std::move(e));
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
    b.describe_topic(res.resource_name, [g, i, keys = res.configuration_keys, version](
                                           broker::result<broker::topic_description> d) {
      result_t& r = g->slot(i);
      if (!d.ok()) {
        r.error_code = code_of(d.error());
        r.error_message = d.error().message;
      } else {
        for (const auto& c : d->configs) {
          if (!wanted(keys, c.name)) continue;
          entry_t e;
          e.name = c.name;
          e.value = c.value;
          e.read_only = c.read_only;
          if (version == 0) e.is_default = c.is_default;
          e.config_source = c.is_default ? source_default : source_dynamic_topic;
          r.configs.push_back(std::move(e));
        }
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
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
    if (res.resource_type != resource_type_topic) {
      finish(error_code::invalid_request, "only topic configs can be altered; broker configs are static here");
      continue;
    }
    std::map<std::string, std::optional<std::string>> wanted_values;
    for (const auto& c : res.configs) wanted_values[c.name] = c.value;
    b.describe_topic(res.resource_name, [&b, name = res.resource_name, wanted_values, validate_only, finish](
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
    if (res.resource_type != resource_type_topic) {
      finish(error_code::invalid_request, "only topic configs can be altered; broker configs are static here");
      continue;
    }
    // KIP-339 operations: 0 SET, 1 DELETE (back to default), 2 APPEND and 3 SUBTRACT (list-valued
    // configs only; none of ringlog's topic configs takes a list of several values yet).
    std::map<std::string, std::optional<std::string>> changes;
    std::optional<std::string> refused;
    for (const auto& c : res.configs) {
      if (c.config_operation == 0) {
        changes[c.name] = c.value.value_or("");
      } else if (c.config_operation == 1) {
        changes[c.name] = std::nullopt;
      } else {
        refused = "config " + c.name + ": operation " + std::to_string(c.config_operation) +
                  " (APPEND/SUBTRACT) is for list configs; use SET";
      }
    }
    if (refused) {
      finish(error_code::invalid_config, refused);
      continue;
    }
    alter_topic(b, res.resource_name, std::move(changes), request.validate_only, finish);
  }
  g->finish_if_empty();
}

}  // namespace ringlog::kafka::detail
