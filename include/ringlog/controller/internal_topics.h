#pragma once
// The coordinators' internal topics on the active controller as pure decisions: when
// __consumer_offsets and __transaction_state are due, which one is created next, and their
// records (partition counts fixed at creation, compacted, 100 MiB segments). Kafka creates them
// through AutoTopicCreationManager once offsets.topic.replication.factor brokers are up; here the
// active controller creates them itself. Nothing here commits: the broker's
// ensure_offsets_topic_async (src/broker/internal_topics.cc) commits the records, one topic per
// metadata entry.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/protocol/wire.h"

namespace ringlog::controller {

/// The group coordinators' topic (the broker's consumer_offsets_topic is this name).
inline constexpr std::string_view consumer_offsets_topic_name = "__consumer_offsets";
/// The transaction coordinators' topic (the broker's transaction_state_topic is this name).
inline constexpr std::string_view transaction_state_topic_name = "__transaction_state";

/// The settings the internal topics follow, from the active controller's config.
struct internal_topic_rules {
  int32_t offsets_topic_partitions = 50;            // offsets.topic.num.partitions
  int32_t transaction_state_partitions = 50;        // transaction.state.log.num.partitions
  size_t quorum_voters = 1;                         // controller.quorum.voters (0 counts as 1)
  int64_t session_timeout_ms = 0;                   // broker.session.timeout.ms
};

/// Whether the internal topics are due at `now_ms` on a node that became the active controller at
/// `active_since_ms` (as Kafka waits for offsets.topic.replication.factor brokers): once
/// min(3, voters) brokers are usable, so their replicas spread over the cluster that is starting,
/// or once rules.session_timeout_ms has passed since (some brokers never came).
bool internal_topics_due(const metadata_image& image, const internal_topic_rules& rules, int64_t now_ms,
                         int64_t active_since_ms);

/// __consumer_offsets' records with id `topic_id`: rules.offsets_topic_partitions partitions (a
/// later change of the key would move groups to other partitions, so the count is fixed at
/// creation, as in Kafka), automatic_replication_factor's replicas, cleanup.policy=compact (the
/// latest commit per group and partition is what counts; a deleted group's tombstones go after
/// delete.retention.ms) and segment.bytes=constants::internal_topic_segment_bytes. Errors:
/// invalid_replication_factor (no usable broker).
result<std::vector<protocol::metadata_record>> offsets_topic_records(const metadata_image& image,
                                                                     const internal_topic_rules& rules,
                                                                     const uuid& topic_id);

/// The same for __transaction_state: rules.transaction_state_partitions partitions (they place
/// transactional ids), compacted (the latest state per transactional id is what counts).
result<std::vector<protocol::metadata_record>> transaction_state_topic_records(const metadata_image& image,
                                                                               const internal_topic_rules& rules,
                                                                               const uuid& topic_id);

/// The internal topic `image` lacks that is created next: __consumer_offsets first, then
/// __transaction_state; nullopt when both exist.
std::optional<std::string_view> missing_internal_topic(const metadata_image& image);

/// The records that create internal topic `name` (one of the two names above) with id `topic_id`.
result<std::vector<protocol::metadata_record>> internal_topic_records(const metadata_image& image,
                                                                      const internal_topic_rules& rules,
                                                                      std::string_view name, const uuid& topic_id);

}  // namespace ringlog::controller
