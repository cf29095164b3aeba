// v2 consumer instances (Confluent REST Proxy v2 /consumers/...).

#include "api_routes.h"

#include <array>
#include <limits>
#include "json_fields.h"
#include "record_json.h"
#include "request_parsing.h"
#include "ringlog/group/limits.h"

namespace ringlog::gateway::routes {

// -- v2 consumers (issue 4): instances are leases held by the group coordinator, so any shard
// (and any broker, later) serves a base_uri; no consumer state lives in this process's connection.

/// The request body as JSON; null for an empty body. Answers 400/422 and returns nullopt when bad.
std::optional<json> consumer_body(const call_ptr& c) {
  if (c->request.body.find_first_not_of(" \t\r\n") == std::string::npos) return json(nullptr);
  // As the REST Proxy: a body must say it is JSON (415 otherwise); an empty one needs no type.
  if (!c->content_type_in(consumer_offers)) return std::nullopt;
  try {
    json j = json::parse(c->request.body);
    if (!j.is_object()) {
      c->fail(422, ec::unprocessable, "the request body must be a JSON object");
      return std::nullopt;
    }
    return j;
  } catch (const json::exception& e) {
    c->fail(400, ec::bad_request, std::string("malformed JSON request body: ") + e.what());
    return std::nullopt;
  }
}

/// A consumer setting given as a JSON string or number/bool (the REST proxy takes strings).
std::optional<std::string> setting_text(const json& body, const std::string& name) {
  if (!body.is_object() || !body.contains(name) || body[name].is_null()) return std::nullopt;
  const json& v = body[name];
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

/// How an error message names the JSON type of `v` ("a string", "an integer", ...).
std::string json_type_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

/// A topic name from a consumer body, checked as topic creation checks it (Kafka's legal
/// characters and length): 400 naming it, before the group coordinator sees it, so an illegal
/// name is never subscribed, committed or answered with an empty list.
bool check_topic_name(api::call& call, const std::string& where, const std::string& topic) {
  auto valid = broker::validate_topic_name(topic);
  if (valid.ok()) return true;
  call.fail(400, ec::kafka_bad_request, where + ": " + valid.error().message);
  return false;
}

/// The {group} path parameter: 400 naming it when it holds a control character (U+0000..U+001F,
/// U+007F), which no log line or console could show; checked before anything else is read.
bool check_group_name(api::call& call) {
  const std::string& group = call.params["group"];
  for (unsigned char ch : group) {
    if (ch < 0x20 || ch == 0x7f) {
      call.fail(400, ec::kafka_bad_request, "consumer group name " + dump(json(group)) +
                                                " holds a control character; group names are printable text");
      return false;
    }
  }
  return true;
}

/// `where` in a body as {"topic": string, "partition": integer}, each field named with the type it
/// must have; nullopt after answering 422 (wrong shape) or 400 (illegal topic name).
std::optional<model::topic_partition> topic_partition_at(const call_ptr& c, const json& item, const std::string& where) {
  if (!item.is_object()) {
    c->fail(422, ec::unprocessable, where + " must be an object {\"topic\", \"partition\", ...}, got " + json_type_of(item));
    return std::nullopt;
  }
  for (const char* field : {"topic", "partition"}) {
    if (!item.contains(field)) {
      c->fail(422, ec::unprocessable, where + "." + field + " is required");
      return std::nullopt;
    }
  }
  if (!item["topic"].is_string()) {
    c->fail(422, ec::unprocessable, where + ".topic must be a string, got " + json_type_of(item["topic"]));
    return std::nullopt;
  }
  auto partition = json_partition(item["partition"]);
  if (!partition) {
    c->fail(422, ec::unprocessable, where + ".partition must be " + json_partition_range + ", got " +
                                        (item["partition"].is_number_integer() ? item["partition"].dump() : json_type_of(item["partition"])));
    return std::nullopt;
  }
  std::string topic = item["topic"].get<std::string>();
  if (!check_topic_name(*c, where + ".topic", topic)) return std::nullopt;
  return model::topic_partition{std::move(topic), model::partition_id(*partition)};
}

/// Reads {"partitions":[{"topic","partition"}]} or the same array under `field`. Answers 422
/// (400 for an illegal topic name).
std::optional<std::vector<model::topic_partition>> partitions_field(const call_ptr& c, const json& body,
                                                                    const std::string& field) {
  std::vector<model::topic_partition> out;
  if (!body.is_object() || !body.contains(field)) return out;
  if (!body[field].is_array()) {
    c->fail(422, ec::unprocessable, field + " must be an array, got " + json_type_of(body[field]));
    return std::nullopt;
  }
  size_t i = 0;
  for (const auto& item : body[field]) {
    auto tp = topic_partition_at(c, item, field + "[" + std::to_string(i++) + "]");
    if (!tp) return std::nullopt;
    out.push_back(std::move(*tp));
  }
  return out;
}

std::string group_param(api::call& c) { return c.params["group"]; }
std::string instance_param(api::call& c) { return c.params["instance"]; }

void v2_create_consumer(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  if (!c->accept(consumer_offers)) return;
  auto body = consumer_body(c);
  if (!body) return;
  broker::consumer_instance_config cfg;
  cfg.group_id = c->params["group"];
  auto bad = [&](const std::string& why) { c->fail(422, ec::invalid_consumer_config, why); };
  // A setting not read here is refused by name (a misspelt "auto.offset.rest" must not silently
  // fall back to the default), as the WebSocket refuses fields it does not take.
  static constexpr std::array<std::string_view, 10> settings = {
      "name", "format", "auto.offset.reset", "auto.commit.enable", "group.instance.id", "partition.assignment.strategy",
      "fetch.min.bytes", "consumer.request.timeout.ms", "consumer.instance.timeout.ms", "session.timeout.ms"};
  if (body->is_object()) {
    for (const auto& [key, unused] : body->items()) {
      if (std::find(settings.begin(), settings.end(), key) != settings.end()) continue;
      std::string known;
      for (auto k : settings) known += (known.empty() ? "" : ", ") + std::string(k);
      return bad("unknown consumer setting \"" + key + "\"; the settings are " + known);
    }
  }
  if (auto name = setting_text(*body, "name")) {
    if (name->empty() || name->size() > 200) return bad("name must be 1..200 characters");
    cfg.name = *name;
  }
  if (auto format = setting_text(*body, "format")) {
    if (*format == "binary") cfg.format = broker::consumer_format::binary;
    else if (*format == "json") cfg.format = broker::consumer_format::json;
    else return bad("format must be binary or json, got \"" + *format + "\"");
  }
  if (auto reset = setting_text(*body, "auto.offset.reset")) {
    if (*reset == "earliest" || *reset == "smallest") cfg.auto_offset_reset = group::offset_reset::earliest;
    else if (*reset == "latest" || *reset == "largest") cfg.auto_offset_reset = group::offset_reset::latest;
    else if (*reset == "none") cfg.auto_offset_reset = group::offset_reset::none;
    else return bad("auto.offset.reset must be earliest, latest or none (smallest and largest are read as earliest and latest), got \"" + *reset + "\"");
  }
  if (auto commit = setting_text(*body, "auto.commit.enable")) {
    if (*commit == "true") cfg.auto_commit_enable = true;
    else if (*commit == "false") cfg.auto_commit_enable = false;
    else return bad("auto.commit.enable must be true or false, got \"" + *commit + "\"");
  }
  if (auto instance = setting_text(*body, "group.instance.id")) {
    if (instance->empty() || instance->size() > 249) return bad("group.instance.id must be 1..249 characters");
    cfg.group_instance_id = *instance;
  }
  if (auto strategy = setting_text(*body, "partition.assignment.strategy")) {
    // Kafka's class names are accepted too, for configs copied from Java clients.
    if (*strategy == "range" || *strategy == "org.apache.kafka.clients.consumer.RangeAssignor") {
      cfg.assignor = group::assignor_kind::range;
    } else if (*strategy == "roundrobin" || *strategy == "org.apache.kafka.clients.consumer.RoundRobinAssignor") {
      cfg.assignor = group::assignor_kind::round_robin;
    } else if (*strategy == "cooperative-sticky" ||
               *strategy == "org.apache.kafka.clients.consumer.CooperativeStickyAssignor") {
      cfg.assignor = group::assignor_kind::cooperative_sticky;
    } else {
      return bad("partition.assignment.strategy must be range, roundrobin or cooperative-sticky, got \"" + *strategy + "\"");
    }
  }
  auto int_setting = [&](const std::string& name, int64_t min, int64_t max) -> std::optional<std::optional<int64_t>> {
    auto text = setting_text(*body, name);
    if (!text) return std::optional<int64_t>{};
    auto v = parse_int(*text, min, max);
    if (!v) {
      bad(name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + *text);
      return std::nullopt;
    }
    return v;
  };
  auto min_bytes = int_setting("fetch.min.bytes", 1, std::numeric_limits<int32_t>::max());
  if (!min_bytes) return;
  if (*min_bytes) cfg.fetch_min_bytes = static_cast<int32_t>(**min_bytes);
  auto request_timeout = int_setting("consumer.request.timeout.ms", 0, c->self->options().fetch_wait_max_ms);
  if (!request_timeout) return;
  if (*request_timeout) cfg.request_timeout_ms = **request_timeout;
  for (const char* key : {"consumer.instance.timeout.ms", "session.timeout.ms"}) {
    auto timeout = int_setting(key, group::limits::session_timeout_ms_min, group::limits::session_timeout_ms_max);
    if (!timeout) return;
    if (*timeout) cfg.session_timeout_ms = **timeout;
  }
  c->broker().groups().create_consumer(std::move(cfg), [c](broker::result<broker::consumer_instance> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      std::string uri = call.base_url + "/consumers/" + percent_encode_segment(r->group_id) + "/instances/" +
                        percent_encode_segment(r->instance_id);
      call.respond_json(200, {{"instance_id", r->instance_id}, {"base_uri", uri}}, call.accepted);
    });
  });
}

