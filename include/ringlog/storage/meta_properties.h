#pragma once
// meta.properties: what a data directory belongs to (Kafka's MetaProperties, KIP-631). Text in
// java.util.Properties form, written with io::write_file_atomic:
//   # comment lines
//   version=1
//   cluster.id=<cluster.id>
//   node.id=<node.id>
// A node refuses to start on a directory that names another cluster or another node: such a
// directory holds another node's replicas, and serving them under this node's id would make the
// quorum count the same copy twice.

#include <cstdint>
#include <optional>
#include <string>

#include "ringlog/io/file.h"
#include "ringlog/storage/errc.h"

namespace ringlog::storage {

struct meta_properties {
  int32_t version = 1;
  std::string cluster_id;
  int32_t node_id = 0;
  bool operator==(const meta_properties&) const = default;
};

inline constexpr const char* meta_properties_file = "meta.properties";

/// The file in `directory`, or nullopt when there is none. Errors: kafka_storage_error when it
/// cannot be read, invalid_config when it is not a valid meta.properties (names the line or key).
result<std::optional<meta_properties>> read_meta_properties(io::file_system& fs, const std::string& directory);
/// Writes (replaces) the file in `directory` atomically and durably.
result<void> write_meta_properties(io::file_system& fs, const std::string& directory, const meta_properties& meta);
/// Start-up check: writes the file when missing (a new directory, or one from a ringlog before
/// clusters, which is adopted as is); when present, refuses with invalid_config naming both
/// values if its cluster.id or node.id differs from the settings.
result<void> check_meta_properties(io::file_system& fs, const std::string& directory, const std::string& cluster_id,
                                   int32_t node_id);

}  // namespace ringlog::storage
