#pragma once
// When a partition's replica may answer a client with the partition's end (the high watermark, a
// "latest" offset, a fetch at the end, a lag) - KAFKA-2334, KIP-207, KIP-320:
//   - only while it leads the partition (the caller checks that);
//   - only once its high watermark reached the start offset of its own leader epoch: a new leader
//     learns the true high watermark from its followers' fetches, one round late, so until then
//     its figure can be below an offset already acknowledged to an acks=all producer (Kafka's
//     Partition.fetchOffsetForTimestamp answers OFFSET_NOT_AVAILABLE, code 78, then);
//   - only while it holds a leadership lease: the controller fences a broker whose heartbeats it
//     has not heard for broker.session.timeout.ms, and moves its leaderships; a leader cut off from
//     the controller does not hear that, so it stops answering once it cannot rule it out (a
//     zombie leader's high watermark stays where it was while the new leader acknowledges more).
//
// Pure and deterministic (times come in as arguments); the broker and the replication simulator
// use the same code.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringlog/model/types.h"

namespace ringlog::replication {

/// KIP-207: the leader's high watermark is its true one once it reached `epoch_start_offset` (the
/// log end offset when its leadership began: every record of earlier epochs is committed then).
[[nodiscard]] inline bool high_watermark_established(model::offset high_watermark, model::offset epoch_start_offset) {
  return high_watermark >= epoch_start_offset;
}

/// What a leader answers a client asking for the partition's end.
enum class end_offset_answer {
  available,             // the figure is the partition's true end: answer it
  offset_not_available,  // a new leader still establishing its high watermark (Kafka's 78): retry
  lease_lapsed,          // the controller may have fenced this broker and moved the leadership: retry
};

/// The leadership lease of one broker: when the controller last heard from it, as far as it can
/// tell. The controller fences a broker broker.session.timeout.ms after the last heartbeat it
/// received, and a received heartbeat was sent no earlier than the time the broker sent it; so
/// until `sent_ms + session_timeout_ms` (on the broker's clock) no other broker leads its
/// partitions in a newer epoch because of a fence. The lease is a tenth shorter than that, the
/// allowance for the two clocks' rates (lease_clock_allowance_divisor).
class leadership_lease {
 public:
  /// The lease is session_timeout_ms minus 1/lease_clock_allowance_divisor of it: two machines'
  /// clocks run at rates within 10% of each other (NTP slews by at most 0.05%; a VM's steal and a
  /// paused process are covered because the lease is checked at the moment of each answer).
  static constexpr int64_t lease_clock_allowance_divisor = 10;
  /// `session_timeout_ms`: broker.session.timeout.ms (the lease is at least 1 ms).
  explicit leadership_lease(int64_t session_timeout_ms);

  /// The controller acknowledged (registered, or answered a heartbeat not fenced and caught up:
  /// the broker had applied every fence and leadership move of it) a request this broker sent at
  /// `sent_ms`. An older acknowledgement than one already counted changes nothing.
  void acknowledged(int64_t sent_ms);
  /// Whether the lease holds at `now_ms`.
  [[nodiscard]] bool holds(int64_t now_ms) const;
  /// The end of the lease (exclusive), ms; -1 before any acknowledgement.
  [[nodiscard]] int64_t valid_until_ms() const { return valid_until_ms_; }
  [[nodiscard]] int64_t length_ms() const { return length_ms_; }

 private:
  int64_t length_ms_;
  int64_t valid_until_ms_ = -1;
};

/// When the active controller runs in this very process, it answers its own broker's heartbeats
/// locally; those prove nothing once it lost its quorum (a new controller may be fencing this
/// broker meanwhile). The time a majority of the voters last fetched from it (Raft's check-quorum
/// evidence, KIP-595): each voter's last fetch in ms (-1: none in this epoch), the leader itself
/// counted at `now_ms`. -1 when no majority ever fetched in this epoch.
[[nodiscard]] int64_t quorum_contact_ms(const std::vector<int64_t>& other_voters_last_fetch_ms, int64_t now_ms);

/// The rule of this header for a replica that leads the partition: `replicas` the partition's
/// replica count (with one replica no other broker can lead it, so the lease does not matter),
/// `lease_holds` the broker's leadership_lease::holds(now).
[[nodiscard]] end_offset_answer answer_end_offset(model::offset high_watermark, model::offset epoch_start_offset,
                                                  size_t replicas, bool lease_holds);

/// The rule for a Fetch, whose answer always carries the partition's end (HighWatermark,
/// LastStableOffset) beside its records, on a replica that leads the partition:
///   - at or past the high watermark the reader asks for the end: answer_end_offset decides;
///   - below it the records are committed, but the answer's high watermark is the leader's own,
///     which a new leader still establishing (KIP-207) can hold below an offset the previous
///     leader acknowledged (KAFKA-2334): a client that saw the old figure would see its end go
///     backwards (librdkafka caches it for lag and query_watermark_offsets). So a Fetch of a
///     partition with more than one replica is answered OFFSET_NOT_AVAILABLE (retriable) while
///     the high watermark is below the epoch's start offset, at any fetch offset. That lasts one
///     round of the followers' fetches (or, with a follower gone, until the ISR shrinks).
///   - a lapsed lease is not checked below the high watermark: a leader whose heartbeats are
///     slow under load would stall its consumers for nothing (test_add_broker saw it), and a
///     zombie's figure is the one it held when cut off, as in Kafka (docs/kafka.md says so).
/// `fetch_offset` the reader's position.
[[nodiscard]] end_offset_answer answer_fetch(model::offset high_watermark, model::offset epoch_start_offset,
                                             size_t replicas, bool lease_holds, model::offset fetch_offset);

}  // namespace ringlog::replication
