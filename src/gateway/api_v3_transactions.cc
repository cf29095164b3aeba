// Transactions over HTTP (ringlog's own routes, issue 16; documented in http-api/openapi.yaml
// and docs/transactions.md). The same coordinator as Kafka clients' (broker/transactions.h):
//   POST .../transactions                       {"transactional_id", "transaction_timeout_ms"?}
//        -> {"producer_id", "producer_epoch"}   (InitProducerId: fences every older producer)
//   POST .../transactions/{id}/partitions       {"producer_id", "producer_epoch", "partitions": [{"topic", "partition"}]}
//   POST .../transactions/{id}/offsets          {"producer_id", "producer_epoch", "group_id",
//                                                "offsets": [{"topic", "partition", "offset"}]}
//        (AddOffsetsToTxn + TxnOffsetCommit; "offset" is the next offset to read, Kafka's meaning)
//   POST .../transactions/{id}/commit           {"producer_id", "producer_epoch"}
//   POST .../transactions/{id}/abort            {"producer_id", "producer_epoch"}; without them an
//        operator's abort of the id's ongoing transaction (its producer is fenced)
//   GET  .../transactions                       this broker's transactional ids (?state=Ongoing)
//   GET  .../transactions/{id}                  DescribeTransactions
// Commit and abort bump the producer epoch (KIP-890 part 2) and answer the producer id and epoch
// of the next transaction: a delayed commit of an ended transaction is refused (409).

#include <algorithm>
#include <limits>

#include "api_routes.h"
#include "request_parsing.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {

namespace {

/// The query parameter a transaction's coordinator adds when it passes the TxnOffsetCommit half
/// of `.../offsets` on to the group's coordinator (AddOffsetsToTxn done). Honoured only on a call
/// a broker proved it passed on (identify_client), and even then the group's partition is
/// verified to be in the producer's transaction before an offset is held: a client cannot skip
/// AddOffsetsToTxn with it, nor have a broker pass it on for it.
constexpr std::string_view txn_offsets_added_query_name = "ringlog_txn_offsets_added";

/// Transaction timeout when the begin names none (Kafka's transaction.timeout.ms default).
constexpr int64_t transaction_timeout_ms_default = 60'000;

std::string transactions_url(api::call& call) {
  return call.base_url + "/v3/clusters/" + call.params["cluster_id"] + "/transactions";
}

/// The JSON object body of a transaction call, or nullopt after failing it. An empty body is
/// `{}` when `may_be_empty`.
std::optional<json> object_body(const call_ptr& c, bool may_be_empty, std::initializer_list<const char*> fields) {
  if (is_blank(c->request.body)) {
    if (may_be_empty) return json::object();
    c->fail(empty_body_error("a JSON object"));
    return std::nullopt;
  }
  if (!c->content_type_in({"application/json"})) return std::nullopt;
  api_error refusal;
  json body = parse_json(c->request.body, "request body", refusal);
  if (body.is_discarded()) {
    c->fail(refusal);
    return std::nullopt;
  }
  if (!body.is_object()) {
    c->fail(422, ec::unprocessable, "the body must be a JSON object");
    return std::nullopt;
  }
  for (const auto& [name, unused] : body.items()) {
    bool known = false;
    for (const char* f : fields) known = known || name == f;
    if (!known) {
      std::string list;
      for (const char* f : fields) list += std::string(list.empty() ? "" : ", ") + f;
      c->fail(422, ec::unprocessable, "unknown field \"" + name + "\"; the body takes " + list);
      return std::nullopt;
    }
  }
  return body;
}

/// An integer field in [min, max], or nullopt after failing the call (422 naming it).
std::optional<int64_t> int_field(const call_ptr& c, const json& body, const char* name, int64_t min, int64_t max) {
  if (!body.contains(name) || !body[name].is_number_integer()) {
    c->fail(422, ec::unprocessable, std::string("field ") + name + " must be an integer in [" + std::to_string(min) +
                                        ", " + std::to_string(max) + "]");
    return std::nullopt;
  }
  const int64_t v = body[name].get<int64_t>();
  if (v < min || v > max) {
    c->fail(422, ec::unprocessable, std::string("field ") + name + " must be an integer in [" + std::to_string(min) +
                                        ", " + std::to_string(max) + "], got " + std::to_string(v));
    return std::nullopt;
  }
  return v;
}

/// Bytes of a transactional id (txn::limits::transactional_id_bytes_max; the gateway may not
/// include the txn module, and the coordinator refuses the same again).
constexpr size_t transactional_id_bytes_max = 1'000;

/// Why `id` cannot name a transaction (too long, a control character such as NUL), or nullopt.
std::optional<std::string> transactional_id_problem(const std::string& id) {
  if (id.size() > transactional_id_bytes_max) {
    return "is " + std::to_string(id.size()) + " bytes; the limit is " + std::to_string(transactional_id_bytes_max);
  }
  for (size_t i = 0; i < id.size(); ++i) {
    const auto ch = static_cast<unsigned char>(id[i]);
    if (ch < 0x20 || ch == 0x7f) {
      return "has the control character " + std::to_string(ch) + " at byte " + std::to_string(i) +
             "; an id is printable text";
    }
  }
  return std::nullopt;
}

using producer = std::pair<model::producer_id, model::producer_epoch>;

std::optional<producer> producer_fields(const call_ptr& c, const json& body) {
  auto id = int_field(c, body, "producer_id", 0, std::numeric_limits<int64_t>::max());
  if (!id) return std::nullopt;
  auto epoch = int_field(c, body, "producer_epoch", 0, std::numeric_limits<int16_t>::max());
  if (!epoch) return std::nullopt;
  return producer{model::producer_id{*id}, model::producer_epoch{static_cast<int16_t>(*epoch)}};
}

json producer_json(api::call& call, const std::string& id, const producer& p) {
  return json{{"kind", "KafkaTransactionProducer"},
              {"cluster_id", call.params["cluster_id"]},
              {"transactional_id", id},
              {"producer_id", p.first.value()},
              {"producer_epoch", p.second.value()}};
}

/// The transaction as JSON, its partitions only of topics the caller may DESCRIBE (Kafka's
/// DescribeTransactions, KIP-664: DESCRIBE on the id does not reveal the topics it writes to).
json description_json(api::call& call, const broker::transaction_description& d) {
  json partitions = json::array();
  for (const auto& tp : d.partitions) {
    if (!call.authorized(security::resource_type::topic, tp.topic, security::acl_operation::describe)) continue;
    partitions.push_back({{"topic", tp.topic}, {"partition", tp.partition.value()}});
  }
  return json{{"kind", "KafkaTransaction"},
              {"metadata", {{"self", transactions_url(call) + "/" + percent_encode_segment(d.transactional_id)}}},
              {"cluster_id", call.params["cluster_id"]},
              {"transactional_id", d.transactional_id},
              {"state", d.state},
              {"producer_id", d.producer_id.value()},
              {"producer_epoch", d.producer_epoch.value()},
              {"transaction_timeout_ms", d.timeout_ms},
              {"transaction_start_ms", d.txn_start_ms},
              {"last_update_ms", d.last_update_ms},
              {"coordinator_id", d.coordinator_id},
              {"partitions", partitions}};
}

/// Answers a call whose broker result carries nothing (204).
std::function<void(broker::result<void>)> no_content(const call_ptr& c) {
  return [c](broker::result<void> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
      call.respond_no_content();
    });
  };
}

}  // namespace

