// `ringlog metadata dump [--log-dirs DIR]`: the metadata log `__cluster_metadata-0` of a node's
// log directory as text, one committed-or-not entry per line, the way Kafka's
// `kafka-dump-log.sh --cluster-metadata-decoder` shows it: each raft entry with its offset and
// epoch, its metadata records decoded (TopicRecord(...), PartitionRecord(...), ...), and
// leader-change control entries; then every snapshot (.checkpoint) as the records that rebuild
// its image. Reads the files only (safe beside a running node: segments are append-only).

#include "metadata_dump.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ringlog/codec/record_batch.h"
#include "ringlog/controller/metadata_entry.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/controller/quorum_wire.h"
#include "ringlog/io/file.h"

namespace ringlog::app {
namespace {

constexpr const char* usage_text =
    "usage: ringlog metadata dump [--log-dirs DIR]\n"
    "\n"
    "Prints the metadata log (DIR/__cluster_metadata-0, DIR default ./ringlog-data) entry by\n"
    "entry: offset, leader epoch and the entry's metadata records decoded (RegisterBrokerRecord,\n"
    "TopicRecord, PartitionRecord, PartitionChangeRecord, ConfigRecord, ...), leader changes, then\n"
    "each snapshot (.checkpoint) as the records of its image. Entries past the quorum's high\n"
    "watermark are shown too (a log file does not say which are committed; the quorum route\n"
    "GET /v3/clusters/{c}/quorum does). Exit status: 0 read to the end, 1 a file could not be\n"
    "read or is torn, 2 usage error.\n";

void print(const std::string& line) { std::printf("%s\n", line.c_str()); }

std::string entry_text(const controller::quorum_wire::decoded_entry& d) {
  const raft::entry& e = d.entry;
  std::string head = "offset: " + std::to_string(e.offset_.value()) + " epoch: " + std::to_string(e.epoch.value()) + " ";
  if (e.type == raft::entry_type::leader_change) {
    auto message = controller::quorum_wire::to_leader_change_message(e.payload);
    if (!message.ok()) return head + "LeaderChange(not understood: " + message.error().message + ")";
    std::string voters;
    for (const auto& v : message->voters) voters += (voters.empty() ? "" : ",") + std::to_string(v.voter_id);
    return head + "LeaderChange(leaderId=" + std::to_string(message->leader_id) + ", voters=[" + voters + "])";
  }
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(e.payload.data()), e.payload.size());
  if (d.legacy_key) {
    return head + "legacy " + std::string(reinterpret_cast<const char*>(d.legacy_key->data()), d.legacy_key->size()) +
           " record (written before the controller quorum): " +
           std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
  }
  auto records = controller::decode_metadata_entry(payload);
  if (!records.ok()) return head + "(entry not understood: " + records.error().message + ")";
  std::string out = head;
  for (size_t i = 0; i < records->size(); ++i) out += (i ? " " : "") + controller::describe_record((*records)[i]);
  return out;
}

/// Whole batches of `data`, up to the first torn or corrupt one (printed and reported false).
bool for_each_batch(const std::string& path, std::span<const std::byte> data,
                    const std::function<void(std::span<const std::byte>)>& f) {
  size_t position = 0;
  while (position < data.size()) {
    auto header = codec::decode_header(data.subspan(position));
    if (!header.ok() || position + header->size_bytes() > data.size()) {
      print("Stopped at " + path + " position " + std::to_string(position) + ": " +
            (header.ok() ? "torn batch (it ends past the end of the file)" : "corrupt batch header: " + header.error().message));
      return false;
    }
    f(data.subspan(position, header->size_bytes()));
    position += header->size_bytes();
  }
  return true;
}

}  // namespace

int metadata_main(int argc, char** argv) {
  std::string log_dir = "./ringlog-data";
  bool dump = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage_text, stdout);
      return 0;
    }
    if (a == "dump") {
      dump = true;
    } else if (a == "--log-dirs" && i + 1 < argc) {
      log_dir = argv[++i];
    } else if (a.rfind("--log-dirs=", 0) == 0) {
      log_dir = a.substr(11);
    } else {
      std::fprintf(stderr, "metadata: unknown argument \"%s\"\n%s", a.c_str(), usage_text);
      return 2;
    }
  }
  if (!dump) {
    std::fputs(usage_text, stderr);
    return 2;
  }
  auto fs = io::make_posix_file_system();
  const std::string dir = log_dir + "/__cluster_metadata-0";
  auto names = fs->list_directory(dir);
  if (!names.ok()) {
    std::fprintf(stderr, "metadata: cannot read %s: %s\n", dir.c_str(), names.error().message.c_str());
    return 1;
  }
  std::vector<std::string> segments;
  std::vector<std::string> snapshots;
  for (const auto& n : names.value()) {
    if (n.ends_with(".log")) segments.push_back(n);
    if (n.ends_with(".checkpoint")) snapshots.push_back(n);
  }
  std::sort(segments.begin(), segments.end());
  std::sort(snapshots.begin(), snapshots.end());
  int status = 0;
  for (const auto& name : segments) {
    const std::string path = dir + "/" + name;
    auto data = io::read_whole_file(*fs, path);
    if (!data.ok()) {
      print("Cannot read " + path + ": " + data.error().message);
      status = 1;
      continue;
    }
    print("Segment " + name);
    const bool whole = for_each_batch(path, data.value(), [&](std::span<const std::byte> batch) {
      auto entries = controller::quorum_wire::decode_entries(batch);
      if (!entries.ok()) {
        print("(batch not understood: " + entries.error().message + ")");
        status = 1;
        return;
      }
      for (const auto& d : entries.value()) print(entry_text(d));
    });
    if (!whole) status = 1;
  }
  for (const auto& name : snapshots) {
    const std::string path = dir + "/" + name;
    auto data = io::read_whole_file(*fs, path);
    if (!data.ok()) {
      print("Cannot read " + path + ": " + data.error().message);
      status = 1;
      continue;
    }
    std::vector<uint8_t> payload;
    const bool whole = for_each_batch(path, data.value(), [&](std::span<const std::byte> batch) {
      auto records = codec::decode_records(batch);
      if (!records.ok()) return;
      for (const auto& r : records.value()) {
        if (r.value) {
          for (std::byte b : *r.value) payload.push_back(static_cast<uint8_t>(b));
        }
      }
    });
    if (!whole) status = 1;
    auto image = controller::decode_snapshot(payload, 0);
    if (!image.ok()) {
      print("Snapshot " + name + ": not understood: " + image.error().message);
      status = 1;
      continue;
    }
    print("Snapshot " + name + " (the image below the offset in its name):");
    for (const auto& record : controller::image_records(*image.value())) print("  " + controller::describe_record(record));
  }
  return status;
}

}  // namespace ringlog::app
