// A partition's appends on its shard (partition.h): a produce's validated batches, the broker's
// own records, transaction markers and a follower's replicated batches, each under the pair
// assertions of the append boundary; and the KIP-890 part 1 guards of a transaction's first
// batch. Kafka's counterparts: Partition.appendRecordsToLeader, UnifiedLog.appendAsLeader /
// appendAsFollower, and the verification guard of KAFKA-14402.

#include <utility>

#include "ringlog/partition/constants.h"
#include "ringlog/partition/partition.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"

namespace ringlog::partition {

storage::result<storage::append_result> partition_runtime::append_checked(model::bytes batch) {
  const model::offset end_before = log->log_end_offset();
  auto appended = log->append(std::move(batch), epoch);
  if (!appended.ok()) return appended;
  const model::offset end_after = log->log_end_offset();
  if (appended->duplicate) {
    // An idempotent producer's retry: the original batch's offsets, nothing written.
    RINGLOG_ASSERT_OP(end_after.value(), ==, end_before.value());
    RINGLOG_ASSERT_OP(appended->last_offset.value(), <, end_before.value());
  } else {
    RINGLOG_ASSERT_OP(appended->base_offset.value(), ==, end_before.value());
    RINGLOG_ASSERT_OP(end_after.value(), ==, appended->last_offset.value() + 1);
  }
  RINGLOG_ASSERT_OP(log->high_watermark().value(), <=, end_after.value());
  return appended;
}

void partition_runtime::append_batches(produce_batches_request request, bool log_append_time,
                                       std::function<void(result<produce_batches_response>)> done) {
  assert_on_shard();
  const int64_t started_ns = base::monotonic_ns();
  produce_batches_response out;
  const int64_t now = context_->clock.now_ms();
  if (log_append_time) out.log_append_time = now;
  for (size_t i = 0; i < request.batches.size(); ++i) {
    auto& batch = request.batches[i];
    if (log_append_time) codec::set_log_append_time(batch, now);
    const size_t batch_bytes = batch.size();
    auto appended = append_checked(std::move(batch));
    if (!appended.ok()) {
      // Batches before this one are in the log (only a disk failure gets here after validation).
      publish();
      return done(from_storage(appended.error()));
    }
    if (i == 0) out.base_offset = appended->base_offset;
    // A retry answers the original batch's time, as Kafka's duplicate answer does (storage's append).
    if (appended->duplicate) out.log_append_time = appended->log_append_time;
    base::count_activity_bytes(base::cpu_activity::produce, batch_bytes);
  }
  out.log_start_offset = log->log_start_offset();
  const acks_mode acks = request.acks;
  if (acks == acks_mode::none) out.base_offset = model::offset{-1};
  base::observe_latency_since(base::latency_stage::produce_append, started_ns);
  complete_append(acks, log->log_end_offset(), request.timeout_ms,
                  [out, received_ns = request.received_ns, done = std::move(done)](result<void> r) {
                    base::observe_latency_since(base::latency_stage::produce_total, received_ns);
                    if (!r.ok()) return done(r.error());
                    done(out);
                  });
}

result<void> partition_runtime::append_own_records(std::vector<model::record> records,
                                                   std::function<void(result<void>)> replicated) {
  assert_on_shard();
  // Written as Kafka's coordinators write their state: acks=all, so a commit that was answered
  // survives the loss of the leader (design.md section 7).
  if (auto ok = check_append(acks_mode::all); !ok.ok()) return ok.error();
  const model::timestamp_ms now = context_->clock.now_ms();
  for (auto& r : records) r.timestamp = now;
  auto batch = codec::encode_batch({}, records);
  if (!batch.ok()) return error{errc::unknown_server_error, batch.error().message};
  auto appended = append_checked(std::move(batch.value()));
  if (!appended.ok()) return from_storage(appended.error());
  complete_append(acks_mode::all, appended->last_offset + 1, internal_append_timeout_ms, std::move(replicated));
  return base::ok_v;
}

result<void> partition_runtime::append_marker(model::producer_id producer_id, model::producer_epoch producer_epoch,
                                              const codec::control_record& marker) {
  assert_on_shard();
  // Kafka writes markers with acks=all (TransactionMarkerChannelManager: requiredAcks -1).
  if (auto ok = check_append(acks_mode::all); !ok.ok()) return ok.error();
  const model::offset end_before = log->log_end_offset();
  auto appended = log->append_marker(producer_id, producer_epoch, marker, epoch);
  if (!appended.ok()) return from_storage(appended.error());
  RINGLOG_ASSERT_OP(appended->base_offset.value(), ==, end_before.value());
  RINGLOG_ASSERT_OP(log->log_end_offset().value(), ==, appended->last_offset.value() + 1);
  RINGLOG_ASSERT_OP(log->high_watermark().value(), <=, log->log_end_offset().value());
  // The producer's transaction ended here: a verification of its next batch that started
  // before this marker must not open a transaction (KIP-890 part 1's guard).
  txn_verifications.erase(producer_id.value());
  return base::ok_v;
}

storage::result<storage::append_result> partition_runtime::append_replicated(std::span<const std::byte> batches) {
  assert_on_shard();
  const model::offset end_before = log->log_end_offset();
  auto appended = log->append_replicated(batches);
  if (!appended.ok()) return appended;
  // Batches the follower has already are skipped, and compaction may leave a gap before the
  // first kept one: it starts at or past the log end, and the log now ends after the last.
  RINGLOG_ASSERT_OP(appended->base_offset.value(), >=, end_before.value());
  RINGLOG_ASSERT_OP(log->log_end_offset().value(), ==, appended->last_offset.value() + 1);
  RINGLOG_ASSERT_OP(log->high_watermark().value(), <=, log->log_end_offset().value());
  return appended;
}

// ---------------------------------------------------------------- KIP-890 part 1

std::optional<codec::batch_header> partition_runtime::unverified_txn_batch(
    const produce_batches_request& request) const {
  for (const auto& batch : request.batches) {
    auto header = codec::decode_header(batch);
    if (!header.ok() || !header->is_transactional()) continue;
    const auto* entry = log->producers().find(header->producer);
    const bool open = entry != nullptr && entry->current_txn_first_offset &&
                      entry->epoch == header->producer_epoch_value;
    if (!open) return header.value();
  }
  return std::nullopt;
}

result<std::optional<txn_verification_needed>> partition_runtime::guard_txn_verification(
    const produce_batches_request& request, uint64_t verified_guard) {
  assert_on_shard();
  // A Kafka producer's first batch of a transaction here is appended only once its coordinator
  // confirmed the partition is in that transaction, and only if no marker ended the transaction
  // meanwhile (the guard is still the one the verification started with).
  auto unverified = request.transactional_id.empty() ? std::nullopt : unverified_txn_batch(request);
  if (!unverified) return std::optional<txn_verification_needed>{};
  const int64_t pid = unverified->producer.value();
  const int16_t producer_epoch = unverified->producer_epoch_value.value();
  auto guard = txn_verifications.find(pid);
  const bool guarded = guard != txn_verifications.end() && guard->second.producer_epoch == producer_epoch;
  if (verified_guard != 0) {
    if (!guarded || guard->second.id != verified_guard) {
      return error{errc::invalid_txn_state, "the transaction of producer " + std::to_string(pid) +
                                                " ended while its produce to " + name() +
                                                " was being verified: nothing was appended (KIP-890)"};
    }
    // The append that follows opens the transaction here (on this thread, before any marker can
    // come), or is refused and a retry verifies again: the guard has done its work.
    txn_verifications.erase(guard);
    return std::optional<txn_verification_needed>{};
  }
  if (!guarded) {
    if (guard == txn_verifications.end() && txn_verifications.size() >= txn_verifications_per_partition_max) {
      return error{errc::concurrent_transactions,
                   "txn_verifications_per_partition_max (" + std::to_string(txn_verifications_per_partition_max) +
                       ") producers of " + name() + " are being verified with their coordinators: retry"};
    }
    const uint64_t id = context_->next_txn_verification.fetch_add(1);
    guard = txn_verifications.insert_or_assign(pid, txn_verification_guard{id, producer_epoch}).first;
  }
  return std::optional<txn_verification_needed>{txn_verification_needed{pid, producer_epoch, guard->second.id}};
}

void partition_runtime::drop_txn_verification(int64_t producer_id, uint64_t guard) {
  auto g = txn_verifications.find(producer_id);
  if (g != txn_verifications.end() && g->second.id == guard) txn_verifications.erase(g);
}

}  // namespace ringlog::partition
