#pragma once
// Request bodies -> broker requests (simdjson). Every refusal is an api_error whose message names
// the field (with its JSON path, e.g. "records[3].value") or the limit (with its config key).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "errors.h"
#include "ringlog/base/result.h"
#include "ringlog/broker/broker.h"

namespace ringlog::gateway {

template <typename T>
using parsed = base::result<T, api_error>;

/// Bounds every produce request is checked against before the broker sees it.
struct produce_limits {
  int32_t records_max = 10000;          // produce.records.max: records per request
  int64_t record_bytes_max = 1048588;   // message.max.bytes: key + value + headers of one record
};

/// v2 embedded formats (application/vnd.kafka.{binary,json}.v2+json).
enum class embedded_format { binary, json };

/// Body of v2 POST /topics/{t} or /topics/{t}/partitions/{p}:
/// {"records":[{"key":..,"value":..,"partition":N}]}. `partition_in_path`: records may not name one.
parsed<std::vector<broker::produce_record>> parse_v2_produce(std::string_view body, embedded_format format,
                                                             bool partition_in_path, const produce_limits& limits);

/// One record of a v3 produce body with what its delivery report echoes back.
struct v3_record {
  broker::produce_record record;
  std::string key_type;     // "BINARY" | "JSON" | "STRING", "" when there is no key
  std::string value_type;
  size_t key_size = 0;
  size_t value_size = 0;
};
/// A v3 record, or the reason that one record was refused (its report carries the error).
struct v3_item {
  std::optional<v3_record> record;
  std::optional<api_error> failure;
};
/// Body of v3 POST .../records: one JSON object, or several concatenated (streaming). Malformed
/// JSON anywhere refuses the whole request (nothing is produced); a well-formed record with a bad
/// field fails alone, in order.
/// `first_index` numbers the records in field paths ("records[N]..."): a produce stream parses
/// its body piece by piece and keeps counting.
parsed<std::vector<v3_item>> parse_v3_records(std::string_view body, const produce_limits& limits,
                                              size_t first_index = 0);

/// Whether a request body is empty or only whitespace.
bool is_blank(std::string_view body);
/// 422/422 for an empty body where the route reads one (Confluent: "Request body is empty");
/// `expected` names what the route reads, e.g. "{\"records\": [...]}".
api_error empty_body_error(std::string_view expected);

/// One entry of a v3 records:batch body: the client's id and the record, or why it was refused.
struct v3_batch_entry {
  std::string id;
  v3_item item;
};
/// Longest batch entry id, bytes: an id is a short client label echoed in the answer (Confluent's
/// BATCH_ID_MAXIMUM_LENGTH; ids are [0-9a-zA-Z_-], so bytes and characters count alike).
inline constexpr size_t batch_entry_id_bytes_max = 80;
/// Body of v3 POST .../records:batch: {"entries":[{"id": string, ...a v3 record's fields}]}.
/// Refuses the whole request for an unknown top-level field (422), a missing or repeated id (400)
/// or too many entries (42201); an entry with invalid data fails alone (400 in its failure).
parsed<std::vector<v3_batch_entry>> parse_v3_batch(std::string_view body, const produce_limits& limits);

/// v3 POST /v3/clusters/{c}/topics: {"topic_name","partitions_count","replication_factor","configs":[{name,value}],"validate_only"}.
parsed<broker::create_topic_request> parse_create_topic(std::string_view body);
/// v3 PATCH /v3/clusters/{c}/topics/{t}: {"partitions_count": N}.
parsed<int32_t> parse_patch_topic(std::string_view body);
/// Most partitions one elect-leaders request names (a named bound on the request's work).
inline constexpr size_t elect_leaders_partitions_max = 10000;
/// POST /v3/clusters/{c}/elect-leaders: {"election_type": "PREFERRED", "partitions":
/// [{"topic_name", "partition_id"}] | null}; an empty body or no "partitions" = every partition.
/// election_type other than PREFERRED (Kafka's UNCLEAN is unclean.leader.election.enable's job
/// here) and more than elect_leaders_partitions_max partitions are refused (422).
parsed<std::vector<std::pair<std::string, int32_t>>> parse_elect_leaders(std::string_view body);

/// Most partitions one reassignment request names (a named bound on the request's work and on
/// the size of its metadata entry).
inline constexpr size_t reassignment_partitions_max = 10000;
/// POST /v3/clusters/{c}/topics/-/partitions/-/reassignment:alter (ringlog's):
/// {"data": [{"topic_name", "partition_id", "replicas": [broker ids] | null}]} (null cancels).
/// Errors (422): a missing field, a wrong type, no partitions or more than
/// reassignment_partitions_max.
parsed<std::vector<broker::partition_reassignment_target>> parse_reassignments(std::string_view body);
/// PATCH .../topics/{t}/partitions/{p}/reassignment (ringlog's): {"replicas": [broker ids]}.
parsed<std::vector<int32_t>> parse_reassignment_replicas(std::string_view body);
/// POST .../acls (Confluent v3): {"resource_type", "resource_name", "pattern_type", "principal",
/// "host" (default "*"), "operation", "permission"} with Kafka's names (TOPIC, LITERAL, READ,
/// ALLOW; any case); with `batch`, {"data": [those]} (acls:batch, at most acls_per_request_max).
/// Values are checked by broker::create_acls (security::validate_acl); unknown names: 400 naming the field.
parsed<std::vector<security::acl_binding>> parse_acls(std::string_view body, bool batch);
/// Most ACLs one acls:batch body may hold.
inline constexpr size_t acls_per_request_max = 1000;

struct alter_configs_request {
  std::map<std::string, std::optional<std::string>> changes;   // nullopt: reset to default
  /// With topic names (topics/-/configs:alter): the changes of each topic.
  std::map<std::string, std::map<std::string, std::optional<std::string>>> by_topic;
  bool validate_only = false;
};
/// v3 POST .../configs:alter (Confluent's AlterConfigBatchRequestData):
/// {"data":[{"name","value","operation":"SET"|"DELETE"}],"validate_only"}; SET needs a value.
/// `with_topic_names` (POST .../topics/-/configs:alter, Confluent's
/// AlterMultipleTopicsConfigsBatchRequestData): {"data":[{"topic_name","configs":[{"name",
/// "value","operation"}]}],"validate_only"}, a missing topic_name or configs 400, the changes in
/// by_topic. Errors: 400 malformed JSON or a missing field; 422 a wrong type, an unknown field or
/// operation, SET without a value.
parsed<alter_configs_request> parse_alter_configs(std::string_view body, bool with_topic_names = false);

/// ISO-8601 date-time ("2021-02-05T19:14:42.123Z", "+01:00" offsets) -> ms since the epoch.
/// A WebSocket `produce` message (http-api/ws-protocol.md) in its common shape, read without
/// building a JSON tree: binary format, no headers, `partition` absent/null/0..INT32_MAX, `key`
/// and `value` absent/null/base64 text, `acks` absent/0/1/-1/"all"; either one record at the top
/// level or a `records` array of 1..`records_max` objects with only those three fields. nullopt
/// for anything else (another type, json format, headers, a wrong type, bad base64, a record
/// field at the top level beside `records`, not JSON): the caller then takes its general path,
/// which names the problem. Runs for every produce message.
struct ws_produce_message {
  std::string id_json = "null";   // the client's "id" as JSON text, echoed in the answer
  std::string topic;
  std::vector<broker::produce_record> records;   // one, or the `records` array in order
  bool multi = false;                              // it had `records`: answered with `results`
  broker::acks_mode acks = broker::acks_mode::all;
};
std::optional<ws_produce_message> parse_ws_produce_fast(std::string_view text, size_t records_max);

std::optional<int64_t> parse_iso8601_ms(std::string_view text);
/// ms since the epoch -> "2021-02-05T19:14:42.123Z".
std::string format_iso8601_ms(int64_t ms);

}  // namespace ringlog::gateway
