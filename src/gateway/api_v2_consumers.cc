// v2 consumer instances (Confluent REST Proxy v2 /consumers/...).

#include "api_routes.h"

#include <array>
#include <limits>
#include "consumer_parsing.h"
#include "record_json.h"
#include "request_parsing.h"
#include "ringlog/group/limits.h"

namespace ringlog::gateway::routes {

// -- v2 consumers (issue 4): instances are leases held by the group coordinator, so any shard
// (and any broker, later) serves a base_uri; no consumer state lives in this process's connection.

/// A body must have one of the v2 types (415 otherwise, application/json too), as the REST
/// Proxy's consumer routes; a blank one needs no type. Answers and returns false when refused.
bool consumer_content_type(const call_ptr& c) {
  if (is_blank(c->request.body)) return true;
  return c->content_type_in(v2_consumer_body_types).has_value();
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

std::string group_param(api::call& c) { return c.params["group"]; }
std::string instance_param(api::call& c) { return c.params["instance"]; }

void v2_create_consumer(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  if (!c->accept(consumer_offers) || !consumer_content_type(c)) return;
  const auto& bc = c->broker().config();
  const delay::retry_policy retry_defaults = broker::retry_defaults_of(bc);
  auto parsed = parse_create_consumer(c->request.body, c->self->options().fetch_wait_max_ms, retry_defaults);
  if (!parsed.ok()) return c->fail(parsed.error());
  broker::consumer_instance_config cfg = std::move(parsed).value();
  cfg.group_id = c->params["group"];
  cfg.owner = c->principal().to_string();
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
  if (!check_group_name(*c) || !consumer_content_type(c)) return;
  auto sub = parse_subscription(c->request.body);
  if (!sub.ok()) return c->fail(sub.error());
  // Issue 30: READ on each topic named (a pattern's matches are checked as records are read).
  for (const auto& topic : sub->topics) {
    if (!c->require(security::resource_type::topic, topic, security::acl_operation::read)) return;
  }
  c->broker().groups().subscribe(group_param(*c), instance_param(*c), std::move(sub).value(), answer_no_content(c));
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
  if (!check_group_name(*c) || !consumer_content_type(c)) return;
  auto partitions = parse_partitions(c->request.body);
  if (!partitions.ok()) return c->fail(partitions.error());
  if (!require_topics(*c, *partitions)) return;
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
      // Issue 30: a pattern may match topics the caller may not DESCRIBE; they are not shown.
      group::partition_set shown;
      for (const auto& tp : *r) {
        if (call.authorized(security::resource_type::topic, tp.topic, security::acl_operation::describe)) shown.insert(tp);
      }
      call.respond_json(200, {{"partitions", partitions_json(shown)}}, call.accepted);
    });
  });
}

/// POST .../positions (consumer_parsing.h: parse_seek).
void v2_seek(const call_ptr& c) {
  if (!check_group_name(*c) || !consumer_content_type(c)) return;
  auto seeks = parse_seek(c->request.body);
  if (!seeks.ok()) return c->fail(seeks.error());
  // Issue 30: READ on each topic sought (a seek sets what an empty-body commit then commits).
  for (const auto& s : *seeks) {
    if (!c->require(security::resource_type::topic, s.partition.topic, security::acl_operation::read)) return;
  }
  c->broker().groups().seek(group_param(*c), instance_param(*c), std::move(seeks).value(), answer_no_content(c));
}

void v2_seek_edge(const call_ptr& c, broker::seek_kind kind) {
  if (!check_group_name(*c) || !consumer_content_type(c)) return;
  auto partitions = parse_partitions(c->request.body);
  if (!partitions.ok()) return c->fail(partitions.error());
  if (!require_topics(*c, *partitions)) return;
  std::vector<broker::seek_request> seeks;
  for (const auto& tp : *partitions) seeks.push_back({tp, kind, 0});
  c->broker().groups().seek(group_param(*c), instance_param(*c), std::move(seeks), answer_no_content(c));
}
void v2_seek_beginning(const call_ptr& c) { v2_seek_edge(c, broker::seek_kind::beginning); }
void v2_seek_end(const call_ptr& c) { v2_seek_edge(c, broker::seek_kind::end); }

/// The first `count` of `records` as the answer's JSON array.
std::string consumed_records_json(const std::vector<broker::consumed_record>& records, size_t count, bool as_json,
                                  std::optional<std::string>& refusal) {
  std::string out = "[";
  for (size_t i = 0; i < count; ++i) {
    const auto& tp = records[i].partition;
    const auto& rec = records[i].record;
    if (i > 0) out += ',';
    const bool ok = append_record_json(out, "", dump(json(tp.topic)), tp.partition.value(), rec, as_json);
    if (!ok && !refusal) refusal = not_json_message(tp.topic, tp.partition.value(), rec);
  }
  return out + "]";
}

void poll_records(const call_ptr& self, const std::string& group, const std::string& instance,
                  const broker::poll_request& req, bool as_json, const std::string& type);

