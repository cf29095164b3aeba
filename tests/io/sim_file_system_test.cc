#include <doctest.h>

#include <algorithm>
#include <set>

#include "ringlog/io/sim_file_system.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::io;
using io::test::bytes;
using io::test::text;

namespace {

/// Seeds tried by the crash tests; enough that every outcome (lost, kept, torn) shows up.
constexpr uint64_t crash_seeds = 400;

std::string read_all(file& f) {
  const auto size = f.size();
  REQUIRE(size.ok());
  std::vector<std::byte> out(size.value());
  const auto n = f.read_at(model::file_position{0}, out);
  REQUIRE(n.ok());
  return text(out, n.value());
}

std::string read_path(sim_file_system& fs, const std::string& path) {
  auto f = fs.open(path, open_mode::read_only);
  REQUIRE(f.ok());
  return read_all(*f.value());
}

/// A write or truncate, as the test replays it on a plain string.
struct model_op {
  bool is_truncate;
  uint64_t position_or_size;
  std::string data;
};

void apply_op(std::string& content, const model_op& op) {
  if (op.is_truncate) {
    content.resize(op.position_or_size, '\0');
    return;
  }
  const size_t end = op.position_or_size + op.data.size();
  if (content.size() < end) {
    content.resize(end, '\0');
  }
  content.replace(op.position_or_size, op.data.size(), op.data);
}

/// Every state a crash may legally leave: durable + ops[0, k) for each k, optionally followed by a
/// prefix of ops[k]'s bytes (a torn write).
std::set<std::string> legal_states(const std::string& durable, const std::vector<model_op>& ops) {
  std::set<std::string> states;
  std::string content = durable;
  for (size_t k = 0; k <= ops.size(); ++k) {
    states.insert(content);
    if (k == ops.size()) {
      break;
    }
    if (!ops[k].is_truncate) {
      for (size_t torn = 0; torn < ops[k].data.size(); ++torn) {
        std::string partial = content;
        apply_op(partial, model_op{false, ops[k].position_or_size, ops[k].data.substr(0, torn)});
        states.insert(partial);
      }
    }
    apply_op(content, ops[k]);
  }
  return states;
}

void apply_to_file(file& f, const model_op& op) {
  if (op.is_truncate) {
    REQUIRE(f.truncate(op.position_or_size).ok());
  } else {
    REQUIRE(f.write_at(model::file_position{op.position_or_size}, bytes(op.data)).ok());
  }
}

}  // namespace

TEST_CASE("sim: synced data and synced names survive a crash exactly") {
  for (uint64_t seed = 0; seed < crash_seeds; ++seed) {
    sim_file_system fs;
    REQUIRE(fs.make_directories("/data/topic-0").ok());
    auto f = fs.open("/data/topic-0/00000.log", open_mode::read_write_create);
    REQUIRE(f.ok());
    REQUIRE(f.value()->write_at(model::file_position{0}, bytes("record batch one")).ok());
    REQUIRE(f.value()->write_at(model::file_position{7}, bytes("BATCH")).ok());
    REQUIRE(f.value()->datasync().ok());
    REQUIRE(fs.sync_directory("/data/topic-0").ok());
    CHECK(fs.unsynced_bytes() == 0);

    fs.crash(seed);
    REQUIRE(fs.exists("/data/topic-0/00000.log"));
    CHECK(read_path(fs, "/data/topic-0/00000.log") == "record BATCH one");
    CHECK(fs.list_directory("/data/topic-0").value() == std::vector<std::string>{"00000.log"});
  }
}

