#include "request_parsing.h"

#include <simdjson.h>

#include <algorithm>
#include <array>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>
#include <set>

#include "base64.h"
#include "json_dom.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/delay/constants.h"

namespace ringlog::gateway {

namespace {

using namespace json_dom;

size_t header_bytes(const std::vector<model::record_header>& headers) {
  size_t n = 0;
  for (const auto& h : headers) n += h.key.size() + (h.value ? h.value->size() : 0);
  return n;
}

std::optional<api_error> check_record_size(std::string_view field, const broker::produce_record& r,
                                           const produce_limits& limits) {
  size_t bytes = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0) + header_bytes(r.headers);
  if (static_cast<int64_t>(bytes) > limits.record_bytes_max) {
    return api_error{422, ec::record_too_large,
                     std::string(field) + " is " + std::to_string(bytes) +
                         " bytes (key + value + headers), over the limit message.max.bytes=" +
                         std::to_string(limits.record_bytes_max)};
  }
  return std::nullopt;
}

std::optional<api_error> check_record_count(size_t count, const produce_limits& limits) {
  if (count == 0) return unprocessable("records must not be empty");
  if (count > static_cast<size_t>(limits.records_max)) {
    return api_error{422, ec::record_too_large,
                     "request has " + std::to_string(count) + " records, over the limit produce.records.max=" +
                         std::to_string(limits.records_max)};
  }
  return std::nullopt;
}

/// A v2 key or value: base64 string (binary) or any JSON (json); null is absent.
parsed<std::optional<model::bytes>> v2_payload(std::string_view field, dom::element e, embedded_format format) {
  if (e.type() == dom::element_type::NULL_VALUE) return std::optional<model::bytes>{};
  if (format == embedded_format::json) return std::optional<model::bytes>(model::to_bytes(simdjson::minify(e)));
  auto s = string_field(field, e);
  if (!s.ok()) return s.error();
  auto decoded = base64_decode(*s);
  if (!decoded) return unprocessable(std::string(field) + " is not valid base64");
  return std::optional<model::bytes>(std::move(*decoded));
}

struct typed_data {
  std::optional<model::bytes> bytes;
  std::string type;
};

/// A v3 key or value: {"type": "BINARY"|"JSON"|"STRING", "data": ...}; null (or null data) is absent.
parsed<typed_data> v3_payload(std::string_view field, dom::element e) {
  if (e.type() == dom::element_type::NULL_VALUE) return typed_data{};
  auto o = object_with(field, e, {"type", "data"});
  if (!o.ok()) return o.error();
  std::string type = "JSON";   // no schema registry here: untyped data is embedded JSON
  dom::element t;
  if (o->at_key("type").get(t) == simdjson::SUCCESS) {
    auto s = string_field(path_of(field, "type"), t);
    if (!s.ok()) return s.error();
    type = std::string(*s);
    if (type != "BINARY" && type != "JSON" && type != "STRING") {
      return unprocessable(path_of(field, "type") + " must be BINARY, JSON or STRING, got \"" + type + "\"");
    }
  }
  dom::element data;
  if (o->at_key("data").get(data) != simdjson::SUCCESS || data.type() == dom::element_type::NULL_VALUE) {
    return typed_data{std::nullopt, ""};
  }
  std::string data_field = path_of(field, "data");
  if (type == "JSON") return typed_data{model::to_bytes(simdjson::minify(data)), type};
  auto s = string_field(data_field, data);
  if (!s.ok()) return s.error();
  if (type == "STRING") return typed_data{model::to_bytes(*s), type};
  auto decoded = base64_decode(*s);
  if (!decoded) return unprocessable(data_field + " is not valid base64");
  return typed_data{std::move(*decoded), type};
}

parsed<std::vector<model::record_header>> v3_headers(std::string_view field, dom::element e) {
  std::vector<model::record_header> headers;
  if (e.type() == dom::element_type::NULL_VALUE) return headers;
  if (e.type() != dom::element_type::ARRAY) return wrong_type(field, "an array", e);
  size_t i = 0;
  dom::array e_array = e.get_array().value_unsafe();
  for (dom::element h : e_array) {
    std::string hf = std::string(field) + "[" + std::to_string(i++) + "]";
    auto o = object_with(hf, h, {"name", "value"});
    if (!o.ok()) return o.error();
    dom::element name;
    if (o->at_key("name").get(name) != simdjson::SUCCESS) return unprocessable(hf + ".name is required");
    auto n = string_field(hf + ".name", name);
    if (!n.ok()) return n.error();
    model::record_header header{std::string(*n), std::nullopt};
    dom::element value;
    if (o->at_key("value").get(value) == simdjson::SUCCESS && value.type() != dom::element_type::NULL_VALUE) {
      auto v = string_field(hf + ".value", value);
      if (!v.ok()) return v.error();
      auto decoded = base64_decode(*v);
      if (!decoded) return unprocessable(hf + ".value is not valid base64");
      header.value = std::move(*decoded);
    }
    headers.push_back(std::move(header));
  }
  return headers;
}

/// Up to 9999-12-31T23:59:59.999Z, as a number or a date-time: later is no time anyone means.
constexpr int64_t timestamp_ms_max = 253'402'300'799'999;

/// A record's `deliver_at` (ms since the epoch, or an ISO-8601 date-time) or `delay_ms` (ms) as
/// the header the broker reads (ringlog-deliver-at / ringlog-delay-ms, issue 18); `f` names the
/// field in messages. Null: nothing. Refuses a second delivery time on the same record.
std::optional<api_error> read_delay_field(const std::string& f, std::string_view name, dom::element value,
                                          broker::produce_record& rec) {
  if (value.type() == dom::element_type::NULL_VALUE) return std::nullopt;
  for (const auto& h : rec.headers) {
    if (h.key == delay::deliver_at_header || h.key == delay::delay_ms_header) {
      return unprocessable(f + ": a record takes deliver_at or delay_ms (or a " + std::string(delay::deliver_at_header) +
                           " / " + std::string(delay::delay_ms_header) + " header), only one of them");
    }
  }
  int64_t ms = 0;
  if (name == "deliver_at" && value.type() == dom::element_type::STRING) {
    auto parsed_ms = parse_iso8601_ms(value.get_string().value_unsafe());
    if (!parsed_ms || *parsed_ms < 0 || *parsed_ms > timestamp_ms_max) {
      return unprocessable(f + " must be ms since the epoch or an ISO-8601 date-time from 1970 to 9999");
    }
    ms = *parsed_ms;
  } else {
    // delay_ms up to the same bound; the broker refuses what passes delay.max.ms, naming it.
    auto n = integer_field(f, value, 0, timestamp_ms_max);
    if (!n.ok()) return n.error();
    ms = *n;
  }
  const auto header = name == "deliver_at" ? delay::deliver_at_header : delay::delay_ms_header;
  rec.headers.push_back({std::string(header), model::to_bytes(std::to_string(ms))});
  return std::nullopt;
}

/// `field` names the record in messages ("records[3]", "entries[3]"); a batch entry (`batch_entry`)
/// also has an "id", read by the caller. `delay_fault` is set when the refusal is of the record's
/// delivery time (deliver_at, delay_ms): that is 422 in every door, as the broker's refusals of a
/// delivery time are (over delay.max.ms, a malformed delay header), not v3's 400 for invalid data.
parsed<v3_record> v3_record_from(dom::element e, const std::string& field, const produce_limits& limits,
                                 bool& delay_fault, bool batch_entry = false) {
  auto o = batch_entry ? object_with(field, e, {"id", "partition_id", "headers", "key", "value", "timestamp", "sequence",
                                                "deliver_at", "delay_ms"})
                       : object_with(field, e, {"partition_id", "headers", "key", "value", "timestamp", "sequence",
                                                "deliver_at", "delay_ms"});
  if (!o.ok()) return o.error();
  v3_record out;
  std::optional<std::pair<std::string_view, dom::element>> delay_field;   // after the headers
  for (auto [name, value] : *o) {
    std::string f = path_of(field, name);
    if (name == "deliver_at" || name == "delay_ms") {
      if (delay_field) {
        delay_fault = true;
        return unprocessable(field + ": a record takes deliver_at or delay_ms, not both");
      }
      delay_field = {name, value};
    } else if (name == "partition_id") {
      if (value.type() == dom::element_type::NULL_VALUE) continue;
      auto p = integer_field(f, value, 0, std::numeric_limits<int32_t>::max());
      if (!p.ok()) return p.error();
      out.record.partition = model::partition_id(static_cast<int32_t>(*p));
    } else if (name == "sequence") {
      // ringlog: the record's sequence in its partition for an idempotent produce (KIP-98).
      if (value.type() == dom::element_type::NULL_VALUE) continue;
      auto seq = integer_field(f, value, 0, std::numeric_limits<int32_t>::max());
      if (!seq.ok()) return seq.error();
      out.record.sequence = model::sequence(static_cast<int32_t>(*seq));
    } else if (name == "headers") {
      auto h = v3_headers(f, value);
      if (!h.ok()) return h.error();
      out.record.headers = std::move(h).value();
    } else if (name == "key" || name == "value") {
      auto d = v3_payload(f, value);
      if (!d.ok()) return d.error();
      size_t size = d->bytes ? d->bytes->size() : 0;
      std::string type = d->bytes ? d->type : "";
      if (name == "key") {
        out.record.key = std::move(d->bytes);
        out.key_type = type;
        out.key_size = size;
      } else {
        out.record.value = std::move(d->bytes);
        out.value_type = type;
        out.value_size = size;
      }
    } else if (name == "timestamp") {
      if (value.type() == dom::element_type::NULL_VALUE) continue;
      if (value.type() == dom::element_type::STRING) {
        auto ms = parse_iso8601_ms(value.get_string().value_unsafe());
        if (!ms || *ms < 0 || *ms > timestamp_ms_max) {
          return unprocessable(f + " must be an ISO-8601 date-time (or ms since the epoch) from 1970 to 9999");
        }
        out.record.timestamp = *ms;
      } else {
        auto ms = integer_field(f, value, 0, timestamp_ms_max);
        if (!ms.ok()) return ms.error();
        out.record.timestamp = *ms;
      }
    }
  }
  if (delay_field) {
    if (auto bad = read_delay_field(path_of(field, delay_field->first), delay_field->first, delay_field->second, out.record)) {
      delay_fault = true;
      return *bad;
    }
  }
  if (auto too_large = check_record_size(field, out.record, limits)) return *too_large;
  return out;
}

// days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int64_t> digits(std::string_view s, size_t pos, size_t count) {
  if (pos + count > s.size()) return std::nullopt;
  int64_t v = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

bool is_blank(std::string_view body) { return body.find_first_not_of(" \t\r\n") == std::string_view::npos; }

api_error empty_body_error(std::string_view expected) {
  return {422, ec::unprocessable, "the request body is empty; this route reads " + std::string(expected)};
}

std::optional<int64_t> parse_iso8601_ms(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
  auto year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
  auto hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = digits(s, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  // Days past the end of the month (2024-02-31) are refused, not rolled into the next month.
  static constexpr int days_in_month[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  const int month_days = days_in_month[*month - 1] + (*month == 2 && leap ? 1 : 0);
  if (*day > month_days) return std::nullopt;
  size_t pos = 19;
  int64_t millis = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      millis += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  int64_t offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    auto oh = digits(s, pos + 1, 2), om = digits(s, pos + 4, 2);
    if (!oh || !om || pos + 3 >= s.size() || s[pos + 3] != ':') return std::nullopt;
    if (*oh > 23 || *om > 59) return std::nullopt;   // RFC 3339 section 5.6 time-numoffset
    offset_minutes = (*oh * 60 + *om) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;  // a time without a zone is ambiguous
  }
  if (pos != s.size()) return std::nullopt;
  int64_t days = days_from_civil(*year, static_cast<unsigned>(*month), static_cast<unsigned>(*day));
  int64_t seconds = days * 86400 + *hour * 3600 + *minute * 60 + *second - offset_minutes * 60;
  return seconds * 1000 + millis;
}

std::string format_iso8601_ms(int64_t ms) {
  int64_t seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int64_t millis = ms - seconds * 1000;
  int64_t days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400;
  int64_t rem = seconds - days * 86400;
  // civil_from_days (Howard Hinnant)
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  char buf[128];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ", static_cast<long long>(y), m, d,
                static_cast<long long>(rem / 3600), static_cast<long long>(rem / 60 % 60),
                static_cast<long long>(rem % 60), static_cast<long long>(millis));
  return buf;
}

namespace {

/// One record field of a fast-path produce (`partition`, `key` or `value`) into `rec`; false
/// when the field is unknown here or its value is not of the common shape.
bool read_fast_record_field(std::string_view name, dom::element value, broker::produce_record& rec) {
  if (name == "partition") {
    if (value.is_null()) return true;
    int64_t p = 0;
    if (value.get_int64().get(p) != simdjson::SUCCESS || p < 0 || p > std::numeric_limits<int32_t>::max()) return false;
    rec.partition = model::partition_id(static_cast<int32_t>(p));
    return true;
  }
  if (name == "key" || name == "value") {
    if (value.is_null()) return true;
    std::string_view b64;
    if (value.get_string().get(b64) != simdjson::SUCCESS) return false;
    auto bytes = base64_decode(b64);
    if (!bytes) return false;
    (name == "key" ? rec.key : rec.value) = std::move(*bytes);
    return true;
  }
  return false;
}

/// The `records` array of a fast-path produce; false when any element is not of the common shape.
bool read_fast_records(dom::element value, size_t records_max, std::vector<broker::produce_record>& out) {
  dom::array records;
  if (value.get_array().get(records) != simdjson::SUCCESS) return false;
  const size_t count = records.size();
  if (count == 0 || count > records_max) return false;
  out.reserve(count);
  for (dom::element r : records) {
    dom::object o;
    if (r.get_object().get(o) != simdjson::SUCCESS) return false;
    broker::produce_record rec;
    field_names seen;
    for (auto [name, field] : o) {
      if (seen.contains(name) || seen.full()) return false;
      seen.add(name);
      if (!read_fast_record_field(name, field, rec)) return false;
    }
    out.push_back(std::move(rec));
  }
  return true;
}

}  // namespace

std::optional<ws_produce_message> parse_ws_produce_fast(std::string_view text, size_t records_max) {
  parser_lease parser;
  dom::element doc;
  dom::object o;
  if (parser->parse(text.data(), text.size(), true).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(o) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  ws_produce_message m;
  std::string_view type, topic;
  if (o["type"].get_string().get(type) != simdjson::SUCCESS || type != "produce") return std::nullopt;
  if (o["topic"].get_string().get(topic) != simdjson::SUCCESS) return std::nullopt;
  m.topic = std::string(topic);
  broker::produce_record top;
  bool top_record_fields = false;
  // A field given twice is left to the general path (nlohmann keeps the last one).
  field_names seen;
  for (auto [name, value] : o) {
    if (seen.contains(name)) return std::nullopt;
    if (seen.full()) return std::nullopt;   // unusually many fields: the general path
    seen.add(name);
    if (name == "type" || name == "topic") continue;
    if (name == "id") {
      m.id_json = simdjson::minify(value);
    } else if (name == "partition" || name == "key" || name == "value") {
      if (!read_fast_record_field(name, value, top)) return std::nullopt;
      top_record_fields = true;
    } else if (name == "records") {
      if (!read_fast_records(value, records_max, m.records)) return std::nullopt;
      m.multi = true;
    } else if (name == "acks") {
      int64_t a = 0;
      std::string_view all;
      if (value.get_int64().get(a) == simdjson::SUCCESS && (a == 0 || a == 1 || a == -1)) {
        m.acks = a == 0 ? broker::acks_mode::none : a == 1 ? broker::acks_mode::leader : broker::acks_mode::all;
      } else if (value.get_string().get(all) == simdjson::SUCCESS && all == "all") {
        m.acks = broker::acks_mode::all;
      } else {
        return std::nullopt;
      }
    } else if (name == "format") {
      std::string_view f;
      if (value.get_string().get(f) != simdjson::SUCCESS || f != "binary") return std::nullopt;
    } else {
      return std::nullopt;   // headers, or a field the general path refuses by name
    }
  }
  if (m.multi && top_record_fields) return std::nullopt;   // the general path refuses the mix
  if (!m.multi) m.records.push_back(std::move(top));
  return m;
}

parsed<std::vector<broker::produce_record>> parse_v2_produce(std::string_view body, embedded_format format,
                                                             bool partition_in_path, const produce_limits& limits) {
  if (is_blank(body)) return empty_body_error("{\"records\": [...]}");
  parser_lease parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser->parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto top = object_with("", doc, {"records", "key_schema", "key_schema_id", "value_schema", "value_schema_id"});
  if (!top.ok()) return top.error();
  for (std::string_view schema_field : {"key_schema", "key_schema_id", "value_schema", "value_schema_id"}) {
    dom::element s;
    if (top->at_key(schema_field).get(s) == simdjson::SUCCESS && s.type() != dom::element_type::NULL_VALUE) {
      return unprocessable(std::string(schema_field) + " is not supported: ringlog has no schema registry; use the binary or json embedded format");
    }
  }
  dom::element records_el;
  if (top->at_key("records").get(records_el) != simdjson::SUCCESS) return unprocessable("records is required");
  if (records_el.type() != dom::element_type::ARRAY) return wrong_type("records", "an array", records_el);
  dom::array records = records_el.get_array().value_unsafe();
  if (auto bad = check_record_count(records.size(), limits)) return *bad;
  std::vector<broker::produce_record> out;
  out.reserve(records.size());
  size_t i = 0;
  for (dom::element r : records) {
    std::string field = "records[" + std::to_string(i++) + "]";
    auto o = partition_in_path ? object_with(field, r, {"key", "value", "deliver_at", "delay_ms"})
                               : object_with(field, r, {"key", "value", "partition", "deliver_at", "delay_ms"});
    if (!o.ok() && r.is_object() && !r.get_object().value_unsafe()["headers"].error()) {
      // The Confluent REST Proxy's v2 records have no headers either; say where they are taken.
      return unprocessable(field + " has \"headers\", which REST v2 records do not take: produce records with "
                           "headers through REST v3 (POST /v3/clusters/{cluster_id}/topics/{topic}/records) or "
                           "the WebSocket (/v1/ws)");
    }
    if (!o.ok()) return o.error();
    broker::produce_record rec;
    for (auto [name, value] : *o) {
      // The field's path is spelled out only for an error message (this loop runs per record).
      auto f = [&field, name] { return field + "." + std::string(name); };
      if (name == "deliver_at" || name == "delay_ms") {
        if (auto bad = read_delay_field(f(), name, value, rec)) return *bad;
      } else if (name == "partition") {
        if (value.type() == dom::element_type::NULL_VALUE) continue;
        auto p = integer_field(f(), value, 0, std::numeric_limits<int32_t>::max());
        if (!p.ok()) return p.error();
        rec.partition = model::partition_id(static_cast<int32_t>(*p));
      } else {
        auto payload = v2_payload("", value, format);
        if (!payload.ok()) return v2_payload(f(), value, format).error();
        (name == "key" ? rec.key : rec.value) = std::move(payload).value();
      }
    }
    if (auto too_large = check_record_size(field, rec, limits)) return *too_large;
    out.push_back(std::move(rec));
  }
  return out;
}

parsed<std::vector<v3_item>> parse_v3_records(std::string_view body, const produce_limits& limits, size_t first_index) {
  // Checked here, not by simdjson: its parse_many on an empty input does not reliably report EMPTY.
  if (is_blank(body)) return empty_body_error("one or more record objects");
  parser_lease parser;
  simdjson::padded_string padded(body);
  // One batch holds the whole body (bounded by http.request.body.max.bytes), so a record never
  // straddles a batch boundary.
  size_t batch = std::max<size_t>(body.size() + 64, simdjson::dom::DEFAULT_BATCH_SIZE);
  dom::document_stream stream;
  if (auto err = parser->parse_many(padded, batch).get(stream); err) return malformed(err, std::string_view(padded));
  // The parser reuses one document per iteration: each record is converted before the next.
  std::vector<v3_item> items;
  for (auto doc : stream) {
    dom::element e;
    if (auto err = doc.get(e); err) return malformed(err, std::string_view(padded));
    if (items.size() >= static_cast<size_t>(limits.records_max)) {
      return api_error{422, ec::record_too_large,
                       "request has more than " + std::to_string(limits.records_max) +
                           " records, over the limit produce.records.max=" + std::to_string(limits.records_max)};
    }
    size_t index = first_index + items.size();
    bool delay_fault = false;
    auto r = v3_record_from(e, "records[" + std::to_string(index) + "]", limits, delay_fault);
    if (r.ok()) {
      items.push_back(v3_item{std::move(r).value(), std::nullopt});
    } else if (r.error().error_code == ec::unprocessable && !delay_fault) {
      // Invalid data in one record (not base64, an unknown field, a wrong type) fails that record
      // alone with 400, as Confluent's v3 produce reports it; the request goes on. An invalid
      // delivery time fails it with 422 (v3_record_from).
      items.push_back(v3_item{std::nullopt, api_error{400, ec::invalid_request, r.error().message}});
    } else {
      items.push_back(v3_item{std::nullopt, r.error()});
    }
  }
  if (stream.truncated_bytes() > 0) return malformed(simdjson::TAPE_ERROR, std::string_view(padded));
  if (auto bad = check_record_count(items.size(), limits)) return *bad;
  return items;
}

parsed<std::vector<v3_batch_entry>> parse_v3_batch(std::string_view body, const produce_limits& limits) {
  if (is_blank(body)) return empty_body_error("{\"entries\": [{\"id\", ...}]}");
  parser_lease parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser->parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto top = object_with("", doc, {"entries"});
  if (!top.ok()) return top.error();
  dom::element entries_el;
  if (top->at_key("entries").get(entries_el) != simdjson::SUCCESS) return missing_field("entries");
  if (entries_el.type() != dom::element_type::ARRAY) return wrong_type("entries", "an array", entries_el);
  dom::array entries = entries_el.get_array().value_unsafe();
  if (auto bad = check_record_count(entries.size(), limits)) return *bad;
  std::vector<v3_batch_entry> out;
  out.reserve(entries.size());
  std::set<std::string> ids;
  for (dom::element e : entries) {
    const std::string field = "entries[" + std::to_string(out.size()) + "]";
    // The id is how a failure is reported, so an entry without a usable one refuses the batch.
    dom::element id_el;
    if (e.type() != dom::element_type::OBJECT) return wrong_type(field, "an object", e);
    if (e.at_key("id").get(id_el) != simdjson::SUCCESS) return unprocessable(field + ".id is required");
    if (id_el.type() != dom::element_type::STRING) return wrong_type(field + ".id", "a string", id_el);
    std::string id(id_el.get_string().value_unsafe());
    // Confluent's rule: 1..80 of [0-9a-zA-Z_-], so an id is echoed byte for byte (and bytes and
    // characters are the same count); anything else refuses the batch with 422.
    const bool legal = std::all_of(id.begin(), id.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-' || ch == '_';
    });
    if (id.empty() || id.size() > batch_entry_id_bytes_max || !legal) {
      return unprocessable(field + ".id must be 1.." + std::to_string(batch_entry_id_bytes_max) +
                           " bytes of [0-9a-zA-Z_-], got " + std::to_string(id.size()) + " bytes");
    }
    if (!ids.insert(id).second) {
      return api_error{400, ec::invalid_request, field + ".id \"" + id + "\" is used by an earlier entry; ids must be distinct"};
    }
    bool delay_fault = false;
    auto r = v3_record_from(e, field, limits, delay_fault, true);
    if (r.ok()) {
      out.push_back({std::move(id), v3_item{std::move(r).value(), std::nullopt}});
    } else if (r.error().error_code == ec::unprocessable && !delay_fault) {
      out.push_back({std::move(id), v3_item{std::nullopt, api_error{400, ec::invalid_request, r.error().message}}});
    } else {
      out.push_back({std::move(id), v3_item{std::nullopt, r.error()}});
    }
  }
  return out;
}

parsed<broker::create_topic_request> parse_create_topic(std::string_view body) {
  if (is_blank(body)) return empty_body_error("{\"topic_name\": ...}");
  dom::parser parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto o = object_with("", doc, {"topic_name", "partitions_count", "replication_factor", "configs", "validate_only"});
  if (!o.ok()) return o.error();
  broker::create_topic_request req;
  bool has_name = false;
  for (auto [name, value] : *o) {
    std::string f(name);
    if (name == "topic_name") {
      auto s = string_field(f, value);
      if (!s.ok()) return s.error();
      req.name = std::string(*s);
      has_name = true;
    } else if (name == "partitions_count") {
      if (value.type() == dom::element_type::NULL_VALUE) continue;
      auto n = integer_field(f, value, 1, constants::topic_partitions_max);
      if (!n.ok()) return n.error();
      req.partitions_count = static_cast<int32_t>(*n);
    } else if (name == "replication_factor") {
      if (value.type() == dom::element_type::NULL_VALUE) continue;
      auto n = integer_field(f, value, 1, std::numeric_limits<int16_t>::max());
      if (!n.ok()) return n.error();
      req.replication_factor = static_cast<int16_t>(*n);
    } else if (name == "validate_only") {
      auto b = bool_field(f, value);
      if (!b.ok()) return b.error();
      req.validate_only = *b;
    } else if (name == "configs") {
      if (value.type() == dom::element_type::NULL_VALUE) continue;
      if (value.type() != dom::element_type::ARRAY) return wrong_type(f, "an array", value);
      size_t i = 0;
      dom::array value_array = value.get_array().value_unsafe();
  for (dom::element c : value_array) {
        std::string cf = "configs[" + std::to_string(i++) + "]";
        auto co = object_with(cf, c, {"name", "value"});
        if (!co.ok()) return co.error();
        dom::element n, v;
        if (co->at_key("name").get(n) != simdjson::SUCCESS) return unprocessable(cf + ".name is required");
        auto ns = string_field(cf + ".name", n);
        if (!ns.ok()) return ns.error();
        if (co->at_key("value").get(v) != simdjson::SUCCESS || v.type() == dom::element_type::NULL_VALUE) continue;
        auto vs = string_field(cf + ".value", v);
        if (!vs.ok()) return vs.error();
        req.configs[std::string(*ns)] = std::string(*vs);
      }
    }
  }
  if (!has_name) return missing_field("topic_name");
  return req;
}

parsed<int32_t> parse_patch_topic(std::string_view body) {
  if (is_blank(body)) return empty_body_error("{\"partitions_count\": N}");
  dom::parser parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto o = object_with("", doc, {"partitions_count"});
  if (!o.ok()) return o.error();
  dom::element n;
  if (o->at_key("partitions_count").get(n) != simdjson::SUCCESS) return missing_field("partitions_count");
  auto v = integer_field("partitions_count", n, 1, constants::topic_partitions_max);
  if (!v.ok()) return v.error();
  return static_cast<int32_t>(*v);
}

parsed<std::vector<std::pair<std::string, int32_t>>> parse_elect_leaders(std::string_view body) {
  std::vector<std::pair<std::string, int32_t>> out;
  if (is_blank(body)) return out;
  dom::parser parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto o = object_with("", doc, {"election_type", "partitions"});
  if (!o.ok()) return o.error();
  dom::element type;
  if (o->at_key("election_type").get(type) == simdjson::SUCCESS) {
    auto s = string_field("election_type", type);
    if (!s.ok()) return s.error();
    if (*s != "PREFERRED") {
      return unprocessable("election_type must be PREFERRED, got \"" + std::string(*s) +
                           "\" (an unclean election happens by itself when unclean.leader.election.enable=true)");
    }
  }
  dom::element partitions;
  if (o->at_key("partitions").get(partitions) != simdjson::SUCCESS ||
      partitions.type() == dom::element_type::NULL_VALUE) {
    return out;
  }
  if (partitions.type() != dom::element_type::ARRAY) return wrong_type("partitions", "an array or null", partitions);
  size_t i = 0;
  dom::array partition_array = partitions.get_array().value_unsafe();
  for (dom::element p : partition_array) {
    const std::string pf = "partitions[" + std::to_string(i++) + "]";
    if (i > elect_leaders_partitions_max) {
      return unprocessable("partitions: at most " + std::to_string(elect_leaders_partitions_max) +
                           " in one request (elect_leaders_partitions_max)");
    }
    auto po = object_with(pf, p, {"topic_name", "partition_id"});
    if (!po.ok()) return po.error();
    dom::element t, n;
    if (po->at_key("topic_name").get(t) != simdjson::SUCCESS) return missing_field(pf + ".topic_name");
    auto ts = string_field(pf + ".topic_name", t);
    if (!ts.ok()) return ts.error();
    if (po->at_key("partition_id").get(n) != simdjson::SUCCESS) return missing_field(pf + ".partition_id");
    auto id = integer_field(pf + ".partition_id", n, 0, INT32_MAX);
    if (!id.ok()) return id.error();
    out.emplace_back(std::string(*ts), static_cast<int32_t>(*id));
  }
  return out;
}

namespace {

/// A JSON array of broker ids at `field`.
parsed<std::vector<int32_t>> broker_ids_field(const std::string& field, dom::element e) {
  if (e.type() != dom::element_type::ARRAY) return wrong_type(field, "an array of broker ids", e);
  std::vector<int32_t> out;
  size_t i = 0;
  dom::array ids = e.get_array().value_unsafe();
  for (dom::element id : ids) {
    auto n = integer_field(field + "[" + std::to_string(i++) + "]", id, 0, INT32_MAX);
    if (!n.ok()) return n.error();
    out.push_back(static_cast<int32_t>(*n));
  }
  return out;
}

}  // namespace

parsed<std::vector<broker::partition_reassignment_target>> parse_reassignments(std::string_view body) {
  constexpr const char* shape = R"({"data": [{"topic_name": T, "partition_id": P, "replicas": [broker ids]}]})";
  if (is_blank(body)) return empty_body_error(shape);
  dom::parser parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto o = object_with("", doc, {"data"});
  if (!o.ok()) {
    api_error e = o.error();
    e.message += " (the body is " + std::string(shape) + ")";
    return e;
  }
  dom::element data;
  if (o->at_key("data").get(data) != simdjson::SUCCESS) return missing_field("data");
  if (data.type() != dom::element_type::ARRAY) return wrong_type("data", "an array", data);
  std::vector<broker::partition_reassignment_target> out;
  size_t i = 0;
  dom::array data_array = data.get_array().value_unsafe();
  for (dom::element p : data_array) {
    const std::string pf = "data[" + std::to_string(i++) + "]";
    if (i > reassignment_partitions_max) {
      return unprocessable("data: at most " + std::to_string(reassignment_partitions_max) +
                           " partitions in one request (reassignment_partitions_max)");
    }
    auto po = object_with(pf, p, {"topic_name", "partition_id", "replicas"});
    if (!po.ok()) return po.error();
    dom::element t, n, r;
    if (po->at_key("topic_name").get(t) != simdjson::SUCCESS) return missing_field(pf + ".topic_name");
    auto ts = string_field(pf + ".topic_name", t);
    if (!ts.ok()) return ts.error();
    if (po->at_key("partition_id").get(n) != simdjson::SUCCESS) return missing_field(pf + ".partition_id");
    auto id = integer_field(pf + ".partition_id", n, 0, INT32_MAX);
    if (!id.ok()) return id.error();
    if (po->at_key("replicas").get(r) != simdjson::SUCCESS) return missing_field(pf + ".replicas");
    broker::partition_reassignment_target target{std::string(*ts), static_cast<int32_t>(*id), std::nullopt};
    if (r.type() != dom::element_type::NULL_VALUE) {
      auto ids = broker_ids_field(pf + ".replicas", r);
      if (!ids.ok()) return ids.error();
      target.replicas = std::move(ids).value();
    }
    out.push_back(std::move(target));
  }
  if (out.empty()) return unprocessable("data must name at least one partition");
  return out;
}

parsed<std::vector<int32_t>> parse_reassignment_replicas(std::string_view body) {
  if (is_blank(body)) return empty_body_error("{\"replicas\": [broker ids]}");
  dom::parser parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto o = object_with("", doc, {"replicas"});
  if (!o.ok()) return o.error();
  dom::element r;
  if (o->at_key("replicas").get(r) != simdjson::SUCCESS) return missing_field("replicas");
  return broker_ids_field("replicas", r);
}

namespace {

/// One ACL object of a create body; `field` its path ("" or "data[3]").
parsed<security::acl_binding> acl_object(const std::string& field, dom::element e) {
  auto o = object_with(field, e, {"resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
                                  "permission"});
  if (!o.ok()) return o.error();
  auto text = [&](const char* name, bool required) -> parsed<std::optional<std::string>> {
    dom::element v;
    if (o->at_key(name).get(v) != simdjson::SUCCESS) {
      if (required) return missing_field(path_of(field, name));
      return std::optional<std::string>{};
    }
    auto s = string_field(path_of(field, name), v);
    if (!s.ok()) return s.error();
    return std::optional<std::string>{std::string(*s)};
  };
  auto named = [&](const char* name, auto parse, const char* choices) -> parsed<decltype(parse(""))> {
    auto t = text(name, true);
    if (!t.ok()) return t.error();
    auto v = parse(**t);
    if (!v) return unprocessable(path_of(field, name) + " must be one of " + choices + ", got \"" + **t + "\"");
    return v;
  };
  auto type = named("resource_type", security::parse_resource_type,
                    "TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER");
  if (!type.ok()) return type.error();
  auto pattern = named("pattern_type", security::parse_pattern_type, "LITERAL, PREFIXED");
  if (!pattern.ok()) return pattern.error();
  auto operation = named("operation", security::parse_acl_operation,
                         "ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, "
                         "ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS");
  if (!operation.ok()) return operation.error();
  auto permission = named("permission", security::parse_acl_permission_type, "ALLOW, DENY");
  if (!permission.ok()) return permission.error();
  auto name = text("resource_name", true);
  if (!name.ok()) return name.error();
  auto principal = text("principal", true);
  if (!principal.ok()) return principal.error();
  auto host = text("host", false);
  if (!host.ok()) return host.error();
  return security::acl_binding{**type,       **name, **pattern, **principal, host->value_or("*"),
                               **operation, **permission};
}

}  // namespace

parsed<std::vector<security::acl_binding>> parse_acls(std::string_view body, bool batch) {
  constexpr const char* one_shape =
      R"({"resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"})";
  if (is_blank(body)) return empty_body_error(batch ? std::string("{\"data\": [") + one_shape + "]}" : one_shape);
  dom::parser parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  if (!batch) {
    auto one = acl_object("", doc);
    if (!one.ok()) return one.error();
    return std::vector<security::acl_binding>{std::move(one).value()};
  }
  auto o = object_with("", doc, {"data"});
  if (!o.ok()) return o.error();
  dom::element data;
  if (o->at_key("data").get(data) != simdjson::SUCCESS) return missing_field("data");
  if (data.type() != dom::element_type::ARRAY) return wrong_type("data", "an array", data);
  std::vector<security::acl_binding> out;
  dom::array data_array = data.get_array().value_unsafe();
  for (dom::element e : data_array) {
    if (out.size() == acls_per_request_max) {
      return unprocessable("data: at most " + std::to_string(acls_per_request_max) +
                           " ACLs in one request (acls_per_request_max)");
    }
    auto one = acl_object("data[" + std::to_string(out.size()) + "]", e);
    if (!one.ok()) return one.error();
    out.push_back(std::move(one).value());
  }
  if (out.empty()) return unprocessable("data must hold at least one ACL");
  return out;
}

namespace {

/// One configs:alter list, `field` its path ("data", "data[0].configs"): elements
/// {"name", "value", "operation": "SET" (the default) | "DELETE"}, a value required for SET.
/// Later elements of the same name win (as in Confluent's map of commands).
parsed<std::map<std::string, std::optional<std::string>>> parse_config_changes(const std::string& field, dom::element list) {
  if (list.type() != dom::element_type::ARRAY) return wrong_type(field, "an array", list);
  std::map<std::string, std::optional<std::string>> changes;
  size_t i = 0;
  dom::array items = list.get_array().value_unsafe();
  for (dom::element c : items) {
    const std::string cf = field + "[" + std::to_string(i++) + "]";
    auto co = object_with(cf, c, {"name", "value", "operation"});
    if (!co.ok()) return co.error();
    dom::element n, v, op;
    if (co->at_key("name").get(n) != simdjson::SUCCESS) return unprocessable(cf + ".name is required");
    auto ns = string_field(cf + ".name", n);
    if (!ns.ok()) return ns.error();
    std::string operation = "SET";
    if (co->at_key("operation").get(op) == simdjson::SUCCESS) {
      auto s = string_field(cf + ".operation", op);
      if (!s.ok()) return s.error();
      operation = std::string(*s);
      if (operation != "SET" && operation != "DELETE") {
        return unprocessable(cf + ".operation must be SET or DELETE, got \"" + operation + "\"");
      }
    }
    if (operation == "DELETE") {
      changes[std::string(*ns)] = std::nullopt;
      continue;
    }
    if (co->at_key("value").get(v) != simdjson::SUCCESS || v.type() == dom::element_type::NULL_VALUE) {
      return unprocessable(cf + ".value is required for operation SET");
    }
    auto vs = string_field(cf + ".value", v);
    if (!vs.ok()) return vs.error();
    changes[std::string(*ns)] = std::string(*vs);
  }
  return changes;
}

/// topics/-/configs:alter's data (Confluent's AlterMultipleTopicsConfigsBatchRequestData):
/// [{"topic_name", "configs": [config changes]}]. A topic named twice keeps its last element's
/// changes (Confluent's map of commands by topic).
parsed<std::map<std::string, std::map<std::string, std::optional<std::string>>>> parse_topic_config_changes(
    dom::element data) {
  if (data.type() != dom::element_type::ARRAY) return wrong_type("data", "an array", data);
  std::map<std::string, std::map<std::string, std::optional<std::string>>> by_topic;
  size_t i = 0;
  dom::array items = data.get_array().value_unsafe();
  for (dom::element t : items) {
    const std::string tf = "data[" + std::to_string(i++) + "]";
    dom::element name, configs;
    if (t.type() == dom::element_type::OBJECT && t.at_key("name").get(name) == simdjson::SUCCESS) {
      // The flat shape ringlog took before: say which shape this route takes.
      return unprocessable(tf + " has the field \"name\": each element is {\"topic_name\", \"configs\": "
                                "[{\"name\", \"value\", \"operation\"}]} (Confluent's AlterMultipleTopicsConfigs)");
    }
    auto to = object_with(tf, t, {"topic_name", "configs"});
    if (!to.ok()) return to.error();
    if (to->at_key("topic_name").get(name) != simdjson::SUCCESS) return missing_field(tf + ".topic_name");
    auto ts = string_field(tf + ".topic_name", name);
    if (!ts.ok()) return ts.error();
    if (to->at_key("configs").get(configs) != simdjson::SUCCESS) return missing_field(tf + ".configs");
    auto changes = parse_config_changes(tf + ".configs", configs);
    if (!changes.ok()) return changes.error();
    by_topic[std::string(*ts)] = std::move(changes).value();
  }
  return by_topic;
}

}  // namespace

parsed<alter_configs_request> parse_alter_configs(std::string_view body, bool with_topic_names) {
  if (is_blank(body)) {
    return empty_body_error(with_topic_names ? "{\"data\": [{\"topic_name\", \"configs\": [{\"name\", \"value\"}]}]}"
                                             : "{\"data\": [{\"name\", \"value\"}]}");
  }
  dom::parser parser;
  simdjson::padded_string padded(body);
  dom::element doc;
  if (auto err = parser.parse(padded).get(doc); err) return malformed(err, std::string_view(padded));
  auto o = object_with("", doc, {"data", "validate_only"});
  if (!o.ok()) return o.error();
  alter_configs_request out;
  dom::element vo;
  if (o->at_key("validate_only").get(vo) == simdjson::SUCCESS) {
    auto b = bool_field("validate_only", vo);
    if (!b.ok()) return b.error();
    out.validate_only = *b;
  }
  dom::element data;
  if (o->at_key("data").get(data) != simdjson::SUCCESS) return unprocessable("data is required");
  if (with_topic_names) {
    auto by_topic = parse_topic_config_changes(data);
    if (!by_topic.ok()) return by_topic.error();
    out.by_topic = std::move(by_topic).value();
    return out;
  }
  auto changes = parse_config_changes("data", data);
  if (!changes.ok()) return changes.error();
  out.changes = std::move(changes).value();
  return out;
}

}  // namespace ringlog::gateway
