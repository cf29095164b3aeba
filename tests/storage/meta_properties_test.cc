// meta.properties: written once, survives a crash once written, refuses another cluster or node.

#include <doctest.h>

#include <span>
#include <string>

#include "ringlog/io/sim_file_system.h"
#include "ringlog/storage/meta_properties.h"

namespace ringlog::storage {

TEST_CASE("meta.properties is written on first start and checked on every later one") {
  io::sim_file_system fs;
  REQUIRE(fs.make_directories("/data").ok());
  auto none = read_meta_properties(fs, "/data");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  REQUIRE(check_meta_properties(fs, "/data", "blue", 2).ok());
  fs.crash(1);   // written atomically and durably: a power loss keeps it
  auto read = read_meta_properties(fs, "/data");
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  CHECK(**read == meta_properties{1, "blue", 2});
  CHECK(check_meta_properties(fs, "/data", "blue", 2).ok());

  auto other_cluster = check_meta_properties(fs, "/data", "green", 2);
  REQUIRE_FALSE(other_cluster.ok());
  CHECK(other_cluster.error().code == errc::invalid_config);
  CHECK(other_cluster.error().message.find("cluster.id=blue") != std::string::npos);
  CHECK(other_cluster.error().message.find("cluster.id=green") != std::string::npos);

  auto other_node = check_meta_properties(fs, "/data", "blue", 3);
  REQUIRE_FALSE(other_node.ok());
  CHECK(other_node.error().message.find("node.id=2") != std::string::npos);
  CHECK(other_node.error().message.find("node.id=3") != std::string::npos);
}

TEST_CASE("a malformed meta.properties is refused, naming what is wrong") {
  io::sim_file_system fs;
  REQUIRE(fs.make_directories("/d").ok());
  auto put = [&](std::string text) {
    REQUIRE(io::write_file_atomic(fs, "/d/meta.properties", std::as_bytes(std::span(text.data(), text.size()))).ok());
    auto r = read_meta_properties(fs, "/d");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::invalid_config);
    return r.error().message;
  };
  CHECK(put("version=1\ncluster.id=a\n").find("node.id is missing") != std::string::npos);
  CHECK(put("version=1\nnode.id=1\n").find("cluster.id is missing") != std::string::npos);
  CHECK(put("version=0\ncluster.id=a\nnode.id=1\n").find("version=0 is not supported") != std::string::npos);
  CHECK(put("cluster.id=a\nnode.id=-4\n").find("node.id=-4 is not an integer") != std::string::npos);
  CHECK(put("cluster.id=a\njunk\n").find(":2: \"junk\" is not key=value") != std::string::npos);
}

}  // namespace ringlog::storage
