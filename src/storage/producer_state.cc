#include "ringlog/storage/producer_state.h"

#include <limits>
#include <string>

#include "ringlog/base/assert.h"
#include "ringlog/codec/crc32c.h"

namespace ringlog::storage {
namespace {

template <typename T>
void put(model::bytes& out, T v) {
  using U = std::make_unsigned_t<T>;
  const auto u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<std::byte>(u >> (8 * (sizeof(T) - 1 - i))));
}

/// Reads big-endian integers from a snapshot; `ok` turns false once a read runs past the end.
struct snapshot_reader {
  std::span<const std::byte> in;
  size_t pos = 0;
  bool ok = true;
  template <typename T>
  T get() {
    if (!ok || in.size() - pos < sizeof(T)) {
      ok = false;
      return T{};
    }
    using U = std::make_unsigned_t<T>;
    U u = 0;
    for (size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>((u << 8) | static_cast<U>(in[pos + i]));
    pos += sizeof(T);
    return static_cast<T>(u);
  }
};

error bad_snapshot(const std::string& why) { return error{errc::corrupt_snapshot, "producer snapshot: " + why}; }

std::string producer_name(int64_t id, int16_t epoch) {
  return "producer " + std::to_string(id) + " (epoch " + std::to_string(epoch) + ")";
}

/// Kafka's ProducerAppendInfo.inSequence: next follows last, wrapping after INT32_MAX.
bool in_sequence(int32_t last, int32_t next) {
  return static_cast<int64_t>(next) == static_cast<int64_t>(last) + 1 ||
         (next == 0 && last == std::numeric_limits<int32_t>::max());
}

}  // namespace

model::sequence last_sequence_of(model::sequence base_sequence, int32_t last_offset_delta) {
  RINGLOG_ASSERT_OP(last_offset_delta, >=, 0);
  const int64_t last = static_cast<int64_t>(base_sequence.value()) + last_offset_delta;
  const int64_t max = std::numeric_limits<int32_t>::max();
  return model::sequence{static_cast<int32_t>(last > max ? last - max - 1 : last)};
}

const producer_entry* producer_state::find(model::producer_id id) const {
  auto it = producers_.find(id.value());
  return it == producers_.end() ? nullptr : &it->second;
}

result<std::optional<producer_batch>> producer_state::check(const codec::batch_header& header) const {
  const int64_t id = header.producer.value();
  if (id < 0) return std::optional<producer_batch>{};
  const int16_t epoch = header.producer_epoch_value.value();
  const int32_t first = header.base_sequence.value();
  if (epoch < 0 || first < 0) {
    return error{errc::corrupt_message, "batch of producer " + std::to_string(id) + " has producer_epoch " +
                                            std::to_string(epoch) + " and base_sequence " + std::to_string(first) +
                                            ": an idempotent batch needs both >= 0"};
  }
  auto it = producers_.find(id);
  if (it == producers_.end()) {
    // At the bound the least recently used idle producer makes room (update); none is idle when
    // every known producer is inside an open transaction, which only its end frees.
    if (producers_.size() >= producers_per_partition_max && idle_.empty()) {
      return error{errc::too_many_producers,
                   "this partition already remembers " + std::to_string(producers_.size()) +
                       " idempotent producers (producers_per_partition_max), each inside an open transaction; " +
                       producer_name(id, epoch) + " is refused until one of those transactions ends"};
    }
    return std::optional<producer_batch>{};   // KIP-360: unknown producers start at any sequence
  }
  const producer_entry& entry = it->second;
  if (epoch < entry.epoch.value()) {
    return error{errc::invalid_producer_epoch, producer_name(id, epoch) + " is fenced: the partition knows epoch " +
                                                   std::to_string(entry.epoch.value()) +
                                                   " of this producer id (a newer producer took it over)"};
  }
  // KIP-98: inside an open transaction a producer writes only transactional batches (Kafka's
  // InvalidTxnStateException in ProducerAppendInfo.checkProducerEpoch's caller).
  if (entry.current_txn_first_offset && !header.is_transactional()) {
    return error{errc::invalid_txn_state, producer_name(id, epoch) + " sent a non-transactional batch while its transaction"
                                              " (from offset " + std::to_string(entry.current_txn_first_offset->value()) +
                                              ") is open on this partition"};
  }
  const model::sequence last = last_sequence_of(header.base_sequence, header.last_offset_delta);
  if (epoch == entry.epoch.value() && entry.batches.empty()) {
    // The epoch was bumped by a marker (KIP-890) or the producer is known only by a marker:
    // its sequences start over (Kafka's "currentLastSeq == NO_SEQUENCE" rule).
    if (first != 0) {
      return error{errc::out_of_order_sequence_number,
                   producer_name(id, epoch) + " sent base_sequence " + std::to_string(first) +
                       " but its epoch was started by a transaction marker: the first batch of it has sequence 0"};
    }
  } else if (epoch == entry.epoch.value()) {
    for (const producer_batch& b : entry.batches) {
      if (b.first_sequence.value() == first && b.last_sequence == last) return std::optional<producer_batch>{b};
    }
    const int32_t current = entry.batches.back().last_sequence.value();
    if (!in_sequence(current, first)) {
      return error{errc::out_of_order_sequence_number,
                   producer_name(id, epoch) + " sent base_sequence " + std::to_string(first) +
                       " but the partition expects " +
                       std::to_string(current == std::numeric_limits<int32_t>::max() ? 0 : current + 1) +
                       " (its last stored batch ended at sequence " + std::to_string(current) +
                       "; a batch before this one was lost or is still in flight)"};
    }
  } else if (first != 0) {
    return error{errc::out_of_order_sequence_number,
                 producer_name(id, epoch) + " starts a new epoch (the partition knows epoch " +
                     std::to_string(entry.epoch.value()) + ") at base_sequence " + std::to_string(first) +
                     ": a new epoch starts at sequence 0"};
  }
  return std::optional<producer_batch>{};
}

result<void> producer_state::check_marker(model::producer_id producer_id, model::producer_epoch epoch,
                                         int32_t coordinator_epoch) const {
  if (producer_id.value() < 0 || epoch.value() < 0) {
    return error{errc::corrupt_message, "a transaction marker needs producer id and epoch >= 0, not " +
                                            producer_name(producer_id.value(), epoch.value())};
  }
  const producer_entry* entry = find(producer_id);
  if (entry == nullptr) return base::ok_v;   // Kafka writes markers for producers it forgot
  if (epoch < entry->epoch) {
    return error{errc::invalid_producer_epoch, "transaction marker of " + producer_name(producer_id.value(), epoch.value()) +
                                                   " is refused: the partition knows epoch " +
                                                   std::to_string(entry->epoch.value()) + " of this producer id"};
  }
  if (coordinator_epoch < entry->coordinator_epoch) {
    return error{errc::transaction_coordinator_fenced,
                 "transaction marker of " + producer_name(producer_id.value(), epoch.value()) + " has coordinator epoch " +
                     std::to_string(coordinator_epoch) + " but the partition saw a marker of coordinator epoch " +
                     std::to_string(entry->coordinator_epoch) + " (a newer coordinator owns this transactional id)"};
  }
  return base::ok_v;
}

void producer_state::update(const codec::batch_header& header, model::timestamp_ms append_time_ms) {
  const int64_t id = header.producer.value();
  if (id < 0 || header.producer_epoch_value.value() < 0 || header.is_control()) return;
  auto [found, added] = touch(id);
  producer_entry& entry = *found;
  if (header.producer_epoch_value != entry.epoch) {
    // A new epoch (or a producer seen first): its sequences start over (Kafka's
    // ProducerAppendInfo.updateCurrentTxnFirstOffset / maybeUpdateProducerEpoch).
    entry.epoch = header.producer_epoch_value;
    entry.batches.clear();
  }
  const model::timestamp_ms stamp = header.max_timestamp >= 0 ? header.max_timestamp : append_time_ms;
  entry.last_timestamp_ms = stamp;
  entry.last_append_offset = header.last_offset().value();
  // A batch compaction emptied (records_count 0, log_cleaner.h) carries no transaction's data:
  // it opens none, or a replay would open one whose marker the cleaner may have removed.
  if (header.is_transactional() && header.records_count > 0 && !entry.current_txn_first_offset) {
    entry.current_txn_first_offset = header.base_offset;
    ongoing_.emplace(header.base_offset.value(), id);
  }
  if (header.base_sequence.value() >= 0) {
    entry.batches.push_back({header.base_sequence, last_sequence_of(header.base_sequence, header.last_offset_delta),
                             header.base_offset, header.last_offset(), stamp});
    while (entry.batches.size() > producer_batches_retained) entry.batches.pop_front();
  }
  reindex(id, entry);
  if (added) make_room(id);
}

std::optional<completed_txn> producer_state::end_txn(const codec::batch_header& header,
                                                     const codec::control_record& marker,
                                                     model::timestamp_ms append_time_ms) {
  const int64_t id = header.producer.value();
  if (id < 0 || header.producer_epoch_value.value() < 0) return std::nullopt;
  auto [found, added] = touch(id);
  producer_entry& entry = *found;
  if (header.producer_epoch_value != entry.epoch) {
    entry.epoch = header.producer_epoch_value;
    entry.batches.clear();   // KIP-890: the next batch of the new epoch starts at sequence 0
  }
  entry.coordinator_epoch = std::max(entry.coordinator_epoch, marker.coordinator_epoch);
  entry.last_timestamp_ms = header.max_timestamp >= 0 ? header.max_timestamp : append_time_ms;
  entry.last_append_offset = header.last_offset().value();
  std::optional<completed_txn> done;
  if (entry.current_txn_first_offset) {
    done = completed_txn{model::producer_id{id}, *entry.current_txn_first_offset, header.last_offset(),
                         marker.type == codec::control_type::abort};
    const size_t erased = ongoing_.erase(entry.current_txn_first_offset->value());
    RINGLOG_ASSERT_OP(erased, ==, 1u);
    entry.current_txn_first_offset.reset();
  }
  reindex(id, entry);
  if (added) make_room(id);
  return done;
}

std::pair<producer_entry*, bool> producer_state::touch(int64_t id) {
  auto [it, added] = producers_.try_emplace(id);
  if (!added && !it->second.current_txn_first_offset) {
    const size_t erased = idle_.erase({it->second.last_append_offset, id});
    RINGLOG_ASSERT_OP(erased, ==, 1u);
  }
  return {&it->second, added};
}

void producer_state::reindex(int64_t id, const producer_entry& entry) {
  if (entry.current_txn_first_offset) return;
  const bool inserted = idle_.emplace(entry.last_append_offset, id).second;
  RINGLOG_ASSERT(inserted, "a producer is in idle_ once");
}

void producer_state::make_room(int64_t added) {
  // A follower may be past the bound by more than one: it stored producers its leader admitted
  // while all of its own were inside open transactions (each replica expires on its own timer).
  // Bounded by the excess, at most one pass over idle_.
  while (producers_.size() > producers_per_partition_max) {
    auto victim = idle_.begin();
    if (victim != idle_.end() && victim->second == added) ++victim;
    if (victim == idle_.end()) victim = idle_.begin();   // `added` alone is idle, or none is
    if (victim == idle_.end()) return;                   // every producer is inside an open transaction
    const size_t erased = producers_.erase(victim->second);
    RINGLOG_ASSERT_OP(erased, ==, 1u);
    idle_.erase(victim);
  }
}

size_t producer_state::remove_expired(int64_t now_ms, int64_t expiration_ms) {
  // A producer inside an open transaction stays (the transaction coordinator aborts it on
  // transaction.timeout.ms; forgetting it here would lose the last stable offset's bound): only
  // idle_ is looked at. One pass over at most producers_per_partition_max producers per
  // retention check, as Kafka's removeExpiredProducers (idle_ is in append order, expiration
  // reads the batches' timestamps, which need not follow it).
  size_t removed = 0;
  for (auto it = idle_.begin(); it != idle_.end();) {
    const auto entry = producers_.find(it->second);
    RINGLOG_ASSERT(entry != producers_.end(), "every idle producer is known");
    if (now_ms - entry->second.last_timestamp_ms < expiration_ms) {
      ++it;
      continue;
    }
    producers_.erase(entry);
    it = idle_.erase(it);
    ++removed;
  }
  return removed;
}

model::bytes producer_state::encode_snapshot(model::offset offset) const {
  model::bytes out;
  out.reserve(producer_snapshot_header_bytes + producers_.size() * (producer_snapshot_producer_bytes +
                                                                    producer_batches_retained * producer_snapshot_batch_bytes));
  put<int16_t>(out, producer_snapshot_version);
  put<uint32_t>(out, 0);   // CRC, filled in below
  put<int64_t>(out, offset.value());
  put<int32_t>(out, static_cast<int32_t>(producers_.size()));
  for (const auto& [id, entry] : producers_) {
    put<int64_t>(out, id);
    put<int16_t>(out, entry.epoch.value());
    put<int32_t>(out, entry.coordinator_epoch);
    put<int64_t>(out, entry.current_txn_first_offset ? entry.current_txn_first_offset->value() : -1);
    put<int64_t>(out, entry.last_timestamp_ms);
    put<int64_t>(out, entry.last_append_offset);
    put<int8_t>(out, static_cast<int8_t>(entry.batches.size()));
    for (const producer_batch& b : entry.batches) {
      put<int32_t>(out, b.first_sequence.value());
      put<int32_t>(out, b.last_sequence.value());
      put<int64_t>(out, b.base_offset.value());
      put<int32_t>(out, static_cast<int32_t>(b.last_offset.value() - b.base_offset.value()));
      put<int64_t>(out, b.timestamp);
    }
  }
  const uint32_t crc = codec::crc32c(std::span<const std::byte>(out).subspan(6));
  for (size_t i = 0; i < 4; ++i) out[2 + i] = static_cast<std::byte>(crc >> (8 * (3 - i)));
  return out;
}

result<std::pair<model::offset, producer_state>> producer_state::decode_snapshot(std::span<const std::byte> in) {
  snapshot_reader r{in};
  const auto version = r.get<int16_t>();
  const auto crc = r.get<uint32_t>();
  if (!r.ok) return bad_snapshot("cut short in its header (" + std::to_string(in.size()) + " bytes)");
  if (version < producer_snapshot_version_v1 || version > producer_snapshot_version) {
    return bad_snapshot("unknown version " + std::to_string(version) + " (this broker reads versions " +
                        std::to_string(producer_snapshot_version_v1) + " to " +
                        std::to_string(producer_snapshot_version) + ")");
  }
  const bool v1 = version == producer_snapshot_version_v1;
  const uint32_t actual = codec::crc32c(in.subspan(6));
  if (actual != crc) return bad_snapshot("CRC mismatch (stored " + std::to_string(crc) + ", computed " + std::to_string(actual) + ")");
  const auto offset = r.get<int64_t>();
  const auto count = r.get<int32_t>();
  if (!r.ok) return bad_snapshot("cut short in its header");
  if (offset < 0) return bad_snapshot("negative snapshot offset " + std::to_string(offset));
  // A follower may hold more than the bound (make_room); twice it still bounds what a corrupt
  // count could make us allocate.
  if (count < 0 || static_cast<size_t>(count) > 2 * producers_per_partition_max) {
    return bad_snapshot("producer count " + std::to_string(count) + " outside [0, " +
                        std::to_string(2 * producers_per_partition_max) + "]");
  }
  producer_state state;
  for (int32_t i = 0; i < count; ++i) {
    const auto id = r.get<int64_t>();
    const auto epoch = r.get<int16_t>();
    const int32_t coordinator_epoch = v1 ? -1 : r.get<int32_t>();
    const int64_t txn_first = v1 ? -1 : r.get<int64_t>();
    const int64_t last_timestamp = v1 ? model::no_timestamp : r.get<int64_t>();
    const int64_t last_append_offset = version < producer_snapshot_version ? -1 : r.get<int64_t>();
    const auto batches = r.get<int8_t>();
    if (!r.ok) return bad_snapshot("cut short in producer " + std::to_string(i));
    const int8_t batches_min = v1 ? 1 : 0;
    if (id < 0 || epoch < 0 || batches < batches_min || static_cast<size_t>(batches) > producer_batches_retained ||
        txn_first < -1 || coordinator_epoch < -1 || last_append_offset < -1) {
      return bad_snapshot("producer " + std::to_string(i) + " has id " + std::to_string(id) + ", epoch " +
                          std::to_string(epoch) + ", " + std::to_string(batches) + " batches, transaction from " +
                          std::to_string(txn_first) + ", coordinator epoch " + std::to_string(coordinator_epoch));
    }
    if (!state.producers_.empty() && state.producers_.rbegin()->first >= id) {
      return bad_snapshot("producer ids not ascending at producer " + std::to_string(i));
    }
    producer_entry entry;
    entry.epoch = model::producer_epoch{epoch};
    entry.coordinator_epoch = coordinator_epoch;
    entry.last_timestamp_ms = last_timestamp;
    if (txn_first >= 0) {
      if (!state.ongoing_.emplace(txn_first, id).second) {
        return bad_snapshot("producer " + std::to_string(id) + " opens a transaction at offset " +
                            std::to_string(txn_first) + " where another producer's opens");
      }
      entry.current_txn_first_offset = model::offset{txn_first};
    }
    for (int8_t k = 0; k < batches; ++k) {
      producer_batch b;
      b.first_sequence = model::sequence{r.get<int32_t>()};
      b.last_sequence = model::sequence{r.get<int32_t>()};
      b.base_offset = model::offset{r.get<int64_t>()};
      const auto delta = r.get<int32_t>();
      b.timestamp = r.get<int64_t>();
      if (!r.ok) return bad_snapshot("cut short in producer " + std::to_string(id));
      if (b.first_sequence.value() < 0 || b.last_sequence.value() < 0 || b.base_offset.value() < 0 || delta < 0) {
        return bad_snapshot("producer " + std::to_string(id) + " has a batch with a negative field");
      }
      b.last_offset = b.base_offset + delta;
      entry.batches.push_back(b);
    }
    if (v1) entry.last_timestamp_ms = entry.batches.back().timestamp;
    // Before version 3: the newest retained batch's last offset (header comment).
    entry.last_append_offset = version < producer_snapshot_version && !entry.batches.empty()
                                   ? entry.batches.back().last_offset.value()
                                   : last_append_offset;
    state.reindex(id, entry);
    state.producers_.emplace(id, std::move(entry));
  }
  if (r.pos != in.size()) return bad_snapshot(std::to_string(in.size() - r.pos) + " bytes after the last producer");
  return std::make_pair(model::offset{offset}, std::move(state));
}

}  // namespace ringlog::storage
