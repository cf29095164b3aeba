#include "consumer_parsing.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <type_traits>
#include <limits>
#include <string>

#include "http_util.h"
#include "json_dom.h"
#include "ringlog/group/limits.h"

namespace ringlog::gateway {
namespace {

using namespace json_dom;

/// The parsed document of a consumer or group body; null for a blank body.
struct body_doc {
  simdjson::padded_string padded;
  dom::element root;
};

/// Parses `body` with the thread's parser into `doc` (which keeps the text alive while `parser`
/// is not reused). A blank body is null; anything but an object or null is refused.
parsed<std::optional<dom::object>> object_body(dom::parser& parser, std::string_view body, body_doc& doc) {
  if (is_blank(body)) return std::optional<dom::object>{};
  doc.padded = simdjson::padded_string(body);
  if (auto err = parser.parse(doc.padded).get(doc.root); err) return malformed(err, std::string_view(doc.padded));
  if (doc.root.type() == dom::element_type::NULL_VALUE) return std::optional<dom::object>{};
  if (doc.root.type() != dom::element_type::OBJECT) return wrong_type("", "a JSON object", doc.root);
  return std::optional<dom::object>(doc.root.get_object().value_unsafe());
}

std::optional<dom::element> field_of(const std::optional<dom::object>& o, std::string_view name) {
  if (!o) return std::nullopt;
  dom::element e;
  if (o->at_key(name).get(e) != simdjson::SUCCESS) return std::nullopt;
  return e;
}

/// A setting as text: a string as is, a number or boolean as its JSON text; null is absent.
std::optional<std::string> setting_text(const std::optional<dom::object>& o, std::string_view name) {
  auto e = field_of(o, name);
  if (!e || e->type() == dom::element_type::NULL_VALUE) return std::nullopt;
  if (e->type() == dom::element_type::STRING) return std::string(e->get_string().value_unsafe());
  return simdjson::minify(*e);
}

api_error bad_setting(std::string message) { return {422, ec::invalid_consumer_config, std::move(message)}; }

/// A topic name checked as topic creation checks it (Kafka's characters and length): 400
/// (40002) naming where, so an illegal name is never subscribed, committed or looked up.
std::optional<api_error> check_topic(const std::string& where, std::string_view topic) {
  auto valid = broker::validate_topic_name(topic);
  if (valid.ok()) return std::nullopt;
  return api_error{400, ec::kafka_bad_request, where + ": " + valid.error().message};
}

/// `item` as {"topic": string, "partition": int32 >= 0, ...} at `where`.
parsed<model::topic_partition> topic_partition_at(dom::element item, const std::string& where) {
  if (item.type() != dom::element_type::OBJECT) {
    return unprocessable(where + " must be an object {\"topic\", \"partition\", ...}, got " +
                         std::string(type_name(item.type())));
  }
  dom::element topic;
  dom::element partition;
  if (item.at_key("topic").get(topic) != simdjson::SUCCESS) return unprocessable(where + ".topic is required");
  if (item.at_key("partition").get(partition) != simdjson::SUCCESS) return unprocessable(where + ".partition is required");
  if (topic.type() != dom::element_type::STRING) return wrong_type(where + ".topic", "a string", topic);
  const bool integer = partition.type() == dom::element_type::INT64 || partition.type() == dom::element_type::UINT64;
  if (!integer || partition.type() == dom::element_type::UINT64 || partition.get_int64().value_unsafe() < 0 ||
      partition.get_int64().value_unsafe() > std::numeric_limits<int32_t>::max()) {
    return unprocessable(where + ".partition must be an integer in [0, 2147483647], got " +
                         (integer ? simdjson::minify(partition) : std::string(type_name(partition.type()))));
  }
  std::string name(topic.get_string().value_unsafe());
  if (auto bad = check_topic(where + ".topic", name)) return *bad;
  return model::topic_partition{std::move(name), model::partition_id(static_cast<int32_t>(partition.get_int64().value_unsafe()))};
}

/// The array under `field` of `o`, each element a topic-partition; absent: none.
parsed<std::vector<model::topic_partition>> partitions_of(const std::optional<dom::object>& o, std::string_view field) {
  std::vector<model::topic_partition> out;
  auto e = field_of(o, field);
  if (!e) return out;
  if (e->type() != dom::element_type::ARRAY) return wrong_type(field, "an array", *e);
  const dom::array elements_1 = e->get_array().value_unsafe();
  for (dom::element item : elements_1) {
    auto tp = topic_partition_at(item, std::string(field) + "[" + std::to_string(out.size()) + "]");
    if (!tp.ok()) return tp.error();
    out.push_back(std::move(tp).value());
  }
  return out;
}

/// A 64-bit signed integer element; nullopt for anything else (2^63 and up included).
std::optional<int64_t> int64_of(dom::element e) {
  if (e.type() != dom::element_type::INT64) return std::nullopt;
  return e.get_int64().value_unsafe();
}

}  // namespace

namespace {

/// The retry settings of an object body (see parse_retry_settings).
parsed<std::optional<delay::retry_policy>> retry_settings_of(const std::optional<dom::object>& o,
                                                             const delay::retry_policy& defaults) {
  delay::retry_policy p = defaults;
  bool any = false;
  auto int_of = [&](std::string_view key, auto& field) -> std::optional<api_error> {
    auto text = setting_text(o, key);
    if (!text) return std::nullopt;
    auto v = parse_int(*text, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (!v) return bad_setting(std::string(key) + " must be an integer, got " + *text);
    if (*v < std::numeric_limits<std::remove_reference_t<decltype(field)>>::min() ||
        *v > std::numeric_limits<std::remove_reference_t<decltype(field)>>::max()) {
      return bad_setting(std::string(key) + "=" + *text + ": out of range");
    }
    field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
    any = true;
    return std::nullopt;
  };
  if (auto e = int_of("max.delivery.attempts", p.max_delivery_attempts)) return *e;
  if (auto e = int_of("retry.backoff.ms", p.retry_backoff_ms)) return *e;
  if (auto e = int_of("retry.backoff.max.ms", p.retry_backoff_max_ms)) return *e;
  if (auto text = setting_text(o, "retry.backoff.multiplier")) {
    double x = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), x);
    if (text->empty() || ec != std::errc() || ptr != text->data() + text->size()) {
      return bad_setting("retry.backoff.multiplier must be a number, got " + *text);
    }
    p.retry_backoff_multiplier = x;
    any = true;
  }
  for (auto [key, field] : {std::pair{"retry.topic.template", &p.retry_topic_template},
                            std::pair{"dead.letter.topic.template", &p.dead_letter_topic_template}}) {
    auto e = field_of(o, key);
    if (!e || e->type() == dom::element_type::NULL_VALUE) continue;   // null is absent
    if (e->type() != dom::element_type::STRING) return bad_setting(std::string(key) + " must be a string");
    *field = std::string(e->get_string().value_unsafe());
    any = true;
  }
  if (!any) return std::optional<delay::retry_policy>{};
  if (auto v = delay::validate(p); !v.ok()) return bad_setting(v.error().message);
  return std::optional<delay::retry_policy>(p);
}

}  // namespace

