// Log cleaner throughput on the real file system. Driven by bench/run-cleaner-bench.sh, which
// measures the disk's sequential rate (fio) in the same run. Prints one `key=value` line.
//
//   cleaner_bench DIR --keys K --versions V [--value-bytes B] [--segment-bytes S]
//                 [--dedupe-bytes D] [--compression none|lz4|zstd] [--cold]
//       Writes a changelog of K keys x V versions (values of B bytes, batches of 100 records,
//       every key's versions spread over the log) to a compacted partition_log in DIR, flushes
//       and rolls it, then times one forced log_cleaner pass over it. With --cold the log's
//       pages are dropped from the page cache first (fdatasync + POSIX_FADV_DONTNEED on each
//       file), so the pass reads from disk. Reports the bytes read and written, the time, MiB/s
//       of log cleaned (bytes read / seconds), the keys in the offset map and its bytes per key.
//       Then (not timed) reads the log back and exits 1 unless it holds exactly one record per
//       key, at its last version, offsets ascending and the log end offset unchanged.
//
// Units: MiB = 2^20 bytes; MiB/s of wall time.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/log_cleaner.h"
#include "ringlog/storage/partition_log.h"

using namespace ringlog;

namespace {

constexpr double mib = 1024.0 * 1024.0;
constexpr int records_per_batch = 100;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "cleaner_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename R>
void check(const R& r, std::string_view what) {
  if (!r.ok()) fail(std::string(what) + ": " + r.error().message);
}

int64_t parse_int(const char* s, const char* what) {
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || v < 0) fail(std::string("bad ") + what + ": " + s);
  return v;
}

