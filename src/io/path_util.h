#pragma once
// Path helpers shared by the file systems (private to io). Paths are plain strings; no
// normalisation beyond what each function says.

#include <string>
#include <string_view>

namespace ringlog::io::detail {

/// The directory that holds `path`: "dir/name" -> "dir", "name" -> ".", "/name" -> "/".
/// Trailing slashes of `path` are ignored.
inline std::string parent_directory(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') {
    path.remove_suffix(1);
  }
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return ".";
  }
  if (slash == 0) {
    return "/";
  }
  return std::string(path.substr(0, slash));
}

}  // namespace ringlog::io::detail
