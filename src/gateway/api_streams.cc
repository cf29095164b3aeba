// Direct partition reads (array, NDJSON, SSE) and the streaming reads of v2 consumer instances.

#include "api_routes.h"

#include <limits>
#include "record_json.h"
#include "stream_limits.h"

namespace ringlog::gateway::routes {

/// About how many bytes the records' JSON array takes (record_json_bytes_estimate per record).
size_t records_json_bytes_estimate(const std::vector<model::record>& records, size_t topic_json_bytes) {
  size_t total = 2;
  for (const auto& rec : records) total += record_json_bytes_estimate(rec, topic_json_bytes);
  return total;
}

// -- NDJSON / SSE streaming reads (issue 5) ------------------------------------------------------

enum class stream_format : uint8_t { ndjson, sse };

/// One long-lived read: fetch (long-poll), write the chunk, wait until it is on the wire, fetch
/// again; until the deadline, the client closing, a graceful stop or an error. The first fetch
/// happens before the response head so that an unknown topic still gets its plain 404.
/// Source: one partition from an offset (SSE id = offset, Last-Event-ID resumes after it), or
/// a REST v2 consumer instance (its positions; the instance remembers where it is).
struct record_stream : std::enable_shared_from_this<record_stream> {
  call_ptr c;
  stream_format format = stream_format::ndjson;
  bool as_json = false;
  std::chrono::steady_clock::time_point deadline;
  bool started = false;   // the response head is sent
  bool finished = false;
  // partition source
  std::string topic;
  int32_t partition = 0;
  int64_t next_offset = 0;
  broker::isolation_level isolation = broker::isolation_level::read_uncommitted;
  // consumer instance source (when group is set)
  std::string group;
  std::string instance;

  [[nodiscard]] int64_t remaining_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max<int64_t>(0, left.count());
  }

  void step() {
    if (finished) return;
    if (started && (c->sink->disconnected() || c->self->stopping_flag() || remaining_ms() == 0)) return finish();
    int64_t wait = started ? std::min(remaining_ms(), stream_limits::http_stream_poll_wait_ms) : 0;
    auto self = shared_from_this();
    if (!group.empty()) {
      broker::poll_request req;
      req.timeout_ms = wait;
      req.max_bytes = c->quota_read_bytes_max(stream_limits::http_stream_chunk_bytes_max);
      c->broker().groups().poll(group, instance, req, [self](broker::result<std::vector<broker::consumed_record>> r) {
        self->c->sink->post([self, r = std::move(r)] { self->on_consumed(r); });
      });
      return;
    }
    broker::fetch_request req;
    req.principal = c->principal();
    req.partition = {topic, model::partition_id(partition)};
    req.fetch_offset = model::offset(next_offset);
    req.max_bytes = static_cast<int32_t>(c->quota_read_bytes_max(stream_limits::http_stream_chunk_bytes_max));
    req.max_wait_ms = wait;
    req.isolation = isolation;
    c->broker().fetch(std::move(req), [self](broker::result<broker::fetch_response> r) {
      self->c->sink->post([self, r = std::move(r)] { self->on_fetched(r); });
    });
  }

  void on_fetched(const broker::result<broker::fetch_response>& r) {
    if (!r.ok()) {
      bool exists = r.error().code == broker::errc::unknown_topic_or_partition && c->topic_exists(topic);
      return fail(to_api_error(r.error(), error_scope::partition, exists));
    }
    // Issue 30: each chunk checks READ again, so an ACL removed mid-stream ends it (an error
    // line or event) within one poll wait.
    if (auto refusal = read_refusal(topic)) return fail(*refusal);
    std::string out;
    const std::string topic_json_text = dump(json(topic));
    uint64_t bytes = 0;
    for (const model::record& rec : r->records) {
      append_event(out, topic_json_text, partition, rec, std::to_string(rec.record_offset.value()));
      bytes += record_bytes(rec);
      next_offset = rec.record_offset.value() + 1;
    }
    // Past the batches that held nothing for this reader (markers, aborted records).
    next_offset = std::max(next_offset, r->next_fetch_offset.value());
    if (!r->records.empty()) c->self->metrics_registry().add_bytes_out(topic, r->records.size(), bytes);
    send(std::move(out));
  }

  void on_consumed(const broker::result<std::vector<broker::consumed_record>>& r) {
    if (!r.ok()) return fail(to_api_error(r.error()));
    for (const auto& cr : *r) {
      if (auto refusal = read_refusal(cr.partition.topic)) return fail(*refusal);
    }
    std::string out;
    for (const auto& cr : *r) {
      const auto& tp = cr.partition;
      const auto& rec = cr.record;
      // No SSE id: the instance keeps its own position, a reconnect resumes from it.
      append_event(out, dump(json(tp.topic)), tp.partition.value(), rec, {});
      c->self->metrics_registry().add_bytes_out(tp.topic, 1, record_bytes(rec));
    }
    send(std::move(out));
  }

