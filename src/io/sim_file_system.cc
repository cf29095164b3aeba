// In-memory file system for crash tests (sim_file_system.h).
//
// Model: every file and directory is an inode (a number); a directory maps names to inode
// numbers, so rename is one atomic change of that mapping. Per file we keep the durable bytes
// (as of the last datasync), the current bytes, and the writes/truncates since the last
// datasync in order. Per directory we keep the durable and the current name map, and the name
// changes since the last sync_directory in order (a same-directory rename is one change; a
// cross-directory rename is one change in each directory, each durable only with its own
// directory's sync, as POSIX promises nothing more).
//
// crash(seed) replays, per inode in inode-number order, a seeded-random prefix of the unsynced
// operations on top of the durable state; the first dropped file write may be torn (a prefix of
// its bytes survives). Everything is deterministic for a seed and a history.

#include "ringlog/io/sim_file_system.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>

#include "path_util.h"

namespace ringlog::io {
namespace {

/// splitmix64 (Steele, Lea, Flood 2014): a tiny generator whose output is the same everywhere,
/// unlike <random> distributions, so a seed replays on any standard library.
class splitmix64 {
 public:
  explicit splitmix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
  }
  /// Uniform-enough value in [0, bound), bound > 0 (modulo bias is irrelevant for tests).
  uint64_t below(uint64_t bound) {
    RINGLOG_ASSERT(bound > 0, "below(0)");
    return next() % bound;
  }

 private:
  uint64_t state_;
};

using inode_number = uint64_t;
constexpr inode_number root_inode = 1;

}  // namespace

struct sim_file_system::state {
  /// One write_at or truncate since the last datasync.
  struct file_operation {
    bool is_truncate = false;
    uint64_t position = 0;           // write: where the bytes go
    std::vector<std::byte> data;     // write: the bytes
    uint64_t size_bytes = 0;         // truncate: the new size
  };
  /// One name change in a directory: `target` set means name -> target, unset means remove.
  struct name_change {
    std::string name;
    std::optional<inode_number> target;
  };
  /// Changes applied atomically (a same-directory rename is two changes in one operation).
  using directory_operation = std::vector<name_change>;

  struct inode {
    bool is_directory = false;
    // files
    std::vector<std::byte> durable;
    std::vector<std::byte> current;
    std::vector<file_operation> unsynced;
    // directories
    std::map<std::string, inode_number> durable_entries;
    std::map<std::string, inode_number> entries;
    std::vector<directory_operation> unsynced_names;
  };

  std::map<inode_number, inode> inodes;  // ordered: crash() walks it deterministically
  inode_number next_inode = root_inode + 1;
  /// Bumped by crash(); file objects from an older generation are dead.
  uint64_t generation = 0;
  /// Open file and directory handles now, and the most that may be open (-1: no limit): past it
  /// open() fails with EMFILE, as a process at its RLIMIT_NOFILE does.
  int64_t open_handles = 0;
  int64_t open_handles_max = -1;
  errc failure_code = errc::io_error;
  int failures_left = 0;

  state() { inodes[root_inode].is_directory = true; }

  /// Consumes one injected failure if any is pending.
  std::optional<error> take_failure(std::string_view operation, const std::string& path) {
    if (failures_left <= 0) {
      return std::nullopt;
    }
    --failures_left;
    const int errno_value = failure_code == errc::no_space ? ENOSPC : EIO;
    error e = from_errno(errno_value, operation, path);
    e.code = failure_code;
    e.message += " (injected)";
    return e;
  }
};

namespace {

using state = sim_file_system::state;

/// Applies one write or truncate to `content` (writes past the end zero-fill the gap).
void apply_file_operation(std::vector<std::byte>& content, const state::file_operation& op) {
  if (op.is_truncate) {
    content.resize(op.size_bytes);
    return;
  }
  const uint64_t end = op.position + op.data.size();
  if (content.size() < end) {
    content.resize(end);
  }
  std::copy(op.data.begin(), op.data.end(), content.begin() + static_cast<std::ptrdiff_t>(op.position));
}

void apply_directory_operation(std::map<std::string, inode_number>& entries,
                               const state::directory_operation& op) {
  for (const auto& change : op) {
    if (change.target) {
      entries[change.name] = *change.target;
    } else {
      entries.erase(change.name);
    }
  }
}

/// The path split into names; "" and "." are skipped. ".." is refused (nothing here needs it).
std::optional<std::vector<std::string>> split_path(const std::string& path) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) {
      slash = path.size();
    }
    std::string name = path.substr(start, slash - start);
    if (name == "..") {
      return std::nullopt;
    }
    if (!name.empty() && name != ".") {
      names.push_back(std::move(name));
    }
    start = slash + 1;
  }
  return names;
}

