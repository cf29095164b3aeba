// Rebalance and decommission over HTTP (issue 33), routes of ours in Confluent v3's style, and
// Confluent Server's remove-broker route and broker tasks:
//   GET    /v3/clusters/{c}/rebalance[?tolerance=0.1]   a dry run: the plan, nothing changes (200)
//   POST   /v3/clusters/{c}/rebalance  {"tolerance": 0.1, "dry_run": false}   starts the plan's
//          moves (202; a dry run 200); 409 while partitions are being reassigned
//   DELETE /v3/clusters/{c}/rebalance   cancels every partition reassignment under way (200)
//   DELETE /v3/clusters/{c}/brokers/{id}   decommissions the broker (202 with its task)
//   GET    /v3/clusters/{c}/brokers/-/tasks, .../brokers/{id}/tasks   KafkaBrokerTaskList
//   GET    /v3/clusters/{c}/brokers/{id}/tasks/remove-broker   the broker's task (404 when none)
//   DELETE /v3/clusters/{c}/brokers/{id}/tasks/remove-broker   cancels the decommission (200)
// Partition sizes for the plan come from every broker's own replicas
// (GET .../brokers/{id}/partition-replicas answered by that broker, which adds size_bytes).

#include "api_routes.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {

namespace {

json ids_json(const std::vector<int32_t>& ids) { return json(ids); }

json plan_json(api::call& call, const broker::rebalance_result& r, double tolerance, bool dry_run) {
  const std::string& cluster = call.params["cluster_id"];
  const auto& plan = r.plan;
  json moves = json::array();
  for (const auto& m : plan.moves) {
    moves.push_back({{"topic_name", m.topic},
                     {"partition_id", m.partition},
                     {"replicas", ids_json(m.replicas)},
                     {"target_replicas", ids_json(m.target_replicas)},
                     {"adding_replicas", ids_json(m.adding_replicas())},
                     {"removing_replicas", ids_json(m.removing_replicas())},
                     {"size_bytes", m.size_bytes}});
  }
  json skipped = json::array();
  for (const auto& s : plan.skipped) skipped.push_back({{"topic_name", s.topic}, {"partition_id", s.partition}, {"reason", s.reason}});
  json brokers = json::array();
  for (const auto& b : plan.brokers) {
    brokers.push_back({{"broker_id", b.broker_id},
                       {"rack", b.rack.empty() ? json(nullptr) : json(b.rack)},
                       {"excluded", b.excluded},
                       {"excluded_reason", b.excluded ? json(b.excluded_reason) : json(nullptr)},
                       {"replicas", {{"before", b.replicas_before}, {"after", b.replicas_after}}},
                       {"leaders", {{"before", b.leaders_before}, {"after", b.leaders_after}}},
                       {"size_bytes", {{"before", b.bytes_before}, {"after", b.bytes_after}}}});
  }
  return json{{"kind", "KafkaRebalancePlan"},
              {"metadata", {{"self", call.base_url + "/v3/clusters/" + cluster + "/rebalance"}}},
              {"cluster_id", cluster},
              {"tolerance", tolerance},
              {"balanced", plan.balanced},
              {"imbalances", plan.imbalances},
              {"dry_run", dry_run},
              {"started", r.started},
              {"bytes_to_move", plan.bytes_to_move},
              {"moves", std::move(moves)},
              {"skipped", std::move(skipped)},
              {"brokers", std::move(brokers)},
              {"reassignments_in_progress", plan.reassignments_in_progress},
              {"autobalancer",
               {{"mode", r.autobalancer.mode},
                {"unavailable_brokers_draining", ids_json(r.autobalancer.unavailable_brokers_draining)}}}};
}

/// Adds the replica sizes of one KafkaReplicaList answer to `sizes` (the largest replica of a
/// partition counts: a follower may lag its leader by a fetch).
void take_sizes(const json& answer, controller::partition_sizes& sizes) {
  auto data = answer.find("data");
  if (data == answer.end() || !data->is_array()) return;
  for (const auto& r : *data) {
    if (!r.is_object() || !r.contains("size_bytes") || !r["size_bytes"].is_number_unsigned() ||
        !r.contains("topic_name") || !r["topic_name"].is_string() || !r.contains("partition_id") ||
        !r["partition_id"].is_number_integer()) {
      continue;
    }
    uint64_t& size = sizes[{r["topic_name"].get<std::string>(), r["partition_id"].get<int32_t>()}];
    size = std::max(size, r["size_bytes"].get<uint64_t>());
  }
}

using sizes_fn = std::function<void(api::call&, controller::partition_sizes, std::vector<std::string> unanswered)>;

/// How long a broker has to give its replicas' sizes for a plan, ms: a paused or cut-off broker
/// (not fenced yet) must not hold the plan for the proxy's whole bound; a partition only it
/// answered for counts the size another replica gave, else 0 bytes (the plan's answer names the
/// brokers that did not answer in metadata.unanswered_brokers).
constexpr int64_t rebalance_sizes_timeout_ms = 2000;

/// Every partition's size: each broker asked for its own replicas (this node too); a node alone
/// answers from its own replicas.
void gather_sizes(const call_ptr& c, sizes_fn done) {
  const std::string cluster = c->params["cluster_id"];
  auto target_of = [cluster](int32_t node) {
    return "/v3/clusters/" + base::percent_encode_segment(cluster) + "/brokers/" + std::to_string(node) + "/partition-replicas";
  };
  const bool asked = ask_every_broker(c, [done](api::call& call, std::vector<json> answers, std::vector<std::string> unanswered) {
    controller::partition_sizes sizes;
    for (const auto& a : answers) take_sizes(a, sizes);
    done(call, std::move(sizes), std::move(unanswered));
  }, target_of, rebalance_sizes_timeout_ms);
  if (asked) return;
  describe_all(c, true, [done](api::call& call, std::vector<broker::topic_description> topics) {
    controller::partition_sizes sizes;
    for (const auto& t : topics) {
      for (const auto& p : t.partitions) {
        if (p.replica_here) sizes[{t.name, p.partition.value()}] = p.size_bytes;
      }
    }
    done(call, std::move(sizes), {});
  });
}

/// Plans (and unless a dry run starts) a rebalance; answers the plan.
void run_rebalance(const call_ptr& c, double tolerance, bool dry_run) {
  gather_sizes(c, [tolerance, dry_run](api::call& call, controller::partition_sizes sizes, std::vector<std::string> unanswered) {
    broker::rebalance_request request{tolerance, dry_run, std::move(sizes)};
    call.broker().admin().rebalance(std::move(request), [c = call.shared_from_this(), tolerance, dry_run, unanswered](
                                                    broker::result<broker::rebalance_result> r) {
      c->later([r = std::move(r), tolerance, dry_run, unanswered](api::call& call2) {
        if (!r.ok()) return call2.fail_broker(r.error(), error_scope::topic, "");
        json plan = plan_json(call2, *r, tolerance, dry_run);
        if (!unanswered.empty()) plan["metadata"]["unanswered_brokers"] = unanswered;   // their sizes: 0 unless another replica's
        call2.respond_json(dry_run || r->plan.moves.empty() ? 200 : 202, plan);
      });
    });
  });
}

/// A tolerance as the query or the body gives it: 0.0 to 1.0; nullopt after answering 400.
std::optional<double> tolerance_of(api::call& c, const json& value, const std::string& where) {
  if (!value.is_number() || value.get<double>() < 0.0 || value.get<double>() > 1.0) {
    c.fail(400, ec::invalid_request, where + ": must be a number from 0.0 to 1.0, got " + value.dump());
    return std::nullopt;
  }
  return value.get<double>();
}

json task_json(api::call& call, const broker::broker_decommission& d) {
  const std::string& cluster = call.params["cluster_id"];
  const std::string self =
      call.base_url + "/v3/clusters/" + cluster + "/brokers/" + std::to_string(d.broker_id) + "/tasks/remove-broker";
  const bool moving = d.status == "IN_PROGRESS";
  return json{{"kind", "KafkaBrokerTask"},
              {"metadata", {{"self", self}}},
              {"cluster_id", cluster},
              {"broker_id", d.broker_id},
              {"task_type", "remove-broker"},
              {"task_status", d.status},
              {"sub_task_statuses", {{"partition_reassignment_status", moving ? "IN_PROGRESS" : "COMPLETED"}}},
              {"partitions_remaining", d.partitions_remaining},
              {"reassignments_in_progress", d.reassignments_in_progress},
              {"error_code", nullptr},
              {"error_message", nullptr},
              {"broker", related(call.base_url + "/v3/clusters/" + cluster + "/brokers/" + std::to_string(d.broker_id))}};
}

/// Decommission (cancel = false) or its cancel for the {broker_id} of the path.
void decommission(const call_ptr& c, bool cancel) {
  const auto id = path_broker_id(*c);
  if (!id) return c->fail(404, ec::not_found, "broker \"" + c->params["broker_id"] + "\" is not a broker id");
  c->broker().admin().decommission_broker(*id, cancel, [c, cancel](broker::result<broker::broker_decommission> r) {
    c->later([r = std::move(r), cancel](api::call& call) {
      if (!r.ok()) {
        if (r.error().code == broker::errc::invalid_request) return call.fail(400, ec::kafka_bad_request, r.error().message);
        return call.fail_broker(r.error(), error_scope::topic, "");
      }
      call.respond_json(cancel || r->status == "SUCCESS" ? 200 : 202, task_json(call, *r));
    });
  });
}

}  // namespace

