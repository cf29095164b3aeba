#pragma once
// The REST proxy's error model: every error is {"error_code": N, "message": "..."} where N is the
// HTTP status times 100 plus a sub-code (Confluent REST Proxy API reference, "Errors"). This is
// the one place broker::errc values become HTTP statuses and error codes.

#include <string>
#include <string_view>

#include "http_types.h"
#include "ringlog/broker/errc.h"

namespace ringlog::gateway {

/// The codes the gateway answers with (Confluent's where they exist).
namespace error_codes {
inline constexpr int invalid_request = 400;          // Confluent: a body its request model cannot hold (a required
                                                    // field missing), a v3 record with invalid data
inline constexpr int temporary_redirect = 307;      // ringlog: served by another broker (Location names it)
inline constexpr int bad_request = 40001;           // malformed JSON / request line
inline constexpr int kafka_bad_request = 40002;     // Kafka refused: topic exists, bad name/config/partitions
inline constexpr int forbidden = 40301;             // writes to internal topics
inline constexpr int not_found = 404;               // no such route / cluster
inline constexpr int topic_not_found = 40401;
inline constexpr int partition_not_found = 40402;
inline constexpr int consumer_instance_not_found = 40403;
inline constexpr int group_not_found = 40404;       // ringlog: no such consumer group (admin routes)
inline constexpr int producer_not_found = 40405;    // ringlog: a producer id the cluster never handed out (UNKNOWN_PRODUCER_ID)
inline constexpr int transaction_not_found = 40406; // ringlog: no such transactional.id at its coordinator (TRANSACTIONAL_ID_NOT_FOUND)
inline constexpr int method_not_allowed = 405;
inline constexpr int not_acceptable = 406;          // Accept names nothing the route produces (Confluent: 406)
inline constexpr int consumer_format_mismatch = 40601;  // Confluent: a consumer's format is not the Accept of its records read
inline constexpr int request_timeout = 40801;
inline constexpr int consumer_already_subscribed = 40901;  // Confluent: subscribed to another target
inline constexpr int consumer_already_exists = 40902;      // Confluent: instance name taken
inline constexpr int illegal_state = 40903;         // Confluent: subscription/assignment mixed; ringlog: stale generation, partition not owned
inline constexpr int group_not_empty = 40904;       // ringlog: delete/reset of a group with members
inline constexpr int out_of_order_sequence = 40905; // ringlog: OUT_OF_ORDER_SEQUENCE_NUMBER, a batch was skipped
inline constexpr int producer_fenced = 40906;       // ringlog: INVALID_PRODUCER_EPOCH, a newer session owns the producer id
inline constexpr int concurrent_transactions = 40907;  // ringlog: CONCURRENT_TRANSACTIONS, the transaction is ending: retry
inline constexpr int upgrade_required = 426;        // ringlog: /v1/ws asked without Upgrade: websocket (RFC 9110 15.5.22)
inline constexpr int payload_too_large = 41301;     // body over http.request.body.max.bytes
inline constexpr int unsupported_media_type = 415;  // Confluent: 415 (41501 is not one of its codes)
inline constexpr int record_too_large = 42201;      // keys/values too large, too many records
inline constexpr int invalid_offset_or_partition = 42202;
inline constexpr int invalid_consumer_config = 42204;  // Confluent: a consumer setting is invalid
inline constexpr int unprocessable = 422;           // well-formed JSON with a bad field (named), an empty body.
                                                    // Confluent's 42205 means "invalid schema": no schemas here
inline constexpr int misdirected_request = 42101;   // ringlog: a dedicated controller serves no records (send to a broker)
inline constexpr int too_many_requests = 42901;     // a named queue is full: retry later
inline constexpr int kafka_error = 50002;
inline constexpr int not_implemented = 50101;       // a transfer coding other than chunked
inline constexpr int kafka_retriable_error = 50003;
inline constexpr int unavailable = 50301;           // shutting down, no leader here, KAFKA_STORAGE_ERROR: retry
inline constexpr int offset_not_available = 50302;  // ringlog: OFFSET_NOT_AVAILABLE (KIP-207): a new leader is establishing
                                                    // the partition's end (high watermark); retry after Retry-After
}  // namespace error_codes

struct api_error {
  unsigned status;
  int error_code;
  std::string message;
};

/// What a request was about, to tell "topic not found" (40401) from "partition not found" (40402).
enum class error_scope { topic, partition };

/// broker::errc -> HTTP. `topic_exists` matters only for unknown_topic_or_partition in the
/// partition scope: then the topic exists and the partition does not (40402).
api_error to_api_error(const broker::error& e, error_scope scope = error_scope::topic, bool topic_exists = false);

/// Whether a client may retry the call unchanged (Kafka's "retriable" column).
bool is_retriable(broker::errc code);

/// The JSON body {"error_code":..,"message":..}.
std::string error_body(int error_code, std::string_view message);
http_response error_response(const api_error& e);
inline http_response error_response(unsigned status, int error_code, std::string_view message) {
  return error_response(api_error{status, error_code, std::string(message)});
}

}  // namespace ringlog::gateway
