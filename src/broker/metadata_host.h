#pragma once
// What the broker's API facets (security_manager.h, admin_manager.h) and the active controller
// reach in the broker to change the metadata: the metadata log's write path and the barrier
// (they read the views from the metadata publisher). broker_parts implements it; they never see
// it. Private to the broker module.

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
  /// Controller shard: `records` as one metadata entry through the quorum; `done` once it is
  /// committed, applied here, published and reconciled. Errors: invalid_request (the records do
  /// not fit the image), not_controller (no quorum leader: retry), request_timed_out.
  virtual void commit_records(std::vector<protocol::metadata_record> records, std::function<void(result<void>)> done) = 0;
  /// Posts `then` to the controller shard once this node applied every entry the quorum had
  /// committed when the call arrived (metadata_barrier.cc): changes are checked against it.
  virtual void post_caught_up(std::function<void()> then) = 0;
};

}  // namespace ringlog::broker::detail
