#pragma once
// Private to the kafka module: one function per served api, each taking the decoded request and
// answering through the context. Broker calls complete on shard threads; every function here is
// safe to run on any thread (the request_handler's only mutable state is an atomic count).

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/base/assert.h"
#include "ringlog/kafka/request_handler.h"
#include "ringlog/protocol/messages.h"

namespace ringlog::kafka::detail {

/// Kafka error codes used here by number (org.apache.kafka.common.protocol.Errors).
namespace error_code {
inline constexpr int16_t none = 0;
inline constexpr int16_t offset_out_of_range = 1;
inline constexpr int16_t unknown_topic_or_partition = 3;
inline constexpr int16_t leader_not_available = 5;
inline constexpr int16_t not_leader_or_follower = 6;
inline constexpr int16_t coordinator_not_available = 15;
inline constexpr int16_t invalid_topic_exception = 17;
inline constexpr int16_t unsupported_sasl_mechanism = 33;
inline constexpr int16_t illegal_sasl_state = 34;
inline constexpr int16_t unsupported_version = 35;
inline constexpr int16_t invalid_partitions = 37;
inline constexpr int16_t invalid_replica_assignment = 39;
inline constexpr int16_t invalid_config = 40;
inline constexpr int16_t invalid_request = 42;
inline constexpr int16_t topic_authorization_failed = 29;
inline constexpr int16_t group_authorization_failed = 30;
inline constexpr int16_t cluster_authorization_failed = 31;
inline constexpr int16_t transactional_id_authorization_failed = 53;
inline constexpr int16_t operation_not_attempted = 55;
inline constexpr int16_t sasl_authentication_failed = 58;
inline constexpr int16_t fetch_session_id_not_found = 70;
inline constexpr int16_t fenced_leader_epoch = 74;
inline constexpr int16_t unknown_leader_epoch = 75;
inline constexpr int16_t throttling_quota_exceeded = 89;
inline constexpr int16_t unknown_topic_id = 100;
}  // namespace error_code

/// Kafka's ConfigResource.Type.
/// Kafka's DescribeConfigsResponse ConfigSource number of a config's source (KIP-226):
/// DYNAMIC_TOPIC_CONFIG 1, DYNAMIC_BROKER_CONFIG 2, DYNAMIC_DEFAULT_BROKER_CONFIG 3,
/// STATIC_BROKER_CONFIG 4, DEFAULT_CONFIG 5.
inline int8_t config_source_code(broker::config_source source) {
  switch (source) {
    case broker::config_source::dynamic_topic_config: return 1;
    case broker::config_source::dynamic_broker_config: return 2;
    case broker::config_source::dynamic_default_broker_config: return 3;
    case broker::config_source::static_broker_config: return 4;
    case broker::config_source::default_config: return 5;
  }
  return 0;   // UNKNOWN
}
inline constexpr int8_t resource_type_topic = 2;
inline constexpr int8_t resource_type_broker = 4;

/// When a request arrived and how long its dispatch on the listener's thread took: the time
/// request_percentage counts (Kafka counts a request's time on its I/O thread; here that is
/// decoding, authorization and handing the work to the shards, never a long-poll's or an acks
/// wait). Shared by the copies of a request's context.
struct request_timing {
  int64_t received_ns = 0;                  // base::monotonic_ns at arrival
  std::atomic<int64_t> dispatch_ns{0};      // 0 while handle() still runs, then its duration
  /// The throttle time a quota asked while handle() ran (Produce's producer_byte_rate), ms; set
  /// and read on the dispatching thread, handed to the listener (request_handler::handle).
  int64_t dispatch_throttle_ms = 0;
};

struct request_context;

/// The audit lines of the Kafka door's admin writes (issue 29; admin_audit.cc): one line per
/// resource the answer names (topic, group, config resource, ACL, user, quota entity, partition)
/// with its result as Kafka's error name (NONE, TOPIC_ALREADY_EXISTS, ...), written as the answer
/// is sent, so the line says what happened, not what was asked. Other answers write nothing.
void audit_answer(const request_context& ctx, const protocol::create_topics_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::delete_topics_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::alter_configs_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::incremental_alter_configs_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::create_partitions_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::delete_groups_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::create_acls_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::delete_acls_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::alter_partition_reassignments_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::offset_delete_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::delete_records_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::alter_client_quotas_response_data& answer);
void audit_answer(const request_context& ctx, const protocol::alter_user_scram_credentials_response_data& answer);
template <typename Body>
void audit_answer(const request_context&, const Body&) {}
/// The names audit_subjects holds for a request whose answer does not name them.
std::vector<std::string> audit_subjects_of(const protocol::create_acls_request_data& request);
std::vector<std::string> audit_subjects_of(const protocol::offset_delete_request_data& request);
/// Kafka's name of a protocol error code ("NONE", "TOPIC_ALREADY_EXISTS"; "ERROR_CODE_n" for one
/// without a name here).
std::string kafka_error_name(int16_t code);

struct request_context {
  request_handler* handler = nullptr;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  respond_fn respond;
  std::string client_id;    // the request header's client.id ("" when null)
  std::string client_host;  // the connection's peer address ("" when unknown), as ACL hosts name it
  security::kafka_principal principal;   // the connection's (issue 29): what every check asks for
  int16_t api_key = 0;
  std::shared_ptr<request_timing> timing;   // nullptr: the request time is not counted
  /// An admin write whose answer does not name what it changed (CreateAcls: each creation's ACL,
  /// in the request's order; OffsetDelete: the group): those names, for its audit lines
  /// (admin_audit.cc); nullptr for every other request.
  std::shared_ptr<const std::vector<std::string>> audit_subjects;

