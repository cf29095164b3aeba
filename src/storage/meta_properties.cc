#include "ringlog/storage/meta_properties.h"

#include <charconv>
#include <limits>
#include <span>
#include <string_view>

namespace ringlog::storage {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

result<std::optional<meta_properties>> read_meta_properties(io::file_system& fs, const std::string& directory) {
  const std::string path = directory + "/" + meta_properties_file;
  if (!fs.exists(path)) return std::optional<meta_properties>{};
  auto bytes = io::read_whole_file(fs, path);
  if (!bytes.ok()) return error{errc::kafka_storage_error, path + ": " + bytes.error().message};
  std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  meta_properties meta;
  bool have_cluster = false;
  bool have_node = false;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (line.empty() || line.front() == '#' || line.front() == '!') continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return error{errc::invalid_config, path + ":" + std::to_string(line_number) + ": \"" + std::string(line) + "\" is not key=value"};
    }
    std::string_view key = trim(line.substr(0, eq));
    std::string_view value = trim(line.substr(eq + 1));
    if (key == "cluster.id") {
      meta.cluster_id = std::string(value);
      have_cluster = true;
    } else if (key == "node.id" || key == "version") {
      auto v = parse_int(value);
      if (!v || *v < 0 || *v > std::numeric_limits<int32_t>::max()) {
        return error{errc::invalid_config, path + ": " + std::string(key) + "=" + std::string(value) +
                                               " is not an integer in [0, 2147483647]"};
      }
      (key == "version" ? meta.version : meta.node_id) = static_cast<int32_t>(*v);
      have_node = have_node || key == "node.id";
    }  // other keys (Kafka's directory.id, broker.id of v0) are kept by nothing here and ignored
  }
  if (meta.version != 1) {
    return error{errc::invalid_config, path + ": version=" + std::to_string(meta.version) + " is not supported (1)"};
  }
  if (!have_cluster || !have_node) {
    return error{errc::invalid_config, path + ": " + std::string(!have_cluster ? "cluster.id" : "node.id") + " is missing"};
  }
  return std::optional<meta_properties>{meta};
}

result<void> write_meta_properties(io::file_system& fs, const std::string& directory, const meta_properties& meta) {
  const std::string text = "#\n# Written by ringlog: the cluster and node this data directory belongs to.\n"
                           "version=" + std::to_string(meta.version) + "\ncluster.id=" + meta.cluster_id +
                           "\nnode.id=" + std::to_string(meta.node_id) + "\n";
  auto written = io::write_file_atomic(fs, directory + "/" + meta_properties_file,
                                       std::as_bytes(std::span(text.data(), text.size())));
  if (!written.ok()) return error{errc::kafka_storage_error, written.error().message};
  return base::ok_v;
}

result<void> check_meta_properties(io::file_system& fs, const std::string& directory, const std::string& cluster_id,
                                   int32_t node_id) {
  auto existing = read_meta_properties(fs, directory);
  if (!existing.ok()) return existing.error();
  if (!existing->has_value()) return write_meta_properties(fs, directory, {1, cluster_id, node_id});
  const meta_properties& meta = **existing;
  if (meta.cluster_id != cluster_id) {
    return error{errc::invalid_config, "the data directory " + directory + " belongs to cluster.id=" + meta.cluster_id +
                                           " (its meta.properties) but the settings say cluster.id=" + cluster_id};
  }
  if (meta.node_id != node_id) {
    return error{errc::invalid_config, "the data directory " + directory + " belongs to node.id=" +
                                           std::to_string(meta.node_id) + " (its meta.properties) but the settings say node.id=" +
                                           std::to_string(node_id)};
  }
  return base::ok_v;
}

}  // namespace ringlog::storage