void v2_delete_consumer(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  c->broker().groups().delete_consumer(group_param(*c), instance_param(*c), answer_no_content(c));
}

void v2_subscribe(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  auto body = consumer_body(c);
  if (!body) return;
  const bool has_topics = body->is_object() && body->contains("topics");
  const bool has_pattern = body->is_object() && body->contains("topic_pattern");
  if (has_topics && has_pattern) {
    return c->fail(409, ec::illegal_state, "subscription to topics and to a pattern are mutually exclusive");
  }
  group::subscription sub;
  if (has_topics) {
    const json& topics = (*body)["topics"];
    if (!topics.is_array() || topics.empty()) return c->fail(422, ec::unprocessable, "topics must be a non-empty array of strings");
    sub.kind = group::subscription_kind::topics;
    for (const auto& t : topics) {
      if (!t.is_string()) return c->fail(422, ec::unprocessable, "topics must be a non-empty array of strings");
      if (!check_topic_name(*c, "topics[" + std::to_string(sub.topics.size()) + "]", t.get<std::string>())) return;
      sub.topics.push_back(t.get<std::string>());
    }
  } else if (has_pattern) {
    if (!(*body)["topic_pattern"].is_string()) return c->fail(422, ec::unprocessable, "topic_pattern must be a string");
    sub.kind = group::subscription_kind::pattern;
    sub.pattern = (*body)["topic_pattern"].get<std::string>();
  } else {
    return c->fail(422, ec::unprocessable, "a list of topics or a topic_pattern is required");
  }
  c->broker().groups().subscribe(group_param(*c), instance_param(*c), std::move(sub), answer_no_content(c));
}