void v3_begin_transaction(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto body = object_body(c, false, {"transactional_id", "transaction_timeout_ms"});
  if (!body) return;
  if (!body->contains("transactional_id") || !(*body)["transactional_id"].is_string() ||
      (*body)["transactional_id"].get<std::string>().empty()) {
    return c->fail(422, ec::unprocessable, "field transactional_id must be a non-empty string");
  }
  if (auto why = transactional_id_problem((*body)["transactional_id"].get<std::string>())) {
    return c->fail(422, ec::unprocessable, "field transactional_id " + *why);
  }
  int64_t timeout_ms = transaction_timeout_ms_default;
  if (body->contains("transaction_timeout_ms")) {
    auto t = int_field(c, *body, "transaction_timeout_ms", 1, std::numeric_limits<int32_t>::max());
    if (!t) return;
    timeout_ms = *t;
  }
  const std::string id = (*body)["transactional_id"].get<std::string>();
  if (!c->require(security::resource_type::transactional_id, id, security::acl_operation::write)) return;
  c->broker().transactions().init_producer_id(id, static_cast<int32_t>(timeout_ms), std::nullopt,
                                              [c, id](broker::result<producer> r) {
                                                c->later([r = std::move(r), id](api::call& call) {
                                                  if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
                                                  call.respond_json(200, producer_json(call, id, *r));
                                                });
                                              });
}

