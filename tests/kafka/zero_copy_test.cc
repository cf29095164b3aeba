// Kafka Fetch's zero-copy path: answers whose record sets are file pieces (request_handler.h
// response_frame) must be, once the pieces are read from their files, byte for byte the answer
// of the copying path. The socket side (sendfile) runs in tests/integration/test_kafka_zero_copy.py.
#include <doctest.h>

#include <cstdlib>
#include <filesystem>
#include <future>

#include "call.h"
#include "fetch_frame.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/file.h"
#include "ringlog/kafka/request_handler.h"
#include "test_runtime.h"

using namespace ringlog;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;

class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ringlog-kafka-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~temp_dir() { std::filesystem::remove_all(path_); }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The frame as it goes on the wire: memory with each file piece's bytes read in at its place.
protocol::bytes materialize(const kafka::response_frame& f) {
  protocol::bytes out;
  size_t memory_at = 0;
  for (const auto& piece : f.file_pieces) {
    REQUIRE(piece.memory_position >= memory_at);
    out.insert(out.end(), f.memory.begin() + static_cast<std::ptrdiff_t>(memory_at),
               f.memory.begin() + static_cast<std::ptrdiff_t>(piece.memory_position));
    memory_at = piece.memory_position;
    protocol::bytes chunk(piece.range.length);
    auto n = piece.range.source->read_at(piece.range.file_position, chunk);
    REQUIRE(n.ok());
    REQUIRE(n.value() == chunk.size());
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  out.insert(out.end(), f.memory.begin() + static_cast<std::ptrdiff_t>(memory_at), f.memory.end());
  return out;
}

int32_t size_prefix(const protocol::bytes& frame) {
  REQUIRE(frame.size() >= 4);
  return static_cast<int32_t>((static_cast<uint32_t>(frame[0]) << 24) | (static_cast<uint32_t>(frame[1]) << 16) |
                              (static_cast<uint32_t>(frame[2]) << 8) | static_cast<uint32_t>(frame[3]));
}

protocol::bytes some_bytes(size_t n, uint8_t seed) {
  protocol::bytes out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return out;
}

}  // namespace

TEST_CASE("encode_fetch_frame is encode_response_frame byte for byte at every Fetch version 4-12") {
  temp_dir dir;
  auto fs = io::make_posix_file_system();
  auto opened = fs->open(dir.path() + "/f.log", io::open_mode::read_write_create);
  REQUIRE(opened.ok());
  std::shared_ptr<io::file> file = std::move(opened).value();
  const protocol::bytes content = some_bytes(5000, 7);
  REQUIRE(file->write_at(model::file_position{0}, content).ok());
  auto slice = [&](size_t from, size_t length) {
    return protocol::bytes(content.begin() + static_cast<std::ptrdiff_t>(from),
                           content.begin() + static_cast<std::ptrdiff_t>(from + length));
  };
  // Topic "a": partition 0 from the file in three ranges (two adjacent: one piece), partition 1
  // with records in memory, partition 2 an error without records. Topic "b": one range of 200
  // bytes (a uvarint length of two bytes) with aborted transactions.
  for (int16_t version = kafka::detail::fetch_frame_version_min; version <= kafka::detail::fetch_frame_version_max;
       ++version) {
    CAPTURE(version);
    protocol::fetch_response_data body;
    body.throttle_time_ms = 0;
    protocol::fetch_response_data::fetchable_topic_response a;
    a.topic = "a";
    protocol::fetch_response_data::fetchable_topic_response b;
    b.topic = "topic-b";
    protocol::fetch_response_data::partition_data p0;
    p0.partition_index = 0;
    p0.high_watermark = 10;
    p0.last_stable_offset = 10;
    p0.log_start_offset = 0;
    p0.aborted_transactions = std::nullopt;
    protocol::fetch_response_data::partition_data p1 = p0;
    p1.partition_index = 1;
    p1.records = some_bytes(70, 3);
    protocol::fetch_response_data::partition_data p2 = p0;
    p2.partition_index = 2;
    p2.error_code = 1;
    p2.records = std::nullopt;
    protocol::fetch_response_data::partition_data q0 = p0;
    q0.aborted_transactions.emplace();
    q0.aborted_transactions->push_back({7, 3, {}});
    kafka::detail::fetch_frame_ranges ranges(2);
    ranges[0].push_back({io::file_range{file, model::file_position{100}, 50}, io::file_range{file, model::file_position{150}, 25},
                         io::file_range{file, model::file_position{4000}, 1000}});
    ranges[0].push_back({});
    ranges[0].push_back({});
    ranges[1].push_back({io::file_range{file, model::file_position{0}, 200}});
    a.partitions = {p0, p1, p2};
    b.partitions = {q0};
    body.responses = {a, b};
    auto frame = kafka::detail::encode_fetch_frame(version, 77, body, ranges);
    REQUIRE(frame.ok());
    CHECK(frame->file_pieces.size() == 3);   // 100+50 and 150+25 are one piece
    auto wire = materialize(frame.value());
    CHECK(static_cast<size_t>(size_prefix(wire)) == wire.size() - 4);
    CHECK(frame->size_bytes() == wire.size());
    // The same answer with the bytes in memory, through the generated codec.
    protocol::bytes first = slice(100, 75);
    const protocol::bytes tail = slice(4000, 1000);
    first.insert(first.end(), tail.begin(), tail.end());
    body.responses[0].partitions[0].records = first;
    body.responses[1].partitions[0].records = slice(0, 200);
    protocol::writer w;
    REQUIRE(protocol::encode_response_frame(w, version, 77, body).ok());
    CHECK(wire == w.buffer());
  }
}

