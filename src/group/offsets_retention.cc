// Committed offsets retention on the group_coordinator: Kafka's offsets.retention.minutes as
// KIP-211 defines it (GroupMetadata.removeExpiredOffsets and GroupMetadataManager's
// cleanupGroupMetadata). Offsets of a group nobody uses go once the retention has passed since the
// group became empty and since its last commit; a group with members keeps them. Time is an input
// (now_ms), as everywhere in the coordinator.

#include <algorithm>

#include "ringlog/base/assert.h"
#include "ringlog/group/group_coordinator.h"

namespace ringlog::group {

bool group_coordinator::has_members(const group_state_data& g) {
  return !g.members.empty() || (g.classic && !g.classic->members.empty());
}

void group_coordinator::track_emptiness(group_state_data& g, int64_t now_ms) {
  if (has_members(g)) {
    g.empty_since_ms.reset();
  } else if (!g.empty_since_ms) {
    g.empty_since_ms = now_ms;
  }
}

namespace {

/// The partitions of `g`'s committed offsets that a pending transactional offset names: Kafka
/// never expires an offset with a commit still pending.
template <typename Group>
partition_set pending_partitions(const Group& g) {
  partition_set out;
  for (const auto& [producer_id, offsets] : g.pending_txn) {
    for (const auto& [tp, v] : offsets) out.insert(tp);
  }
  return out;
}

}  // namespace

offsets_expiry_result group_coordinator::expire_offsets(int64_t now_ms, int64_t retention_ms,
                                                        const std::function<bool(std::string_view)>& held) {
  RINGLOG_ASSERT_OP(retention_ms, >=, int64_t{1});
  offsets_expiry_result out;
  for (auto git = groups_.begin(); git != groups_.end();) {
    group_state_data& g = git->second;
    // A path that emptied the group without saying so is caught here, late rather than early.
    track_emptiness(g, now_ms);
    const bool in_use = has_members(g) || has_classic_members(g) || (held && held(git->first));
    if (in_use) {
      ++git;
      continue;
    }
    RINGLOG_ASSERT(g.empty_since_ms.has_value(), "a group without members has an empty_since_ms");
    int64_t reference_ms = *g.empty_since_ms;
    for (const auto& [tp, v] : g.committed) reference_ms = std::max(reference_ms, v.commit_timestamp_ms);
    if (now_ms - reference_ms < retention_ms) {
      ++git;
      continue;
    }
    expired_group_offsets expired{git->first, {}, false};
    const partition_set pending = pending_partitions(g);
    for (auto it = g.committed.begin(); it != g.committed.end();) {
      if (pending.contains(it->first)) {
        ++it;
        continue;
      }
      out.records.push_back(offsets_topic_record{encode_offset_commit_key(git->first, it->first), std::nullopt});
      expired.partitions.insert(it->first);
      it = g.committed.erase(it);
    }
    if (g.committed.empty() && g.pending_txn.empty()) {
      // Kafka's Empty -> Dead: the group's metadata goes too, so it leaves every listing.
      out.records.push_back(offsets_topic_record{encode_group_metadata_key(git->first), std::nullopt});
      expired.group_removed = true;
    }
    const bool removed = expired.group_removed;
    if (!expired.partitions.empty() || removed) out.groups.push_back(std::move(expired));
    git = removed ? groups_.erase(git) : std::next(git);
  }
  return out;
}

}  // namespace ringlog::group