void v2_consumer_records(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  const api_options& o = c->self->options();
  auto max_bytes = c->query_int("max_bytes", fetch_max_bytes_default, 1, o.fetch_response_bytes_max, "fetch.response.bytes.max");
  if (!max_bytes) return;
  *max_bytes = c->quota_read_bytes_max(*max_bytes);
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
      broker::poll_request req;
      req.timeout_ms = timeout.value_or(std::min(r->request_timeout_ms, call.self->options().fetch_wait_max_ms));
      req.max_bytes = max_bytes;
      // A json instance stops in front of a record it cannot embed: its position stays there
      // (no poll or auto-commit moves past it) until the client seeks past it.
      if (as_json) req.accepts = json_readable;
      // The connection is watched and the poll takes nothing once it closes: the answer would go
      // nowhere while the positions moved past its records, which the client's next poll would
      // skip. A poll another broker passed on (group_proxy.h) may lose that broker (kill -9, its
      // host gone) or that broker's client (which closes the passed-on connection); a client's
      // own poll here may lose its client. Both are watched alike: before session 40 only the
      // passed-on one was, and a client that left a poll at the coordinator lost its records
      // while one that left through another broker did not. A request pipelined behind the poll
      // is kept and served after it (response_sink::watch_disconnect).
      call.sink->watch_disconnect();
      req.requester_connected = call.sink->connected_check();
      poll_records(call.shared_from_this(), r->group_id, r->instance_id, req, as_json, type);
    });
  });
}

/// Seeks that set a consumer instance back to the first record `polled` holds of each partition.
std::vector<broker::seek_request> rewind_seeks(const std::vector<broker::consumed_record>& polled) {
  group::partition_map<int64_t> first;
  for (const auto& cr : polled) first.try_emplace(cr.partition, cr.record.record_offset.value());
  std::vector<broker::seek_request> out;
  for (const auto& [tp, offset] : first) out.push_back({tp, broker::seek_kind::offset, offset});
  return out;
}

/// The poll of v2_consumer_records, answered as the instance's format.
void poll_records(const call_ptr& self, const std::string& group, const std::string& instance,
                  const broker::poll_request& req, bool as_json, const std::string& type) {
  self->broker().groups().poll(group, instance, req, [self, group, instance, as_json, type](
                                                       broker::result<std::vector<broker::consumed_record>> polled) {
    self->later([polled = std::move(polled), group, instance, as_json, type](api::call& call2) {
      if (!polled.ok()) return call2.fail(to_api_error(polled.error()));
      // Issue 30: READ on every topic read (an ACL removed since the subscription, a
      // pattern's match): refused whole, nothing shown, and the positions the poll moved are set
      // back to its first record of each partition, so a refused poll skips nothing.
      for (const auto& cr : *polled) {
        if (call2.authorized(security::resource_type::topic, cr.partition.topic, security::acl_operation::read)) continue;
        call2.broker().groups().seek(group, instance, rewind_seeks(*polled), [](broker::result<void>) {});
        call2.require(security::resource_type::topic, cr.partition.topic, security::acl_operation::read);
        return;
      }
      // Over http_response_bytes_held_max: 503, and the positions set back as for a refusal.
      size_t estimate = 2;
      for (const auto& cr : *polled) estimate += record_json_bytes_estimate(cr.record, cr.partition.topic.size() + 2);
      auto hold = call2.hold_answer_bytes(estimate);
      if (!hold) return call2.broker().groups().seek(group, instance, rewind_seeks(*polled), [](broker::result<void>) {});
      // The poll stopped in front of a record this json instance cannot embed (it ends the
      // answer, marked): the records before it go out; alone, it is the 406, and the position
      // stays at it either way.
      const bool stopped = !polled->empty() && polled->back().refused;
      const size_t count = polled->size() - (stopped ? 1 : 0);
      if (stopped && count == 0) {
        const auto& tp = polled->back().partition;
        const auto& rec = polled->back().record;
        return call2.fail(406, ec::not_acceptable,
                          not_json_message(tp.topic, tp.partition.value(), rec) +
                              "; the consumer instance stays at that offset: read it with a binary consumer instance, "
                              "or seek past it (POST .../positions with offset " +
                              std::to_string(rec.record_offset.value() + 1) + ")");
      }
      std::optional<std::string> refusal;
      std::string body = consumed_records_json(*polled, count, as_json, refusal);
      if (refusal) return call2.fail(406, ec::not_acceptable, *refusal + "; use a binary consumer instance");
      std::map<std::string, std::pair<uint64_t, uint64_t>> per_topic;
      for (size_t i = 0; i < count; ++i) {
        const auto& cr = (*polled)[i];
        auto& [n, b] = per_topic[cr.partition.topic];
        ++n;
        b += record_bytes(cr.record);
      }
      for (const auto& [t, nb] : per_topic) call2.self->metrics_registry().add_bytes_out(t, nb.first, nb.second);
      http_response resp;
      resp.content_type = type;
      resp.body = std::move(body);
      resp.hold = std::move(hold);
      call2.respond(std::move(resp));
    });
  });
}

void v2_commit_offsets(const call_ptr& c) {
  if (!check_group_name(*c) || !consumer_content_type(c)) return;
  auto offsets = parse_commit(c->request.body);
  if (!offsets.ok()) return c->fail(offsets.error());
  if (const auto& named = offsets.value()) {
    for (const auto& o : *named) {
      if (!c->require(security::resource_type::topic, o.partition.topic, security::acl_operation::read)) return;
    }
  }
  c->broker().groups().commit(group_param(*c), instance_param(*c), std::move(offsets).value(),
                              answer_no_content<group::partition_map<group::committed_offset>>(c));
}

void v2_committed_offsets(const call_ptr& c) {
  if (!check_group_name(*c)) return;
  if (!c->accept(consumer_offers) || !consumer_content_type(c)) return;
  auto partitions = parse_partitions(c->request.body);
  if (!partitions.ok()) return c->fail(partitions.error());
  if (!require_topics(*c, *partitions, security::acl_operation::describe)) return;
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