parsed<std::optional<delay::retry_policy>> parse_retry_settings(std::string_view body, const delay::retry_policy& defaults) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  return retry_settings_of(*o, defaults);
}

parsed<std::vector<broker::nack_request>> parse_nacks(std::string_view body) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  auto items = field_of(*o, "offsets");
  if (!items) return unprocessable("offsets is required: [{\"topic\", \"partition\", \"offset\", \"reason\"}]");
  if (items->type() != dom::element_type::ARRAY) return wrong_type("offsets", "an array", *items);
  std::vector<broker::nack_request> out;
  const dom::array elements = items->get_array().value_unsafe();
  for (dom::element item : elements) {
    const std::string where = "offsets[" + std::to_string(out.size()) + "]";
    auto tp = topic_partition_at(item, where);
    if (!tp.ok()) return tp.error();
    dom::element offset;
    if (item.at_key("offset").get(offset) != simdjson::SUCCESS) return unprocessable(where + ".offset is required");
    auto n = int64_of(offset);
    if (!n || *n < 0) {
      return unprocessable(where + ".offset must be an integer >= 0 (a 64-bit JSON number), got " +
                           (n ? std::to_string(*n) : std::string(type_name(offset.type()))));
    }
    broker::nack_request r;
    r.partition = std::move(tp).value();
    r.offset = model::offset(*n);
    dom::element reason;
    if (item.at_key("reason").get(reason) == simdjson::SUCCESS && reason.type() != dom::element_type::NULL_VALUE) {
      if (reason.type() != dom::element_type::STRING) return wrong_type(where + ".reason", "a string", reason);
      r.reason = std::string(reason.get_string().value_unsafe());
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return unprocessable("offsets must name at least one record");
  return out;
}

parsed<broker::consumer_instance_config> parse_create_consumer(std::string_view body, int64_t request_timeout_max_ms,
                                                               const delay::retry_policy& retry_defaults) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  broker::consumer_instance_config cfg;
  static constexpr std::array<std::string_view, 17> settings = {
      "name", "format", "auto.offset.reset", "auto.commit.enable", "group.instance.id", "partition.assignment.strategy",
      "fetch.min.bytes", "consumer.request.timeout.ms", "consumer.instance.timeout.ms", "session.timeout.ms",
      "isolation.level", "max.delivery.attempts", "retry.backoff.ms", "retry.backoff.multiplier", "retry.backoff.max.ms",
      "retry.topic.template", "dead.letter.topic.template"};
  if (*o) {
    for (auto [key, unused] : **o) {
      if (std::find(settings.begin(), settings.end(), key) != settings.end()) continue;
      std::string known;
      for (auto k : settings) known += (known.empty() ? "" : ", ") + std::string(k);
      return bad_setting("unknown consumer setting \"" + std::string(key) + "\"; the settings are " + known);
    }
  }
  if (auto name = setting_text(*o, "name")) {
    if (name->empty() || name->size() > 200) return bad_setting("name must be 1..200 characters");
    cfg.name = *name;
  }
  if (auto format = setting_text(*o, "format")) {
    // Any case, as Confluent's ConsumerInstanceConfig reads it (EmbeddedFormat of its upper case).
    std::string lower = *format;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (lower == "binary") cfg.format = broker::consumer_format::binary;
    else if (lower == "json") cfg.format = broker::consumer_format::json;
    else return bad_setting("format must be binary or json, got \"" + *format + "\"");
  }
  if (auto reset = setting_text(*o, "auto.offset.reset")) {
    if (*reset == "earliest" || *reset == "smallest") cfg.auto_offset_reset = group::offset_reset::earliest;
    else if (*reset == "latest" || *reset == "largest") cfg.auto_offset_reset = group::offset_reset::latest;
    else if (*reset == "none") cfg.auto_offset_reset = group::offset_reset::none;
    else return bad_setting("auto.offset.reset must be earliest, latest or none (smallest and largest are read as earliest and latest), got \"" + *reset + "\"");
  }
  if (auto isolation = setting_text(*o, "isolation.level")) {
    // Kafka's consumer setting (KIP-98); read_uncommitted stays the default, as in Kafka.
    if (*isolation == "read_committed") cfg.read_committed = true;
    else if (*isolation == "read_uncommitted") cfg.read_committed = false;
    else return bad_setting("isolation.level must be read_uncommitted or read_committed, got \"" + *isolation + "\"");
  }
  if (auto commit = setting_text(*o, "auto.commit.enable")) {
    if (*commit == "true") cfg.auto_commit_enable = true;
    else if (*commit == "false") cfg.auto_commit_enable = false;
    else return bad_setting("auto.commit.enable must be true or false, got \"" + *commit + "\"");
  }
  if (auto instance = setting_text(*o, "group.instance.id")) {
    if (instance->empty() || instance->size() > 249) return bad_setting("group.instance.id must be 1..249 characters");
    cfg.group_instance_id = *instance;
  }
  if (auto strategy = setting_text(*o, "partition.assignment.strategy")) {
    // Kafka's class names are accepted too, for configs copied from Java clients.
    if (*strategy == "range" || *strategy == "org.apache.kafka.clients.consumer.RangeAssignor") {
      cfg.assignor = group::assignor_kind::range;
    } else if (*strategy == "roundrobin" || *strategy == "org.apache.kafka.clients.consumer.RoundRobinAssignor") {
      cfg.assignor = group::assignor_kind::round_robin;
    } else if (*strategy == "cooperative-sticky" ||
               *strategy == "org.apache.kafka.clients.consumer.CooperativeStickyAssignor") {
      cfg.assignor = group::assignor_kind::cooperative_sticky;
    } else {
      return bad_setting("partition.assignment.strategy must be range, roundrobin or cooperative-sticky, got \"" +
                         *strategy + "\"");
    }
  }
  auto int_setting = [&](std::string_view name, int64_t min, int64_t max) -> parsed<std::optional<int64_t>> {
    auto text = setting_text(*o, name);
    if (!text) return std::optional<int64_t>{};
    auto v = parse_int(*text, min, max);
    if (!v) {
      return bad_setting(std::string(name) + " must be an integer in [" + std::to_string(min) + ", " +
                         std::to_string(max) + "], got " + *text);
    }
    return std::optional<int64_t>(*v);
  };
  // 0 is accepted as Kafka's consumer accepts it (ConfigDef atLeast(0)): it acts as 1 (a poll waits for a first record).
  auto min_bytes = int_setting("fetch.min.bytes", 0, std::numeric_limits<int32_t>::max());
  if (!min_bytes.ok()) return min_bytes.error();
  if (*min_bytes) cfg.fetch_min_bytes = static_cast<int32_t>(**min_bytes);
  auto request_timeout = int_setting("consumer.request.timeout.ms", 0, request_timeout_max_ms);
  if (!request_timeout.ok()) return request_timeout.error();
  if (*request_timeout) cfg.request_timeout_ms = **request_timeout;
  for (const char* key : {"consumer.instance.timeout.ms", "session.timeout.ms"}) {
    auto timeout = int_setting(key, group::limits::session_timeout_ms_min, group::limits::session_timeout_ms_max);
    if (!timeout.ok()) return timeout.error();
    if (*timeout) cfg.session_timeout_ms = **timeout;
  }
  auto retry = retry_settings_of(*o, retry_defaults);
  if (!retry.ok()) return retry.error();
  cfg.retry = *retry;
  return cfg;
}