  [[nodiscard]] std::optional<api_error> read_refusal(const std::string& name) const {
    return acl_refusal(c->broker(), c->principal(), c->peer_ip(), security::resource_type::topic, name,
                       security::acl_operation::read, "http", c->route);
  }

  /// One record as an NDJSON line or an SSE event. A key or value that is not JSON in a json
  /// stream arrives as a JSON string, as over WebSocket: a 406 here would stop a live reader at
  /// that record for good (the array answer keeps Confluent's 406).
  void append_event(std::string& out, const std::string& topic_json_text, int32_t p, const model::record& rec,
                    const std::string& id) {
    std::string line;
    append_record_json(line, "", topic_json_text, p, rec, as_json, non_json_payload::as_string);
    if (format == stream_format::ndjson) {
      out += line;
      out += '\n';
      return;
    }
    if (!id.empty()) out += "id: " + id + "\n";
    out += "event: record\ndata: " + line + "\n\n";
  }

  void begin() {
    started = true;
    c->sink->watch_disconnect();
    http_response head;
    head.content_type = format == stream_format::ndjson ? ndjson_type : sse_type;
    head.headers.emplace_back("Cache-Control", "no-cache");
    head.headers.emplace_back("X-Accel-Buffering", "no");   // proxies must not buffer a live stream
    c->begin_stream(std::move(head));
  }

  void send(std::string out) {
    if (!started) begin();
    if (c->sink->disconnected()) return finish();
    if (out.empty()) return step();   // asynchronous: the next fetch answers through post()
    // Issue 31: over consumer_byte_rate the stream is slowed, not closed: the next fetch waits
    // for the throttle time (KIP-219).
    const int64_t throttle_ms = c->count_quota_bytes(out.size());
    c->sink->write_chunk_then(std::move(out), [self = shared_from_this(), throttle_ms](bool written) {
      if (!written) return self->finish();
      if (throttle_ms > 0) return self->c->sink->post_after(throttle_ms, [self] { self->step(); });
      self->step();
    });
  }

  /// Before the head: a plain error response. After it: an error line / event, then the end.
  void fail(const api_error& e) {
    if (finished) return;
    if (!started) {
      finished = true;
      return c->fail(e);
    }
    std::string body = error_body(e.error_code, e.message);
    c->sink->write_chunk(format == stream_format::ndjson ? body + "\n" : "event: error\ndata: " + body + "\n\n");
    finish();
  }

  void finish() {
    if (finished) return;
    finished = true;
    if (!started) begin();
    c->end_stream();
  }
};

/// The stream format `type` names (one of stream_offers).
stream_format stream_format_of(const std::string& type) {
  return type == sse_type ? stream_format::sse : stream_format::ndjson;
}

/// The `timeout` of a stream as its deadline; nullopt after answering 422.
/// The `isolation_level` query parameter of a partition read (KIP-98): read_uncommitted (the
/// default, as in Kafka) or read_committed (below the last stable offset, no aborted records).
/// Answers 422 naming it for any other value.
std::optional<broker::isolation_level> isolation_of(const call_ptr& c) {
  auto it = c->query.find("isolation_level");
  if (it == c->query.end() || it->second == "read_uncommitted") return broker::isolation_level::read_uncommitted;
  if (it->second == "read_committed") return broker::isolation_level::read_committed;
  c->fail(422, ec::unprocessable,
          "query parameter isolation_level must be read_uncommitted or read_committed, got \"" + it->second + "\"");
  return std::nullopt;
}

std::optional<std::chrono::steady_clock::time_point> stream_deadline(const call_ptr& c) {
  auto timeout = c->query_int("timeout", stream_limits::http_stream_duration_ms_max, 0,
                              stream_limits::http_stream_duration_ms_max, "http_stream_duration_ms_max");
  if (!timeout) return std::nullopt;
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout);
}

