#pragma once
// One HTTP/WebSocket produce in flight (produce_appending, produce.cc): its per-record results
// and the parts still to answer (one per batch sent, one per delay topic used: delay_host.h).
// Private to the broker module.

#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

#include "ringlog/broker/broker.h"

namespace ringlog::broker::detail {

struct produce_operation {
  std::vector<produce_record_result> results;
  std::atomic<size_t> remaining{0};
  std::function<void(result<produce_response>)> done;
  void finish_one() {
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) done(produce_response{std::move(results)});
  }
};

}  // namespace ringlog::broker::detail
