// The partition side of transactions (KIP-98; partition_transactions.h): transaction markers
// written on partition leaders (write_txn_markers, and Kafka's WriteTxnMarkers on the cluster
// listener for markers of partitions led here that another broker's coordinator sends), the
// KIP-890 verification and DescribeProducers.

#include <atomic>
#include <mutex>

#include "constants.h"
#include "leader_forwarder.h"
#include "metadata_publisher.h"
#include "partition_transactions.h"
#include "ringlog/protocol/frame.h"
#include "rpc_messages.h"

namespace ringlog::broker {

namespace detail {
namespace {

/// WriteTxnMarkers v1 (flexible) between brokers.
constexpr int16_t write_txn_markers_version = 1;
/// AddPartitionsToTxn v4 (flexible; KIP-890's broker-to-coordinator VerifyOnly form).
constexpr int16_t verify_txn_version = 4;
/// How long a partition leader waits for a coordinator's verification, ms: a coordinator
/// answers from memory, so this covers a connect and a busy peer, not a disk write.
constexpr int64_t verify_txn_timeout_ms = 5000;
/// How much longer than the leader's own wait for its in-sync replicas the sender waits, ms.
constexpr int64_t marker_forward_slack_ms = 5000;

/// One write_txn_markers call: every (marker, partition) slot is filled by exactly one answer,
/// on whichever thread it comes; the last one answers the caller.
struct marker_operation {
  std::vector<txn_marker_result> results;
  std::atomic<size_t> remaining{0};
  std::function<void(result<std::vector<txn_marker_result>>)> done;
  void finish_one() {
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) done(std::move(results));
  }
};

}  // namespace

partition_transactions::partition_transactions(
    const metadata_publisher& metadata, broker_log log, int32_t node_id, runtime::shard_runtime& runtime,
    rpc::transport* cluster_transport, const std::vector<std::unique_ptr<partition_manager>>& partition_managers,
    const std::atomic<bool>& stopping, const std::atomic<group_service*>& groups_started,
    const std::atomic<txn_service*>& txns_started)
    : metadata_(metadata),
      log_(std::move(log)),
      node_id_(node_id),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      partition_managers_(partition_managers),
      stopping_(stopping),
      groups_started_(groups_started),
      txns_started_(txns_started) {}

void partition_transactions::register_cluster_handlers() {
  // Transaction markers for partitions led here.
  cluster_transport_->set_handler(protocol::write_txn_markers_request_data::api_key,
                                  [this](const protocol::request_header_data& header, std::span<const std::byte> body,
                                         rpc::respond_fn respond) {
                                    handle_write_txn_markers(header, body, std::move(respond));
                                  });
  // KIP-890 verification of transactional produce, for the transactional ids coordinated here.
  cluster_transport_->set_handler(protocol::add_partitions_to_txn_request_data::api_key,
                                  [this](const protocol::request_header_data& header, std::span<const std::byte> body,
                                         rpc::respond_fn respond) {
                                    handle_verify_txn_partitions(header, body, std::move(respond));
                                  });
}

void partition_transactions::write_txn_markers(std::vector<txn_marker> markers,
                                               std::function<void(result<std::vector<txn_marker_result>>)> done) {
  write_txn_markers_from(std::move(markers), std::move(done), false);
}

void partition_transactions::write_txn_markers_from(std::vector<txn_marker> markers,
                                                    std::function<void(result<std::vector<txn_marker_result>>)> done,
                                                    bool from_peer) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  auto op = std::make_shared<marker_operation>();
  op->done = std::move(done);
  size_t slots = 0;
  for (const txn_marker& m : markers) {
    txn_marker_result r;
    r.producer_id = m.producer_id;
    for (const auto& tp : m.partitions) r.partitions.push_back({tp, std::nullopt});
    slots += m.partitions.size();
    op->results.push_back(std::move(r));
  }
  if (slots == 0) return op->done(std::move(op->results));
  op->remaining.store(slots, std::memory_order_release);
  for (size_t i = 0; i < markers.size(); ++i) {
    const txn_marker& m = markers[i];
    for (size_t j = 0; j < m.partitions.size(); ++j) {
      auto finish = [op, i, j](result<void> r) {
        if (!r.ok()) op->results[i].partitions[j].failure = r.error();
        op->finish_one();
      };
      write_one_marker(m, m.partitions[j], from_peer, std::move(finish));
    }
  }
}

