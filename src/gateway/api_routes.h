#pragma once
// Private to the gateway's route files (api*.cc): the request context every handler works on,
// the content types the routes offer, the helpers more than one route family shares and every
// handler's declaration for the route table in api.cc. No Beast here (see http_types.h).

#include <algorithm>
#include <charconv>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api.h"
#include "authorization.h"
#include "errors.h"
#include "http_util.h"

namespace ringlog::gateway::routes {

using json = nlohmann::json;
namespace ec = error_codes;

inline constexpr const char* v2_type = "application/vnd.kafka.v2+json";
inline constexpr const char* v2_binary_type = "application/vnd.kafka.binary.v2+json";
inline constexpr const char* v2_json_type = "application/vnd.kafka.json.v2+json";
inline constexpr int64_t fetch_max_bytes_default = 1024 * 1024;

inline const std::vector<std::string> v2_offers = {v2_type, "application/vnd.kafka+json", "application/json"};
inline const std::vector<std::string> v3_offers = {"application/json"};
/// A records read answers with an embedded format: the bare v2 type names none, so it gets 406.
inline const std::vector<std::string> records_offers = {v2_binary_type, v2_json_type, "application/json"};
/// The consumer routes (Confluent's produce the embedded-format types as well as the bare one).
inline const std::vector<std::string> consumer_offers = {v2_type, v2_binary_type, v2_json_type,
                                                         "application/vnd.kafka+json", "application/json"};
/// The Content-Types a v2 consumer route's body may have: Confluent's REST Proxy v2 consumer
/// resource consumes the bare v2 type and the embedded-format ones, never application/json
/// (415 there and here). v3 routes read application/json.
inline const std::vector<std::string> v2_consumer_body_types = {
    v2_type, v2_binary_type, v2_json_type, "application/vnd.kafka.avro.v2+json",
    "application/vnd.kafka.jsonschema.v2+json", "application/vnd.kafka.protobuf.v2+json"};
inline constexpr const char* ndjson_type = "application/x-ndjson";
inline constexpr const char* sse_type = "text/event-stream";
inline const std::vector<std::string> stream_offers = {ndjson_type, sse_type};
inline const std::vector<std::string> metrics_offers = {"text/plain"};   // Prometheus text format 0.0.4


inline std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/// Bytes of a record's key, value and headers (the metrics' byte counters).
inline size_t record_bytes(const model::record& r) {
  size_t n = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
  for (const auto& h : r.headers) n += h.key.size() + (h.value ? h.value->size() : 0);
  return n;
}
inline size_t record_bytes(const broker::produce_record& r) {
  size_t n = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
  for (const auto& h : r.headers) n += h.key.size() + (h.value ? h.value->size() : 0);
  return n;
}

}  // namespace ringlog::gateway::routes

namespace ringlog::gateway {

using routes::json;
using routes::dump;
namespace ec = error_codes;

/// A request being answered: its parsed parts, the sink, and the metrics/CORS bookkeeping.
struct api::call : std::enable_shared_from_this<api::call> {
  api* self = nullptr;
  http_request request;
  std::shared_ptr<response_sink> sink;
  std::string route = "unmatched";   // metrics label: "METHOD /template"
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> query;
  std::string base_url;              // "http://host:port" for v3 metadata.self links
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  unsigned stream_status = 0;
  std::string accepted;              // the media type accept() chose: the answer's Content-Type
  auth_outcome who;                  // the caller (issue 29); User:ANONYMOUS with authentication off
  bool audit_admin = false;          // an admin write: its answer is audited (observe)
  /// Issue 31 (http_quotas.h): the byte quota this route's traffic counts under (route_byte_quota;
  /// nullopt: none, or a call a peer passed on, counted where it arrived), and the client id it is
  /// measured by: X-Client-Id, else the peer's IP.
  std::optional<security::quota_key> byte_quota;
  std::string client_id;

  /// The caller's principal, for the broker calls this request makes.
  [[nodiscard]] const security::kafka_principal& principal() const { return who.principal; }

  broker::broker& broker() { return self->broker_; }