/// A path resolved down to its parent directory.
struct parent_lookup {
  inode_number parent = root_inode;
  std::string name;  // empty for the root itself
  std::vector<inode_number> chain;  // every directory walked through, root first
};

result<parent_lookup> lookup_parent(const state& s, std::string_view operation, const std::string& path) {
  auto names = split_path(path);
  if (!names) {
    return from_errno(EINVAL, operation, path);
  }
  parent_lookup found;
  found.chain.push_back(root_inode);
  for (size_t i = 0; i + 1 < names->size(); ++i) {
    const auto& dir = s.inodes.at(found.parent);
    const auto entry = dir.entries.find((*names)[i]);
    if (entry == dir.entries.end()) {
      return from_errno(ENOENT, operation, path);
    }
    if (!s.inodes.at(entry->second).is_directory) {
      return from_errno(ENOTDIR, operation, path);
    }
    found.parent = entry->second;
    found.chain.push_back(found.parent);
  }
  if (!names->empty()) {
    found.name = names->back();
  }
  return found;
}

/// The inode a path names in the current namespace.
result<inode_number> lookup(const state& s, std::string_view operation, const std::string& path) {
  auto parent = lookup_parent(s, operation, path);
  if (!parent.ok()) {
    return parent.error();
  }
  if (parent->name.empty()) {
    return root_inode;
  }
  const auto& dir = s.inodes.at(parent->parent);
  const auto entry = dir.entries.find(parent->name);
  if (entry == dir.entries.end()) {
    return from_errno(ENOENT, operation, path);
  }
  return entry->second;
}

/// Records a name change in `dir` (current map now, durable at the next sync_directory).
void change_names(state& s, inode_number dir, state::directory_operation op) {
  auto& node = s.inodes.at(dir);
  apply_directory_operation(node.entries, op);
  node.unsynced_names.push_back(std::move(op));
}

/// Rebuilds a file's content after power loss: durable bytes plus a random prefix of the
/// unsynced operations, the next one possibly torn.
void crash_file(state::inode& node, splitmix64& rng) {
  std::vector<std::byte> content = node.durable;
  const size_t count = node.unsynced.size();
  const size_t kept = count == 0 ? 0 : rng.below(count + 1);
  for (size_t i = 0; i < kept; ++i) {
    apply_file_operation(content, node.unsynced[i]);
  }
  if (kept < count && rng.below(2) == 1) {
    const auto& torn = node.unsynced[kept];
    if (!torn.is_truncate && !torn.data.empty()) {
      state::file_operation part = torn;
      part.data.resize(rng.below(torn.data.size()));
      apply_file_operation(content, part);
    }
  }
  node.durable = content;
  node.current = std::move(content);
  node.unsynced.clear();
}

void crash_directory(state::inode& node, splitmix64& rng) {
  auto entries = node.durable_entries;
  const size_t count = node.unsynced_names.size();
  const size_t kept = count == 0 ? 0 : rng.below(count + 1);
  for (size_t i = 0; i < kept; ++i) {
    apply_directory_operation(entries, node.unsynced_names[i]);
  }
  node.durable_entries = entries;
  node.entries = std::move(entries);
  node.unsynced_names.clear();
}

/// Drops inodes no longer reachable from the root (walk with an explicit stack, no recursion).
void collect_unreachable(state& s) {
  std::set<inode_number> reachable{root_inode};
  std::vector<inode_number> pending{root_inode};
  while (!pending.empty()) {
    const inode_number dir = pending.back();
    pending.pop_back();
    for (const auto& [name, target] : s.inodes.at(dir).entries) {
      if (reachable.insert(target).second && s.inodes.at(target).is_directory) {
        pending.push_back(target);
      }
    }
  }
  std::erase_if(s.inodes, [&](const auto& item) { return !reachable.contains(item.first); });
}

class sim_file final : public file {
 public:
  sim_file(std::shared_ptr<state> s, inode_number inode, std::string path, bool writable)
      : state_(std::move(s)),
        inode_(inode),
        generation_(state_->generation),
        path_(std::move(path)),
        writable_(writable) {
    ++state_->open_handles;
  }
  ~sim_file() override { --state_->open_handles; }
  sim_file(const sim_file&) = delete;
  sim_file& operator=(const sim_file&) = delete;

