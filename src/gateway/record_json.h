#pragma once
// One record as the JSON object every read path answers with: the REST v2 records routes
// (array, NDJSON, SSE, consumer instances) and WebSocket `record` messages (issue 3, issue 5):
// {"topic","partition","offset","timestamp","key","value","headers":[{"key","value"}]}, keys
// and values base64 (binary format) or embedded JSON (json format), header values base64.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ringlog/model/record.h"

namespace ringlog::gateway {

/// What the json format does with a key or value whose bytes are not JSON: the REST routes
/// refuse the read (406, the client should ask for binary); WebSocket sends it as a JSON string.
enum class non_json_payload : uint8_t { refuse, as_string };

/// Appends `bytes` (null when absent) as base64 text, or as embedded JSON when `as_json`.
/// False when as_json, the bytes are not JSON and `non_json` is refuse (nothing usable appended).
bool append_payload(std::string& out, const std::optional<model::bytes>& bytes, bool as_json,
                    non_json_payload non_json = non_json_payload::refuse);

/// Appends one record object. `prefix` is written right after the opening brace (for example
/// "\"type\":\"record\","); `topic_json_text` is the topic as a JSON string. False when a key or
/// value was refused (see append_payload); `out` then holds an unusable object.
bool append_record_json(std::string& out, std::string_view prefix, std::string_view topic_json_text,
                        int32_t partition, const model::record& rec, bool as_json,
                        non_json_payload non_json = non_json_payload::refuse);

/// True when `rec`'s key and value are each absent or JSON text: what the json format embeds
/// (append_record_json with non_json_payload::refuse takes it).
bool json_readable(const model::record& rec);

/// "the key of the record at offset N of TOPIC-P is not JSON" (or value, or key and value): why
/// append_record_json refused `rec` of `topic` partition `partition`, naming the part a JSON
/// reader cannot take and where it is.
std::string not_json_message(std::string_view topic, int32_t partition, const model::record& rec);

/// About how many bytes append_record_json writes for `rec` (base64 is 4/3 of the payload;
/// embedded JSON is shorter), to reserve answers up front instead of copying them as they grow.
size_t record_json_bytes_estimate(const model::record& rec, size_t topic_json_bytes);

}  // namespace ringlog::gateway
