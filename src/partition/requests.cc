// The names of requests.h's enums.

#include "ringlog/partition/requests.h"

namespace ringlog::partition {

std::string_view to_string(isolation_level level) {
  switch (level) {
    case isolation_level::read_uncommitted: return "read_uncommitted";
    case isolation_level::read_committed: return "read_committed";
  }
  return "read_uncommitted";
}

}  // namespace ringlog::partition
