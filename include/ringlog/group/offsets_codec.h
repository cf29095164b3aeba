#pragma once
// Records of the internal compacted topic __consumer_offsets: committed offsets and group
// metadata. The broker appends what the coordinator returns and feeds them back through
// group_coordinator::replay() after a restart. The key decides compaction: the latest value per
// key wins, a null value (tombstone) deletes.
//
// All integers are big-endian two's complement. `string` = int16 length N (0..32767) then N
// bytes of UTF-8; `nullable string` = the same with length -1 meaning null (Kafka's encoding).
//
// Offset commit key (Kafka's OffsetCommitKey, version 1; versions 0 and 1 share this layout and
// both are read):
//   int16  version            = 1  (0 accepted on read)
//   string group_id
//   string topic
//   int32  partition
// Offset commit value (Kafka's OffsetCommitValue, version 3):
//   int16  version            = 3
//   int64  offset             the NEXT offset to read (Kafka semantics; REST v2's "N" is stored as N+1)
//   int32  leader_epoch       = -1 (ringlog does not track it yet)
//   string metadata           (0..limits::offset_metadata_bytes_max bytes)
//   int64  commit_timestamp   ms since the Unix epoch
//
// Group metadata key (Kafka's GroupMetadataKey, version 2):
//   int16  version            = 2
//   string group_id
// Group metadata value (ringlog's own layout: server-side assignment has no counterpart in
// Kafka's GroupMetadataValue v0-v4, so it uses version 100 to never be mistaken for one):
//   int16  version            = 100
//   int8   assignor           0 range, 1 round_robin, 2 cooperative_sticky
//   int32  generation
//   int32  member_count       0..limits::group_members_max, then per member:
//     string          member_id
//     nullable string group_instance_id
//     string          client_name
//     int32           session_timeout_ms
//     int32           rebalance_timeout_ms
//     int8            auto_offset_reset     0 earliest, 1 latest, 2 none
//     int32           member_generation     generation the member last acknowledged
//     int8            subscription_kind     0 none, 1 topics, 2 pattern, 3 manual
//     int32 n + n x string                   subscribed topics (empty unless kind 1)
//     string                                 pattern (empty unless kind 2)
//     partitions                             manual assignment (empty unless kind 3)
//     partitions                             target
//     partitions                             owned
//   where `partitions` = int32 count (0..limits::commit_partitions_max) then per entry
//   string topic, int32 partition.
// Group metadata value of a classic group (Kafka clients' JoinGroup/SyncGroup): Kafka's own
// GroupMetadataValue version 3, byte for byte:
//   int16  version            = 3
//   string protocol_type      e.g. "consumer"
//   int32  generation
//   nullable string protocol  the chosen protocol (null while empty)
//   nullable string leader    member id of the leader (null while empty)
//   int64  current_state_timestamp   ms since the Unix epoch
//   int32  member_count       0..limits::group_members_max, then per member:
//     string          member_id
//     nullable string group_instance_id
//     string          client_id
//     string          client_host
//     int32           rebalance_timeout
//     int32           session_timeout
//     bytes           subscription   int32 length then bytes: its metadata for the chosen protocol
//     bytes           assignment     int32 length then bytes: what the leader assigned it
//
// Consumer instance key (ringlog's own: a REST Proxy v2 consumer instance, issue 14 items 25
// and 28; version 100 so it is never mistaken for one of Kafka's keys 0-2):
//   int16  version            = 100
//   string group_id
//   string instance_id
// Consumer instance value (version 102; 100 and 101 are still read): the instance's settings, kept with
// its lease so a restart keeps them, and what it needs to join the group later (it joins on
// subscribe):
//   int16  version            = 102
//   string          client_name
//   nullable string group_instance_id
//   int8            format                0 binary, 1 json (the broker's consumer_format)
//   int8            auto_commit_enable    0 or 1
//   int64           request_timeout_ms
//   int32           session_timeout_ms
//   int32           fetch_min_bytes
//   int8            auto_offset_reset     0 earliest, 1 latest, 2 none
//   int8            assignor              -1 none, 0 range, 1 round_robin, 2 cooperative_sticky
//   int8 kind + int32 n + n x string + string + partitions   its subscription, as in a member
//   int8            isolation_level       0 read_uncommitted, 1 read_committed (KIP-98);
//                                         absent in version 100 (read as 0)
//   int8            has_retry             (version 101) then when 1: int32 max_delivery_attempts,
//                                         int64 retry_backoff_ms, int32 retry_backoff_multiplier x 1000,
//                                         int64 retry_backoff_max_ms (issue 18), then (version 102)
//                                         string retry_topic_template, string dead_letter_topic_template
//                                         (version 101: the default names)
// A null value (tombstone) ends the instance.
//
// Transactional offset key (ringlog's own, version 101: an offset of TxnOffsetCommit held
// pending until its transaction ends, KIP-98/KIP-447; Kafka keeps these as transactional batches
// instead, whose markers the group loader reads):
//   int16  version            = 101
//   string group_id
//   string topic
//   int32  partition
//   int64  producer_id        the transaction's producer
// Its value is an offset commit value (version 3). When the transaction commits, the group's
// offset commit record and this key's tombstone are written in one batch; when it aborts, only
// the tombstone. Replay holds every key still without a tombstone as pending.
// Trailing bytes after a value or key are refused as corrupt (no silent partial reads).

