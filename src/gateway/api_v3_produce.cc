// v3 produce (Confluent REST Proxy v3 POST .../records): one record, several, or a stream.

#include "api_routes.h"

#include "request_parsing.h"

namespace ringlog::gateway::routes {

/// {"error_code":200,...} delivery report of one v3 record.
json v3_report(const std::string& cluster, const std::string& topic, const v3_record& r,
               const broker::produce_record_result& result) {
  auto typed = [](const std::string& type, size_t size) -> json {
    if (type.empty()) return nullptr;
    return json{{"type", type}, {"size", size}};
  };
  json j = {{"error_code", 200},
            {"cluster_id", cluster},
            {"topic_name", topic},
            {"partition_id", result.partition.value()},
            {"offset", result.record_offset.value()},
            {"key", typed(r.key_type, r.key_size)},
            {"value", typed(r.value_type, r.value_size)}};
  j["timestamp"] = result.timestamp >= 0 ? json(format_iso8601_ms(result.timestamp)) : json(nullptr);
  return j;
}

// -- v3 produce

/// Writes the reports of a v3 stream in request order as their batches complete.
struct v3_stream : std::enable_shared_from_this<v3_stream> {
  std::vector<std::optional<std::string>> reports;
  size_t next_to_write = 0;
  /// Reports handed to the connection and not yet on the socket: a client that does not read its
  /// answers holds them here, so they count as unanswered (the reader pauses, the client's
  /// records wait in TCP) instead of growing the connection's write queue without bound.
  size_t reports_unsent = 0;
  bool body_open = false;    // a produce stream still reading its body: more reports may come
  std::function<void()> on_written;   // runs after reports were written (a paused reader resumes)
  std::shared_ptr<void> paused_reader;   // the produce stream's reader while it waits for reports