void v2_get_subscription(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  if (!c->accept(consumer_offers)) return;
  c->broker().groups().subscription(group_param(*c), instance_param(*c), [c](broker::result<group::subscription> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      json out = {{"topics", r->topics}};
      if (r->kind == group::subscription_kind::pattern) out["topic_pattern"] = r->pattern;
      call.respond_json(200, out, call.accepted);
    });
  });
}

void v2_unsubscribe(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  c->broker().groups().unsubscribe(group_param(*c), instance_param(*c), answer_no_content(c));
}

void v2_assign(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  auto body = consumer_body(c);
  if (!body) return;
  auto partitions = partitions_field(c, *body, "partitions");
  if (!partitions) return;
  group::partition_set set(partitions->begin(), partitions->end());
  c->broker().groups().assign(group_param(*c), instance_param(*c), std::move(set), answer_no_content(c));
}

json partitions_json(const group::partition_set& set) {
  json out = json::array();
  for (const auto& tp : set) out.push_back({{"topic", tp.topic}, {"partition", tp.partition.value()}});
  return out;
}

void v2_get_assignments(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  if (!c->accept(consumer_offers)) return;
  c->broker().groups().assignments(group_param(*c), instance_param(*c), [c](broker::result<group::partition_set> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      call.respond_json(200, {{"partitions", partitions_json(*r)}}, call.accepted);
    });
  });
}

