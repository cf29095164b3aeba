#include <doctest.h>

#include <cerrno>

#include "ringlog/io/file.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::io;
using io::test::bytes;
using io::test::temp_directory;
using io::test::text;

namespace {

std::string read_all(file& f) {
  const auto size = f.size();
  REQUIRE(size.ok());
  std::vector<std::byte> out(size.value());
  const auto n = f.read_at(model::file_position{0}, out);
  REQUIRE(n.ok());
  return text(out, n.value());
}

}  // namespace

TEST_CASE("from_errno maps errno values and names the operation and path") {
  CHECK(from_errno(ENOENT, "open", "/x").code == errc::not_found);
  CHECK(from_errno(EEXIST, "open", "/x").code == errc::already_exists);
  CHECK(from_errno(ENOSPC, "write", "/x").code == errc::no_space);
  CHECK(from_errno(EDQUOT, "write", "/x").code == errc::no_space);
  CHECK(from_errno(EACCES, "open", "/x").code == errc::permission_denied);
  CHECK(from_errno(EPERM, "open", "/x").code == errc::permission_denied);
  CHECK(from_errno(EIO, "fdatasync", "/x").code == errc::io_error);
  const auto e = from_errno(ENOENT, "open", "/data/topic-0/00000.log");
  CHECK(e.message.find("open /data/topic-0/00000.log") != std::string::npos);
  CHECK(e.message.find("No such file") != std::string::npos);
}

TEST_CASE("posix file: write, read, size, truncate, datasync round trip") {
  temp_directory dir;
  auto fs = make_posix_file_system();
  const std::string path = dir / "segment.log";

  auto opened = fs->open(path, open_mode::read_write_create);
  REQUIRE(opened.ok());
  file& f = *opened.value();
  CHECK(f.native_handle() >= 0);
  CHECK(f.path() == path);
  CHECK(f.size().value() == 0);

  REQUIRE(f.write_at(model::file_position{0}, bytes("hello world")).ok());
  REQUIRE(f.write_at(model::file_position{6}, bytes("WORLD")).ok());
  REQUIRE(f.datasync().ok());
  CHECK(f.size().value() == 11);
  CHECK(read_all(f) == "hello WORLD");

  // Short read only at end of file.
  std::vector<std::byte> buffer(20);
  auto n = f.read_at(model::file_position{6}, buffer);
  REQUIRE(n.ok());
  CHECK(n.value() == 5);
  CHECK(f.read_at(model::file_position{100}, buffer).value() == 0);

  REQUIRE(f.truncate(5).ok());
  CHECK(read_all(f) == "hello");
  REQUIRE(f.truncate(8).ok());  // zero-extends
  CHECK(read_all(f) == std::string("hello\0\0\0", 8));

  auto again = fs->open(path, open_mode::read_only);
  REQUIRE(again.ok());
  CHECK(read_all(*again.value()) == std::string("hello\0\0\0", 8));
}

TEST_CASE("posix file system: directories, rename, list, remove, remove_all") {
  temp_directory dir;
  auto fs = make_posix_file_system();
  const std::string partition = dir / "data/topic-0";
  REQUIRE(fs->make_directories(partition).ok());
  CHECK(fs->exists(partition));
  REQUIRE(fs->make_directories(partition).ok());  // idempotent

  for (const char* name : {"b.log", "a.log", "c.index"}) {
    auto f = fs->open(partition + "/" + name, open_mode::read_write_create);
    REQUIRE(f.ok());
    REQUIRE(f.value()->write_at(model::file_position{0}, bytes(name)).ok());
  }
  REQUIRE(fs->sync_directory(partition).ok());
  auto names = fs->list_directory(partition);
  REQUIRE(names.ok());
  CHECK(names.value() == std::vector<std::string>{"a.log", "b.log", "c.index"});

  // rename over an existing name replaces it
  REQUIRE(fs->rename(partition + "/a.log", partition + "/b.log").ok());
  CHECK(!fs->exists(partition + "/a.log"));
  auto b = fs->open(partition + "/b.log", open_mode::read_only);
  REQUIRE(b.ok());
  CHECK(read_all(*b.value()) == "a.log");

  REQUIRE(fs->remove(partition + "/c.index").ok());
  CHECK(fs->list_directory(partition).value() == std::vector<std::string>{"b.log"});

  REQUIRE(fs->remove_all(dir / "data").ok());
  CHECK(!fs->exists(dir / "data"));
  CHECK(fs->remove_all(dir / "data").ok());  // nothing there is fine
  CHECK(fs->list_directory(dir.path()).value().empty());
}

TEST_CASE("write_file_atomic replaces content and read_whole_file reads it back") {
  temp_directory dir;
  auto fs = make_posix_file_system();
  const std::string path = dir / "recovery-point-offset-checkpoint";
  REQUIRE(write_file_atomic(*fs, path, bytes("a much longer first version")).ok());
  auto first = read_whole_file(*fs, path);
  REQUIRE(first.ok());
  CHECK(text(first.value()) == "a much longer first version");

  REQUIRE(write_file_atomic(*fs, path, bytes("v2")).ok());
  CHECK(text(read_whole_file(*fs, path).value()) == "v2");
  CHECK(fs->list_directory(dir.path()).value() == std::vector<std::string>{"recovery-point-offset-checkpoint"});

  REQUIRE(write_file_atomic(*fs, path, {}).ok());
  CHECK(read_whole_file(*fs, path).value().empty());
}

TEST_CASE("posix file system errors carry the errc and name the path") {
  temp_directory dir;
  auto fs = make_posix_file_system();
  const std::string missing = dir / "missing.log";

  auto opened = fs->open(missing, open_mode::read_only);
  REQUIRE(!opened.ok());
  CHECK(opened.error().code == errc::not_found);
  CHECK(opened.error().message.find(missing) != std::string::npos);

  CHECK(fs->open(missing, open_mode::read_write).error().code == errc::not_found);
  CHECK(fs->remove(missing).error().message.find(missing) != std::string::npos);
  CHECK(fs->rename(missing, dir / "x").error().code == errc::not_found);
  CHECK(fs->list_directory(missing).error().code == errc::not_found);
  CHECK(fs->sync_directory(missing).error().message.find(missing) != std::string::npos);

  auto whole = read_whole_file(*fs, missing);
  REQUIRE(!whole.ok());
  CHECK(whole.error().code == errc::not_found);
  CHECK(whole.error().message.find(missing) != std::string::npos);

  // A write through a read-only handle fails and names the file.
  const std::string path = dir / "ro.log";
  REQUIRE(fs->open(path, open_mode::read_write_create).ok());
  auto read_only = fs->open(path, open_mode::read_only);
  REQUIRE(read_only.ok());
  auto written = read_only.value()->write_at(model::file_position{0}, bytes("x"));
  REQUIRE(!written.ok());
  CHECK(written.error().code == errc::io_error);
  CHECK(written.error().message.find(path) != std::string::npos);

  // mkdir -p through a regular file
  auto made = fs->make_directories(path + "/sub");
  REQUIRE(!made.ok());
  CHECK(made.error().message.find(path) != std::string::npos);
}
