#include "ringlog/storage/txn_index.h"

#include <algorithm>
#include <string>

#include "ringlog/base/assert.h"

namespace ringlog::storage {
namespace {

template <typename T>
void put(model::bytes& out, T v) {
  using U = std::make_unsigned_t<T>;
  const auto u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<std::byte>(u >> (8 * (sizeof(T) - 1 - i))));
}

template <typename T>
T get(std::span<const std::byte> in, size_t pos) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>((u << 8) | static_cast<U>(in[pos + i]));
  return static_cast<T>(u);
}

error corrupt(const std::string& why) { return error{errc::corrupt_txn_index, "transaction index: " + why}; }

}  // namespace

model::bytes encode_txn_index(std::span<const aborted_txn_entry> entries) {
  model::bytes out;
  out.reserve(entries.size() * txn_index_entry_bytes);
  for (const aborted_txn_entry& e : entries) {
    RINGLOG_ASSERT_OP(e.first_offset.value(), <=, e.last_offset.value());
    put<int16_t>(out, txn_index_version);
    put<int64_t>(out, e.producer_id.value());
    put<int64_t>(out, e.first_offset.value());
    put<int64_t>(out, e.last_offset.value());
    put<int64_t>(out, e.last_stable_offset.value());
  }
  RINGLOG_ASSERT_OP(out.size(), ==, entries.size() * txn_index_entry_bytes);
  return out;
}

result<std::vector<aborted_txn_entry>> decode_txn_index(std::span<const std::byte> in) {
  if (in.size() % txn_index_entry_bytes != 0) {
    return corrupt(std::to_string(in.size()) + " bytes is not a whole number of " +
                   std::to_string(txn_index_entry_bytes) + "-byte entries (cut short)");
  }
  std::vector<aborted_txn_entry> out;
  out.reserve(in.size() / txn_index_entry_bytes);
  for (size_t pos = 0; pos < in.size(); pos += txn_index_entry_bytes) {
    const std::string which = "entry " + std::to_string(pos / txn_index_entry_bytes);
    const auto version = get<int16_t>(in, pos);
    if (version != txn_index_version) {
      return corrupt(which + " has unknown version " + std::to_string(version) + " (this broker reads version " +
                     std::to_string(txn_index_version) + ")");
    }
    aborted_txn_entry e{model::producer_id{get<int64_t>(in, pos + 2)}, model::offset{get<int64_t>(in, pos + 10)},
                        model::offset{get<int64_t>(in, pos + 18)}, model::offset{get<int64_t>(in, pos + 26)}};
    if (e.producer_id.value() < 0 || e.first_offset.value() < 0 || e.last_stable_offset.value() < 0) {
      return corrupt(which + " has a negative producer id or offset");
    }
    if (e.first_offset > e.last_offset) {
      return corrupt(which + " has first_offset " + std::to_string(e.first_offset.value()) + " above last_offset " +
                     std::to_string(e.last_offset.value()));
    }
    if (!out.empty() && out.back().last_offset >= e.last_offset) {
      return corrupt(which + " has last_offset " + std::to_string(e.last_offset.value()) +
                     " not above the previous entry's " + std::to_string(out.back().last_offset.value()));
    }
    out.push_back(e);
  }
  return out;
}

model::offset last_stable_offset_of(std::optional<model::offset> first_unstable_offset, model::offset high_watermark,
                                    model::offset log_start_offset) {
  model::offset out = high_watermark;
  if (first_unstable_offset) out = std::min(out, std::max(*first_unstable_offset, log_start_offset));
  return out;
}

aborted_txn_filter::aborted_txn_filter(std::vector<aborted_txn_entry> aborted) : aborted_(std::move(aborted)) {
  std::sort(aborted_.begin(), aborted_.end(),
            [](const aborted_txn_entry& a, const aborted_txn_entry& b) { return a.first_offset < b.first_offset; });
}

bool aborted_txn_filter::keep(const codec::batch_header& header, std::optional<codec::control_type> marker) {
  const int64_t producer = header.producer.value();
  if (producer < 0) return !header.is_control();
  // Kafka's consumeAbortedTransactionsUpTo: transactions that began at or before this batch.
  while (next_ < aborted_.size() && aborted_[next_].first_offset <= header.last_offset()) {
    aborted_producers_.insert(aborted_[next_].producer_id.value());
    ++next_;
  }
  if (header.is_control()) {
    if (marker == codec::control_type::abort) aborted_producers_.erase(producer);
    return false;
  }
  return !(header.is_transactional() && aborted_producers_.contains(producer));
}

}  // namespace ringlog::storage
