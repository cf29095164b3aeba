#include <doctest.h>

#include "ringlog/base/logfmt.h"

using ringlog::base::logfmt_escaped;

TEST_CASE("logfmt_escaped escapes what would end or break a quoted value, and nothing else") {
  CHECK(logfmt_escaped("plain text 1.0") == "plain text 1.0");
  CHECK(logfmt_escaped(R"(unknown config key "bogus.key")") == R"(unknown config key \"bogus.key\")");
  CHECK(logfmt_escaped("a\\b") == "a\\\\b");
  CHECK(logfmt_escaped("line1\nline2\r") == "line1\\nline2\\r");
  CHECK(logfmt_escaped("") == "");
}