void v3_get_rebalance(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  double tolerance = 0.1;
  if (auto t = c->query.find("tolerance"); t != c->query.end()) {
    const json value = json::parse(t->second, nullptr, false);
    auto parsed = tolerance_of(*c, value.is_discarded() ? json(t->second) : value, "query parameter tolerance");
    if (!parsed) return;
    tolerance = *parsed;
  }
  run_rebalance(c, tolerance, true);
}

void v3_post_rebalance(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  double tolerance = 0.1;
  bool dry_run = false;
  if (!is_blank(c->request.body)) {
    if (!c->content_type_in({"application/json"})) return;
    api_error refusal;
    const json body = parse_json(c->request.body, "request body", refusal);
    if (body.is_discarded()) return c->fail(refusal);
    if (!body.is_object()) return c->fail(400, ec::bad_request, "the request body must be a JSON object");
    for (const auto& [field, value] : body.items()) {
      if (field == "tolerance") {
        auto parsed = tolerance_of(*c, value, "tolerance");
        if (!parsed) return;
        tolerance = *parsed;
      } else if (field == "dry_run") {
        if (!value.is_boolean()) return c->fail(400, ec::invalid_request, "dry_run: must be true or false");
        dry_run = value.get<bool>();
      } else {
        return c->fail(400, ec::invalid_request, field + ": unknown field (tolerance, dry_run)");
      }
    }
  }
  run_rebalance(c, tolerance, dry_run);
}

