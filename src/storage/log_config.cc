#include "ringlog/storage/log_config.h"

#include <limits>
#include <string>

#include "ringlog/base/constants.h"

namespace ringlog::storage {
namespace {

result<void> check_range(const char* key, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return base::ok_v;
  return error{errc::invalid_config, std::string(key) + "=" + std::to_string(value) + " is out of range [" +
                                         std::to_string(min) + ", " + std::to_string(max) + "]"};
}

}  // namespace

result<void> log_config::validate() const {
  constexpr int64_t max_i64 = std::numeric_limits<int64_t>::max();
  RINGLOG_TRY(check_range("segment.bytes", segment_bytes, constants::segment_bytes_min, constants::segment_bytes_max - 1));
  RINGLOG_TRY(check_range("segment.ms", segment_ms, 1, max_i64));
  RINGLOG_TRY(check_range("retention.ms", retention_ms, -1, max_i64));
  RINGLOG_TRY(check_range("retention.bytes", retention_bytes, -1, max_i64));
  RINGLOG_TRY(check_range("index.interval.bytes", index_interval_bytes, 0, std::numeric_limits<int32_t>::max()));
  RINGLOG_TRY(check_range("segment.index.bytes", segment_index_bytes, 4, std::numeric_limits<int32_t>::max()));
  RINGLOG_TRY(check_range("max.message.bytes", max_message_bytes, 0, constants::batch_bytes_max));
  RINGLOG_TRY(check_range("min.compaction.lag.ms", min_compaction_lag_ms, 0, max_i64));
  RINGLOG_TRY(check_range("max.compaction.lag.ms", max_compaction_lag_ms, 1, max_i64));
  RINGLOG_TRY(check_range("delete.retention.ms", delete_retention_ms, 0, max_i64));
  RINGLOG_TRY(check_range("producer.id.expiration.ms", producer_id_expiration_ms, 1, max_i64));
  if (!(min_cleanable_dirty_ratio >= 0.0 && min_cleanable_dirty_ratio <= 1.0)) {
    return error{errc::invalid_config,
                 "min.cleanable.dirty.ratio=" + std::to_string(min_cleanable_dirty_ratio) + " is out of range [0, 1]"};
  }
  if (cleanup_policy != "delete" && cleanup_policy != "compact" && cleanup_policy != "compact,delete" &&
      cleanup_policy != "delete,compact") {
    return error{errc::invalid_config,
                 "cleanup.policy='" + cleanup_policy + "' is not one of delete, compact, compact,delete"};
  }
  return base::ok_v;
}

}  // namespace ringlog::storage
