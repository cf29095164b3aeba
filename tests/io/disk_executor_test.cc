#include <doctest.h>
#include <poll.h>
#include <sys/resource.h>

#include <csignal>

#include <chrono>
#include <optional>

#include "ringlog/io/disk_executor.h"
#include "ringlog/io/sim_file_system.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::io;
using namespace std::chrono_literals;
using io::test::bytes;
using io::test::temp_directory;
using io::test::text;

namespace {

/// How long a test waits for completions before failing (never a sleep: poll with a deadline).
constexpr auto completion_deadline = 10s;
/// Operations kept in flight at once by the "many" test: 2 completions each (write + sync) is
/// more than the uring completion queue holds (2 * constants::io_uring_entries).
constexpr int many_operations = 300;

/// Polls until nothing is in flight or the deadline passes; returns the callbacks run.
size_t drive(disk_executor& executor) {
  const auto deadline = std::chrono::steady_clock::now() + completion_deadline;
  size_t ran = 0;
  while (executor.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    ran += executor.poll(50ms);
  }
  return ran;
}

std::string read_all(file& f) {
  std::vector<std::byte> out(f.size().value());
  const auto n = f.read_at(model::file_position{0}, out);
  REQUIRE(n.ok());
  return text(out, n.value());
}

std::unique_ptr<disk_executor> make(backend_kind kind) {
  auto made = make_disk_executor(kind, nullptr);
  REQUIRE(made.ok());
  return std::move(made).value();
}

bool uring_usable() {
  const auto probe = probe_uring();
  if (!probe.available) {
    MESSAGE("io_uring unavailable, skipping uring case: " << probe.reason);
  }
  return probe.available;
}

void check_write_datasync(disk_executor& executor) {
  temp_directory dir;
  auto fs = make_posix_file_system();
  auto f = fs->open(dir / "segment.log", open_mode::read_write_create);
  REQUIRE(f.ok());

  const auto first = bytes("hello ");
  const auto second = bytes("world");
  std::optional<result<void>> first_done;
  std::optional<result<void>> second_done;
  std::optional<result<void>> sync_done;
  executor.submit_write_datasync(*f.value(), model::file_position{0}, first,
                                 [&](result<void> r) { first_done = std::move(r); });
  executor.submit_write_datasync(*f.value(), model::file_position{6}, second,
                                 [&](result<void> r) { second_done = std::move(r); });
  executor.submit_datasync(*f.value(), [&](result<void> r) { sync_done = std::move(r); });
  CHECK(executor.in_flight() == 3);
  CHECK(!first_done);  // callbacks run only from poll()
  CHECK(!sync_done);

  CHECK(drive(executor) == 3);
  CHECK(executor.in_flight() == 0);
  REQUIRE(first_done);
  REQUIRE(second_done);
  REQUIRE(sync_done);
  CHECK(first_done->ok());
  CHECK(second_done->ok());
  CHECK(sync_done->ok());
  CHECK(read_all(*f.value()) == "hello world");
  CHECK(executor.poll(0ms) == 0);
}

void check_many_in_flight(disk_executor& executor) {
  temp_directory dir;
  auto fs = make_posix_file_system();
  auto f = fs->open(dir / "segment.log", open_mode::read_write_create);
  REQUIRE(f.ok());

  std::vector<std::vector<std::byte>> chunks;
  std::string expected;
  for (int i = 0; i < many_operations; ++i) {
    const std::string chunk = std::to_string(1000 + i) + ";";  // 5 bytes each
    expected += chunk;
    chunks.push_back(bytes(chunk));
  }
  int ok = 0;
  int failed = 0;
  for (int i = 0; i < many_operations; ++i) {
    executor.submit_write_datasync(*f.value(), model::file_position{static_cast<uint64_t>(i) * 5}, chunks[i],
                                   [&](result<void> r) { r.ok() ? ++ok : ++failed; });
  }
  CHECK(executor.in_flight() == static_cast<size_t>(many_operations));
  CHECK(drive(executor) == static_cast<size_t>(many_operations));
  CHECK(ok == many_operations);
  CHECK(failed == 0);
  CHECK(read_all(*f.value()) == expected);
}

void check_write_error(disk_executor& executor) {
  temp_directory dir;
  auto fs = make_posix_file_system();
  const std::string path = dir / "read-only.log";
  REQUIRE(fs->open(path, open_mode::read_write_create).ok());
  auto f = fs->open(path, open_mode::read_only);
  REQUIRE(f.ok());

  const auto data = bytes("nope");
  std::optional<result<void>> done;
  executor.submit_write_datasync(*f.value(), model::file_position{0}, data,
                                 [&](result<void> r) { done = std::move(r); });
  drive(executor);
  REQUIRE(done);
  REQUIRE(!done->ok());
  CHECK(done->error().code == errc::io_error);
  CHECK(done->error().message.find(path) != std::string::npos);
  CHECK(done->error().message.find("write") != std::string::npos);
  CHECK(f.value()->size().value() == 0);
}

/// A short write that cannot be finished: RLIMIT_FSIZE lets the first write stop at the limit
/// (short), and the continuation from there fails with EFBIG. On io_uring the short write
/// breaks the link, so the sync completes with -ECANCELED; the callback must get the write's
/// error and the file must hold exactly the bytes below the limit. Nothing may print while the
/// limit is set (doctest's output could be a file), so checks come after it is restored.
void check_short_write_then_error(disk_executor& executor) {
  temp_directory dir;
  auto fs = make_posix_file_system();
  const std::string path = dir / "limited.log";
  auto f = fs->open(path, open_mode::read_write_create);
  REQUIRE(f.ok());
  constexpr rlim_t limit_bytes = 10;
  const auto data = bytes("0123456789abcdefghij");

  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = saved;
  limited.rlim_cur = limit_bytes;
  const bool limit_set = ::setrlimit(RLIMIT_FSIZE, &limited) == 0;
  std::optional<result<void>> done;
  if (limit_set) {
    executor.submit_write_datasync(*f.value(), model::file_position{0}, data,
                                   [&](result<void> r) { done = std::move(r); });
    drive(executor);
    ::setrlimit(RLIMIT_FSIZE, &saved);
  }
  std::signal(SIGXFSZ, saved_handler);
  REQUIRE(limit_set);

  REQUIRE(done);
  REQUIRE(!done->ok());
  CHECK(done->error().code == errc::io_error);
  CHECK(done->error().message.find("write " + path) != std::string::npos);
  CHECK(done->error().message.find("too large") != std::string::npos);
  CHECK(read_all(*f.value()) == "0123456789");
}

}  // namespace

