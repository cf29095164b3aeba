// The cluster as the admin facet shows and changes it (admin_manager, admin_manager.h): the
// registered brokers (DescribeCluster), the metadata quorum (DescribeQuorum, KIP-595) and the
// dynamic broker configs (DescribeConfigs and IncrementalAlterConfigs of BROKER resources,
// KIP-226; the rules are broker_configs.h's).

#include <tuple>
#include <utility>

#include "admin_manager.h"
#include "broker_lifecycle.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "broker_configs.h"
#include "metadata_publisher.h"

namespace ringlog::broker::detail {

std::vector<broker_description> admin_manager::list_brokers() const {
  const int32_t controller = controller_id();
  std::vector<broker_description> out;
  // Hold the view for the whole loop: a range-for keeps only its range alive, not the temporary
  // shared_ptr it came through (before C++23), and a newer view may be published meanwhile.
  const auto held = metadata_.view();
  for (const auto& [id, b] : held->image->brokers()) {
    broker_description d;
    d.node_id = id;
    if (const auto* http = b.http_endpoint(); http != nullptr) {
      d.host = http->host;
      d.port = http->port;
      d.http_tls = http->name == "https";
    }
    for (const auto& e : b.endpoints) {   // Kafka listeners: all but http(s) and cluster ("kafka": PLAINTEXT, older nodes)
      if (e.name != "http" && e.name != "https" && e.name != "cluster") d.kafka_endpoints.push_back({e.name == "kafka" ? "PLAINTEXT" : e.name, e.host, e.port});
    }
    if (!d.kafka_endpoints.empty()) std::tie(d.kafka_host, d.kafka_port) = std::pair(d.kafka_endpoints[0].host, d.kafka_endpoints[0].port);
    d.rack = b.rack;
    d.state = b.in_controlled_shutdown ? "controlled_shutdown" : b.fenced ? "fenced" : "unfenced";
    d.decommissioning = held->image->decommission_state(b.node_id) == controller::broker_decommission_state::decommissioning;
    d.broker_epoch = b.broker_epoch;
    d.is_controller = id == controller;
    out.push_back(std::move(d));
  }
  if (out.empty() && config_.process_role_broker) {   // a dedicated controller is never a broker
    broker_description self;
    self.node_id = config_.node_id;
    if (deps_.advertised_port >= 0) {   // else no HTTP listener: host "" and port 0, as a peer's
      self.host = deps_.advertised_host;
      self.port = deps_.advertised_port;
      self.http_tls = deps_.advertised_http_tls;
    }
    self.rack = config_.broker_rack;
    self.kafka_host = deps_.advertised_kafka_host;
    self.kafka_port = deps_.advertised_kafka_port;
    self.kafka_endpoints = deps_.advertised_kafka_listeners;
    self.is_controller = config_.node_id == controller;
    out.push_back(self);
  }
  return out;
}

quorum_status admin_manager::describe_quorum() const {
  quorum_status out;
  const auto described = (quorum_ ? std::optional(quorum_->describe()) : std::nullopt);
  if (!described) return out;
  const auto& d = *described;
  out.node_id = d.node_id;
  out.leader_id = d.leader_id;
  out.leader_epoch = d.leader_epoch;
  out.high_watermark = d.high_watermark;
  out.log_start_offset = d.log_start_offset;
  out.log_end_offset = d.log_end_offset;
  out.applied_offset = metadata_.view()->image->offset();
  out.role = d.role;
  for (const auto& v : d.voters) {
    out.voters.push_back({v.replica_id, v.log_end_offset, v.lag, v.last_fetch_timestamp_ms});
  }
  const auto held = metadata_.view();
  for (const auto& v : d.observers) {
    // A decommissioned broker still fetching (not yet stopped) is no longer part of the cluster.
    if (held->image->decommission_state(v.replica_id) == controller::broker_decommission_state::decommissioned) continue;
    out.observers.push_back({v.replica_id, v.log_end_offset, v.lag, v.last_fetch_timestamp_ms});
  }
  out.observer = d.observer;
  return out;
}

result<std::vector<broker_config_entry>> admin_manager::describe_broker_configs(int32_t node_id) const {
  if (node_id != cluster_default_broker && node_id != config_.node_id) {
    return error{errc::invalid_request, broker_configs_elsewhere(node_id, config_.node_id)};
  }
  return ringlog::broker::describe_broker_configs(config_, *metadata_.view()->image, node_id);
}

void admin_manager::alter_broker_configs(int32_t node_id, std::map<std::string, std::optional<std::string>> changes,
                                         bool validate_only, std::function<void(result<void>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (node_id != cluster_default_broker && node_id != config_.node_id) {
    return done(error{errc::invalid_request, broker_configs_elsewhere(node_id, config_.node_id)});
  }
  std::vector<protocol::metadata_record> records;
  for (const auto& [name, value] : changes) {
    if (auto valid = validate_broker_config_change(name, value); !valid.ok()) return done(valid.error());
    protocol::config_record c;
    c.resource_type = controller::config_resource_broker;
    c.resource_name = node_id == cluster_default_broker ? "" : std::to_string(node_id);
    c.name = name;
    c.value = value;
    records.push_back(c);
  }
  if (validate_only || records.empty()) return done(base::ok_v);
  deps_.runtime.post(controller_shard, [this, records = std::move(records), done = std::move(done)]() mutable {
    writer_.commit_records(std::move(records), std::move(done));
  });
}

}  // namespace ringlog::broker::detail