parsed<group::subscription> parse_subscription(std::string_view body) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  auto topics = field_of(*o, "topics");
  auto pattern = field_of(*o, "topic_pattern");
  if (topics && pattern) {
    return api_error{409, ec::illegal_state, "subscription to topics and to a pattern are mutually exclusive"};
  }
  group::subscription sub;
  if (topics) {
    const std::string must = "topics must be a non-empty array of strings";
    if (topics->type() != dom::element_type::ARRAY) return unprocessable(must + ", got " + std::string(type_name(topics->type())));
    sub.kind = group::subscription_kind::topics;
    const dom::array elements_2 = topics->get_array().value_unsafe();
    for (dom::element t : elements_2) {
      const std::string where = "topics[" + std::to_string(sub.topics.size()) + "]";
      if (t.type() != dom::element_type::STRING) {
        return unprocessable(must + "; " + where + " is " + std::string(type_name(t.type())));
      }
      std::string name(t.get_string().value_unsafe());
      if (auto bad = check_topic(where, name)) return *bad;
      sub.topics.push_back(std::move(name));
    }
    if (sub.topics.empty()) return unprocessable(must + ", got []");
    return sub;
  }
  if (pattern) {
    if (pattern->type() != dom::element_type::STRING) return wrong_type("topic_pattern", "a string", *pattern);
    sub.kind = group::subscription_kind::pattern;
    sub.pattern = std::string(pattern->get_string().value_unsafe());
    return sub;
  }
  return unprocessable("a list of topics or a topic_pattern is required");
}