TEST_CASE("parse_backend_kind accepts uring, posix, auto and names them when rejecting") {
  CHECK(parse_backend_kind("uring").value() == backend_kind::uring);
  CHECK(parse_backend_kind("posix").value() == backend_kind::posix);
  CHECK(parse_backend_kind("auto").value() == backend_kind::automatic);
  auto bad = parse_backend_kind("foo");
  REQUIRE(!bad.ok());
  CHECK(bad.error().message.find("\"foo\"") != std::string::npos);
  for (const char* accepted : {"uring", "posix", "auto"}) {
    CHECK(bad.error().message.find(accepted) != std::string::npos);
  }
}

TEST_CASE("make_disk_executor(automatic) gives a working executor either way") {
  const auto probe = probe_uring();
  MESSAGE("io_uring probe: " << (probe.available ? "available" : "unavailable: " + probe.reason));
  std::string note;
  auto made = make_disk_executor(backend_kind::automatic, &note);
  REQUIRE(made.ok());
  disk_executor& executor = *made.value();
  if (probe.available) {
    CHECK(executor.name() == "uring");
  } else {
    CHECK(executor.name() == "posix");
    CHECK(note.find(probe.reason) != std::string::npos);
  }
  check_write_datasync(executor);

  auto forced = make_disk_executor(backend_kind::uring, nullptr);
  CHECK(forced.ok() == probe.available);
  if (!forced.ok()) {
    CHECK(forced.error().code == errc::unsupported);
  }
  CHECK(make(backend_kind::posix)->name() == "posix");
}