  bool direct = false;  // opened with direct_write_create: O_DIRECT's alignment rules apply

  result<void> write_at(model::file_position position, std::span<const std::byte> data) override {
    RINGLOG_TRY(check_usable("write", true));
    if (direct) {
      // O_DIRECT refuses unaligned I/O with EINVAL; the simulation is stricter and stops the test.
      RINGLOG_ASSERT_OP(position.value() % direct_io_alignment, ==, 0u);
      RINGLOG_ASSERT_OP(data.size() % direct_io_alignment, ==, 0u);
      RINGLOG_ASSERT_OP(reinterpret_cast<uintptr_t>(data.data()) % direct_io_alignment, ==, 0u);
    }
    if (auto failure = state_->take_failure("write", path_)) {
      return *failure;
    }
    state::file_operation op;
    op.position = position.value();
    op.data.assign(data.begin(), data.end());
    auto& node = node_ref();
    apply_file_operation(node.current, op);
    node.unsynced.push_back(std::move(op));
    return base::ok_v;
  }

  result<size_t> read_at(model::file_position position, std::span<std::byte> out) override {
    RINGLOG_TRY(check_usable("read", false));
    const auto& content = node_ref().current;
    if (position.value() >= content.size()) {
      return size_t{0};
    }
    const size_t count = std::min<uint64_t>(out.size(), content.size() - position.value());
    const auto first = content.begin() + static_cast<std::ptrdiff_t>(position.value());
    std::copy(first, first + static_cast<std::ptrdiff_t>(count), out.begin());
    return count;
  }

  result<void> datasync() override {
    RINGLOG_TRY(check_usable("fdatasync", false));
    if (auto failure = state_->take_failure("fdatasync", path_)) {
      return *failure;
    }
    auto& node = node_ref();
    node.durable = node.current;
    node.unsynced.clear();
    return base::ok_v;
  }

  result<void> truncate(uint64_t size_bytes) override {
    RINGLOG_TRY(check_usable("truncate", true));
    state::file_operation op;
    op.is_truncate = true;
    op.size_bytes = size_bytes;
    auto& node = node_ref();
    apply_file_operation(node.current, op);
    node.unsynced.push_back(std::move(op));
    return base::ok_v;
  }

  result<uint64_t> size() override {
    RINGLOG_TRY(check_usable("stat", false));
    return static_cast<uint64_t>(node_ref().current.size());
  }

  [[nodiscard]] int native_handle() const override { return -1; }
  [[nodiscard]] const std::string& path() const override { return path_; }

 private:
  result<void> check_usable(std::string_view operation, bool needs_write) {
    if (generation_ != state_->generation) {
      return error{errc::io_error,
                   std::string(operation) + " " + path_ + ": file object predates a simulated crash"};
    }
    if (needs_write && !writable_) {
      return from_errno(EBADF, operation, path_);
    }
    return base::ok_v;
  }
  state::inode& node_ref() { return state_->inodes.at(inode_); }

  std::shared_ptr<state> state_;
  inode_number inode_;
  uint64_t generation_;
  std::string path_;
  bool writable_;
};

/// A directory handle (file_system::open_directory): datasync() makes the inode's name changes
/// durable, as fsync of a directory descriptor does; dead after a simulated crash.
class sim_directory final : public file {
 public:
  sim_directory(std::shared_ptr<state> s, inode_number inode, std::string path)
      : state_(std::move(s)), inode_(inode), generation_(state_->generation), path_(std::move(path)) {
    ++state_->open_handles;
  }
  ~sim_directory() override { --state_->open_handles; }
  sim_directory(const sim_directory&) = delete;
  sim_directory& operator=(const sim_directory&) = delete;

  result<void> write_at(model::file_position, std::span<const std::byte>) override { return refused("write"); }
  result<size_t> read_at(model::file_position, std::span<std::byte>) override { return refused("read"); }
  result<void> datasync() override {
    auto found = state_->inodes.find(inode_);
    if (generation_ != state_->generation || found == state_->inodes.end()) {
      return error{errc::io_error, "fsync directory " + path_ + ": handle predates a simulated crash"};
    }
    if (auto failure = state_->take_failure("fsync directory", path_)) {
      return *failure;
    }
    found->second.durable_entries = found->second.entries;
    found->second.unsynced_names.clear();
    return base::ok_v;
  }
  result<void> truncate(uint64_t) override { return refused("truncate"); }
  result<uint64_t> size() override { return refused("stat"); }
  [[nodiscard]] int native_handle() const override { return -1; }
  [[nodiscard]] const std::string& path() const override { return path_; }
  [[nodiscard]] bool is_directory() const override { return true; }

