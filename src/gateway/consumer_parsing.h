#pragma once
// Request bodies of the v2 consumer routes and the v3 group routes -> broker requests, through
// simdjson like the produce bodies (request_parsing.h); no exceptions. Every refusal is an
// api_error naming the field with its JSON path ("offsets[2].partition") and the type it must
// have. A blank body reads as no fields (null): each parser says what that means for its route.
//
// Status codes follow the REST Proxy: 400 (40001) malformed JSON, 422 a field of the wrong shape
// (42204 for a consumer setting), 400 (40002) an illegal topic name (Kafka refuses it), 409
// (40903) topics and a pattern in one subscription.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "request_parsing.h"
#include "ringlog/broker/groups.h"

namespace ringlog::gateway {

/// POST /consumers/{group}: Confluent's consumer settings ("name", "format", "auto.offset.reset",
/// "auto.commit.enable", "group.instance.id", "partition.assignment.strategy", "fetch.min.bytes",
/// "consumer.request.timeout.ms" in [0, request_timeout_max_ms], "consumer.instance.timeout.ms"
/// and its alias "session.timeout.ms"), each a JSON string, number or boolean (the REST Proxy
/// takes strings); null is absent. An unknown setting is refused by name. group_id is left empty.
/// Retry settings (issue 18): "max.delivery.attempts", "retry.backoff.ms",
/// "retry.backoff.multiplier", "retry.backoff.max.ms", "retry.topic.template" and
/// "dead.letter.topic.template" (strings); when any is given, config.retry is
/// `retry_defaults` with them, refused (422 naming the key) outside delay::validate's bounds.
parsed<broker::consumer_instance_config> parse_create_consumer(std::string_view body, int64_t request_timeout_max_ms,
                                                               const delay::retry_policy& retry_defaults = {});

/// The retry settings of a body (the consumer-instance body, or a WebSocket join's fields):
/// nullopt when none of the six keys is there. Errors: 422 naming the key.
parsed<std::optional<delay::retry_policy>> parse_retry_settings(std::string_view body, const delay::retry_policy& defaults);

/// POST .../nacks: {"offsets": [{topic, partition, offset, reason}]} (1..; reason a string,
/// optional). Errors: 422 naming the field ("offsets[1].offset"), 400 for malformed JSON.
parsed<std::vector<broker::nack_request>> parse_nacks(std::string_view body);

/// POST .../subscription: {"topics": [string, ...]} (1..) or {"topic_pattern": string}.
parsed<group::subscription> parse_subscription(std::string_view body);

/// {"partitions": [{"topic", "partition"}]} of assign, positions/beginning|end and GET offsets;
/// no body or no "partitions": none.
parsed<std::vector<model::topic_partition>> parse_partitions(std::string_view body);

/// POST .../positions: {"offsets": [{topic, partition, offset}]} and/or Confluent's seek by time
/// {"timestamps": [{topic, partition, timestamp}]} (ISO-8601, or ms since the epoch); an element
/// of offsets may carry a timestamp instead of an offset (ringlog's older form, kept).
parsed<std::vector<broker::seek_request>> parse_seek(std::string_view body);

/// POST .../offsets: {"offsets": [{topic, partition, offset (the last processed), metadata}]}.
/// nullopt (commit everything returned to the instance) for no body, no "offsets" or [].
parsed<std::optional<std::vector<group::processed_offset>>> parse_commit(std::string_view body);

/// POST /v3/.../consumer-groups/{g}/offsets:reset: {"to": earliest|latest|timestamp|offset|shift,
/// "value": int64 (offset, shift), "timestamp": ms or ISO-8601 (timestamp), "topics": [string],
/// "dry_run": bool (default true)}. group_id is left empty.
parsed<broker::reset_offsets_request> parse_reset_offsets(std::string_view body);

}  // namespace ringlog::gateway