TEST_CASE("posix executor: write_datasync and datasync complete from poll()") {
  auto executor = make_posix_disk_executor();
  CHECK(executor->event_fd() == -1);
  check_write_datasync(*executor);
}

TEST_CASE("posix executor: many operations in flight") {
  auto executor = make_posix_disk_executor();
  check_many_in_flight(*executor);
}

TEST_CASE("posix executor: a write through a read-only descriptor reports the error") {
  auto executor = make_posix_disk_executor();
  check_write_error(*executor);
}

TEST_CASE("posix executor: a short write continues, then reports the error that stopped it") {
  auto executor = make_posix_disk_executor();
  check_short_write_then_error(*executor);
}

TEST_CASE("posix executor drives simulated files") {
  sim_file_system fs;
  auto f = fs.open("/seg.log", open_mode::read_write_create);
  REQUIRE(f.ok());
  auto executor = make_posix_disk_executor();
  const auto data = bytes("abc");
  std::optional<result<void>> done;
  executor->submit_write_datasync(*f.value(), model::file_position{0}, data,
                                  [&](result<void> r) { done = std::move(r); });
  CHECK(fs.unsynced_bytes() == 0);  // nothing ran before poll()
  CHECK(executor->poll(0ms) == 1);
  REQUIRE(done);
  CHECK(done->ok());
  CHECK(fs.unsynced_bytes() == 0);
  CHECK(read_all(*f.value()) == "abc");

  fs.inject_failures(errc::io_error, 1);
  done.reset();
  executor->submit_datasync(*f.value(), [&](result<void> r) { done = std::move(r); });
  executor->poll(0ms);
  REQUIRE(done);
  CHECK(done->error().code == errc::io_error);
}

TEST_CASE("uring executor: write_datasync and datasync complete from poll()") {
  if (!uring_usable()) {
    return;
  }
  auto executor = make(backend_kind::uring);
  CHECK(executor->name() == "uring");
  check_write_datasync(*executor);
}

TEST_CASE("uring executor: many operations in flight") {
  if (!uring_usable()) {
    return;
  }
  auto executor = make(backend_kind::uring);
  check_many_in_flight(*executor);
}

TEST_CASE("uring executor: a write through a read-only descriptor reports the write's error") {
  if (!uring_usable()) {
    return;
  }
  auto executor = make(backend_kind::uring);
  check_write_error(*executor);
}

TEST_CASE("uring executor: a short write continues, and the cancelled sync reports the write's error") {
  if (!uring_usable()) {
    return;
  }
  auto executor = make(backend_kind::uring);
  check_short_write_then_error(*executor);
}

TEST_CASE("uring executor: event_fd becomes readable after a completion") {
  if (!uring_usable()) {
    return;
  }
  auto executor = make(backend_kind::uring);
  REQUIRE(executor->event_fd() >= 0);
  temp_directory dir;
  auto fs = make_posix_file_system();
  auto f = fs->open(dir / "segment.log", open_mode::read_write_create);
  REQUIRE(f.ok());
  const auto data = bytes("wake up");
  bool done = false;
  executor->submit_write_datasync(*f.value(), model::file_position{0}, data, [&](result<void> r) {
    CHECK(r.ok());
    done = true;
  });

  pollfd waiter{executor->event_fd(), POLLIN, 0};
  const int ready = ::poll(&waiter, 1, static_cast<int>(std::chrono::milliseconds(completion_deadline).count()));
  REQUIRE(ready == 1);
  CHECK((waiter.revents & POLLIN) != 0);
  CHECK(!done);
  drive(*executor);
  CHECK(done);
  CHECK(read_all(*f.value()) == "wake up");
}

