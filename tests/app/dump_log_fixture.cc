// Writes a small partition log with the storage API for tests/python/dump_log_test.py:
//   dump_log_fixture DIRECTORY
// creates DIRECTORY (a partition directory, e.g. .../events-0) holding one segment with
//   batch 1 (offsets 0-2): keys key-0..key-2, values value-0..value-2, CreateTime 1700000000000+i;
//                          record 0 has header h1=x, record 1 a header h2 with a null value
//   batch 2 (offset 3):    null key, binary value 00 01 ff, producer id 7, epoch 1, sequence 5
//   batch 3 (offsets 4-5): lz4, keys lz-4/lz-5, values "lz4 value 4"/"lz4 value 5"
// with index.interval.bytes = 1 so every batch gets an offset index entry, then closes the log.

#include <cstdio>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/partition_log.h"

using namespace ringlog;

namespace {

constexpr model::timestamp_ms base_time_ms = 1'700'000'000'000;

model::record make_record(std::optional<std::string> key, model::bytes value, model::timestamp_ms ts) {
  model::record r;
  r.timestamp = ts;
  if (key) r.key = model::to_bytes(*key);
  r.value = std::move(value);
  return r;
}

model::bytes encode(const codec::batch_options& options, const std::vector<model::record>& records) {
  auto batch = codec::encode_batch(options, records);
  RINGLOG_ASSERT(batch.ok(), "fixture batch must encode");
  return std::move(batch.value());
}

std::vector<model::bytes> fixture_batches() {
  std::vector<model::bytes> out;
  std::vector<model::record> first;
  for (int i = 0; i < 3; ++i) {
    first.push_back(make_record("key-" + std::to_string(i), model::to_bytes("value-" + std::to_string(i)),
                                base_time_ms + i));
  }
  first[0].headers.push_back({"h1", model::to_bytes("x")});
  first[1].headers.push_back({"h2", std::nullopt});
  out.push_back(encode({}, first));

  codec::batch_options idempotent;
  idempotent.producer = model::producer_id{7};
  idempotent.producer_epoch_value = model::producer_epoch{1};
  idempotent.base_sequence = model::sequence{5};
  const model::bytes binary = {std::byte{0x00}, std::byte{0x01}, std::byte{0xff}};
  out.push_back(encode(idempotent, {make_record(std::nullopt, binary, base_time_ms + 10)}));

  codec::batch_options lz4;
  lz4.compression = model::compression::lz4;
  out.push_back(encode(lz4, {make_record("lz-4", model::to_bytes("lz4 value 4"), base_time_ms + 20),
                             make_record("lz-5", model::to_bytes("lz4 value 5"), base_time_ms + 21)}));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: dump_log_fixture DIRECTORY\n", stderr);
    return 2;
  }
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  storage::log_config config;
  config.index_interval_bytes = 1;
  auto log = storage::partition_log::open(*fs, argv[1], config, clock);
  if (!log.ok()) {
    std::fprintf(stderr, "open: %s\n", log.error().message.c_str());
    return 1;
  }
  for (auto& batch : fixture_batches()) {
    auto appended = log.value()->append(std::move(batch), model::leader_epoch{3});
    if (!appended.ok()) {
      std::fprintf(stderr, "append: %s\n", appended.error().message.c_str());
      return 1;
    }
  }
  auto closed = log.value()->close();
  if (!closed.ok()) {
    std::fprintf(stderr, "close: %s\n", closed.error().message.c_str());
    return 1;
  }
  return 0;
}
