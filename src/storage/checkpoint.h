#pragma once
// Kafka's checkpoint text layout (OffsetCheckpointFile / LeaderEpochCheckpointFile):
//   line 1: version (0)
//   line 2: number of entries
//   then one entry per line: "<a> <b>" (topic partition offset, or epoch start_offset)
// Written with io::write_file_atomic; a missing file reads as "no entries".

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/io/file.h"
#include "ringlog/storage/errc.h"

namespace ringlog::storage {

using checkpoint_entries = std::vector<std::pair<std::string, int64_t>>;

/// The file's text for `entries` (the layout above).
std::string checkpoint_text(const checkpoint_entries& entries);
result<void> write_checkpoint(io::file_system& fs, const std::string& path, const checkpoint_entries& entries);
/// Errors: corrupt_checkpoint when the file exists but its text is not a valid checkpoint (names
/// the path and the line); kafka_storage_error when it cannot be read.
result<checkpoint_entries> read_checkpoint(io::file_system& fs, const std::string& path);

}  // namespace ringlog::storage