  void flush(api::call& call) {
    while (next_to_write < reports.size() && reports[next_to_write]) {
      ++reports_unsent;
      call.sink->write_chunk_then(std::move(*reports[next_to_write]) + "\n", [self = shared_from_this()](bool) {
        --self->reports_unsent;
        if (self->on_written) self->on_written();
      });
      reports[next_to_write].reset();
      ++next_to_write;
    }
    if (next_to_write == reports.size() && !body_open) return call.end_stream();
    if (on_written) on_written();
  }
  [[nodiscard]] size_t unanswered() const { return reports.size() - next_to_write + reports_unsent; }
};

/// A record numbered by "sequence" belongs to an idempotent produce (the producer_id and
/// producer_epoch query parameters, from POST /v3/clusters/{c}/producers): without them it was
/// stored as an ordinary record, and a resend stored again. It fails alone with 422, the
/// WebSocket's rule (http-api/ws-protocol.md).
void refuse_sequence_without_producer(v3_item& item, const std::optional<broker::producer_identity>& producer) {
  if (producer || !item.record || !item.record->record.sequence) return;
  item.record.reset();
  item.failure = api_error{422, error_codes::unprocessable,
                           "\"sequence\" numbers the records of an idempotent produce: send producer_id and "
                           "producer_epoch (query parameters; POST /v3/clusters/{cluster_id}/producers hands them out) "
                           "with it, or leave sequence out"};
}

/// Sends `items` (parsed records, or refusals) in batches of at most stream_batch_records_max;
/// the report of items[i] goes to stream->reports[first + i], written in order as they complete.
void produce_v3_items(const call_ptr& c, const std::shared_ptr<v3_stream>& stream, const std::string& topic,
                      const std::string& cluster, broker::acks_mode acks, std::vector<v3_item>& items, size_t first,
                      std::optional<broker::producer_identity> producer = std::nullopt) {
  struct batch {
    std::vector<size_t> indexes;
    std::vector<v3_record> records;
  };
  std::vector<batch> batches(1);
  for (size_t i = 0; i < items.size(); ++i) {
    v3_item& item = items[i];
    refuse_sequence_without_producer(item, producer);
    if (item.failure) {
      stream->reports[first + i] = error_json(*item.failure);
      continue;
    }
    if (batches.back().records.size() >= c->self->options().stream_batch_records_max) batches.emplace_back();
    batches.back().indexes.push_back(first + i);
    batches.back().records.push_back(std::move(*item.record));
  }
  for (batch& b : batches) {
    if (b.records.empty()) continue;
    broker::produce_request req{topic, {}, acks, 30000, producer, c->principal(), c->peer_ip()};
    uint64_t bytes = 0;
    for (const auto& r : b.records) {
      req.records.push_back(r.record);
      bytes += record_bytes(r.record);
    }
    c->broker().produce(std::move(req), [c, stream, topic, cluster, b = std::move(b), bytes](
                                            broker::result<broker::produce_response> r) mutable {
      c->later([r = std::move(r), stream, topic, cluster, b = std::move(b), bytes](api::call& call) {
        bool exists = !r.ok() && r.error().code == broker::errc::unknown_topic_or_partition && call.topic_exists(topic);
        uint64_t ok_records = 0;
        for (size_t k = 0; k < b.indexes.size(); ++k) {
          std::string report;
          if (!r.ok()) {
            report = error_json(to_api_error(r.error(), error_scope::topic, exists));
          } else if (const auto& result = r->results.at(k); result.failure) {
            report = error_json(to_api_error(*result.failure, error_scope::partition, call.topic_exists(topic)));
          } else {
            ++ok_records;
            report = dump(v3_report(cluster, topic, b.records[k], result));
          }
          stream->reports[b.indexes[k]] = std::move(report);
        }
        if (ok_records > 0) call.self->metrics_registry().add_bytes_in(topic, ok_records, bytes);
        stream->flush(call);
      });
    });
  }
}

/// Records of a produce stream not yet answered, at most: past it the stream stops reading until
/// reports go out (a client that sends faster than the log appends waits in TCP, not in memory).
constexpr size_t produce_stream_unanswered_max = 10'000;

/// Reads a produce stream's body as it arrives (Confluent's streaming mode): each complete
/// top-level JSON object is a record, produced and answered in order while the client is still
/// sending. Whitespace separates records; anything else between them ends the stream with a
/// malformed-record report. Unparsed text is bounded by twice the record size limit plus 64 KiB.
struct v3_produce_stream : std::enable_shared_from_this<v3_produce_stream> {
  call_ptr c;
  std::shared_ptr<v3_stream> stream = std::make_shared<v3_stream>();
  std::string topic, cluster;
  broker::acks_mode acks = broker::acks_mode::all;
  std::string pending;        // body text not yet split into records
  size_t scanned = 0;         // pending[0, scanned) holds no complete record past value_start
  size_t value_start = std::string::npos;   // where the record being scanned starts
  int depth = 0;              // nesting depth inside the current record
  bool in_string = false, escaped = false;
  bool reading = false, paused = false, ended = false;

  void start() {
    stream->body_open = true;
    stream->on_written = [weak = weak_from_this()] {
      if (auto self = weak.lock(); self && self->paused && self->stream->unanswered() < produce_stream_unanswered_max) {
        self->paused = false;
        self->stream->paused_reader.reset();
        self->read();
      }
    };
    http_response head;
    head.content_type = "application/json";
    c->begin_stream(std::move(head));
    read();
  }

  void read() {
    if (ended || reading) return;
    if (stream->unanswered() >= produce_stream_unanswered_max) {
      // No read is pending now to hold this object (and through it the connection): the
      // stream's in-flight produces hold it until their reports resume reading. Without this the
      // connection was dropped mid-body (the client saw a reset, the request never finished).
      paused = true;
      stream->paused_reader = shared_from_this();
      return;
    }
    reading = true;
    c->sink->read_body_piece([self = shared_from_this()](std::string piece, bool done, bool ok) {
      self->reading = false;
      self->on_piece(std::move(piece), done, ok);
    });
  }

