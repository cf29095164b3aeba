#include <string>

#include "ringlog/raft/config.h"
#include "ringlog/raft/constants.h"
#include "ringlog/raft/errc.h"
#include "ringlog/raft/messages.h"

namespace ringlog::raft {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::none: return "none";
    case errc::not_leader_or_follower: return "not_leader_or_follower";
    case errc::fenced_leader_epoch: return "fenced_leader_epoch";
    case errc::unknown_leader_epoch: return "unknown_leader_epoch";
    case errc::invalid_request: return "invalid_request";
    case errc::offset_out_of_range: return "offset_out_of_range";
    case errc::inconsistent_cluster_id: return "inconsistent_cluster_id";
    case errc::inconsistent_voter_set: return "inconsistent_voter_set";
    case errc::snapshot_not_found: return "snapshot_not_found";
    case errc::position_out_of_range: return "position_out_of_range";
    case errc::record_too_large: return "record_too_large";
    case errc::uncommitted_limit_reached: return "uncommitted_limit_reached";
  }
  return "unknown";
}

std::string_view message_name(const message_body& body) {
  static constexpr std::string_view names[] = {
      "vote_request",  "vote_response",  "begin_quorum_epoch_request", "begin_quorum_epoch_response",
      "end_quorum_epoch_request", "end_quorum_epoch_response", "fetch_request", "fetch_response",
      "fetch_snapshot_request",   "fetch_snapshot_response"};
  static_assert(std::size(names) == std::variant_size_v<message_body>);
  return names[body.index()];
}

std::string validate(const config& c) {
  if (c.voters.empty() || c.voters.size() > constants::voters_max) {
    return "controller.quorum.voters must name 1.." + std::to_string(constants::voters_max) + " voters";
  }
  for (size_t i = 0; i < c.voters.size(); ++i) {
    if (c.voters[i].value() < 0) {
      return "controller.quorum.voters: node ids must be >= 0";
    }
    for (size_t j = i + 1; j < c.voters.size(); ++j) {
      if (c.voters[i] == c.voters[j]) {
        return "controller.quorum.voters: duplicate node id " + std::to_string(c.voters[i].value());
      }
    }
  }
  if (c.self.value() < 0) {
    return "node.id must be >= 0";
  }
  if (c.election_timeout_ms < 10 || c.election_timeout_ms > 3'600'000) {
    return "controller.quorum.election.timeout.ms must be in [10, 3600000]";
  }
  if (c.fetch_timeout_ms <= 2 * (constants::fetch_max_wait_ms) || c.fetch_timeout_ms > 3'600'000) {
    return "controller.quorum.fetch.timeout.ms must be in (2 * fetch_max_wait_ms, 3600000]";
  }
  if (c.election_backoff_max_ms < 1 || c.election_backoff_max_ms > 3'600'000) {
    return "controller.quorum.election.backoff.max.ms must be in [1, 3600000]";
  }
  return {};
}

}  // namespace ringlog::raft
