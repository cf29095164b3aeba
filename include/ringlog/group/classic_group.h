#pragma once
// Kafka's classic group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup, Kafka's
// protocol guide "The consumer group protocol", KIP-62, KIP-345, KIP-394): the calls and answers
// of the group_coordinator's classic_* methods, and Kafka's ConsumerProtocol encoding of the
// opaque member metadata and assignments (org.apache.kafka.clients.consumer.internals.
// ConsumerProtocol, the "consumer" protocol type), which the coordinator reads only to show
// classic members' topics and partitions (describe, lag, OffsetDelete).
//
// Classic groups are run by their members: the coordinator collects JoinGroups, picks the
// protocol every member supports (the most preferred by vote), hands the leader every member's
// metadata, and distributes the assignment the leader sends in its SyncGroup. Answers to
// JoinGroup and SyncGroup may wait for other members: the caller gives each such request a
// `classic_ticket`, and every ticket is answered exactly once, now or by a later call (another
// member's join or leave, or classic_tick() when a timer fires), through `classic_effects`.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/group/errc.h"
#include "ringlog/group/types.h"

namespace ringlog::group {

/// Names one waiting JoinGroup or SyncGroup request; chosen by the caller, unique among the
/// tickets it has not been answered for yet.
using classic_ticket = uint64_t;

/// Kafka's protocol type of consumers; the only one whose metadata the coordinator reads.
inline constexpr const char* consumer_protocol_type = "consumer";

struct classic_protocol {
  std::string name;      // e.g. "range", "roundrobin", "cooperative-sticky"
  model::bytes metadata; // opaque (ConsumerProtocol Subscription for "consumer")
  bool operator==(const classic_protocol&) const = default;
};

struct classic_join_request {
  std::string member_id;                         // "" = a member joining for the first time
  std::optional<std::string> group_instance_id;  // static membership (KIP-345)
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;   // [limits::session_timeout_ms_min, limits::session_timeout_ms_max]
  int32_t rebalance_timeout_ms = 0; // JoinGroup v0 has none: pass the session timeout (Kafka does)
  std::string protocol_type;        // non-empty
  std::vector<classic_protocol> protocols;  // in the member's order of preference, non-empty
  /// JoinGroup v4+ (KIP-394): a first join without group_instance_id is answered
  /// member_id_required with a new member id, and only the join with that id enters the group.
  bool require_known_member_id = false;
};

struct classic_join_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  model::bytes metadata;  // its metadata for the chosen protocol
};

struct classic_join_response {
  std::optional<error> failure;  // member_id_required still carries member_id
  generation_id generation{-1};
  std::string protocol_type;
  std::optional<std::string> protocol_name;
  std::string leader;
  /// The leader of a stable group rejoining with the same static identity: the group keeps its
  /// assignment, the leader must not compute one (JoinGroup v9, KIP-814).
  bool skip_assignment = false;
  std::string member_id;
  std::vector<classic_join_member> members;  // the leader's answer only; by member id
};

struct classic_sync_request {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  generation_id generation{-1};
  std::optional<std::string> protocol_type;   // v5+; checked when given
  std::optional<std::string> protocol_name;   // v5+; checked when given
  std::vector<std::pair<std::string, model::bytes>> assignments;  // the leader's: member id -> assignment
};

struct classic_sync_response {
  std::optional<error> failure;
  std::string protocol_type;
  std::optional<std::string> protocol_name;
  model::bytes assignment;
};

/// One member named by a LeaveGroup: by member id, by group.instance.id (v3+), or both.
struct classic_member_identity {
  std::string member_id;
  std::optional<std::string> group_instance_id;
};

/// What a classic call caused beyond its own answer: answers to waiting tickets (this call's
/// own, when answered now, is among them) and records for __consumer_offsets, to append before
/// the answers are sent (a SyncGroup's assignment is durable before any member hears it).
struct classic_effects {
  std::vector<std::pair<classic_ticket, classic_join_response>> joins;
  std::vector<std::pair<classic_ticket, classic_sync_response>> syncs;
  record_list records;
};

struct classic_leave_result {
  std::vector<std::optional<error>> members;  // per identity asked, in order; nullopt = left
  classic_effects effects;
};

// ---- Kafka's ConsumerProtocol (protocol type "consumer"; all integers big-endian)
// Subscription v0..v3: int16 version, int32 n + n x string topic, bytes user_data (int32 length,
//   -1 = null), then from v1 owned partitions, from v2 generation, from v3 rack: ignored here.
// Assignment v0..v3: int16 version, int32 n + n x (string topic, int32 m + m x int32 partition),
//   bytes user_data; later fields ignored.

/// The topics of a Subscription. Errors: corrupt_message (truncated, negative count).
result<std::vector<std::string>> decode_consumer_subscription_topics(std::span<const std::byte> metadata);
/// The partitions of an Assignment (an empty byte string = no partitions). Errors: corrupt_message.
result<partition_set> decode_consumer_assignment(std::span<const std::byte> assignment);
/// Assignment v0 of `partitions` (null user data), as the Java consumer writes it.
model::bytes encode_consumer_assignment(const partition_set& partitions);
/// Subscription v0 of `topics` (null user data).
model::bytes encode_consumer_subscription(const std::vector<std::string>& topics);

}  // namespace ringlog::group