  void on_piece(std::string piece, bool done, bool ok) {
    pending += piece;
    std::vector<std::string> records;   // complete records of this piece, as JSON text
    std::optional<api_error> refusal;
    scan(records, refusal);
    const size_t bound = 2 * static_cast<size_t>(c->limits().record_bytes_max) + 65536;
    if (!refusal && pending.size() > bound) {
      refusal = api_error{413, error_codes::record_too_large,
                          "a record of the stream is larger than " + std::to_string(bound) +
                              " bytes of JSON text (twice message.max.bytes plus 64 KiB)"};
    }
    if (!refusal && (done || !ok) && !pending_is_blank()) {
      refusal = api_error{400, error_codes::bad_request, "the stream ended inside a record"};
    }
    // A body that could not be read on (a malformed chunk, such as a chunk size that is not hex,
    // or a lost connection) ends the stream with a report saying so: the answer used to end
    // cleanly, as if every record sent had been answered.
    if (!refusal && !ok) {
      refusal = api_error{400, error_codes::bad_request,
                          "the request body could not be read on (malformed chunked framing or a lost connection): "
                          "the stream ends here, records after the last report were not produced"};
    }
    if (!records.empty()) {
      // Each record alone: a malformed one is answered alone and the stream goes on at the next
      // object, whose framing the scan has already found.
      const size_t first = stream->reports.size();
      std::vector<v3_item> items;
      for (const std::string& text : records) {
        auto parsed = parse_v3_records(text, c->limits(), first + items.size());
        if (parsed.ok() && parsed->size() == 1) {
          items.push_back(std::move(parsed->front()));
        } else {
          items.push_back(v3_item{std::nullopt, parsed.ok() ? api_error{400, error_codes::bad_request, "not one record"}
                                                            : parsed.error()});
        }
      }
      stream->reports.resize(first + items.size());
      produce_v3_items(c, stream, topic, cluster, acks, items, first);
    }
    if (refusal) stream->reports.push_back(error_json(*refusal));
    if (done || !ok || refusal) {
      ended = true;
      stream->body_open = false;
    }
    stream->flush(*c);
    // Issue 31: over producer_byte_rate the body is read on only after the throttle time (Kafka
    // stops reading a throttled connection, KIP-219); nothing is refused.
    if (const int64_t throttle_ms = c->count_quota_bytes(piece.size()); throttle_ms > 0 && !ended) {
      return c->sink->post_after(throttle_ms, [self = shared_from_this()] { self->read(); });
    }
    read();
  }

  [[nodiscard]] bool pending_is_blank() const {
    return pending.find_first_not_of(" \t\r\n") == std::string::npos;
  }