TEST_CASE("uring executor: simulated files are refused through the callback") {
  if (!uring_usable()) {
    return;
  }
  auto executor = make(backend_kind::uring);
  sim_file_system fs;
  auto f = fs.open("/seg.log", open_mode::read_write_create);
  REQUIRE(f.ok());
  std::optional<result<void>> done;
  executor->submit_datasync(*f.value(), [&](result<void> r) { done = std::move(r); });
  CHECK(!done);
  CHECK(executor->in_flight() == 1);
  CHECK(executor->poll(0ms) == 1);
  REQUIRE(done);
  CHECK(done->error().code == errc::unsupported);
}

TEST_CASE("uring executor: destroying it with work in flight waits for the kernel") {
  if (!uring_usable()) {
    return;
  }
  temp_directory dir;
  auto fs = make_posix_file_system();
  auto f = fs->open(dir / "segment.log", open_mode::read_write_create);
  REQUIRE(f.ok());
  const auto data = bytes("bye");
  bool called = false;
  {
    auto executor = make(backend_kind::uring);
    executor->submit_write_datasync(*f.value(), model::file_position{0}, data, [&](result<void>) { called = true; });
  }
  CHECK(!called);
  CHECK(read_all(*f.value()) == "bye");
}

namespace {

/// A directory handle synced through `executor`: ok from poll(); other calls refused, naming it.
void check_directory_sync(disk_executor& executor) {
  temp_directory dir;
  auto fs = make_posix_file_system();
  REQUIRE(fs->open(dir / "a.log", open_mode::read_write_create).ok());
  auto handle = fs->open_directory(dir.path());
  REQUIRE(handle.ok());
  CHECK(handle.value()->is_directory());
  CHECK(handle.value()->native_handle() >= 0);
  auto refused = handle.value()->write_at(model::file_position{0}, bytes("x"));
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == errc::unsupported);
  CHECK(refused.error().message.find(dir.path()) != std::string::npos);
  std::optional<result<void>> done;
  executor.submit_datasync(*handle.value(), [&](result<void> r) { done = std::move(r); });
  drive(executor);
  REQUIRE(done);
  CHECK(done->ok());
  auto missing = fs->open_directory(dir / "nope");
  REQUIRE(!missing.ok());
  CHECK(missing.error().code == errc::not_found);
  auto not_a_directory = fs->open_directory(dir / "a.log");
  REQUIRE(!not_a_directory.ok());
}

}  // namespace

TEST_CASE("posix executor: a directory handle (open_directory) is fsynced from poll()") {
  auto executor = make(backend_kind::posix);
  check_directory_sync(*executor);
}

TEST_CASE("uring executor: a directory handle (open_directory) is fsynced through the ring") {
  if (!uring_usable()) {
    return;
  }
  auto executor = make(backend_kind::uring);
  check_directory_sync(*executor);
}

TEST_CASE("sim: a directory handle's datasync makes its names durable, and dies with a crash") {
  sim_file_system fs;
  REQUIRE(fs.make_directories("/d").ok());
  auto handle = fs.open_directory("/d");
  REQUIRE(handle.ok());
  REQUIRE(fs.open("/d/kept", open_mode::read_write_create).ok());
  auto executor = make_posix_disk_executor();
  std::optional<result<void>> done;
  executor->submit_datasync(*handle.value(), [&](result<void> r) { done = std::move(r); });
  drive(*executor);
  REQUIRE(done);
  CHECK(done->ok());
  bool lost_without_sync = false;   // negative control: the same history without the sync
  for (uint64_t seed = 1; seed <= 20 && !lost_without_sync; ++seed) {
    sim_file_system other;
    REQUIRE(other.make_directories("/d").ok());
    REQUIRE(other.open("/d/kept", open_mode::read_write_create).ok());
    other.crash(seed);
    lost_without_sync = !other.exists("/d/kept");
  }
  CHECK(lost_without_sync);
  fs.crash(7);
  CHECK(fs.exists("/d/kept"));   // synced through the handle: survives any crash
  CHECK(!handle.value()->datasync().ok());   // predates the crash
  CHECK(!fs.open_directory("/d/kept").ok());  // a file, not a directory
}