/// POST .../positions: {"offsets": [{topic, partition, offset}]} and/or Confluent's seek by time,
/// {"timestamps": [{topic, partition, timestamp}]} (ISO-8601, or ms since the epoch). An element
/// of offsets may carry a timestamp instead of an offset (ringlog's older form, kept).
void v2_seek(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  auto body = consumer_body(c);
  if (!body) return;
  std::vector<broker::seek_request> seeks;
  const bool has_offsets = body->is_object() && body->contains("offsets");
  const bool has_timestamps = body->is_object() && body->contains("timestamps");
  if (!has_offsets && !has_timestamps) {
    return c->fail(422, ec::unprocessable,
                   "offsets (an array of {topic, partition, offset}) or timestamps (an array of {topic, partition, "
                   "timestamp}) is required");
  }
  for (const char* field : {"offsets", "timestamps"}) {
    if (!body->contains(field)) continue;
    const json& items = (*body)[field];
    if (!items.is_array()) return c->fail(422, ec::unprocessable, std::string(field) + " must be an array, got " + json_type_of(items));
    const bool by_time = std::string_view(field) == "timestamps";
    size_t i = 0;
    for (const auto& item : items) {
      std::string where = std::string(field) + "[" + std::to_string(i++) + "]";
      auto tp = topic_partition_at(c, item, where);
      if (!tp) return;
      broker::seek_request s;
      s.partition = std::move(*tp);
      if (!by_time && item.contains("offset") && item["offset"].is_number_integer()) {
        s.kind = broker::seek_kind::offset;
        s.value = item["offset"].get<int64_t>();
      } else if (item.contains("timestamp")) {
        s.kind = broker::seek_kind::timestamp;
        if (item["timestamp"].is_number_integer()) {
          s.value = item["timestamp"].get<int64_t>();
        } else if (auto ms = item["timestamp"].is_string() ? parse_iso8601_ms(item["timestamp"].get<std::string>())
                                                            : std::nullopt) {
          s.value = *ms;
        } else {
          return c->fail(422, ec::unprocessable, where + ".timestamp must be an ISO-8601 date-time or ms since the epoch");
        }
      } else if (by_time) {
        return c->fail(422, ec::unprocessable, where + ".timestamp is required");
      } else {
        return c->fail(422, ec::unprocessable,
                       where + " needs an integer offset or a timestamp" +
                           (item.contains("offset") ? ", got offset as " + json_type_of(item["offset"]) : std::string()));
      }
      seeks.push_back(std::move(s));
    }
  }
  c->broker().groups().seek(group_param(*c), instance_param(*c), std::move(seeks), answer_no_content(c));
}

void v2_seek_edge(const call_ptr& c, broker::seek_kind kind) {
  if (!check_group_name(*c)) return;
  auto body = consumer_body(c);
  if (!body) return;
  auto partitions = partitions_field(c, *body, "partitions");
  if (!partitions) return;
  std::vector<broker::seek_request> seeks;
  for (const auto& tp : *partitions) seeks.push_back({tp, kind, 0});
  c->broker().groups().seek(group_param(*c), instance_param(*c), std::move(seeks), answer_no_content(c));
}
void v2_seek_beginning(const call_ptr& c) { v2_seek_edge(c, broker::seek_kind::beginning); }
void v2_seek_end(const call_ptr& c) { v2_seek_edge(c, broker::seek_kind::end); }

std::string consumed_records_json(const std::vector<broker::consumed_record>& records, bool as_json,
                                  std::optional<int64_t>& bad_offset) {
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& [tp, rec] = records[i];
    if (i > 0) out += ',';
    const bool ok = append_record_json(out, "", dump(json(tp.topic)), tp.partition.value(), rec, as_json);
    if (!ok && !bad_offset) bad_offset = rec.record_offset.value();
  }
  return out + "]";
}

