// DeleteRecords (API 21, KIP-107: kafka-delete-records.sh, AdminClient.deleteRecords, KafkaJS
// admin.deleteTopicRecords) onto broker::delete_records, one call per partition, as Kafka's
// KafkaApis.handleDeleteRecordsRequest hands them to its ReplicaManager.

#include "handlers.h"

namespace ringlog::kafka::detail {

namespace {

using response = protocol::delete_records_response_data;
using partition_result = response::delete_records_partition_result;

/// Kafka's low watermark of a partition that failed (DeleteRecordsResponse.INVALID_LOW_WATERMARK).
constexpr int64_t invalid_low_watermark = -1;

}  // namespace

void handle_delete_records(const request_context& ctx, protocol::delete_records_request_data request) {
  const auto targets = targets_of(request.topics, &protocol::delete_records_request_data::delete_records_topic::name);
  auto g = gather_by_topic<response, partition_result>(ctx, targets, &response::delete_records_topic_result::name);
  for (size_t i = 0; i < targets.partitions.size(); ++i) {
    const auto& t = targets.partitions[i];
    const std::string& topic = targets.names[targets.topic_of[i]];
    partition_result& slot = g->slot(i);
    slot.partition_index = t.partition_index;
    slot.low_watermark = invalid_low_watermark;
    // DELETE on the topic (KafkaApis.handleDeleteRecordsRequest), before its existence is
    // looked at: a principal without it learns nothing of the topic.
    if (!ctx.authorized(security::resource_type::topic, topic, security::acl_operation::delete_)) {
      slot.error_code = error_code::topic_authorization_failed;
      g->complete_one();
      continue;
    }
    broker::delete_records_request call;
    call.partition = model::topic_partition{topic, model::partition_id{t.partition_index}};
    call.offset = t.offset;
    call.timeout_ms = request.timeout_ms;
    ctx.broker_api().delete_records(std::move(call), [g, i](broker::result<broker::delete_records_response> r) {
      partition_result& res = g->slot(i);
      if (r.ok()) res.low_watermark = r->low_watermark.value();
      else res.error_code = code_of(r.error());
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

}  // namespace ringlog::kafka::detail
