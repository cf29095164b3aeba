// Group calls through any broker (issue 13; group_proxy.h): a v2 consumer-instance or v3
// consumer-group call whose group another broker coordinates is passed on to that broker's HTTP
// listener and its answer returned as it is; the cluster's group list gathers every broker's.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "api_routes.h"
#include "group_proxy.h"
#include "ringlog/base/clock.h"
#include "ringlog/base/text.h"
#include "ringlog/security/acl_host.h"
#include "ringlog/security/forwarded_call.h"

namespace ringlog::gateway::routes {
namespace {

/// The group a matched route belongs to: the v2 {group} or the v3 {consumer_group_id} parameter.
std::optional<std::string> group_of(api::call& c) {
  if (auto it = c.params.find("group"); it != c.params.end()) return it->second;
  if (auto it = c.params.find("consumer_group_id"); it != c.params.end()) return it->second;
  return std::nullopt;
}

/// The transactional id a matched transaction route names: the v3 {transactional_id} parameter,
/// a transactional produce's query parameter, or the body's "transactional_id" of a begin (POST
/// .../transactions). A body that does not parse names none: the call is served here and
/// answers its own 4xx.
std::optional<std::string> transactional_id_of(api::call& c) {
  if (auto it = c.params.find("transactional_id"); it != c.params.end()) return it->second;
  // A v3 produce inside a transaction (query transactional_id): its partitions join at the
  // coordinator, so the coordinator serves it (the records still go to their leaders from there).
  if (auto it = c.query.find("transactional_id"); it != c.query.end() && !it->second.empty()) return it->second;
  if (c.route != "POST /v3/clusters/{cluster_id}/transactions") return std::nullopt;
  json body = json::parse(c.request.body, nullptr, false);
  if (!body.is_object()) return std::nullopt;
  auto it = body.find("transactional_id");
  if (it == body.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

/// A call served by a coordinator: a group's (v2 consumer instances, v3 consumer groups) or a
/// transaction's (v3 transactions), with where that coordinator is now.
struct coordinated_call {
  std::string what;   // for messages: "group 'g'" or "transactional id 't'"
  broker::group_coordinator_route route;
};

std::optional<coordinated_call> coordinated_call_of(api::call& c) {
  if (auto group = group_of(c)) return coordinated_call{"group '" + *group + "'", c.broker().groups().coordinator_route(*group)};
  if (auto id = transactional_id_of(c)) {
    return coordinated_call{"transactional id '" + *id + "'", c.broker().transactions().coordinator_route(*id)};
  }
  return std::nullopt;
}

/// A consumer instance's streamed read (NDJSON / SSE) is a long-lived chunked answer, which the
/// forwarder (whole answers only) cannot pass on: the client is sent to the coordinator instead
/// (307, the same method and target there), as a Kafka client connects to its coordinator itself.
bool wants_streamed_read(api::call& c) {
  if (c.route.find("/instances/{instance}/records") == std::string::npos) return false;
  auto pick = negotiate(c.request.accept, {v2_binary_type, v2_json_type, ndjson_type, sse_type});
  return pick && (*pick == ndjson_type || *pick == sse_type);
}

std::string coordinator_url(const broker::group_coordinator_route& route) {
  // The scheme of the door the coordinator registered: an https-only node's redirect named
  // http:// and carried a fresh access token there in the clear (session 32's new user).
  return std::string(route.http_tls ? "https://" : "http://") + route.http_host + ":" + std::to_string(route.http_port);
}

void answer_forwarded(api::call& call, const std::string& what, const broker::group_coordinator_route& route,
                      forward_result r) {
  if (r.answered) {
    r.response.headers.emplace_back(served_by_header, std::to_string(route.node_id));
    return call.respond(std::move(r.response));
  }
  std::string message = what + " is coordinated by " + route.description + ", which did not answer (" + r.failure + ")";
  if (r.sent) message += "; the call may have been applied there";
  message += ": retry (when that broker is gone, another one takes over its groups and transactions within seconds)";
  http_response e = error_response(503, ec::unavailable, message);
  e.headers.emplace_back("X-Ringlog-Coordinator", coordinator_url(route));
  call.respond(std::move(e));
}

/// A v2 consumer instance's records poll (GET .../records, a whole answer: streamed reads are
/// redirected): it moves the instance's positions when it takes records.
bool is_records_poll(const api::call& c) { return c.route == "GET /consumers/{group}/instances/{instance}/records"; }

/// Passes `request` on to the coordinator at `route` (the forwarder is there) and answers `c` with
/// its answer, or the 503 of answer_forwarded naming `what`.
///
/// A records poll's client is watched while the poll is passed on: when it leaves, the forward
/// is closed (http_forwarder::forward's caller_connected), and the coordinator, which watches
/// that connection, takes no record for nobody (group_proxy.h). Before this the forward stayed
/// open until its deadline and the coordinator's poll moved the instance's positions past
/// records no client received.
void forward_to_coordinator(const call_ptr& c, const http_request& request, std::string what,
                            const broker::group_coordinator_route& route) {
  const int64_t timeout_ms = c->self->options().fetch_wait_max_ms + proxy_limits::exchange_slack_ms;
  std::function<bool()> caller_connected;
  if (is_records_poll(*c)) {
    c->sink->watch_disconnect();
    caller_connected = c->sink->connected_check();
  }
  c->self->options().forwarder->forward(request, {route.node_id, route.http_host, route.http_port, route.http_tls}, timeout_ms,
                                        [c, what = std::move(what), route](forward_result r) {
                                          c->later([what, route, r = std::move(r)](api::call& call) mutable {
                                            answer_forwarded(call, what, route, std::move(r));
                                          });
                                        },
                                        std::move(caller_connected));
}


/// The 307 of a streamed read to the coordinator, at `target` there. 307 keeps the method (RFC
/// 9110 section 15.4.8); curl -L, requests and EventSource follow it.
void answer_streamed_read_redirect(api::call& call, const coordinated_call& called, const std::string& target) {
  const std::string location = coordinator_url(called.route) + target;
  http_response e = error_response(
      307, ec::temporary_redirect,
      called.what + " is coordinated by " + called.route.description +
          "; a streamed read of a consumer instance (NDJSON / SSE) is served by its coordinator: read it at " +
          without_query_parameter(location, "access_token"));
  e.headers.emplace_back("Location", location);
  e.headers.emplace_back("X-Ringlog-Coordinator", coordinator_url(called.route));
  call.respond(std::move(e));
}

/// Sends a streamed read to its coordinator (wants_streamed_read). A read authenticated by this
/// node's own access token or console session would be refused there, which knows neither: the
/// redirect carries instead an access token of the coordinator's for the same principal, asked
/// for by a proven POST /v1/tokens that names the principal (it lives
/// http.access.token.max.age.ms, as the one this node gave). Without one (no forwarding secret
/// yet, or no answer) the redirect keeps the client's own target.
void redirect_streamed_read(const call_ptr& c, coordinated_call called) {
  if (c->request.https && !called.route.http_tls) {
    // The coordinator's registered door is plaintext: no credential goes from TLS into the clear in
    // a URL (the client logs in there as it can; a token of this node's would be refused anyway).
    return answer_streamed_read_redirect(*c, called, without_query_parameter(c->request.target, "access_token"));
  }
  const bool own_credential = c->who.via == auth_via::access_token || c->who.via == auth_via::session_cookie;
  if (!own_credential || c->broker().forwarding_secret().empty()) {
    return answer_streamed_read_redirect(*c, called, c->request.target);
  }
  http_request request = passed_on_request(*c);
  request.method = "POST";
  request.target = "/v1/tokens";
  request.content_type.clear();
  request.accept = "application/json";
  request.body.clear();
  const broker::group_coordinator_route& route = called.route;
  c->self->options().forwarder->forward(
      request, {route.node_id, route.http_host, route.http_port, route.http_tls},
      proxy_limits::connect_timeout_ms + proxy_limits::exchange_slack_ms, [c, called](forward_result r) {
        c->later([called, r = std::move(r)](api::call& call) {
          std::string target = call.request.target;
          json body = r.answered && r.response.status == 201 ? json::parse(r.response.body, nullptr, false) : json();
          if (body.is_object() && body.contains("access_token") && body["access_token"].is_string()) {
            target = without_query_parameter(target, "access_token");
            target += std::string(target.find('?') == std::string::npos ? "?" : "&") + "access_token=" +
                      percent_encode_segment(body["access_token"].get<std::string>());
          }
          answer_streamed_read_redirect(call, called, target);
        });
      });
}

}  // namespace

http_request passed_on_request(const api::call& c) {
  http_request request = c.request;
  request.forwarded_for = c.peer_ip();   // the client as this node knows it (a broker's word only if verified)
  const auto& auth = c.self->options().auth;
  request.forwarded_principal =
      auth && auth->enabled() ? percent_encode_segment(c.principal().to_string()) : std::string();
  return request;
}

void identify_client(const call_ptr& c) {
  if (c->request.forwarded_by.empty()) return;
  // Believed only when a broker of this cluster signed it (group_proxy.cc): an address proves
  // nothing, as any process on a broker's host shares it.
  const int64_t now_ms = base::system_clock().now_ms();
  const http_request& r = c->request;
  if (!security::verify_forwarded_call(c->broker().forwarding_secret(),
                                       {r.forwarded_by, r.method, r.target, r.forwarded_for, r.forwarded_proto,
                                        r.forwarded_principal, r.body},
                                       r.forwarded_proof,
                                       now_ms)) {
    return;
  }
  c->passed_on_by_broker = true;
  // The image the passing broker answered from (after_passing_brokers_metadata waits for it).
  if (auto offset = base::parse_int(r.forwarded_metadata_offset, 0, std::numeric_limits<int64_t>::max())) {
    c->passing_broker_metadata_offset = *offset;
  }
  // The caller the passing broker authenticated (authenticate_call takes it): a proven call's
  // name that does not decode or parse names nobody, and the call authenticates as any other.
  if (auto text = percent_decode(r.forwarded_principal, false); text && !text->empty()) {
    if (auto principal = security::kafka_principal::parse(*text); principal.ok()) {
      c->forwarded_principal = std::move(principal).value();
    }
  }
  auto host = security::canonical_acl_host(c->request.forwarded_for);
  if (host && *host != "*") c->forwarded_client_host = std::move(*host);
  // The client reached the passing broker over TLS: base_uri and self links say https:// (H2 of
  // session 25's new user: a REST client followed an http:// base_uri to an https:// port).
  if (c->request.forwarded_proto == "https" && c->base_url.starts_with("http://")) {
    c->base_url = "https://" + c->base_url.substr(7);
  }
}

void after_passing_brokers_metadata(const call_ptr& c, std::function<void()> next) {
  const int64_t offset = c->passing_broker_metadata_offset;
  if (offset < 0 || c->broker().applied_metadata_offset() >= offset) return next();
  const auto started = std::chrono::steady_clock::now();
  c->broker().await_metadata_applied(
      offset, proxy_limits::forwarded_metadata_wait_ms_max, [c, offset, started, next = std::move(next)](bool applied) {
        c->later([offset, started, applied, next](api::call& call) {
          if (!applied) {
            const auto waited_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
            spdlog::warn("msg=\"serving a passed-on call against an older metadata image\" route=\"{}\" "
                         "forwarded_by={} passing_broker_metadata_offset={} applied_metadata_offset={} waited_ms={} "
                         "reason=\"not applied here within proxy_limits::forwarded_metadata_wait_ms_max\"",
                         call.route, call.request.forwarded_by, offset, call.broker().applied_metadata_offset(), waited_ms);
          }
          next();
        });
      });
}

bool forward_group_call(const call_ptr& c) {
  http_forwarder* forwarder = c->self->options().forwarder;
  // The loop guard: a call a peer passed on is served here, whatever this node's metadata says.
  if (forwarder == nullptr || !c->request.forwarded_by.empty()) return false;
  auto called = coordinated_call_of(*c);
  if (!called) return false;
  const broker::group_coordinator_route& route = called->route;
  // Here: served locally. No leader (or no HTTP listener known): served locally too, which answers
  // NOT_COORDINATOR (503, Retry-After) naming the partition.
  if (route.where != broker::group_coordinator_route::place::peer || route.http_host.empty()) return false;
  if (wants_streamed_read(*c)) {
    redirect_streamed_read(c, std::move(*called));
    return true;
  }
  forward_to_coordinator(c, passed_on_request(*c), std::move(called->what), route);
  return true;
}

bool pass_on_to_group_coordinator(const call_ptr& c, const std::string& group_id, std::string_view extra_query) {
  if (c->self->options().forwarder == nullptr) return false;
  broker::group_coordinator_route route = c->broker().groups().coordinator_route(group_id);
  if (route.where != broker::group_coordinator_route::place::peer || route.http_host.empty()) return false;
  http_request request = passed_on_request(*c);
  request.target += (request.target.find('?') == std::string::npos ? "?" : "&") + std::string(extra_query);
  forward_to_coordinator(c, request, "group '" + group_id + "'", route);
  return true;
}

bool forward_broker_config_call(const call_ptr& c, std::string_view pattern) {
  http_forwarder* forwarder = c->self->options().forwarder;
  if (forwarder == nullptr || !c->request.forwarded_by.empty()) return false;
  if (!pattern.starts_with("/v3/clusters/{cluster_id}/brokers/{broker_id}/configs")) return false;
  const auto id = path_broker_id(*c);
  if (!id || *id == c->broker().config().node_id) return false;
  for (const auto& b : c->broker().admin().list_brokers()) {
    if (b.node_id != *id || b.host.empty() || b.port <= 0) continue;
    // A config call does not long-poll: the short bound of a gathered call, not a record read's
    // fetch wait (a breaker waited 70 s for a paused broker's configs, session 27).
    const int64_t timeout_ms = proxy_limits::connect_timeout_ms + proxy_limits::exchange_slack_ms;
    forwarder->forward(passed_on_request(*c), {b.node_id, b.host, static_cast<uint16_t>(b.port), b.http_tls}, timeout_ms, [c, id = *id](forward_result r) {
      c->later([id, r = std::move(r)](api::call& call) mutable {
        if (r.answered) {
          r.response.headers.emplace_back(served_by_header, std::to_string(id));
          return call.respond(std::move(r.response));
        }
        std::string message = "broker " + std::to_string(id) + " serves its own configs and did not answer (" +
                              r.failure + ")" + (r.sent ? "; the change may have been applied there" : "") + ": retry";
        call.respond(error_response(503, ec::unavailable, message));
      });
    });
    return true;
  }
  return false;   // not a registered broker with an HTTP listener: answered here (it names the problem)
}

bool ask_every_broker(const call_ptr& c, broker_answers_fn done, const std::function<std::string(int32_t)>& target_of,
                      int64_t timeout_ms) {
  http_forwarder* forwarder = c->self->options().forwarder;
  if (forwarder == nullptr || !c->request.forwarded_by.empty()) return false;
  std::vector<broker::broker_description> peers;
  std::vector<std::string> without_http;   // live brokers no HTTP call reaches (Kafka-only): unanswered
  for (auto& b : c->broker().admin().list_brokers()) {
    if (b.state == "fenced") continue;
    if (b.host.empty() || b.port <= 0) {
      without_http.push_back(std::to_string(b.node_id));
    } else {
      peers.push_back(std::move(b));
    }
  }
  // One broker: its own answer is the cluster's. A dedicated controller (no partitions, groups or
  // schedulers of its own) always asks the brokers; with none registered every answer is empty.
  const bool dedicated_controller = !c->broker().config().process_role_broker;
  if (peers.size() + without_http.size() <= 1 && !dedicated_controller) return false;
  if (peers.empty()) {
    done(*c, {}, std::move(without_http));
    return true;
  }
  struct gather {
    std::vector<json> answers;
    std::vector<std::string> unanswered;
    size_t remaining = 0;
    broker_answers_fn done;
  };
  auto g = std::make_shared<gather>();
  g->unanswered = std::move(without_http);
  g->remaining = peers.size();
  g->done = std::move(done);
  if (timeout_ms <= 0) timeout_ms = proxy_limits::connect_timeout_ms + proxy_limits::exchange_slack_ms;
  for (const auto& b : peers) {
    http_request request = passed_on_request(*c);
    request.method = "GET";
    request.body.clear();
    const int32_t node = b.node_id;
    if (target_of) request.target = target_of(node);
    forwarder->forward(request, {node, b.host, static_cast<uint16_t>(b.port), b.http_tls}, timeout_ms, [c, g, node](forward_result r) {
      c->later([g, node, r = std::move(r)](api::call& call) {
        json body = r.answered && r.response.status == 200 ? json::parse(r.response.body, nullptr, false) : json();
        if (body.is_object()) {
          g->answers.push_back(std::move(body));
        } else {
          g->unanswered.push_back(std::to_string(node));
        }
        if (--g->remaining == 0) g->done(call, std::move(g->answers), std::move(g->unanswered));
      });
    });
  }
  return true;
}

bool gather_group_lists(const call_ptr& c) {
  if (!c->request.forwarded_by.empty() || c->self->options().forwarder == nullptr) return false;
  if (!c->check_cluster() || !c->accept(v3_offers)) return true;
  return ask_every_broker(c, [](api::call& call, std::vector<json> answers, std::vector<std::string> unanswered) {
    json data = json::array();
    std::set<std::string> seen;
    for (auto& body : answers) {
      if (!body.contains("data") || !body["data"].is_array()) continue;
      for (auto& group : body["data"]) {
        // A group whose coordinator moved a moment ago may be listed by both: keep one.
        const std::string id = group.value("consumer_group_id", std::string());
        if (!may_list_group(call, id)) continue;
        if (seen.insert(id).second) data.push_back(std::move(group));
      }
    }
    std::sort(data.begin(), data.end(), [](const json& a, const json& b) {
      return a.value("consumer_group_id", std::string()) < b.value("consumer_group_id", std::string());
    });
    json out = list_json("KafkaConsumerGroupList",
                         call.base_url + "/v3/clusters/" + call.params["cluster_id"] + "/consumer-groups", data);
    // The groups of a broker that did not answer are missing (they move to another broker
    // once it is fenced): say which, rather than pretend the list is whole.
    if (!unanswered.empty()) out["metadata"]["unanswered_brokers"] = unanswered;
    call.respond_json(200, out);
  });
}

}  // namespace ringlog::gateway::routes