void v2_consumer_records(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  const api_options& o = c->self->options();
  auto max_bytes = c->query_int("max_bytes", fetch_max_bytes_default, 1, o.fetch_response_bytes_max, "fetch.response.bytes.max");
  if (!max_bytes) return;
  std::optional<int64_t> timeout;
  auto pick = negotiate(c->request.accept, {v2_binary_type, v2_json_type, ndjson_type, sse_type});
  const bool wants_stream = pick && (*pick == ndjson_type || *pick == sse_type);   // its timeout is checked later
  if (c->query.count("timeout") && !wants_stream) {
    timeout = c->query_int("timeout", std::nullopt, 0, o.fetch_wait_max_ms, "fetch.wait.max.ms");
    if (!timeout) return;
  }
  // The instance's format decides what Accept may ask for (Confluent: 40601 otherwise).
  c->broker().groups().describe_consumer(group_param(*c), instance_param(*c), [c, max_bytes = *max_bytes, timeout](
                                                                                 broker::result<broker::consumer_instance> r) {
    c->later([r = std::move(r), max_bytes, timeout](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      const bool as_json = r->format == broker::consumer_format::json;
      const std::string type = as_json ? v2_json_type : v2_binary_type;
      auto chosen = negotiate(call.request.accept, {type, ndjson_type, sse_type});
      if (chosen && *chosen != type) {
        return stream_consumer(call.shared_from_this(), *chosen, as_json, r->group_id, r->instance_id);
      }
      if (!chosen) {
        return call.fail(406, ec::consumer_format_mismatch, "consumer instance format is " + std::string(as_json ? "json" : "binary") +
                                                      "; read its records with Accept: " + type + ", not \"" +
                                                      call.request.accept + "\"");
      }
      broker::poll_request req{timeout.value_or(std::min(r->request_timeout_ms, call.self->options().fetch_wait_max_ms)),
                               max_bytes};
      auto self = call.shared_from_this();
      call.broker().groups().poll(r->group_id, r->instance_id, req, [self, as_json, type](
                                                                        broker::result<std::vector<broker::consumed_record>> polled) {
        self->later([polled = std::move(polled), as_json, type](api::call& call2) {
          if (!polled.ok()) return call2.fail(to_api_error(polled.error()));
          std::optional<int64_t> bad_offset;
          std::string body = consumed_records_json(*polled, as_json, bad_offset);
          if (bad_offset) {
            return call2.fail(406, ec::not_acceptable, "record at offset " + std::to_string(*bad_offset) +
                                                           " is not JSON; use a binary consumer instance");
          }
          std::map<std::string, std::pair<uint64_t, uint64_t>> per_topic;
          for (const auto& cr : *polled) {
            auto& [n, b] = per_topic[cr.partition.topic];
            ++n;
            b += record_bytes(cr.record);
          }
          for (const auto& [t, nb] : per_topic) call2.self->metrics_registry().add_bytes_out(t, nb.first, nb.second);
          http_response resp;
          resp.content_type = type;
          resp.body = std::move(body);
          call2.respond(std::move(resp));
        });
      });
    });
  });
}

void v2_commit_offsets(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  auto body = consumer_body(c);
  if (!body) return;
  std::optional<std::vector<group::processed_offset>> offsets;
  if (body->is_object() && body->contains("offsets")) {
    const json& items = (*body)["offsets"];
    if (!items.is_array()) return c->fail(422, ec::unprocessable, "offsets must be an array");
    offsets.emplace();
    size_t i = 0;
    for (const auto& item : items) {
      std::string where = "offsets[" + std::to_string(i++) + "]";
      auto tp = topic_partition_at(c, item, where);
      if (!tp) return;
      if (!item.contains("offset")) return c->fail(422, ec::unprocessable, where + ".offset is required");
      if (!item["offset"].is_number_integer() ||
          (item["offset"].is_number_unsigned() && item["offset"].get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})) {
        return c->fail(422, ec::unprocessable, where + ".offset must be an integer (a 64-bit JSON number), got " +
                                                   json_type_of(item["offset"]));
      }
      group::processed_offset p;
      p.partition = std::move(*tp);
      p.last_processed = model::offset(item["offset"].get<int64_t>());
      if (item.contains("metadata") && item["metadata"].is_string()) p.metadata = item["metadata"].get<std::string>();
      offsets->push_back(std::move(p));
    }
    if (offsets->empty()) offsets.reset();  // {"offsets":[]}: everything returned, like an empty body
  }
  c->broker().groups().commit(group_param(*c), instance_param(*c), std::move(offsets),
                              answer_no_content<group::partition_map<group::committed_offset>>(c));
}

void v2_committed_offsets(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  if (!c->accept(consumer_offers)) return;
  auto body = consumer_body(c);
  if (!body) return;
  auto partitions = partitions_field(c, *body, "partitions");
  if (!partitions) return;
  group::partition_set set(partitions->begin(), partitions->end());
  c->broker().groups().committed(group_param(*c), instance_param(*c), std::move(set),
                                 [c](broker::result<group::partition_map<group::committed_offset>> r) {
                                   c->later([r = std::move(r)](api::call& call) {
                                     if (!r.ok()) return call.fail(to_api_error(r.error()));
                                     json out = json::array();
                                     for (const auto& [tp, co] : *r) {
                                       out.push_back({{"topic", tp.topic},
                                                      {"partition", tp.partition.value()},
                                                      {"offset", co.committed.value()},
                                                      {"metadata", co.metadata}});
                                     }
                                     call.respond_json(200, {{"offsets", out}}, call.accepted);
                                   });
                                 });
}

}  // namespace ringlog::gateway::routes
