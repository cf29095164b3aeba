// Retries and dead letters over REST (issue 18, docs/retries.md): a consumer instance's nacks
// (Confluent-style v2 route beside .../offsets) and a group's dead-letter topics (v3 routes beside
// the group's lags): list with counts, browse, redrive. Each route has the group in its path, so
// a broker that does not coordinate the group passes it on (api_group_forward.cc).

#include "api_routes.h"

#include "base64.h"
#include "consumer_parsing.h"
#include "ringlog/delay/retry.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {

bool consumer_content_type(const call_ptr& c);
bool check_group_name(api::call& call);

namespace {

/// The bytes as text when they are printable ASCII (tabs and newlines too), for the console;
/// null otherwise (the base64 field is always there).
json printable(const std::optional<model::bytes>& b) {
  if (!b) return nullptr;
  std::string s;
  s.reserve(b->size());
  for (auto byte : *b) {
    const auto ch = static_cast<unsigned char>(byte);
    if ((ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') || ch >= 0x7f) return nullptr;
    s.push_back(static_cast<char>(ch));
  }
  return s;
}

json base64_of(const std::optional<model::bytes>& b) {
  if (!b) return nullptr;
  return base64_encode(std::span<const std::byte>(b->data(), b->size()));
}

json dead_letter_json(const broker::dead_letter& d) {
  json headers = json::array();
  for (const auto& h : d.record.headers) {
    headers.push_back({{"key", h.key}, {"value", base64_of(h.value)}});
  }
  return {{"partition_id", d.partition.value()},
          {"offset", d.record.record_offset.value()},
          {"timestamp", d.record.timestamp},
          {"original_topic", d.original_topic},
          {"original_partition", d.original_partition},
          {"original_offset", d.original_offset},
          {"attempts", d.attempts},
          {"reasons", d.reasons},
          {"redriven", d.redriven},
          {"key", base64_of(d.record.key)},
          {"value", base64_of(d.record.value)},
          {"key_text", printable(d.record.key)},
          {"value_text", printable(d.record.value)},
          {"headers", headers}};
}

std::string group_path(api::call& c) {
  return c.base_url + "/v3/clusters/" + c.params["cluster_id"] + "/consumer-groups/" +
         percent_encode_segment(c.params["consumer_group_id"]) + "/dead-letters";
}

/// A JSON body of a redrive (see v3_redrive); refusals name the field.
std::optional<api_error> parse_redrive(const std::string& body, broker::redrive_request& out) {
  if (is_blank(body)) return std::nullopt;
  api_error refusal;
  json j = parse_json(body, "request body", refusal);
  if (j.is_discarded()) return refusal;
  if (j.is_null()) return std::nullopt;
  if (!j.is_object()) return api_error{422, ec::unprocessable, "the request body must be a JSON object"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "to" && it.key() != "offsets" && it.key() != "ranges") {
      return api_error{422, ec::unprocessable, "unknown field \"" + it.key() + "\"; a redrive takes to, offsets and ranges"};
    }
  }
  if (j.contains("to") && !j["to"].is_null()) {
    if (!j["to"].is_string() || (j["to"] != "original" && j["to"] != "retry")) {
      return api_error{422, ec::unprocessable, "to must be \"original\" or \"retry\""};
    }
    out.target = j["to"] == "retry" ? delay::redrive_target::retry : delay::redrive_target::original;
  }
  auto int_field = [](const json& item, const std::string& where, const char* name, int64_t max) -> std::optional<int64_t> {
    if (!item.contains(name) || !item[name].is_number_integer() || item[name].get<int64_t>() < 0 ||
        item[name].get<int64_t>() > max) {
      return std::nullopt;
    }
    (void)where;
    return item[name].get<int64_t>();
  };
  constexpr int64_t i32max = std::numeric_limits<int32_t>::max();
  constexpr int64_t i64max = std::numeric_limits<int64_t>::max();
  if (j.contains("offsets") && !j["offsets"].is_null()) {
    if (!j["offsets"].is_array()) return api_error{422, ec::unprocessable, "offsets must be an array of {partition, offset}"};
    for (size_t i = 0; i < j["offsets"].size(); ++i) {
      const json& item = j["offsets"][i];
      const std::string where = "offsets[" + std::to_string(i) + "]";
      if (!item.is_object()) return api_error{422, ec::unprocessable, where + " must be an object {partition, offset}"};
      auto p = int_field(item, where, "partition", i32max);
      if (!p) return api_error{422, ec::unprocessable, where + ".partition must be an integer in [0, 2147483647]"};
      auto o = int_field(item, where, "offset", i64max);
      if (!o) return api_error{422, ec::unprocessable, where + ".offset must be an integer >= 0"};
      out.offsets.push_back({static_cast<int32_t>(*p), model::offset{*o}});
    }
  }
  if (j.contains("ranges") && !j["ranges"].is_null()) {
    if (!j["ranges"].is_array()) {
      return api_error{422, ec::unprocessable, "ranges must be an array of {partition, from_offset, to_offset}"};
    }
    for (size_t i = 0; i < j["ranges"].size(); ++i) {
      const json& item = j["ranges"][i];
      const std::string where = "ranges[" + std::to_string(i) + "]";
      if (!item.is_object()) return api_error{422, ec::unprocessable, where + " must be an object"};
      auto p = int_field(item, where, "partition", i32max);
      if (!p) return api_error{422, ec::unprocessable, where + ".partition must be an integer in [0, 2147483647]"};
      auto from = int_field(item, where, "from_offset", i64max);
      if (!from) return api_error{422, ec::unprocessable, where + ".from_offset must be an integer >= 0"};
      auto to = int_field(item, where, "to_offset", i64max);
      if (!to || *to < *from) {
        return api_error{422, ec::unprocessable, where + ".to_offset must be an integer >= from_offset (exclusive end)"};
      }
      out.ranges.push_back({static_cast<int32_t>(*p), model::offset{*from}, model::offset{*to}});
    }
  }
  return std::nullopt;
}

}  // namespace

/// POST /consumers/{group}/instances/{instance}/nacks: {"offsets": [{topic, partition, offset,
/// reason}]} -> 204 once every copy is durable (broker::group_api::nack).
void v2_nack(const call_ptr& c) {
  if (!check_group_name(*c) || !consumer_content_type(c)) return;
  auto nacks = parse_nacks(c->request.body);
  if (!nacks.ok()) return c->fail(nacks.error());
  for (auto& n : nacks.value()) {
    if (!c->require(security::resource_type::topic, n.partition.topic, security::acl_operation::read)) return;
    n.principal = c->principal();
    n.host = c->peer_ip();
  }
  c->broker().groups().nack(c->params["group"], c->params["instance"], std::move(nacks).value(), answer_no_content(c));
}

/// GET /v3/clusters/{c}/consumer-groups/{g}/dead-letters: the group's dead-letter topics, those
/// whose dead-letter topic and original topic the caller may both DESCRIBE (issue 30: a group's
/// routes never name a hidden topic, as Kafka's OffsetFetch leaves them out).
void v3_dead_letter_topics(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  c->broker().groups().dead_letter_topics(
      c->params["consumer_group_id"], [c](broker::result<std::vector<broker::dead_letter_topic_info>> r) {
        c->later([r = std::move(r)](api::call& call) {
          if (!r.ok()) return call.fail(to_api_error(r.error()));
          json data = json::array();
          for (const auto& t : *r) {
            if (!call.authorized(security::resource_type::topic, t.topic, security::acl_operation::describe) ||
                !call.authorized(security::resource_type::topic, t.original_topic, security::acl_operation::describe)) {
              continue;
            }
            data.push_back({{"kind", "RinglogDeadLetterTopic"},
                            {"topic_name", t.topic},
                            {"original_topic_name", t.original_topic},
                            {"partitions_count", t.partitions_count},
                            {"dead_letters", t.dead_letters},
                            {"redriven", t.redriven},
                            {"pending", t.dead_letters - t.redriven}});
          }
          call.respond_json(200, {{"kind", "RinglogDeadLetterTopicList"},
                                  {"metadata", {{"self", group_path(call)}}},
                                  {"consumer_group_id", call.params["consumer_group_id"]},
                                  {"data", data}});
        });
      });
}

/// GET .../dead-letters/{topic_name}/records?partition=&offset=&limit=&filter=: dead letters with
/// their original coordinates, attempts and reasons.
void v3_dead_letters(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  broker::dead_letters_request req;
  req.group_id = c->params["consumer_group_id"];
  req.topic = c->params["topic_name"];
  if (c->query.contains("partition")) {
    auto p = c->query_int("partition", 0, 0, std::numeric_limits<int32_t>::max());
    if (!p) return;
    req.partition = static_cast<int32_t>(*p);
  }
  auto from = c->query_int("offset", 0, 0, std::numeric_limits<int64_t>::max());
  if (!from) return;
  req.from_offset = model::offset{*from};
  auto limit = c->query_int("limit", 100, 1, broker::dead_letters_browse_max, "dead_letters_browse_max");
  if (!limit) return;
  req.limit = static_cast<int32_t>(*limit);
  if (auto f = c->query.find("filter"); f != c->query.end()) req.filter = f->second;
  c->broker().groups().dead_letters(std::move(req), [c](broker::result<std::vector<broker::dead_letter>> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      json data = json::array();
      for (const auto& d : *r) data.push_back(dead_letter_json(d));
      call.respond_json(200, {{"kind", "RinglogDeadLetterList"},
                              {"metadata", {{"self", group_path(call) + "/" + call.params["topic_name"] + "/records"}}},
                              {"topic_name", call.params["topic_name"]},
                              {"data", data}});
    });
  });
}