namespace {

/// A broker on real files in a temp directory, and two Kafka request handlers: zero-copy and copying.
struct real_fixture {
  temp_dir dir;
  std::unique_ptr<io::file_system> fs = io::make_posix_file_system();
  base::manual_clock clock{t0};
  std::unique_ptr<test::test_runtime> runtime = std::make_unique<test::test_runtime>(2, clock);
  std::unique_ptr<broker::broker> b;
  kafka::fetch_counters counters;
  std::unique_ptr<kafka::request_handler> zero_copy;
  std::unique_ptr<kafka::request_handler> copying;

  real_fixture() {
    broker::broker_config config;
    config.log_dir = dir.path() + "/data";
    auto opened = broker::open_broker(config, {*fs, clock, *runtime});
    REQUIRE(opened.ok());
    b = std::move(opened.value());
    kafka::handler_options on;
    on.counters = &counters;
    kafka::handler_options off = on;
    off.fetch_zero_copy = false;
    zero_copy = std::make_unique<kafka::request_handler>(*b, on);
    copying = std::make_unique<kafka::request_handler>(*b, off);
  }
  ~real_fixture() {
    std::promise<void> p;
    b->shutdown([&p] { p.set_value(); });
    p.get_future().wait();
  }

  template <typename Body>
  kafka::response_frame send(kafka::request_handler& h, int16_t version, const Body& body) {
    protocol::request_header_data header;
    header.request_api_key = Body::api_key;
    header.request_api_version = version;
    header.correlation_id = 5;
    header.client_id = "test";
    protocol::writer w;
    REQUIRE(protocol::encode_request_frame(w, header, body).ok());
    auto frame = std::move(w).take();
    auto answer = test::call<std::optional<kafka::response_frame>>([&](auto done) {
      auto handled = h.handle(std::span(frame).subspan(4), done);
      REQUIRE(handled.ok());
    });
    REQUIRE(answer.has_value());
    return std::move(answer).value();
  }

  void create(const std::string& name) {
    auto created = test::call<broker::result<broker::topic_description>>(
        [&](auto done) { b->admin().create_topic({name, 1, std::nullopt, {}, false}, std::move(done)); });
    REQUIRE(created.ok());
  }