void v3_add_transaction_partitions(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto body = object_body(c, false, {"producer_id", "producer_epoch", "partitions"});
  if (!body) return;
  auto p = producer_fields(c, *body);
  if (!p) return;
  if (!body->contains("partitions") || !(*body)["partitions"].is_array() || (*body)["partitions"].empty()) {
    return c->fail(422, ec::unprocessable, "field partitions must be a non-empty array of {\"topic\", \"partition\"}");
  }
  std::vector<model::topic_partition> partitions;
  for (const auto& e : (*body)["partitions"]) {
    if (!e.is_object() || !e.contains("topic") || !e["topic"].is_string() || !e.contains("partition") ||
        !e["partition"].is_number_integer() || e["partition"].get<int64_t>() < 0 ||
        e["partition"].get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return c->fail(422, ec::unprocessable,
                     "each entry of partitions must be {\"topic\": string, \"partition\": integer >= 0}");
    }
    partitions.push_back({e["topic"].get<std::string>(), model::partition_id{e["partition"].get<int32_t>()}});
  }
  if (!require_topics(*c, partitions, security::acl_operation::write)) return;   // Kafka's AddPartitionsToTxn
  c->broker().transactions().add_partitions(c->params["transactional_id"], p->first, p->second, std::move(partitions),
                                            no_content(c));
}

void v3_add_transaction_offsets(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto body = object_body(c, false, {"producer_id", "producer_epoch", "group_id", "offsets"});
  if (!body) return;
  auto p = producer_fields(c, *body);
  if (!p) return;
  if (!body->contains("group_id") || !(*body)["group_id"].is_string() || (*body)["group_id"].get<std::string>().empty()) {
    return c->fail(422, ec::unprocessable, "field group_id must be a non-empty string");
  }
  // Kafka's AddOffsetsToTxn: READ on the group.
  if (!c->require(security::resource_type::group, (*body)["group_id"].get<std::string>(), security::acl_operation::read)) {
    return;
  }
  if (!body->contains("offsets") || !(*body)["offsets"].is_array() || (*body)["offsets"].empty()) {
    return c->fail(422, ec::unprocessable,
                   "field offsets must be a non-empty array of {\"topic\", \"partition\", \"offset\"}");
  }
  std::vector<group::offset_commit> offsets;
  for (const auto& e : (*body)["offsets"]) {
    if (!e.is_object() || !e.contains("topic") || !e["topic"].is_string() || !e.contains("partition") ||
        !e["partition"].is_number_integer() || !e.contains("offset") || !e["offset"].is_number_integer() ||
        e["partition"].get<int64_t>() < 0 || e["partition"].get<int64_t>() > std::numeric_limits<int32_t>::max() ||
        e["offset"].get<int64_t>() < 0) {
      return c->fail(422, ec::unprocessable,
                     "each entry of offsets must be {\"topic\": string, \"partition\": integer >= 0, \"offset\": "
                     "integer >= 0 (the next offset to read)}");
    }
    offsets.push_back(group::offset_commit{{e["topic"].get<std::string>(), model::partition_id{e["partition"].get<int32_t>()}},
                                           model::offset{e["offset"].get<int64_t>()}, ""});
    // READ on the topic (Kafka's TxnOffsetCommit), asked before the partition's existence so a
    // topic the caller may not read is never described (the breaker's probe_txn_offsets.py).
    if (!c->require(security::resource_type::topic, offsets.back().partition.topic, security::acl_operation::read)) return;
    // All or nothing: an offset of a partition that does not exist is refused before any is held
    // (404 40401 / 40402, Confluent's codes; Kafka's TxnOffsetCommit answers it per partition).
    auto exists = c->broker().admin().check_partition_exists(offsets.back().partition);
    if (!exists.ok()) return c->fail_broker(exists.error(), error_scope::partition, offsets.back().partition.topic);
  }
  const std::string group_id = (*body)["group_id"].get<std::string>();
  const std::string id = c->params["transactional_id"];
  auto txn_offset_commit = [c, group_id, producer_id = p->first, offsets = std::move(offsets)]() mutable {
    c->broker().groups().txn_commit(group_id, "", std::nullopt, -1, producer_id, std::move(offsets),
                                    [c](broker::result<broker::offset_commit_answer> r) {
                                      if (!r.ok()) return no_content(c)(r.error());
                                      if (!r->refused.empty()) return no_content(c)(r->refused.begin()->second);
                                      no_content(c)(base::ok_v);
                                    });
  };
  // The second half, passed on by the transaction's coordinator (below), which did AddOffsetsToTxn:
  // verified, not believed (KIP-890 part 1's VerifyOnly at the id's coordinator, as Kafka's group
  // coordinator verifies a TxnOffsetCommit), so the producer id and epoch must be the id's and
  // the group's __consumer_offsets partition in its ongoing transaction.
  if (c->passed_on_by_broker && c->query.contains(std::string(txn_offsets_added_query_name))) {
    const model::topic_partition offsets_partition{
        broker::consumer_offsets_topic, model::partition_id{c->broker().groups().coordinator_route(group_id).offsets_partition}};
    return c->broker().verify_txn_partition(
        id, p->first, p->second, offsets_partition,
        [c, txn_offset_commit = std::move(txn_offset_commit)](broker::result<void> verified) mutable {
          if (!verified.ok()) return no_content(c)(std::move(verified));
          c->later([txn_offset_commit = std::move(txn_offset_commit)](api::call&) mutable { txn_offset_commit(); });
        });
  }
  // AddOffsetsToTxn at the transaction's coordinator (this broker: forward_group_call passes a
  // transaction's calls on to it), then TxnOffsetCommit at the group's coordinator, which may be
  // another broker (Kafka's sendOffsetsToTransaction sends the two requests to the two).
  c->broker().transactions().add_offsets(
      id, p->first, p->second, group_id,
      [c, group_id, txn_offset_commit = std::move(txn_offset_commit)](broker::result<void> added) mutable {
        if (!added.ok()) return no_content(c)(std::move(added));
        c->later([group_id, txn_offset_commit = std::move(txn_offset_commit)](api::call& call) mutable {
          const std::string passed = std::string(txn_offsets_added_query_name) + "=1";
          if (pass_on_to_group_coordinator(call.shared_from_this(), group_id, passed)) return;
          txn_offset_commit();
        });
      });
}

