// Transactions for Kafka clients (KIP-98, KIP-447, KIP-890): InitProducerId with a
// transactional.id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
// ListTransactions and DescribeProducers (KIP-664, the partitions' producer state), on the broker's transaction coordinators (broker/transactions.h). Each
// handler only translates; the rules are the coordinator's (txn/transaction_coordinator.h).

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "handlers.h"
#include "ringlog/group/types.h"

namespace ringlog::kafka::detail {

namespace {

constexpr int16_t code_invalid_producer_epoch = 47;
constexpr int16_t code_producer_fenced = 90;

/// Kafka's error code of `e` for a request of `api_version`: PRODUCER_FENCED exists from
/// `fenced_since` on (KIP-588); older clients hear INVALID_PRODUCER_EPOCH, as Kafka answers them.
int16_t txn_code(const broker::error& e, int16_t api_version, int16_t fenced_since) {
  const int16_t code = code_of(e);
  if (code == code_producer_fenced && api_version < fenced_since) return code_invalid_producer_epoch;
  return code;
}

using id_epoch = std::pair<model::producer_id, model::producer_epoch>;

}  // namespace

void handle_init_producer_id_transactional(const request_context& ctx,
                                           protocol::init_producer_id_request_data request) {
  if (!ctx.authorized(security::resource_type::transactional_id, *request.transactional_id, security::acl_operation::write)) {
    protocol::init_producer_id_response_data out;
    out.producer_id = -1;
    out.producer_epoch = -1;
    out.error_code = error_code::transactional_id_authorization_failed;
    return ctx.answer(out);
  }
  std::optional<id_epoch> expected;
  if (request.producer_id >= 0) {
    expected = id_epoch{model::producer_id{request.producer_id}, model::producer_epoch{request.producer_epoch}};
  }
  ctx.broker_api().transactions().init_producer_id(
      *request.transactional_id, request.transaction_timeout_ms, expected,
      [ctx, transactional_id = *request.transactional_id](broker::result<id_epoch> r) {
        protocol::init_producer_id_response_data out;
        out.producer_id = -1;
        out.producer_epoch = -1;
        if (!r.ok()) {
          out.error_code = r.error().code == broker::errc::not_controller ? error_code::coordinator_not_available
                                                                          : txn_code(r.error(), ctx.api_version, 4);
          log_init_producer_id_refusal(ctx, &transactional_id, r.error());
        } else {
          out.producer_id = r->first.value();
          out.producer_epoch = r->second.value();
        }
        ctx.answer(out);
      });
}

void handle_add_partitions_to_txn(const request_context& ctx, protocol::add_partitions_to_txn_request_data request) {
  // Versions 0-3 are the clients' (one transaction); 4+ is the brokers' batched verification
  // (KIP-890 part 1), which this listener does not advertise.
  using response = protocol::add_partitions_to_txn_response_data;
  std::vector<model::topic_partition> partitions;
  for (const auto& t : request.v3_and_below_topics) {
    for (int32_t p : t.partitions) partitions.push_back({t.name, model::partition_id{p}});
  }
  auto topics = request.v3_and_below_topics;
  // WRITE on the transactional id, then on each topic (KafkaApis.handleAddPartitionsToTxnRequest):
  // with one topic refused nothing is added, the others answer OPERATION_NOT_ATTEMPTED.
  const bool txn_allowed = ctx.authorized(security::resource_type::transactional_id,
                                          request.v3_and_below_transactional_id, security::acl_operation::write);
  std::set<std::string> refused_topics;
  for (const auto& t : topics) {
    if (!ctx.authorized(security::resource_type::topic, t.name, security::acl_operation::write)) refused_topics.insert(t.name);
  }
  auto answer = [ctx, topics, refused_topics](int16_t code) {
    response out;
    for (const auto& t : topics) {
      response::add_partitions_to_txn_topic_result tr;
      tr.name = t.name;
      for (int32_t p : t.partitions) {
        response::add_partitions_to_txn_partition_result pr;
        pr.partition_index = p;
        pr.partition_error_code = code != error_code::topic_authorization_failed ? code
                                  : refused_topics.contains(t.name)             ? code
                                                                                : error_code::operation_not_attempted;
        tr.results_by_partition.push_back(pr);
      }
      out.results_by_topic_v3_and_below.push_back(std::move(tr));
    }
    ctx.answer(out);
  };
  if (!txn_allowed) return answer(error_code::transactional_id_authorization_failed);
  if (!refused_topics.empty()) return answer(error_code::topic_authorization_failed);
  ctx.broker_api().transactions().add_partitions(
      request.v3_and_below_transactional_id, model::producer_id{request.v3_and_below_producer_id},
      model::producer_epoch{request.v3_and_below_producer_epoch}, std::move(partitions),
      [ctx, answer](broker::result<void> r) { answer(r.ok() ? error_code::none : txn_code(r.error(), ctx.api_version, 2)); });
}

void handle_add_offsets_to_txn(const request_context& ctx, protocol::add_offsets_to_txn_request_data request) {
  // WRITE on the transactional id, then READ on the group (KafkaApis.handleAddOffsetsToTxnRequest).
  const int16_t refused =
      !ctx.authorized(security::resource_type::transactional_id, request.transactional_id, security::acl_operation::write)
          ? error_code::transactional_id_authorization_failed
      : !ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::read)
          ? error_code::group_authorization_failed
          : error_code::none;
  if (refused != error_code::none) {
    protocol::add_offsets_to_txn_response_data out;
    out.error_code = refused;
    return ctx.answer(out);
  }
  ctx.broker_api().transactions().add_offsets(
      request.transactional_id, model::producer_id{request.producer_id}, model::producer_epoch{request.producer_epoch},
      request.group_id, [ctx](broker::result<void> r) {
        protocol::add_offsets_to_txn_response_data out;
        out.error_code = r.ok() ? error_code::none : txn_code(r.error(), ctx.api_version, 2);
        ctx.answer(out);
      });
}

