// decode_fetched_records: the bounds of what one fetch decodes (partition/constants.h).

#include <doctest/doctest.h>

#include <vector>

#include "ringlog/codec/record_batch.h"
#include "ringlog/partition/constants.h"
#include "ringlog/partition/partition.h"

namespace ringlog::partition {
namespace {

/// `batches` batches of `per_batch` records, each with `headers` empty headers, from offset 0.
model::bytes batches_of(int batches, int per_batch, int headers) {
  model::bytes out;
  for (int b = 0; b < batches; ++b) {
    std::vector<model::record> records(static_cast<size_t>(per_batch));
    for (auto& r : records) {
      r.value = model::bytes(8, std::byte{'v'});
      r.headers.resize(static_cast<size_t>(headers));
    }
    codec::batch_options options;
    options.base_offset = model::offset{static_cast<int64_t>(b) * per_batch};
    auto batch = codec::encode_batch(options, records);
    REQUIRE(batch.ok());
    out.insert(out.end(), batch->begin(), batch->end());
  }
  return out;
}

TEST_CASE("a fetch decodes at most fetch_decoded_bytes_max of records, whatever max_bytes says") {
  // 10,000 empty headers a record: ~20 KB on the wire, ~1 MB decoded (the breaker of session 24
  // read 768 MB of JSON and took 2.7 GB of memory with one 64 MiB read of such records).
  const int headers = 10'000;
  const int records_total = 100;
  const model::bytes batches = batches_of(records_total / 10, 10, headers);
  std::vector<model::record> out;
  model::offset next{0};
  auto decoded = decode_fetched_records(batches, model::offset{0}, model::offset{records_total}, 64 << 20, out, nullptr, &next);
  REQUIRE(decoded.ok());
  const size_t per_record = 8 + recent_read_record_bytes + headers * decoded_header_bytes;
  CHECK(out.size() == fetch_decoded_bytes_max / per_record);
  CHECK(out.size() < static_cast<size_t>(records_total));
  CHECK(next.value() == static_cast<int64_t>(out.size()));   // the next read starts after the last one returned

  // One such record is always returned, so a reader is never stuck behind it.
  std::vector<model::record> one;
  auto first = decode_fetched_records(batches, model::offset{0}, model::offset{records_total}, 1, one, nullptr, &next);
  REQUIRE(first.ok());
  CHECK(one.size() == 1);

  // Plain records are bounded by max_bytes as before.
  const model::bytes plain = batches_of(10, 10, 0);
  std::vector<model::record> some;
  auto bounded = decode_fetched_records(plain, model::offset{0}, model::offset{100}, 8 * 25, some, nullptr, &next);
  REQUIRE(bounded.ok());
  CHECK(some.size() == 25);
}

}  // namespace
}  // namespace ringlog::partition

namespace ringlog::partition {
namespace {

TEST_CASE("a corrupt stored batch: the records before it are answered, a read at it names where") {
  model::bytes batches = batches_of(3, 10, 0);
  const size_t batch_bytes = batches.size() / 3;
  batches[batch_bytes + batch_bytes - 1] ^= std::byte{0x5a};   // the second batch's last byte (outside base offset)
  std::vector<model::record> out;
  model::offset next{0};
  auto before = decode_fetched_records(batches, model::offset{0}, model::offset{30}, 1 << 20, out, nullptr, &next);
  REQUIRE(before.ok());
  CHECK(out.size() == 10);
  CHECK(next.value() == 10);
  std::vector<model::record> none;
  auto at = decode_fetched_records(std::span<const std::byte>(batches).subspan(batch_bytes), model::offset{10},
                                   model::offset{30}, 1 << 20, none, nullptr, &next);
  REQUIRE_FALSE(at.ok());
  CHECK(at.error().code == errc::kafka_storage_error);
  CHECK(at.error().message.find("offset 10") != std::string::npos);
}

}  // namespace
}  // namespace ringlog::partition
