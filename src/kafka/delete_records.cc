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

/// One partition of the request, in request order.
struct target {
  size_t topic_index = 0;
  int32_t partition = 0;
  int64_t offset = 0;
};

std::vector<target> targets_of(const protocol::delete_records_request_data& request) {
  std::vector<target> out;
  for (size_t t = 0; t < request.topics.size(); ++t) {
    for (const auto& p : request.topics[t].partitions) out.push_back({t, p.partition_index, p.offset});
  }
  return out;
}

/// The answer: each partition's result under its topic, in request order.
void answer_delete_records(const request_context& ctx, const std::vector<std::string>& names,
                           const std::vector<target>& targets, std::vector<partition_result>& results) {
  response out;
  for (const auto& name : names) {
    response::delete_records_topic_result t;
    t.name = name;
    out.topics.push_back(std::move(t));
  }
  for (size_t i = 0; i < results.size(); ++i) out.topics[targets[i].topic_index].partitions.push_back(results[i]);
  ctx.answer(out);
}

}  // namespace

void handle_delete_records(const request_context& ctx, protocol::delete_records_request_data request) {
  std::vector<std::string> names;
  for (const auto& t : request.topics) names.push_back(t.name);
  const std::vector<target> targets = targets_of(request);
  auto g = std::make_shared<gather<partition_result>>(
      targets.size(), [ctx, names, targets](std::vector<partition_result>& results) {
        answer_delete_records(ctx, names, targets, results);
      });
  for (size_t i = 0; i < targets.size(); ++i) {
    const target& t = targets[i];
    partition_result& slot = g->slot(i);
    slot.partition_index = t.partition;
    slot.low_watermark = invalid_low_watermark;
    // DELETE on the topic (KafkaApis.handleDeleteRecordsRequest), before its existence is
    // looked at: a principal without it learns nothing of the topic.
    if (!ctx.authorized(security::resource_type::topic, names[t.topic_index], security::acl_operation::delete_)) {
      slot.error_code = error_code::topic_authorization_failed;
      g->complete_one();
      continue;
    }
    broker::delete_records_request call;
    call.partition = model::topic_partition{names[t.topic_index], model::partition_id{t.partition}};
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
