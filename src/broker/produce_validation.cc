// Produce validation (Kafka's LogValidator): what every client batch and record must satisfy
// before any of a request is appended. HTTP records are checked one by one before this node
// encodes them (check_keys_for_compaction, delivery times); Kafka batches and batches a peer
// forwards are checked whole here (validate_batches).

#include "produce_pipeline.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/delay/constants.h"

namespace ringlog::broker {
namespace detail {

error compacted_key_missing(const std::string& which, const std::string& topic, const storage::log_config& config) {
  return error{errc::invalid_record, which + " has no key, and topic '" + topic + "' has cleanup.policy=" +
                                         config.cleanup_policy +
                                         ", which keeps the latest value per key: every record needs a key"};
}

/// Kafka's LogValidator: a compacted topic keeps the latest value per key, so a record without
/// one has nothing to be kept under and is refused (INVALID_RECORD), the whole request with it.
result<void> check_keys_for_compaction(const std::string& topic, const storage::log_config& config,
                                       const std::vector<produce_record>& records) {
  if (!config.compacted()) return base::ok_v;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].key) continue;
    return compacted_key_missing("records[" + std::to_string(i) + "]", topic, config);
  }
  return base::ok_v;
}

/// The answer when this node's shard holds no replica of `tp` for a call it serves as the leader:
/// the topic was deleted meanwhile, or (`topic_in_view`) this node has not opened its replica yet
/// (a topic just created, past when_replica_open's wait): retriable, never "does not exist".
error no_replica_here(const topic_state* topic, const model::topic_partition& tp) {
  if (topic == nullptr) return error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)};
  const auto index = static_cast<size_t>(tp.partition.value());
  if (tp.partition.value() >= 0 && index < topic->partitions.size()) {
    // Its files did not open (damaged): offline here, as Kafka answers for a replica on a failed
    // log directory (KAFKA_STORAGE_ERROR), never "created a moment ago" (the breaker of session 40).
    std::string why = topic->partitions[index]->open_failure();
    if (!why.empty()) {
      return error{errc::kafka_storage_error, "this broker's replica of " + tp.topic + "-" +
                                                  std::to_string(tp.partition.value()) + " is offline: " + why};
    }
  }
  return error{errc::not_leader_or_follower, "this broker has not opened its replica of " + tp.topic + "-" +
                                                 std::to_string(tp.partition.value()) +
                                                 " yet (the topic was created a moment ago): retry"};
}

namespace {

/// One record of a batch (`k` its index, `header` its batch's): a compacted topic needs its key,
/// its offset must be the batch's k-th, a delivery time (sets `any_delay_header`) may not be
/// inside a transaction, and a Kafka client's delayed record (`now_ms`) may not carry the source
/// header of a scheduler's move (a peer forwards moves, due on the peer's clock). The refusal, or
/// nullopt.
std::optional<error> check_produced_record(const codec::record_view& record, int64_t k, const codec::batch_header& header,
                                           const storage::log_config& config, const std::string& which,
                                           const std::string& topic, bool& any_delay_header,
                                           produce_pipeline::batch_origin origin, int64_t now_ms) {
  if (config.compacted() && !record.key) return compacted_key_missing(which + ": record " + std::to_string(k), topic, config);
  // A producer numbers its records 0..n-1 (Kafka: "inner record offsets must be consecutive").
  if (record.record_offset != header.base_offset + k) {
    return error{errc::corrupt_message, which + ": record offset deltas are not 0..records_count-1"};
  }
  if (origin == produce_pipeline::batch_origin::kafka_client && delay_host::delayed_with_source(record.headers, now_ms)) {
    auto refused = delay_host::broker_header_refusal(delay::source_header);
    refused.message = which + ": record " + std::to_string(k) + ": " + refused.message;
    return refused;
  }
  if (!delay_host::has_delay_header(record.headers)) return std::nullopt;
  if (header.is_transactional()) {
    return error{errc::invalid_record, which + ": record " + std::to_string(k) +
                                           " names a delivery time inside a transaction; delayed delivery "
                                           "moves records after the append, which a transaction cannot span"};
  }
  // As the HTTP and WebSocket doors (delay_host::delivery_time_in): the delay topic's copy carries
  // no producer sequence, so each resend of the batch would be delayed and delivered again.
  if (header.producer.value() != model::no_producer_id) {
    return error{errc::invalid_record, which + ": record " + std::to_string(k) +
                                           " names a delivery time inside an idempotent producer session, whose "
                                           "resends could not be recognised once delayed; produce delayed records "
                                           "with enable.idempotence=false"};
  }
  any_delay_header = true;
  return std::nullopt;
}

}  // namespace

