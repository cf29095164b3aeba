#pragma once
// The browser console's files (web-console/src), embedded into the binary at build time by
// web-console/embed_console.py, so `ringlog serve` serves /console with nothing installed beside it.

#include <span>
#include <string_view>

namespace ringlog::gateway {

struct console_file {
  std::string_view name;           // "index.html": served at /console/<name>
  std::string_view content_type;   // "text/javascript; charset=utf-8"
  std::string_view etag;           // strong, quoted: "\"9f86d081884c7d65\"" (SHA-256 prefix of bytes)
  std::string_view bytes;
};

/// Every console file, sorted by name (the generated console_files.cc).
std::span<const console_file> console_files();

}  // namespace ringlog::gateway
