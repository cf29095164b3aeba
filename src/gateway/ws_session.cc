// WebSocket sessions at /v1/ws (issue 5): produce with in-order acks, partition subscriptions and
// group membership with credit-based flow control, one write in flight, close with a reason.
// The only translation unit that instantiates Beast's websocket templates.

#include "ws_session.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "authorization.h"
#include "base64.h"
#include "consumer_parsing.h"
#include "errors.h"
#include "http_auth.h"
#include "json_fields.h"
#include "member_calls.h"
#include "record_json.h"
#include "request_parsing.h"
#include "stream_limits.h"
#include "ws_metered_stream.h"
#include "ringlog/base/assert.h"
#include "ringlog/delay/constants.h"

namespace ringlog::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
namespace limits = stream_limits;

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

template <typename Record>   // model::record or broker::produce_record
size_t record_bytes(const Record& r) {
  size_t n = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
  for (const auto& h : r.headers) n += h.key.size() + (h.value ? h.value->size() : 0);
  return n;
}

/// A `record` message: the read paths' record object with its type first (record_json.h). A
/// payload that is not JSON goes out as a JSON string when the json format was asked for.
std::string record_text(const model::topic_partition& tp, const model::record& rec, bool as_json) {
  const std::string topic_json_text = dump(json(tp.topic));
  std::string out;
  out.reserve(record_json_bytes_estimate(rec, topic_json_text.size()));
  append_record_json(out, "\"type\":\"record\",", topic_json_text, tp.partition.value(), rec, as_json,
                     non_json_payload::as_string);
  return out;
}

/// The `record` texts of the last fetch answer each shard thread delivered, per format, for the
/// next subscriber that receives the same read (broker::fetch_response::read_id): one append wakes
/// every live subscriber of a partition with the same records, so each record is encoded once per
/// thread and format instead of once per subscriber. Holds at most one fetch per format (a fetch
/// is at most ws_fetch_bytes_max of payload, or one larger record).
class shared_record_texts {
 public:
  /// The text of r.records[index] (record_text), from the cache when `r` is the read it holds.
  const std::string& text(const model::topic_partition& tp, const broker::fetch_response& r, size_t index, bool as_json) {
    if (r.read_id == 0) return scratch_ = record_text(tp, r.records[index], as_json);
    auto& held = held_[as_json ? 1 : 0];
    if (held.read_id != r.read_id) {
      held.read_id = r.read_id;
      held.texts.assign(r.records.size(), std::string());
    }
    std::string& t = held.texts[index];
    if (t.empty()) t = record_text(tp, r.records[index], as_json);   // a record's text is never empty
    return t;
  }

 private:
  struct held_read {
    uint64_t read_id = 0;
    std::vector<std::string> texts;   // one per record of the read; empty until encoded
  };
  held_read held_[2];   // binary, json
  std::string scratch_;
};

thread_local shared_record_texts record_texts;

/// An `error` answer; `id_json` is the client's id as JSON text.
std::string error_text(std::string_view id_json, int code, const std::string& message) {
  std::string out = "{\"type\":\"error\",\"id\":";
  out += id_json;
  out += ",\"error_code\":";
  out += std::to_string(code);
  out += ",\"message\":";
  out += dump(json(message));
  out += '}';
  return out;
}

/// A produce payload: base64 text (binary), any JSON value stored as its text (json), or null.
std::optional<std::optional<model::bytes>> payload_of(const json& v, bool as_json) {
  if (v.is_null()) return std::optional<model::bytes>();
  if (as_json) return std::optional<model::bytes>(model::to_bytes(dump(v)));
  if (!v.is_string()) return std::nullopt;
  auto decoded = base64_decode(v.get<std::string>());
  if (!decoded) return std::nullopt;
  return std::optional<model::bytes>(std::move(*decoded));
}

