#pragma once
// Kafka's default partitioner for keyed records: murmur2 of the key bytes, made positive with
// `& 0x7fffffff`, modulo the partition count (org.apache.kafka.common.utils.Utils.murmur2 and
// toPositive), so a key lands on the partition a Java client would choose.

#include <cstddef>
#include <cstdint>
#include <span>

namespace ringlog::broker {

/// Kafka's murmur2 (seed 0x9747b28c) of `key`.
int32_t murmur2(std::span<const std::byte> key) noexcept;
/// The partition in [0, partition_count) for `key`. Precondition: partition_count > 0.
int32_t partition_for_key(std::span<const std::byte> key, int32_t partition_count) noexcept;

}  // namespace ringlog::broker
