// Storage throughput and recovery time on the real file system. Driven by
// bench/run-storage-bench.sh, which runs fio on the same disk in the same run for comparison.
// Each subcommand prints one line of `key=value` pairs (the script turns them into tables):
//
//   storage_bench append DIR --batch-bytes N [--flush-bytes F] [--total-bytes T] [--seconds S] [--direct]
//       Appends batches of 1 KiB records (about N bytes per batch) to a new partition_log in DIR.
//       F > 0: flush() (fdatasync) whenever F bytes were appended since the last flush; F = 0:
//       never flush while appending, one flush at the end (reported separately). Stops after T
//       bytes or S seconds, whichever comes first.
//   storage_bench fill DIR --bytes T [--segment-bytes B] [--unclean]
//       Appends T bytes in 1 MiB batches with a flush per batch. Then close() (clean), or with
//       --unclean raise(SIGKILL) without closing: the process dies as in a crash, leaving no
//       clean-shutdown marker and a stale recovery-point checkpoint.
//   storage_bench open DIR [--segment-bytes B] [--drop-recovery-checkpoint] [--close]
//       Times partition_log::open (recovery) and reports what recovery did. With
//       --drop-recovery-checkpoint the recovery-point checkpoint is removed first (forces a scan
//       of every segment when the shutdown was unclean). With --close, closes cleanly after
//       timing (not timed), so the next open is a clean one.
//   storage_bench evict DIR
//       fdatasync + posix_fadvise(DONTNEED) on every file in DIR: drops this directory's pages
//       from the page cache (not the whole machine's), so the next open reads from disk.
//
// Units: MiB = 2^20 bytes, MiB/s = MiB per second of wall time.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/partition_log.h"

using namespace ringlog;

namespace {

constexpr size_t record_value_bytes = 1024;
constexpr double mib = 1024.0 * 1024.0;
/// Batches up to 4 MiB are allowed (the largest size measured is 1 MiB of values plus overhead).
constexpr int32_t bench_max_message_bytes = 4 * 1024 * 1024;
constexpr const char* recovery_point_file = "recovery-point-offset-checkpoint";

using steady = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "storage_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename R>
void check(const R& r, std::string_view what) {
  if (!r.ok()) fail(std::string(what) + ": " + r.error().message);
}

double seconds_since(steady::time_point start) {
  return std::chrono::duration<double>(steady::now() - start).count();
}

struct arguments {
  std::string directory;
  int64_t batch_bytes = 64 * 1024;
  int64_t flush_bytes = 0;
  int64_t total_bytes = 256LL * 1024 * 1024;
  double seconds = 20.0;
  int64_t segment_bytes = 1024LL * 1024 * 1024;  // Kafka's default segment.bytes
  bool unclean = false;
  bool drop_recovery_checkpoint = false;
  bool close_after = false;
  bool direct = false;  // log_config::direct_io: the O_DIRECT append path
};

int64_t parse_int(const char* text, const char* name) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 0) fail(std::string("bad value for ") + name + ": " + text);
  return v;
}

arguments parse(int argc, char** argv) {
  if (argc < 3) fail("usage: storage_bench append|fill|open|evict DIR [options] (see the source header)");
  arguments a;
  a.directory = argv[2];
  for (int i = 3; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--batch-bytes" && has_value) {
      a.batch_bytes = parse_int(argv[++i], "--batch-bytes");
    } else if (arg == "--flush-bytes" && has_value) {
      a.flush_bytes = parse_int(argv[++i], "--flush-bytes");
    } else if ((arg == "--total-bytes" || arg == "--bytes") && has_value) {
      a.total_bytes = parse_int(argv[++i], "--total-bytes");
    } else if (arg == "--seconds" && has_value) {
      a.seconds = static_cast<double>(parse_int(argv[++i], "--seconds"));
    } else if (arg == "--segment-bytes" && has_value) {
      a.segment_bytes = parse_int(argv[++i], "--segment-bytes");
    } else if (arg == "--unclean") {
      a.unclean = true;
    } else if (arg == "--drop-recovery-checkpoint") {
      a.drop_recovery_checkpoint = true;
    } else if (arg == "--close") {
      a.close_after = true;
    } else if (arg == "--direct") {
      a.direct = true;
    } else {
      fail("unknown argument " + std::string(arg));
    }
  }
  return a;
}

storage::log_config bench_config(const arguments& a) {
  storage::log_config config;
  config.segment_bytes = a.segment_bytes;
  config.max_message_bytes = bench_max_message_bytes;
  config.retention_ms = -1;
  config.direct_io = a.direct;
  return config;
}

