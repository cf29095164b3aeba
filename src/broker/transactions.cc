// The partition side of transactions (KIP-98): transaction markers written on partition leaders
// (write_txn_markers) and the isolation level of reads.

#include "broker_impl.h"

namespace ringlog::broker {

std::string_view to_string(isolation_level level) {
  switch (level) {
    case isolation_level::read_uncommitted: return "read_uncommitted";
    case isolation_level::read_committed: return "read_committed";
  }
  return "read_uncommitted";
}

namespace detail {

void broker_impl::write_txn_markers(std::vector<txn_marker> markers,
                                    std::function<void(result<std::vector<txn_marker_result>>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  // First contract commit: every partition is refused until the partition side lands.
  std::vector<txn_marker_result> out;
  out.reserve(markers.size());
  for (const txn_marker& m : markers) {
    txn_marker_result r;
    r.producer_id = m.producer_id;
    for (const auto& tp : m.partitions) {
      r.partitions.push_back({tp, error{errc::invalid_request, "transaction markers are not written yet"}});
    }
    out.push_back(std::move(r));
  }
  done(std::move(out));
}

}  // namespace detail
}  // namespace ringlog::broker
