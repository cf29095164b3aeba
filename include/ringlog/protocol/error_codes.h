#pragma once
// Kafka's error codes on the wire between brokers (the protocol guide's error table), as the
// int16 error_code fields of the generated messages carry them. Shared by the leader's side of
// replication and the follower's fetch loop (ringlog/partition/replica_fetcher.h), the active
// controller's AlterPartition answers (src/broker/replication_control.cc), which must agree with
// them, and the envelope's refusal of a duplicate registration (src/broker/cluster_requests.cc:
// metadata_writer's Envelope handler answers it, its write_entry reads it). Below the partition
// module because they are the wire's, not one module's (issue 28 stage C).

#include <cstdint>

namespace ringlog::protocol::error_codes {

inline constexpr int16_t code_none = 0;
inline constexpr int16_t code_offset_out_of_range = 1;
inline constexpr int16_t code_unknown_topic_or_partition = 3;
inline constexpr int16_t code_not_leader_or_follower = 6;
inline constexpr int16_t code_request_timed_out = 7;
inline constexpr int16_t code_invalid_partitions = 37;
inline constexpr int16_t code_not_controller = 41;
inline constexpr int16_t code_invalid_request = 42;
inline constexpr int16_t code_fenced_leader_epoch = 74;
inline constexpr int16_t code_unknown_leader_epoch = 75;
inline constexpr int16_t code_invalid_update_version = 95;
inline constexpr int16_t code_duplicate_broker_registration = 101;   // KIP-631: another live incarnation of the broker id
inline constexpr int16_t code_ineligible_replica = 107;

}  // namespace ringlog::protocol::error_codes