#include <cstddef>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ringlog/group/errc.h"
#include "ringlog/group/types.h"

namespace ringlog::group {

inline constexpr int16_t offset_key_version = 1;
inline constexpr int16_t offset_value_version = 3;
inline constexpr int16_t group_key_version = 2;
inline constexpr int16_t group_value_version = 100;
inline constexpr int16_t classic_group_value_version = 3;
inline constexpr int16_t consumer_instance_key_version = 100;
inline constexpr int16_t consumer_instance_value_version = 103;
inline constexpr int16_t consumer_instance_value_version_v102 = 102;   // before the owner (issue 29)
inline constexpr int16_t consumer_instance_value_version_v101 = 101;   // before the retry topic names
inline constexpr int16_t consumer_instance_value_version_v100 = 100;   // before isolation_level and retries
inline constexpr int16_t txn_offset_key_version = 101;

/// One member as persisted in the group metadata value.
struct member_metadata {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_name;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  offset_reset auto_offset_reset = offset_reset::latest;
  generation_id generation{0};
  subscription sub;
  partition_set target;
  partition_set owned;
  bool operator==(const member_metadata&) const = default;
};

struct group_metadata {
  assignor_kind assignor = assignor_kind::cooperative_sticky;
  generation_id generation{0};
  std::vector<member_metadata> members;
  bool operator==(const group_metadata&) const = default;
};

/// A classic group as persisted (Kafka's GroupMetadataValue v3).
struct classic_member_metadata {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  model::bytes subscription;
  model::bytes assignment;
  bool operator==(const classic_member_metadata&) const = default;
};
struct classic_group_metadata {
  std::string protocol_type;
  generation_id generation{0};
  std::optional<std::string> protocol_name;
  std::optional<std::string> leader;
  int64_t current_state_timestamp_ms = -1;
  std::vector<classic_member_metadata> members;
  bool operator==(const classic_group_metadata&) const = default;
};

struct offset_commit_key {
  std::string group_id;
  topic_partition partition;
  bool operator==(const offset_commit_key&) const = default;
};
struct group_metadata_key {
  std::string group_id;
  bool operator==(const group_metadata_key&) const = default;
};
struct consumer_instance_key {
  std::string group_id;
  std::string instance_id;
  bool operator==(const consumer_instance_key&) const = default;
};
struct txn_offset_key {
  std::string group_id;
  topic_partition partition;
  int64_t producer_id = -1;
  bool operator==(const txn_offset_key&) const = default;
};
using offsets_topic_key = std::variant<offset_commit_key, group_metadata_key, consumer_instance_key, txn_offset_key>;

/// A REST v2 consumer instance's settings (see the layout above).
struct consumer_instance_value {
  std::string client_name;
  std::optional<std::string> group_instance_id;
  int8_t format = 0;
  bool auto_commit_enable = false;
  int64_t request_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  int32_t fetch_min_bytes = 1;
  offset_reset auto_offset_reset = offset_reset::latest;
  std::optional<assignor_kind> assignor;
  subscription sub;
  bool read_committed = false;   // isolation.level=read_committed (KIP-98)
  /// Its retry settings (issue 18), as given or defaulted when it was created; nullopt: written
  /// by version 100, the broker's defaults apply.
  struct retry_settings {
    int32_t max_delivery_attempts = 0;
    int64_t retry_backoff_ms = 0;
    int32_t retry_backoff_multiplier_milli = 0;   // the multiplier x 1000
    int64_t retry_backoff_max_ms = 0;
    std::string retry_topic_template;         // "" (version 101): the default
    std::string dead_letter_topic_template;   // likewise
    bool operator==(const retry_settings&) const = default;
  };
  std::optional<retry_settings> retry;
  /// The principal that created it (issue 29, version 103); "" before: User:ANONYMOUS.
  std::string owner;
  bool operator==(const consumer_instance_value&) const = default;
};

model::bytes encode_offset_commit_key(std::string_view group_id, const topic_partition& tp);
model::bytes encode_offset_commit_value(const committed_offset& value);
model::bytes encode_group_metadata_key(std::string_view group_id);
model::bytes encode_group_metadata_value(const group_metadata& value);
model::bytes encode_classic_group_metadata_value(const classic_group_metadata& value);
model::bytes encode_consumer_instance_key(std::string_view group_id, std::string_view instance_id);
model::bytes encode_consumer_instance_value(const consumer_instance_value& value);
model::bytes encode_txn_offset_key(std::string_view group_id, const topic_partition& tp, int64_t producer_id);

/// Errors: corrupt_message (short, negative length, trailing bytes; message says which field),
/// unsupported_version (a version this code does not read).
result<offsets_topic_key> decode_offsets_topic_key(std::span<const std::byte> key);
result<committed_offset> decode_offset_commit_value(std::span<const std::byte> value);
result<group_metadata> decode_group_metadata_value(std::span<const std::byte> value);
result<consumer_instance_value> decode_consumer_instance_value(std::span<const std::byte> value);
/// The version field of a group metadata value (group_value_version: ringlog-managed,
/// classic_group_value_version: classic). Errors: corrupt_message (shorter than 2 bytes).
result<int16_t> group_metadata_value_version(std::span<const std::byte> value);
result<classic_group_metadata> decode_classic_group_metadata_value(std::span<const std::byte> value);

}  // namespace ringlog::group
