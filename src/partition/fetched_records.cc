// decode_fetched_records (partition.h): a fetch's whole v2 batches -> the records a consumer
// is handed (read_for_fetch, the delay scheduler, a forwarded fetch's answer).

#include <optional>
#include <string>
#include <vector>

#include "ringlog/partition/constants.h"
#include "ringlog/partition/partition.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/txn_index.h"

namespace ringlog::partition {

result<size_t> decode_fetched_records(std::span<const std::byte> batches, model::offset fetch_offset,
                                      model::offset high_watermark, int32_t max_bytes, std::vector<model::record>& out,
                                      const std::vector<aborted_transaction>* aborted, model::offset* next_offset) {
  // max_bytes bounds the records handed out (key + value + header bytes), not only whole
  // batches: a large batch is cut after the record that passes the limit, and the first record
  // is always returned so a consumer is never stuck behind a record larger than max_bytes.
  size_t returned_bytes = 0;
  size_t decoded_bytes = 0;   // bounded by fetch_decoded_bytes_max (constants.h)
  size_t pos = 0;
  std::optional<storage::aborted_txn_filter> filter;
  if (aborted != nullptr) {
    std::vector<storage::aborted_txn_entry> entries;
    for (const auto& a : *aborted) entries.push_back({a.producer_id, a.first_offset, a.first_offset, a.first_offset});
    filter.emplace(std::move(entries));
  }
  // A batch that does not decode is stored corruption (the log's CRC check at recovery covers
  // only what was past the recovery point): the records before it are still answered, and a
  // read that starts at it fails naming where, as the server's fault (kafka_storage_error), not
  // the client's (the breaker of session 24: a 422 that named no offset, and no record before it).
  auto corrupt = [&](const std::string& why) -> result<size_t> {
    if (!out.empty()) {
      if (next_offset != nullptr) *next_offset = out.back().record_offset + 1;
      return returned_bytes;
    }
    return error{errc::kafka_storage_error, "the stored record batch at or after offset " + std::to_string(fetch_offset.value()) +
                                                " (byte " + std::to_string(pos) + " of the read) is corrupt: " + why};
  };
  while (pos < batches.size()) {
    auto header = codec::decode_header(batches.subspan(pos));
    if (!header.ok() || header->size_bytes() > batches.size() - pos) return corrupt("its header does not decode");
    bool keep = !header->is_control();
    if (filter) {
      std::optional<codec::control_type> marker;
      if (header->is_control() && header->producer.value() >= 0) {
        auto records = codec::decode_records(batches.subspan(pos, header->size_bytes()));
        if (!records.ok() || records->empty()) return error{errc::corrupt_message, "fetched control batch is unreadable"};
        auto m = codec::decode_control_record(records->front());
        if (!m.ok()) return error{errc::corrupt_message, m.error().message};
        marker = m->type;
      }
      keep = filter->keep(header.value(), marker);
    }
    if (keep) {
      auto records = codec::decode_records(batches.subspan(pos, header->size_bytes()));
      if (!records.ok()) return corrupt("batch at offset " + std::to_string(header->base_offset.value()) + ": " + records.error().message);
      for (auto& r : records.value()) {
        if (r.record_offset < fetch_offset || r.record_offset >= high_watermark) continue;
        size_t bytes = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
        for (const auto& h : r.headers) bytes += h.key.size() + (h.value ? h.value->size() : 0);
        const size_t decoded = bytes + recent_read_record_bytes + r.headers.size() * decoded_header_bytes;
        if (!out.empty() && (returned_bytes + bytes > static_cast<size_t>(max_bytes) ||
                             decoded_bytes + decoded > fetch_decoded_bytes_max)) {
          if (next_offset != nullptr) *next_offset = out.back().record_offset + 1;
          return returned_bytes;
        }
        returned_bytes += bytes;
        decoded_bytes += decoded;
        out.push_back(std::move(r));
      }
    }
    // Every record of this batch below the bound was returned or is not for this reader.
    if (next_offset != nullptr) {
      *next_offset = std::max(*next_offset, std::min(header->last_offset() + 1, high_watermark));
    }
    pos += header->size_bytes();
  }
  return returned_bytes;
}

}  // namespace ringlog::partition