  /// Moves every complete top-level object of `pending` to `out`; stops with `refusal` at text
  /// that cannot start a record.
  void scan(std::vector<std::string>& out, std::optional<api_error>& refusal) {
    size_t i = scanned;
    for (; i < pending.size(); ++i) {
      const char ch = pending[i];
      if (value_start == std::string::npos) {
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') continue;
        if (ch != '{') {
          refusal = api_error{400, error_codes::bad_request,
                              std::string("malformed stream: a record must be a JSON object, found '") + ch + "'"};
          break;
        }
        value_start = i;
        depth = 0;
      }
      if (in_string) {
        if (escaped) escaped = false;
        else if (ch == '\\') escaped = true;
        else if (ch == '"') in_string = false;
        continue;
      }
      if (ch == '"') in_string = true;
      else if (ch == '{' || ch == '[') ++depth;
      else if ((ch == '}' || ch == ']') && --depth == 0) {
        out.push_back(pending.substr(value_start, i + 1 - value_start));
        value_start = std::string::npos;
      }
    }
    // Keep only the record in progress.
    const size_t keep_from = value_start == std::string::npos ? i : value_start;
    pending.erase(0, keep_from);
    if (value_start != std::string::npos) value_start = 0;
    scanned = pending.size();
    if (refusal) pending.clear();
  }
};

void v3_produce(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto acks = c->query_acks();
  if (!acks) return;
  auto producer = c->query_producer();
  if (!producer) return;
  if (c->request.body_stream && *producer) {
    // A stream's records are batched as they arrive, so a resent stream would not repeat the
    // same batches: an idempotent produce is one request whose body has a Content-Length.
    return c->fail(422, error_codes::unprocessable,
                   "producer_id is not served on a chunked (streamed) produce body: send the records as one request "
                   "with a Content-Length, so that resending it repeats the same batches");
  }
  if (c->request.body_stream) {
    auto s = std::make_shared<v3_produce_stream>();
    s->c = c;
    s->topic = c->params["topic_name"];
    s->cluster = c->params["cluster_id"];
    s->acks = *acks;
    return s->start();
  }
  auto items = parse_v3_records(c->request.body, c->limits());
  if (!items.ok()) return c->fail(items.error());
  std::string topic = c->params["topic_name"];
  std::string cluster = c->params["cluster_id"];

  if (items->size() == 1 && !c->request.chunked) {
    v3_item& item = items->front();
    refuse_sequence_without_producer(item, *producer);
    // A record with invalid data is that record's report, not the request's status (Confluent
    // answers 200 with the record's error); a request-level refusal stays a status.
    if (item.failure) {
      http_response r;
      r.status = 200;
      r.body = error_json(*item.failure);
      return c->respond(std::move(r));
    }
    broker::produce_request req{topic, {item.record->record}, *acks, 30000, *producer, c->principal(), c->peer_ip()};
    uint64_t bytes = record_bytes(item.record->record);
    c->broker().produce(std::move(req), [c, topic, cluster, rec = std::move(*item.record), bytes](
                                            broker::result<broker::produce_response> r) mutable {
      c->later([r = std::move(r), topic, cluster, rec = std::move(rec), bytes](api::call& call) {
        if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, topic);
        const auto& result = r->results.at(0);
        if (result.failure) return call.fail_broker(*result.failure, error_scope::partition, topic);
        call.self->metrics_registry().add_bytes_in(topic, 1, bytes);
        call.respond_json(200, v3_report(cluster, topic, rec, result));
      });
    });
    return;
  }

  // Several records in one body: one report per record, in order, each written as soon as it and
  // all before it are done.
  auto stream = std::make_shared<v3_stream>();
  stream->reports.resize(items->size());
  http_response head;
  head.content_type = "application/json";
  c->begin_stream(std::move(head));
  // Issue 31: the body counts against producer_byte_rate as a single record's does (respond()
  // counts those; a streamed answer never passes through it).
  c->count_quota_bytes(c->request.body.size());
  produce_v3_items(c, stream, topic, cluster, *acks, *items, 0, *producer);
  stream->flush(*c);   // reports of refused records at the front, or all of them
}