parsed<std::vector<model::topic_partition>> parse_partitions(std::string_view body) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  return partitions_of(*o, "partitions");
}

parsed<std::vector<broker::seek_request>> parse_seek(std::string_view body) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  if (!field_of(*o, "offsets") && !field_of(*o, "timestamps")) {
    return unprocessable("offsets (an array of {topic, partition, offset}) or timestamps (an array of {topic, "
                         "partition, timestamp}) is required");
  }
  std::vector<broker::seek_request> seeks;
  for (std::string_view field : {"offsets", "timestamps"}) {
    auto items = field_of(*o, field);
    if (!items) continue;
    if (items->type() != dom::element_type::ARRAY) return wrong_type(field, "an array", *items);
    const bool by_time = field == "timestamps";
    size_t i = 0;
    const dom::array elements_3 = items->get_array().value_unsafe();
    for (dom::element item : elements_3) {
      const std::string where = std::string(field) + "[" + std::to_string(i++) + "]";
      auto tp = topic_partition_at(item, where);
      if (!tp.ok()) return tp.error();
      broker::seek_request s;
      s.partition = std::move(tp).value();
      dom::element offset;
      dom::element timestamp;
      const bool has_offset = item.at_key("offset").get(offset) == simdjson::SUCCESS;
      const bool has_timestamp = item.at_key("timestamp").get(timestamp) == simdjson::SUCCESS;
      if (!by_time && has_offset && int64_of(offset)) {
        s.kind = broker::seek_kind::offset;
        s.value = *int64_of(offset);
      } else if (has_timestamp) {
        s.kind = broker::seek_kind::timestamp;
        if (auto ms = int64_of(timestamp)) {
          s.value = *ms;
        } else if (auto iso = timestamp.type() == dom::element_type::STRING
                                  ? parse_iso8601_ms(timestamp.get_string().value_unsafe())
                                  : std::nullopt) {
          s.value = *iso;
        } else {
          return unprocessable(where + ".timestamp must be an ISO-8601 date-time or ms since the epoch, got " +
                               std::string(type_name(timestamp.type())));
        }
      } else if (by_time) {
        return unprocessable(where + ".timestamp is required");
      } else {
        return unprocessable(where + " needs an integer offset (a 64-bit JSON number) or a timestamp" +
                             (has_offset ? ", got offset as " + std::string(type_name(offset.type())) : std::string()));
      }
      seeks.push_back(std::move(s));
    }
  }
  return seeks;
}

