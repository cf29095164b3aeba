// remove_stray_replicas (partition_manager.h): which directories of log.dirs a restarted broker
// moves aside or deletes once it caught up with the metadata, and which it keeps.

#include <doctest.h>

#include <stdlib.h>

#include <string>
#include <utility>
#include <vector>

#include "ringlog/controller/metadata_entry.h"
#include "ringlog/partition/partition_manager.h"

namespace ringlog::partition {
namespace {

controller::uuid id_of(uint8_t b) {
  controller::uuid u;
  u.value.fill(b);
  return u;
}

/// The records of topic `name` with id `id` and one partition per entry of `replicas` (its first
/// replica leads), appended to `records`.
void add_topic(std::vector<protocol::metadata_record>& records, const std::string& name, const controller::uuid& id,
               const std::vector<std::vector<int32_t>>& replicas) {
  protocol::topic_record topic;
  topic.name = name;
  topic.topic_id = id;
  records.emplace_back(topic);
  for (size_t p = 0; p < replicas.size(); ++p) {
    protocol::partition_record partition;
    partition.topic_id = id;
    partition.partition_id = static_cast<int32_t>(p);
    partition.replicas = partition.isr = replicas[p];
    partition.leader = replicas[p].front();
    partition.leader_epoch = partition.partition_epoch = 0;
    records.emplace_back(partition);
  }
}

std::shared_ptr<const controller::metadata_image> image_of(const std::vector<protocol::metadata_record>& records) {
  controller::metadata_image empty;
  controller::metadata_delta delta(empty);
  int64_t offset = -1;
  for (const auto& r : records) REQUIRE(delta.apply(r, ++offset).ok());
  return std::move(delta).image();
}

/// A directory `name` under `root`, with a partition.metadata of `topic_id` unless it is null.
void make_replica_directory(io::file_system& fs, const std::string& root, const std::string& name,
                            const controller::uuid* topic_id) {
  REQUIRE(fs.make_directories(root + "/" + name).ok());
  if (topic_id == nullptr) return;
  const std::string text = partition_metadata_text(*topic_id);
  REQUIRE(io::write_file_atomic(fs, root + "/" + name + "/partition.metadata",
                                std::as_bytes(std::span(text.data(), text.size())))
              .ok());
}

}  // namespace

TEST_CASE("a restart moves aside deleted topics' directories, deletes replicas moved away, and keeps the rest") {
  auto fs = io::make_posix_file_system();
  char pattern[] = "/tmp/ringlog-stray-XXXXXX";
  REQUIRE(mkdtemp(pattern) != nullptr);
  const std::string root = pattern;
  const controller::uuid orders = id_of(1), moved = id_of(2), gone = id_of(3), old_orders = id_of(4);
  // Node 1 holds orders-0, not moved-0 (reassigned to 2 and 3 while it was down); the topic of
  // id 3 was deleted meanwhile, and orders-1's directory names an unknown id: a former topic
  // "orders" or a damaged file, moved aside too (never deleted: the breaker of session 40).
  std::vector<protocol::metadata_record> records;
  add_topic(records, "orders", orders, {{1, 2}, {1, 2}});
  add_topic(records, "moved", moved, {{2, 3}});
  auto image = image_of(records);
  make_replica_directory(*fs, root, "orders-0", &orders);
  make_replica_directory(*fs, root, "orders-1", &old_orders);
  make_replica_directory(*fs, root, "moved-0", &moved);
  make_replica_directory(*fs, root, "deleted-0", &gone);
  make_replica_directory(*fs, root, "__cluster_metadata-0", nullptr);   // the metadata log: none
  make_replica_directory(*fs, root, "legacy-0", nullptr);               // ringlog before topic ids

  std::vector<std::pair<bool, std::string>> lines;
  const log_directory dir{.fs = *fs, .path = root, .log = [&lines](bool info, const std::string& m) {
                            lines.emplace_back(info, m);
                          }};
  remove_stray_replicas(dir, *image, 1);

  const std::string aside = root + "/deleted-0." + controller::uuid_to_string(gone) + "-stray";
  const std::string orders_aside = root + "/orders-1." + controller::uuid_to_string(old_orders) + "-stray";
  CHECK(fs->exists(root + "/orders-0"));
  CHECK_FALSE(fs->exists(root + "/orders-1"));                // a new replica starts there
  CHECK(fs->exists(orders_aside + "/partition.metadata"));
  CHECK_FALSE(fs->exists(root + "/moved-0"));
  CHECK_FALSE(fs->exists(root + "/deleted-0"));
  CHECK(fs->exists(aside + "/partition.metadata"));           // moved aside, never deleted
  CHECK(fs->exists(root + "/__cluster_metadata-0"));
  CHECK(fs->exists(root + "/legacy-0"));
  REQUIRE(lines.size() == 3);
  const std::string all = lines[0].second + "\n" + lines[1].second + "\n" + lines[2].second;
  CHECK(all.find("log directory deleted-0 belongs to topic id " + controller::uuid_to_string(gone)) != std::string::npos);
  CHECK(all.find("moved aside to " + aside) != std::string::npos);
  CHECK(all.find("moved aside to " + orders_aside) != std::string::npos);
  CHECK(all.find("partition moved-0 was reassigned away from this broker while it was down") != std::string::npos);
  for (const auto& [info, line] : lines) CHECK(info == (line.find("reassigned away") != std::string::npos));

  // A second restart leaves the moved-aside directory alone; a later stray of the same name and
  // id is moved beside it under a numbered name.
  lines.clear();
  make_replica_directory(*fs, root, "deleted-0", &gone);
  remove_stray_replicas(dir, *image, 1);
  CHECK(fs->exists(aside));
  CHECK(fs->exists(root + "/deleted-0." + controller::uuid_to_string(gone) + ".1-stray"));
  CHECK(lines.size() == 1);
  REQUIRE(fs->remove_all(root).ok());
}

}  // namespace ringlog::partition
