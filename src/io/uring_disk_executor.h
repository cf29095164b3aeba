#pragma once
// The io_uring executor (private to io; liburing never leaves src/io).

#include <memory>

#include "ringlog/io/disk_executor.h"

namespace ringlog::io::detail {

/// Sets up a ring of constants::io_uring_entries and its eventfd. Errors: unsupported when the
/// ring or the eventfd cannot be created (message names the failing call).
result<std::unique_ptr<disk_executor>> make_uring_disk_executor();

}  // namespace ringlog::io::detail