void handle_end_txn(const request_context& ctx, protocol::end_txn_request_data request) {
  // EndTxn v5 (KIP-890 part 2): the epoch is bumped with every end and the answer names the
  // producer id and epoch of the next transaction. Older versions keep their epoch.
  const bool bump = ctx.api_version >= 5;
  if (!ctx.authorized(security::resource_type::transactional_id, request.transactional_id, security::acl_operation::write)) {
    protocol::end_txn_response_data out;
    out.error_code = error_code::transactional_id_authorization_failed;
    return ctx.answer(out);
  }
  ctx.broker_api().transactions().end_txn(
      request.transactional_id, model::producer_id{request.producer_id}, model::producer_epoch{request.producer_epoch},
      request.committed, bump, [ctx](broker::result<id_epoch> r) {
        protocol::end_txn_response_data out;
        if (!r.ok()) {
          out.error_code = txn_code(r.error(), ctx.api_version, 2);
        } else if (ctx.api_version >= 5) {
          out.producer_id = r->first.value();
          out.producer_epoch = r->second.value();
        }
        ctx.answer(out);
      });
}

void handle_describe_transactions(const request_context& ctx, protocol::describe_transactions_request_data request) {
  using response = protocol::describe_transactions_response_data;
  const size_t n = request.transactional_ids.size();
  auto g = std::make_shared<gather<response::transaction_state_data>>(n, [ctx](std::vector<response::transaction_state_data>& states) {
    response out;
    out.transaction_states = std::move(states);
    ctx.answer(out);
  });
  for (size_t i = 0; i < n; ++i) {
    const std::string id = request.transactional_ids[i];
    if (!ctx.authorized(security::resource_type::transactional_id, id, security::acl_operation::describe)) {
      auto& s = g->slot(i);
      s.transactional_id = id;
      s.transaction_state = "";
      s.producer_id = -1;
      s.producer_epoch = -1;
      s.transaction_start_time_ms = -1;
      s.error_code = error_code::transactional_id_authorization_failed;
      g->complete_one();
      continue;
    }
    ctx.broker_api().transactions().describe_transaction(id, [ctx, g, i, id](broker::result<broker::transaction_description> r) {
      auto& s = g->slot(i);
      s.transactional_id = id;
      s.transaction_state = "";
      s.producer_id = -1;
      s.producer_epoch = -1;
      s.transaction_start_time_ms = -1;
      if (!r.ok()) {
        s.error_code = code_of(r.error());
      } else {
        s.transaction_state = r->state;
        s.transaction_timeout_ms = r->timeout_ms;
        s.transaction_start_time_ms = r->txn_start_ms;
        s.producer_id = r->producer_id.value();
        s.producer_epoch = r->producer_epoch.value();
        std::map<std::string, std::vector<int32_t>> by_topic;
        for (const auto& tp : r->partitions) by_topic[tp.topic].push_back(tp.partition.value());
        for (auto& [topic, parts] : by_topic) {
          // Only the topics the caller may DESCRIBE, unlogged (KafkaApis' describeTransactions,
          // KIP-664): DESCRIBE on the id does not reveal the topics it writes to.
          if (!ctx.authorized_unlogged(security::resource_type::topic, topic, security::acl_operation::describe)) continue;
          response::topic_data t;
          t.name = topic;
          t.partition_indexes = std::move(parts);
          s.topic_partitions.push_back(std::move(t));
        }
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

void handle_list_transactions(const request_context& ctx, protocol::list_transactions_request_data request) {
  broker::list_transactions_filter filter;
  std::vector<std::string> unknown;
  for (const auto& s : request.state_filters) {
    static const std::vector<std::string> known = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                                   "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"};
    if (std::find(known.begin(), known.end(), s) == known.end()) unknown.push_back(s);
    filter.states.push_back(s);
  }
  for (int64_t p : request.producer_id_filters) filter.producer_ids.push_back(model::producer_id{p});
  filter.duration_ms = request.duration_filter;
  ctx.broker_api().transactions().list_transactions(
      std::move(filter), [ctx, unknown](broker::result<std::vector<broker::transaction_listing>> r) {
        protocol::list_transactions_response_data out;
        out.unknown_state_filters = unknown;
        if (!r.ok()) {
          out.error_code = code_of(r.error());
        } else {
          for (const auto& l : *r) {
            // DESCRIBE on each transactional id: the others are left out (KafkaApis).
            if (!ctx.authorized(security::resource_type::transactional_id, l.transactional_id,
                                security::acl_operation::describe)) {
              continue;
            }
            protocol::list_transactions_response_data::transaction_state_data s;
            s.transactional_id = l.transactional_id;
            s.producer_id = l.producer_id.value();
            s.transaction_state = l.state;
            out.transaction_states.push_back(std::move(s));
          }
        }
        ctx.answer(out);
      });
}

void handle_txn_offset_commit(const request_context& ctx, protocol::txn_offset_commit_request_data request) {
  // The offsets are held pending by the group coordinator until the transaction's marker on the
  // group's __consumer_offsets partition commits them (or drops them on abort). AddOffsetsToTxn
  // put that partition in the transaction; the producer id and epoch are fenced there.
  using response = protocol::txn_offset_commit_response_data;
  // WRITE on the transactional id, READ on the group, then READ on each topic
  // (KafkaApis.handleTxnOffsetCommitRequest).
  const int16_t refused_all =
      !ctx.authorized(security::resource_type::transactional_id, request.transactional_id, security::acl_operation::write)
          ? error_code::transactional_id_authorization_failed
      : !ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::read)
          ? error_code::group_authorization_failed
          : error_code::none;
  std::set<std::string> refused_topics;
  for (const auto& t : request.topics) {
    if (!ctx.authorized(security::resource_type::topic, t.name, security::acl_operation::read)) refused_topics.insert(t.name);
  }
  std::vector<group::offset_commit> offsets;
  for (const auto& t : request.topics) {
    if (refused_topics.contains(t.name)) continue;
    for (const auto& p : t.partitions) {
      offsets.push_back(group::offset_commit{{t.name, model::partition_id{p.partition_index}},
                                             model::offset{p.committed_offset},
                                             p.committed_metadata.value_or("")});
    }
  }
  auto topics = request.topics;
  // One answer shape for both outcomes: each requested partition with the code `code_of` gives it.
  auto answer = [ctx, topics](const std::function<int16_t(const std::string&, int32_t)>& code_of) {
    response out;
    for (const auto& t : topics) {
      response::txn_offset_commit_response_topic rt;
      rt.name = t.name;
      for (const auto& p : t.partitions) {
        response::txn_offset_commit_response_partition rp;
        rp.partition_index = p.partition_index;
        rp.error_code = code_of(t.name, p.partition_index);
        rt.partitions.push_back(rp);
      }
      out.topics.push_back(std::move(rt));
    }
    ctx.answer(out);
  };
  if (refused_all != error_code::none) {
    return answer([refused_all](const std::string&, int32_t) { return refused_all; });
  }
  ctx.broker_api().groups().txn_commit(
      request.group_id, request.member_id, request.group_instance_id, request.generation_id,
      model::producer_id{request.producer_id}, std::move(offsets),
      [ctx, answer, refused_topics](broker::result<broker::offset_commit_answer> r) {
        const int16_t code = r.ok() ? error_code::none : txn_code(r.error(), ctx.api_version, 2);
        answer([&](const std::string& topic, int32_t partition) {
          if (refused_topics.contains(topic)) return error_code::topic_authorization_failed;
          // A partition the metadata does not hold: UNKNOWN_TOPIC_OR_PARTITION, not held (KafkaApis).
          if (r.ok()) {
            auto refused = r->refused.find(model::topic_partition{topic, model::partition_id{partition}});
            if (refused != r->refused.end()) return txn_code(refused->second, ctx.api_version, 2);
          }
          return code;
        });
      });
}

void handle_describe_producers(const request_context& ctx, protocol::describe_producers_request_data request) {
  // Kafka's admin client (kafka-transactions.sh describe-producers) asks each partition's leader;
  // a partition led elsewhere answers NOT_LEADER_OR_FOLLOWER, as Kafka's broker does.
  using response = protocol::describe_producers_response_data;
  std::vector<model::topic_partition> partitions;
  for (const auto& t : request.topics) {
    for (int32_t p : t.partition_indexes) partitions.push_back({t.name, model::partition_id{p}});
  }
  auto g = std::make_shared<gather<response::partition_response>>(
      partitions.size(), [ctx, partitions](std::vector<response::partition_response>& answers) {
        response out;
        for (size_t i = 0; i < answers.size(); ++i) {
          if (out.topics.empty() || out.topics.back().name != partitions[i].topic) {
            response::topic_response t;
            t.name = partitions[i].topic;
            out.topics.push_back(std::move(t));
          }
          out.topics.back().partitions.push_back(std::move(answers[i]));
        }
        ctx.answer(out);
      });
  for (size_t i = 0; i < partitions.size(); ++i) {
    // READ on the topic (KafkaApis.handleDescribeProducersRequest).
    if (!ctx.authorized(security::resource_type::topic, partitions[i].topic, security::acl_operation::read)) {
      g->slot(i).partition_index = partitions[i].partition.value();
      g->slot(i).error_code = error_code::topic_authorization_failed;
      g->complete_one();
      continue;
    }
    ctx.broker_api().describe_producers(
        partitions[i], [g, i, index = partitions[i].partition.value()](
                           broker::result<std::vector<broker::producer_description>> r) {
          auto& slot = g->slot(i);
          slot.partition_index = index;
          if (!r.ok()) {
            slot.error_code = code_of(r.error());
            slot.error_message = r.error().message;
          } else {
            for (const auto& d : *r) {
              response::producer_state p;
              p.producer_id = d.producer_id.value();
              p.producer_epoch = d.producer_epoch;
              p.last_sequence = d.last_sequence;
              p.last_timestamp = d.last_timestamp;
              p.coordinator_epoch = d.coordinator_epoch;
              p.current_txn_start_offset = d.current_txn_start_offset;
              slot.active_producers.push_back(p);
            }
          }
          g->complete_one();
        });
  }
  g->finish_if_empty();
}

}  // namespace ringlog::kafka::detail