 private:
  [[nodiscard]] error refused(std::string_view operation) const {
    return error{errc::unsupported, std::string(operation) + " " + path_ + ": a directory handle only syncs"};
  }
  std::shared_ptr<state> state_;
  inode_number inode_;
  uint64_t generation_;
  std::string path_;
};

}  // namespace

sim_file_system::sim_file_system() : state_(std::make_shared<state>()) {}
sim_file_system::~sim_file_system() = default;

namespace {
/// EMFILE when the handle limit (set_open_files_max) is reached.
result<void> check_handle_room(const sim_file_system::state& s, std::string_view operation, const std::string& path) {
  if (s.open_handles_max >= 0 && s.open_handles >= s.open_handles_max) return from_errno(EMFILE, operation, path);
  return base::ok_v;
}
}  // namespace

result<std::unique_ptr<file>> sim_file_system::open(const std::string& path, open_mode mode) {
  RINGLOG_TRY(check_handle_room(*state_, "open", path));
  auto parent = lookup_parent(*state_, "open", path);
  if (!parent.ok()) {
    return parent.error();
  }
  if (parent->name.empty()) {
    return from_errno(EISDIR, "open", path);
  }
  auto& dir = state_->inodes.at(parent->parent);
  const auto entry = dir.entries.find(parent->name);
  inode_number target = 0;
  if (entry != dir.entries.end()) {
    target = entry->second;
    if (state_->inodes.at(target).is_directory) {
      return from_errno(EISDIR, "open", path);
    }
  } else {
    if (mode != open_mode::read_write_create && mode != open_mode::direct_write_create) {
      return from_errno(ENOENT, "open", path);
    }
    target = state_->next_inode++;
    state_->inodes[target];  // an empty file
    change_names(*state_, parent->parent, {{parent->name, target}});
  }
  const bool writable = mode != open_mode::read_only;
  auto f = std::make_unique<sim_file>(state_, target, path, writable);
  f->direct = mode == open_mode::direct_write_create;
  return std::unique_ptr<file>(std::move(f));
}

result<void> sim_file_system::remove(const std::string& path) {
  auto parent = lookup_parent(*state_, "remove", path);
  if (!parent.ok()) {
    return parent.error();
  }
  auto target = lookup(*state_, "remove", path);
  if (!target.ok()) {
    return target.error();
  }
  if (state_->inodes.at(target.value()).is_directory) {
    return from_errno(EISDIR, "remove", path);
  }
  change_names(*state_, parent->parent, {{parent->name, std::nullopt}});
  return base::ok_v;
}

result<void> sim_file_system::rename(const std::string& from, const std::string& to) {
  const std::string both = from + " -> " + to;
  auto source_parent = lookup_parent(*state_, "rename", from);
  if (!source_parent.ok()) {
    return source_parent.error();
  }
  auto source = lookup(*state_, "rename", from);
  if (!source.ok()) {
    return from_errno(ENOENT, "rename", both);
  }
  auto target_parent = lookup_parent(*state_, "rename", to);
  if (!target_parent.ok()) {
    return from_errno(ENOENT, "rename", both);
  }
  if (source_parent->name.empty() || target_parent->name.empty()) {
    return from_errno(EBUSY, "rename", both);
  }
  const bool source_is_directory = state_->inodes.at(source.value()).is_directory;
  const auto& chain = target_parent->chain;
  if (source_is_directory && std::find(chain.begin(), chain.end(), source.value()) != chain.end()) {
    return from_errno(EINVAL, "rename", both);  // a directory into its own subtree
  }
  const auto& target_dir = state_->inodes.at(target_parent->parent);
  const auto existing = target_dir.entries.find(target_parent->name);
  if (existing != target_dir.entries.end()) {
    if (existing->second == source.value()) {
      return base::ok_v;  // same inode: rename(2) does nothing
    }
    const auto& replaced = state_->inodes.at(existing->second);
    if (replaced.is_directory != source_is_directory) {
      return from_errno(replaced.is_directory ? EISDIR : ENOTDIR, "rename", both);
    }
    if (replaced.is_directory && !replaced.entries.empty()) {
      return from_errno(ENOTEMPTY, "rename", both);
    }
  }
  if (source_parent->parent == target_parent->parent) {
    change_names(*state_, source_parent->parent,
                 {{source_parent->name, std::nullopt}, {target_parent->name, source.value()}});
  } else {
    change_names(*state_, source_parent->parent, {{source_parent->name, std::nullopt}});
    change_names(*state_, target_parent->parent, {{target_parent->name, source.value()}});
  }
  return base::ok_v;
}

