#pragma once
// An in-memory file system for deterministic crash tests. It keeps, per file, the durable
// content (as of the last datasync) and the current content, and per directory the durable and
// current set of names. crash() turns the world into what a power loss would leave: for every
// file, the durable content plus, chosen by the seeded generator, none, some, or a torn part of
// the writes made since its last datasync; directory entries not synced are dropped or kept
// the same way. Failures can be injected (next datasync / write fails with EIO or ENOSPC).

#include <cstdint>
#include <memory>
#include <string>

#include "ringlog/io/file.h"

namespace ringlog::io {

class sim_file_system : public file_system {
 public:
  sim_file_system();
  ~sim_file_system() override;

  result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override;
  result<void> remove(const std::string& path) override;
  result<void> rename(const std::string& from, const std::string& to) override;
  result<void> make_directories(const std::string& path) override;
  result<void> remove_all(const std::string& path) override;
  result<void> sync_directory(const std::string& path) override;
  result<std::unique_ptr<file>> open_directory(const std::string& path) override;
  result<std::vector<std::string>> list_directory(const std::string& path) override;
  bool exists(const std::string& path) override;

  /// Simulates power loss. Every open file object becomes invalid (further use returns io_error);
  /// reopen after the crash. Deterministic for a given seed and history.
  void crash(uint64_t seed);
  /// The next `count` write_at/datasync calls fail with `code` (io_error or no_space).
  void inject_failures(errc code, int count);
  /// At most `count` file and directory handles open at once (-1: no limit, the default): an
  /// open() past it fails with EMFILE (errc::too_many_open_files), as at RLIMIT_NOFILE.
  void set_open_files_max(int64_t count);
  /// File and directory handles open now.
  [[nodiscard]] int64_t open_files() const;
  /// Total bytes written but not yet durable, across all files (for tests).
  [[nodiscard]] uint64_t unsynced_bytes() const;

  struct state;  // implementation detail, shared with open file objects

 private:
  std::shared_ptr<state> state_;
};

}  // namespace ringlog::io
