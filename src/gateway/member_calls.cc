#include "member_calls.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "base64.h"
#include "errors.h"
#include "http_util.h"
#include "ringlog/base/assert.h"

namespace ringlog::gateway {
namespace {

using json = nlohmann::json;
using broker::errc;
using broker::error;

constexpr const char* v2_type = "application/vnd.kafka.v2+json";
constexpr const char* v2_binary_type = "application/vnd.kafka.binary.v2+json";

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string instance_path(const std::string& group_id, const std::string& instance_id) {
  return "/consumers/" + percent_encode_segment(group_id) + "/instances/" + percent_encode_segment(instance_id);
}

/// `prefix`, '-' and a random version-4 UUID: the instance id a coordinator would generate for a
/// member of this client name, which the REST create call cannot ask for by client name.
std::string generated_name(const std::string& prefix) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  const uint64_t hi = (random() & 0xffffffffffff0fffULL) | 0x4000ULL;
  const uint64_t lo = (random() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char text[40];
  std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return prefix + "-" + text;
}

json partitions_json(const group::partition_set& set) {
  json out = json::array();
  for (const auto& tp : set) out.push_back({{"topic", tp.topic}, {"partition", tp.partition.value()}});
  return out;
}

/// A REST answer that must be 2xx: its error otherwise.
template <typename T>
bool failed(const broker::result<http_response>& r, const std::function<void(broker::result<T>)>& done) {
  if (!r.ok()) {
    done(r.error());
    return true;
  }
  if (r->status < 200 || r->status >= 300) {
    done(error_of_rest_answer(*r));
    return true;
  }
  return false;
}

std::optional<model::bytes> payload(const json& j, bool& ok) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_string()) {
    ok = false;
    return std::nullopt;
  }
  auto b = base64_decode(j.get_ref<const std::string&>());
  if (!b) ok = false;
  return b;
}

}  // namespace

error error_of_rest_answer(const http_response& answer) {
  json body = json::parse(answer.body, nullptr, false);
  const int code = body.is_object() && body.contains("error_code") && body["error_code"].is_number_integer()
                       ? body["error_code"].get<int>()
                       : 0;
  std::string message = body.is_object() && body.contains("message") && body["message"].is_string()
                            ? body["message"].get<std::string>()
                            : "the coordinator answered HTTP " + std::to_string(answer.status);
  namespace ec = error_codes;
  errc e = errc::unknown_server_error;
  switch (code) {
    case ec::consumer_instance_not_found: e = errc::unknown_member_id; break;
    case ec::group_not_found: e = errc::group_id_not_found; break;
    case ec::topic_not_found:
    case ec::partition_not_found: e = errc::unknown_topic_or_partition; break;
    case ec::consumer_already_exists: e = errc::duplicate_consumer_instance; break;
    case ec::illegal_state: e = errc::illegal_generation; break;
    case ec::invalid_consumer_config: e = errc::invalid_group_id; break;
    case ec::invalid_offset_or_partition: e = errc::no_offset_for_partition; break;
    case ec::too_many_requests: e = errc::group_max_size_reached; break;
    case ec::request_timeout: e = errc::request_timed_out; break;
    default:
      if (answer.status == 503) e = errc::not_coordinator;
      else if (answer.status == 422 || answer.status == 400) e = errc::invalid_request;
      break;
  }
  return error{e, std::move(message)};
}