  /// Whether the connection's principal, from client_host, may do `operation` on the resource
  /// (security_api::authorize, the one rule set: always true without authorizer.class.name). The
  /// checks each api makes are listed in authorization.cc.
  [[nodiscard]] bool authorized(security::resource_type resource, std::string_view name,
                                security::acl_operation operation) const;
  /// As authorized(), but a denial is not logged: for answers filtered to what the principal may
  /// see without refusing the request (Kafka's logIfDenied = false, e.g. the topic partitions of
  /// a DescribeTransactions answer, KIP-664).
  [[nodiscard]] bool authorized_unlogged(security::resource_type resource, std::string_view name,
                                         security::acl_operation operation) const;
  /// Logs `action` refused, as authorized() logs its refusals (an audit line, within the
  /// listener's budget of lines a second), for a refusal decided elsewhere (broker/security.h's
  /// rules of every door).
  void log_denial(const security::acl_action& action) const;
  [[nodiscard]] bool authorized_cluster(security::acl_operation operation) const {
    return authorized(security::resource_type::cluster, security::cluster_resource_name, operation);
  }
  /// Kafka's authorized_operations bitfield of the resource for this principal (Metadata v8+,
  /// DescribeCluster, DescribeGroups v3+ when asked): bit `code` per AclOperation allowed.
  [[nodiscard]] int32_t authorized_operations(security::resource_type resource, std::string_view name) const;

  [[nodiscard]] broker::broker& broker_api() const { return handler->broker_api(); }
  [[nodiscard]] const handler_options& options() const { return handler->options(); }

  /// Encodes `body` as the response frame at the request's version and sends it. Its
  /// throttle_time_ms (where the api has one) becomes the most of what the handler put there
  /// (producer/consumer byte rates, controller mutations) and the request_percentage quota's
  /// (client_quotas.cc; KIP-219), and the listener throttles the connection by it.
  template <typename Body>
  void answer(const Body& body) const {
    audit_answer(*this, body);
    const int64_t request_ms = request_throttle_time_ms();
    if constexpr (requires(const Body& b) { b.throttle_time_ms; }) {
      if (request_ms > body.throttle_time_ms) {
        Body throttled = body;
        throttled.throttle_time_ms = static_cast<int32_t>(request_ms);
        return encode_and_send(throttled, request_ms);
      }
      encode_and_send(body, body.throttle_time_ms);
    } else {
      encode_and_send(body, request_ms);
    }
  }
  void answer_nothing() const { respond(std::nullopt); }
  /// Records the request's handling time under request_percentage (KIP-124) for its user and
  /// client id and answers the throttle time that quota asks, ms (0: none set, or within it).
  [[nodiscard]] int64_t request_throttle_time_ms() const;
  /// Sends a whole frame whose body already carries `throttle_ms`, telling the listener to
  /// throttle the connection that long (response_frame::throttle_time_ms; 0 = not at all).
  void respond_throttled(response_frame frame, int64_t throttle_ms) const;