TEST_CASE("sim: unsynced writes are lost, kept or torn, always as a prefix of history") {
  const std::string durable = "0123456789abcdef";
  const std::vector<model_op> ops = {
      {false, 16, "GHIJKLMNOP"},  // append
      {false, 4, "wxyz"},         // overwrite in the middle
      {true, 20, ""},             // cut
      {false, 30, "tail!"},       // write past the end: zero-filled gap
  };
  const auto legal = legal_states(durable, ops);
  std::string all_kept = durable;
  for (const auto& op : ops) {
    apply_op(all_kept, op);
  }

  int lost = 0;
  int kept = 0;
  int partial = 0;
  for (uint64_t seed = 0; seed < crash_seeds; ++seed) {
    sim_file_system fs;
    auto f = fs.open("/seg.log", open_mode::read_write_create);
    REQUIRE(f.ok());
    REQUIRE(f.value()->write_at(model::file_position{0}, bytes(durable)).ok());
    REQUIRE(f.value()->datasync().ok());
    REQUIRE(fs.sync_directory("/").ok());
    for (const auto& op : ops) {
      apply_to_file(*f.value(), op);
    }
    CHECK(read_all(*f.value()) == all_kept);
    CHECK(fs.unsynced_bytes() == 10 + 4 + 5);

    fs.crash(seed);
    const std::string after = read_path(fs, "/seg.log");
    INFO("seed " << seed << " left " << after.size() << " bytes");
    CHECK(legal.contains(after));
    CHECK(fs.unsynced_bytes() == 0);
    if (after == durable) {
      ++lost;
    } else if (after == all_kept) {
      ++kept;
    } else {
      ++partial;
    }
  }
  CHECK(lost > 0);
  CHECK(kept > 0);
  CHECK(partial > 0);
}

TEST_CASE("sim: crash is deterministic for a seed") {
  auto run = [](uint64_t seed) {
    sim_file_system fs;
    auto f = fs.open("/a", open_mode::read_write_create);
    REQUIRE(f.ok());
    for (int i = 0; i < 20; ++i) {
      REQUIRE(f.value()->write_at(model::file_position{static_cast<uint64_t>(i) * 3}, bytes("abc")).ok());
    }
    fs.crash(seed);
    return fs.exists("/a") ? read_path(fs, "/a") : std::string("<gone>");
  };
  for (uint64_t seed = 0; seed < 50; ++seed) {
    CHECK(run(seed) == run(seed));
  }
}

TEST_CASE("sim: directory entries never synced vanish for some seeds") {
  int vanished = 0;
  int survived = 0;
  for (uint64_t seed = 0; seed < crash_seeds; ++seed) {
    sim_file_system fs;
    REQUIRE(fs.make_directories("/data").ok());
    auto committed = fs.open("/data/committed.log", open_mode::read_write_create);
    REQUIRE(committed.ok());
    REQUIRE(fs.sync_directory("/data").ok());
    auto fresh = fs.open("/data/fresh.log", open_mode::read_write_create);
    REQUIRE(fresh.ok());
    REQUIRE(fresh.value()->write_at(model::file_position{0}, bytes("data")).ok());
    REQUIRE(fresh.value()->datasync().ok());  // data durable, name not
    CHECK(fs.list_directory("/data").value() == std::vector<std::string>{"committed.log", "fresh.log"});

    fs.crash(seed);
    CHECK(fs.exists("/data/committed.log"));
    if (fs.exists("/data/fresh.log")) {
      ++survived;
      CHECK(read_path(fs, "/data/fresh.log") == "data");
    } else {
      ++vanished;
      CHECK(fs.list_directory("/data").value() == std::vector<std::string>{"committed.log"});
    }
  }
  CHECK(vanished > 0);
  CHECK(survived > 0);
}

TEST_CASE("sim: rename is atomic across a crash and replaces the target") {
  int old_seen = 0;
  int new_seen = 0;
  for (uint64_t seed = 0; seed < crash_seeds; ++seed) {
    sim_file_system fs;
    REQUIRE(write_file_atomic(fs, "/checkpoint", bytes("old")).ok());
    // write_file_atomic syncs the directory: the first version is durable at once.
    fs.crash(seed);
    REQUIRE(read_path(fs, "/checkpoint") == "old");

    // The same steps without the final directory sync: old or new, never a mix or nothing.
    {
      auto temp = fs.open("/checkpoint.tmp", open_mode::read_write_create);
      REQUIRE(temp.ok());
      REQUIRE(temp.value()->write_at(model::file_position{0}, bytes("new!")).ok());
      REQUIRE(temp.value()->datasync().ok());
    }
    REQUIRE(fs.rename("/checkpoint.tmp", "/checkpoint").ok());
    CHECK(read_path(fs, "/checkpoint") == "new!");
    CHECK(!fs.exists("/checkpoint.tmp"));
    fs.crash(seed + 1);
    const std::string after = read_path(fs, "/checkpoint");
    if (after == "old") {
      ++old_seen;
    } else {
      CHECK(after == "new!");
      ++new_seen;
      CHECK(!fs.exists("/checkpoint.tmp"));
    }
  }
  CHECK(old_seen > 0);
  CHECK(new_seen > 0);
}

