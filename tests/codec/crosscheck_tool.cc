// codec_crosscheck: the C++ half of tests/python/kafka_batch_crosscheck.py.
//
//   codec_crosscheck encode OUT   writes a fixed set of batches (mirrored in the Python script)
//   codec_crosscheck decode IN    prints every record of the batches in IN, one JSON line each:
//     {"batch": i, "base_offset": n, "compression": c, "timestamp_type": t, "transactional": b,
//      "offset": n, "timestamp": n, "key": "hex"|null, "value": "hex"|null,
//      "headers": [["key hex", "value hex"|null], ...]}
// Exit status 0 on success; 1 with "error: <errc>: <message>" on stderr otherwise.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/codec/record_batch.h"

using namespace ringlog;

namespace {

constexpr model::timestamp_ms base_time_ms = 1'700'000'000'000;
constexpr model::timestamp_ms log_append_time_ms = 1'800'000'000'000;

model::bytes text(const std::string& s) { return model::to_bytes(s); }

std::vector<model::record> small_batch_records() {
  const model::timestamp_ms deltas[] = {0, -5, 10, -20, 3};
  std::vector<model::record> records;
  for (int i = 0; i < 5; ++i) {
    model::record r;
    r.timestamp = base_time_ms + deltas[i];
    if (i != 1) r.key = text("key-" + std::to_string(i));
    if (i != 2) {
      std::string v;
      for (int k = 0; k <= i; ++k) v += "value-" + std::to_string(i);
      r.value = text(v);
    }
    if (i == 3) {
      r.headers = {{"trace", text("abc")}, {"empty", text("")}, {"null", std::nullopt}};
    }
    if (i == 4) r.headers = {{"h", model::bytes{std::byte{0x00}, std::byte{0xff}}}};
    records.push_back(std::move(r));
  }
  return records;
}

std::vector<model::record> lz4_batch_records() {
  std::vector<model::record> records;
  for (int i = 0; i < 100; ++i) {
    model::record r;
    r.timestamp = base_time_ms + i;
    r.key = text("k" + std::to_string(i));
    r.value = text(std::string(200, 'x') + std::to_string(i));
    if (i % 10 == 0) r.headers = {{"n", text(std::to_string(i))}};
    records.push_back(std::move(r));
  }
  return records;
}

std::vector<model::record> transactional_batch_records() {
  std::vector<model::record> records(2);
  records[0].timestamp = base_time_ms;
  records[0].value = text("txn-0");
  records[1].timestamp = base_time_ms + 1;
  records[1].key = text("txn-key");
  records[1].value = text("txn-1");
  return records;
}

[[noreturn]] void fail(const codec::error& e) {
  std::cerr << "error: " << codec::to_string(e.code) << ": " << e.message << "\n";
  std::exit(1);
}

std::vector<model::bytes> fixed_batches() {
  std::vector<model::bytes> out;
  auto add = [&](const codec::batch_options& options, const std::vector<model::record>& records) {
    auto b = codec::encode_batch(options, records);
    if (!b.ok()) fail(b.error());
    out.push_back(std::move(*b));
  };
  codec::batch_options options;
  options.base_offset = model::offset(0);
  add(options, small_batch_records());

  options.base_offset = model::offset(5);
  options.compression = model::compression::lz4;
  add(options, lz4_batch_records());

  options.base_offset = model::offset(105);
  options.compression = model::compression::none;
  options.producer = model::producer_id(77);
  options.producer_epoch_value = model::producer_epoch(2);
  options.base_sequence = model::sequence(0);
  options.is_transactional = true;
  add(options, transactional_batch_records());

  codec::batch_options append_time;
  append_time.base_offset = model::offset(107);
  model::record r;
  r.timestamp = base_time_ms;
  r.key = text("appended");
  r.value = text("at log append time");
  add(append_time, {r});
  codec::set_log_append_time(out.back(), log_append_time_ms);
  return out;
}

std::string hex(const model::bytes& b) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) {
    s += digits[static_cast<unsigned>(x) >> 4];
    s += digits[static_cast<unsigned>(x) & 0xf];
  }
  return s;
}

std::string hex_or_null(const std::optional<model::bytes>& b) { return b ? "\"" + hex(*b) + "\"" : "null"; }

void print_record(size_t batch_index, const codec::batch_header& h, const model::record& r) {
  std::string line = "{\"batch\": " + std::to_string(batch_index) +
                     ", \"base_offset\": " + std::to_string(h.base_offset.value()) +
                     ", \"compression\": " + std::to_string(static_cast<int>(h.compression())) +
                     ", \"timestamp_type\": " + std::to_string(static_cast<int>(h.timestamp_type())) +
                     ", \"transactional\": " + (h.is_transactional() ? "true" : "false") +
                     ", \"offset\": " + std::to_string(r.record_offset.value()) +
                     ", \"timestamp\": " + std::to_string(r.timestamp) + ", \"key\": " + hex_or_null(r.key) +
                     ", \"value\": " + hex_or_null(r.value) + ", \"headers\": [";
  for (size_t i = 0; i < r.headers.size(); ++i) {
    if (i > 0) line += ", ";
    line += "[\"" + hex(model::to_bytes(r.headers[i].key)) + "\", " + hex_or_null(r.headers[i].value) + "]";
  }
  line += "]}";
  std::cout << line << "\n";
}

int encode(const char* path) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& b : fixed_batches()) out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  out.close();
  if (!out) {
    std::cerr << "error: cannot write " << path << "\n";
    return 1;
  }
  return 0;
}

int decode(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "error: cannot read " << path << "\n";
    return 1;
  }
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::span<const std::byte> all(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
  size_t position = 0;
  for (size_t batch_index = 0; position < all.size(); ++batch_index) {
    auto header = codec::decode_header(all.subspan(position));
    if (!header.ok()) fail(header.error());
    const auto batch = all.subspan(position, std::min(header->size_bytes(), all.size() - position));
    auto records = codec::decode_records(batch);
    if (!records.ok()) fail(records.error());
    for (const auto& r : *records) print_record(batch_index, *header, r);
    position += batch.size();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "encode") return encode(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "decode") return decode(argv[2]);
  std::cerr << "usage: codec_crosscheck encode OUT | decode IN\n";
  return 2;
}