/// One encoded batch of 1 KiB-value records, about `batch_bytes` long (at least one record).
model::bytes make_batch(int64_t batch_bytes) {
  const int64_t count = std::max<int64_t>(1, batch_bytes / static_cast<int64_t>(record_value_bytes));
  std::vector<model::record> records(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    auto& r = records[static_cast<size_t>(i)];
    r.timestamp = 1'700'000'000'000 + i;
    r.key = model::to_bytes("key-" + std::to_string(i));
    std::string value(record_value_bytes, 'a');
    for (size_t k = 0; k < value.size(); ++k) value[k] = static_cast<char>('a' + (k * 7 + static_cast<size_t>(i)) % 26);
    r.value = model::to_bytes(value);
  }
  auto batch = codec::encode_batch({}, records);
  check(batch, "encode_batch");
  return std::move(batch.value());
}

std::unique_ptr<storage::partition_log> open_log(io::file_system& fs, const arguments& a, const base::clock& clock) {
  auto log = storage::partition_log::open(fs, a.directory, bench_config(a), clock);
  check(log, "open " + a.directory);
  return std::move(log.value());
}

int run_append(const arguments& a) {
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  auto log = open_log(*fs, a, clock);
  const model::bytes batch = make_batch(a.batch_bytes);
  uint64_t appended = 0;
  uint64_t since_flush = 0;
  uint64_t batches = 0;
  uint64_t flushes = 0;
  const auto start = steady::now();
  while (appended < static_cast<uint64_t>(a.total_bytes) && seconds_since(start) < a.seconds) {
    auto r = log->append(batch, model::leader_epoch{0});
    check(r, "append");
    appended += r->size_bytes;
    since_flush += r->size_bytes;
    ++batches;
    if (a.flush_bytes > 0 && since_flush >= static_cast<uint64_t>(a.flush_bytes)) {
      check(log->flush(), "flush");
      ++flushes;
      since_flush = 0;
    }
  }
  const double append_s = seconds_since(start);
  check(log->flush(), "final flush");
  const double total_s = seconds_since(start);
  std::printf("mode=append batch_bytes=%zu flush_bytes=%lld batches=%llu flushes=%llu bytes=%llu "
              "seconds=%.3f mib_per_s=%.1f seconds_with_final_flush=%.3f mib_per_s_with_final_flush=%.1f\n",
              batch.size(), static_cast<long long>(a.flush_bytes), static_cast<unsigned long long>(batches),
              static_cast<unsigned long long>(flushes), static_cast<unsigned long long>(appended), append_s,
              static_cast<double>(appended) / mib / append_s, total_s,
              static_cast<double>(appended) / mib / total_s);
  check(log->close(), "close");
  return 0;
}

int run_fill(const arguments& a) {
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  auto log = open_log(*fs, a, clock);
  const model::bytes batch = make_batch(1024 * 1024);
  uint64_t appended = 0;
  const auto start = steady::now();
  while (appended < static_cast<uint64_t>(a.total_bytes)) {
    auto r = log->append(batch, model::leader_epoch{0});
    check(r, "append");
    appended += r->size_bytes;
    check(log->flush(), "flush");
  }
  std::printf("mode=fill bytes=%llu segments=%zu log_end_offset=%lld seconds=%.3f unclean=%d\n",
              static_cast<unsigned long long>(appended), log->segments().size(),
              static_cast<long long>(log->log_end_offset().value()), seconds_since(start), a.unclean ? 1 : 0);
  std::fflush(stdout);
  if (a.unclean) std::raise(SIGKILL);  // dies here: no close(), no clean-shutdown marker
  check(log->close(), "close");
  return 0;
}

int run_open(const arguments& a) {
  if (a.drop_recovery_checkpoint) std::filesystem::remove(a.directory + "/" + recovery_point_file);
  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  const auto start = steady::now();
  auto log = open_log(*fs, a, clock);
  const double open_s = seconds_since(start);
  const auto& report = log->last_recovery();
  std::printf("mode=open clean_shutdown=%d segments=%zu segments_scanned=%zu batches_scanned=%zu "
              "bytes_truncated=%llu bytes=%llu seconds=%.3f\n",
              report.clean_shutdown ? 1 : 0, log->segments().size(), report.segments_scanned,
              report.batches_scanned, static_cast<unsigned long long>(report.bytes_truncated),
              static_cast<unsigned long long>(log->size_bytes()), open_s);
  if (a.close_after) check(log->close(), "close");
  return 0;
}

int run_evict(const arguments& a) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(a.directory)) {
    if (!entry.is_regular_file()) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open " + entry.path().string());
    // Dirty pages cannot be dropped: write them back first.
    if (::fdatasync(fd) != 0) fail("fdatasync " + entry.path().string());
    if (::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) fail("posix_fadvise " + entry.path().string());
    ::close(fd);
    ++files;
  }
  std::printf("mode=evict files=%zu\n", files);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const arguments a = parse(argc, argv);
  const std::string_view command = argv[1];
  if (command == "append") return run_append(a);
  if (command == "fill") return run_fill(a);
  if (command == "open") return run_open(a);
  if (command == "evict") return run_evict(a);
  fail("unknown subcommand " + std::string(command));
}