TEST_CASE("sim: file objects opened before a crash fail afterwards") {
  sim_file_system fs;
  auto f = fs.open("/seg.log", open_mode::read_write_create);
  REQUIRE(f.ok());
  REQUIRE(f.value()->write_at(model::file_position{0}, bytes("abc")).ok());
  REQUIRE(f.value()->datasync().ok());
  REQUIRE(fs.sync_directory("/").ok());
  fs.crash(7);

  file& stale = *f.value();
  std::vector<std::byte> buffer(3);
  auto write = stale.write_at(model::file_position{0}, bytes("x"));
  REQUIRE(!write.ok());
  CHECK(write.error().code == errc::io_error);
  CHECK(write.error().message.find("/seg.log") != std::string::npos);
  CHECK(stale.read_at(model::file_position{0}, buffer).error().code == errc::io_error);
  CHECK(stale.datasync().error().code == errc::io_error);
  CHECK(stale.truncate(0).error().code == errc::io_error);
  CHECK(stale.size().error().code == errc::io_error);
  CHECK(stale.native_handle() == -1);

  CHECK(read_path(fs, "/seg.log") == "abc");  // reopening works
}

TEST_CASE("sim: injected failures hit the next writes and datasyncs") {
  sim_file_system fs;
  auto f = fs.open("/seg.log", open_mode::read_write_create);
  REQUIRE(f.ok());
  fs.inject_failures(errc::no_space, 2);
  auto write = f.value()->write_at(model::file_position{0}, bytes("abc"));
  REQUIRE(!write.ok());
  CHECK(write.error().code == errc::no_space);
  CHECK(write.error().message.find("/seg.log") != std::string::npos);
  CHECK(f.value()->size().value() == 0);  // a failed write changes nothing
  auto sync = f.value()->datasync();
  REQUIRE(!sync.ok());
  CHECK(sync.error().code == errc::no_space);
  CHECK(f.value()->write_at(model::file_position{0}, bytes("abc")).ok());

  fs.inject_failures(errc::io_error, 1);
  auto failed_sync = f.value()->datasync();
  REQUIRE(!failed_sync.ok());
  CHECK(failed_sync.error().code == errc::io_error);
  CHECK(fs.unsynced_bytes() == 3);  // a failed datasync made nothing durable
  CHECK(f.value()->datasync().ok());
  CHECK(fs.unsynced_bytes() == 0);
}

TEST_CASE("sim: namespace operations and their errors") {
  sim_file_system fs;
  REQUIRE(fs.make_directories("/data/topic-0").ok());
  REQUIRE(fs.make_directories("/data/topic-0").ok());
  CHECK(fs.exists("/data"));
  CHECK(!fs.exists("/nope"));

  auto missing = fs.open("/data/topic-0/none.log", open_mode::read_only);
  REQUIRE(!missing.ok());
  CHECK(missing.error().code == errc::not_found);
  CHECK(missing.error().message.find("/data/topic-0/none.log") != std::string::npos);
  CHECK(fs.open("/nodir/x.log", open_mode::read_write_create).error().code == errc::not_found);
  CHECK(fs.open("/data", open_mode::read_only).error().code == errc::io_error);

  for (const char* name : {"b", "a", "c"}) {
    REQUIRE(fs.open(std::string("/data/topic-0/") + name, open_mode::read_write_create).ok());
  }
  CHECK(fs.list_directory("/data/topic-0").value() == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(fs.rename("/data/topic-0/a", "/data/topic-0/b").ok());
  CHECK(fs.list_directory("/data/topic-0").value() == std::vector<std::string>{"b", "c"});
  REQUIRE(fs.remove("/data/topic-0/c").ok());
  CHECK(fs.remove("/data/topic-0/c").error().code == errc::not_found);
  CHECK(fs.rename("/data/topic-0/c", "/data/topic-0/d").error().message.find("/data/topic-0/c") !=
        std::string::npos);

  auto read_only = fs.open("/data/topic-0/b", open_mode::read_only);
  REQUIRE(read_only.ok());
  CHECK(!read_only.value()->write_at(model::file_position{0}, bytes("x")).ok());

  REQUIRE(fs.remove_all("/data").ok());  // synced: gone for good
  CHECK(!fs.exists("/data"));
  fs.crash(3);
  CHECK(!fs.exists("/data"));
  CHECK(fs.list_directory("/").value().empty());
}