  /// Set once by identify_client (api_group_forward.cc) before the call is authorized: true when
  /// a broker of this cluster proved it passed this call on (X-Ringlog-Forwarded-Proof verifies
  /// with the cluster's forwarding secret), so the client's address it names is believed for ACL
  /// host checks. Quotas are counted here all the same (each broker bounds the traffic it serves).
  bool passed_on_by_broker = false;
  /// The client's address as ACL hosts name it, when a broker passed the call on; "" otherwise.
  std::string forwarded_client_host;
  /// The principal the passing broker authenticated the client as, when a broker proved it passed
  /// this call on and named one (forwarded_principal_header): authenticate_call takes it instead
  /// of the call's own credentials, which may be that broker's access token or session.
  std::optional<security::kafka_principal> forwarded_principal;
  /// The metadata offset the passing broker's image had applied when it passed this call on
  /// (forwarded_metadata_offset_header), when a broker proved it passed the call on; -1 otherwise.
  /// The call is authorized here only once this node's image has applied it too, or
  /// proxy_limits::forwarded_metadata_wait_ms_max passed (after_passing_brokers_metadata).
  int64_t passing_broker_metadata_offset = -1;

  /// The caller's address as ACL hosts name it (issue 30): the peer's IP without its port, or,
  /// for a call a registered broker passed on, the client's address that broker saw.
  [[nodiscard]] std::string peer_ip() const {
    return forwarded_client_host.empty() ? peer_host(request.peer) : forwarded_client_host;
  }
  /// Issue 30: may the caller do `operation` on the resource? Always true without an authorizer.
  bool authorized(security::resource_type resource, std::string_view name, security::acl_operation operation) {
    return acl_allows(broker(), principal(), peer_ip(), resource, name, operation);
  }
  /// As authorized(), but a refusal is answered (403, error_code 40301: acl_refusal) and false
  /// returned.
  bool require(security::resource_type resource, std::string_view name, security::acl_operation operation) {
    auto refusal = acl_refusal(broker(), principal(), peer_ip(), resource, name, operation, "http", route);
    if (refusal) fail(*refusal);
    return !refusal;
  }

  /// The produce bounds of this request: a record may be as large as message.max.bytes is now
  /// (a dynamic broker config may have changed it since start).
  produce_limits limits() {
    produce_limits l = self->options_.limits;
    l.record_bytes_max = broker().message_max_bytes();
    return l;
  }

  /// CORS (Fetch standard): an allowed Origin is echoed (with Vary: Origin); one not in
  /// http.cors.allowed.origins gets no Access-Control-Allow-Origin, so the browser hides the answer.
  /// Without an Origin (not a browser's cross-origin call) "*" when any origin is allowed.
  void add_cors(http_response& r) const {
    const std::vector<std::string>& allowed = self->options_.cors_allowed_origins;
    if (request.origin.empty()) {
      if (origin_allowed(allowed, "")) r.headers.emplace_back("Access-Control-Allow-Origin", "*");
    } else if (origin_permitted(allowed, request.origin, request.host, request.https)) {
      r.headers.emplace_back("Access-Control-Allow-Origin", request.origin);
    }
    if (!request.origin.empty()) r.headers.emplace_back("Vary", "Origin");
    if (self->options_.auth) self->options_.auth->add_cors_credentials(r, request.origin);
    // Retry-After: a browser's client honours a 429's (issue 31) or 503's wait only if it may read it.
    r.headers.emplace_back("Access-Control-Expose-Headers", "Content-Type, Retry-After");
  }

  void observe(unsigned status) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    self->metrics_.observe_request(route, status, seconds);
    if (audit_admin) audit_admin_write("http", who.principal, request.peer, route, request.target, status);
  }

  /// Issue 31: records `bytes` of this call's traffic under its byte quota for the caller and, over
  /// quota, throttles the client's later requests of the same kind (429). Answers the throttle
  /// time, ms: 0 within quota, when no quota bounds the client, or on a route without byte quota.
  /// `asked` (a read's max bytes), capped under consumer_byte_rate at a quota window's worth
  /// (broker::client_quota_window_value_max: Kafka's cap of a fetch), so one read cannot take
  /// many windows at once and then only wait one out.
  [[nodiscard]] int64_t quota_read_bytes_max(int64_t asked) {
    if (byte_quota != security::quota_key::consumer_byte_rate) return asked;
    auto cap = broker().security().client_quota_window_value_max(*byte_quota, principal().name, client_id);
    return cap ? std::clamp<int64_t>(*cap, 1, asked) : asked;
  }

  int64_t count_quota_bytes(size_t bytes) {
    if (!byte_quota || bytes == 0) return 0;
    return broker().security().record_client_quota(*byte_quota, principal().name, client_id, static_cast<double>(bytes));
  }

