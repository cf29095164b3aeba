#pragma once
// Files and directories as storage sees them. Three implementations sit behind these
// interfaces: posix (pwrite/pread/fdatasync), and a simulated in-memory file system whose
// crash() drops everything not made durable, so tests see real data loss (design.md section 3).
//
// Durability rules every implementation follows (they are Linux's rules for ext4/xfs):
//  - write_at puts bytes in the page cache; only datasync() makes them durable.
//  - creating, renaming or removing a name is durable only after sync_directory(parent).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringlog/base/result.h"
#include "ringlog/model/types.h"

namespace ringlog::io {

enum class errc {
  not_found,         // ENOENT
  already_exists,    // EEXIST
  no_space,          // ENOSPC / EDQUOT
  permission_denied, // EACCES / EPERM
  io_error,          // EIO and anything else: the message carries strerror and the path
  unsupported,       // the backend cannot do this (e.g. io_uring refused)
  too_many_open_files,  // EMFILE / ENFILE: the open-file limit, not the disk
};

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

/// Turns an errno value into an error whose message names the operation and the path.
error from_errno(int errno_value, std::string_view operation, std::string_view path);

enum class open_mode {
  read_only,        // must exist
  read_write,       // must exist
  read_write_create, // created (empty) if missing; creation durable after sync_directory
  /// read_write_create with O_DIRECT: the page cache is bypassed, and every write_at must be
  /// aligned to direct_io_alignment in file position, length and memory address.
  direct_write_create,
};

/// Alignment O_DIRECT needs on the filesystems we target (ext4/xfs on 4 KiB-sector devices).
inline constexpr size_t direct_io_alignment = 4096;

class file {
 public:
  virtual ~file() = default;
  /// Writes all of `data` at `position` (short writes are retried). Not durable until datasync().
  virtual result<void> write_at(model::file_position position, std::span<const std::byte> data) = 0;
  /// Reads up to out.size() bytes at `position`; returns the count (short only at end of file).
  virtual result<size_t> read_at(model::file_position position, std::span<std::byte> out) = 0;
  /// fdatasync: blocks until every write so far is durable. A failure is fatal for the log dir.
  virtual result<void> datasync() = 0;
  /// Sets the file size to `size_bytes` (cuts or zero-extends). Durable after datasync().
  virtual result<void> truncate(uint64_t size_bytes) = 0;
  /// Current size in bytes, including writes not yet durable.
  virtual result<uint64_t> size() = 0;
  /// The OS file descriptor, or -1 for simulated files.
  [[nodiscard]] virtual int native_handle() const = 0;
  [[nodiscard]] virtual const std::string& path() const = 0;
  /// A directory handle (file_system::open_directory): datasync() is a full fsync of the
  /// directory (its name changes become durable), and a disk executor syncs it the same way.
  [[nodiscard]] virtual bool is_directory() const { return false; }
};

class file_system {
 public:
  virtual ~file_system() = default;
  virtual result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) = 0;
  /// Removes a file (not durable until sync_directory of its parent).
  virtual result<void> remove(const std::string& path) = 0;
  /// Atomically replaces `to` with `from` (rename(2)).
  virtual result<void> rename(const std::string& from, const std::string& to) = 0;
  /// mkdir -p. Each created directory is made durable in its parent.
  virtual result<void> make_directories(const std::string& path) = 0;
  /// Removes a directory and everything in it (rm -r), then syncs the parent.
  virtual result<void> remove_all(const std::string& path) = 0;
  /// fsync of a directory: makes creations, renames and removals inside it durable.
  virtual result<void> sync_directory(const std::string& path) = 0;
  /// A handle on a directory whose datasync() is sync_directory() of it, so the sync can go
  /// through a disk_executor (the shard's ring) instead of blocking the caller. Only datasync(),
  /// native_handle(), path() and is_directory() work on it; the other calls fail with
  /// unsupported. It syncs the directory it was opened on, also after that is renamed.
  /// Errors: not_found, io_error (the path is not a directory).
  virtual result<std::unique_ptr<file>> open_directory(const std::string& path) = 0;
  /// Names (not paths) of the entries of a directory, sorted, without "." and "..".
  virtual result<std::vector<std::string>> list_directory(const std::string& path) = 0;
  virtual bool exists(const std::string& path) = 0;
};

/// Bytes [file_position, file_position + length) of a file, to be sent to a socket by reference
/// (send_file_to_socket) rather than read into memory. `source` is shared: holding it keeps the
/// file open, so the range stays readable after the file's name is removed (retention) or
/// replaced (compaction's swap); only reads may be made through it.
struct file_range {
  std::shared_ptr<file> source;
  model::file_position file_position{0};
  size_t length = 0;
};

/// What one send_file_to_socket call did: `sent` bytes went out (0..length); `would_block` when
/// the socket's send buffer is full (wait until it is writable, then call again for the rest).
struct send_progress {
  size_t sent = 0;
  bool would_block = false;
};

/// One sendfile(2) of up to `length` bytes of `source` from `file_position` to a non-blocking
/// stream socket: the kernel moves page-cache pages to the socket without a copy through user
/// space. EINTR is retried. Errors: unsupported (a simulated file: native_handle() < 0),
/// io_error (the file ends before the range does, which sendfile reports as 0 bytes sent; or
/// any other errno, named with the file's path).
result<send_progress> send_file_to_socket(int socket_fd, const file& source, model::file_position file_position,
                                          size_t length);

/// The real file system.
std::unique_ptr<file_system> make_posix_file_system();

/// Writes `data` to `path` crash-safely: temp file, write, datasync, rename over `path`, sync the
/// directory (design.md section 4, checkpoints).
result<void> write_file_atomic(file_system& fs, const std::string& path, std::span<const std::byte> data);

/// One file of write_files_atomic: its path (inside the directory given there) and its whole
/// new contents.
struct file_contents {
  std::string path;
  std::span<const std::byte> data;
};
/// write_file_atomic for several files of one directory with a single directory sync: every temp
/// file is written and datasynced, then all are renamed, then the directory is synced. After a
/// crash each file holds its old or its new contents (each rename is atomic); all new ones once
/// this returns ok.
result<void> write_files_atomic(file_system& fs, const std::string& directory, std::span<const file_contents> files);
/// Reads a whole file (for checkpoints). Errors: not_found, io_error.
result<std::vector<std::byte>> read_whole_file(file_system& fs, const std::string& path);

}  // namespace ringlog::io
