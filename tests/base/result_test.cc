#include <doctest.h>

#include "ringlog/base/result.h"
#include "ringlog/model/types.h"

using namespace ringlog;

enum class test_errc { bad };
using test_result = base::result<int, base::error<test_errc>>;

static test_result half(int v) {
  if (v % 2 != 0) return base::error<test_errc>{test_errc::bad, "odd value " + std::to_string(v)};
  return v / 2;
}

TEST_CASE("result carries a value or a named error") {
  auto a = half(4);
  REQUIRE(a.ok());
  CHECK(a.value() == 2);
  auto b = half(3);
  REQUIRE(!b.ok());
  CHECK(b.error().message == "odd value 3");
}

TEST_CASE("strong types do not mix and compare by value") {
  model::offset o{5};
  CHECK(o + 1 == model::offset{6});
  CHECK(model::offset{7} - o == 2);
  CHECK(model::offset{1} < model::offset{2});
}
