#pragma once
// Private to the kafka module: a Fetch response frame whose record sets are sent from segment
// files by reference (request_handler.h response_frame), Kafka's zero-copy fetch.

#include <cstdint>
#include <vector>

#include "ringlog/kafka/request_handler.h"

namespace ringlog::kafka::detail {

/// The first and last Fetch versions encode_fetch_frame knows the layout of (Fetch 4: record
/// batch v2; 12: the last that names topics, the listener's newest).
inline constexpr int16_t fetch_frame_version_min = 4;
inline constexpr int16_t fetch_frame_version_max = 12;

/// The record set of one partition as file ranges: `ranges[t][p]` belongs to
/// body.responses[t].partitions[p]; empty = that partition's `records` field is encoded as it is.
using fetch_frame_ranges = std::vector<std::vector<std::vector<io::file_range>>>;

/// Encodes `body` as the Fetch response frame (size prefix, header, body) at `version`
/// (fetch_frame_version_min..max) for `correlation_id`, with each partition that has ranges
/// carrying those bytes, concatenated, as its records: on the wire the frame is byte for byte
/// what encode_response_frame gives for the same body with those bytes in `records` (Kafka's
/// FetchResponse schema: `Records` is the last field of a partition, before its tagged fields).
/// Adjacent ranges of one file become one file piece. A partition with ranges must have no
/// records of its own and no tagged field set (diverging epoch, current leader, snapshot id,
/// unknown tagged fields); nor may the body or its topics carry unknown tagged fields.
/// Errors: the codec's (a topic name too long for its prefix).
protocol::result<response_frame> encode_fetch_frame(int16_t version, int32_t correlation_id,
                                                    const protocol::fetch_response_data& body,
                                                    const fetch_frame_ranges& ranges);

}  // namespace ringlog::kafka::detail
