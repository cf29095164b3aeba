// The real file system: pwrite/pread/fdatasync on file descriptors opened with O_CLOEXEC, and
// directory fsyncs for every namespace change that must survive a crash (file.h).

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "path_util.h"
#include "ringlog/io/file.h"

namespace ringlog::io {
namespace {

/// Mode of newly created files and directories (before the umask; `ringlog serve` sets 0077, so
/// its log.dirs is owner-only: 0600 files, 0700 directories).
constexpr mode_t file_create_mode = 0644;
constexpr mode_t directory_create_mode = 0755;

class posix_file final : public file {
 public:
  posix_file(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~posix_file() override { ::close(fd_); }
  posix_file(const posix_file&) = delete;
  posix_file& operator=(const posix_file&) = delete;

  result<void> write_at(model::file_position position, std::span<const std::byte> data) override {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done,
                                 static_cast<off_t>(position.value() + done));
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        return from_errno(errno, "write", path_);
      }
      if (n == 0) {
        return error{errc::io_error, "write " + path_ + ": pwrite wrote 0 bytes"};
      }
      done += static_cast<size_t>(n);
    }
    return ok_result();
  }

  result<size_t> read_at(model::file_position position, std::span<std::byte> out) override {
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n =
          ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(position.value() + done));
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        return from_errno(errno, "read", path_);
      }
      if (n == 0) {
        break;  // end of file
      }
      done += static_cast<size_t>(n);
    }
    return done;
  }

  result<void> datasync() override {
    if (::fdatasync(fd_) != 0) {
      return from_errno(errno, "fdatasync", path_);
    }
    return ok_result();
  }

  result<void> truncate(uint64_t size_bytes) override {
    if (::ftruncate(fd_, static_cast<off_t>(size_bytes)) != 0) {
      return from_errno(errno, "truncate", path_);
    }
    return ok_result();
  }

  result<uint64_t> size() override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      return from_errno(errno, "stat", path_);
    }
    return static_cast<uint64_t>(st.st_size);
  }

  [[nodiscard]] int native_handle() const override { return fd_; }
  [[nodiscard]] const std::string& path() const override { return path_; }

 private:
  static result<void> ok_result() { return base::ok_v; }
  int fd_;
  std::string path_;
};

/// A directory opened O_RDONLY | O_DIRECTORY: its one use is fsync (file_system::open_directory).
class posix_directory final : public file {
 public:
  posix_directory(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~posix_directory() override { ::close(fd_); }
  posix_directory(const posix_directory&) = delete;
  posix_directory& operator=(const posix_directory&) = delete;

  result<void> write_at(model::file_position, std::span<const std::byte>) override { return refused("write"); }
  result<size_t> read_at(model::file_position, std::span<std::byte>) override { return refused("read"); }
  result<void> datasync() override {
    if (::fsync(fd_) != 0) {
      return from_errno(errno, "fsync directory", path_);
    }
    return base::ok_v;
  }
  result<void> truncate(uint64_t) override { return refused("truncate"); }
  result<uint64_t> size() override { return refused("stat"); }
  [[nodiscard]] int native_handle() const override { return fd_; }
  [[nodiscard]] const std::string& path() const override { return path_; }
  [[nodiscard]] bool is_directory() const override { return true; }

 private:
  [[nodiscard]] error refused(std::string_view operation) const {
    return error{errc::unsupported, std::string(operation) + " " + path_ + ": a directory handle only syncs"};
  }
  int fd_;
  std::string path_;
};

int open_flags(open_mode mode) {
  switch (mode) {
    case open_mode::read_only:
      return O_RDONLY | O_CLOEXEC;
    case open_mode::read_write:
      return O_RDWR | O_CLOEXEC;
    case open_mode::read_write_create:
      return O_RDWR | O_CREAT | O_CLOEXEC;
    case open_mode::direct_write_create:
      return O_RDWR | O_CREAT | O_CLOEXEC | O_DIRECT;
  }
  RINGLOG_ASSERT(false, "unknown open_mode");
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

class posix_file_system final : public file_system {
 public:
  result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
    int fd = -1;
    do {
      fd = ::open(path.c_str(), open_flags(mode), file_create_mode);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      return from_errno(errno, "open", path);
    }
    return std::unique_ptr<file>(std::make_unique<posix_file>(fd, path));
  }

  result<void> remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      return from_errno(errno, "remove", path);
    }
    return base::ok_v;
  }

  result<void> rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return from_errno(errno, "rename", from + " -> " + to);
    }
    return base::ok_v;
  }

  result<void> make_directories(const std::string& path) override {
    // Walk the prefixes "a", "a/b", "a/b/c" left to right; no recursion.
    size_t next = path.find_first_not_of('/');
    while (next != std::string::npos && next <= path.size()) {
      const size_t slash = path.find('/', next);
      const size_t end = slash == std::string::npos ? path.size() : slash;
      const std::string prefix = path.substr(0, end);
      RINGLOG_TRY(make_one_directory(prefix));
      next = slash == std::string::npos ? std::string::npos : path.find_first_not_of('/', slash);
    }
    return base::ok_v;
  }

  result<void> remove_all(const std::string& path) override {
    std::error_code ec;
    const auto removed = std::filesystem::remove_all(path, ec);
    if (ec) {
      return from_errno(ec.value(), "remove_all", path);
    }
    if (removed == 0) {
      return base::ok_v;  // nothing was there; nothing to make durable
    }
    return sync_directory(detail::parent_directory(path));
  }

  result<void> sync_directory(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      return from_errno(errno, "open directory", path);
    }
    const int rc = ::fsync(fd);
    const int saved_errno = errno;
    ::close(fd);
    if (rc != 0) {
      return from_errno(saved_errno, "fsync directory", path);
    }
    return base::ok_v;
  }

  result<std::unique_ptr<file>> open_directory(const std::string& path) override {
    int fd = -1;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      return from_errno(errno, "open directory", path);
    }
    return std::unique_ptr<file>(std::make_unique<posix_directory>(fd, path));
  }

  result<std::vector<std::string>> list_directory(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) {
      return from_errno(errno, "list", path);
    }
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name(entry->d_name);
      if (name != "." && name != "..") {
        names.emplace_back(name);
      }
    }
    const int saved_errno = errno;
    ::closedir(dir);
    if (saved_errno != 0) {
      return from_errno(saved_errno, "list", path);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  bool exists(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }

 private:
  /// mkdir of one level; when it creates the directory it makes the new name durable.
  result<void> make_one_directory(const std::string& path) {
    if (::mkdir(path.c_str(), directory_create_mode) == 0) {
      return sync_directory(detail::parent_directory(path));
    }
    if (errno == EEXIST && is_directory(path)) {
      return base::ok_v;
    }
    return from_errno(errno, "mkdir", path);
  }
};

}  // namespace

std::unique_ptr<file_system> make_posix_file_system() { return std::make_unique<posix_file_system>(); }

}  // namespace ringlog::io