/// A field of a client message with the wrong type or value; what() names the field.
struct bad_field : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// m[name] as an integer (a JSON number without a fraction), or `fallback` when absent.
int64_t integer_field(const json& m, const char* name, int64_t fallback) {
  if (!m.contains(name)) return fallback;
  const json& v = m[name];
  if (!v.is_number_integer()) throw bad_field(std::string("\"") + name + "\" must be an integer, got " + dump(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw bad_field(std::string("\"") + name + "\" must be at most 9223372036854775807 (2^63-1), got " + dump(v));
  }
  return v.get<int64_t>();
}

/// m[name] as a boolean, or `fallback` when absent.
bool bool_field(const json& m, const char* name, bool fallback) {
  if (!m.contains(name)) return fallback;
  if (!m[name].is_boolean()) throw bad_field(std::string("\"") + name + "\" must be true or false, got " + dump(m[name]));
  return m[name].get<bool>();
}

/// m[name] as one of `allowed` (strings), or `fallback` when absent.
std::string choice_field(const json& m, const char* name, std::initializer_list<const char*> allowed, const char* fallback) {
  if (!m.contains(name)) return fallback;
  const json& v = m[name];
  std::string list;
  for (const char* a : allowed) {
    if (v.is_string() && v.get<std::string>() == a) return a;
    list += (list.empty() ? "" : " or ") + std::string("\"") + a + "\"";
  }
  throw bad_field(std::string("\"") + name + "\" must be " + list + ", got " + dump(v));
}

/// The first field of `object` that is not one of `known`, or nullopt. Every client object is
/// checked with it, so a misspelt field ("valeu", "ofset") is refused instead of ignored.
std::optional<std::string> unknown_field(const json& object, std::initializer_list<std::string_view> known) {
  for (const auto& [name, unused] : object.items()) {
    if (std::find(known.begin(), known.end(), name) == known.end()) return name;
  }
  return std::nullopt;
}

/// The reason of a close frame is at most 123 bytes (RFC 6455 section 5.5: control frames carry
/// 125 bytes, 2 of them the code). A longer one ends at the last whole word that fits, then
/// "...", so it does not read as a sentence that stops mid-word (UTF-8 stays whole: a space is
/// never inside a multi-byte sequence).
std::string close_reason_text(std::string reason) {
  constexpr size_t reason_bytes_max = 123;
  if (reason.size() <= reason_bytes_max) return reason;
  const size_t cut = reason.rfind(' ', reason_bytes_max - 3);
  reason.resize(cut == std::string::npos ? 0 : cut);
  return reason + "...";
}

bool is_close_or_disconnect(beast::error_code ec) {
  return ec == websocket::error::closed || ec == asio::error::operation_aborted || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == beast::error::timeout;
}

/// Close codes used (RFC 6455 section 7.4.1).
enum close_code : uint16_t {
  going_away = 1001,         // graceful stop
  unsupported_data = 1003,   // a binary frame
  invalid_payload = 1007,    // not JSON / not an object
  policy_violation = 1008,   // the credential the socket opened with ended (logout, user deleted, ...)
  message_too_big = 1009,
  try_again_later = 1013,    // write queue full
};

class ws_session final : public std::enable_shared_from_this<ws_session> {
 public:
  ws_session(runtime::shard_socket socket, http::request<http::string_body> upgrade, ws_context context)
      : ws_(std::move(socket), limits::ws_message_bytes_max),
        upgrade_(std::move(upgrade)),
        ctx_(context),
        calls_(*context.broker, context.forwarder, context.broker->config().fetch_wait_max_ms,
               {context.authorization, context.host, context.auth ? context.principal.to_string() : std::string()}),
        tick_(ws_.get_executor()),
        quota_timer_(ws_.get_executor()) {
    ++ctx_.shared->open;
  }
  ~ws_session() {
    ctx_.shared->queued_bytes -= static_cast<int64_t>(out_bytes_);   // what was still queued is dropped
    --ctx_.shared->open;
  }

  void start() {
    websocket::stream_base::timeout t{};
    t.handshake_timeout = std::chrono::seconds(30);
    // Beast pings a connection idle for half of this; the tick closes one that sent nothing for
    // ws_idle_timeout_ms with a reason, before Beast's own limit would drop it without a close frame.
    t.idle_timeout = std::chrono::milliseconds(limits::ws_idle_timeout_ms + 2 * limits::ws_group_tick_ms);
    t.keep_alive_pings = true;
    ws_.set_option(t);
    ws_.control_callback([this](websocket::frame_type, beast::string_view) { last_heard_ = std::chrono::steady_clock::now(); });
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "ringlog"); }));
    // read() enforces ws_message_bytes_max and closes with a reason; Beast's own limit is off (0),
    // since it checks a frame's declared length before reading it and closes with no reason.
    // A frame header declaring a message over the limit closes at once, with the same reason
    // (ws_metered_stream): Beast would wait for its payload first, 2^63 bytes of it if declared.
    ws_.read_message_max(0);
    ws_.next_layer().on_over_limit([weak = weak_from_this()](uint64_t declared_bytes) {
      auto self = weak.lock();
      if (!self) return;
      self->on_executor([self, declared_bytes] {
        if (self->closing_) return;
        spdlog::debug("msg=\"websocket message over the limit\" declared_bytes={}", declared_bytes);
        self->close_with(message_too_big, too_big_reason());
      });
    });
    ws_.async_accept(upgrade_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->teardown();
      self->read();
      self->arm_tick();
    });
  }

 private:
  // ---- subscription / group state
  struct subscription {
    uint64_t generation = 0;   // a newer subscribe makes older fetch answers stale
    json id;
    model::topic_partition tp;
    int64_t next_offset = 0;
    bool as_json = false;
    bool batch = false;        // deliver a fetch's records as one `records` message
    broker::isolation_level isolation = broker::isolation_level::read_uncommitted;
    bool ready = false;        // its start position is resolved
    bool fetching = false;
  };
  struct membership {
    uint64_t generation = 0;
    std::string group;
    std::string instance;
    bool as_json = false;
    bool batch = false;        // deliver a poll's records as one `records` message
    bool ready = false;        // created and subscribed
    bool polling = false;
    bool checking = false;     // an assignments() call is in flight
    std::optional<json> assignment;
    /// A poll returned records of a partition the client was not told of yet (the group's retry
    /// topic, created by a nack): they were rewound, and no poll goes out until the assignment
    /// that adds it is told.
    bool assignment_stale = false;
    /// The offset of the last record delivered to the client per partition (what a commit
    /// stores, + 1). A commit names these, never the coordinator's "returned" positions: a poll
    /// that completed but is not delivered (or not yet rewound to the credit) moved those past
    /// records the client never saw (the breaker of session 24: a group skipped ~16,000 records).
    /// Bounded by the partitions the member was assigned; dropped with the membership.
    group::partition_map<model::offset> delivered;
  };

  // ---- produce state: one ticket per produce message
  struct produce_ticket {
    uint64_t seq = 0;        // message order: answers go out by it
    std::string id_json;     // the client's id, echoed
    size_t bytes = 0;        // record bytes, for metrics
    size_t records = 1;      // records of the message, in order in the broker request
    bool multi = false;      // a `records` message: answered with `results`
  };
  struct pending_batch {
    broker::produce_request request;
    std::vector<produce_ticket> tickets;
    size_t bytes = 0;
  };

  template <typename F>
  void on_executor(F fn) {
    asio::post(ws_.get_executor(), std::move(fn));
  }

  // ---- reading
  static std::string too_big_reason() {
    return "message larger than " + std::to_string(limits::ws_message_bytes_max) + " bytes (ws_message_bytes_max)";
  }

  /// Reads the next message a piece at a time, at most one byte past ws_message_bytes_max: a
  /// larger message is closed with 1009 and a reason by close_with. (With Beast's own
  /// read_message_max as the limit, Beast closes the connection itself, with an empty reason.)
  void read() {
    const size_t room = limits::ws_message_bytes_max + 1 - std::min(in_.size(), limits::ws_message_bytes_max);
    ws_.async_read_some(in_, room, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    last_heard_ = std::chrono::steady_clock::now();
    if (ec) {
      if (!is_close_or_disconnect(ec)) spdlog::debug("msg=\"websocket read failed\" error=\"{}\"", ec.message());
      return teardown();
    }
    if (in_.size() > limits::ws_message_bytes_max) {
      in_.consume(in_.size());
      return close_with(message_too_big, too_big_reason());
    }
    if (!ws_.is_message_done()) return read();
    if (!ws_.got_text()) {
      in_.consume(in_.size());
      return close_with(unsupported_data, "binary frames are not supported; send JSON text frames");
    }
    std::string text = beast::buffers_to_string(in_.data());
    in_.consume(in_.size());
    if (credential_ended()) return;
    handle(text);
    if (closing_) return;
    // Issue 31: a producer over its quota is not read from until its throttle time has passed
    // (Kafka mutes the channel, KIP-219); its messages wait in the socket, none is refused.
    if (std::chrono::steady_clock::now() < quota_paused_until_) {
      read_paused_ = true;
      return;
    }
    // A client that does not read its answers is not read from either (its messages wait in the
    // socket): the write completion that brings the queue down reads again (resume_reading).
    if (queue_full()) {
      queue_paused_ = true;
      return;
    }
    read();
  }

  /// Reading waits while this session's queue holds ws_write_queue_low_water_bytes or more, or
  /// while all sessions' queues hold ws_write_queue_total_bytes_max and this one is not empty
  /// (an empty one may read: its queue's next write completion is what resumes it). So answers
  /// never pile up past those bounds by more than one message's answers per session.
  [[nodiscard]] bool queue_full() const {
    return out_bytes_ >= limits::ws_write_queue_low_water_bytes ||
           (out_bytes_ > 0 && ctx_.shared->queued_bytes.load() >= limits::ws_write_queue_total_bytes_max);
  }
  void resume_reading() {
    if (!queue_paused_ || queue_full() || closing_) return;
    queue_paused_ = false;
    read();
  }

  // ---- client quotas (issue 31, http_quotas.h): the session's client is user = its principal's
  // name, client-id = the upgrade's X-Client-Id, else the peer's IP.
  /// Records `bytes` under `key`; over quota, pauses fetching (consumer_byte_rate) and reading
  /// messages (producer_byte_rate) for the throttle time instead of closing the session.
  void count_quota(security::quota_key key, uint64_t bytes) {
    if (bytes == 0) return;
    const int64_t throttle_ms =
        ctx_.broker->security().record_client_quota(key, ctx_.principal.name, ctx_.client_id, static_cast<double>(bytes));
    if (throttle_ms <= 0) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(throttle_ms);
    if (until <= quota_paused_until_) return;
    quota_paused_until_ = until;
    quota_timer_.expires_at(until);
    // A strong reference: while its read is paused this wait is all that keeps the session alive
    // (teardown cancels it).
    quota_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closing_) return;
      if (self->read_paused_) {
        self->read_paused_ = false;
        self->read();
      }
      self->pump();
    });
  }

  void handle(const std::string& text) {
    // Produce messages are most of the traffic: their common shape is read without a json tree.
    if (auto fast = parse_ws_produce_fast(text, records_per_message_max())) {
      if (fast->id_json.size() > limits::ws_id_bytes_max) return refuse_long_id(produce_message::yes);
      return produce_fast(std::move(*fast));
    }
    flush_produce();   // what was read before this message reaches the broker before it
    api_error refusal;
    json m = parse_json(text, "message", refusal);
    if (m.is_discarded()) return close_with(invalid_payload, refusal.message);
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) {
      return close_with(invalid_payload, "message must be a JSON object with a string \"type\"");
    }
    const std::string type = m["type"].get<std::string>();
    json id = m.value("id", json(nullptr));
    // Every answer echoes the id: a long one would make each answer as long (the breaker of
    // session 35 queued 60 KB errors by the thousand).
    if (!id.is_null() && dump(id).size() > limits::ws_id_bytes_max) {
      return refuse_long_id(type == "produce" ? produce_message::yes : produce_message::no);
    }
    try {
      if (type != "produce") check_fields(type, m);   // produce answers in order: it checks its own
      if (type == "produce") return on_produce(m, id);
      if (type == "subscribe") return on_subscribe(m, id);
      if (type == "credit") return on_credit(m, id);
      if (type == "unsubscribe") return on_unsubscribe(id);
      if (type == "join") return on_join(m, id);
      if (type == "commit") return on_commit(m, id);
      if (type == "nack") return on_nack(m, id);
      if (type == "ping") return send({{"type", "pong"}, {"id", id}});
    } catch (const bad_field& e) {
      return send_error(id, error_codes::unprocessable, e.what());
    } catch (const json::exception& e) {   // a field of the wrong type not read by the helpers above
      return send_error(id, error_codes::unprocessable, std::string("bad field: ") + e.what());
    }
    send_error(id, error_codes::unprocessable,
               "unknown message type \"" + type + "\"; one of produce, subscribe, credit, unsubscribe, join, commit, nack, ping");
  }

  /// Refuses a field the message type does not take (a misspelt "ofset" would otherwise
  /// subscribe at the latest offset and skip data without a word).
  static void check_fields(const std::string& type, const json& m) {
    auto refuse = [&](std::initializer_list<std::string_view> known) {
      auto name = unknown_field(m, known);
      if (!name) return;
      std::string list;
      for (std::string_view f : known) list += (list.empty() ? "" : ", ") + std::string(f);
      throw bad_field("unknown field \"" + *name + "\"; " + type + " takes " + list);
    };
    if (type == "subscribe") return refuse({"type", "id", "topic", "partition", "offset", "timestamp", "position", "format", "batch", "isolation_level"});
    if (type == "credit") return refuse({"type", "id", "records", "bytes"});
    if (type == "join") {
      return refuse({"type", "id", "group", "topics", "position", "format", "batch", "isolation_level", "max.delivery.attempts",
                     "retry.backoff.ms", "retry.backoff.multiplier", "retry.backoff.max.ms",
                     "retry.topic.template", "dead.letter.topic.template"});
    }
    if (type == "nack") return refuse({"type", "id", "offsets", "topic", "partition", "offset", "reason"});
    if (type == "commit") return refuse({"type", "id", "offsets"});
    if (type == "unsubscribe" || type == "ping") return refuse({"type", "id"});
    // an unknown type is answered by the caller
  }

  // ---- produce: answered in request order whatever order the broker finishes in
  void on_produce(const json& m, const json& id) {
    const uint64_t seq = next_produce_seq_++;
    try {
      produce_checked(m, id, seq);
    } catch (const bad_field& e) {   // every seq must be answered, or later acks would wait
      produce_done(seq, error_json(id, error_codes::unprocessable, e.what()));
    } catch (const json::exception& e) {
      produce_done(seq, error_json(id, error_codes::unprocessable, std::string("bad field: ") + e.what()));
    }
  }

  void produce_checked(const json& m, const json& id, uint64_t seq) {
    auto bad = [&](const std::string& why) { produce_done(seq, error_json(id, error_codes::unprocessable, why)); };
    if (!m.contains("topic") || !m["topic"].is_string()) return bad("produce needs a string \"topic\"");
    // As the REST API refuses them: a misspelt "valeu" must not store a record without a value.
    if (auto name = unknown_field(m, {"type", "id", "topic", "format", "acks", "partition", "key", "value", "headers",
                                      "records", "sequence", "producer_id", "producer_epoch", "transactional_id",
                                      "deliver_at", "delay_ms"})) {
      return bad("unknown field \"" + *name + "\"; a produce message takes type, id, topic, format, acks, " +
                 "partition, key, value, headers, sequence, deliver_at, delay_ms (or records), producer_id, " +
                 "producer_epoch, transactional_id");
    }
    const bool as_json = choice_field(m, "format", {"binary", "json"}, "binary") == "json";
    broker::produce_request req;
    req.principal = ctx_.principal;
    req.host = ctx_.host;
    req.topic = m["topic"].get<std::string>();
    if (auto refusal = acl_refusal_of(security::resource_type::topic, req.topic, security::acl_operation::write)) {
      return produce_done(seq, error_json(id, refusal->error_code, refusal->message));
    }
    const bool multi = m.contains("records");
    if (multi) {
      for (const char* field : {"partition", "key", "value", "headers", "sequence", "deliver_at", "delay_ms"}) {
        if (m.contains(field)) {
          return bad(std::string("\"") + field + "\" belongs inside each element of \"records\", not beside it");
        }
      }
      const json& records = m["records"];
      const size_t records_max = records_per_message_max();
      if (!records.is_array() || records.empty()) return bad("records must be an array of 1 or more records");
      if (records.size() > records_max) {
        return produce_done(seq, error_json(id, error_codes::record_too_large,
                                            "the message has " + std::to_string(records.size()) +
                                                " records; the limit is " + std::to_string(records_max) +
                                                " (produce.records.max, at most ws_produce_in_flight_max)"));
      }
      for (size_t i = 0; i < records.size(); ++i) {
        if (!records[i].is_object()) return bad("records[" + std::to_string(i) + "] must be an object");
        if (auto name = unknown_field(records[i], {"partition", "key", "value", "headers", "sequence", "deliver_at",
                                                   "delay_ms"})) {
          return bad("records[" + std::to_string(i) + "] has an unknown field \"" + *name +
                     "\"; a record takes partition, key, value, headers, sequence, deliver_at and delay_ms");
        }
        auto rec = record_of(records[i], as_json);
        if (!rec.ok()) return bad("records[" + std::to_string(i) + "]: " + rec.error());
        req.records.push_back(std::move(rec.value()));
      }
    } else {
      auto rec = record_of(m, as_json);
      if (!rec.ok()) return bad(rec.error());
      req.records.push_back(std::move(rec.value()));
    }
    if (m.contains("acks")) {
      const json& a = m["acks"];
      if (a == 0) req.acks = broker::acks_mode::none;
      else if (a == 1) req.acks = broker::acks_mode::leader;
      else if (a == -1 || a == "all") req.acks = broker::acks_mode::all;
      else return bad("acks must be 0, 1, -1 or \"all\"");
    }
    // Idempotent produce (KIP-98): one message is one broker request, so a message resent after
    // a lost connection makes the same batches and is answered with the original offsets.
    if (m.contains("producer_id") || m.contains("producer_epoch")) {
      const json& pid = m.value("producer_id", json(nullptr));
      const json& pepoch = m.value("producer_epoch", json(nullptr));
      if (!pid.is_number_integer() || pid.get<int64_t>() < 0 || !pepoch.is_number_integer() ||
          pepoch.get<int64_t>() < 0 || pepoch.get<int64_t>() > std::numeric_limits<int16_t>::max()) {
        return bad("producer_id (an integer >= 0) and producer_epoch (an integer in [0, 32767]) go together");
      }
      if (ctx_.auth && !ctx_.auth->producer_allowed(pid.get<int64_t>(), ctx_.principal)) {
        // Issue 29: another principal's producer session is answered as one that does not exist.
        return produce_done(seq, error_json(id, error_codes::producer_not_found,
                                            "producer " + std::to_string(pid.get<int64_t>()) + " not found"));
      }
      req.producer = broker::producer_identity{model::producer_id{pid.get<int64_t>()},
                                               model::producer_epoch{static_cast<int16_t>(pepoch.get<int64_t>())}};
      // A transactional produce (issue 16): the records join the id's open transaction.
      if (m.contains("transactional_id")) {
        const json& tid = m["transactional_id"];
        if (!tid.is_string() || tid.get<std::string>().empty()) return bad("transactional_id must be a non-empty string");
        if (auto refusal = acl_refusal_of(security::resource_type::transactional_id, tid.get<std::string>(),
                                          security::acl_operation::write)) {
          return produce_done(seq, error_json(id, refusal->error_code, refusal->message));
        }
        req.producer->transactional_id = tid.get<std::string>();
      }
    } else if (m.contains("transactional_id")) {
      return bad("transactional_id needs producer_id and producer_epoch (the answer of POST .../transactions, or of "
                 "the last commit or abort)");
    } else {
      for (const auto& rec : req.records) {
        if (rec.sequence) return bad("sequence is for an idempotent produce: send producer_id and producer_epoch too");
      }
    }
    if (produce_in_flight_ + req.records.size() > limits::ws_produce_in_flight_max) return produce_refused(seq, dump(id));
    size_t bytes = 0;
    for (const auto& rec : req.records) bytes += record_bytes(rec);
    const size_t count = req.records.size();
    produce_in_flight_ += count;
    count_quota(security::quota_key::producer_byte_rate, bytes);
    submit_produce(std::move(req), {produce_ticket{seq, dump(id), bytes, count, multi}});
  }

  /// One record of a produce message (the message itself, or an element of its `records`):
  /// `partition`, `key`, `value`, `headers`; an error text names the bad field.
  static base::result<broker::produce_record, std::string> record_of(const json& m, bool as_json) {
    broker::produce_record rec;
    if (m.contains("partition") && !m["partition"].is_null()) {
      auto partition = json_partition(m["partition"]);
      if (!partition) return std::string("partition must be ") + json_partition_range;
      rec.partition = model::partition_id(*partition);
    }
    if (m.contains("sequence") && !m["sequence"].is_null()) {
      const json& s = m["sequence"];
      if (!s.is_number_integer() || s.get<int64_t>() < 0 || s.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return std::string("sequence must be an integer in [0, 2147483647]");
      }
      rec.sequence = model::sequence{static_cast<int32_t>(s.get<int64_t>())};
    }
    for (const char* field : {"key", "value"}) {
      if (!m.contains(field)) continue;
      auto p = payload_of(m[field], as_json);
      if (!p) return std::string(field) + " must be base64 text or null (or any JSON with \"format\":\"json\")";
      (std::string(field) == "key" ? rec.key : rec.value) = std::move(*p);
    }
    if (m.contains("headers")) {
      if (!m["headers"].is_array()) return std::string("headers must be an array of {\"key\", \"value\"}");
      for (const auto& h : m["headers"]) {
        if (!h.is_object() || !h.contains("key") || !h["key"].is_string()) return std::string("a header needs a string key");
        if (auto name = unknown_field(h, {"key", "value"})) {
          return "a header has an unknown field \"" + *name + "\"; it takes key and value";
        }
        auto v = payload_of(h.value("value", json(nullptr)), false);
        if (!v) return std::string("a header value must be base64 text or null");
        rec.headers.push_back({h["key"].get<std::string>(), std::move(*v)});
      }
    }
    // Delayed delivery (issue 18): the header the broker reads, as the REST bodies do.
    const bool at = m.contains("deliver_at") && !m["deliver_at"].is_null();
    const bool after = m.contains("delay_ms") && !m["delay_ms"].is_null();
    if (at || after) {
      const bool has_header = std::any_of(rec.headers.begin(), rec.headers.end(), [](const model::record_header& h) {
        return h.key == delay::deliver_at_header || h.key == delay::delay_ms_header;
      });
      if ((at && after) || has_header) {
        return std::string("a record takes deliver_at or delay_ms (or a ringlog-deliver-at / ringlog-delay-ms header), only one");
      }
      const json& v = at ? m["deliver_at"] : m["delay_ms"];
      constexpr int64_t ms_max = 253'402'300'799'999;   // 9999-12-31T23:59:59.999Z
      std::optional<int64_t> ms;
      if (at && v.is_string()) ms = parse_iso8601_ms(v.get<std::string>());
      else if (v.is_number_integer()) ms = v.get<int64_t>();
      if (!ms || *ms < 0 || *ms > ms_max) {
        return std::string(at ? "deliver_at must be ms since the epoch or an ISO-8601 date-time from 1970 to 9999"
                              : "delay_ms must be an integer of milliseconds >= 0");
      }
      rec.headers.push_back({std::string(at ? delay::deliver_at_header : delay::delay_ms_header),
                             model::to_bytes(std::to_string(*ms))});
    }
    return rec;
  }

  /// Records one produce message may carry: produce.records.max, and never more than the
  /// socket's whole in-flight allowance.
  size_t records_per_message_max() const {
    return std::min(static_cast<size_t>(ctx_.broker->config().produce_records_max), limits::ws_produce_in_flight_max);
  }

  /// The common produce shape joins the pending request (same topic and acks), which goes to the
  /// broker once no more messages are ready to read, or when it is full.
  void produce_fast(ws_produce_message m) {
    const uint64_t seq = next_produce_seq_++;
    const size_t count = m.records.size();
    if (auto refusal = acl_refusal_of(security::resource_type::topic, m.topic, security::acl_operation::write)) {
      return produce_done(seq, error_text(m.id_json, refusal->error_code, refusal->message));
    }
    if (produce_in_flight_ + count > limits::ws_produce_in_flight_max) return produce_refused(seq, m.id_json);
    auto& pending = pending_produce_;
    const size_t records_max = std::min(limits::ws_produce_coalesce_records_max, records_per_message_max());
    if (!pending.tickets.empty() && (pending.request.topic != m.topic || pending.request.acks != m.acks ||
                                     pending.request.records.size() + count > records_max)) {
      flush_produce();
    }
    if (pending.tickets.empty()) {
      pending.request.topic = std::move(m.topic);
      pending.request.principal = ctx_.principal;
      pending.request.host = ctx_.host;
      pending.request.acks = m.acks;
    }
    size_t bytes = 0;
    for (auto& rec : m.records) {
      bytes += record_bytes(rec);
      pending.request.records.push_back(std::move(rec));
    }
    pending.tickets.push_back({seq, std::move(m.id_json), bytes, count, m.multi});
    count_quota(security::quota_key::producer_byte_rate, bytes);
    pending.bytes += bytes;
    produce_in_flight_ += count;
    if (pending.request.records.size() >= records_max || pending.bytes >= limits::ws_produce_coalesce_bytes_max) {
      return flush_produce();
    }
    schedule_produce_flush();
  }

  /// Posts a check that sends the pending request once a turn of the event loop added nothing to
  /// it. The first check always waits one more turn: the completion of the read that follows a
  /// message is queued behind it even when that message is already buffered.
  void schedule_produce_flush() {
    if (produce_flush_posted_) return;
    produce_flush_posted_ = true;
    produce_flush_seen_ = 0;
    on_executor([self = shared_from_this()] { self->on_produce_flush_check(); });
  }
  void on_produce_flush_check() {
    const size_t pending = pending_produce_.tickets.size();
    if (pending != 0 && pending != produce_flush_seen_ && !closing_) {
      produce_flush_seen_ = pending;
      on_executor([self = shared_from_this()] { self->on_produce_flush_check(); });
      return;
    }
    produce_flush_posted_ = false;
    flush_produce();
  }
  void flush_produce() {
    if (pending_produce_.tickets.empty()) return;
    pending_batch batch = std::move(pending_produce_);
    pending_produce_ = pending_batch{};
    submit_produce(std::move(batch.request), std::move(batch.tickets));
  }

  void produce_refused(uint64_t seq, std::string_view id_json) {
    produce_done(seq, error_text(id_json, error_codes::too_many_requests,
                                 "too many produce requests in flight (ws_produce_in_flight_max=" +
                                     std::to_string(limits::ws_produce_in_flight_max) + ")"));
  }

  /// Sends `req` to the broker; the answer for each record (ack or error, its client id echoed)
  /// goes out in message order. `tickets[i]` belongs to `req.records[i]`; each was counted in
  /// produce_in_flight_.
  void submit_produce(broker::produce_request req, std::vector<produce_ticket> tickets) {
    std::string topic = req.topic;
    ctx_.broker->produce(std::move(req), [self = shared_from_this(), tickets = std::move(tickets),
                                          topic](broker::result<broker::produce_response> r) mutable {
      self->on_executor([self, tickets = std::move(tickets), topic = std::move(topic), r = std::move(r)] {
        self->answer_produce(topic, tickets, r);
      });
    });
  }

  /// Turns the broker's answer into one message per ticket: `produce_ack` (with `results` for a
  /// `records` message, else the record's own fields) or, when the whole request failed or the
  /// record of a one-record message failed, `error`.
  void answer_produce(const std::string& topic, const std::vector<produce_ticket>& tickets,
                      const broker::result<broker::produce_response>& r) {
    size_t records = 0;
    for (const auto& t : tickets) records += t.records;
    produce_in_flight_ -= records;
    if (!r.ok()) {
      const int code = to_api_error(r.error()).error_code;
      for (const auto& t : tickets) produce_done(t.seq, error_text(t.id_json, code, r.error().message));
      return;
    }
    RINGLOG_ASSERT_OP(r->results.size(), ==, records);
    // A missing partition of an existing topic is 40402, as the REST API answers it.
    auto failure_code = [&](const broker::error& e) {
      return to_api_error(e, error_scope::partition, ctx_.broker->admin().topic_exists(topic)).error_code;
    };
    auto record_fields = [](std::string& out, const broker::produce_record_result& res) {
      out += "\"partition\":" + std::to_string(res.partition.value()) + ",\"offset\":" +
             std::to_string(res.record_offset.value()) + ",\"timestamp\":" + std::to_string(res.timestamp);
    };
    uint64_t records_in = 0;
    uint64_t bytes_in = 0;
    size_t at = 0;
    for (const produce_ticket& t : tickets) {
      const size_t first = at;
      at += t.records;
      size_t stored = 0;
      for (size_t i = first; i < at; ++i) stored += r->results[i].failure ? 0 : 1;
      records_in += stored;
      if (stored == t.records) bytes_in += t.bytes;
      if (!t.multi) {
        const auto& res = r->results[first];
        if (res.failure) {
          produce_done(t.seq, error_text(t.id_json, failure_code(*res.failure), res.failure->message));
          continue;
        }
        std::string ack = "{\"type\":\"produce_ack\",\"id\":" + t.id_json + ",";
        record_fields(ack, res);
        produce_done(t.seq, ack + "}");
        continue;
      }
      std::string ack = "{\"type\":\"produce_ack\",\"id\":" + t.id_json + ",\"results\":[";
      for (size_t i = first; i < at; ++i) {
        const auto& res = r->results[i];
        if (i > first) ack += ',';
        ack += '{';
        if (res.failure) {
          ack += "\"error_code\":" + std::to_string(failure_code(*res.failure)) + ",\"message\":" + dump(json(res.failure->message));
        } else {
          record_fields(ack, res);
        }
        ack += '}';
      }
      produce_done(t.seq, ack + "]}");
    }
    if (records_in > 0) ctx_.registry->add_bytes_in(topic, records_in, bytes_in);
  }

  void produce_done(uint64_t seq, std::string text) {
    ready_acks_.emplace(seq, std::move(text));
    for (auto it = ready_acks_.find(next_ack_seq_); it != ready_acks_.end(); it = ready_acks_.find(next_ack_seq_)) {
      send_text(std::move(it->second));
      ready_acks_.erase(it);
      ++next_ack_seq_;
    }
  }

  // ---- credit
  void on_credit(const json& m, const json& id) {
    const int64_t records = integer_field(m, "records", 0);
    const int64_t bytes = integer_field(m, "bytes", 0);
    if (records < 0 || bytes < 0) {
      return send_error(id, error_codes::unprocessable, "credit records and bytes must be >= 0");
    }
    credit_records_ = add_credit(credit_records_, records, limits::ws_credit_records_max);
    credit_starved_ = false;
    if (m.contains("bytes")) {
      credit_bytes_ = add_credit(bytes_counted_ ? credit_bytes_ : 0, bytes, limits::ws_credit_bytes_max);
      bytes_counted_ = true;
    }
    pump();
  }

  /// `held` + `grant` capped at `max`; both are in [0, max], `grant` any int64 >= 0: the grant
  /// is capped before the sum, so a grant of 2^63-1 cannot overflow.
  static int64_t add_credit(int64_t held, int64_t grant, int64_t max) {
    return std::min(held + std::min(grant, max), max);
  }

  /// Takes one record's worth of credit; false (nothing taken) when it does not fit.
  bool take_credit(size_t bytes) {
    if (credit_records_ <= 0 || (bytes_counted_ && static_cast<int64_t>(bytes) > credit_bytes_)) {
      credit_starved_ = true;   // fetching again before new credit would only refetch the same record
      return false;
    }
    --credit_records_;
    if (bytes_counted_) credit_bytes_ -= static_cast<int64_t>(bytes);
    return true;
  }

  [[nodiscard]] bool may_fetch() const {
    return !closing_ && !credit_starved_ && credit_records_ > 0 && (!bytes_counted_ || credit_bytes_ > 0) &&
           out_bytes_ < limits::ws_write_queue_low_water_bytes && !ctx_.shared->stopping.load() &&
           within_total_queue_bound() && std::chrono::steady_clock::now() >= quota_paused_until_;
  }
  /// Whether the server-wide bound lets this session fetch: while all queues together hold less
  /// than ws_write_queue_total_bytes_max, or past it while this session's own queue is empty (its
  /// client keeps up: everything queued went to its socket). The total stops the sessions that
  /// hold it, not the others: a session that keeps up fetches one answer (ws_fetch_bytes_max of
  /// records, or one larger record) each time its queue drains, so the total passes the bound by
  /// at most one answer per such session. (The breaker of session 38: subscribers that granted
  /// credit and never read filled the total and no session fetched until they were closed, ~34 s
  /// later; reading already followed this rule, queue_full.)
  [[nodiscard]] bool within_total_queue_bound() const {
    return out_bytes_ == 0 || ctx_.shared->queued_bytes.load() < limits::ws_write_queue_total_bytes_max;
  }

  /// Every change of this session's queue goes through here, so the server-wide total follows.
  void add_queued(int64_t delta) {
    out_bytes_ = static_cast<size_t>(static_cast<int64_t>(out_bytes_) + delta);
    ctx_.shared->queued_bytes += delta;
  }

  int32_t fetch_bytes() const {
    int64_t b = bytes_counted_ ? std::min<int64_t>(credit_bytes_, limits::ws_fetch_bytes_max) : limits::ws_fetch_bytes_max;
    return static_cast<int32_t>(std::max<int64_t>(b, 1));
  }

  void pump() {
    pump_subscription();
    pump_group();
  }

  /// Ends the subscription being set up with `e` as its error (40402 when the topic exists but
  /// not the partition).
  void refuse_subscription(const broker::error& e) {
    json id = sub_->id;
    const bool topic_exists = ctx_.broker->admin().topic_exists(sub_->tp.topic);
    sub_.reset();
    send_error(id, to_api_error(e, error_scope::partition, topic_exists).error_code, e.message);
  }

  // ---- subscribe to one partition
  void on_subscribe(const json& m, const json& id) {
    if (!m.contains("topic") || !m["topic"].is_string()) return send_error(id, error_codes::unprocessable, "subscribe needs a string \"topic\"");
    if (int(m.contains("offset")) + int(m.contains("timestamp")) + int(m.contains("position")) > 1) {
      return send_error(id, error_codes::unprocessable, "subscribe takes at most one of offset, timestamp and position");
    }
    const std::optional<int32_t> partition =
        m.contains("partition") ? json_partition(m["partition"]) : std::optional<int32_t>(0);
    if (!partition) {
      return send_error(id, error_codes::unprocessable, std::string("partition must be ") + json_partition_range);
    }
    if (refused(id, security::resource_type::topic, m["topic"].get<std::string>(), security::acl_operation::read)) return;
    subscription s;
    s.generation = ++generation_;
    s.id = id;
    s.tp = {m["topic"].get<std::string>(), model::partition_id(*partition)};
    s.as_json = choice_field(m, "format", {"binary", "json"}, "binary") == "json";
    s.batch = bool_field(m, "batch", false);
    s.isolation = choice_field(m, "isolation_level", {"read_uncommitted", "read_committed"}, "read_uncommitted") ==
                          "read_committed"
                      ? broker::isolation_level::read_committed
                      : broker::isolation_level::read_uncommitted;
    broker::list_offsets_request lo;
    lo.partition = s.tp;
    lo.spec = broker::offset_spec::latest;
    lo.isolation = s.isolation;   // position "latest" of a read_committed reader: the last stable offset
    std::optional<int64_t> explicit_offset;
    if (m.contains("offset")) {
      explicit_offset = integer_field(m, "offset", 0);
      if (*explicit_offset < 0) return send_error(id, error_codes::unprocessable, "offset must be >= 0");
    } else if (m.contains("timestamp")) {
      lo.spec = broker::offset_spec::timestamp;
      lo.timestamp = integer_field(m, "timestamp", 0);
    } else {
      if (choice_field(m, "position", {"earliest", "latest"}, "latest") == "earliest") lo.spec = broker::offset_spec::earliest;
    }
    end_unanswered_subscribe("replaced by the next subscribe (id " + dump(id) + ")");
    sub_ = s;
    const uint64_t gen = s.generation;
    if (explicit_offset) {
      // Checked as the REST read checks it, by a fetch that waits for nothing: below the log start
      // or past its end is 42202 naming both bounds, a missing topic or partition 40401 / 40402.
      broker::fetch_request probe;
      probe.partition = s.tp;
      probe.fetch_offset = model::offset(*explicit_offset);
      probe.max_bytes = 1;
      ctx_.broker->fetch(std::move(probe), [self = shared_from_this(), gen, offset = *explicit_offset](broker::result<broker::fetch_response> r) {
        self->on_executor([self, gen, offset, r = std::move(r)] {
          if (!self->sub_ || self->sub_->generation != gen || self->closing_) return;
          if (!r.ok()) return self->refuse_subscription(r.error());
          self->sub_->next_offset = offset;
          self->subscribed();
        });
      });
      return;
    }
    ctx_.broker->list_offsets(lo, [self = shared_from_this(), gen](broker::result<broker::list_offsets_response> r) {
      self->on_executor([self, gen, r = std::move(r)] {
        if (!self->sub_ || self->sub_->generation != gen || self->closing_) return;
        if (!r.ok()) return self->refuse_subscription(r.error());
        if (r->found_offset) {
          self->sub_->next_offset = r->found_offset->value();
          self->subscribed();
          return;
        }
        // No record at or after the timestamp: start at the end (Kafka's offsetsForTimes -> null).
        broker::list_offsets_request latest{self->sub_->tp, broker::offset_spec::latest, 0};
        self->ctx_.broker->list_offsets(latest, [self, gen](broker::result<broker::list_offsets_response> l) {
          self->on_executor([self, gen, l = std::move(l)] {
            if (!self->sub_ || self->sub_->generation != gen || self->closing_) return;
            // The end not known now (KIP-207: 50302, retriable) is refused, never taken for offset 0.
            if (!l.ok()) return self->refuse_subscription(l.error());
            self->sub_->next_offset = l->found_offset ? l->found_offset->value() : 0;
            self->subscribed();
          });
        });
      });
    });
  }

  /// The current subscribe, when its answer is still pending (its start position not resolved
  /// yet), ends unstarted: it is answered now with error 40903 naming `why`, since its pending
  /// lookup will find a newer generation and answer nothing. Every subscribe gets one answer:
  /// `subscribed` or `error` (the breaker's ws_sub_replace.py: back-to-back subscribes left the
  /// replaced ones unanswered, and a client awaiting their id hung).
  void end_unanswered_subscribe(const std::string& why) {
    if (!sub_ || sub_->ready) return;
    send_error(sub_->id, error_codes::illegal_state,
               "subscribe " + dump(sub_->id) + " was " + why + " before it started; nothing was delivered for it");
  }

  void subscribed() {
    sub_->ready = true;
    send({{"type", "subscribed"},
          {"id", sub_->id},
          {"topic", sub_->tp.topic},
          {"partition", sub_->tp.partition.value()},
          {"offset", sub_->next_offset}});
    pump();
  }

  void pump_subscription() {
    if (!sub_ || !sub_->ready || sub_->fetching || !may_fetch()) return;
    sub_->fetching = true;
    broker::fetch_request req;
    req.principal = ctx_.principal;
    req.partition = sub_->tp;
    req.fetch_offset = model::offset(sub_->next_offset);
    req.max_bytes = fetch_bytes();
    req.max_wait_ms = limits::ws_poll_wait_ms;
    req.isolation = sub_->isolation;
    const uint64_t gen = sub_->generation;
    ctx_.broker->fetch(std::move(req), [self = shared_from_this(), gen](broker::result<broker::fetch_response> r) {
      self->on_executor([self, gen, r = std::move(r)] { self->on_fetched(gen, r); });
    });
  }

  void on_fetched(uint64_t gen, const broker::result<broker::fetch_response>& r) {
    if (closing_) return;
    if (!sub_ || sub_->generation != gen) return pump();   // unsubscribed or replaced meanwhile
    sub_->fetching = false;
    if (!r.ok()) return refuse_subscription(r.error());
    // Issue 30: each fetch checks READ again: an ACL removed ends the subscription (an error frame).
    if (refused(sub_->id, security::resource_type::topic, sub_->tp.topic, security::acl_operation::read)) {
      sub_.reset();
      return pump();
    }
    uint64_t bytes = 0, count = 0;
    std::string batch;
    for (size_t i = 0; i < r->records.size(); ++i) {
      const model::record& rec = r->records[i];
      size_t size = record_bytes(rec);
      if (!take_credit(size)) break;   // the rest is fetched again once credit comes
      deliver(batch, record_texts.text(sub_->tp, *r, i, sub_->as_json), sub_->batch);
      sub_->next_offset = rec.record_offset.value() + 1;
      bytes += size;
      ++count;
    }
    // All delivered: step over the batches that held nothing for this reader (markers, aborted records).
    if (count == r->records.size()) sub_->next_offset = std::max(sub_->next_offset, r->next_fetch_offset.value());
    flush_batch(batch);
    if (count > 0) ctx_.registry->add_bytes_out(sub_->tp.topic, count, bytes);
    count_quota(security::quota_key::consumer_byte_rate, bytes);
    pump();
  }

  void on_unsubscribe(const json& id) {
    end_unanswered_subscribe("ended by unsubscribe (id " + dump(id) + ")");
    sub_.reset();
    leave_group();
    send({{"type", "unsubscribed"}, {"id", id}});
  }

  // ---- group membership: one consumer instance per connection (broker/groups.h)
  void on_join(const json& m, const json& id) {
    if (!m.contains("group") || !m["group"].is_string() || !m.contains("topics") || !m["topics"].is_array()) {
      return send_error(id, error_codes::unprocessable, "join needs a string \"group\" and an array \"topics\"");
    }
    // Checked before leaving the current group: a refused join keeps the membership it replaces.
    group::subscription sub;
    sub.kind = group::subscription_kind::topics;
    for (const auto& t : m["topics"]) {
      if (!t.is_string()) return send_error(id, error_codes::unprocessable, "join \"topics\" must be an array of strings");
      sub.topics.push_back(t.get<std::string>());
    }
    // Issue 30: READ on the group and on each topic (Kafka's JoinGroup, then Fetch).
    if (refused(id, security::resource_type::group, m["group"].get<std::string>(), security::acl_operation::read)) return;
    for (const auto& topic : sub.topics) {
      if (refused(id, security::resource_type::topic, topic, security::acl_operation::read)) return;
    }
    broker::consumer_instance_config cfg;
    cfg.group_id = m["group"].get<std::string>();
    cfg.client_name = "ws";   // each connection its own member: "ws-" and a UUID
    cfg.session_timeout_ms = limits::ws_group_session_timeout_ms;
    cfg.auto_offset_reset = choice_field(m, "position", {"earliest", "latest"}, "latest") == "earliest"
                                ? group::offset_reset::earliest
                                : group::offset_reset::latest;
    cfg.read_committed =
        choice_field(m, "isolation_level", {"read_uncommitted", "read_committed"}, "read_uncommitted") == "read_committed";
    {
      // Retry settings of its nacks (issue 18), refused naming the key like the REST body's.
      const auto& bc = ctx_.broker->config();
      auto retry = parse_retry_settings(dump(m), broker::retry_defaults_of(bc));
      if (!retry.ok()) return send_error(id, retry.error().error_code, retry.error().message);
      cfg.retry = *retry;
    }
    membership mb;
    mb.group = cfg.group_id;
    mb.as_json = choice_field(m, "format", {"binary", "json"}, "binary") == "json";   // these may throw:
    mb.batch = bool_field(m, "batch", false);                                         // before leaving the old group
    leave_group();
    mb.generation = ++generation_;
    member_ = mb;
    const uint64_t gen = mb.generation;
    cfg.owner = ctx_.principal.to_string();
    calls_.create_consumer(cfg, [self = shared_from_this(), gen, id, sub](broker::result<broker::consumer_instance> r) {
      self->on_executor([self, gen, id, sub, r = std::move(r)] {
        if (!r.ok()) {
          if (self->member_ && self->member_->generation == gen) self->member_.reset();
          return self->send_error(id, to_api_error(r.error()).error_code, r.error().message);
        }
        if (!self->member_ || self->member_->generation != gen || self->closing_) {
          // Left (or closed) while joining: do not keep the instance.
          self->calls_.delete_consumer(r->group_id, r->instance_id, [](broker::result<void>) {});
          return;
        }
        self->member_->instance = r->instance_id;
        self->calls_.subscribe(r->group_id, r->instance_id, sub, [self, gen, id](broker::result<void> s) {
          self->on_executor([self, gen, id, s] {
            if (!self->member_ || self->member_->generation != gen || self->closing_) return;
            if (!s.ok()) {
              self->leave_group();
              return self->send_error(id, to_api_error(s.error()).error_code, s.error().message);
            }
            self->member_->ready = true;
            self->send({{"type", "joined"}, {"id", id}, {"group", self->member_->group}, {"member_id", self->member_->instance}});
            self->check_assignment();
            self->pump();
          });
        });
      });
    });
  }

  void pump_group() {
    if (!member_ || !member_->ready || member_->polling || !may_fetch()) return;
    // The first `assignment` goes before any `record`, as a Kafka consumer's on_assign comes before
    // its first records (a poll answered before the assignment was: session 32's new user saw
    // records first in 2 of 9 joins). check_assignment pumps again once it is told.
    if (!member_->assignment || member_->assignment_stale) return check_assignment();
    member_->polling = true;
    broker::poll_request req;
    req.timeout_ms = limits::ws_poll_wait_ms;
    req.max_bytes = fetch_bytes();
    const uint64_t gen = member_->generation;
    calls_.poll(member_->group, member_->instance, req,
                               [self = shared_from_this(), gen](broker::result<std::vector<broker::consumed_record>> r) {
                                 self->on_executor([self, gen, r = std::move(r)] { self->on_polled(gen, r); });
                               });
  }

  void on_polled(uint64_t gen, const broker::result<std::vector<broker::consumed_record>>& r) {
    if (closing_ || !member_ || member_->generation != gen) return;
    if (!r.ok()) {
      member_->polling = false;
      send_error(nullptr, to_api_error(r.error()).error_code, r.error().message);
      // The coordinator moves (its broker died) or cannot be reached: the member stays and polls
      // again on its next tick, at the new coordinator once one leads (issue 13).
      if (is_retriable(r.error().code)) return;
      return leave_group();
    }
    // Issue 30: READ on the group and each topic read, again: a refusal is an error frame and the
    // member leaves (nothing of the refused topic is delivered).
    bool allowed = !refused(nullptr, security::resource_type::group, member_->group, security::acl_operation::read);
    for (const auto& cr : *r) {
      if (!allowed) break;
      allowed = !refused(nullptr, security::resource_type::topic, cr.partition.topic, security::acl_operation::read);
    }
    if (!allowed) {
      member_->polling = false;
      return leave_group();
    }
    // Deliver within credit; rewind each partition to its first undelivered record.
    std::vector<broker::seek_request> rewinds;
    group::partition_set rewound;
    std::string batch;
    uint64_t delivered_bytes = 0;
    for (const auto& cr : *r) {
      const auto& tp = cr.partition;
      const auto& rec = cr.record;
      if (rewound.count(tp)) continue;
      // A Kafka consumer gets a partition's records only after on_assign named it (the new user
      // of session 36: the retry topic's first record came before the assignment adding it).
      const bool told = owned_now(tp);
      if (!told) member_->assignment_stale = true;
      if (told && take_credit(record_bytes(rec))) {
        deliver(batch, record_text(tp, rec, member_->as_json), member_->batch);
        member_->delivered[tp] = rec.record_offset;
        ctx_.registry->add_bytes_out(tp.topic, 1, record_bytes(rec));
        delivered_bytes += record_bytes(rec);
        continue;
      }
      rewound.insert(tp);
      rewinds.push_back({tp, broker::seek_kind::offset, rec.record_offset.value()});
    }
    flush_batch(batch);
    count_quota(security::quota_key::consumer_byte_rate, delivered_bytes);
    if (rewinds.empty()) return after_poll(gen);
    calls_.seek(member_->group, member_->instance, std::move(rewinds), [self = shared_from_this(), gen](broker::result<void>) {
      self->on_executor([self, gen] { self->after_poll(gen); });
    });
  }

  void after_poll(uint64_t gen) {
    if (closing_ || !member_ || member_->generation != gen) return;
    member_->polling = false;
    check_assignment();
    pump();
  }

  /// Tells the client its partitions when they changed (and keeps the lease of an idle member).
  void check_assignment() {
    if (!member_ || !member_->ready || member_->checking) return;
    member_->checking = true;
    const uint64_t gen = member_->generation;
    calls_.assignments(member_->group, member_->instance, [self = shared_from_this(), gen](
                                                                            broker::result<group::partition_set> r) {
      self->on_executor([self, gen, r = std::move(r)] {
        if (self->closing_ || !self->member_ || self->member_->generation != gen) return;
        self->member_->checking = false;
        if (!r.ok()) return;
        json parts = json::array();
        for (const auto& tp : *r) parts.push_back({{"topic", tp.topic}, {"partition", tp.partition.value()}});
        const bool waited = !self->member_->assignment || self->member_->assignment_stale;
        self->member_->assignment_stale = false;
        if (self->member_->assignment != parts) {
          self->member_->assignment = parts;
          self->send({{"type", "assignment"}, {"partitions", parts}});
        }
        if (waited) self->pump();   // pump_group waited for it
      });
    });
  }

  /// Whether `tp` is in the member's assignment as last told (an assignment not known yet: yes,
  /// and the coordinator refuses what the member does not own).
  bool owned_now(const model::topic_partition& tp) const {
    if (!member_->assignment) return true;
    for (const auto& p : *member_->assignment) {
      if (p["topic"] == tp.topic && p["partition"] == tp.partition.value()) return true;
    }
    return false;
  }

  /// {"type": "commit"}: every record delivered so far; with "offsets": [{topic, partition,
  /// offset}] (the next offset to read, Kafka's commit convention) only those: a bare commit also
  /// covers records still in flight to the client (within its credit), which a client that dies
  /// then never receives (the breaker of session 32: committed 2000 after reading 10).
  void on_commit(const json& m, const json& id) {
    if (!member_ || !member_->ready) return send_error(id, error_codes::unprocessable, "commit needs a joined group");
    if (refused(id, security::resource_type::group, member_->group, security::acl_operation::read)) return;
    std::vector<group::processed_offset> offsets;
    if (m.contains("offsets")) {
      auto named = commit_offsets_named(m["offsets"]);
      if (!named.ok()) return send_error(id, error_codes::unprocessable, named.error());
      offsets = std::move(named).value();
    } else {
      // What was delivered, partition by partition, of the partitions the member owns as last told.
      for (const auto& [tp, last] : member_->delivered) {
        if (owned_now(tp)) offsets.push_back({tp, last, {}});
      }
    }
    // The answer echoes what this commit named (the coordinator answers the member's every
    // committed offset: a new user read a partition it had not named as committed just now).
    group::partition_set named;
    if (m.contains("offsets")) {
      for (const auto& o : offsets) named.insert(o.partition);
    }
    calls_.commit(member_->group, member_->instance, std::move(offsets), [self = shared_from_this(), id, named](
                                     broker::result<group::partition_map<group::committed_offset>> r) {
      self->on_executor([self, id, named, r = std::move(r)] {
        if (!r.ok()) return self->send_error(id, to_api_error(r.error()).error_code, r.error().message);
        json offsets = json::array();
        for (const auto& [tp, c] : *r) {
          if (!named.empty() && !named.contains(tp)) continue;
          offsets.push_back({{"topic", tp.topic}, {"partition", tp.partition.value()}, {"offset", c.committed.value()}});
        }
        self->send({{"type", "committed"}, {"id", id}, {"offsets", offsets}});
      });
    });
  }

  /// A commit's "offsets": each the next offset to read of a partition the member owns, in
  /// [0, last record delivered to it there + 1] (a commit may not skip what it never received).
  base::result<std::vector<group::processed_offset>, std::string> commit_offsets_named(const json& list) const {
    if (!list.is_array() || list.empty()) return std::string("offsets must be a non-empty array of {topic, partition, offset}");
    std::vector<group::processed_offset> out;
    for (const auto& o : list) {
      if (!o.is_object() || !o.contains("topic") || !o["topic"].is_string() || !o.contains("partition") ||
          !o["partition"].is_number_integer() || !o.contains("offset") || !o["offset"].is_number_integer() ||
          o.size() != 3) {
        return std::string("each of offsets must be {\"topic\": string, \"partition\": integer, \"offset\": integer}");
      }
      model::topic_partition tp{o["topic"].get<std::string>(), model::partition_id{o["partition"].get<int32_t>()}};
      const std::string name = tp.topic + "-" + std::to_string(tp.partition.value());
      auto delivered = member_->delivered.find(tp);
      if (!owned_now(tp) || delivered == member_->delivered.end()) {
        return "partition " + name + " is not assigned to this member, or nothing of it was delivered to it";
      }
      const int64_t next = o["offset"].get<int64_t>();
      // From 0: the offset a session started at (its first record's, 0 on a new topic) is a
      // position like any other; Kafka commits it too (the breaker of session 38 saw offset 0
      // refused after records 0-2 were delivered). Below the start rewinds the group, as in Kafka.
      if (next < 0 || next > delivered->second.value() + 1) {
        return "offset " + std::to_string(next) + " of " + name + " is outside [0, " +
               std::to_string(delivered->second.value() + 1) +
               "] (the next offset to read, at most one past the last record delivered to this member)";
      }
      out.push_back({std::move(tp), model::offset{next - 1}, {}});
    }
    return out;
  }

  /// {"type": "nack", "offsets": [{topic, partition, offset, reason}]} or one record's fields on
  /// the message itself -> {"type": "nacked", "id"} once the copies are durable (issue 18).
  void on_nack(const json& m, const json& id) {
    if (!member_ || !member_->ready) return send_error(id, error_codes::unprocessable, "nack needs a joined group");
    if (refused(id, security::resource_type::group, member_->group, security::acl_operation::read)) return;
    json body = m.contains("offsets") ? json{{"offsets", m["offsets"]}}
                                      : json{{"offsets", json::array({json{{"topic", m.value("topic", json())},
                                                                           {"partition", m.value("partition", json())},
                                                                           {"offset", m.value("offset", json())},
                                                                           {"reason", m.value("reason", json())}}})}};
    auto nacks = parse_nacks(dump(body));
    if (!nacks.ok()) return send_error(id, nacks.error().error_code, nacks.error().message);
    for (auto& n : nacks.value()) {
      if (refused(id, security::resource_type::topic, n.partition.topic, security::acl_operation::read)) return;
      n.principal = ctx_.principal;
      n.host = ctx_.host;
    }
    calls_.nack(member_->group, member_->instance, std::move(nacks).value(), [self = shared_from_this(), id](broker::result<void> r) {
      self->on_executor([self, id, r] {
        if (!r.ok()) return self->send_error(id, to_api_error(r.error()).error_code, r.error().message);
        self->send({{"type", "nacked"}, {"id", id}});
      });
    });
  }

  void leave_group() {
    if (!member_) return;
    if (!member_->instance.empty()) {
      calls_.delete_consumer(member_->group, member_->instance, [](broker::result<void>) {});
    }
    member_.reset();
  }

  // ---- keep-alive tick: graceful stop, idle group members
  void arm_tick() {
    tick_.expires_after(std::chrono::milliseconds(limits::ws_group_tick_ms));
    tick_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->closing_) return;
      if (self->ctx_.shared->stopping.load()) return self->close_with(going_away, "server is stopping");
      if (self->credential_ended()) return;
      if (std::chrono::steady_clock::now() - self->last_heard_ >= std::chrono::milliseconds(limits::ws_idle_timeout_ms)) {
        return self->close_with(going_away, "nothing received for " + std::to_string(limits::ws_idle_timeout_ms / 1000) +
                                                " s, not even a pong (ws_idle_timeout_ms)");
      }
      self->check_assignment();
      self->pump();
      self->arm_tick();
    });
  }

  /// Issue 29: true (and the session closing with an error message and 1008 naming why) once the
  /// credential the upgrade authenticated with ended: a logged-out or expired session, a user
  /// deleted or whose password changed (http_authenticator::credential_ended; a look-up, no PBKDF2).
  bool credential_ended() {
    if (!ctx_.auth) return false;
    auto why = ctx_.auth->credential_ended(ctx_.credential);
    if (!why) return false;
    audit_failed_authentication("ws", ctx_.principal.to_string(), ctx_.host, *why);
    close_with(policy_violation, *why, error_json(nullptr, unauthorized_error_code, *why));
    return true;
  }

  // ---- writing: exactly one write in flight, the rest queued up to ws_write_queue_bytes_max
  enum class produce_message : bool { no, yes };
  /// A message whose id passes ws_id_bytes_max: an error with a null id naming the limit, and
  /// nothing done. A produce's is answered in its turn among the produce answers (produce_done).
  void refuse_long_id(produce_message produce) {
    std::string answer = error_json(nullptr, error_codes::unprocessable,
                                    "\"id\" is longer than " + std::to_string(limits::ws_id_bytes_max) +
                                        " bytes as JSON text (ws_id_bytes_max); it is echoed in every answer");
    if (produce == produce_message::yes) return produce_done(next_produce_seq_++, std::move(answer));
    send_text(std::move(answer));
  }
  std::string error_json(const json& id, int code, const std::string& message) {
    return error_text(dump(id), code, message);
  }
  void send_error(const json& id, int code, const std::string& message) { send_text(error_json(id, code, message)); }

  /// Issue 30: the 403 (40301) of `operation` on `resource`/`name` for the session's principal
  /// and host, nullopt when allowed (always without an authorizer).
  [[nodiscard]] std::optional<api_error> acl_refusal_of(security::resource_type resource, const std::string& name,
                                                        security::acl_operation operation) const {
    return acl_refusal(*ctx_.broker, ctx_.principal, ctx_.host, resource, name, operation, "ws", "WebSocket frame");
  }
  /// As acl_refusal_of, answering a refusal with an error frame of `id`: true when refused.
  bool refused(const json& id, security::resource_type resource, const std::string& name,
               security::acl_operation operation) {
    auto refusal = acl_refusal_of(resource, name, operation);
    if (refusal) send_error(id, refusal->error_code, refusal->message);
    return refusal.has_value();
  }

  /// Sends one `record` message, or adds it to `batch` (a `records` message under construction)
  /// when the client subscribed with "batch": true. A batch holds one fetch or poll: at most
  /// ws_fetch_bytes_max of payload, or one larger record.
  void deliver(std::string& batch, std::string_view record, bool batched) {
    if (!batched) return send_text(std::string(record));
    batch += batch.empty() ? "{\"type\":\"records\",\"records\":[" : ",";
    batch += record;
  }
  void flush_batch(std::string& batch) {
    if (batch.empty()) return;
    batch += "]}";
    send_text(std::move(batch));
    batch.clear();
  }
  void send(const json& j) { send_text(dump(j)); }

  void send_text(std::string text) {
    if (closing_) return;
    if (out_bytes_ + text.size() > limits::ws_write_queue_bytes_max) {
      return close_with(try_again_later, "write queue full (ws_write_queue_bytes_max): read faster or grant less credit");
    }
    add_queued(static_cast<int64_t>(text.size()));
    out_.push_back(std::move(text));
    write_next();
  }

  void write_next() {
    if (writing_) return;
    if (out_.empty()) {
      if (close_pending_) start_close();
      return;
    }
    writing_ = true;
    if (out_.size() > 1) set_corked(true);
    ws_.text(true);
    ws_.async_write(asio::buffer(out_.front()), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->add_queued(-static_cast<int64_t>(self->out_.front().size()));
      self->out_.pop_front();
      if (ec) return self->teardown();
      self->write_next();
      self->resume_reading();
      if (self->out_bytes_ < limits::ws_write_queue_low_water_bytes) self->pump();
      if (!self->writing_) self->set_corked(false);
    });
  }

  /// Beast writes one message per call, so a queue of small messages (acks, records) would cost
  /// one TCP segment each. While more than one message is queued the socket is corked (TCP_CORK,
  /// tcp(7)): the kernel sends full segments, and uncorking once the queue is empty sends the rest
  /// at once. A single message is never delayed.
  void set_corked(bool corked) {
    if (corked == corked_) return;
    corked_ = corked;
    const int value = corked ? 1 : 0;
    (void)::setsockopt(beast::get_lowest_layer(ws_).socket().native_handle(), IPPROTO_TCP, TCP_CORK, &value,
                       sizeof value);
  }

  /// Closes with `code` and `reason` once the write in flight is done; queued messages are dropped
  /// (a full queue is the reason, or an error ends the session anyway). `last_message` (when not
  /// empty) is sent before the close frame.
  void close_with(uint16_t code, std::string reason, std::string last_message = {}) {
    if (closing_) return;
    closing_ = true;
    close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), close_reason_text(std::move(reason)));
    while (out_.size() > (writing_ ? 1u : 0u)) {
      add_queued(-static_cast<int64_t>(out_.back().size()));
      out_.pop_back();
    }
    if (!last_message.empty()) {
      add_queued(static_cast<int64_t>(last_message.size()));
      out_.push_back(std::move(last_message));
    }
    close_pending_ = true;
    write_next();   // the last message if any, then the close frame (start_close)
  }

  void start_close() {
    close_pending_ = false;
    set_corked(false);
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) { self->teardown(); });
  }

  /// The connection is over: stop every loop; pending broker callbacks find closing_ and end.
  void teardown() {
    closing_ = true;
    flush_produce();   // messages read before the end are still produced; their answers are dropped
    tick_.cancel();
    quota_timer_.cancel();
    sub_.reset();
    leave_group();
    beast::get_lowest_layer(ws_).close();
  }

  websocket::stream<ws_metered_stream> ws_;
  http::request<http::string_body> upgrade_;
  ws_context ctx_;
  member_calls calls_;   // the member's group calls, through any broker (member_calls.h)
  asio::steady_timer tick_;
  asio::steady_timer quota_timer_;   // ends a quota pause (count_quota)
  std::chrono::steady_clock::time_point quota_paused_until_{};   // no fetch and no read before (issue 31)
  bool read_paused_ = false;         // a read is owed once the quota pause ends
  bool queue_paused_ = false;        // a read is owed once the write queue drains (queue_full)
  beast::flat_buffer in_;
  std::deque<std::string> out_;
  size_t out_bytes_ = 0;
  bool writing_ = false;
  bool corked_ = false;
  bool closing_ = false;
  bool close_pending_ = false;
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();   // a message, a piece of one, a ping or pong
  websocket::close_reason close_reason_;
  // produce ordering
  pending_batch pending_produce_;   // read, not yet sent to the broker (produce_fast)
  bool produce_flush_posted_ = false;
  size_t produce_flush_seen_ = 0;
  uint64_t next_produce_seq_ = 0;
  uint64_t next_ack_seq_ = 0;
  size_t produce_in_flight_ = 0;
  std::map<uint64_t, std::string> ready_acks_;
  // consumption
  uint64_t generation_ = 0;
  std::optional<subscription> sub_;
  std::optional<membership> member_;
  int64_t credit_records_ = 0;
  int64_t credit_bytes_ = 0;
  bool bytes_counted_ = false;   // false until the first byte credit: bytes are then unlimited
  bool credit_starved_ = false;  // a fetched record did not fit the credit left: wait for a grant
};

}  // namespace

void start_ws_session(runtime::shard_socket socket, http::request<http::string_body> upgrade, ws_context context) {
  auto s = std::make_shared<ws_session>(std::move(socket), std::move(upgrade), context);
  s->start();
}

}  // namespace ringlog::gateway
