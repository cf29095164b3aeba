// sendfile(2) for zero-copy sends of segment bytes (file.h send_file_to_socket).

#include <sys/sendfile.h>

#include <cerrno>
#include <limits>

#include "ringlog/base/assert.h"
#include "ringlog/io/file.h"

namespace ringlog::io {

result<send_progress> send_file_to_socket(int socket_fd, const file& source, model::file_position file_position,
                                          size_t length) {
  RINGLOG_ASSERT_OP(socket_fd, >=, 0);
  const int file_fd = source.native_handle();
  if (file_fd < 0) return error{errc::unsupported, source.path() + ": not an OS file, cannot be sent by reference"};
  // sendfile moves at most 0x7ffff000 bytes per call (Linux's MAX_RW_COUNT); the caller loops.
  constexpr size_t sendfile_bytes_max = 0x7ffff000;
  const size_t ask = std::min(length, sendfile_bytes_max);
  if (ask == 0) return send_progress{};
  RINGLOG_ASSERT_OP(file_position.value(), <=, static_cast<uint64_t>(std::numeric_limits<off_t>::max()));
  while (true) {
    off_t offset = static_cast<off_t>(file_position.value());
    const ssize_t n = ::sendfile(socket_fd, file_fd, &offset, ask);
    if (n > 0) return send_progress{static_cast<size_t>(n), false};
    if (n == 0) {
      return error{errc::io_error, source.path() + ": ends before byte " + std::to_string(file_position.value() + ask) +
                                       " (sendfile sent nothing at " + std::to_string(file_position.value()) + ")"};
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return send_progress{0, true};
    return from_errno(errno, "sendfile", source.path());
  }
}

}  // namespace ringlog::io