result<void> sim_file_system::make_directories(const std::string& path) {
  auto names = split_path(path);
  if (!names) {
    return from_errno(EINVAL, "mkdir", path);
  }
  inode_number dir = root_inode;
  for (const auto& name : *names) {
    const auto& entries = state_->inodes.at(dir).entries;
    const auto entry = entries.find(name);
    if (entry != entries.end()) {
      if (!state_->inodes.at(entry->second).is_directory) {
        return from_errno(EEXIST, "mkdir", path);
      }
      dir = entry->second;
      continue;
    }
    const inode_number created = state_->next_inode++;
    state_->inodes[created].is_directory = true;
    change_names(*state_, dir, {{name, created}});
    // Like the posix backend: fsync the parent so the new name is durable.
    auto& parent = state_->inodes.at(dir);
    parent.durable_entries = parent.entries;
    parent.unsynced_names.clear();
    dir = created;
  }
  return base::ok_v;
}

result<void> sim_file_system::remove_all(const std::string& path) {
  auto parent = lookup_parent(*state_, "remove_all", path);
  if (!parent.ok()) {
    return parent.error().code == errc::not_found ? result<void>(base::ok_v) : parent.error();
  }
  if (parent->name.empty()) {
    return from_errno(EBUSY, "remove_all", path);
  }
  const auto& entries = state_->inodes.at(parent->parent).entries;
  if (!entries.contains(parent->name)) {
    return base::ok_v;
  }
  // Unlinking the top name detaches the whole subtree; crash() frees what is unreachable.
  change_names(*state_, parent->parent, {{parent->name, std::nullopt}});
  auto& dir = state_->inodes.at(parent->parent);
  dir.durable_entries = dir.entries;
  dir.unsynced_names.clear();
  return base::ok_v;
}

result<void> sim_file_system::sync_directory(const std::string& path) {
  auto target = lookup(*state_, "fsync directory", path);
  if (!target.ok()) {
    return target.error();
  }
  auto& dir = state_->inodes.at(target.value());
  if (!dir.is_directory) {
    return from_errno(ENOTDIR, "fsync directory", path);
  }
  dir.durable_entries = dir.entries;
  dir.unsynced_names.clear();
  return base::ok_v;
}

result<std::unique_ptr<file>> sim_file_system::open_directory(const std::string& path) {
  RINGLOG_TRY(check_handle_room(*state_, "open directory", path));
  auto target = lookup(*state_, "open directory", path);
  if (!target.ok()) {
    return target.error();
  }
  if (!state_->inodes.at(target.value()).is_directory) {
    return from_errno(ENOTDIR, "open directory", path);
  }
  return std::unique_ptr<file>(std::make_unique<sim_directory>(state_, target.value(), path));
}

result<std::vector<std::string>> sim_file_system::list_directory(const std::string& path) {
  auto target = lookup(*state_, "list", path);
  if (!target.ok()) {
    return target.error();
  }
  const auto& dir = state_->inodes.at(target.value());
  if (!dir.is_directory) {
    return from_errno(ENOTDIR, "list", path);
  }
  std::vector<std::string> names;
  names.reserve(dir.entries.size());
  for (const auto& [name, inode] : dir.entries) {
    names.push_back(name);  // std::map: already sorted
  }
  return names;
}

bool sim_file_system::exists(const std::string& path) { return lookup(*state_, "stat", path).ok(); }

void sim_file_system::crash(uint64_t seed) {
  splitmix64 rng(seed);
  ++state_->generation;
  for (auto& [number, node] : state_->inodes) {
    if (node.is_directory) {
      crash_directory(node, rng);
    } else {
      crash_file(node, rng);
    }
  }
  collect_unreachable(*state_);
}

void sim_file_system::set_open_files_max(int64_t count) { state_->open_handles_max = count; }

int64_t sim_file_system::open_files() const { return state_->open_handles; }

void sim_file_system::inject_failures(errc code, int count) {
  RINGLOG_ASSERT(count >= 0, "inject_failures: negative count");
  state_->failure_code = code;
  state_->failures_left = count;
}

uint64_t sim_file_system::unsynced_bytes() const {
  uint64_t total = 0;
  for (const auto& [number, node] : state_->inodes) {
    for (const auto& op : node.unsynced) {
      total += op.data.size();
    }
  }
  return total;
}

}  // namespace ringlog::io
