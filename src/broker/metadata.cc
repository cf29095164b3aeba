#include "metadata.h"

#include <charconv>
#include <sstream>

namespace ringlog::broker {
namespace {

std::string to_text(const std::optional<model::bytes>& b) { return b ? model::to_string(*b) : std::string{}; }

template <typename T>
result<T> parse_int(const std::map<std::string, std::string>& fields, const std::string& name) {
  auto it = fields.find(name);
  if (it == fields.end()) return error{errc::invalid_request, "metadata record lacks field '" + name + "'"};
  T v{};
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc{} || p != it->second.data() + it->second.size()) {
    return error{errc::invalid_request, "metadata record field '" + name + "' is not a number: " + it->second};
  }
  return v;
}

}  // namespace

model::record encode_topic_upsert(const topic_record& t) {
  std::string text = "name=" + t.name + "\ntopic_id=" + t.topic_id + "\npartitions=" + std::to_string(t.partitions_count) +
                     "\nreplication_factor=" + std::to_string(t.replication_factor) +
                     "\nleader_epoch=" + std::to_string(t.leader_epoch) + "\n";
  for (const auto& [k, v] : t.configs) text += "config." + k + "=" + v + "\n";
  model::record r;
  r.key = model::to_bytes("topic");
  r.value = model::to_bytes(text);
  return r;
}

model::record encode_topic_removal(const std::string& name, const std::string& topic_id) {
  model::record r;
  r.key = model::to_bytes("remove_topic");
  r.value = model::to_bytes("name=" + name + "\ntopic_id=" + topic_id + "\n");
  return r;
}

result<metadata_change> decode_metadata_record(const model::record& record) {
  const std::string type = to_text(record.key);
  std::map<std::string, std::string> fields;
  std::istringstream in(to_text(record.value));
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) return error{errc::invalid_request, "metadata record line without '=': " + line};
    fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  metadata_change change;
  if (type == "remove_topic") {
    change.removed_topic = fields["name"];
    return change;
  }
  if (type != "topic") return error{errc::invalid_request, "unknown metadata record type '" + type + "'"};
  topic_record t;
  t.name = fields["name"];
  t.topic_id = fields["topic_id"];
  auto partitions = parse_int<int32_t>(fields, "partitions");
  if (!partitions.ok()) return partitions.error();
  auto rf = parse_int<int16_t>(fields, "replication_factor");
  if (!rf.ok()) return rf.error();
  auto epoch = parse_int<int32_t>(fields, "leader_epoch");
  if (!epoch.ok()) return epoch.error();
  t.partitions_count = partitions.value();
  t.replication_factor = rf.value();
  t.leader_epoch = epoch.value();
  for (const auto& [k, v] : fields) {
    if (k.starts_with("config.")) t.configs[k.substr(7)] = v;
  }
  change.upsert = std::move(t);
  return change;
}

}  // namespace ringlog::broker
