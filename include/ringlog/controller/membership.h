#pragma once
// Cluster membership on the active controller as pure decisions (Kafka's ClusterControlManager
// and BrokerHeartbeatManager, KIP-631): the answer to a broker's heartbeat (fenced or not,
// controlled shutdown, the records that unfence it or start its shutdown), and which broker to
// fence because it missed its session (broker.session.timeout.ms) or its process is known gone.
// Time comes in as arguments (wall ms of the active controller's clock); nothing here sends,
// commits or logs: the broker answers the RPC, commits the records and logs the reason
// (src/broker/membership.cc).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/protocol/wire.h"

namespace ringlog::controller {

/// What the active controller answers a heartbeat (BrokerHeartbeatResponse's fields), and the
/// records to commit for it (empty: none). The next heartbeat learns the records' outcome.
struct heartbeat_answer {
  bool is_fenced = true;
  /// The broker applied every metadata record that fenced it or moved its leaderships while it
  /// was fenced (broker_heartbeats::answer). Only an answer not fenced and caught up renews the
  /// broker's leadership lease (replication::leadership_lease).
  bool is_caught_up = false;
  bool should_shut_down = false;
  std::vector<protocol::metadata_record> records;
};

/// The settings fencing follows, from the active controller's config.
struct fencing_rules {
  int64_t session_timeout_ms = 0;        // broker.session.timeout.ms
  int32_t own_id = -1;                   // node.id of the active controller
  bool own_is_broker = false;            // process.roles includes broker (a combined node)
  bool unclean_leader_election = false;  // unclean.leader.election.enable
  /// The incarnation of the active controller's own process on a combined node (check_registration
  /// lets it register its own id over an older incarnation at once). Zero on a dedicated controller.
  protocol::uuid own_incarnation_id;
};

/// A broker to fence: why (for the log line) and the records that do it.
struct fencing {
  int32_t broker_id = -1;
  /// "no heartbeat for N ms (broker.session.timeout.ms=M)" or "its cluster listener refuses
  /// connections (its process is gone)".
  std::string reason;
  /// A FenceBrokerRecord, then remove_broker_from_partitions's records (its leaderships move).
  std::vector<protocol::metadata_record> records;
};

/// The active controller's record of each broker's session (in memory: a new active controller
/// starts it with activate and gives every broker a full session). Controller shard only. Every
/// `now_ms` here is base::clock::monotonic_ms: sessions are durations, which a stepped wall clock
/// would stretch or cut.
class broker_heartbeats {
 public:
  /// This node became the active controller at `now_ms`: every broker of `image` starts a full
  /// session now, in its current broker epoch; refusals seen before are forgotten; and a broker
  /// is caught up (heartbeat_answer::is_caught_up) only once it applied `epoch_start_offset`, the
  /// first entry of this controller's quorum epoch (metadata_quorum::leader_epoch_start_offset):
  /// a fence a previous controller committed, and the unfence it may have committed after, lie
  /// below it; this controller cannot tell which brokers they concern. Not the image's offset at
  /// a broker's first heartbeat: on a fresh cluster that is an entry or two past what every
  /// broker has applied then (the internal topics and the forwarding secret commit as the brokers
  /// start), and no leader could serve until its second heartbeat (session 36: DeleteRecords
  /// and an offsets read answered NOT_LEADER_OR_FOLLOWER 0.5 s after the cluster served).
  void activate(const controller::metadata_image& image, int64_t now_ms, int64_t epoch_start_offset);

  /// An accepted heartbeat of broker `broker_id` at `now_ms` (answer calls it): its session
  /// restarts. The broker epoch a session counts for is the one next_to_fence last saw in the
  /// image; a new one there (a restart) restarts the session when next_to_fence first sees it.
  void heard(int32_t broker_id, int64_t now_ms);

  /// The answer to `request` at `now_ms` against `image` (Kafka's
  /// ClusterControlManager.processBrokerHeartbeat): the broker is fenced / shutting down as the
  /// image says; a broker that wants to shut down and is not yet gets controlled_shutdown_records;
  /// a fenced one that does not want to shut down gets an UnfenceBrokerRecord and the
  /// leaderships of leaderless partitions whose ISR names it (elect_leaderless). An accepted
  /// heartbeat is heard.
  /// is_caught_up: request.current_metadata_offset reached the image's offset of the last answer
  /// that found the broker fenced (that image holds the fence) and activate's epoch_start_offset.
  /// A broker fenced while cut off from the controller still leads its partitions in its own
  /// view until it applies the fence and the
  /// leadership moves committed with it; an answer "not fenced" given once the unfence is
  /// committed, before the broker applied those, would renew its lease over a leadership that
  /// has moved, and it would answer its old high watermark as the partition's end while the new
  /// leader acknowledges past it (tests/cluster isolate-leader seed 27, session 34). Kafka's
  /// BrokerHeartbeatManager likewise counts a broker caught up only from its metadata offset.
  /// A broker whose fence this controller proposed and has not applied yet (fence_proposed) is
  /// answered fenced and not caught up, with no records: Kafka's controller applies its records
  /// as it appends them, so its answers see its own fence at once. Answered from the image
  /// without it, "not fenced, caught up" would renew the lease of a broker cut off for longer
  /// than its session until after the fence commits and its leaderships move (cluster_sim
  /// --slow-fetches-after-heal seed 675, session 37: the old leader answered its high watermark
  /// 47 after the new one acknowledged offset 57).
  /// Errors: stale_broker_epoch when the broker is not registered in request.broker_epoch
  /// (nothing is heard).
  result<heartbeat_answer> answer(const controller::metadata_image& image,
                                  const protocol::broker_heartbeat_request_data& request, int64_t now_ms);

