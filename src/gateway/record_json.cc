#include "record_json.h"

#include <nlohmann/json.hpp>

#include "base64.h"

namespace ringlog::gateway {

namespace {
using json = nlohmann::json;
std::string json_string(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}
}  // namespace

bool append_payload(std::string& out, const std::optional<model::bytes>& bytes, bool as_json, non_json_payload non_json) {
  if (!bytes) {
    out += "null";
    return true;
  }
  if (!as_json) {
    out += '"';
    base64_encode_append(out, *bytes);
    out += '"';
    return true;
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  if (json::accept(text)) {
    out += text;
    return true;
  }
  if (non_json == non_json_payload::refuse) return false;
  out += json_string(text);
  return true;
}

bool append_record_json(std::string& out, std::string_view prefix, std::string_view topic_json_text, int32_t partition,
                        const model::record& rec, bool as_json, non_json_payload non_json) {
  out += '{';
  out += prefix;
  out += "\"topic\":";
  out += topic_json_text;
  out += ",\"partition\":";
  out += std::to_string(partition);
  out += ",\"offset\":";
  out += std::to_string(rec.record_offset.value());
  out += ",\"timestamp\":";
  out += std::to_string(rec.timestamp);
  out += ",\"key\":";
  bool ok = append_payload(out, rec.key, as_json, non_json);
  out += ",\"value\":";
  ok = append_payload(out, rec.value, as_json, non_json) && ok;
  out += ",\"headers\":[";
  for (size_t h = 0; h < rec.headers.size(); ++h) {
    if (h > 0) out += ',';
    out += "{\"key\":";
    out += json_string(rec.headers[h].key);
    out += ",\"value\":";
    append_payload(out, rec.headers[h].value, false);
    out += '}';
  }
  out += "]}";
  return ok;
}

namespace {
bool not_json(const std::optional<model::bytes>& b) {
  return b && !json::accept(std::string_view(reinterpret_cast<const char*>(b->data()), b->size()));
}
}  // namespace

bool json_readable(const model::record& rec) { return !not_json(rec.key) && !not_json(rec.value); }

std::string not_json_message(std::string_view topic, int32_t partition, const model::record& rec) {
  const bool key = not_json(rec.key), value = not_json(rec.value);
  const std::string part = key && value ? "the key and the value" : key ? "the key" : "the value";
  return part + " of the record at offset " + std::to_string(rec.record_offset.value()) + " of " + std::string(topic) + "-" +
         std::to_string(partition) + (key && value ? " are" : " is") +
         " not JSON";
}

size_t record_json_bytes_estimate(const model::record& rec, size_t topic_json_bytes) {
  size_t payload = (rec.key ? rec.key->size() : 0) + (rec.value ? rec.value->size() : 0);
  for (const auto& h : rec.headers) payload += h.key.size() + 24 + (h.value ? h.value->size() : 0);
  return 112 + topic_json_bytes + payload / 3 * 4 + 8;
}

}  // namespace ringlog::gateway