  void respond(http_response r) {
    // Issue 31: an answered produce counts its request body, an answered read its response body
    // (Kafka counts the request that goes over and throttles afterwards, KIP-219).
    if (byte_quota && r.status >= 200 && r.status < 300) {
      count_quota_bytes(*byte_quota == security::quota_key::producer_byte_rate ? request.body.size() : r.body.size());
    }
    add_cors(r);
    observe(r.status);
    sink->respond(std::move(r));
  }
  void respond_json(unsigned status, const json& body, const std::string& content_type = "application/json") {
    http_response r;
    r.status = status;
    r.content_type = content_type;
    r.body = dump(body);
    respond(std::move(r));
  }
  /// 204 No Content (deletes, subscriptions, commits, config changes).
  void respond_no_content() {
    http_response r;
    r.status = 204;
    r.content_type.clear();
    respond(std::move(r));
  }
  void fail(const api_error& e) { respond(error_response(e)); }
  /// A hold on `bytes` of a record answer about to be built (http_response_bytes_held_max, all
  /// connections together), to put in the answer's `hold`; nullptr after answering 503 (50301,
  /// Retry-After) naming the bound when the answers not yet sent already hold that much.
  std::shared_ptr<const void> hold_answer_bytes(size_t bytes) {
    auto hold = self->response_budget().hold(static_cast<int64_t>(bytes));
    if (!hold) {
      fail(503, error_codes::unavailable,
           "record answers not yet read by their clients hold http_response_bytes_held_max=" +
               std::to_string(self->response_budget().max()) +
               " bytes; retry after Retry-After seconds or ask for less (max_bytes)");
    }
    return hold;
  }
  void fail(unsigned status, int code, std::string message) { fail(api_error{status, code, std::move(message)}); }

  void begin_stream(http_response head) {
    add_cors(head);
    stream_status = head.status;
    sink->begin_stream(std::move(head));
  }
  void end_stream() {
    observe(stream_status);
    sink->end_stream();
  }

  /// Runs `fn` on the connection thread with this call kept alive (for broker callbacks).
  template <typename F>
  void later(F fn) {
    sink->post([c = shared_from_this(), fn = std::move(fn)]() mutable { fn(*c); });
  }

  /// Checks Accept against `offers`; answers 406 and returns nullopt when nothing fits.
  std::optional<std::string> accept(const std::vector<std::string>& offers) {
    auto chosen = negotiate(request.accept, offers);
    if (chosen) accepted = *chosen;
    if (!chosen) {
      std::string list;
      for (const auto& o : offers) list += (list.empty() ? "" : ", ") + o;
      fail(406, ec::not_acceptable, "cannot produce a response for Accept \"" + request.accept + "\"; this route serves " + list);
    }
    return chosen;
  }

  /// Checks Content-Type is one of `types`; answers 415 and returns nullopt otherwise.
  /// A charset other than UTF-8 (or ISO-8859-1, which the REST Proxy also reads) is refused with
  /// 400 naming it: JSON bodies are read as UTF-8 (RFC 8259 section 8.1).
  std::optional<std::string> content_type_in(const std::vector<std::string>& types) {
    std::string t = media_type_of(request.content_type);
    if (std::find(types.begin(), types.end(), t) == types.end()) {
      std::string list;
      for (const auto& o : types) list += (list.empty() ? "" : ", ") + o;
      fail(415, ec::unsupported_media_type,
           "cannot read a request body of Content-Type \"" + request.content_type + "\"; this route reads " + list);
      return std::nullopt;
    }
    const std::string charset = charset_of(request.content_type);
    if (!charset.empty() && charset != "utf-8" && charset != "utf8" && charset != "iso-8859-1") {
      fail(400, ec::invalid_request, "unsupported charset \"" + charset + "\" in Content-Type; request bodies are UTF-8 (or ISO-8859-1)");
      return std::nullopt;
    }
    // Read as UTF-8 from here on: a Latin-1 body's bytes above 0x7F are its characters, not a
    // UTF-8 sequence (a new user's "caf\xe9" was refused as "not valid UTF-8").
    // The Content-Type then says utf-8, so a second check (or a call passed on) reads it as such.
    if (charset == "iso-8859-1") {
      request.body = latin1_to_utf8(request.body);
      request.content_type = t + "; charset=utf-8";
    }
    return t;
  }