void partition_transactions::write_one_marker(const txn_marker& m, const model::topic_partition& tp, bool from_peer,
                                              std::function<void(result<void>)> done) {
  if (m.producer_id.value() < 0 || m.producer_epoch.value() < 0) {
    return done(error{errc::invalid_request, "a transaction marker needs producer_id and producer_epoch >= 0, not " +
                                                 std::to_string(m.producer_id.value()) + " and " +
                                                 std::to_string(m.producer_epoch.value())});
  }
  auto topic = metadata_.find_topic(tp.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
  const int32_t partition = tp.partition.value();
  if (partition < 0 || partition >= topic->partitions_count()) {
    return done(error{errc::unknown_topic_or_partition, "partition " + std::to_string(partition) + " of topic '" +
                                                            tp.topic + "' does not exist"});
  }
  const int32_t leader = topic->image->partitions[static_cast<size_t>(partition)].leader;
  if (leader != node_id_) {
    // A peer sends markers for partitions it believes this node leads: never bounce them on.
    if (from_peer || leader < 0) return done(check_leader(*topic, partition, node_id_).error());
    return forward_txn_marker(leader, m, tp, std::move(done));
  }
  const size_t shard = owner(tp.topic, partition);
  if (!runtime_.admits(shard)) return done(shard_busy(shard));
  codec::control_record marker{m.committed ? codec::control_type::commit : codec::control_type::abort,
                               m.coordinator_epoch};
  runtime_.post(shard, [this, shard, tp, pid = m.producer_id, epoch = m.producer_epoch, committed = m.committed,
                        marker, done = std::move(done)]() mutable {
    auto rt = runtime_of(shard, tp.topic, tp.partition.value());
    if (!rt) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
    // Acks=all, as Kafka writes markers; the marker ends the producer's KIP-890 guard.
    if (auto appended = rt->append_marker(pid, epoch, marker); !appended.ok()) return done(appended.error());
    auto replicated = [this, tp, pid, committed, done = std::move(done)](result<void> r) mutable {
      // On the partition's shard: the started service through its atomic (the broker's groups_
      // pointer is the controller shard's).
      group_service* groups = groups_started_.load(std::memory_order_acquire);
      if (!r.ok() || tp.topic != consumer_offsets_topic || groups == nullptr) return done(std::move(r));
      // The leader of a __consumer_offsets partition coordinates its groups: once the marker is
      // in that log, the TxnOffsetCommit offsets it held pending for the producer become
      // committed (or are dropped) - Kafka's KafkaApis.handleWriteTxnMarkersRequest ->
      // GroupCoordinator.onTransactionCompleted. The marker is answered after that, so a
      // coordinator that retries it never ends the transaction before its offsets are in.
      groups->complete_txn_offsets(tp.partition.value(), pid, committed, std::move(done));
    };
    rt->complete_append(acks_mode::all, rt->log->log_end_offset(), internal_append_timeout_ms, std::move(replicated));
  });
}

void partition_transactions::describe_producers(model::topic_partition tp,
                                                std::function<void(result<std::vector<producer_description>>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  auto topic = metadata_.find_topic(tp.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
  const int32_t partition = tp.partition.value();
  if (partition < 0 || partition >= topic->partitions_count()) {
    return done(error{errc::unknown_topic_or_partition, "partition " + std::to_string(partition) + " of topic '" +
                                                            tp.topic + "' does not exist"});
  }
  // Kafka answers from the leader's producer state only (a follower's may lag behind).
  if (auto led = check_leader(*topic, partition, node_id_); !led.ok()) return done(led.error());
  const size_t shard = owner(tp.topic, partition);
  if (!runtime_.admits(shard)) return done(shard_busy(shard));
  runtime_.post(shard, [this, shard, tp, done = std::move(done)]() mutable {
    auto rt = runtime_of(shard, tp.topic, tp.partition.value());
    if (!rt) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
    std::vector<producer_description> out;
    for (const auto& [id, entry] : rt->log->producers().producers()) {
      producer_description d;
      d.producer_id = model::producer_id{id};
      d.producer_epoch = entry.epoch.value();
      if (!entry.batches.empty()) d.last_sequence = entry.batches.back().last_sequence.value();
      d.last_timestamp = entry.last_timestamp_ms;
      d.coordinator_epoch = entry.coordinator_epoch;
      if (entry.current_txn_first_offset) d.current_txn_start_offset = entry.current_txn_first_offset->value();
      out.push_back(d);
    }
    done(std::move(out));
  });
}

void partition_transactions::forward_txn_marker(int32_t leader, const txn_marker& m, const model::topic_partition& tp,
                                                std::function<void(result<void>)> done) {
  const std::string where = "broker " + std::to_string(leader) + " (the leader of " + tp.topic + "-" +
                            std::to_string(tp.partition.value()) + ")";
  if (cluster_transport_ == nullptr) {
    return done(error{errc::not_leader_or_follower, where + " is not reachable: this node has no cluster listener"});
  }
  protocol::write_txn_markers_request_data request;
  protocol::write_txn_markers_request_data::writable_txn_marker w;
  w.producer_id = m.producer_id.value();
  w.producer_epoch = m.producer_epoch.value();
  w.transaction_result = m.committed;
  w.coordinator_epoch = m.coordinator_epoch;
  protocol::write_txn_markers_request_data::writable_txn_marker_topic t;
  t.name = tp.topic;
  t.partition_indexes.push_back(tp.partition.value());
  w.topics.push_back(std::move(t));
  request.markers.push_back(std::move(w));
  cluster_transport_->send(
      leader, protocol::write_txn_markers_request_data::api_key, write_txn_markers_version,
      encode_body(request, write_txn_markers_version), internal_append_timeout_ms + marker_forward_slack_ms,
      [where, done = std::move(done)](rpc::result<protocol::bytes> r) {
        if (!r.ok()) return done(error{errc::not_leader_or_follower, where + " did not answer (" + r.error().message + "): retry"});
        protocol::reader rd(r.value());
        auto decoded = protocol::write_txn_markers_response_data::decode(rd, write_txn_markers_version);
        if (!decoded.ok() || decoded->markers.size() != 1 || decoded->markers[0].topics.size() != 1 ||
            decoded->markers[0].topics[0].partitions.size() != 1) {
          return done(error{errc::not_leader_or_follower, where + " sent an unreadable answer: retry"});
        }
        const int16_t code = decoded->markers[0].topics[0].partitions[0].error_code;
        if (code == 0) return done(base::ok_v);
        const errc e = errc_of_kafka_code(code);
        done(error{e, where + " refused the marker: " + std::string(to_string(e))});
      });
}

void partition_transactions::handle_write_txn_markers(const protocol::request_header_data& header,
                                                      std::span<const std::byte> body,
                                                      rpc::respond_fn respond) {
  auto decoded = decode_or_close<protocol::write_txn_markers_request_data>(header, body, respond);
  if (!decoded) return;
  std::vector<txn_marker> markers;
  for (const auto& w : decoded->markers) {
    txn_marker m;
    m.producer_id = model::producer_id{w.producer_id};
    m.producer_epoch = model::producer_epoch{w.producer_epoch};
    m.committed = w.transaction_result;
    m.coordinator_epoch = w.coordinator_epoch;
    for (const auto& t : w.topics) {
      for (int32_t p : t.partition_indexes) m.partitions.push_back({t.name, model::partition_id{p}});
    }
    markers.push_back(std::move(m));
  }
  write_txn_markers_from(std::move(markers), [header, respond = std::move(respond)](result<std::vector<txn_marker_result>> r) mutable {
    protocol::write_txn_markers_response_data response;
    if (r.ok()) {
      for (const auto& mr : r.value()) {
        protocol::write_txn_markers_response_data::writable_txn_marker_result out;
        out.producer_id = mr.producer_id.value();
        for (const auto& pr : mr.partitions) {
          if (out.topics.empty() || out.topics.back().name != pr.partition.topic) {
            protocol::write_txn_markers_response_data::writable_txn_marker_topic_result t;
            t.name = pr.partition.topic;
            out.topics.push_back(std::move(t));
          }
          protocol::write_txn_markers_response_data::writable_txn_marker_partition_result p;
          p.partition_index = pr.partition.partition.value();
          p.error_code = pr.failure ? static_cast<int16_t>(kafka_error_code(pr.failure->code)) : int16_t{0};
          out.topics.back().partitions.push_back(p);
        }
        response.markers.push_back(std::move(out));
      }
    }
    respond_with(header, response, respond);
  }, true);
}

void partition_transactions::verify_txn_partition(const std::string& transactional_id,
                                                  model::producer_id producer_id,
                                                  model::producer_epoch producer_epoch,
                                                  const model::topic_partition& tp,
                                                  std::function<void(result<void>)> done) {
  // Kafka answers Produce with NOT_ENOUGH_REPLICAS when the verification itself could not be
  // done (AddPartitionsToTxnManager): every client retries that, none knows the coordinator codes.
  // A fenced producer hears INVALID_PRODUCER_EPOCH, the Produce code every client handles
  // (Kafka does the same for PRODUCER_FENCED on this path).
  auto retriable = [done](const error& e) {
    if (e.code == errc::producer_fenced) return done(error{errc::invalid_producer_epoch, e.message});
    const bool transient = e.code == errc::not_coordinator || e.code == errc::coordinator_load_in_progress ||
                           e.code == errc::broker_not_available || e.code == errc::concurrent_transactions ||
                           e.code == errc::request_timed_out || e.code == errc::unknown_server_error;
    if (!transient) return done(e);
    done(error{errc::not_enough_replicas, "the transaction coordinator could not verify the partition yet (" +
                                              e.message + "): retry"});
  };
  txn_service* txns = txns_started_.load(std::memory_order_acquire);
  if (txns == nullptr) return retriable(error{errc::coordinator_load_in_progress, "transactions are starting"});
  const int32_t coordinator = txns->coordinator_id(transactional_id);
  if (coordinator == node_id_) {
    return txns->verify_partition(transactional_id, producer_id, producer_epoch, tp,
                                  [retriable, done](result<void> r) {
                                    if (r.ok()) return done(base::ok_v);
                                    retriable(r.error());
                                  });
  }
  const std::string where = "the coordinator of transactional id '" + transactional_id + "' (broker " +
                            std::to_string(coordinator) + ")";
  if (coordinator < 0 || cluster_transport_ == nullptr) {
    return retriable(error{errc::not_coordinator, where + " is not known or not reachable"});
  }
  protocol::add_partitions_to_txn_request_data request;
  protocol::add_partitions_to_txn_request_data::add_partitions_to_txn_transaction t;
  t.transactional_id = transactional_id;
  t.producer_id = producer_id.value();
  t.producer_epoch = producer_epoch.value();
  t.verify_only = true;
  protocol::add_partitions_to_txn_request_data::add_partitions_to_txn_topic topic;
  topic.name = tp.topic;
  topic.partitions.push_back(tp.partition.value());
  t.topics.push_back(std::move(topic));
  request.transactions.push_back(std::move(t));
  cluster_transport_->send(
      coordinator, protocol::add_partitions_to_txn_request_data::api_key, verify_txn_version,
      encode_body(request, verify_txn_version), verify_txn_timeout_ms,
      [where, retriable, done](rpc::result<protocol::bytes> r) {
        if (!r.ok()) return retriable(error{errc::request_timed_out, where + " did not answer: " + r.error().message});
        protocol::reader rd(r.value());
        auto decoded = protocol::add_partitions_to_txn_response_data::decode(rd, verify_txn_version);
        if (!decoded.ok() || decoded->results_by_transaction.size() != 1 ||
            decoded->results_by_transaction[0].topic_results.size() != 1 ||
            decoded->results_by_transaction[0].topic_results[0].results_by_partition.size() != 1) {
          return retriable(error{errc::unknown_server_error, where + " sent an unreadable answer"});
        }
        const int16_t code = decoded->error_code != 0
                                 ? decoded->error_code
                                 : decoded->results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code;
        if (code == 0) return done(base::ok_v);
        const errc e = errc_of_kafka_code(code);
        retriable(error{e, where + " did not verify the partition: " + std::string(to_string(e))});
      });
}

void partition_transactions::handle_verify_txn_partitions(const protocol::request_header_data& header,
                                                          std::span<const std::byte> body, rpc::respond_fn respond) {
  using response_data = protocol::add_partitions_to_txn_response_data;
  auto decoded = decode_or_close<protocol::add_partitions_to_txn_request_data>(header, body, respond);
  if (!decoded) return;
  // One answer slot per (transaction, topic, partition), filled on whichever shard answers.
  struct gather {
    response_data response;
    std::mutex mutex;
    std::atomic<size_t> remaining{1};
    protocol::request_header_data header;
    rpc::respond_fn respond;
    void finish_one() {
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) respond_with(header, response, respond);
    }
  };
  auto g = std::make_shared<gather>();
  g->header = header;
  g->respond = std::move(respond);
  txn_service* txns = txns_started_.load(std::memory_order_acquire);
  if (header.request_api_version < verify_txn_version || txns == nullptr) {
    g->response.error_code = static_cast<int16_t>(
        kafka_error_code(txns == nullptr ? errc::coordinator_load_in_progress : errc::invalid_request));
  } else {
    for (const auto& t : decoded->transactions) {
      response_data::add_partitions_to_txn_result tr;
      tr.transactional_id = t.transactional_id;
      for (const auto& topic : t.topics) {
        response_data::add_partitions_to_txn_topic_result top;
        top.name = topic.name;
        for (int32_t p : topic.partitions) top.results_by_partition.push_back({p, 0, {}});
        tr.topic_results.push_back(std::move(top));
      }
      g->response.results_by_transaction.push_back(std::move(tr));
    }
    for (size_t i = 0; i < decoded->transactions.size(); ++i) {
      const auto& t = decoded->transactions[i];
      for (size_t j = 0; j < t.topics.size(); ++j) {
        for (size_t k = 0; k < t.topics[j].partitions.size(); ++k) {
          auto fill = [g, i, j, k](int16_t code) {   // Kafka's error code, 0: verified
            {
              std::lock_guard lock(g->mutex);
              g->response.results_by_transaction[i].topic_results[j].results_by_partition[k].partition_error_code = code;
            }
            g->finish_one();
          };
          g->remaining.fetch_add(1, std::memory_order_relaxed);
          // Only the verification is served here: adding partitions is the client's own call.
          if (!t.verify_only) {
            fill(static_cast<int16_t>(kafka_error_code(errc::invalid_request)));
            continue;
          }
          txns->verify_partition(t.transactional_id, model::producer_id{t.producer_id},
                                 model::producer_epoch{t.producer_epoch},
                                 model::topic_partition{t.topics[j].name, model::partition_id{t.topics[j].partitions[k]}},
                                 [fill](result<void> r) {
                                   fill(r.ok() ? int16_t{0} : static_cast<int16_t>(kafka_error_code(r.error().code)));
                                 });
        }
      }
    }
  }
  g->finish_one();
}

}  // namespace detail
}  // namespace ringlog::broker