parsed<std::optional<std::vector<group::processed_offset>>> parse_commit(std::string_view body) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  auto items = field_of(*o, "offsets");
  if (!items) return std::optional<std::vector<group::processed_offset>>{};
  if (items->type() != dom::element_type::ARRAY) return wrong_type("offsets", "an array", *items);
  std::vector<group::processed_offset> out;
  const dom::array elements_4 = items->get_array().value_unsafe();
  for (dom::element item : elements_4) {
    const std::string where = "offsets[" + std::to_string(out.size()) + "]";
    auto tp = topic_partition_at(item, where);
    if (!tp.ok()) return tp.error();
    dom::element offset;
    if (item.at_key("offset").get(offset) != simdjson::SUCCESS) return unprocessable(where + ".offset is required");
    auto n = int64_of(offset);
    if (!n) {
      return unprocessable(where + ".offset must be an integer (a 64-bit JSON number), got " +
                           std::string(type_name(offset.type())));
    }
    group::processed_offset p;
    p.partition = std::move(tp).value();
    p.last_processed = model::offset(*n);
    dom::element metadata;
    if (item.at_key("metadata").get(metadata) == simdjson::SUCCESS && metadata.type() != dom::element_type::NULL_VALUE) {
      if (metadata.type() != dom::element_type::STRING) return wrong_type(where + ".metadata", "a string", metadata);
      p.metadata = std::string(metadata.get_string().value_unsafe());
    }
    out.push_back(std::move(p));
  }
  // {"offsets": []}: everything returned, like an empty body.
  if (out.empty()) return std::optional<std::vector<group::processed_offset>>{};
  return std::optional<std::vector<group::processed_offset>>(std::move(out));
}

