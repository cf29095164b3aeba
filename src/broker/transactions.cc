// The partition side of transactions (KIP-98): transaction markers written on partition leaders
// (write_txn_markers, and Kafka's WriteTxnMarkers on the cluster listener for markers of
// partitions led here that another broker's coordinator sends).

#include <atomic>

#include "broker_impl.h"
#include "ringlog/protocol/frame.h"

namespace ringlog::broker {

std::string_view to_string(isolation_level level) {
  switch (level) {
    case isolation_level::read_uncommitted: return "read_uncommitted";
    case isolation_level::read_committed: return "read_committed";
  }
  return "read_uncommitted";
}

namespace detail {
namespace {

/// WriteTxnMarkers v1 (flexible) between brokers.
constexpr int16_t write_txn_markers_version = 1;
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

void broker_impl::write_txn_markers(std::vector<txn_marker> markers,
                                    std::function<void(result<std::vector<txn_marker_result>>)> done) {
  write_txn_markers_from(std::move(markers), std::move(done), false);
}

void broker_impl::write_txn_markers_from(std::vector<txn_marker> markers,
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

void broker_impl::write_one_marker(const txn_marker& m, const model::topic_partition& tp, bool from_peer,
                                   std::function<void(result<void>)> done) {
  if (m.producer_id.value() < 0 || m.producer_epoch.value() < 0) {
    return done(error{errc::invalid_request, "a transaction marker needs producer_id and producer_epoch >= 0, not " +
                                                 std::to_string(m.producer_id.value()) + " and " +
                                                 std::to_string(m.producer_epoch.value())});
  }
  auto topic = find_topic(tp.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
  const int32_t partition = tp.partition.value();
  if (partition < 0 || partition >= topic->partitions_count()) {
    return done(error{errc::unknown_topic_or_partition, "partition " + std::to_string(partition) + " of topic '" +
                                                            tp.topic + "' does not exist"});
  }
  const int32_t leader = topic->image->partitions[static_cast<size_t>(partition)].leader;
  if (leader != config_.node_id) {
    // A peer sends markers for partitions it believes this node leads: never bounce them on.
    if (from_peer || leader < 0) return done(check_leader(*topic, partition).error());
    return forward_txn_marker(leader, m, tp, std::move(done));
  }
  const size_t shard = owner(tp.topic, partition);
  if (!deps_.runtime.admits(shard)) return done(shard_busy(shard));
  codec::control_record marker{m.committed ? codec::control_type::commit : codec::control_type::abort,
                               m.coordinator_epoch};
  deps_.runtime.post(shard, [this, shard, tp, pid = m.producer_id, epoch = m.producer_epoch, committed = m.committed,
                             marker, done = std::move(done)]() mutable {
    auto rt = runtime_of(shard, tp.topic, tp.partition.value());
    if (!rt) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
    // Kafka writes markers with acks=all (TransactionMarkerChannelManager: requiredAcks -1).
    if (auto ok = check_append(*rt, acks_mode::all); !ok.ok()) return done(ok.error());
    auto appended = rt->log->append_marker(pid, epoch, marker, rt->epoch);
    if (!appended.ok()) return done(from_storage(appended.error()));
    auto replicated = [this, tp, pid, committed, done = std::move(done)](result<void> r) mutable {
      if (!r.ok() || tp.topic != consumer_offsets_topic || groups_ == nullptr) return done(std::move(r));
      // The leader of a __consumer_offsets partition coordinates its groups: once the marker is
      // in that log, the TxnOffsetCommit offsets it held pending for the producer become
      // committed (or are dropped) - Kafka's KafkaApis.handleWriteTxnMarkersRequest ->
      // GroupCoordinator.onTransactionCompleted. The marker is answered after that, so a
      // coordinator that retries it never ends the transaction before its offsets are in.
      groups_->complete_txn_offsets(tp.partition.value(), pid, committed, std::move(done));
    };
    complete_append(shard, rt, acks_mode::all, rt->log->log_end_offset(), internal_append_timeout_ms,
                    std::move(replicated));
  });
}

void broker_impl::describe_producers(model::topic_partition tp,
                                     std::function<void(result<std::vector<producer_description>>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  auto topic = find_topic(tp.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
  const int32_t partition = tp.partition.value();
  if (partition < 0 || partition >= topic->partitions_count()) {
    return done(error{errc::unknown_topic_or_partition, "partition " + std::to_string(partition) + " of topic '" +
                                                            tp.topic + "' does not exist"});
  }
  // Kafka answers from the leader's producer state only (a follower's may lag behind).
  if (auto led = check_leader(*topic, partition); !led.ok()) return done(led.error());
  const size_t shard = owner(tp.topic, partition);
  if (!deps_.runtime.admits(shard)) return done(shard_busy(shard));
  deps_.runtime.post(shard, [this, shard, tp, done = std::move(done)]() mutable {
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

void broker_impl::forward_txn_marker(int32_t leader, const txn_marker& m, const model::topic_partition& tp,
                                     std::function<void(result<void>)> done) {
  const std::string where = "broker " + std::to_string(leader) + " (the leader of " + tp.topic + "-" +
                            std::to_string(tp.partition.value()) + ")";
  if (deps_.cluster_transport == nullptr) {
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
  deps_.cluster_transport->send(
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

void broker_impl::handle_write_txn_markers(const protocol::request_header_data& header, std::span<const std::byte> body,
                                           rpc::respond_fn respond) {
  protocol::reader rd(body);
  auto decoded = protocol::write_txn_markers_request_data::decode(rd, header.request_api_version);
  if (!decoded.ok()) return;   // the transport answers nothing: the sender times out and retries
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

}  // namespace detail
}  // namespace ringlog::broker
