// `ringlog dump-log FILE... [--records]`: Kafka's kafka-dump-log.sh (DumpLogSegments) for
// ringlog's segment files, which use Kafka's formats byte for byte (design.md section 4). The
// line layout follows Kafka 3.x so the two outputs can be compared with diff:
//
//   .log        one line per batch (baseOffset ... isvalid), and with --records one "| offset: ..."
//               line per record (or "| offset: ... endTxnMarker: ..." for a control record)
//   .index      "offset: N position: P"   (N absolute = segment base offset + relative offset)
//   .timeindex  "timestamp: T offset: N"
//   .snapshot   producer state (storage/producer_state.h): "snapshotOffset: O producers: N
//               version: V", then one line per producer with its last append offset and retained
//               batches, "producerId: P producerEpoch: E ... lastAppendOffset: A batches: [...]" in
//               the spirit of Kafka's dump of producer snapshots
//
// A dump stops at the first torn or corrupt batch / index entry with a line saying where (file
// position) and why, the same place recovery would cut the segment.

#include "dump_log.h"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/codec/errc.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/file.h"
#include "ringlog/model/record.h"
#include "ringlog/storage/index.h"
#include "ringlog/storage/producer_state.h"

namespace ringlog::app {
namespace {

constexpr std::string_view usage_text =
    "usage: ringlog dump-log FILE... [--records]\n"
    "\n"
    "Prints the record batches of .log segment files, or the entries of .index and .timeindex\n"
    "files, in the layout of Kafka's kafka-dump-log.sh, or the idempotent producers of a\n"
    ".snapshot file.\n"
    "\n"
    "Options:\n"
    "  --records        also print every record of every batch (offset, CreateTime, keySize,\n"
    "                   valueSize, sequence, headers, key, payload). Keys, values and header\n"
    "                   values are printed as text when they are printable UTF-8 and do not start\n"
    "                   with \"0x\", otherwise as 0x followed by hex; an absent one as null.\n"
    "                   Aliases: --print-data-log, --deep-iteration (Kafka's names).\n"
    "  --files A,B,...  more files, comma-separated (Kafka's form).\n"
    "  --help           this text.\n"
    "\n"
    "A dump stops at the first torn or corrupt batch or index entry, with a line naming the file\n"
    "position and the reason. Exit status: 0 every file read to its end, 1 a file could not be\n"
    "read or is torn/corrupt, 2 usage error.\n";

/// Digits in a segment file name: the base offset, zero-padded (design.md section 4).
constexpr size_t segment_name_digits = 20;

enum class file_kind { log, offset_index, time_index, producer_snapshot, unknown };

struct options {
  bool records = false;
  std::vector<std::string> files;
};

enum class dump_status { complete, stopped };

void print(std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

file_kind kind_of(std::string_view path) {
  if (path.ends_with(".log")) return file_kind::log;
  if (path.ends_with(".timeindex")) return file_kind::time_index;
  if (path.ends_with(".index")) return file_kind::offset_index;
  if (path.ends_with(".snapshot")) return file_kind::producer_snapshot;
  return file_kind::unknown;
}

/// The base offset a segment file is named by ("00000000000000000042.log" -> 42), or nullopt.
std::optional<int64_t> base_offset_of(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find('.');
  if (dot != segment_name_digits) return std::nullopt;
  int64_t base = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + dot, base);
  if (ec != std::errc{} || end != name.data() + dot) return std::nullopt;
  return base;
}

std::string hex(std::span<const std::byte> data) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "0x";
  out.reserve(2 + data.size() * 2);
  for (std::byte b : data) {
    out.push_back(digits[std::to_integer<unsigned>(b) >> 4]);
    out.push_back(digits[std::to_integer<unsigned>(b) & 0xf]);
  }
  return out;
}

/// Length of the UTF-8 sequence starting with `lead` (1..4), or 0 for a byte that cannot lead.
size_t utf8_sequence_length(unsigned lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/// Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF) without C0/C1
/// control characters or DEL, so that a record prints on one line.
bool is_printable_utf8(std::span<const std::byte> data) {
  size_t i = 0;
  while (i < data.size()) {
    const unsigned lead = std::to_integer<unsigned>(data[i]);
    const size_t length = utf8_sequence_length(lead);
    if (length == 0 || i + length > data.size()) return false;
    uint32_t code_point = length == 1 ? lead : lead & (0x7fu >> length);
    for (size_t k = 1; k < length; ++k) {
      const unsigned next = std::to_integer<unsigned>(data[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code_point = (code_point << 6) | (next & 0x3f);
    }
    const bool overlong = (length == 3 && code_point < 0x800) || (length == 4 && code_point < 0x10000);
    const bool surrogate = code_point >= 0xd800 && code_point <= 0xdfff;
    const bool control = code_point < 0x20 || (code_point >= 0x7f && code_point <= 0x9f);
    if (overlong || surrogate || code_point > 0x10ffff || control) return false;
    i += length;
  }
  return true;
}

/// Text when printable UTF-8 not starting with "0x" (so hex output stays unambiguous), else hex.
std::string show_bytes(const std::optional<model::bytes>& data) {
  if (!data) return "null";
  const std::string_view text(reinterpret_cast<const char*>(data->data()), data->size());
  if (!text.starts_with("0x") && is_printable_utf8(*data)) return std::string(text);
  return hex(*data);
}

int64_t size_or_null(const std::optional<model::bytes>& data) {
  return data ? static_cast<int64_t>(data->size()) : -1;
}

std::string_view compression_name(model::compression c) {
  switch (c) {
    case model::compression::none: return "none";
    case model::compression::gzip: return "gzip";
    case model::compression::snappy: return "snappy";
    case model::compression::lz4: return "lz4";
    case model::compression::zstd: return "zstd";
  }
  return "unknown";
}

std::string_view bool_text(bool b) { return b ? "true" : "false"; }

/// Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from INT32_MAX to 0.
int32_t sequence_plus(int32_t base_sequence, int32_t delta) {
  if (base_sequence < 0) return -1;
  const int64_t sum = int64_t{base_sequence} + delta;
  return static_cast<int32_t>(sum > INT32_MAX ? sum - INT32_MAX - 1 : sum);
}

std::string_view timestamp_label(const codec::batch_header& h) {
  return h.timestamp_type() == model::timestamp_type::log_append_time ? "LogAppendTime" : "CreateTime";
}

std::string batch_line(const codec::batch_header& h, uint64_t position, bool valid) {
  const int32_t base_sequence = h.base_sequence.value();
  std::string line;
  line += "baseOffset: " + std::to_string(h.base_offset.value());
  line += " lastOffset: " + std::to_string(h.last_offset().value());
  line += " count: " + std::to_string(h.records_count);
  line += " baseSequence: " + std::to_string(base_sequence);
  line += " lastSequence: " + std::to_string(sequence_plus(base_sequence, h.last_offset_delta));
  line += " producerId: " + std::to_string(h.producer.value());
  line += " producerEpoch: " + std::to_string(h.producer_epoch_value.value());
  line += " partitionLeaderEpoch: " + std::to_string(h.partition_leader_epoch.value());
  line += " isTransactional: " + std::string(bool_text(h.is_transactional()));
  line += " isControl: " + std::string(bool_text(h.is_control()));
  // KIP-534: shown only when the cleaner set one (Kafka prints deleteHorizonMs for every batch).
  if (h.has_delete_horizon()) line += " deleteHorizonMs: " + std::to_string(h.delete_horizon_ms());
  line += " position: " + std::to_string(position);
  line += " " + std::string(timestamp_label(h)) + ": " + std::to_string(h.max_timestamp);
  line += " size: " + std::to_string(h.size_bytes());
  line += " magic: " + std::to_string(h.magic);
  line += " compresscodec: " + std::string(compression_name(h.compression()));
  line += " crc: " + std::to_string(h.crc);
  line += " isvalid: " + std::string(bool_text(valid));
  return line;
}

std::string headers_text(const std::vector<model::record_header>& headers) {
  std::string out = "[";
  for (size_t i = 0; i < headers.size(); ++i) {
    if (i > 0) out += ", ";
    out += headers[i].key + "=" + show_bytes(headers[i].value);
  }
  return out + "]";
}

std::string record_line(const codec::batch_header& h, const model::record& r) {
  const int32_t delta = static_cast<int32_t>(r.record_offset - h.base_offset);
  std::string line = "| offset: " + std::to_string(r.record_offset.value());
  line += " " + std::string(timestamp_label(h)) + ": " + std::to_string(r.timestamp);
  line += " keySize: " + std::to_string(size_or_null(r.key));
  line += " valueSize: " + std::to_string(size_or_null(r.value));
  line += " sequence: " + std::to_string(sequence_plus(h.base_sequence.value(), delta));
  line += " headers: " + headers_text(r.headers);
  if (h.is_control()) {
    auto marker = codec::decode_control_record(r);
    if (marker.ok()) {
      line += marker->type == codec::control_type::commit ? " endTxnMarker: COMMIT" : " endTxnMarker: ABORT";
      line += " coordinatorEpoch: " + std::to_string(marker->coordinator_epoch);
      return line;
    }
    line += " (control record not understood: " + marker.error().message + ")";
  }
  line += " key: " + show_bytes(r.key);
  line += " payload: " + show_bytes(r.value);
  return line;
}

void print_stop(uint64_t position, uint64_t file_size, const std::string& why) {
  print("Stopped at position " + std::to_string(position) + ": " + why + " (" +
        std::to_string(file_size - position) + " bytes from here to the end of the file not shown)");
}

std::string codec_reason(const codec::error& e) {
  return std::string(codec::to_string(e.code)) + ": " + e.message;
}

/// Reads exactly out.size() bytes at `position` (the caller checked the file is long enough).
bool read_exact(io::file& f, uint64_t position, std::span<std::byte> out, std::string* why) {
  auto n = f.read_at(model::file_position{position}, out);
  if (!n.ok()) {
    *why = "read failed: " + n.error().message;
    return false;
  }
  if (n.value() != out.size()) {
    *why = "file shrank while reading (" + std::to_string(n.value()) + " of " + std::to_string(out.size()) +
           " bytes read)";
    return false;
  }
  return true;
}

/// Prints the batch at `position` (and its records); returns its size, or nullopt after printing
/// why the dump stops there.
/// A line for offsets [from, to] that hold no record: what log compaction leaves (issue 17).
void print_gap(const char* prefix, int64_t from, int64_t to) {
  print(std::string(prefix) + "gap: offsets " + std::to_string(from) + "-" + std::to_string(to) + " (" +
        std::to_string(to - from + 1) + ") hold no record (removed by log compaction)");
}

/// `next_offset`: the offset after the previous batch's last one (-1 before the first batch);
/// a batch or record starting above it is preceded by a gap line.
std::optional<uint64_t> dump_batch(io::file& f, uint64_t position, uint64_t file_size, bool with_records,
                                   std::vector<std::byte>& buffer, int64_t& next_offset) {
  const uint64_t remaining = file_size - position;
  if (remaining < codec::batch_header_bytes) {
    print_stop(position, file_size, "torn batch: " + std::to_string(remaining) +
                                        " bytes left, fewer than a batch header (61 bytes)");
    return std::nullopt;
  }
  std::string why;
  buffer.resize(codec::batch_header_bytes);
  if (!read_exact(f, position, buffer, &why)) {
    print_stop(position, file_size, why);
    return std::nullopt;
  }
  auto header = codec::decode_header(buffer);
  if (!header.ok()) {
    print_stop(position, file_size, "corrupt batch header: " + codec_reason(header.error()));
    return std::nullopt;
  }
  const uint64_t size = header->size_bytes();
  if (size > remaining) {
    print_stop(position, file_size, "torn batch: its header says " + std::to_string(size) + " bytes, only " +
                                        std::to_string(remaining) + " are left");
    return std::nullopt;
  }
  buffer.resize(size);
  if (!read_exact(f, position, buffer, &why)) {
    print_stop(position, file_size, why);
    return std::nullopt;
  }
  auto valid = codec::validate_batch(buffer);
  if (next_offset >= 0 && header->base_offset.value() > next_offset) {
    print_gap("", next_offset, header->base_offset.value() - 1);
  }
  print(batch_line(header.value(), position, valid.ok()));
  if (!valid.ok()) {
    print_stop(position, file_size, "corrupt batch: " + codec_reason(valid.error()));
    return std::nullopt;
  }
  if (with_records) {
    auto records = codec::decode_records(buffer);
    if (!records.ok()) {
      print_stop(position, file_size, "corrupt records: " + codec_reason(records.error()));
      return std::nullopt;
    }
    int64_t expected = valid->base_offset.value();
    for (const auto& r : records.value()) {
      if (r.record_offset.value() > expected) print_gap("| ", expected, r.record_offset.value() - 1);
      print(record_line(valid.value(), r));
      expected = r.record_offset.value() + 1;
    }
    if (expected <= valid->last_offset().value()) print_gap("| ", expected, valid->last_offset().value());
  }
  next_offset = header->last_offset().value() + 1;
  return size;
}

dump_status dump_segment(io::file& f, std::optional<int64_t> base, bool with_records) {
  print("Log starting offset: " + (base ? std::to_string(*base) : std::string("unknown (not a segment file name)")));
  auto file_size = f.size();
  if (!file_size.ok()) {
    print("Cannot read " + f.path() + ": " + file_size.error().message);
    return dump_status::stopped;
  }
  std::vector<std::byte> buffer;
  uint64_t position = 0;
  int64_t next_offset = base.value_or(-1);
  while (position < file_size.value()) {
    auto size = dump_batch(f, position, file_size.value(), with_records, buffer, next_offset);
    if (!size) return dump_status::stopped;
    position += *size;
  }
  return dump_status::complete;
}

/// Index files hold whole fixed-size entries; a remainder is a torn write.
bool check_torn_entry(size_t file_size, size_t entry_bytes) {
  const size_t tail = file_size % entry_bytes;
  if (tail == 0) return true;
  const size_t position = file_size - tail;
  print_stop(position, file_size, "torn entry: " + std::to_string(tail) + " bytes, fewer than an entry (" +
                                      std::to_string(entry_bytes) + " bytes)");
  return false;
}

dump_status dump_offset_index(std::span<const std::byte> bytes, int64_t base) {
  constexpr size_t entry_bytes = 8;  // storage/index.h
  const auto entries = storage::decode_offset_index(bytes);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (i > 0 && (e.relative_offset <= entries[i - 1].relative_offset ||
                  e.file_position <= entries[i - 1].file_position)) {
      print_stop(i * entry_bytes, bytes.size(),
                 "corrupt entry: offset " + std::to_string(base + e.relative_offset) + " position " +
                     std::to_string(e.file_position) + " does not increase over the previous entry");
      return dump_status::stopped;
    }
    print("offset: " + std::to_string(base + e.relative_offset) + " position: " + std::to_string(e.file_position));
  }
  return check_torn_entry(bytes.size(), entry_bytes) ? dump_status::complete : dump_status::stopped;
}

dump_status dump_time_index(std::span<const std::byte> bytes, int64_t base) {
  constexpr size_t entry_bytes = 12;  // storage/index.h
  const auto entries = storage::decode_time_index(bytes);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (i > 0 && (e.timestamp <= entries[i - 1].timestamp || e.relative_offset < entries[i - 1].relative_offset)) {
      print_stop(i * entry_bytes, bytes.size(),
                 "corrupt entry: timestamp " + std::to_string(e.timestamp) + " offset " +
                     std::to_string(base + e.relative_offset) + " does not increase over the previous entry");
      return dump_status::stopped;
    }
    print("timestamp: " + std::to_string(e.timestamp) + " offset: " + std::to_string(base + e.relative_offset));
  }
  return check_torn_entry(bytes.size(), entry_bytes) ? dump_status::complete : dump_status::stopped;
}

dump_status dump_index_file(io::file_system& fs, const std::string& path, file_kind kind) {
  const auto base = base_offset_of(path);
  if (!base) {
    print("Cannot dump " + path + ": the name is not a 20-digit base offset, so offsets are unknown");
    return dump_status::stopped;
  }
  auto bytes = io::read_whole_file(fs, path);
  if (!bytes.ok()) {
    print("Cannot read " + path + ": " + bytes.error().message);
    return dump_status::stopped;
  }
  return kind == file_kind::offset_index ? dump_offset_index(bytes.value(), *base)
                                         : dump_time_index(bytes.value(), *base);
}

/// A producer snapshot: its offset, then one line per producer and its retained batches.
dump_status dump_producer_snapshot(io::file_system& fs, const std::string& path) {
  auto bytes = io::read_whole_file(fs, path);
  if (!bytes.ok()) {
    print("Cannot read " + path + ": " + bytes.error().message);
    return dump_status::stopped;
  }
  auto decoded = storage::producer_state::decode_snapshot(bytes.value());
  if (!decoded.ok()) {
    print("Cannot dump " + path + ": " + decoded.error().message);
    return dump_status::stopped;
  }
  // The version is the file's first two bytes, big-endian (producer_state.h); decode checked it.
  const auto& raw = bytes.value();
  const int version = (std::to_integer<int>(raw[0]) << 8) | std::to_integer<int>(raw[1]);
  std::string header = "snapshotOffset: " + std::to_string(decoded->first.value()) +
                       " producers: " + std::to_string(decoded->second.producers().size()) +
                       " version: " + std::to_string(version);
  if (version < storage::producer_snapshot_version) {
    header += " (no lastAppendOffset before version " + std::to_string(storage::producer_snapshot_version) +
              ": shown as read, the newest retained batch's last offset or -1)";
  }
  print(header);
  for (const auto& [id, entry] : decoded->second.producers()) {
    std::string line = "producerId: " + std::to_string(id) + " producerEpoch: " + std::to_string(entry.epoch.value()) +
                       " lastTimestamp: " + std::to_string(entry.last_timestamp()) +
                       " lastAppendOffset: " + std::to_string(entry.last_append_offset) + " batches:";
    for (const auto& b : entry.batches) {
      line += " [firstSequence: " + std::to_string(b.first_sequence.value()) +
              " lastSequence: " + std::to_string(b.last_sequence.value()) +
              " baseOffset: " + std::to_string(b.base_offset.value()) +
              " lastOffset: " + std::to_string(b.last_offset.value()) + "]";
    }
    print(line);
  }
  return dump_status::complete;
}

dump_status dump_file(io::file_system& fs, const std::string& path, bool with_records) {
  print("Dumping " + path);
  const file_kind kind = kind_of(path);
  if (kind == file_kind::unknown) {
    print("Cannot dump " + path + ": not a .log, .index, .timeindex or .snapshot file");
    return dump_status::stopped;
  }
  if (kind == file_kind::producer_snapshot) return dump_producer_snapshot(fs, path);
  if (kind != file_kind::log) return dump_index_file(fs, path, kind);
  auto f = fs.open(path, io::open_mode::read_only);
  if (!f.ok()) {
    print("Cannot open " + path + ": " + f.error().message);
    return dump_status::stopped;
  }
  return dump_segment(*f.value(), base_offset_of(path), with_records);
}

void add_comma_separated(std::string_view list, std::vector<std::string>& out) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

enum class parse_outcome { run, help, usage_error };

parse_outcome parse_arguments(int argc, char** argv, options& out) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") return parse_outcome::help;
    if (arg == "--records" || arg == "--print-data-log" || arg == "--deep-iteration") {
      out.records = true;
    } else if (arg == "--files" && i + 1 < argc) {
      add_comma_separated(argv[++i], out.files);
    } else if (arg.starts_with("--files=")) {
      add_comma_separated(arg.substr(8), out.files);
    } else if (arg.starts_with("-") && arg != "-") {
      std::fprintf(stderr, "dump-log: unknown option %s\n", argv[i]);
      return parse_outcome::usage_error;
    } else {
      out.files.emplace_back(arg);
    }
  }
  if (out.files.empty()) {
    std::fputs("dump-log: no FILE given\n", stderr);
    return parse_outcome::usage_error;
  }
  return parse_outcome::run;
}

}  // namespace

int dump_log_main(int argc, char** argv) {
  options opts;
  switch (parse_arguments(argc, argv, opts)) {
    case parse_outcome::help:
      std::fwrite(usage_text.data(), 1, usage_text.size(), stdout);
      return 0;
    case parse_outcome::usage_error:
      std::fwrite(usage_text.data(), 1, usage_text.size(), stderr);
      return 2;
    case parse_outcome::run:
      break;
  }
  auto fs = io::make_posix_file_system();
  bool all_complete = true;
  for (const auto& path : opts.files) {
    if (dump_file(*fs, path, opts.records) != dump_status::complete) all_complete = false;
  }
  std::fflush(stdout);
  return all_complete ? 0 : 1;
}

}  // namespace ringlog::app