  /// The {cluster_id} path parameter must name this cluster.
  bool check_cluster() {
    if (params["cluster_id"] == broker().config().cluster_id) return true;
    fail(404, ec::not_found, "cluster \"" + params["cluster_id"] + "\" not found; this is cluster \"" +
                                 broker().config().cluster_id + "\"");
    return false;
  }

  /// A query parameter as an integer in [min, max]; `fallback` when absent. Answers 400 naming it
  /// when it is not an integer at all (empty, "abc"), 422 when it is one outside [min, max].
  /// An optional '-' then one or more decimal digits (whatever its size).
  static bool is_integer_text(std::string_view text) {
    if (text.starts_with('-')) text.remove_prefix(1);
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  }

  std::optional<int64_t> query_int(const std::string& name, std::optional<int64_t> fallback, int64_t min, int64_t max,
                                   std::string_view limit_name = {}) {
    auto it = query.find(name);
    if (it == query.end()) {
      if (!fallback) fail(422, ec::unprocessable, "query parameter " + name + " is required");
      return fallback;
    }
    // Not an integer at all: 400. An integer too large for 64 bits is one out of range like any
    // other above the limit: 422 naming the range, as Confluent answers an invalid value.
    if (!is_integer_text(it->second)) {
      fail(400, ec::invalid_request, "query parameter " + name + " must be an integer, got \"" + it->second + "\"");
      return std::nullopt;
    }
    auto v = parse_int(it->second, min, max);
    if (!v) {
      std::string msg = "query parameter " + name + " must be an integer in [" + std::to_string(min) + ", " +
                        std::to_string(max) + "]";
      if (!limit_name.empty()) msg += " (limit " + std::string(limit_name) + ")";
      fail(422, ec::unprocessable, msg + ", got \"" + it->second + "\"");
    }
    return v;
  }

  /// The {partition} path parameter. Answers 404 (40402) when it is not a partition number.
  std::optional<int32_t> path_partition(const std::string& name) {
    auto v = parse_int(params[name], 0, std::numeric_limits<int32_t>::max());
    if (!v) {
      fail(404, ec::partition_not_found,
           "partition \"" + params[name] + "\" not found: a partition is an integer in [0, 2147483647]");
      return std::nullopt;
    }
    return static_cast<int32_t>(*v);
  }

  /// acks=0|1|all|-1 (default all).
  std::optional<broker::acks_mode> query_acks() {
    auto it = query.find("acks");
    if (it == query.end() || it->second == "all" || it->second == "-1") return broker::acks_mode::all;
    if (it->second == "1") return broker::acks_mode::leader;
    if (it->second == "0") return broker::acks_mode::none;
    fail(422, ec::unprocessable, "query parameter acks must be 0, 1, all or -1, got \"" + it->second + "\"");
    return std::nullopt;
  }

  /// The idempotent producer of a produce request: query parameters producer_id (>= 0) and
  /// producer_epoch ([0, 32767]), both or neither. nullopt after failing the call; an empty inner
  /// optional when neither is given.
  /// With transactional_id too: the transactional producer of that id (HTTP transactions); its
  /// records are produced inside the id's open transaction (broker::producer_identity).
  std::optional<std::optional<broker::producer_identity>> query_producer() {
    auto id = query.find("producer_id");
    auto epoch = query.find("producer_epoch");
    auto transactional = query.find("transactional_id");
    if (transactional != query.end() && (id == query.end() || epoch == query.end())) {
      fail(422, ec::unprocessable,
           "query parameter transactional_id needs producer_id and producer_epoch (the answer of POST "
           ".../transactions, or of the last commit or abort)");
      return std::nullopt;
    }
    if (transactional != query.end() && transactional->second.empty()) {
      fail(422, ec::unprocessable, "query parameter transactional_id is empty");
      return std::nullopt;
    }
    if (id == query.end() && epoch == query.end()) return std::optional<broker::producer_identity>{};
    if (id == query.end() || epoch == query.end()) {
      fail(422, ec::unprocessable, "query parameters producer_id and producer_epoch go together: name both or neither");
      return std::nullopt;
    }
    auto number = [](const std::string& text, int64_t max) -> std::optional<int64_t> {
      int64_t v = 0;
      auto [p, err] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (err != std::errc{} || p != text.data() + text.size() || v < 0 || v > max) return std::nullopt;
      return v;
    };
    auto pid = number(id->second, std::numeric_limits<int64_t>::max());
    auto pepoch = number(epoch->second, std::numeric_limits<int16_t>::max());
    if (!pid || !pepoch) {
      fail(422, ec::unprocessable, "query parameter " + std::string(!pid ? "producer_id" : "producer_epoch") +
                                       " must be an integer in [0, " +
                                       (!pid ? std::string("9223372036854775807") : std::string("32767")) + "], got \"" +
                                       (!pid ? id->second : epoch->second) + "\"");
      return std::nullopt;
    }
    if (const auto& auth = self->options_.auth; auth && !auth->producer_allowed(*pid, who.principal)) {
      // Issue 29: another principal's producer session is answered as one that does not exist.
      fail(404, ec::producer_not_found, "producer " + id->second + " not found");
      return std::nullopt;
    }
    broker::producer_identity producer{model::producer_id{*pid}, model::producer_epoch{static_cast<int16_t>(*pepoch)}};
    if (transactional != query.end()) {
      // Issue 30: a transactional produce needs WRITE on the id (Kafka's Produce with a transactional id).
      if (!require(security::resource_type::transactional_id, transactional->second, security::acl_operation::write)) {
        return std::nullopt;
      }
      producer.transactional_id = transactional->second;
    }
    return std::optional<broker::producer_identity>{std::move(producer)};
  }

