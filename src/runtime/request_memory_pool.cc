#include "ringlog/runtime/request_memory_pool.h"

#include <algorithm>
#include <vector>

#include "ringlog/base/assert.h"

namespace ringlog::runtime {

request_memory_pool::request_memory_pool(size_t capacity_bytes) : capacity_bytes_(capacity_bytes) {
  RINGLOG_ASSERT_OP(capacity_bytes, >=, 1u);
}

request_memory_pool::reservation request_memory_pool::reserve(size_t bytes, std::function<void()> on_reserved) {
  RINGLOG_ASSERT_OP(bytes, >=, 1u);
  if (bytes > capacity_bytes_) return {reserve_outcome::too_large, 0};
  const std::lock_guard lock(mutex_);
  if (capacity_bytes_ - reserved_bytes_ >= bytes) {
    reserved_bytes_ += bytes;
    return {reserve_outcome::reserved, 0};
  }
  const uint64_t ticket = next_ticket_++;
  waiting_.push_back(waiter{ticket, bytes, std::move(on_reserved)});
  return {reserve_outcome::queued, ticket};
}

void request_memory_pool::release(size_t bytes) {
  std::vector<std::function<void()>> granted;
  {
    const std::lock_guard lock(mutex_);
    RINGLOG_ASSERT_OP(bytes, <=, reserved_bytes_);
    reserved_bytes_ -= bytes;
    grant_fitting(granted);
  }
  for (auto& f : granted) f();
}

bool request_memory_pool::cancel(uint64_t ticket) {
  const std::lock_guard lock(mutex_);
  auto it = std::find_if(waiting_.begin(), waiting_.end(), [ticket](const waiter& w) { return w.ticket == ticket; });
  if (it == waiting_.end()) return false;
  waiting_.erase(it);
  return true;
}

void request_memory_pool::grant_fitting(std::vector<std::function<void()>>& granted) {
  for (auto it = waiting_.begin(); it != waiting_.end() && reserved_bytes_ < capacity_bytes_;) {
    if (capacity_bytes_ - reserved_bytes_ < it->bytes) {
      ++it;
      continue;
    }
    reserved_bytes_ += it->bytes;
    granted.push_back(std::move(it->on_reserved));
    it = waiting_.erase(it);
  }
}

size_t request_memory_pool::reserved_bytes() const {
  const std::lock_guard lock(mutex_);
  return reserved_bytes_;
}

size_t request_memory_pool::waiters() const {
  const std::lock_guard lock(mutex_);
  return waiting_.size();
}

}  // namespace ringlog::runtime