namespace {

/// One entry of a reset's "topics" into `req`: "T" (every partition of T) or Kafka's
/// kafka-consumer-groups form "T:0,1,2" (only those partitions; a topic name never holds ':').
/// Every malformed entry is 422 naming `where` and the entry, as every other invalid value of
/// this body: a topic that is not a legal name (":0" names none; it was 400 while a bad partition
/// list was 422) or a partition list that is not comma-separated integers >= 0.
std::optional<api_error> add_reset_topic(std::string_view entry, const std::string& where,
                                         broker::reset_offsets_request& req) {
  const size_t colon = entry.find(':');
  const std::string topic(entry.substr(0, colon));
  if (auto valid = broker::validate_topic_name(topic); !valid.ok()) {
    return unprocessable(where + " \"" + std::string(entry) + "\": " + valid.error().message);
  }
  if (colon == std::string_view::npos) {
    req.topics.push_back(topic);
    return std::nullopt;
  }
  std::string_view list = entry.substr(colon + 1);
  const auto refuse = [&] {
    return unprocessable(where + " \"" + std::string(entry) + "\": after the topic's ':' come its partitions, "
                         "comma-separated integers in [0, 2147483647] (e.g. orders:0,1,2)");
  };
  if (list.empty()) return refuse();
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    auto p = parse_int(list.substr(start, comma - start), 0, std::numeric_limits<int32_t>::max());
    if (!p) return refuse();
    req.partitions.push_back({topic, model::partition_id(static_cast<int32_t>(*p))});
    start = comma + 1;
  }
  return std::nullopt;
}

}  // namespace

parsed<broker::reset_offsets_request> parse_reset_offsets(std::string_view body) {
  parser_lease parser;
  body_doc doc;
  auto o = object_body(*parser, body, doc);
  if (!o.ok()) return o.error();
  if (!*o) return unprocessable("a body with \"to\" is required");
  broker::reset_offsets_request req;
  const std::string to = setting_text(*o, "to").value_or("");
  auto value_of = [&](std::string_view name) -> std::optional<int64_t> {
    auto e = field_of(*o, name);
    return e ? int64_of(*e) : std::nullopt;
  };
  if (to == "earliest") {
    req.spec.kind = group::reset_kind::to_earliest;
  } else if (to == "latest") {
    req.spec.kind = group::reset_kind::to_latest;
  } else if (to == "offset" || to == "shift") {
    auto v = value_of("value");
    if (!v) return unprocessable("value (a 64-bit integer) is required with to=" + to);
    req.spec.kind = to == "offset" ? group::reset_kind::to_offset : group::reset_kind::shift_by;
    req.spec.value = *v;
  } else if (to == "timestamp") {
    req.spec.kind = group::reset_kind::to_timestamp;
    auto text = setting_text(*o, "timestamp");
    if (auto ms = value_of("timestamp")) {
      req.timestamp_ms = *ms;
    } else if (auto iso = text ? parse_iso8601_ms(*text) : std::nullopt) {
      req.timestamp_ms = *iso;
    } else {
      return unprocessable("timestamp (ms since the epoch or ISO-8601) is required with to=timestamp");
    }
  } else {
    return unprocessable("to must be earliest, latest, timestamp, offset or shift");
  }
  if (auto topics = field_of(*o, "topics")) {
    if (topics->type() != dom::element_type::ARRAY) return unprocessable("topics must be an array of strings");
    const dom::array elements_5 = topics->get_array().value_unsafe();
    size_t i = 0;
    for (dom::element t : elements_5) {
      if (t.type() != dom::element_type::STRING) return unprocessable("topics must be an array of strings");
      if (auto bad = add_reset_topic(t.get_string().value_unsafe(), "topics[" + std::to_string(i++) + "]", req)) {
        return *bad;
      }
    }
  }
  req.mode = group::dry_run::yes;
  if (auto dry = field_of(*o, "dry_run")) {
    if (dry->type() != dom::element_type::BOOL) return wrong_type("dry_run", "a boolean", *dry);
    if (!dry->get_bool().value_unsafe()) req.mode = group::dry_run::no;
  }
  return req;
}

}  // namespace ringlog::gateway