  bool topic_exists(const std::string& topic) { return broker().admin().topic_exists(topic); }

  void fail_broker(const broker::error& e, error_scope scope, const std::string& topic) {
    bool exists = scope == error_scope::partition && e.code == broker::errc::unknown_topic_or_partition &&
                  topic_exists(topic);
    fail(to_api_error(e, scope, exists));
  }
};

}  // namespace ringlog::gateway

namespace ringlog::gateway::routes {

using call_ptr = std::shared_ptr<api::call>;
using handler = void (*)(const call_ptr&);

// -- shared helpers (api.cc)

/// {"related": url}: a v3 link to another resource.
json related(const std::string& url);
/// A v3 list resource: {"kind", "metadata": {"self", "next": null}, "data"}.
json list_json(const std::string& kind, const std::string& self, json data);
/// {"error_code", "message"} as text: an in-band error report.
std::string error_json(const api_error& e);
/// Partition `p` of `t`; nullptr when the topic has no such partition.
const broker::partition_description* find_partition(const broker::topic_description& t, int32_t p);
/// 404/40402 for partition `p` of `t`, naming how many partitions the topic has.
void fail_partition_not_found(api::call& call, const broker::topic_description& t, int32_t p);
/// The {broker_id} path parameter as a broker; nullopt (404 answered) when it is none (api_v3_admin.cc).
std::optional<broker::broker_description> path_broker(api::call& call);
/// The {broker_id} path parameter as a number; nullopt when it is not one (nothing answered).
std::optional<int32_t> path_broker_id(api::call& call);
/// describe_topic(params[key]) then `done` on the connection thread; errors answered here.
void with_topic(const call_ptr& c, const std::string& key, error_scope scope,
                std::function<void(api::call&, broker::topic_description)> done);
/// Asks the partition's leader (list_offsets: earliest, then latest) for its log start offset and
/// high watermark, then calls `done(call, earliest, latest)` on the connection thread; a broker
/// error is answered here (partition scope). A follower's own high watermark lags its leader's by
/// a fetch round, so routes that report a partition's ends use this, never the local replica.
void with_offset_bounds(const call_ptr& c, const model::topic_partition& tp,
                        std::function<void(api::call&, int64_t earliest, int64_t latest)> done);
/// Issue 30: removes the names of `names` the caller may not `operation` as `resource` (a list
/// never reveals what the caller may not DESCRIBE: Kafka's Metadata omits such topics).
void keep_authorized(api::call& call, security::resource_type resource, security::acl_operation operation,
                     std::vector<std::string>& names);
/// As keep_authorized, for topic descriptions.
void keep_authorized(api::call& call, security::acl_operation operation, std::vector<broker::topic_description>& topics);
/// Whether a list of consumer groups shows `group_id` to the caller (Kafka's ListGroups, filtered,
/// never refused): with DESCRIBE on the cluster every group, else those it may DESCRIBE.
bool may_list_group(api::call& call, const std::string& group_id);
/// Issue 30: requires READ (or `operation`) on the topic of every partition of `partitions`;
/// false after answering 403 for the first one refused.
bool require_topics(api::call& call, const std::vector<model::topic_partition>& partitions,
                    security::acl_operation operation = security::acl_operation::read);
/// Issue 30: the operations the caller may do on the resource, of those Kafka's ACLs name for its
/// type (AclEntry.supportedOperations), as Kafka's names: the `authorized_operations` of the v3
/// cluster and topic answers (KIP-430), which the console reads to disable what is not allowed.
json authorized_operations(api::call& call, security::resource_type resource, std::string_view name);
/// Describes every topic (internal ones when asked), then calls `done` on the connection thread.
void describe_all(const call_ptr& c, bool include_internal,
                  std::function<void(api::call&, std::vector<broker::topic_description>)> done);

// -- shared by the v2 consumer and v3 group routes (api_v2_consumers.cc)

/// [{"topic", "partition"}] of `set`.
json partitions_json(const group::partition_set& set);

/// Answers a broker result of a consumer call with 204 (the value, if any, is not shown).
template <typename T = void>
std::function<void(broker::result<T>)> answer_no_content(const call_ptr& c) {
  return [c](broker::result<T> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      call.respond_no_content();
    });
  };
}

