#pragma once
// Records and bytes produced to and fetched from each topic by clients, whichever door they came
// through (HTTP, WebSocket, the Kafka protocol): /metrics' ringlog_topic_{records,bytes}_{in,out}_total
// and the console's throughput read these, so a topic written only by Kafka clients is not shown
// idle (the new user of session 31: kcat's records never appeared). Replication between brokers
// and the broker's own internal writes are not counted. One map per process behind a mutex: an
// increment holds it for the time of one map lookup, once per request and topic.
//
// Bytes: over HTTP and WebSocket the records' key, value and header bytes; over the Kafka
// protocol the record batches' bytes as sent (Kafka's BytesInPerSec / BytesOutPerSec count the
// same). Records out over Kafka: the offsets a fetch answer covers (control records of
// transactions included, a compacted topic's removed offsets not).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace ringlog::base {

struct topic_traffic_counts {
  uint64_t records_in = 0;
  uint64_t bytes_in = 0;
  uint64_t records_out = 0;
  uint64_t bytes_out = 0;
};

/// Counts `records` and `bytes` produced to `topic` (acknowledged only).
void count_topic_in(std::string_view topic, uint64_t records, uint64_t bytes);
/// Counts `records` and `bytes` answered to a client's fetch of `topic`.
void count_topic_out(std::string_view topic, uint64_t records, uint64_t bytes);
/// Every topic counted since the process started, by name.
std::map<std::string, topic_traffic_counts, std::less<>> topic_traffic();

}  // namespace ringlog::base