broker::result<std::vector<broker::consumed_record>> records_of_rest_answer(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_array()) return error{errc::unknown_server_error, "the coordinator's records answer is not a JSON array"};
  std::vector<broker::consumed_record> out;
  out.reserve(j.size());
  for (const auto& r : j) {
    bool ok = r.is_object() && r.contains("topic") && r["topic"].is_string() && r.contains("partition") &&
              r["partition"].is_number_integer() && r.contains("offset") && r["offset"].is_number_integer();
    if (!ok) return error{errc::unknown_server_error, "the coordinator's records answer holds a record without topic, partition or offset"};
    broker::consumed_record c;
    c.partition = model::topic_partition{r["topic"].get<std::string>(), model::partition_id{r["partition"].get<int32_t>()}};
    c.record.record_offset = model::offset{r["offset"].get<int64_t>()};
    if (r.contains("timestamp") && r["timestamp"].is_number_integer()) c.record.timestamp = r["timestamp"].get<int64_t>();
    if (r.contains("key")) c.record.key = payload(r["key"], ok);
    if (r.contains("value")) c.record.value = payload(r["value"], ok);
    if (r.contains("headers") && r["headers"].is_array()) {
      for (const auto& h : r["headers"]) {
        if (!h.is_object() || !h.contains("key") || !h["key"].is_string()) {
          ok = false;
          break;
        }
        c.record.headers.push_back({h["key"].get<std::string>(), h.contains("value") ? payload(h["value"], ok) : std::nullopt});
      }
    }
    if (!ok) {
      return error{errc::unknown_server_error, "the coordinator's record at offset " + std::to_string(c.record.record_offset.value()) +
                                                   " holds a payload that is not base64"};
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<forward_target> member_calls::remote(const std::string& group_id, std::string& description) const {
  if (forwarder_ == nullptr) return std::nullopt;
  auto route = broker_.groups().coordinator_route(group_id);
  if (route.where != broker::group_coordinator_route::place::peer || route.http_host.empty()) return std::nullopt;
  description = route.description;
  return forward_target{route.node_id, route.http_host, route.http_port, route.http_tls};
}

void member_calls::rest(const forward_target& to, const std::string& description, std::string method, std::string target,
                        std::string body, std::string accept, std::function<void(broker::result<http_response>)> done) {
  http_request request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.host = to.host + ":" + std::to_string(to.port);
  if (!body.empty()) request.content_type = v2_type;
  request.accept = std::move(accept);
  request.body = std::move(body);
  request.authorization = who_.authorization;
  request.forwarded_for = who_.host;
  request.forwarded_principal = who_.principal.empty() ? std::string() : percent_encode_segment(who_.principal);
  forwarder_->forward(request, to, fetch_wait_max_ms_ + proxy_limits::exchange_slack_ms,
                      [description, done = std::move(done)](forward_result r) {
                        if (r.answered) return done(std::move(r.response));
                        done(error{errc::not_coordinator, "the group's coordinator, " + description +
                                                              ", did not answer (" + r.failure + "): retry"});
                      });
}

void member_calls::create_consumer(broker::consumer_instance_config config,
                                   std::function<void(broker::result<broker::consumer_instance>)> done) {
  std::string where;
  auto to = remote(config.group_id, where);
  if (!to) return broker_.groups().create_consumer(std::move(config), std::move(done));
  json body = {{"format", config.format == broker::consumer_format::json ? "json" : "binary"},
               {"auto.offset.reset", config.auto_offset_reset == group::offset_reset::earliest ? "earliest" : "latest"},
               {"consumer.instance.timeout.ms", config.session_timeout_ms}};
  body["name"] = config.name ? *config.name : generated_name(config.client_name);
  if (config.retry) {
    body["max.delivery.attempts"] = config.retry->max_delivery_attempts;
    body["retry.backoff.ms"] = config.retry->retry_backoff_ms;
    body["retry.backoff.multiplier"] = std::to_string(config.retry->retry_backoff_multiplier);
    body["retry.backoff.max.ms"] = config.retry->retry_backoff_max_ms;
    body["retry.topic.template"] = config.retry->retry_topic_template;
    body["dead.letter.topic.template"] = config.retry->dead_letter_topic_template;
  }
  const std::string group_id = config.group_id;
  const auto format = config.format;
  rest(*to, where, "POST", "/consumers/" + percent_encode_segment(group_id), dump(body), v2_type,
       [group_id, format, done = std::move(done)](broker::result<http_response> r) {
         if (failed(r, done)) return;
         json j = json::parse(r->body, nullptr, false);
         if (!j.is_object() || !j.contains("instance_id") || !j["instance_id"].is_string()) {
           return done(error{errc::unknown_server_error, "the coordinator's answer to creating an instance has no instance_id"});
         }
         broker::consumer_instance out;
         out.group_id = group_id;
         out.instance_id = j["instance_id"].get<std::string>();
         out.format = format;
         done(std::move(out));
       });
}

void member_calls::delete_consumer(const std::string& group_id, const std::string& instance_id,
                                   std::function<void(broker::result<void>)> done) {
  std::string where;
  auto to = remote(group_id, where);
  if (!to) return broker_.groups().delete_consumer(group_id, instance_id, std::move(done));
  rest(*to, where, "DELETE", instance_path(group_id, instance_id), {}, v2_type,
       [done = std::move(done)](broker::result<http_response> r) {
         if (failed(r, done)) return;
         done(broker::result<void>{});
       });
}

void member_calls::nack(const std::string& group_id, const std::string& instance_id,
                        std::vector<broker::nack_request> nacks, std::function<void(broker::result<void>)> done) {
  std::string where;
  auto to = remote(group_id, where);
  if (!to) return broker_.groups().nack(group_id, instance_id, std::move(nacks), std::move(done));
  json offsets = json::array();
  for (const auto& n : nacks) {
    offsets.push_back({{"topic", n.partition.topic},
                       {"partition", n.partition.partition.value()},
                       {"offset", n.offset.value()},
                       {"reason", n.reason}});
  }
  rest(*to, where, "POST", instance_path(group_id, instance_id) + "/nacks", dump(json{{"offsets", offsets}}), v2_type,
       [done = std::move(done)](broker::result<http_response> r) {
         if (failed(r, done)) return;
         done(broker::result<void>{});
       });
}

void member_calls::subscribe(const std::string& group_id, const std::string& instance_id, const group::subscription& sub,
                             std::function<void(broker::result<void>)> done) {
  std::string where;
  auto to = remote(group_id, where);
  if (!to) return broker_.groups().subscribe(group_id, instance_id, sub, std::move(done));
  json body = sub.kind == group::subscription_kind::pattern ? json{{"topic_pattern", sub.pattern}} : json{{"topics", sub.topics}};
  rest(*to, where, "POST", instance_path(group_id, instance_id) + "/subscription", dump(body), v2_type,
       [done = std::move(done)](broker::result<http_response> r) {
         if (failed(r, done)) return;
         done(broker::result<void>{});
       });
}

void member_calls::poll(const std::string& group_id, const std::string& instance_id, broker::poll_request request,
                        std::function<void(broker::result<std::vector<broker::consumed_record>>)> done) {
  std::string where;
  auto to = remote(group_id, where);
  if (!to) return broker_.groups().poll(group_id, instance_id, request, std::move(done));
  const std::string target = instance_path(group_id, instance_id) + "/records?timeout=" +
                             std::to_string(std::min(request.timeout_ms, fetch_wait_max_ms_)) +
                             "&max_bytes=" + std::to_string(request.max_bytes);
  rest(*to, where, "GET", target, {}, v2_binary_type, [done = std::move(done)](broker::result<http_response> r) {
    if (failed(r, done)) return;
    done(records_of_rest_answer(r->body));
  });
}

void member_calls::seek(const std::string& group_id, const std::string& instance_id,
                        const std::vector<broker::seek_request>& seeks, std::function<void(broker::result<void>)> done) {
  std::string where;
  auto to = remote(group_id, where);
  if (!to) return broker_.groups().seek(group_id, instance_id, seeks, std::move(done));
  // A member only rewinds to offsets it was given (ws_session.cc: records past its credit).
  json offsets = json::array();
  for (const auto& s : seeks) {
    RINGLOG_ASSERT(s.kind == broker::seek_kind::offset, "a WebSocket member seeks to offsets only");
    offsets.push_back({{"topic", s.partition.topic}, {"partition", s.partition.partition.value()}, {"offset", s.value}});
  }
  rest(*to, where, "POST", instance_path(group_id, instance_id) + "/positions", dump(json{{"offsets", offsets}}), v2_type,
       [done = std::move(done)](broker::result<http_response> r) {
         if (failed(r, done)) return;
         done(broker::result<void>{});
       });
}

void member_calls::assignments(const std::string& group_id, const std::string& instance_id,
                               std::function<void(broker::result<group::partition_set>)> done) {
  std::string where;
  auto to = remote(group_id, where);
  if (!to) return broker_.groups().assignments(group_id, instance_id, std::move(done));
  rest(*to, where, "GET", instance_path(group_id, instance_id) + "/assignments", {}, v2_type,
       [done = std::move(done)](broker::result<http_response> r) {
         if (failed(r, done)) return;
         json j = json::parse(r->body, nullptr, false);
         if (!j.is_object() || !j.contains("partitions") || !j["partitions"].is_array()) {
           return done(error{errc::unknown_server_error, "the coordinator's assignments answer has no partitions array"});
         }
         group::partition_set out;
         for (const auto& p : j["partitions"]) {
           if (!p.is_object() || !p.contains("topic") || !p["topic"].is_string() || !p.contains("partition") ||
               !p["partition"].is_number_integer()) {
             return done(error{errc::unknown_server_error, "the coordinator's assignments answer holds a malformed partition"});
           }
           out.insert(model::topic_partition{p["topic"].get<std::string>(), model::partition_id{p["partition"].get<int32_t>()}});
         }
         done(std::move(out));
       });
}

void member_calls::commit(const std::string& group_id, const std::string& instance_id,
                          std::vector<group::processed_offset> offsets,
                          std::function<void(broker::result<group::partition_map<group::committed_offset>>)> done) {
  std::string where;
  auto to = remote(group_id, where);
  if (!to) return broker_.groups().commit(group_id, instance_id, std::move(offsets), std::move(done));
  using answer = broker::result<group::partition_map<group::committed_offset>>;
  json listed = json::array();
  for (const auto& o : offsets) {
    listed.push_back({{"topic", o.partition.topic}, {"partition", o.partition.partition.value()},
                      {"offset", o.last_processed.value()}});
  }
  // REST v2 answers a commit with 204: the stored offsets are read back for the owned partitions.
  auto target = *to;
  rest(target, where, "POST", instance_path(group_id, instance_id) + "/offsets", dump(json{{"offsets", listed}}), v2_type,
       [this, target, where, group_id, instance_id, done = std::move(done)](broker::result<http_response> r) mutable {
         if (failed<group::partition_map<group::committed_offset>>(r, done)) return;
         assignments(group_id, instance_id, [this, target, where, group_id, instance_id, done = std::move(done)](
                                                broker::result<group::partition_set> owned) mutable {
           if (!owned.ok()) return done(owned.error());
           json body = {{"partitions", partitions_json(*owned)}};
           rest(target, where, "GET", instance_path(group_id, instance_id) + "/offsets", dump(body), v2_type,
                [done = std::move(done)](broker::result<http_response> c) {
                  if (failed<group::partition_map<group::committed_offset>>(c, done)) return;
                  json j = json::parse(c->body, nullptr, false);
                  group::partition_map<group::committed_offset> out;
                  if (j.is_object() && j.contains("offsets") && j["offsets"].is_array()) {
                    for (const auto& o : j["offsets"]) {
                      if (!o.is_object() || !o.value("topic", json()).is_string()) continue;
                      group::committed_offset co;
                      co.committed = model::offset{o.value("offset", int64_t{-1})};
                      co.metadata = o.value("metadata", std::string());
                      out[model::topic_partition{o["topic"].get<std::string>(),
                                                 model::partition_id{o.value("partition", int32_t{0})}}] = co;
                    }
                  }
                  done(answer(std::move(out)));
                });
         });
       });
}

}  // namespace ringlog::gateway
