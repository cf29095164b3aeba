#include "ringlog/storage/log_dir_failure.h"

namespace ringlog::storage {

void log_dir_failure_channel::report(std::string_view operation, const error& e) {
  if (reports_.fetch_add(1, std::memory_order_acq_rel) != 0) return;   // the first report decided
  if (on_failure_) on_failure_(log_dir_failure{log_dir_, std::string(operation), e.message});
}

}  // namespace ringlog::storage
