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

TEST_CASE("logfmt_escaped keeps well-formed UTF-8 and escapes every byte that is not part of it") {
  CHECK(logfmt_escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  // The breaker of session 30: a damaged leader-epoch-checkpoint's raw bytes quoted in a log line.
  CHECK(logfmt_escaped("epoch '\xff\xfe'") == "epoch '\\xff\\xfe'");
  CHECK(logfmt_escaped("\xc3") == "\\xc3");                       // cut short at the end
  CHECK(logfmt_escaped("\xc3(") == "\\xc3(");                     // a continuation byte missing
  CHECK(logfmt_escaped("\x80 lone") == "\\x80 lone");             // a continuation byte alone
  CHECK(logfmt_escaped("\xc0\xaf") == "\\xc0\\xaf");              // overlong '/'
  CHECK(logfmt_escaped("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");     // overlong, three bytes
  CHECK(logfmt_escaped("\xed\xa0\x80") == "\\xed\\xa0\\x80");     // a surrogate
  CHECK(logfmt_escaped("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");   // above U+10FFFF
  CHECK(logfmt_escaped("\xf4\x8f\xbf\xbf") == "\xf4\x8f\xbf\xbf");   // U+10FFFF itself
}
