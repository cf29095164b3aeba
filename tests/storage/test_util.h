#pragma once
// Helpers shared by the storage tests: deterministic batches and temp directories.

#include <doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::test {

/// A batch of `count` records whose values encode (tag, index) so they can be checked later.
inline model::bytes make_batch(int count, int64_t tag, model::timestamp_ms timestamp,
                               model::compression compression = model::compression::none, size_t value_bytes = 16) {
  std::vector<model::record> records;
  for (int i = 0; i < count; ++i) {
    model::record r;
    r.timestamp = timestamp;
    r.key = model::to_bytes("k" + std::to_string(tag));
    std::string value = "v" + std::to_string(tag) + ":" + std::to_string(i) + ":";
    while (value.size() < value_bytes) value.push_back(static_cast<char>('a' + (value.size() % 26)));
    r.value = model::to_bytes(value);
    records.push_back(std::move(r));
  }
  codec::batch_options options;
  options.compression = compression;
  auto encoded = codec::encode_batch(options, records);
  REQUIRE(encoded.ok());
  return std::move(encoded.value());
}

/// Decodes every record of a read result, dropping those below `from`.
inline std::vector<model::record> records_of(const storage::read_result& r, model::offset from) {
  std::vector<model::record> out;
  size_t pos = 0;
  while (pos < r.batches.size()) {
    auto header = codec::decode_header(std::span(r.batches).subspan(pos));
    REQUIRE(header.ok());
    auto records = codec::decode_records(std::span(r.batches).subspan(pos, header->size_bytes()));
    REQUIRE(records.ok());
    for (auto& rec : records.value()) {
      if (rec.record_offset >= from) out.push_back(std::move(rec));
    }
    pos += header->size_bytes();
  }
  return out;
}

class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ringlog-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~temp_dir() { std::filesystem::remove_all(path_); }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ringlog::test
