#include "ringlog/txn/transaction_coordinator.h"

#include <algorithm>

#include "ringlog/base/assert.h"

namespace ringlog::txn {
namespace {

/// Why an epoch moves on, for producer_fenced's message: a producer whose transaction ran past
/// its timeout reads it as fenced too, and should not take it for a second producer.
constexpr const char* fenced_why =
    " (the epoch moves on when another producer initializes this transactional id, and when the "
    "coordinator aborts a transaction that ran past its transaction.timeout.ms)";

bool is_prepare(txn_state s) { return s == txn_state::prepare_commit || s == txn_state::prepare_abort; }

std::string who(const std::string& transactional_id) { return "transactional id '" + transactional_id + "'"; }

/// The epoch after a bump: +1 up to limits::producer_epoch_max + 1 (int16 max), never beyond.
model::producer_epoch bumped(model::producer_epoch e) {
  RINGLOG_ASSERT_OP(e.value(), <=, static_cast<int16_t>(limits::producer_epoch_max + 1));
  return model::producer_epoch{static_cast<int16_t>(std::min<int32_t>(e.value() + 1, limits::producer_epoch_max + 1))};
}

}  // namespace

result<void> check_transactional_id(std::string_view transactional_id) {
  if (transactional_id.empty() || transactional_id.size() > limits::transactional_id_bytes_max) {
    return error{errc::invalid_request, "transactional.id must be 1.." + std::to_string(limits::transactional_id_bytes_max) +
                                            " bytes, got " + std::to_string(transactional_id.size())};
  }
  for (size_t i = 0; i < transactional_id.size(); ++i) {
    const auto c = static_cast<unsigned char>(transactional_id[i]);
    if (c < 0x20 || c == 0x7f) {
      return error{errc::invalid_request, "transactional.id has the control character " + std::to_string(c) +
                                              " at byte " + std::to_string(i) +
                                              ": an id is printable text (it names the transaction in logs, "
                                              "URLs and tools)"};
    }
  }
  return base::ok_v;
}

txn_metadata transaction_coordinator::fenced_abort(const txn_metadata& md, int64_t now_ms) {
  txn_metadata next = md;
  next.last_producer_epoch = md.producer_epoch;
  next.producer_epoch = bumped(md.producer_epoch);
  next.state = txn_state::prepare_abort;
  next.last_update_ms = now_ms;
  return next;
}

result<outcome> transaction_coordinator::init_producer_id(
    const std::string& transactional_id, int32_t timeout_ms,
    std::optional<std::pair<model::producer_id, model::producer_epoch>> expected,
    std::optional<model::producer_id> fresh_id, int64_t now_ms) {
  if (auto valid = check_transactional_id(transactional_id); !valid.ok()) return valid.error();
  if (timeout_ms <= 0 || timeout_ms > options_.transaction_max_timeout_ms) {
    return error{errc::invalid_transaction_timeout,
                 "transaction.timeout.ms " + std::to_string(timeout_ms) + " is outside 1..transaction.max.timeout.ms (" +
                     std::to_string(options_.transaction_max_timeout_ms) + ")"};
  }
  auto it = ids_.find(transactional_id);
  if (it == ids_.end()) {
    if (ids_.size() >= limits::transactional_ids_per_partition_max) {
      return error{errc::too_many_transactional_ids,
                   who(transactional_id) + " is refused: its __transaction_state partition's coordinator already "
                   "holds transactional_ids_per_partition_max (" +
                       std::to_string(limits::transactional_ids_per_partition_max) +
                       ") transactional ids; ids idle past transactional.id.expiration.ms (" +
                       std::to_string(options_.transactional_id_expiration_ms) + " ms) are removed"};
    }
    if (!fresh_id) return error{errc::producer_id_needed, who(transactional_id) + " is new: it needs a producer id"};
    txn_metadata md;
    md.transactional_id = transactional_id;
    md.producer_id = *fresh_id;
    md.producer_epoch = model::producer_epoch{0};
    md.timeout_ms = timeout_ms;
    md.state = txn_state::empty;
    md.last_update_ms = now_ms;
    entry e;
    e.current.transactional_id = transactional_id;   // placeholder (producer id -1) until the write is durable
    e.pending = md;
    ids_.emplace(transactional_id, std::move(e));
    return outcome{md, md.producer_id, md.producer_epoch, false};
  }
  entry& e = it->second;
  if (e.pending) return error{errc::concurrent_transactions, who(transactional_id) + " has a state change being written: retry"};
  const txn_metadata& md = e.current;
  if (expected && expected->first.value() != model::no_producer_id) {
    // KIP-360: a producer resuming after an abort names what it had; only the current epoch or
    // the one before the last bump is its own.
    if (expected->first != md.producer_id ||
        (expected->second != md.producer_epoch && expected->second != md.last_producer_epoch)) {
      return error{errc::producer_fenced, who(transactional_id) + " is held by producer " +
                                              std::to_string(md.producer_id.value()) + " epoch " +
                                              std::to_string(md.producer_epoch.value()) + ", not producer " +
                                              std::to_string(expected->first.value()) + " epoch " +
                                              std::to_string(expected->second.value())};
    }
  }
  switch (md.state) {
    case txn_state::prepare_commit:
    case txn_state::prepare_abort:
      return error{errc::concurrent_transactions,
                   who(transactional_id) + " is ending its transaction (" + std::string(kafka_name(md.state)) + "): retry"};
    case txn_state::ongoing: {
      // The old producer's transaction is aborted with a bumped epoch (it is fenced); the new
      // producer retries and gets its own epoch once the abort completed (Kafka's rule).
      txn_metadata next = fenced_abort(md, now_ms);
      e.pending = next;
      return outcome{next, next.producer_id, next.producer_epoch, true};
    }
    case txn_state::empty:
    case txn_state::complete_commit:
    case txn_state::complete_abort:
    case txn_state::dead: {
      txn_metadata next = md;
      if (md.producer_epoch.value() >= limits::producer_epoch_max || md.producer_id.value() == model::no_producer_id) {
        if (!fresh_id) return error{errc::producer_id_needed, who(transactional_id) + " used up its producer epochs"};
        next.producer_id = *fresh_id;
        next.producer_epoch = model::producer_epoch{0};
        next.last_producer_epoch = model::producer_epoch{model::no_producer_epoch};
      } else {
        next.last_producer_epoch = md.producer_epoch;
        next.producer_epoch = bumped(md.producer_epoch);
      }
      next.timeout_ms = timeout_ms;
      next.state = txn_state::empty;
      next.partitions.clear();
      next.txn_start_ms = -1;
      next.last_update_ms = now_ms;
      next.epoch_bump_per_transaction = false;
      e.pending = next;
      return outcome{next, next.producer_id, next.producer_epoch, false};
    }
  }
  RINGLOG_ASSERT(false, "every txn_state is handled");
  return error{errc::invalid_txn_state, "unreachable"};
}

result<transaction_coordinator::entry*> transaction_coordinator::producer_entry(const std::string& transactional_id,
                                                                                 model::producer_id producer_id,
                                                                                 model::producer_epoch producer_epoch) {
  auto it = ids_.find(transactional_id);
  if (it == ids_.end() || it->second.current.producer_id.value() == model::no_producer_id ||
      it->second.current.state == txn_state::dead) {
    return error{errc::invalid_producer_id_mapping, who(transactional_id) + " is not known to this coordinator: "
                                                    "InitProducerId first"};
  }
  entry& e = it->second;
  if (e.current.producer_id != producer_id) {
    return error{errc::invalid_producer_id_mapping, who(transactional_id) + " is held by producer id " +
                                                        std::to_string(e.current.producer_id.value()) + ", not " +
                                                        std::to_string(producer_id.value())};
  }
  if (e.current.producer_epoch != producer_epoch) {
    return error{errc::producer_fenced, "producer " + std::to_string(producer_id.value()) + " epoch " +
                                            std::to_string(producer_epoch.value()) + " of " + who(transactional_id) +
                                            " is fenced: the current epoch is " +
                                            std::to_string(e.current.producer_epoch.value()) + fenced_why};
  }
  if (e.pending) return error{errc::concurrent_transactions, who(transactional_id) + " has a state change being written: retry"};
  return &e;
}

result<outcome> transaction_coordinator::add_partitions(const std::string& transactional_id,
                                                        model::producer_id producer_id,
                                                        model::producer_epoch producer_epoch,
                                                        const partition_set& partitions, int64_t now_ms) {
  auto found = producer_entry(transactional_id, producer_id, producer_epoch);
  if (!found.ok()) return found.error();
  entry& e = *found.value();
  const txn_metadata& md = e.current;
  if (is_prepare(md.state)) {
    return error{errc::concurrent_transactions,
                 who(transactional_id) + " is ending its transaction (" + std::string(kafka_name(md.state)) + "): retry"};
  }
  outcome out{std::nullopt, md.producer_id, md.producer_epoch, false};
  if (md.state == txn_state::ongoing &&
      std::all_of(partitions.begin(), partitions.end(), [&](const auto& tp) { return md.partitions.contains(tp); })) {
    return out;
  }
  txn_metadata next = md;
  if (md.state != txn_state::ongoing) {
    next.partitions.clear();
    next.txn_start_ms = now_ms;
    next.epoch_bump_per_transaction = false;
  }
  next.partitions.insert(partitions.begin(), partitions.end());
  if (next.partitions.size() > limits::partitions_per_transaction_max) {
    return error{errc::invalid_request, "a transaction may touch at most limits::partitions_per_transaction_max (" +
                                            std::to_string(limits::partitions_per_transaction_max) + ") partitions"};
  }
  next.state = txn_state::ongoing;
  next.last_update_ms = now_ms;
  e.pending = next;
  out.write = std::move(next);
  return out;
}

result<void> transaction_coordinator::verify_partition(const std::string& transactional_id,
                                                       model::producer_id producer_id,
                                                       model::producer_epoch producer_epoch,
                                                       const model::topic_partition& partition) const {
  auto it = ids_.find(transactional_id);
  if (it == ids_.end() || it->second.current.producer_id != producer_id) {
    return error{errc::invalid_producer_id_mapping, who(transactional_id) + " is not held by producer id " +
                                                        std::to_string(producer_id.value())};
  }
  const entry& e = it->second;
  const txn_metadata& md = e.current;
  if (md.producer_epoch != producer_epoch) {
    return error{errc::producer_fenced, "producer epoch " + std::to_string(producer_epoch.value()) + " of " +
                                            who(transactional_id) + " is fenced (current " +
                                            std::to_string(md.producer_epoch.value()) + ")"};
  }
  // An end being written (PrepareCommit/PrepareAbort pending) ends the transaction the batch
  // would join: refuse it as Kafka does once the state has moved on.
  const bool ending = e.pending && e.pending->state != txn_state::ongoing;
  if (md.state != txn_state::ongoing || ending || !md.partitions.contains(partition)) {
    return error{errc::invalid_txn_state, who(transactional_id) + " has no ongoing transaction holding " +
                                              partition.directory_name() +
                                              ": add the partition to the transaction (AddPartitionsToTxn) before "
                                              "producing to it"};
  }
  return base::ok_v;
}

result<outcome> transaction_coordinator::end_txn(const std::string& transactional_id, model::producer_id producer_id,
                                                 model::producer_epoch producer_epoch, bool committed, bool bump_epoch,
                                                 std::optional<model::producer_id> fresh_id, int64_t now_ms) {
  (void)fresh_id;   // an exhausted epoch is not bumped at an end (see below); InitProducerId takes a new id
  const bool bump = bump_epoch && options_.bump_epoch_per_transaction;
  auto it = ids_.find(transactional_id);
  if (it == ids_.end() || it->second.current.producer_id.value() == model::no_producer_id) {
    return error{errc::invalid_producer_id_mapping, who(transactional_id) + " is not known to this coordinator"};
  }
  entry& e = it->second;
  const txn_metadata& md = e.current;
  if (md.producer_id != producer_id) {
    return error{errc::invalid_producer_id_mapping, who(transactional_id) + " is held by producer id " +
                                                        std::to_string(md.producer_id.value()) + ", not " +
                                                        std::to_string(producer_id.value())};
  }
  const txn_state decided_prepare = committed ? txn_state::prepare_commit : txn_state::prepare_abort;
  const txn_state decided_complete = committed ? txn_state::complete_commit : txn_state::complete_abort;
  // KIP-890: the retry of the EndTxn that bumped the epoch carries the epoch before the bump;
  // it is answered only while the ended transaction is the latest one (Prepare*/Complete* of
  // the same decision). Anything else of that epoch is a zombie.
  if (bump && md.epoch_bump_per_transaction && producer_epoch == md.last_producer_epoch &&
      producer_epoch.value() != model::no_producer_epoch &&
      (md.state == decided_prepare || md.state == decided_complete)) {
    if (e.pending) return error{errc::concurrent_transactions, who(transactional_id) + " has a state change being written: retry"};
    return outcome{std::nullopt, md.producer_id, md.producer_epoch, false};
  }
  if (md.producer_epoch != producer_epoch) {
    return error{errc::producer_fenced, "producer " + std::to_string(producer_id.value()) + " epoch " +
                                            std::to_string(producer_epoch.value()) + " of " + who(transactional_id) +
                                            " is fenced: the current epoch is " + std::to_string(md.producer_epoch.value()) +
                                            fenced_why};
  }
  if (e.pending) return error{errc::concurrent_transactions, who(transactional_id) + " has a state change being written: retry"};
  const std::string refused = who(transactional_id) + " cannot " + (committed ? "commit" : "abort") + " in state " +
                              std::string(kafka_name(md.state));
  switch (md.state) {
    case txn_state::ongoing:
      break;
    case txn_state::empty:
      // Aborting nothing is how a bumping client moves on after an error (KIP-890); others may not.
      if (committed || !bump) return error{errc::invalid_txn_state, refused};
      break;
    case txn_state::complete_commit:
    case txn_state::complete_abort:
      if (md.state == decided_complete && !bump) return outcome{std::nullopt, md.producer_id, md.producer_epoch, false};
      if (bump && !committed) break;   // aborting nothing moves a bumping client's epoch on (KIP-890)
      return error{errc::invalid_txn_state, refused};
    case txn_state::prepare_commit:
    case txn_state::prepare_abort:
      // The previous end is still writing its markers. An end of the other decision is most
      // often the producer's next transaction (an abort right after a commit answered), so it
      // waits like every other call meanwhile: CONCURRENT_TRANSACTIONS is retriable, where
      // INVALID_TXN_STATE would be fatal for the client (breaker finding of session 9: ~3% of
      // librdkafka aborts right after a commit). Kafka answers so only the same decision; the
      // other one is INVALID_TXN_STATE there (TransactionCoordinator.handleEndTransaction). A
      // retry after the markers are written meets Complete* and gets that state's answer.
      return error{errc::concurrent_transactions, who(transactional_id) + " is writing the markers of its " +
                                                      std::string(md.state == txn_state::prepare_commit ? "commit" : "abort") +
                                                      ": retry"};
    case txn_state::dead:
      return error{errc::invalid_producer_id_mapping, who(transactional_id) + " expired"};
  }
  txn_metadata next = md;
  if (md.state != txn_state::ongoing) {
    next.partitions.clear();   // nothing open: the abort writes no marker
    next.txn_start_ms = -1;
  }
  next.state = decided_prepare;
  next.last_update_ms = now_ms;
  next.epoch_bump_per_transaction = bump;
  // A bump that would pass the last epoch is skipped: the transaction ends with the epoch it
  // has, and the producer's next InitProducerId takes a new producer id.
  if (bump && md.producer_epoch.value() < limits::producer_epoch_max) {
    next.last_producer_epoch = md.producer_epoch;
    next.producer_epoch = bumped(md.producer_epoch);
  } else {
    next.epoch_bump_per_transaction = false;
  }
  e.pending = next;
  return outcome{next, next.producer_id, next.producer_epoch, false};
}

result<outcome> transaction_coordinator::abort_transaction(const std::string& transactional_id, int64_t now_ms) {
  auto it = ids_.find(transactional_id);
  if (it == ids_.end() || it->second.current.producer_id.value() == model::no_producer_id) {
    return error{errc::transactional_id_not_found, who(transactional_id) + " is not known to this coordinator"};
  }
  entry& e = it->second;
  if (e.pending) return error{errc::concurrent_transactions, who(transactional_id) + " has a state change being written: retry"};
  if (e.current.state != txn_state::ongoing) {
    return error{errc::invalid_txn_state, who(transactional_id) + " has no ongoing transaction (state " +
                                              std::string(kafka_name(e.current.state)) + ")"};
  }
  txn_metadata next = fenced_abort(e.current, now_ms);
  e.pending = next;
  return outcome{next, next.producer_id, next.producer_epoch, false};
}

std::vector<txn_metadata> transaction_coordinator::expire(int64_t now_ms) {
  std::vector<txn_metadata> out;
  for (auto& [id, e] : ids_) {
    if (e.pending || e.current.producer_id.value() == model::no_producer_id) continue;
    const txn_metadata& md = e.current;
    if (md.state == txn_state::ongoing && md.txn_start_ms >= 0 && now_ms - md.txn_start_ms >= md.timeout_ms) {
      e.pending = fenced_abort(md, now_ms);
      out.push_back(*e.pending);
    } else if ((md.state == txn_state::empty || md.state == txn_state::complete_commit ||
                md.state == txn_state::complete_abort) &&
               now_ms - md.last_update_ms >= options_.transactional_id_expiration_ms) {
      txn_metadata dead = md;
      dead.state = txn_state::dead;
      dead.last_update_ms = now_ms;
      e.pending = dead;
      out.push_back(dead);
    }
  }
  return out;
}

std::optional<marker_request> transaction_coordinator::complete_write(const std::string& transactional_id, bool durable) {
  auto it = ids_.find(transactional_id);
  RINGLOG_ASSERT(it != ids_.end(), "complete_write of an id with no write in flight");
  entry& e = it->second;
  RINGLOG_ASSERT(e.pending.has_value(), "complete_write of an id with no write in flight");
  txn_metadata next = std::move(*e.pending);
  e.pending.reset();
  if (!durable) {
    if (e.current.producer_id.value() == model::no_producer_id) ids_.erase(it);   // a new id never written
    return std::nullopt;
  }
  if (next.state == txn_state::dead) {
    ids_.erase(it);
    return std::nullopt;
  }
  e.current = std::move(next);
  if (!is_prepare(e.current.state)) return std::nullopt;
  return marker_request{e.current.transactional_id, e.current.producer_id, e.current.producer_epoch,
                        e.current.state == txn_state::prepare_commit, e.current.partitions};
}

result<txn_metadata> transaction_coordinator::markers_written(const std::string& transactional_id,
                                                              model::producer_epoch producer_epoch, int64_t now_ms) {
  auto it = ids_.find(transactional_id);
  if (it == ids_.end() || it->second.pending || !is_prepare(it->second.current.state) ||
      it->second.current.producer_epoch != producer_epoch) {
    return error{errc::invalid_txn_state, who(transactional_id) + " is not waiting for markers of epoch " +
                                              std::to_string(producer_epoch.value())};
  }
  entry& e = it->second;
  txn_metadata next = e.current;
  next.state = next.state == txn_state::prepare_commit ? txn_state::complete_commit : txn_state::complete_abort;
  next.partitions.clear();
  next.txn_start_ms = -1;
  next.last_update_ms = now_ms;
  e.pending = next;
  return next;
}

result<void> transaction_coordinator::replay(std::span<const std::byte> key,
                                             std::optional<std::span<const std::byte>> value) {
  auto id = decode_txn_log_key(key);
  if (!id.ok()) return id.error();
  if (!value) {
    ids_.erase(*id);
    return base::ok_v;
  }
  auto md = decode_txn_log_value(*id, *value);
  if (!md.ok()) return md.error();
  if (md->state == txn_state::dead) {
    ids_.erase(*id);
    return base::ok_v;
  }
  entry& e = ids_[*id];
  e.current = std::move(md).value();
  e.pending.reset();
  return base::ok_v;
}

std::vector<marker_request> transaction_coordinator::pending_markers() const {
  std::vector<marker_request> out;
  for (const auto& [id, e] : ids_) {
    if (!is_prepare(e.current.state)) continue;
    out.push_back(marker_request{id, e.current.producer_id, e.current.producer_epoch,
                                 e.current.state == txn_state::prepare_commit, e.current.partitions});
  }
  return out;
}

const txn_metadata* transaction_coordinator::find(const std::string& transactional_id) const {
  auto it = ids_.find(transactional_id);
  if (it == ids_.end() || it->second.current.producer_id.value() == model::no_producer_id) return nullptr;
  return &it->second.current;
}

bool transaction_coordinator::write_pending(const std::string& transactional_id) const {
  auto it = ids_.find(transactional_id);
  return it != ids_.end() && it->second.pending.has_value();
}

std::vector<txn_listing> transaction_coordinator::list(const std::vector<txn_state>& states,
                                                       const std::vector<model::producer_id>& producer_ids,
                                                       int64_t duration_ms, int64_t now_ms) const {
  std::vector<txn_listing> out;
  for (const auto& [id, e] : ids_) {
    const txn_metadata& md = e.current;
    if (md.producer_id.value() == model::no_producer_id) continue;
    if (!states.empty() && std::find(states.begin(), states.end(), md.state) == states.end()) continue;
    if (!producer_ids.empty() && std::find(producer_ids.begin(), producer_ids.end(), md.producer_id) == producer_ids.end()) {
      continue;
    }
    if (duration_ms >= 0 && (md.txn_start_ms < 0 || now_ms - md.txn_start_ms < duration_ms)) continue;
    out.push_back(txn_listing{id, md.producer_id, md.state, md.txn_start_ms});
  }
  return out;
}

std::string describe(const marker_request& m) {
  return std::string(m.committed ? "commit" : "abort") + " of transactional id '" + m.transactional_id +
         "' (producer " + std::to_string(m.producer_id.value()) + " epoch " + std::to_string(m.producer_epoch.value()) +
         ") on " + std::to_string(m.partitions.size()) + " partitions";
}

}  // namespace ringlog::txn