namespace {
void redrive(const call_ptr& c, broker::redrive_request req);
}  // namespace

/// POST .../dead-letters/{topic_name}/redrive: {"to": "original" | "retry", "offsets":
/// [{partition, offset}], "ranges": [{partition, from_offset, to_offset}]} (neither: all) -> 200
/// with the counts; each dead letter is redriven at most once.
void v3_redrive(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  if (!is_blank(c->request.body) && !c->content_type_in({"application/json"})) return;
  broker::redrive_request req;
  req.group_id = c->params["consumer_group_id"];
  req.topic = c->params["topic_name"];
  if (auto bad = parse_redrive(c->request.body, req)) return c->fail(*bad);
  // Each letter's copy is checked where it is made (its topic comes from the letter's headers).
  req.principal = c->principal();
  req.host = c->peer_ip();
  if (!c->broker().security().authorizer_enabled()) return redrive(c, std::move(req));
  // Issue 30: a redrive writes the dead letters back to their original topic: WRITE on it.
  c->broker().groups().dead_letter_topics(
      req.group_id, [c, req = std::move(req)](broker::result<std::vector<broker::dead_letter_topic_info>> r) mutable {
        c->later([r = std::move(r), req = std::move(req)](api::call& call) mutable {
          if (!r.ok()) return call.fail(to_api_error(r.error()));
          for (const auto& t : *r) {
            if (t.topic != req.topic) continue;
            if (!call.require(security::resource_type::topic, t.original_topic, security::acl_operation::write)) return;
          }
          redrive(call.shared_from_this(), std::move(req));
        });
      });
}

namespace {

void redrive(const call_ptr& c, broker::redrive_request req) {
  c->broker().groups().redrive(std::move(req), [c](broker::result<broker::redrive_result> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      call.respond_json(200, {{"kind", "RinglogRedrive"},
                              {"topic_name", call.params["topic_name"]},
                              {"selected", r->selected},
                              {"redriven", r->redriven},
                              {"already_redriven", r->already_redriven},
                              {"failures", r->failures}});
    });
  });
}

}  // namespace

}  // namespace ringlog::gateway::routes
