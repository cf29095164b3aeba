// base::split_list (text.h): the one reader of comma-separated lists, for the config file's keys
// and the Kafka protocol's LIST config values.
#include "ringlog/base/text.h"

#include <doctest/doctest.h>

using ringlog::base::split_list;
using ringlog::base::trim_blanks;
using list = std::vector<std::string_view>;

TEST_CASE("split_list: items trimmed of blanks, empty ones kept in place, a blank list has none") {
  CHECK(split_list("compact, delete") == list{"compact", "delete"});
  CHECK(split_list(" a ,\tb\r,c\f") == list{"a", "b", "c"});
  CHECK(split_list("a,,b") == list{"a", "", "b"});
  CHECK(split_list("a,") == list{"a", ""});
  CHECK(split_list("").empty());
  CHECK(split_list(" \t ").empty());
  CHECK(trim_blanks("  x y \t") == "x y");
  CHECK(trim_blanks(" ").empty());
}