void evict(const std::string& directory) {
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const int fd = ::open(entry.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    (void)::fdatasync(fd);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) fail("usage: cleaner_bench DIR --keys K --versions V [options] (see the source header)");
  const std::string directory = std::string(argv[1]) + "/bench-0";
  int64_t keys = 100000, versions = 10, value_bytes = 100, segment_bytes = 64 << 20, dedupe_bytes = 128 << 20;
  model::compression codec_value = model::compression::none;
  bool cold = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--keys" && has_value) keys = parse_int(argv[++i], "--keys");
    else if (arg == "--versions" && has_value) versions = parse_int(argv[++i], "--versions");
    else if (arg == "--value-bytes" && has_value) value_bytes = parse_int(argv[++i], "--value-bytes");
    else if (arg == "--segment-bytes" && has_value) segment_bytes = parse_int(argv[++i], "--segment-bytes");
    else if (arg == "--dedupe-bytes" && has_value) dedupe_bytes = parse_int(argv[++i], "--dedupe-bytes");
    else if (arg == "--compression" && has_value) {
      const std::string_view c = argv[++i];
      codec_value = c == "lz4" ? model::compression::lz4 : c == "zstd" ? model::compression::zstd : model::compression::none;
    } else if (arg == "--cold") cold = true;
    else fail("unknown option " + std::string(arg));
  }
  std::filesystem::remove_all(directory);
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  storage::log_config config;
  config.cleanup_policy = "compact";
  config.segment_bytes = segment_bytes;
  config.retention_ms = -1;
  config.max_message_bytes = 64 << 20;
  auto opened = storage::partition_log::open(*fs, directory, config, clock);
  check(opened, "open");
  auto& log = *opened.value();
  std::string filler(static_cast<size_t>(value_bytes), 'v');
  std::vector<model::record> batch;
  for (int64_t v = 0; v < versions; ++v) {
    for (int64_t k = 0; k < keys; ++k) {
      model::record r;
      r.timestamp = clock.now_ms();
      r.key = model::to_bytes("key-" + std::to_string(k));
      std::string value = std::to_string(v) + ":" + filler;
      value.resize(static_cast<size_t>(value_bytes));
      r.value = model::to_bytes(value);
      batch.push_back(std::move(r));
      if (batch.size() == records_per_batch || k + 1 == keys) {
        codec::batch_options options;
        options.compression = codec_value;
        auto encoded = codec::encode_batch(options, batch);
        check(encoded, "encode");
        check(log.append(std::move(encoded.value()), model::leader_epoch{0}), "append");
        batch.clear();
      }
    }
  }
  check(log.flush(), "flush");
  check(log.roll(), "roll");
  log.set_high_watermark(log.log_end_offset());
  const uint64_t size_before = log.size_bytes();
  const size_t segments_before = log.segments().size();
  if (cold) evict(directory);
  storage::log_cleaner cleaner(storage::cleaner_config{static_cast<size_t>(dedupe_bytes)});
  const auto started = std::chrono::steady_clock::now();
  uint64_t bytes_read = 0, bytes_written = 0, keys_in_map = 0, passes = 0, map_bytes = 0;
  // Passes until nothing is dirty (one when the map holds every key).
  while (true) {
    auto pass = cleaner.clean(log, storage::force_clean::yes);
    check(pass, "clean");
    if (!pass->cleaned) break;
    ++passes;
    bytes_read += pass->bytes_read;
    bytes_written += pass->bytes_written;
    keys_in_map = std::max<uint64_t>(keys_in_map, pass->keys_in_map);
    map_bytes = std::max<uint64_t>(map_bytes, cleaner.map().memory_bytes());
    auto state = cleaner.inspect(log);
    check(state, "inspect");
    if (state->dirty_bytes == 0) break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // Not timed: the cleaned log holds exactly one record per key, its last version, offsets
  // ascending, the log end offset unchanged (issue 17's changelog check at this scale).
  const model::offset end = log.log_end_offset();
  auto read = log.read(log.log_start_offset(), size_t{1} << 30, end);
  check(read, "read");
  std::vector<uint8_t> seen(static_cast<size_t>(keys), 0);
  int64_t records = 0;
  int64_t previous = -1;
  size_t pos = 0;
  const std::string last_prefix = std::to_string(versions - 1) + ":";
  while (pos < read->batches.size()) {
    auto header = codec::decode_header(std::span(read->batches).subspan(pos));
    check(header, "decode header");
    auto decoded = codec::decode_records(std::span(read->batches).subspan(pos, header->size_bytes()));
    check(decoded, "decode records");
    for (const auto& r : decoded.value()) {
      if (r.record_offset.value() <= previous) fail("offsets do not ascend");
      previous = r.record_offset.value();
      const int64_t k = std::stoll(model::to_string(*r.key).substr(4));
      if (seen.at(static_cast<size_t>(k))++ != 0) fail("key " + std::to_string(k) + " read twice");
      if (model::to_string(*r.value).rfind(last_prefix, 0) != 0) fail("key " + std::to_string(k) + " is not at its last version");
      ++records;
    }
    pos += header->size_bytes();
  }
  if (records != keys) fail(std::to_string(records) + " records read after cleaning, expected one per key");
  if (end.value() != keys * versions) fail("the log end offset moved");
  std::printf(
      "op=clean keys=%lld versions=%lld value_bytes=%lld compression=%s cold=%d segments_before=%zu "
      "segments_after=%zu log_mib_before=%.1f log_mib_after=%.1f passes=%llu bytes_read=%llu bytes_written=%llu "
      "seconds=%.3f mib_per_s=%.1f keys_in_map=%llu map_mib=%.1f map_bytes_per_key=%.1f verified=1\n",
      static_cast<long long>(keys), static_cast<long long>(versions), static_cast<long long>(value_bytes),
      codec_value == model::compression::lz4 ? "lz4" : codec_value == model::compression::zstd ? "zstd" : "none",
      cold ? 1 : 0, segments_before, log.segments().size(), static_cast<double>(size_before) / mib,
      static_cast<double>(log.size_bytes()) / mib, static_cast<unsigned long long>(passes),
      static_cast<unsigned long long>(bytes_read), static_cast<unsigned long long>(bytes_written), seconds,
      static_cast<double>(bytes_read) / mib / seconds, static_cast<unsigned long long>(keys_in_map),
      static_cast<double>(map_bytes) / mib,
      keys_in_map == 0 ? 0.0 : static_cast<double>(map_bytes) / static_cast<double>(keys_in_map));
  check(log.close(), "close");
  std::filesystem::remove_all(directory);
  return 0;
}
