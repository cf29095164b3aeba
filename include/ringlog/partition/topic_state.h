#pragma once
// A topic as the data path sees it (issue 28 stage D): its image and this node's live figures for
// its partitions. The metadata publisher (metadata_publisher.h) opens, drops and reconfigures the
// replicas from these; the broker's metadata view holds one per topic (its metadata.h).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringlog/controller/metadata_image.h"
#include "ringlog/partition/partition.h"

namespace ringlog::partition {

/// Immutable once published (only the atomics inside change); a new one is built when the topic
/// changes, sharing the stats of the partitions it keeps.
struct topic_state {
  std::shared_ptr<const controller::topic_image> image;
  bool is_internal = false;   ///< a "__" name: the broker's own topics
  std::vector<std::shared_ptr<partition_stats>> partitions;       // index = partition id
  std::shared_ptr<std::atomic<uint32_t>> next_keyless_partition;  // shared by every state of the topic
  [[nodiscard]] int32_t partitions_count() const { return static_cast<int32_t>(image->partitions.size()); }
  [[nodiscard]] const std::string& name() const { return image->name; }
};

}  // namespace ringlog::partition
