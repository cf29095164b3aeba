// Codec throughput: CRC-32C (hardware and portable) and decode_records (none and lz4), reported
// as bytes per second of input. Run: build/bench/codec_bench.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "ringlog/codec/crc32c.h"
#include "ringlog/codec/record_batch.h"

using namespace ringlog;

namespace {

std::vector<std::byte> random_bytes(size_t n) {
  std::mt19937_64 rng(1);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

void bm_crc32c(benchmark::State& state) {
  const auto data = random_bytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(codec::crc32c(data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(bm_crc32c)->Arg(64)->Arg(4096)->Arg(1 << 20);

void bm_crc32c_portable(benchmark::State& state) {
  const auto data = random_bytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(codec::crc32c_portable(data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(bm_crc32c_portable)->Arg(64)->Arg(4096)->Arg(1 << 20);

/// A batch of `count` records with 16-byte keys and `value_bytes`-byte text values.
model::bytes make_batch(model::compression c, int count, size_t value_bytes) {
  std::vector<model::record> records(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    auto& r = records[static_cast<size_t>(i)];
    r.timestamp = 1'700'000'000'000 + i;
    r.key = model::to_bytes("key-" + std::to_string(1'000'000'000 + i) + "-pad");
    std::string value;
    while (value.size() < value_bytes) value += "{\"user\":" + std::to_string(i) + ",\"event\":\"click\"}";
    value.resize(value_bytes);
    r.value = model::to_bytes(value);
  }
  codec::batch_options options;
  options.compression = c;
  return std::move(*codec::encode_batch(options, records));
}

void bm_decode_records(benchmark::State& state) {
  const auto batch = make_batch(static_cast<model::compression>(state.range(0)), static_cast<int>(state.range(1)),
                                static_cast<size_t>(state.range(2)));
  for (auto _ : state) {
    auto records = codec::decode_records(batch);
    benchmark::DoNotOptimize(records);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(batch.size()));
  state.counters["batch_bytes"] = static_cast<double>(batch.size());
}
// Args: compression (0 none, 3 lz4), records, value bytes.
BENCHMARK(bm_decode_records)->Args({0, 100, 100})->Args({0, 1000, 1000})->Args({3, 100, 100})->Args({3, 1000, 1000});

void bm_encode_batch(benchmark::State& state) {
  std::vector<model::record> records(1000);
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].timestamp = static_cast<int64_t>(i);
    records[i].value = model::bytes(1000, std::byte{'v'});
  }
  codec::batch_options options;
  options.compression = static_cast<model::compression>(state.range(0));
  for (auto _ : state) {
    auto batch = codec::encode_batch(options, records);
    benchmark::DoNotOptimize(batch);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 1000 * 1000);
}
BENCHMARK(bm_encode_batch)->Arg(0)->Arg(3);

}  // namespace

BENCHMARK_MAIN();
