// Shared helpers of the io module: errno translation and whole-file checkpoint I/O.

#include "ringlog/io/file.h"

#include <cerrno>
#include <cstring>

#include "path_util.h"

namespace ringlog::io {
namespace {

errc errc_from_errno(int errno_value) {
  switch (errno_value) {
    case ENOENT:
      return errc::not_found;
    case EEXIST:
      return errc::already_exists;
    case ENOSPC:
    case EDQUOT:
      return errc::no_space;
    case EACCES:
    case EPERM:
      return errc::permission_denied;
    case EMFILE:
    case ENFILE:
      return errc::too_many_open_files;
    case ENOSYS:
    case EOPNOTSUPP:
      return errc::unsupported;
    default:
      return errc::io_error;
  }
}

}  // namespace

error from_errno(int errno_value, std::string_view operation, std::string_view path) {
  std::string message;
  message.reserve(operation.size() + path.size() + 48);
  message.append(operation).append(" ").append(path).append(": ").append(std::strerror(errno_value));
  return error{errc_from_errno(errno_value), std::move(message)};
}

result<void> write_files_atomic(file_system& fs, const std::string& directory, std::span<const file_contents> files) {
  // Each file goes to a temp name in the same directory (rename(2) stays inside one file
  // system) and is made durable before any rename, so a crash leaves every file old or new.
  for (const file_contents& f : files) {
    auto temp = fs.open(f.path + ".tmp", open_mode::read_write_create);
    if (!temp.ok()) {
      return temp.error();
    }
    // A temp file left by an earlier crash may be longer than the new contents.
    RINGLOG_TRY(temp.value()->truncate(0));
    RINGLOG_TRY(temp.value()->write_at(model::file_position{0}, f.data));
    RINGLOG_TRY(temp.value()->datasync());
  }
  for (const file_contents& f : files) {
    RINGLOG_TRY(fs.rename(f.path + ".tmp", f.path));
  }
  return files.empty() ? result<void>(base::ok_v) : fs.sync_directory(directory);
}

result<void> write_file_atomic(file_system& fs, const std::string& path, std::span<const std::byte> data) {
  const file_contents one{path, data};
  return write_files_atomic(fs, detail::parent_directory(path), std::span(&one, 1));
}

result<std::vector<std::byte>> read_whole_file(file_system& fs, const std::string& path) {
  auto opened = fs.open(path, open_mode::read_only);
  if (!opened.ok()) {
    return opened.error();
  }
  file& f = *opened.value();
  auto size = f.size();
  if (!size.ok()) {
    return size.error();
  }
  std::vector<std::byte> content(size.value());
  auto read = f.read_at(model::file_position{0}, content);
  if (!read.ok()) {
    return read.error();
  }
  if (read.value() != content.size()) {
    return error{errc::io_error, "read " + path + ": file shrank while reading (expected " +
                                     std::to_string(content.size()) + " bytes, got " +
                                     std::to_string(read.value()) + ")"};
  }
  return content;
}

}  // namespace ringlog::io