  /// Whether `registration` may be committed at `now_ms` (Kafka's
  /// ClusterControlManager.registerBroker, KIP-631): refused with duplicate_broker_registration
  /// when `image` registers its broker id under another incarnation whose session is live - not
  /// fenced, heard within rules.session_timeout_ms (a registration next_to_fence has not seen yet
  /// counts as heard now), no refused probe since. The message names the broker id, the live incarnation, its cluster endpoint and its last heartbeat.
  /// Accepted: no registration, the same incarnation (a re-registration), a fenced or lapsed one
  /// (a restart after it ended), the active controller registering its own id in its own
  /// incarnation (the older one is its previous process), and a new incarnation advertising the
  /// very cluster endpoint (host and port) of the live one: two processes cannot listen on one
  /// address, so that is a restart whose old session is not over yet (kill -9 and start again).
  [[nodiscard]] result<void> check_registration(const controller::metadata_image& image,
                                                const protocol::register_broker_record& registration,
                                                int64_t now_ms, const fencing_rules& rules) const;

  /// The first broker (lowest id) of `image` to fence at `now_ms`, or nullopt: an unfenced broker
  /// whose last heartbeat (or session start) is more than rules.session_timeout_ms ago, or whose
  /// cluster listener refused a probe started at or after it (refused). Never the active
  /// controller's own broker on a combined node (it runs this code: it is alive); a dedicated
  /// controller's registration under its own id is left over from a combined past and is fenced
  /// like any other. A broker seen in a new broker epoch (a restart) starts its session now.
  /// One at a time: the caller commits the records, and asks again on the image they made.
  std::optional<fencing> next_to_fence(const controller::metadata_image& image, int64_t now_ms,
                                       const fencing_rules& rules);

  /// Brokers whose last heartbeat is more than constants::heartbeat_intervals_late x
  /// `heartbeat_interval_ms` before `now_ms` (the active controller probes them), in id order.
  [[nodiscard]] std::vector<int32_t> late(int64_t now_ms, int64_t heartbeat_interval_ms) const;

  /// The caller proposed next_to_fence's records for broker `broker_id` (fence_proposed) or their
  /// commit ended, applied or failed (fence_settled); answer tells a broker in between it is fenced.
  void fence_proposed(int32_t broker_id);
  void fence_settled(int32_t broker_id);
  [[nodiscard]] bool fence_in_flight(int32_t broker_id) const { return fences_in_flight_.contains(broker_id); }

  /// A probe of broker `broker_id` started at `started_ms` found its cluster listener refusing
  /// connections: next_to_fence fences it at once unless it heard a heartbeat after `started_ms`.
  void refused(int32_t broker_id, int64_t started_ms);

 private:
  std::map<int32_t, int64_t> last_heartbeat_ms_;   // wall ms of each broker's last heartbeat or session start
  std::map<int32_t, int64_t> heartbeat_epoch_;     // the broker epoch last_heartbeat_ms_ counts for
  std::map<int32_t, int64_t> refused_at_ms_;       // when a probe that found each broker's listener refusing started
  /// The image offset of the last answer that found each broker fenced (answer's is_caught_up).
  std::map<int32_t, int64_t> fenced_answer_offset_;
  int64_t epoch_start_offset_ = -1;   // activate's: every broker must have applied it
  std::set<int32_t> fences_in_flight_;   // fence_proposed and not fence_settled yet
};

/// An UnfenceBrokerRecord for broker `b`, then elect_leaderless's records for it (Kafka's
/// BrokerHeartbeatManager unfences a broker that heartbeats and is caught up).
std::vector<protocol::metadata_record> unfence_broker_records(const controller::metadata_image& image,
                                                              const controller::broker_registration& b);

/// A FenceBrokerRecord for broker `b`, then remove_broker_from_partitions's records.
std::vector<protocol::metadata_record> fence_broker_records(const controller::metadata_image& image,
                                                            const controller::broker_registration& b,
                                                            bool unclean_leader_election);

}  // namespace ringlog::controller
