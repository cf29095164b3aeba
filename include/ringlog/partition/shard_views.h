#pragma once
// The metadata every shard reads without a lock (issue 28 stage D; Kafka's MetadataCache, one
// copy per shard here): an immutable value replaced as a whole by the metadata publisher, on
// each shard by that shard's own thread; threads outside the shards read the latest one.
// A template over the view, so the partition module publishes what the broker reads (the
// broker's metadata_view: topics, dynamic configs, ACLs, quotas) without seeing its fields.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::partition {

/// publish answers once every shard installed the new view, so the broker answers an admin call
/// after it: a client that saw its change answered finds it on every shard.
template <class View>
class shard_views {
 public:
  /// One empty view per shard of `runtime` (which outlives this); publish answers on `reply_shard`.
  shard_views(runtime::shard_runtime& runtime, size_t reply_shard)
      : runtime_(runtime),
        reply_shard_(reply_shard),
        views_(runtime.shard_count(), std::make_shared<const View>()) {}

  /// The view the calling thread may read: its shard's, or the latest published outside the shards.
  [[nodiscard]] std::shared_ptr<const View> current() const {
    const size_t shard = runtime_.current_shard();
    if (shard < views_.size()) return views_[shard];
    return latest_.load(std::memory_order_acquire);
  }
  /// The view published last (any thread), possibly ahead of the calling shard's.
  [[nodiscard]] std::shared_ptr<const View> latest() const { return latest_.load(std::memory_order_acquire); }

  /// Installs `next` as every shard's view (the latest at once); `done` runs on reply_shard once
  /// every shard has it.
  void publish(std::shared_ptr<const View> next, std::function<void()> done) {
    latest_.store(next, std::memory_order_release);
    auto remaining = std::make_shared<std::atomic<size_t>>(views_.size());
    auto finish = std::make_shared<std::function<void()>>(std::move(done));
    for (size_t shard = 0; shard < views_.size(); ++shard) {
      runtime_.post(shard, [this, shard, next, remaining, finish] {
        views_[shard] = next;
        if (remaining->fetch_sub(1) == 1) runtime_.post(reply_shard_, [finish] { (*finish)(); });
      });
    }
  }

 private:
  runtime::shard_runtime& runtime_;
  const size_t reply_shard_;
  std::vector<std::shared_ptr<const View>> views_;   // views_[i] is touched only on shard i
  std::atomic<std::shared_ptr<const View>> latest_{std::make_shared<const View>()};
};

}  // namespace ringlog::partition
