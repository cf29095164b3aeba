#include "ringlog/replication/offsets_gate.h"

#include <algorithm>
#include <functional>

#include "ringlog/base/assert.h"

namespace ringlog::replication {

leadership_lease::leadership_lease(int64_t session_timeout_ms)
    : length_ms_(std::max<int64_t>(1, session_timeout_ms - session_timeout_ms / lease_clock_allowance_divisor)) {
  RINGLOG_ASSERT(session_timeout_ms > 0, "broker.session.timeout.ms is positive");
}

void leadership_lease::acknowledged(int64_t sent_ms) {
  if (sent_ms < 0) return;
  valid_until_ms_ = std::max(valid_until_ms_, sent_ms + length_ms_);
}

bool leadership_lease::holds(int64_t now_ms) const { return now_ms < valid_until_ms_; }

int64_t quorum_contact_ms(const std::vector<int64_t>& other_voters_last_fetch_ms, int64_t now_ms) {
  std::vector<int64_t> times = other_voters_last_fetch_ms;
  times.push_back(now_ms);   // the leader itself
  std::sort(times.begin(), times.end(), std::greater<>());
  const size_t majority = times.size() / 2 + 1;
  RINGLOG_ASSERT(majority <= times.size(), "a majority of the voters is a count of them");
  return times[majority - 1];   // -1 when fewer than a majority ever fetched
}

end_offset_answer answer_end_offset(model::offset high_watermark, model::offset epoch_start_offset, size_t replicas,
                                    bool lease_holds) {
#ifdef RINGLOG_REPLICATION_BREAK_END_WITHOUT_LEASE
  // Negative control of tests/sim/cluster_sim: a leader cut off from the controller answers its end.
  lease_holds = true;
#endif
#ifdef RINGLOG_REPLICATION_BREAK_END_BEFORE_ESTABLISHED
  // Negative control of tests/sim/cluster_sim: a new leader answers its end before its high
  // watermark reached its epoch's start (no OFFSET_NOT_AVAILABLE, KIP-207).
  epoch_start_offset = model::offset{0};
#endif
  if (replicas > 1 && !lease_holds) return end_offset_answer::lease_lapsed;
  if (!high_watermark_established(high_watermark, epoch_start_offset)) return end_offset_answer::offset_not_available;
  return end_offset_answer::available;
}

end_offset_answer answer_fetch(model::offset high_watermark, model::offset epoch_start_offset, size_t replicas,
                               bool lease_holds, model::offset fetch_offset) {
  if (fetch_offset >= high_watermark) {
    return answer_end_offset(high_watermark, epoch_start_offset, replicas, lease_holds);
  }
#ifdef RINGLOG_REPLICATION_BREAK_FETCH_END_BEFORE_ESTABLISHED
  // Negative control of tests/sim/cluster_sim: a Fetch below the high watermark is served by a
  // new leader still establishing it (its answer carries that high watermark).
  return end_offset_answer::available;
#endif
  if (replicas > 1 && !high_watermark_established(high_watermark, epoch_start_offset)) {
    return end_offset_answer::offset_not_available;
  }
  return end_offset_answer::available;
}

}  // namespace ringlog::replication