void v3_cancel_rebalance(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  c->broker().admin().cancel_reassignments([c](broker::result<int32_t> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
      call.respond_json(200, json{{"kind", "KafkaRebalanceCancel"}, {"cluster_id", call.params["cluster_id"]}, {"cancelled", *r}});
    });
  });
}

void v3_remove_broker(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  decommission(c, false);
}

void v3_list_broker_tasks(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  std::optional<int32_t> only;
  if (c->params.contains("broker_id")) {
    only = path_broker_id(*c);
    if (!only) return c->fail(404, ec::not_found, "broker \"" + c->params["broker_id"] + "\" is not a broker id");
  }
  json data = json::array();
  for (const auto& d : c->broker().admin().list_decommissions()) {
    if (!only || *only == d.broker_id) data.push_back(task_json(*c, d));
  }
  // A broker that is neither registered nor has a task is not in this cluster: 404, as GET
  // /brokers/{id} (an empty list would read as "nothing under way" for a mistyped id).
  if (only && data.empty()) {
    const auto brokers = c->broker().admin().list_brokers();
    const bool known = std::any_of(brokers.begin(), brokers.end(), [&](const auto& b) { return b.node_id == *only; });
    if (!known) return c->fail(404, ec::not_found, "broker " + std::to_string(*only) + " is not in this cluster");
  }
  c->respond_json(200, list_json("KafkaBrokerTaskList", c->base_url + c->request.target, std::move(data)));
}

void v3_get_remove_broker_task(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const auto id = path_broker_id(*c);
  for (const auto& d : c->broker().admin().list_decommissions()) {
    if (id && *id == d.broker_id) return c->respond_json(200, task_json(*c, d));
  }
  c->fail(404, ec::not_found, "broker \"" + c->params["broker_id"] + "\" has no remove-broker task");
}

void v3_cancel_remove_broker_task(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  decommission(c, true);
}

}  // namespace ringlog::gateway::routes
