#pragma once
// The answers and wire versions leader_forwarder's two files share (forwarding.cc: the calls in
// flight, fetch and list offsets, the calls peers forward here; forward_produce.cc: this node's
// forwarded produces in their order). Private to the broker module.

#include <algorithm>
#include <optional>
#include <span>
#include <string>

#include "metadata.h"
#include "metadata_publisher.h"
#include "ringlog/broker/broker.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/rpc/errc.h"
#include "constants.h"

namespace ringlog::broker::detail::forwarding {

/// Produce v10 (flexible, with ErrorMessage and KIP-951's CurrentLeader): the leader's reason
/// travels back to the client. A peer sets CurrentLeader only when it refused the batch before
/// appending any of it because it does not lead the partition (refusal_before_serving): the
/// forwarder may then send the same batch to the new leader without storing it twice.
inline constexpr int16_t forward_produce_version = 10;
/// Fetch v15: topic ids, the replica id -1 in ReplicaState (a consumer, reads to the high watermark).
inline constexpr int16_t forward_fetch_version = 15;
/// ListOffsets v7 (flexible): earliest (-2), latest (-1) or by timestamp.
inline constexpr int16_t forward_list_offsets_version = 7;
/// How much longer than the call's own wait the forwarder waits for the leader's answer, ms.
inline constexpr int64_t forward_timeout_slack_ms = 5000;
/// How long a leader waits for a topic it does not know yet, or for its replica of a partition it
/// has not opened yet, when a peer forwards a call for it (the peer applied the topic's creation
/// first: metadata reaches nodes at slightly different times, and a node opens a new partition
/// after it publishes the topic), ms; polled every forward_metadata_poll_ms. Past it the caller
/// hears a retriable error.
inline constexpr int64_t forward_metadata_wait_ms = 3000;
inline constexpr int64_t forward_metadata_poll_ms = 20;
/// How long a forwarded read (fetch, list offsets) refused by a broker that no longer leads the
/// partition waits for this node's metadata to name the new leader before the client hears a
/// retriable error, ms: a leadership move reaches every node within about a metadata fetch
/// (tens of ms); the HTTP client retries after Retry-After (1 s) anyway. A produce waits up to its
/// own timeout instead (its client asked for an answer within it).
inline constexpr int64_t forward_read_reroute_wait_ms = 1000;
inline constexpr int64_t earliest_timestamp = -2;
inline constexpr int64_t latest_timestamp = -1;

/// One past the last offset of the whole v2 batches in `batches` (a raw answer from the leader),
/// or `fetch_offset` when there are none; a header that does not decode ends the walk (the client
/// that reads the bytes reports it).
inline model::offset next_offset_after(std::span<const std::byte> batches, model::offset fetch_offset) {
  model::offset next = fetch_offset;
  size_t pos = 0;
  while (pos < batches.size()) {
    auto header = codec::decode_header(batches.subspan(pos));
    if (!header.ok() || header->size_bytes() > batches.size() - pos) break;
    next = std::max(next, model::offset{header->last_offset().value() + 1});
    pos += header->size_bytes();
  }
  return next;
}

inline std::string leader_name(int32_t leader, const model::topic_partition& tp) {
  return "broker " + std::to_string(leader) + " (the leader of " + tp.topic + "-" +
         std::to_string(tp.partition.value()) + ")";
}

inline error unreachable(int32_t leader, const model::topic_partition& tp, const std::string& why) {
  return error{errc::not_leader_or_follower, leader_name(leader, tp) + " did not answer (" + why + "): retry"};
}

/// A forwarded write that failed on the way (connection lost or aborted, timed out): it may have
/// reached the leader, so its outcome is unknown and the client hears so (a retry may duplicate).
inline error unreachable_write(int32_t leader, const model::topic_partition& tp, const std::string& why) {
  return error{errc::not_leader_or_follower,
               leader_name(leader, tp) + " did not answer (" + why + "); the write may or may not be stored: retry"};
}

/// A forwarded call that failed before any byte of it reached the peer: the connect was refused
/// or failed (requests wait on a connection until it is up), the peer is not known, or the
/// leadership moved before the call went out (not_sent_moved). Such a write did not happen;
/// every other failure (disconnected, timeout) leaves its outcome unknown.
inline bool never_sent(rpc::errc code) {
  return code == rpc::errc::connection_refused || code == rpc::errc::connect_failed || code == rpc::errc::unknown_peer;
}

/// The answer of a forwarded call the forwarder did not send because the newest metadata names
/// another leader (`now_leader`, -1: none) for its partition. Carried as connect_failed, which
/// never_sent counts as "nothing reached the peer": a produce goes to the leader named next.
inline rpc::error not_sent_moved(int32_t now_leader) {
  return rpc::error{rpc::errc::connect_failed,
                    "not sent: the leadership moved to " +
                        (now_leader >= 0 ? "broker " + std::to_string(now_leader) : std::string("no broker")) +
                        " before the call went out"};
}

/// The answer of a forwarded call that waited for room on the connection to `leader` until its
/// deadline (forward_room_wait_max_ms or its own timeout): nothing was sent.
inline rpc::error room_wait_expired(int32_t leader) {
  return rpc::error{rpc::errc::too_many_in_flight,
                    "the call waited its timeout for room among the " +
                        std::to_string(forward_calls_in_flight_per_leader_max) + " calls in flight to broker " +
                        std::to_string(leader) + " (forward_calls_in_flight_per_leader_max) and was not sent"};
}

/// The answer when no leader of `tp` was named before a forwarded produce's deadline.
inline error no_leader(const model::topic_partition& tp) {
  return error{errc::not_leader_or_follower, "partition " + std::to_string(tp.partition.value()) + " of topic '" +
                                                 tp.topic + "' has no leader now (an election is under way); nothing "
                                                 "was sent: retry"};
}

/// The answer when `refused_by`, the leader this node forwarded to, no longer leads `tp` and this
/// node's metadata named no other leader before the call's deadline.
inline error leadership_moving(int32_t refused_by, const model::topic_partition& tp) {
  return error{errc::not_leader_or_follower,
               "the leadership of " + tp.topic + "-" + std::to_string(tp.partition.value()) + " is moving: broker " +
                   std::to_string(refused_by) +
                   " no longer leads it and this broker has not learned the new leader yet (a reassignment or an "
                   "election is under way): retry"};
}

inline error answered(int32_t leader, const model::topic_partition& tp, int16_t code, const std::optional<std::string>& why) {
  const errc e = errc_of_kafka_code(code);
  if (e == errc::unknown_topic_or_partition) {
    // This node knows the topic, so the leader's metadata is ahead of or behind this node's (the
    // topic just created, or just deleted: the produce path answers the deletion once this node
    // applied it too): retriable, as Kafka clients treat UNKNOWN_TOPIC_OR_PARTITION, never a 404
    // for a topic that exists.
    return error{errc::not_leader_or_follower,
                 leader_name(leader, tp) + " does not know the topic (it has not applied the topic's creation yet, "
                                           "or it applied a deletion this broker has not applied yet): retry"};
  }
  if (why && !why->empty()) return error{e, *why};
  if (e == errc::not_leader_or_follower) {
    // Not a refusal of a former leader (those are asked again of the new one): the leader this
    // node knows has not taken up the leadership yet (its replica not opened as leader, or its
    // high watermark not established, KIP-207).
    return error{e, leader_name(leader, tp) + " is taking up the leadership and does not serve it yet: retry"};
  }
  return error{e, leader_name(leader, tp) + " answered " + std::string(to_string(e))};
}

/// `tp` in `view`: nullptr when the topic or partition is gone.
inline const controller::partition_image* partition_in(const metadata_view& view, const model::topic_partition& tp) {
  auto t = view.topics.find(tp.topic);
  if (t == view.topics.end()) return nullptr;
  const auto& partitions = t->second->image->partitions;
  const auto index = static_cast<size_t>(tp.partition.value());
  return index < partitions.size() ? &partitions[index] : nullptr;
}

/// The leader epoch `view` names for `tp`: -1 when the topic or partition is gone.
inline int32_t leader_epoch_in(const metadata_view& view, const model::topic_partition& tp) {
  const auto* p = partition_in(view, tp);
  return p != nullptr ? p->leader_epoch : -1;
}

/// The leader `view` names for `tp`: -1 when it names none or the topic or partition is gone.
inline int32_t leader_in(const metadata_view& view, const model::topic_partition& tp) {
  const auto* p = partition_in(view, tp);
  return p != nullptr ? p->leader : -1;
}

/// The leader the newest metadata view names for `tp` (-1: none), as send_forward checks it.
inline int32_t newest_leader_of(const metadata_publisher& metadata, const model::topic_partition& tp) {
  auto newest = metadata.views().latest();
  return newest ? leader_in(*newest, tp) : leader_in(*metadata.view(), tp);
}

/// Whether the newest metadata no longer has the topic of `tp`: it was deleted (this node took the
/// call for a topic it knew, and a topic never leaves a view otherwise).
inline bool topic_gone(const metadata_publisher& metadata, const model::topic_partition& tp) {
  auto newest = metadata.views().latest();
  const auto& view = newest ? *newest : *metadata.view();
  return view.topics.find(tp.topic) == view.topics.end();
}

/// The answer of a forwarded produce of `tp` whose topic was deleted before its leader answered
/// it (or before it was sent): Kafka's UNKNOWN_TOPIC_OR_PARTITION, definitive - whatever of it the
/// leader stored went with the topic. The new user of session 36 heard "did not answer ... may
/// or may not be stored: retry" instead.
inline error topic_deleted_in_flight(const model::topic_partition& tp) {
  return error{errc::unknown_topic_or_partition,
               "topic '" + tp.topic + "' was deleted while the write to its partition " +
                   std::to_string(tp.partition.value()) + " was on its way to the leader"};
}

/// The answer of a forwarded call whose partition's leadership moved while it was in flight.
inline rpc::error leadership_moved(int32_t now_leader) {
  return rpc::error{rpc::errc::disconnected,
                    "the leadership moved to " +
                        (now_leader >= 0 ? "broker " + std::to_string(now_leader) : std::string("no broker")) +
                        " while the call was in flight; its outcome is unknown"};
}

}  // namespace ringlog::broker::detail::forwarding
