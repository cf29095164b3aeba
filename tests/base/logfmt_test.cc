#include <doctest.h>

#include "ringlog/base/logfmt.h"

using ringlog::base::logfmt_escaped;

TEST_CASE("logfmt_escaped escapes what would end or break a quoted value, and nothing else") {
  CHECK(logfmt_escaped("plain text 1.0") == "plain text 1.0");
  CHECK(logfmt_escaped(R"(unknown config key "bogus.key")") == R"(unknown config key \"bogus.key\")");
  CHECK(logfmt_escaped("a\\b") == "a\\\\b");
  CHECK(logfmt_escaped("line1\nline2\r") == "line1\\nline2\\r");
  CHECK(logfmt_escaped("") == "");
  // The breaker's t3_audit.py: a terminal escape in a client's topic name or client id.
  CHECK(logfmt_escaped(std::string("a\x1b[2J\tb\x7f") + '\0') == "a\\x1b[2J\\x09b\\x7f\\x00");
}
