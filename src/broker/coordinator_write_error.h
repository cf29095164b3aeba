#pragma once
// What a coordinator's client hears when the coordinator could not write its records to its
// internal topic (__consumer_offsets, __transaction_state). Private to the broker module.

#include <string>
#include <string_view>

#include "ringlog/broker/broker.h"

namespace ringlog::broker {

/// `e`, an append's error on the coordinator's own partition, as the coordinator's call answers
/// it; `what` says what was written ("the transaction's state", "the group's records"), `topic`
/// where. The partition's errors mean the coordinator moved or cannot write now: Kafka maps them
/// (TransactionStateManager.appendTransactionToLog, GroupMetadataManager.storeOffsets and
/// storeGroup) to NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE so the client finds the coordinator
/// again and retries, rather than passing the partition-level error on (a NOT_LEADER_OR_FOLLOWER
/// to EndTxn or TxnOffsetCommit makes librdkafka abort a transaction). ringlog answers
/// NOT_COORDINATOR for both (retriable, the same client behaviour); other errors pass unchanged.
inline error coordinator_write_error(const error& e, std::string_view what, std::string_view topic) {
  switch (e.code) {
    case errc::not_leader_or_follower:
    case errc::kafka_storage_error:
    case errc::not_enough_replicas:
    case errc::not_enough_replicas_after_append:
    case errc::request_timed_out:
    case errc::unknown_topic_or_partition:
    case errc::throttling_quota_exceeded:
    case errc::broker_not_available:
      return error{errc::not_coordinator, std::string(what) + " could not be written to " + std::string(topic) + " (" +
                                              e.message + "): find the coordinator again and retry"};
    default:
      return e;
  }
}

}  // namespace ringlog::broker