/// GET /topics/{t}/partitions/{p}/records with Accept: application/x-ndjson or text/event-stream.
/// `offset` is where to start; an SSE Last-Event-ID (an offset) overrides it with the next one.
/// `format=json` embeds keys and values as JSON instead of base64.
void stream_partition(const call_ptr& c, const std::string& type, int32_t partition) {
  auto s = std::make_shared<record_stream>();
  s->c = c;
  s->format = stream_format_of(type);
  s->topic = c->params["topic"];
  s->partition = partition;
  auto isolation = isolation_of(c);
  if (!isolation) return;
  s->isolation = *isolation;
  if (auto f = c->query.find("format"); f != c->query.end()) {
    if (f->second != "json" && f->second != "binary") {
      return c->fail(422, ec::unprocessable, "query parameter format must be binary or json, got \"" + f->second + "\"");
    }
    s->as_json = f->second == "json";
  }
  if (!c->request.last_event_id.empty()) {
    auto last = parse_int(c->request.last_event_id, 0, std::numeric_limits<int64_t>::max() - 1);
    if (!last) {
      return c->fail(400, ec::bad_request, "Last-Event-ID must be an offset (an integer >= 0), got \"" +
                                               c->request.last_event_id + "\"");
    }
    s->next_offset = *last + 1;
  } else {
    auto offset = c->query_int("offset", std::nullopt, 0, std::numeric_limits<int64_t>::max());
    if (!offset) return;
    s->next_offset = *offset;
  }
  auto deadline = stream_deadline(c);
  if (!deadline) return;
  s->deadline = *deadline;
  s->step();
}

void fetch_records(const call_ptr& c) {
  std::vector<std::string> offers = records_offers;
  offers.insert(offers.end(), stream_offers.begin(), stream_offers.end());
  auto type = c->accept(offers);
  if (!type) return;
  auto p = c->path_partition("partition");
  if (!p) return;
  if (*type == ndjson_type || *type == sse_type) return stream_partition(c, *type, *p);
  const api_options& o = c->self->options();
  auto offset = c->query_int("offset", std::nullopt, 0, std::numeric_limits<int64_t>::max());
  if (!offset) return;
  auto timeout = c->query_int("timeout", 0, 0, o.fetch_wait_max_ms, "fetch.wait.max.ms");
  if (!timeout) return;
  auto max_bytes = c->query_int("max_bytes", fetch_max_bytes_default, 1, o.fetch_response_bytes_max,
                                "fetch.response.bytes.max");
  if (!max_bytes) return;
  bool as_json = *type == v2_json_type;
  std::string content_type = *type == v2_json_type ? v2_json_type : (*type == "application/json" ? "application/json" : v2_binary_type);
  auto isolation = isolation_of(c);
  if (!isolation) return;
  broker::fetch_request req;
  req.principal = c->principal();
  req.partition = {c->params["topic"], model::partition_id(*p)};
  req.fetch_offset = model::offset(*offset);
  req.max_bytes = static_cast<int32_t>(c->quota_read_bytes_max(*max_bytes));
  req.max_wait_ms = *timeout;
  req.isolation = *isolation;
  std::string topic = c->params["topic"];
  int32_t partition = *p;
  c->broker().fetch(std::move(req), [c, topic, partition, as_json, content_type](broker::result<broker::fetch_response> r) {
    c->later([r = std::move(r), topic, partition, as_json, content_type](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::partition, topic);
      std::string topic_json_text = json(topic).dump(-1, ' ', false, json::error_handler_t::replace);
      const size_t estimate = records_json_bytes_estimate(r->records, topic_json_text.size());
      auto hold = call.hold_answer_bytes(estimate);
      if (!hold) return;
      std::string out = "[";
      out.reserve(estimate);
      uint64_t bytes = 0;
      for (size_t i = 0; i < r->records.size(); ++i) {
        const model::record& rec = r->records[i];
        bytes += record_bytes(rec);
        if (i > 0) out += ',';
        if (!append_record_json(out, "", topic_json_text, partition, rec, as_json)) {
          return call.fail(406, ec::not_acceptable, not_json_message(topic, partition, rec) + "; read it with Accept: " + v2_binary_type);
        }
      }
      out += ']';
      call.self->metrics_registry().add_bytes_out(topic, r->records.size(), bytes);
      http_response resp;
      resp.content_type = content_type;
      resp.body = std::move(out);
      resp.hold = std::move(hold);
      // Where the next read starts: past the last record, or past transaction markers and
      // aborted records that a read returned none of (an empty array then still moves on).
      const int64_t next = r->records.empty() ? r->next_fetch_offset.value() : r->records.back().record_offset.value() + 1;
      resp.headers.emplace_back("Ringlog-Next-Offset", std::to_string(std::max(next, r->next_fetch_offset.value())));
      resp.headers.emplace_back("Ringlog-Last-Stable-Offset", std::to_string(r->last_stable_offset.value()));
      call.respond(std::move(resp));
    });
  });
}

void stream_consumer(const call_ptr& c, const std::string& type, bool as_json, const std::string& group,
                     const std::string& instance) {
  auto s = std::make_shared<record_stream>();
  s->c = c;
  s->format = stream_format_of(type);
  s->as_json = as_json;
  s->group = group;
  s->instance = instance;
  auto deadline = stream_deadline(s->c);
  if (!deadline) return;
  s->deadline = *deadline;
  s->step();
}

}  // namespace ringlog::gateway::routes
