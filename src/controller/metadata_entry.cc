#include "ringlog/controller/metadata_entry.h"

#include <variant>

#include "ringlog/base/assert.h"

namespace ringlog::controller {

std::string_view record_name(const protocol::metadata_record& record) {
  return std::visit([](const auto& r) { return std::decay_t<decltype(r)>::schema_name; }, record);
}

std::vector<std::byte> encode_metadata_entry(std::span<const protocol::metadata_record> records) {
  RINGLOG_ASSERT(!records.empty() && records.size() <= metadata_entry_records_max, "entry record count in range");
  protocol::writer out;
  out.write_unsigned_varint(static_cast<uint32_t>(records.size()));
  for (const auto& record : records) {
    protocol::writer frame;
    const int16_t version =
        std::visit([](const auto& r) { return std::decay_t<decltype(r)>::highest_supported_version; }, record);
    auto encoded = protocol::encode_metadata_record(frame, record, version);
    RINGLOG_ASSERT(encoded.ok(), "a metadata record built by ringlog encodes at its highest version");
    auto bytes = std::move(frame).take();
    out.write_unsigned_varint(static_cast<uint32_t>(bytes.size()));
    out.write_raw(bytes);
  }
  return std::move(out).take();
}

result<std::vector<protocol::metadata_record>> decode_metadata_entry(std::span<const std::byte> value) {
  protocol::reader in(value);
  auto count = in.read_unsigned_varint();
  if (!count.ok()) return error{errc::invalid_record, "metadata entry: record count: " + count.error().message};
  if (*count == 0 || *count > metadata_entry_records_max) {
    return error{errc::invalid_record, "metadata entry: record count " + std::to_string(*count) + " is outside [1, " +
                                           std::to_string(metadata_entry_records_max) + "]"};
  }
  std::vector<protocol::metadata_record> out;
  for (uint32_t i = 0; i < *count; ++i) {
    const std::string where = "metadata entry: record " + std::to_string(i) + " of " + std::to_string(*count) + ": ";
    auto length = in.read_unsigned_varint();
    if (!length.ok()) return error{errc::invalid_record, where + "length: " + length.error().message};
    auto frame = in.read_raw(*length);
    if (!frame.ok()) return error{errc::invalid_record, where + frame.error().message};
    auto record = protocol::decode_metadata_record(*frame);
    if (!record.ok()) return error{errc::invalid_record, where + record.error().message};
    out.push_back(std::move(record->record));
  }
  if (in.remaining() != 0) {
    return error{errc::invalid_record, "metadata entry: " + std::to_string(in.remaining()) + " bytes after the last record"};
  }
  return out;
}

}  // namespace ringlog::controller
