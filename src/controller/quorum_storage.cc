#include "ringlog/controller/quorum_storage.h"

#include <algorithm>
#include <cstdlib>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "ringlog/base/assert.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/controller/quorum_wire.h"

namespace ringlog::controller {

namespace {

constexpr std::string_view snapshot_suffix = ".checkpoint";
/// Bytes of the metadata log read per call while loading it at start.
constexpr size_t load_read_bytes = 1024 * 1024;

error storage_failure(std::string message) { return error{errc::kafka_storage_error, std::move(message)}; }

std::optional<int64_t> parse_digits(std::string_view text) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

/// The integer after "key": in a flat JSON object (our own quorum-state layout).
result<int64_t> json_int(std::string_view text, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":";
  const auto at = text.find(needle);
  if (at == std::string_view::npos) return storage_failure("quorum-state: field " + std::string(key) + " missing");
  size_t start = at + needle.size();
  while (start < text.size() && text[start] == ' ') ++start;
  size_t end = start;
  while (end < text.size() && (text[end] == '-' || (text[end] >= '0' && text[end] <= '9'))) ++end;
  auto v = parse_digits(text.substr(start, end - start));
  if (!v) return storage_failure("quorum-state: field " + std::string(key) + " is not an integer");
  return *v;
}

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

std::string snapshot_file_name(raft::offset_and_epoch id) {
  char name[64];
  std::snprintf(name, sizeof name, "%020lld-%010d.checkpoint", static_cast<long long>(id.end_offset.value()),
                id.epoch.value());
  return name;
}

std::optional<raft::offset_and_epoch> parse_snapshot_file_name(std::string_view name) {
  if (name.size() != 20 + 1 + 10 + snapshot_suffix.size() || !name.ends_with(snapshot_suffix) || name[20] != '-') {
    return std::nullopt;
  }
  auto end = parse_digits(name.substr(0, 20));
  auto epoch = parse_digits(name.substr(21, 10));
  if (!end || !epoch || *end < 0 || *epoch < 0 || *epoch > INT32_MAX) return std::nullopt;
  return raft::offset_and_epoch{raft::offset{*end}, raft::leader_epoch{static_cast<int32_t>(*epoch)}};
}

std::string quorum_state_json(const raft::quorum_state& state, std::string_view cluster_id,
                              const std::vector<raft::node_id>& voters) {
  std::string out = "{\"clusterId\":\"" + std::string(cluster_id) + "\",\"leaderId\":" +
                    std::to_string(state.leader_id.value()) + ",\"leaderEpoch\":" + std::to_string(state.epoch.value()) +
                    ",\"votedId\":" + std::to_string(state.voted_id.value()) + ",\"appliedOffset\":0,\"currentVoters\":[";
  for (size_t i = 0; i < voters.size(); ++i) {
    if (i > 0) out += ",";
    out += "{\"voterId\":" + std::to_string(voters[i].value()) + "}";
  }
  out += "],\"data_version\":0}";
  return out;
}

result<raft::quorum_state> parse_quorum_state_json(std::string_view text) {
  auto epoch = json_int(text, "leaderEpoch");
  if (!epoch.ok()) return epoch.error();
  auto leader = json_int(text, "leaderId");
  if (!leader.ok()) return leader.error();
  auto voted = json_int(text, "votedId");
  if (!voted.ok()) return voted.error();
  if (*epoch < 0 || *epoch > INT32_MAX || *leader < -1 || *leader > INT32_MAX || *voted < -1 || *voted > INT32_MAX) {
    return storage_failure("quorum-state: leaderEpoch, leaderId or votedId out of range");
  }
  raft::quorum_state qs;
  qs.epoch = raft::leader_epoch{static_cast<int32_t>(*epoch)};
  qs.leader_id = raft::node_id{static_cast<int32_t>(*leader)};
  qs.voted_id = raft::node_id{static_cast<int32_t>(*voted)};
  return qs;
}

result<std::unique_ptr<quorum_storage>> quorum_storage::open(io::file_system& fs, const std::string& log_dir,
                                                             const base::clock& clock, std::string cluster_id,
                                                             std::vector<raft::node_id> voters) {
  std::unique_ptr<quorum_storage> s(
      new quorum_storage(fs, log_dir + "/" + std::string(metadata_log_directory), std::move(cluster_id), std::move(voters)));
  RINGLOG_TRY(s->load(clock));
  return s;
}

quorum_storage::~quorum_storage() = default;

result<void> quorum_storage::load(const base::clock& clock) {
  if (auto made = fs_.make_directories(directory_); !made.ok()) return storage_failure(made.error().message);

  // 1. quorum-state
  const std::string qs_path = directory_ + "/" + std::string(quorum_state_file);
  if (fs_.exists(qs_path)) {
    auto text = io::read_whole_file(fs_, qs_path);
    if (!text.ok()) return storage_failure(text.error().message);
    auto qs = parse_quorum_state_json(
        std::string_view(reinterpret_cast<const char*>(text->data()), text->size()));
    if (!qs.ok()) return storage_failure(qs_path + ": " + qs.error().message);
    loaded_.state.quorum = *qs;
    loaded_.had_quorum_state_file = true;
    // The voters are fixed for the life of the metadata log (no KIP-853 reconfiguration yet): a
    // node restarted with another controller.quorum.voters could elect itself among different
    // voters, two leaders in one epoch. Refuse it, naming both sets.
    const std::string_view json(reinterpret_cast<const char*>(text->data()), text->size());
    std::vector<int32_t> recorded;
    for (size_t at = json.find("\"voterId\":"); at != std::string_view::npos; at = json.find("\"voterId\":", at + 1)) {
      recorded.push_back(std::atoi(std::string(json.substr(at + 10, 12)).c_str()));
    }
    std::vector<int32_t> configured;
    for (const auto& v : voters_) configured.push_back(v.value());
    std::sort(recorded.begin(), recorded.end());
    std::sort(configured.begin(), configured.end());
    if (!recorded.empty() && recorded != configured) {
      auto text_of = [](const std::vector<int32_t>& ids) {
        std::string out;
        for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
        return out;
      };
      return error{errc::invalid_record, qs_path + " records the voters " + text_of(recorded) +
                                             " but controller.quorum.voters names " + text_of(configured) +
                                             ": a node keeps the voters its metadata log was written with"};
    }
  }

  // 2. the newest snapshot that reads back whole
  auto names = fs_.list_directory(directory_);
  if (!names.ok()) return storage_failure(names.error().message);
  std::vector<raft::offset_and_epoch> snapshots;
  for (const auto& name : names.value()) {
    if (auto id = parse_snapshot_file_name(name)) snapshots.push_back(*id);
  }
  std::sort(snapshots.begin(), snapshots.end());
  while (!snapshots.empty()) {
    auto payload = read_snapshot(snapshots.back());
    if (payload.ok()) {
      loaded_.state.snapshot_id = snapshots.back();
      loaded_.state.snapshot_payload = std::move(payload).value();
      break;
    }
    snapshots.pop_back();  // written with write_file_atomic, so only a damaged disk gets here
  }
  const raft::offset snapshot_end = loaded_.state.snapshot_id.end_offset;

  // 3. the log
  storage::log_config config;
  config.retention_ms = -1;  // only snapshots shorten the metadata log
  config.max_message_bytes = 8 * 1024 * 1024;
  auto log = storage::partition_log::open(fs_, directory_, config, clock);
  if (!log.ok()) return storage_failure(log.error().message);
  log_ = std::move(log).value();
  if (log_->log_end_offset() < snapshot_end) {
    // A snapshot install cut short by a crash: the snapshot is durable, the old log is not wanted.
    if (auto reset = log_->truncate_fully_and_start_at(snapshot_end); !reset.ok()) {
      return storage_failure(reset.error().message);
    }
  }
  if (log_->log_start_offset() > snapshot_end) {
    return storage_failure(directory_ + ": the log starts at " + std::to_string(log_->log_start_offset().value()) +
                           " above the newest snapshot's end offset " + std::to_string(snapshot_end.value()));
  }
  raft::offset at = snapshot_end;
  while (at < log_->log_end_offset()) {
    auto read = log_->read(at, load_read_bytes, log_->log_end_offset());
    if (!read.ok()) return storage_failure(read.error().message);
    auto entries = quorum_wire::decode_entries(read->batches);
    if (!entries.ok()) return storage_failure(directory_ + ": " + entries.error().message);
    for (auto& d : *entries) {
      if (d.entry.offset_ < at) continue;  // the first batch may start below `at`
      RINGLOG_ASSERT_OP(d.entry.offset_.value(), ==, at.value());
      if (d.legacy_key) loaded_.legacy_keys.emplace(d.entry.offset_.value(), std::move(*d.legacy_key));
      loaded_.state.entries.push_back(std::move(d.entry));
      at = at + 1;
    }
    RINGLOG_ASSERT_OP(read->next_offset.value(), >=, at.value());
    at = read->next_offset;
  }
  return base::ok_v;
}

result<void> quorum_storage::write_quorum_state(const raft::quorum_state& state) {
  const std::string text = quorum_state_json(state, cluster_id_, voters_);
  auto written = io::write_file_atomic(fs_, directory_ + "/" + std::string(quorum_state_file), as_bytes(text));
  if (!written.ok()) return storage_failure(written.error().message);
  return base::ok_v;
}

result<void> quorum_storage::append(std::span<const raft::entry> entries, int64_t now_ms) {
  if (entries.empty()) return base::ok_v;
  RINGLOG_ASSERT_OP(entries.front().offset_.value(), ==, log_->log_end_offset().value());
  // One batch per entry: raft truncates at any offset (a diverging suffix), and the log cuts
  // only at batch boundaries, so an entry must never share a batch with the one before it.
  for (const auto& e : entries) {
    auto batch = quorum_wire::encode_entries(std::span<const raft::entry>(&e, 1), now_ms);
    if (!batch.ok()) return batch.error();
    auto appended = log_->append(std::move(batch).value(), e.epoch);
    if (!appended.ok()) return storage_failure(appended.error().message);
    RINGLOG_ASSERT_OP(appended->base_offset.value(), ==, e.offset_.value());
  }
  return base::ok_v;
}

void quorum_storage::flush_async(io::disk_executor& executor, std::function<void(result<void>)> done) {
  log_->flush_async(executor, [done = std::move(done)](storage::result<void> r) {
    if (!r.ok()) {
      done(storage_failure(r.error().message));
      return;
    }
    done(base::ok_v);
  });
}

result<void> quorum_storage::flush() {
  auto r = log_->flush();
  if (!r.ok()) return storage_failure(r.error().message);
  return base::ok_v;
}

result<void> quorum_storage::truncate_suffix(raft::offset end) {
  auto r = log_->truncate_to(end);
  if (!r.ok()) return storage_failure(r.error().message);
  return base::ok_v;
}

result<void> quorum_storage::save_snapshot(raft::offset_and_epoch id, const raft::bytes& payload) {
  model::bytes contents;
  size_t position = 0;
  int64_t index = 0;
  do {
    const size_t n = std::min(snapshot_record_bytes_max, payload.size() - position);
    model::record r;
    r.value = model::bytes(n);
    std::transform(payload.begin() + static_cast<std::ptrdiff_t>(position),
                   payload.begin() + static_cast<std::ptrdiff_t>(position + n), r.value->begin(),
                   [](uint8_t b) { return std::byte{b}; });
    codec::batch_options options;
    options.base_offset = model::offset{index++};
    options.partition_leader_epoch = id.epoch;
    auto batch = codec::encode_batch(options, std::span<const model::record>(&r, 1));
    if (!batch.ok()) return storage_failure("snapshot " + snapshot_file_name(id) + ": " + batch.error().message);
    contents.insert(contents.end(), batch->begin(), batch->end());
    position += n;
  } while (position < payload.size());
  auto written = io::write_file_atomic(fs_, directory_ + "/" + snapshot_file_name(id), contents);
  if (!written.ok()) return storage_failure(written.error().message);
  return base::ok_v;
}

result<raft::bytes> quorum_storage::read_snapshot(raft::offset_and_epoch id) {
  const std::string path = directory_ + "/" + snapshot_file_name(id);
  auto contents = io::read_whole_file(fs_, path);
  if (!contents.ok()) return storage_failure(contents.error().message);
  raft::bytes payload;
  std::span<const std::byte> rest(*contents);
  while (!rest.empty()) {
    auto header = codec::decode_header(rest);
    if (!header.ok() || header->size_bytes() > rest.size()) return storage_failure(path + ": a batch is cut or damaged");
    auto records = codec::decode_records(rest.subspan(0, header->size_bytes()));
    if (!records.ok()) return storage_failure(path + ": " + records.error().message);
    for (const auto& r : *records) {
      if (!r.value) continue;
      for (auto b : *r.value) payload.push_back(static_cast<uint8_t>(b));
    }
    rest = rest.subspan(header->size_bytes());
  }
  if (contents->empty()) return storage_failure(path + ": empty");
  return payload;
}

result<void> quorum_storage::install_snapshot(raft::offset_and_epoch id, const raft::bytes& payload) {
  RINGLOG_TRY(save_snapshot(id, payload));
  auto reset = log_->truncate_fully_and_start_at(id.end_offset);
  if (!reset.ok()) return storage_failure(reset.error().message);
  return delete_prefix(id.end_offset);
}

result<void> quorum_storage::delete_prefix(raft::offset log_start_offset) {
  auto advanced = log_->advance_log_start_offset(std::min(log_start_offset, log_->log_end_offset()));
  if (!advanced.ok()) return storage_failure(advanced.error().message);
  // Snapshots older than the one that starts the log are not needed any more.
  auto names = fs_.list_directory(directory_);
  if (!names.ok()) return storage_failure(names.error().message);
  bool removed = false;
  for (const auto& name : names.value()) {
    auto id = parse_snapshot_file_name(name);
    if (id && id->end_offset < log_start_offset) {
      (void)fs_.remove(directory_ + "/" + name);
      removed = true;
    }
  }
  if (removed) {
    if (auto synced = fs_.sync_directory(directory_); !synced.ok()) return storage_failure(synced.error().message);
  }
  return base::ok_v;
}

result<void> quorum_storage::close() {
  auto r = log_->close();
  if (!r.ok()) return storage_failure(r.error().message);
  return base::ok_v;
}

}  // namespace ringlog::controller
