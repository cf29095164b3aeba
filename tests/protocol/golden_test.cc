// Golden bytes written by hand from the protocol guide's BNF (kafka.apache.org/protocol):
// ApiVersions request v3, Vote request v0, Fetch request v12 with its header, a framed metadata
// record; plus the header-version rules and the encode-side errors.
#include <doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test_bytes.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/protocol/messages.h"

using namespace ringlog;
using namespace ringlog::protocol;

namespace {

using test::bytes_of;

void append_text(bytes& out, std::string_view s) {
  for (char ch : s) {
    out.push_back(static_cast<std::byte>(ch));
  }
}

bytes cat(std::initializer_list<bytes> parts) {
  bytes out;
  for (const auto& p : parts) {
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

bytes text(std::string_view s) {
  bytes out;
  append_text(out, s);
  return out;
}

template <typename T>
bytes encoded(const T& m, int16_t version) {
  writer w;
  auto ok = m.encode(w, version);
  INFO((ok.ok() ? std::string() : ok.error().message));
  REQUIRE(ok.ok());
  return w.buffer();
}

vote_request_data sample_vote() {
  vote_request_data vote;
  vote.cluster_id = "abc";
  vote_request_data::topic_data topic;
  topic.topic_name = "__cluster_metadata";
  vote_request_data::partition_data p;
  p.partition_index = 0;
  p.candidate_epoch = 5;
  p.candidate_id = 1;
  p.last_offset_epoch = 4;
  p.last_offset = 100;
  topic.partitions.push_back(p);
  vote.topics.push_back(topic);
  return vote;
}

// Vote Request (Version: 0) => cluster_id [topics] _tagged_fields, all compact (flexible 0+).
const bytes vote_v0_golden = cat({
    bytes_of({0x04}), text("abc"),                    // cluster_id: COMPACT_NULLABLE_STRING, length + 1
    bytes_of({0x02}),                                 // topics: compact array of 1
    bytes_of({0x13}), text("__cluster_metadata"),     // topic_name: 18 bytes
    bytes_of({0x02}),                                 // partitions: 1
    bytes_of({0, 0, 0, 0}),                           // partition_index
    bytes_of({0, 0, 0, 5}),                           // candidate_epoch
    bytes_of({0, 0, 0, 1}),                           // candidate_id
    bytes_of({0, 0, 0, 4}),                           // last_offset_epoch
    bytes_of({0, 0, 0, 0, 0, 0, 0, 0x64}),            // last_offset
    bytes_of({0x00}),                                 // partition _tagged_fields
    bytes_of({0x00}),                                 // topic _tagged_fields
    bytes_of({0x00}),                                 // request _tagged_fields
});

}  // namespace

TEST_CASE("ApiVersions request v3 with request header v2 matches the guide") {
  request_header_data h;
  h.request_api_key = api_versions_request_data::api_key;
  h.request_api_version = 3;
  h.correlation_id = 7;
  h.client_id = "c1";
  REQUIRE(*request_header_version(18, 3) == 2);
  api_versions_request_data req;
  req.client_software_name = "ringlog";
  req.client_software_version = "0.1.0";
  const bytes want = cat({
      bytes_of({0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x07}),  // api key 18, version 3, correlation 7
      bytes_of({0x00, 0x02}), text("c1"),                            // client_id: classic NULLABLE_STRING
      bytes_of({0x00}),                                              // header _tagged_fields
      bytes_of({0x08}), text("ringlog"),                             // client_software_name
      bytes_of({0x06}), text("0.1.0"),                               // client_software_version
      bytes_of({0x00}),                                              // body _tagged_fields
  });
  writer w;
  REQUIRE(h.encode(w, 2).ok());
  REQUIRE(req.encode(w, 3).ok());
  CHECK(w.buffer() == want);

  reader rd(want);
  auto h2 = request_header_data::decode(rd, 2);
  REQUIRE(h2.ok());
  CHECK(*h2 == h);
  auto r2 = api_versions_request_data::decode(rd, 3);
  REQUIRE(r2.ok());
  CHECK(*r2 == req);
  CHECK(rd.remaining() == 0);
  // v0..v2 have no fields at all: an empty body.
  CHECK(encoded(api_versions_request_data{}, 2).empty());
}

TEST_CASE("Vote request v0 matches the guide, and a truncation names the field") {
  CHECK(encoded(sample_vote(), 0) == vote_v0_golden);
  reader rd(vote_v0_golden);
  auto d = vote_request_data::decode(rd, 0);
  REQUIRE(d.ok());
  CHECK(*d == sample_vote());

  // candidate_epoch spans bytes 29..32; with 31 bytes the read needs up to byte 33.
  const bytes cut(vote_v0_golden.begin(), vote_v0_golden.begin() + 31);
  reader rd2(cut);
  auto e = vote_request_data::decode(rd2, 0);
  REQUIRE(!e.ok());
  CHECK(e.error().code == errc::truncated);
  CHECK(e.error().message == "VoteRequest v0: topics[0].partitions[0].candidate_epoch: truncated at byte 33 of 31");
}

TEST_CASE("Fetch request v12 with its header matches the guide, including a known tagged field") {
  request_header_data h;
  h.request_api_key = 1;
  h.request_api_version = 12;
  h.correlation_id = 42;
  h.client_id = "cli";
  fetch_request_data f;
  f.cluster_id = "ck";
  f.replica_id = -1;
  f.max_wait_ms = 500;
  f.min_bytes = 1;
  f.max_bytes = 0x100000;
  f.isolation_level = 1;
  f.session_id = 0;
  f.session_epoch = -1;
  fetch_request_data::fetch_topic t;
  t.topic = "t";
  fetch_request_data::fetch_partition p;
  p.partition = 3;
  p.current_leader_epoch = 7;
  p.fetch_offset = 42;
  p.last_fetched_epoch = 6;
  p.log_start_offset = -1;
  p.partition_max_bytes = 65536;
  t.partitions.push_back(p);
  f.topics.push_back(t);
  f.rack_id = "";

  const bytes want = cat({
      // request header v2: api key 1, version 12, correlation 42, client id "cli", no tags
      bytes_of({0x00, 0x01, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x03}), text("cli"), bytes_of({0x00}),
      bytes_of({0xff, 0xff, 0xff, 0xff}),  // replica_id -1
      bytes_of({0x00, 0x00, 0x01, 0xf4}),  // max_wait_ms 500
      bytes_of({0x00, 0x00, 0x00, 0x01}),  // min_bytes 1
      bytes_of({0x00, 0x10, 0x00, 0x00}),  // max_bytes 1 MiB
      bytes_of({0x01}),                    // isolation_level read_committed
      bytes_of({0x00, 0x00, 0x00, 0x00}),  // session_id 0
      bytes_of({0xff, 0xff, 0xff, 0xff}),  // session_epoch -1
      bytes_of({0x02}),                    // topics: 1
      bytes_of({0x02}), text("t"),         // topic: COMPACT_STRING "t"
      bytes_of({0x02}),                    // partitions: 1
      bytes_of({0x00, 0x00, 0x00, 0x03}),  // partition 3
      bytes_of({0x00, 0x00, 0x00, 0x07}),  // current_leader_epoch 7
      bytes_of({0, 0, 0, 0, 0, 0, 0, 0x2a}),  // fetch_offset 42
      bytes_of({0x00, 0x00, 0x00, 0x06}),  // last_fetched_epoch 6
      bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),  // log_start_offset -1
      bytes_of({0x00, 0x01, 0x00, 0x00}),  // partition_max_bytes 65536
      bytes_of({0x00}),                    // partition _tagged_fields
      bytes_of({0x00}),                    // topic _tagged_fields
      bytes_of({0x01}),                    // forgotten_topics_data: empty compact array
      bytes_of({0x01}),                    // rack_id: ""
      bytes_of({0x01, 0x00, 0x03, 0x03}), text("ck"),  // 1 tagged field: tag 0 (cluster_id), 3 bytes
  });
  REQUIRE(*request_header_version(1, 12) == 2);
  writer w;
  REQUIRE(h.encode(w, 2).ok());
  REQUIRE(f.encode(w, 12).ok());
  CHECK(w.buffer() == want);

  reader rd(want);
  REQUIRE(request_header_data::decode(rd, 2).ok());
  auto d = fetch_request_data::decode(rd, 12);
  REQUIRE(d.ok());
  CHECK(*d == f);
  CHECK(d->unknown_tagged_fields.empty());
}

TEST_CASE("header versions follow the request's flexible versions; ApiVersions responses use v0") {
  CHECK(*request_header_version(18, 2) == 1);
  CHECK(*request_header_version(18, 3) == 2);
  CHECK(*response_header_version(18, 3) == 0);
  CHECK(*response_header_version(18, 0) == 0);
  CHECK(*request_header_version(1, 11) == 1);
  CHECK(*request_header_version(1, 12) == 2);
  CHECK(*response_header_version(1, 11) == 0);
  CHECK(*response_header_version(1, 12) == 1);
  CHECK(*request_header_version(52, 0) == 2);
  CHECK(*response_header_version(52, 0) == 1);
  CHECK(*request_header_version(0, 8) == 1);
  CHECK(*request_header_version(0, 9) == 2);
  CHECK(request_header_version(9999, 0).error().code == errc::unknown_api_key);
  CHECK(request_header_version(18, 99).error().code == errc::unsupported_version);
  CHECK(find_api(52)->highest_version == vote_request_data::highest_supported_version);
  CHECK(supported_apis().size() >= 21);

  response_header_data rh;
  rh.correlation_id = 9;
  CHECK(encoded(rh, 0) == bytes_of({0, 0, 0, 9}));
  CHECK(encoded(rh, 1) == bytes_of({0, 0, 0, 9, 0}));
  request_header_data h0;
  h0.request_api_key = 3;
  h0.request_api_version = 0;
  h0.correlation_id = 1;
  h0.client_id = std::nullopt;
  // v1: client_id is a classic nullable string even where the header is flexible (v2).
  CHECK(encoded(h0, 1) == bytes_of({0, 3, 0, 0, 0, 0, 0, 1, 0xff, 0xff}));
  CHECK(encoded(h0, 2) == bytes_of({0, 3, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0}));
}

TEST_CASE("a framed metadata record matches Kafka's serde layout") {
  fence_broker_record r;
  r.id = 3;
  r.epoch = 9;
  writer w;
  REQUIRE(encode_metadata_record(w, r, 0).ok());
  const bytes want = bytes_of({0x01, 0x07, 0x00,           // frame version 1, type 7, version 0
                               0, 0, 0, 3,                 // id
                               0, 0, 0, 0, 0, 0, 0, 9,     // epoch
                               0x00});                     // _tagged_fields
  CHECK(w.buffer() == want);
  auto d = decode_metadata_record(want);
  REQUIRE(d.ok());
  CHECK(std::get<fence_broker_record>(d->record) == r);

  bytes frame0 = want;
  frame0[0] = std::byte{0};
  CHECK(decode_metadata_record(frame0).error().code == errc::unsupported_version);
  bytes unknown_type = want;
  unknown_type[1] = std::byte{0x63};
  CHECK(decode_metadata_record(unknown_type).error().code == errc::unknown_api_key);
  bytes bad_version = want;
  bad_version[2] = std::byte{0x05};
  CHECK(decode_metadata_record(bad_version).error().code == errc::unsupported_version);
}

TEST_CASE("encode refuses what the version cannot carry") {
  metadata_request_data m;
  m.allow_auto_topic_creation = false;  // 4+, not ignorable
  writer w;
  auto e = m.encode(w, 3);
  REQUIRE(!e.ok());
  CHECK(e.error().code == errc::unsupported_version);
  CHECK(e.error().message == "MetadataRequest v3: allow_auto_topic_creation: set to a non-default value but not in version 3");
  // Ignorable fields are dropped silently, as Kafka does.
  fetch_request_data f;
  f.rack_id = "rack-a";  // 11+, ignorable
  writer w2;
  CHECK(f.encode(w2, 10).ok());
  // Null where the version has no null.
  vote_request_data v;
  v.cluster_id = std::nullopt;
  CHECK(v.encode(w, 0).ok());
  metadata_request_data m2;
  m2.topics = std::nullopt;  // nullable only from v1
  auto e2 = m2.encode(w, 0);
  REQUIRE(!e2.ok());
  CHECK(e2.error().code == errc::null_value);
}

TEST_CASE("unknown tagged fields are kept and written back in tag order") {
  vote_request_data v = sample_vote();
  v.unknown_tagged_fields.push_back(tagged_field{9, bytes_of({1, 2})});
  v.unknown_tagged_fields.push_back(tagged_field{4, bytes_of({3})});
  const bytes b = encoded(v, 0);
  // The last bytes: count 2, tag 4 size 1 [3], tag 9 size 2 [1 2].
  const bytes tail(b.end() - 8, b.end());
  CHECK(tail == bytes_of({0x02, 0x04, 0x01, 0x03, 0x09, 0x02, 0x01, 0x02}));
  reader rd(b);
  auto d = vote_request_data::decode(rd, 0);
  REQUIRE(d.ok());
  REQUIRE(d->unknown_tagged_fields.size() == 2);
  CHECK(d->unknown_tagged_fields[0].tag == 4);
  CHECK(d->unknown_tagged_fields[1].tag == 9);

  // A repeated unknown tag is refused on decode.
  bytes dup(b.begin(), b.end() - 8);
  const bytes twice = bytes_of({0x02, 0x04, 0x01, 0x03, 0x04, 0x01, 0x03});
  dup.insert(dup.end(), twice.begin(), twice.end());
  reader rd2(dup);
  CHECK(vote_request_data::decode(rd2, 0).error().code == errc::invalid_tagged_field);

  // A known tagged field whose declared size is larger than its content is refused.
  fetch_request_data f;
  f.cluster_id = "ck";
  bytes fb = encoded(f, 12);
  // Last bytes: 01 00 03 03 'c' 'k' -> size 4 with an extra byte inside.
  fb[fb.size() - 4] = std::byte{0x04};
  fb.push_back(std::byte{0x00});
  reader rd3(fb);
  CHECK(fetch_request_data::decode(rd3, 12).error().code == errc::invalid_tagged_field);
}

TEST_CASE("request and response frames carry the size and the header version the api needs") {
  request_header_data h;
  h.request_api_key = api_versions_request_data::api_key;
  h.request_api_version = 3;
  h.correlation_id = 7;
  h.client_id = "c1";
  api_versions_request_data req;
  req.client_software_name = "ringlog";
  req.client_software_version = "0.1.0";
  writer w;
  REQUIRE(encode_request_frame(w, h, req).ok());
  const bytes& frame = w.buffer();
  REQUIRE(frame.size() == 4 + 28);
  CHECK(bytes(frame.begin(), frame.begin() + 4) == bytes_of({0, 0, 0, 28}));
  const std::span<const std::byte> after_size(frame.data() + 4, frame.size() - 4);
  CHECK(*peek_correlation_id(after_size) == 7);
  auto hd = decode_request_header(after_size);
  REQUIRE(hd.ok());
  CHECK(hd->header == h);
  CHECK(hd->header_version == 2);
  CHECK(hd->body_offset == 13);
  reader body(after_size.subspan(hd->body_offset));
  CHECK(*api_versions_request_data::decode(body, 3) == req);

  // A mismatched body type is refused; an unknown api still yields its correlation id.
  writer bad;
  CHECK(encode_request_frame(bad, h, vote_request_data{}).error().code == errc::unknown_api_key);
  const bytes unknown = bytes_of({0x7f, 0x00, 0, 0, 0, 0, 0, 5, 0xff, 0xff});
  CHECK(decode_request_header(unknown).error().code == errc::unknown_api_key);
  CHECK(*peek_correlation_id(unknown) == 5);

  // ApiVersions v3 responds with header v0: no tagged fields after the correlation id.
  api_versions_response_data resp;
  resp.error_code = 35;
  writer rw;
  REQUIRE(encode_response_frame(rw, 3, 7, resp).ok());
  const bytes& rf = rw.buffer();
  CHECK(bytes(rf.begin() + 4, rf.begin() + 10) == bytes_of({0, 0, 0, 7, 0, 35}));
  reader rr(std::span<const std::byte>(rf.data() + 4, rf.size() - 4));
  auto rh = decode_response_header(rr, 18, 3);
  REQUIRE(rh.ok());
  CHECK(rh->correlation_id == 7);
  CHECK(*api_versions_response_data::decode(rr, 3) == resp);
}