// -- streams (api_streams.cc)

/// Streams a v2 consumer instance's records as NDJSON or SSE (`type`, one of stream_offers)
/// until the query's `timeout` (answers 422 for a bad one).
void stream_consumer(const call_ptr& c, const std::string& type, bool as_json, const std::string& group,
                     const std::string& instance);

// -- authentication (api_auth.cc, issue 29)

/// Authenticates the call unless `pattern` is open (health, console, login, logout, metrics
/// unless http.metrics.authentication); sets call::who. False after answering 401/403.
bool authenticate_call(const call_ptr& c, std::string_view pattern);
/// Issue 30: checks the route's requirements whose needs are all named by its path or the
/// cluster (route_need::source path and cluster) against the caller's ACLs, each met by any one
/// of its needs; false after answering 403 (40301), which names the first need of the requirement
/// refused. True without an authorizer, and on routes open without credentials (health, console,
/// login, open /metrics).
bool authorize_call(const call_ptr& c, std::string_view pattern, const std::vector<route_requirement>& requirements);
/// A state-changing /v3/clusters route other than records, producers and transactions: topics,
/// configs, partitions, reassignments, elections, groups' deletes and offset resets, users.
bool is_admin_write(std::string_view method, std::string_view pattern);
/// With authentication on: runs `next` when the consumer instance of the path belongs to the
/// caller (or does not exist: the route answers that), else answers 404 40403 as for a missing one.
void check_instance_owner(const call_ptr& c, handler next);
void auth_login(const call_ptr& c);
void auth_logout(const call_ptr& c);
void auth_tokens(const call_ptr& c);
void auth_whoami(const call_ptr& c);

// -- the handlers of the route table (one file per family)

