#pragma once
// Helpers shared by the io tests: byte/string conversion and a temporary directory.

#include <stdlib.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ringlog::io::test {

inline std::vector<std::byte> bytes(std::string_view text) {
  std::vector<std::byte> out(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    out[i] = static_cast<std::byte>(text[i]);
  }
  return out;
}

inline std::string text(const std::vector<std::byte>& data, size_t count) {
  std::string out(count, '\0');
  for (size_t i = 0; i < count; ++i) {
    out[i] = static_cast<char>(data[i]);
  }
  return out;
}

inline std::string text(const std::vector<std::byte>& data) { return text(data, data.size()); }

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope exit.
class temp_directory {
 public:
  temp_directory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ringlog-io-XXXXXX").string();
    const char* made = ::mkdtemp(pattern.data());
    if (made == nullptr) {
      throw std::filesystem::filesystem_error("mkdtemp", std::error_code(errno, std::generic_category()));
    }
    path_ = made;
  }
  ~temp_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_directory(const temp_directory&) = delete;
  temp_directory& operator=(const temp_directory&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace ringlog::io::test
