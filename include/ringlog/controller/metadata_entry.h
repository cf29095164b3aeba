#pragma once
// A metadata entry: the metadata records of one change (a topic with its partitions and configs,
// a broker registration, ...) that must apply together, as the value of one record of the
// metadata log `__cluster_metadata-0` and the payload of one raft entry. Layout (all varints are
// Kafka's unsigned varints):
//   count                  number of records, 1..metadata_entry_records_max
//   count x { length, frame }
//                          frame = one metadata record in Kafka's record-value framing
//                          (frame version 1, record type, record version, the record)
// Kafka writes each metadata record as its own log record in one batch; ringlog groups them in
// one value so that one raft entry is one atomic change, and keeps Kafka's per-record framing
// inside so each record decodes with Kafka's schemas.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/protocol/messages.h"

namespace ringlog::controller {

/// Records in one entry: a topic of topic_partitions_max (10,000) partitions is one TopicRecord,
/// 10,000 PartitionRecords and its configs; past that an entry would exceed the metadata log's
/// 8 MiB batch limit anyway.
inline constexpr size_t metadata_entry_records_max = 20000;

/// Encodes `records` (1..metadata_entry_records_max), each at its highest version.
std::vector<std::byte> encode_metadata_entry(std::span<const protocol::metadata_record> records);
/// Errors: invalid_record naming the record index and what is wrong (truncated, a count of 0 or
/// above the limit, trailing bytes, a record the protocol codec refuses).
result<std::vector<protocol::metadata_record>> decode_metadata_entry(std::span<const std::byte> value);
/// Kafka's record type name, e.g. "TopicRecord".
std::string_view record_name(const protocol::metadata_record& record);
/// One line of text for a record, as Kafka's metadata shell prints it: the record name and its
/// fields, e.g. `TopicRecord(name=orders, topicId=AAAAAAAAAAAAAAAAAAAAAA)`.
std::string describe_record(const protocol::metadata_record& record);

}  // namespace ringlog::controller