/// POST .../topics/{t}/records:batch (Confluent's batch produce): every entry carries an id; the
/// answer is 207 with {"successes": [report + id], "failures": [{id, error_code, message}]}, in
/// entry order. An entry with invalid data is a failure (400) and the others are produced.
void v3_produce_batch(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto acks = c->query_acks();
  if (!acks) return;
  auto producer = c->query_producer();
  if (!producer) return;
  auto entries = parse_v3_batch(c->request.body, c->limits());
  if (!entries.ok()) return c->fail(entries.error());
  struct batch {
    std::vector<v3_batch_entry> entries;
    std::vector<size_t> produced;   // indexes of entries sent to the broker, in request order
  };
  auto b = std::make_shared<batch>();
  b->entries = std::move(entries).value();
  std::string topic = c->params["topic_name"];
  std::string cluster = c->params["cluster_id"];
  broker::produce_request req{topic, {}, *acks, 30000, *producer, c->principal(), c->peer_ip()};
  for (size_t i = 0; i < b->entries.size(); ++i) {
    refuse_sequence_without_producer(b->entries[i].item, *producer);
    const v3_item& item = b->entries[i].item;
    if (item.failure) continue;
    b->produced.push_back(i);
    req.records.push_back(item.record->record);
  }
  auto answer = [b, topic, cluster](api::call& call, const broker::result<broker::produce_response>* r) {
    json successes = json::array();
    json failures = json::array();
    std::vector<std::optional<json>> reports(b->entries.size());
    const bool exists = r && !r->ok() && r->error().code == broker::errc::unknown_topic_or_partition &&
                        call.topic_exists(topic);
    uint64_t ok_records = 0;
    uint64_t ok_bytes = 0;
    for (size_t k = 0; k < b->produced.size(); ++k) {
      const v3_batch_entry& e = b->entries[b->produced[k]];
      std::optional<api_error> failure;
      if (!r->ok()) {
        failure = to_api_error(r->error(), error_scope::topic, exists);
      } else if (const auto& result = (*r)->results.at(k); result.failure) {
        failure = to_api_error(*result.failure, error_scope::partition, call.topic_exists(topic));
      } else {
        ++ok_records;
        ok_bytes += record_bytes(e.item.record->record);
        json report = v3_report(cluster, topic, *e.item.record, result);
        report.erase("error_code");
        report["id"] = e.id;
        reports[b->produced[k]] = std::move(report);
        continue;
      }
      reports[b->produced[k]] = json{{"id", e.id}, {"error_code", failure->error_code}, {"message", failure->message}};
    }
    for (size_t i = 0; i < b->entries.size(); ++i) {
      const v3_batch_entry& e = b->entries[i];
      if (e.item.failure) {
        failures.push_back({{"id", e.id}, {"error_code", e.item.failure->error_code}, {"message", e.item.failure->message}});
      } else if (reports[i]->contains("error_code")) {
        failures.push_back(std::move(*reports[i]));
      } else {
        successes.push_back(std::move(*reports[i]));
      }
    }
    if (ok_records > 0) call.self->metrics_registry().add_bytes_in(topic, ok_records, ok_bytes);
    call.respond_json(207, {{"successes", successes}, {"failures", failures}});
  };
  if (req.records.empty()) return answer(*c, nullptr);
  c->broker().produce(std::move(req), [c, answer](broker::result<broker::produce_response> r) {
    c->later([r = std::move(r), answer](api::call& call) { answer(call, &r); });
  });
}

/// POST /v3/clusters/{c}/producers (ringlog): an idempotent producer session for HTTP clients
/// that retry over new connections. Answers 201 {"producer_id", "producer_epoch"} (Kafka's
/// InitProducerId without a transactional.id); the client then sends producer_id and
/// producer_epoch with each produce and numbers each partition's records 0, 1, 2, ... in
/// "sequence", so that a resent request is answered with the offsets of the first one.
void v3_create_producer(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  if (!is_blank(c->request.body) && c->request.body.find_first_not_of(" \t\r\n{}") != std::string::npos) {
    return c->fail(422, error_codes::unprocessable, "a producer session takes no settings: send an empty body or {}");
  }
  // The Kafka door's rule (KIP-679): IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
  if (!broker::may_init_idempotent_producer(c->broker().security(), c->principal(), c->peer_ip()) &&
      !c->require(security::resource_type::cluster, security::cluster_resource_name,
                  security::acl_operation::idempotent_write)) {
    return;
  }
  c->broker().init_producer_id([c](broker::result<broker::producer_identity> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
      if (const auto& auth = call.self->options().auth) auth->remember_producer(r->producer_id.value(), call.principal());
      call.respond_json(201, {{"kind", "KafkaProducer"},
                              {"cluster_id", call.params["cluster_id"]},
                              {"producer_id", r->producer_id.value()},
                              {"producer_epoch", r->producer_epoch.value()}});
    });
  });
}

}  // namespace ringlog::gateway::routes