 private:
  template <typename Body>
  void encode_and_send(const Body& body, int64_t throttle_ms) const {
    protocol::writer w;
    auto written = protocol::encode_response_frame(w, api_version, correlation_id, body);
    RINGLOG_ASSERT(written.ok(), "a response built by the kafka module must encode at the request's version");
    respond_throttled(response_frame(std::move(w).take()), throttle_ms);
  }
};

/// Decodes a request body that must fill `body` exactly. Errors: the codec's, or trailing_bytes.
template <typename Body>
protocol::result<Body> decode_body(std::span<const std::byte> body, int16_t version) {
  protocol::reader rd(body);
  auto decoded = Body::decode(rd, version);
  if (!decoded.ok()) return decoded.error();
  if (rd.remaining() != 0) {
    return protocol::error{protocol::errc::trailing_bytes, std::string(Body::schema_name) + " v" +
                                                               std::to_string(version) + ": " +
                                                               std::to_string(rd.remaining()) + " bytes after the body"};
  }
  return decoded;
}

inline int16_t code_of(const broker::error& e) { return static_cast<int16_t>(broker::kafka_error_code(e.code)); }

/// Collects `count` asynchronous answers into slots (each written by one callback, on any
/// thread) and runs `done` once, on the thread of the last one, when all are in.
template <typename T>
class gather : public std::enable_shared_from_this<gather<T>> {
 public:
  gather(size_t count, std::function<void(std::vector<T>&)> done)
      : slots_(count), count_(count), remaining_(count), done_(std::move(done)) {}
  T& slot(size_t i) { return slots_[i]; }
  void complete_one() {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_(slots_);
  }
  /// For count == 0: runs done at once. (Not slots_.empty(): done may have moved the slots out
  /// already, when every answer came in before this call.)
  void finish_if_empty() {
    if (count_ == 0) done_(slots_);
  }