namespace {

void end_transaction(const call_ptr& c, bool committed) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto body = object_body(c, !committed, {"producer_id", "producer_epoch"});
  if (!body) return;
  const std::string id = c->params["transactional_id"];
  if (!committed && body->empty()) {
    // An operator's abort: whoever holds the id is fenced.
    return c->broker().transactions().abort_transaction(id, no_content(c));
  }
  auto p = producer_fields(c, *body);
  if (!p) return;
  c->broker().transactions().end_txn(id, p->first, p->second, committed, true, [c, id](broker::result<producer> r) {
    c->later([r = std::move(r), id](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
      call.respond_json(200, producer_json(call, id, *r));
    });
  });
}

}  // namespace

void v3_commit_transaction(const call_ptr& c) { end_transaction(c, true); }
void v3_abort_transaction(const call_ptr& c) { end_transaction(c, false); }

void v3_list_transactions(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  broker::list_transactions_filter filter;
  if (auto s = c->query.find("state"); s != c->query.end()) {
    const auto& names = broker::transaction_state_names;
    if (std::find(names.begin(), names.end(), s->second) == names.end()) {
      std::string valid;
      for (auto n : names) valid += std::string(valid.empty() ? "" : ", ") + std::string(n);
      return c->fail(400, ec::bad_request,
                     "query parameter state must be one of " + valid + " (Kafka's names), got \"" + s->second + "\"");
    }
    filter.states.push_back(s->second);
  }
  c->broker().transactions().list_transactions(
      std::move(filter), [c](broker::result<std::vector<broker::transaction_listing>> r) {
        c->later([r = std::move(r)](api::call& call) {
          if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
          json data = json::array();
          for (const auto& l : *r) {
            // Kafka's ListTransactions lists the ids the caller may DESCRIBE.
            if (!call.authorized(security::resource_type::transactional_id, l.transactional_id,
                                 security::acl_operation::describe)) {
              continue;
            }
            data.push_back({{"kind", "KafkaTransaction"},
                            {"metadata", {{"self", transactions_url(call) + "/" + percent_encode_segment(l.transactional_id)}}},
                            {"transactional_id", l.transactional_id},
                            {"producer_id", l.producer_id.value()},
                            {"state", l.state},
                            {"transaction_start_ms", l.txn_start_ms},
                            {"coordinator_id", l.coordinator_id}});
          }
          call.respond_json(200, {{"kind", "KafkaTransactionList"},
                                  {"metadata", {{"self", transactions_url(call)}}},
                                  {"data", data}});
        });
      });
}

void v3_get_transaction(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  c->broker().transactions().describe_transaction(
      c->params["transactional_id"], [c](broker::result<broker::transaction_description> r) {
        c->later([r = std::move(r)](api::call& call) {
          if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
          call.respond_json(200, description_json(call, *r));
        });
      });
}

}  // namespace ringlog::gateway::routes