result<bool> produce_pipeline::validate_batches(const produce_batches_request& request,
                                                const storage::log_config& config, batch_origin origin,
                                                int64_t now_ms) {
  const auto& tp = request.partition;
  bool any_delay_header = false;
  for (size_t i = 0; i < request.batches.size(); ++i) {
    const auto& batch = request.batches[i];
    const std::string which = "batch " + std::to_string(i) + " of " + tp.topic + "-" + std::to_string(tp.partition.value());
    if (batch.size() > static_cast<size_t>(config.max_message_bytes)) {
      return error{errc::message_too_large, which + " is " + std::to_string(batch.size()) +
                                                " bytes, larger than max.message.bytes (" +
                                                std::to_string(config.max_message_bytes) + ")"};
    }
    // This node encoded local_records itself, after their per-record checks (keys of compacted
    // topics, delivery times): what validating and decoding them would check holds by
    // construction, and the log checks every batch's CRC once more as it appends (issue 32: the
    // CRC of an HTTP produce's batches was computed three times).
    if (origin == batch_origin::local_records) continue;
    auto header = codec::validate_batch(batch);
    if (!header.ok()) return error{errc::corrupt_message, which + ": " + header.error().message};
    if (header->is_control()) {
      return error{errc::invalid_request, which + " is a control batch: transaction markers are written by the "
                                                  "transaction coordinator (WriteTxnMarkers), never produced"};
    }
    if (header->has_delete_horizon()) {
      // KIP-534: only the log cleaner sets this bit, on batches it rewrites, and then
      // base_timestamp is the time a tombstone may go. From a producer it would make tombstones
      // vanish early (or late). Kafka's LogValidator does not check it; we refuse it.
      return error{errc::invalid_record,
                   which + ": attributes bit 6 (0x40, the delete horizon flag of KIP-534) is set; only the log "
                           "cleaner sets it, on batches it rewrites: a producer must leave it clear"};
    }
    if (header->is_transactional() && (header->producer.value() < 0 || header->producer_epoch_value.value() < 0 ||
                                       header->base_sequence.value() < 0)) {
      return error{errc::invalid_request, which + " is transactional without a producer id, epoch and sequence"};
    }
    if (header->records_count != header->last_offset_delta + 1) {
      return error{errc::corrupt_message, which + ": records_count " + std::to_string(header->records_count) +
                                              " does not match last_offset_delta " +
                                              std::to_string(header->last_offset_delta) + " + 1"};
    }
    // Read in place (no copy of any record) with the header validated above (no second CRC).
    // As when the records were decoded first: a batch that does not decode is corrupt, else the
    // first record these checks refuse is the answer.
    std::optional<error> refused;
    int64_t k = 0;
    auto walked = codec::visit_records(batch, *header, [&](const codec::record_view& record) -> codec::result<void> {
      if (!refused) refused = check_produced_record(record, k, *header, config, which, tp.topic, any_delay_header, origin, now_ms);
      ++k;
      return base::ok_v;
    });
    if (!walked.ok()) return error{errc::corrupt_message, which + ": " + walked.error().message};
    if (refused) return *refused;
  }
  return any_delay_header;
}

}  // namespace detail
}  // namespace ringlog::broker