  void produce(const std::string& topic, int batches, int records_per_batch) {
    for (int i = 0; i < batches; ++i) {
      std::vector<model::record> records;
      for (int r = 0; r < records_per_batch; ++r) {
        model::record rec;
        rec.timestamp = t0;
        rec.key = model::to_bytes("k" + std::to_string(r));
        rec.value = model::to_bytes(std::string(100 + i, static_cast<char>('a' + (r % 26))));
        records.push_back(std::move(rec));
      }
      auto encoded = codec::encode_batch(codec::batch_options{}, records);
      REQUIRE(encoded.ok());
      protocol::produce_request_data req;
      req.acks = -1;
      req.timeout_ms = 1000;
      protocol::produce_request_data::topic_produce_data t;
      t.name = topic;
      protocol::produce_request_data::partition_produce_data p;
      p.index = 0;
      p.records = std::move(encoded).value();
      t.partition_data.push_back(std::move(p));
      req.topic_data.push_back(std::move(t));
      auto answer = send(*copying, 9, req);
      protocol::reader rd{std::span<const std::byte>(answer.memory).subspan(4)};
      REQUIRE(protocol::decode_response_header(rd, protocol::produce_response_data::api_key, 9).ok());
      auto resp = protocol::produce_response_data::decode(rd, 9);
      REQUIRE(resp.ok());
      REQUIRE(resp->responses[0].partition_responses[0].error_code == 0);
    }
  }
};

protocol::fetch_request_data fetch_request(const std::string& topic, int64_t offset, int32_t max_bytes,
                                           int32_t partition_max_bytes, int8_t isolation = 0) {
  protocol::fetch_request_data req;
  req.max_wait_ms = 0;
  req.min_bytes = 1;
  req.max_bytes = max_bytes;
  req.session_epoch = -1;
  req.isolation_level = isolation;
  protocol::fetch_request_data::fetch_topic t;
  t.topic = topic;
  protocol::fetch_request_data::fetch_partition p;
  p.partition = 0;
  p.fetch_offset = offset;
  p.partition_max_bytes = partition_max_bytes;
  t.partitions.push_back(p);
  req.topics.push_back(std::move(t));
  return req;
}

}  // namespace

TEST_CASE("a fetch from real segment files answers with file pieces, byte for byte the copying answer") {
  real_fixture f;
  f.create("t");
  f.produce("t", 20, 5);
  struct probe {
    int64_t offset;
    int32_t max_bytes;
    int32_t partition_max_bytes;
    int8_t isolation;
  };
  // Whole log; from the middle (the first batch starts below the offset); max_bytes and
  // partition_max_bytes cutting at a batch boundary; a limit below one batch (KIP-74: one batch
  // anyway); read_committed (no transaction: an empty aborted list).
  for (const probe& p : {probe{0, 1 << 20, 1 << 20, 0}, probe{37, 1 << 20, 1 << 20, 0}, probe{0, 3000, 1 << 20, 0},
                         probe{0, 1 << 20, 2500, 0}, probe{0, 10, 10, 0}, probe{12, 1 << 20, 1 << 20, 1}}) {
    for (int16_t version : {4, 7, 11, 12}) {
      CAPTURE(p.offset);
      CAPTURE(p.max_bytes);
      CAPTURE(p.partition_max_bytes);
      CAPTURE(version);
      const auto req = fetch_request("t", p.offset, p.max_bytes, p.partition_max_bytes, p.isolation);
      const uint64_t zero_copy_before = f.counters.bytes_zero_copy.load();
      const uint64_t copied_before = f.counters.bytes_copied.load();
      auto by_reference = f.send(*f.zero_copy, version, req);
      CHECK_FALSE(by_reference.file_pieces.empty());
      CHECK(f.counters.bytes_copied.load() == copied_before);
      auto copied = f.send(*f.copying, version, req);
      CHECK(copied.file_pieces.empty());
      CHECK(f.counters.bytes_copied.load() > copied_before);
      CHECK(f.counters.bytes_zero_copy.load() == zero_copy_before);   // counted by the listener as it sends
      CHECK(materialize(by_reference) == copied.memory);
    }
  }
  // Past the end: no records, so no file piece (and the same answer).
  const auto at_end = fetch_request("t", 100, 1 << 20, 1 << 20);
  auto empty = f.send(*f.zero_copy, 12, at_end);
  CHECK(empty.file_pieces.empty());
  CHECK(empty.memory == f.send(*f.copying, 12, at_end).memory);
}

TEST_CASE("a held zero-copy answer still reads its bytes after its topic's files are deleted") {
  real_fixture f;
  f.create("gone");
  f.produce("gone", 5, 3);
  const auto req = fetch_request("gone", 0, 1 << 20, 1 << 20);
  auto held = f.send(*f.zero_copy, 12, req);
  REQUIRE_FALSE(held.file_pieces.empty());
  const auto expected = f.send(*f.copying, 12, req).memory;
  const std::string segment_path = held.file_pieces.front().range.source->path();
  auto deleted = test::call<broker::result<void>>([&](auto done) { f.b->admin().delete_topic("gone", std::move(done)); });
  REQUIRE(deleted.ok());
  // The partition's directory is removed before the deletion is answered.
  REQUIRE_FALSE(std::filesystem::exists(segment_path));
  CHECK(materialize(held) == expected);
}