void console_get(const call_ptr& c);
void fetch_records(const call_ptr& c);
void get_metrics(const call_ptr& c);
void health(const call_ptr& c);
void v2_assign(const call_ptr& c);
void v2_brokers(const call_ptr& c);
void v2_commit_offsets(const call_ptr& c);
void v2_committed_offsets(const call_ptr& c);
// -- retries and dead letters (api_dead_letters.cc, issue 18)
void v2_nack(const call_ptr& c);
void v3_dead_letter_topics(const call_ptr& c);
void v3_delayed_records(const call_ptr& c);
void v3_dead_letters(const call_ptr& c);
void v3_redrive(const call_ptr& c);
void v2_consumer_records(const call_ptr& c);
void v2_create_consumer(const call_ptr& c);
void v2_delete_consumer(const call_ptr& c);
void v2_get_assignments(const call_ptr& c);
void v2_get_partition(const call_ptr& c);
void v2_get_subscription(const call_ptr& c);
void v2_get_topic(const call_ptr& c);
void v2_list_partitions(const call_ptr& c);
void v2_list_topics(const call_ptr& c);
void v2_offsets(const call_ptr& c);
void v2_produce_partition(const call_ptr& c);
void v2_produce_topic(const call_ptr& c);
void v2_seek(const call_ptr& c);
void v2_seek_beginning(const call_ptr& c);
void v2_seek_end(const call_ptr& c);
void v2_subscribe(const call_ptr& c);
void v2_unsubscribe(const call_ptr& c);
void v3_alter_configs(const call_ptr& c);
void v3_alter_broker_configs(const call_ptr& c);
// -- SCRAM users (api_v3_users.cc)
void v3_list_users(const call_ptr& c);
void v3_get_user(const call_ptr& c);
void v3_set_user(const call_ptr& c);
void v3_delete_user(const call_ptr& c);
void v3_alter_cluster_broker_configs(const call_ptr& c);
void v3_get_broker_config(const call_ptr& c);
void v3_get_cluster_broker_config(const call_ptr& c);
void v3_list_all_broker_configs(const call_ptr& c);
void v3_list_broker_configs(const call_ptr& c);
void v3_list_cluster_broker_configs(const call_ptr& c);
void v3_reset_broker_config(const call_ptr& c);
void v3_reset_cluster_broker_config(const call_ptr& c);
void v3_set_broker_config(const call_ptr& c);
void v3_set_cluster_broker_config(const call_ptr& c);
void v3_create_topic(const call_ptr& c);
void v3_delete_group(const call_ptr& c);
void v3_delete_topic(const call_ptr& c);
void v3_get_broker(const call_ptr& c);
void v3_get_quorum(const call_ptr& c);
void v3_elect_leaders(const call_ptr& c);
void v3_get_cluster(const call_ptr& c);
void v3_get_config(const call_ptr& c);
void v3_get_group(const call_ptr& c);
void v3_get_partition(const call_ptr& c);
void v3_get_partition_offset(const call_ptr& c);
void v3_get_replica(const call_ptr& c);
void v3_get_topic(const call_ptr& c);
void v3_group_consumer(const call_ptr& c);
void v3_group_consumer_assignments(const call_ptr& c);
void v3_group_consumer_assignment(const call_ptr& c);
void v3_group_consumers(const call_ptr& c);
void v3_group_lag_history(const call_ptr& c);
void v3_group_lag_summary(const call_ptr& c);
void v3_group_lags(const call_ptr& c);
void v3_group_partition_lag(const call_ptr& c);
// api_v3_client_quotas.cc (issue 31)
void v3_list_client_quotas(const call_ptr& c);
void v3_alter_client_quotas(const call_ptr& c);
/// Sets the call's client id and byte quota (http_quotas.h); false after answering 429 (42901,
/// Retry-After) while the client's throttle of that quota runs, or 400 for an X-Client-Id too long.
bool admit_quota_client(const call_ptr& c, std::string_view method, std::string_view pattern);
// api_v3_acls.cc
void v3_list_acls(const call_ptr& c);
void v3_create_acl(const call_ptr& c);
void v3_create_acls_batch(const call_ptr& c);
void v3_delete_acls(const call_ptr& c);
// api_v3_admin.cc (continued)
void v3_list_brokers(const call_ptr& c);
void v3_list_reassignments(const call_ptr& c);
void v3_list_topic_reassignments(const call_ptr& c);
void v3_get_reassignment(const call_ptr& c);
void v3_alter_reassignments(const call_ptr& c);
void v3_patch_reassignment(const call_ptr& c);
void v3_cancel_reassignment(const call_ptr& c);
void v3_list_clusters(const call_ptr& c);
void v3_list_configs(const call_ptr& c);
void v3_list_all_topic_configs(const call_ptr& c);
void v3_alter_all_topic_configs(const call_ptr& c);
void v3_list_broker_replicas(const call_ptr& c);
// ---- api_v3_balance.cc (issue 33): rebalance, decommission (Confluent's remove-broker tasks)
void v3_get_rebalance(const call_ptr& c);
void v3_post_rebalance(const call_ptr& c);
void v3_cancel_rebalance(const call_ptr& c);
void v3_remove_broker(const call_ptr& c);
void v3_list_broker_tasks(const call_ptr& c);
void v3_get_remove_broker_task(const call_ptr& c);
void v3_cancel_remove_broker_task(const call_ptr& c);
void v3_list_groups(const call_ptr& c);

// -- group calls through any broker (api_group_forward.cc, group_proxy.h)

