#include "checkpoint.h"

#include <charconv>
#include <sstream>

namespace ringlog::storage {

std::string checkpoint_text(const checkpoint_entries& entries) {
  std::string text = "0\n" + std::to_string(entries.size()) + "\n";
  for (const auto& [key, value] : entries) text += key + " " + std::to_string(value) + "\n";
  return text;
}

result<void> write_checkpoint(io::file_system& fs, const std::string& path, const checkpoint_entries& entries) {
  const std::string text = checkpoint_text(entries);
  auto w = io::write_file_atomic(fs, path, std::as_bytes(std::span(text.data(), text.size())));
  if (!w.ok()) return storage_error(w.error());
  return base::ok_v;
}

result<checkpoint_entries> read_checkpoint(io::file_system& fs, const std::string& path) {
  auto bytes = io::read_whole_file(fs, path);
  if (!bytes.ok()) {
    if (bytes.error().code == io::errc::not_found) return checkpoint_entries{};
    return error{errc::kafka_storage_error, bytes.error().message};
  }
  std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  std::istringstream in(text);
  auto bad = [&](const std::string& why) { return error{errc::corrupt_checkpoint, "checkpoint " + path + ": " + why}; };
  std::string line;
  if (!std::getline(in, line) || line != "0") return bad("unknown version line '" + line + "'");
  if (!std::getline(in, line)) return bad("missing entry count");
  size_t count = 0;
  auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), count);
  if (ec != std::errc{} || p != line.data() + line.size()) return bad("bad entry count '" + line + "'");
  checkpoint_entries entries;
  for (size_t i = 0; i < count; ++i) {
    if (!std::getline(in, line)) return bad("expected " + std::to_string(count) + " entries");
    auto space = line.rfind(' ');
    if (space == std::string::npos) return bad("bad entry '" + line + "'");
    int64_t value = 0;
    auto [q, ec2] = std::from_chars(line.data() + space + 1, line.data() + line.size(), value);
    if (ec2 != std::errc{} || q != line.data() + line.size()) return bad("bad value in '" + line + "'");
    entries.emplace_back(line.substr(0, space), value);
  }
  return entries;
}

}  // namespace ringlog::storage
