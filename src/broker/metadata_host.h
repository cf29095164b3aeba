#pragma once
// What the broker's API facets (security_manager.h, admin_manager.h) reach in the broker to read
// and change the metadata: the views and the metadata log's write path. broker_impl implements
// it; the facets never see broker_impl. Private to the broker module.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "metadata.h"
#include "ringlog/broker/errc.h"
#include "ringlog/protocol/messages.h"

namespace ringlog::broker::detail {

class metadata_host {
 public:
  virtual ~metadata_host() = default;
  /// The metadata this thread may read: its shard's view, or the latest outside the shards.
  [[nodiscard]] virtual std::shared_ptr<const metadata_view> current_view() const = 0;
  /// Controller shard: the metadata view as of the last applied entry (replaced, never changed).
  [[nodiscard]] virtual const std::shared_ptr<const metadata_view>& controller_view() const = 0;
  /// Controller shard: `records` as one metadata entry through the quorum; `done` once it is
  /// committed, applied here, published and reconciled. Errors: invalid_request (the records do
  /// not fit the image), not_controller (no quorum leader: retry), request_timed_out.
  virtual void commit_records(std::vector<protocol::metadata_record> records, std::function<void(result<void>)> done) = 0;
  /// Posts `then` to the controller shard once this node applied every entry the quorum had
  /// committed when the call arrived (metadata_barrier.cc): changes are checked against it.
  virtual void post_caught_up(std::function<void()> then) = 0;
  virtual void log_info(const std::string& message) const = 0;
};

}  // namespace ringlog::broker::detail