/// A call of a group route (v2 {group}, v3 {consumer_group_id}) whose group another broker
/// coordinates, not itself passed on by a peer: passes it on to the coordinator and answers with
/// its answer (503 + Retry-After naming the coordinator when it does not answer). False when the
/// call is to be served here.
bool forward_group_call(const call_ptr& c);
/// Passes `c`'s request on to the coordinator of `group_id` with `extra_query` ("name=value")
/// added to its query, and answers with that broker's answer (503 naming it when it does not
/// answer): a call of another coordinator's route whose second half belongs to the group's
/// coordinator (a transaction's offsets: TxnOffsetCommit). False when the group is served here
/// (or has no coordinator now, which the local call answers).
bool pass_on_to_group_coordinator(const call_ptr& c, const std::string& group_id, std::string_view extra_query);
/// A call on broker N's own configs (`/v3/clusters/{c}/brokers/{N}/configs...`, route `pattern`)
/// that reaches another broker is passed on to broker N's HTTP listener, as Kafka's admin client
/// sends a broker's config calls to that broker; its answer is relayed (X-Ringlog-Served-By), or a
/// 503 names the broker that did not answer. False: not such a call, or served here.
bool forward_broker_config_call(const call_ptr& c, std::string_view pattern);
/// Decides, before a call is authorized, whether a peer broker passed it on: X-Ringlog-Forwarded-By
/// is set and X-Ringlog-Forwarded-Proof verifies, with the cluster's forwarding secret, over that
/// node id, the method, target, X-Ringlog-Forwarded-For and body, signed within
/// security::constants::forwarded_call_skew_ms_max of this broker's clock
/// (security/forwarded_call.h). Only then is its X-Ringlog-Forwarded-For believed as the
/// client's address (ACL host checks) and its "already done" query flags honoured; anyone
/// else's forwarding headers change nothing but the loop guard (the call is served where it
/// arrives, as the caller's own, with its own address).
void identify_client(const call_ptr& c);
/// `c`'s request as it is passed on to a peer: with the client's address (forwarded_for) and,
/// when this node authenticates HTTP callers, the principal it authenticated the caller as
/// (forwarded_principal, signed with the call by group_proxy.h): a peer cannot check this node's
/// access tokens or console sessions, so it takes the principal instead.
http_request passed_on_request(const api::call& c);
/// Runs `next` (on the call's thread) once this node's metadata image has applied the offset the
/// passing broker's had (call::passing_broker_metadata_offset), at once when it has or the call was
/// not passed on by a broker; after proxy_limits::forwarded_metadata_wait_ms_max it runs `next`
/// all the same, against this image, and logs why. Read-your-writes across nodes: an ACL, user
/// or topic the client created through the passing broker (its answer came from that image) is
/// known here before the call is authenticated, authorized and served.
void after_passing_brokers_metadata(const call_ptr& c, std::function<void()> next);
/// GET .../consumer-groups through a cluster: every live broker's own list (each lists the groups
/// it coordinates), merged by group id. False when this node's list is the whole answer.
bool gather_group_lists(const call_ptr& c);
/// The call, as a GET, asked of every live broker that serves HTTP (this one too), each marked as
/// passed on so that it answers for itself; `done` on the call's thread with each 200 answer's
/// JSON body and the node ids of brokers that gave none (a live broker without an HTTP listener,
/// a Kafka-only one, is never asked and is listed there too). False (nothing asked) when the call was
/// itself passed on, there is no forwarder, or there is only one broker: answer locally then.
/// `target_of` (optional): the target to ask each node id instead of the call's own; `timeout_ms`
/// (optional, > 0): each broker's bound instead of the proxy's connect + exchange bound.
using broker_answers_fn = std::function<void(api::call&, std::vector<json> answers, std::vector<std::string> unanswered)>;
bool ask_every_broker(const call_ptr& c, broker_answers_fn done, const std::function<std::string(int32_t)>& target_of = {},
                      int64_t timeout_ms = 0);
void v3_list_partitions(const call_ptr& c);
void v3_list_replicas(const call_ptr& c);
void v3_list_topics(const call_ptr& c);
void v3_patch_topic(const call_ptr& c);
void v3_produce(const call_ptr& c);
void v3_produce_batch(const call_ptr& c);
void v3_create_producer(const call_ptr& c);
// ---- api_v3_transactions.cc
void v3_begin_transaction(const call_ptr& c);
void v3_add_transaction_partitions(const call_ptr& c);
void v3_add_transaction_offsets(const call_ptr& c);
void v3_commit_transaction(const call_ptr& c);
void v3_abort_transaction(const call_ptr& c);
void v3_list_transactions(const call_ptr& c);
void v3_get_transaction(const call_ptr& c);
void v3_reset_config(const call_ptr& c);
void v3_reset_group_offsets(const call_ptr& c);
void v3_set_config(const call_ptr& c);

}  // namespace ringlog::gateway::routes
