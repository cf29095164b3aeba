#pragma once
// A logical record as producers send it and consumers receive it (Kafka's ProducerRecord /
// ConsumerRecord). Keys and values are optional bytes: an absent key is not the same as an empty one.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/model/types.h"

namespace ringlog::model {

using bytes = std::vector<std::byte>;

struct record_header {
  std::string key;              // Kafka header keys are UTF-8 strings
  std::optional<bytes> value;   // null header values are legal in Kafka
  bool operator==(const record_header&) const = default;
};

struct record {
  offset record_offset{0};             // assigned by the log on append; decode fills it in
  timestamp_ms timestamp = no_timestamp;
  std::optional<bytes> key;
  std::optional<bytes> value;          // nullopt = tombstone
  std::vector<record_header> headers;
  bool operator==(const record&) const = default;
};

/// Compression codec in record batch attributes bits 0-2 (Kafka: 0 none, 1 gzip, 2 snappy,
/// 3 lz4, 4 zstd): all five are read and written (codec/compression.h).
enum class compression : uint8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

/// Timestamp type, attributes bit 3 (KIP-32): create time (0) or log append time (1).
enum class timestamp_type : uint8_t { create_time = 0, log_append_time = 1 };

inline bytes to_bytes(std::string_view s) {
  bytes b(s.size());
  for (size_t i = 0; i < s.size(); ++i) b[i] = static_cast<std::byte>(s[i]);
  return b;
}
inline std::string to_string(const bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace ringlog::model
