#pragma once
// Raft settings with Kafka's key names (KIP-595 "controller.quorum.*").

#include <cstdint>
#include <string>
#include <vector>

#include "ringlog/raft/types.h"

namespace ringlog::raft {

/// Settings of one node. Defaults aim at a controller failover p99 under 2 s:
/// detection takes controller.quorum.fetch.timeout.ms (1000; Kafka's default is 2000), a pre-vote
/// and a vote round take a few round trips plus two fsyncs, and a split vote costs at most one
/// controller.quorum.election.backoff.max.ms (500; Kafka 1000). The price of the shorter fetch
/// timeout: a leader paused (GC, SIGSTOP, a slow disk) for over 1 s loses its leadership. Pre-vote
/// (KIP-996) and check-quorum keep such a node from disrupting the quorum when it returns.
struct config {
  node_id self = no_node;
  /// controller.quorum.voters: the voter ids (addresses belong to the transport). 1..voters_max.
  /// A node whose `self` is not among them is an observer (KIP-595; process.roles=broker): it
  /// never votes or stands, finds the leader by asking voters, and replicates like a follower.
  std::vector<node_id> voters;
  /// cluster.id; requests carrying another id are refused with inconsistent_cluster_id.
  std::string cluster_id;
  /// controller.quorum.election.timeout.ms: how long an unattached node or a candidate waits for a
  /// leader or an election result before it starts a (new) election; randomized in [t, 2t).
  int64_t election_timeout_ms = 1000;
  /// controller.quorum.fetch.timeout.ms: a follower that hears nothing from its leader for this
  /// long starts a pre-vote; a leader that hears no fetch from a majority for this long resigns
  /// (check-quorum); a voter refuses pre-votes while it heard from a leader within it.
  int64_t fetch_timeout_ms = 1000;
  /// controller.quorum.election.backoff.max.ms: the largest random wait before a new election
  /// after a lost one (split votes), ms.
  int64_t election_backoff_max_ms = 500;
};

/// Checks the config's ranges; the message names the offending key.
std::string validate(const config& c);

}  // namespace ringlog::raft