 private:
  std::vector<T> slots_;
  const size_t count_;
  std::atomic<size_t> remaining_;
  std::function<void(std::vector<T>&)> done_;
};

/// The partitions of a request that names them under its topics (ListOffsets,
/// OffsetForLeaderEpoch, DeleteRecords), in request order: one slot of a gather each.
template <class RequestTopic>
struct partition_targets {
  using partition = typename decltype(RequestTopic::partitions)::value_type;
  std::vector<std::string> names;       ///< the request's topics, in request order
  std::vector<size_t> topic_of;         ///< per target: the index of its topic in `names`
  std::vector<partition> partitions;    ///< per target: its entry in the request
};

/// `topics`' partitions as targets; `name` is the field that names a request topic.
template <class RequestTopic>
partition_targets<RequestTopic> targets_of(const std::vector<RequestTopic>& topics, std::string RequestTopic::*name) {
  partition_targets<RequestTopic> out;
  for (size_t t = 0; t < topics.size(); ++t) {
    out.names.push_back(topics[t].*name);
    for (const auto& p : topics[t].partitions) {
      out.topic_of.push_back(t);
      out.partitions.push_back(p);
    }
  }
  return out;
}

/// A gather with one `Result` slot per target that, once every slot is in, answers `ctx` with a
/// `Response` listing the request's topics in request order (each named in its `name` field)
/// with their targets' results in request order.
template <class Response, class Result, class RequestTopic, class TopicResult>
std::shared_ptr<gather<Result>> gather_by_topic(const request_context& ctx, const partition_targets<RequestTopic>& targets,
                                                std::string TopicResult::*name) {
  return std::make_shared<gather<Result>>(
      targets.partitions.size(), [ctx, names = targets.names, topic_of = targets.topic_of, name](std::vector<Result>& results) {
        Response out;
        for (const auto& n : names) {
          TopicResult t;
          t.*name = n;
          out.topics.push_back(std::move(t));
        }
        for (size_t i = 0; i < results.size(); ++i) out.topics[topic_of[i]].partitions.push_back(std::move(results[i]));
        ctx.answer(out);
      });
}

// ---- admin.cc
void handle_metadata(const request_context& ctx, protocol::metadata_request_data request);
void handle_create_topics(const request_context& ctx, protocol::create_topics_request_data request);
void handle_delete_topics(const request_context& ctx, protocol::delete_topics_request_data request);
void handle_create_partitions(const request_context& ctx, protocol::create_partitions_request_data request);
void handle_describe_cluster(const request_context& ctx, protocol::describe_cluster_request_data request);
void handle_alter_partition_reassignments(const request_context& ctx,
                                          protocol::alter_partition_reassignments_request_data request);
void handle_list_partition_reassignments(const request_context& ctx,
                                         protocol::list_partition_reassignments_request_data request);
void handle_find_coordinator(const request_context& ctx, protocol::find_coordinator_request_data request);
// ---- delete_records.cc
void handle_delete_records(const request_context& ctx, protocol::delete_records_request_data request);
// ---- acls.cc
void handle_describe_acls(const request_context& ctx, protocol::describe_acls_request_data request);
void handle_create_acls(const request_context& ctx, protocol::create_acls_request_data request);
void handle_delete_acls(const request_context& ctx, protocol::delete_acls_request_data request);
// ---- configs.cc
void handle_describe_configs(const request_context& ctx, protocol::describe_configs_request_data request);
void handle_alter_configs(const request_context& ctx, protocol::alter_configs_request_data request);
void handle_incremental_alter_configs(const request_context& ctx,
                                      protocol::incremental_alter_configs_request_data request);
// ---- groups.cc
void handle_offset_commit(const request_context& ctx, protocol::offset_commit_request_data request);
void handle_offset_fetch(const request_context& ctx, protocol::offset_fetch_request_data request);
void handle_list_groups(const request_context& ctx, protocol::list_groups_request_data request);
void handle_describe_groups(const request_context& ctx, protocol::describe_groups_request_data request);
void handle_delete_groups(const request_context& ctx, protocol::delete_groups_request_data request);
void handle_join_group(const request_context& ctx, protocol::join_group_request_data request);
void handle_sync_group(const request_context& ctx, protocol::sync_group_request_data request);
void handle_heartbeat(const request_context& ctx, protocol::heartbeat_request_data request);
void handle_leave_group(const request_context& ctx, protocol::leave_group_request_data request);
void handle_offset_delete(const request_context& ctx, protocol::offset_delete_request_data request);
// ---- producers.cc
void handle_init_producer_id(const request_context& ctx, protocol::init_producer_id_request_data request);
// ---- transactions.cc
void handle_init_producer_id_transactional(const request_context& ctx, protocol::init_producer_id_request_data request);
/// InitProducerId's answer has no error message field: a refusal by a broker limit
/// (THROTTLING_QUOTA_EXCEEDED: transactional_ids_per_partition_max, producer id requests queued
/// for a block) is told in a warning instead, naming the limit, the client and the
/// transactional id (`transactional_id` nullptr: an idempotent producer). At most one line per
/// init_producer_id_refusal_log_interval_ms; the next one counts those left out (a client retries
/// this code every retry.backoff.ms).
void log_init_producer_id_refusal(const request_context& ctx, const std::string* transactional_id, const broker::error& e);
void handle_add_partitions_to_txn(const request_context& ctx, protocol::add_partitions_to_txn_request_data request);
void handle_add_offsets_to_txn(const request_context& ctx, protocol::add_offsets_to_txn_request_data request);
void handle_end_txn(const request_context& ctx, protocol::end_txn_request_data request);
void handle_txn_offset_commit(const request_context& ctx, protocol::txn_offset_commit_request_data request);
void handle_describe_transactions(const request_context& ctx, protocol::describe_transactions_request_data request);
void handle_describe_producers(const request_context& ctx, protocol::describe_producers_request_data request);
void handle_list_transactions(const request_context& ctx, protocol::list_transactions_request_data request);
// ---- client_quotas.cc (issue 31)
void handle_describe_client_quotas(const request_context& ctx, protocol::describe_client_quotas_request_data request);
void handle_alter_client_quotas(const request_context& ctx, protocol::alter_client_quotas_request_data request);
/// KIP-219: whether a client on `api_version` of `api_key` waits out a throttle time by itself
/// (Kafka's AbstractResponse.shouldClientThrottle); false = the broker holds the answer back.
bool client_throttles(int16_t api_key, int16_t api_version);
/// The quota user of a principal (Kafka's quota entity user: the principal's name).
inline std::string_view quota_user(const request_context& ctx) { return ctx.principal.name; }
// ---- users.cc
void handle_describe_user_scram_credentials(const request_context& ctx,
                                            protocol::describe_user_scram_credentials_request_data request);
void handle_alter_user_scram_credentials(const request_context& ctx,
                                         protocol::alter_user_scram_credentials_request_data request);
// ---- data.cc
void handle_produce(const request_context& ctx, protocol::produce_request_data request);
void handle_fetch(const request_context& ctx, protocol::fetch_request_data request);
void handle_list_offsets(const request_context& ctx, protocol::list_offsets_request_data request);
void handle_offset_for_leader_epoch(const request_context& ctx, protocol::offset_for_leader_epoch_request_data request);

}  // namespace ringlog::kafka::detail
