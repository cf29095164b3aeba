#include <doctest.h>

#include "base64.h"

#include <random>
#include "http_util.h"
#include "response_budget.h"

using namespace ringlog::gateway;

TEST_CASE("base64 round trip and strictness") {
  CHECK(base64_encode(std::string_view("")) == "");
  CHECK(base64_encode(std::string_view("f")) == "Zg==");
  CHECK(base64_encode(std::string_view("fo")) == "Zm8=");
  CHECK(base64_encode(std::string_view("foo")) == "Zm9v");
  CHECK(base64_encode(std::string_view("foobar")) == "Zm9vYmFy");
  for (std::string_view s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    auto d = base64_decode(base64_encode(s));
    REQUIRE(d);
    CHECK(ringlog::model::to_string(*d) == s);
  }
  CHECK(base64_decode("Zg"));          // padding may be omitted
  CHECK_FALSE(base64_decode("Z"));     // impossible length
  CHECK_FALSE(base64_decode("Zm9v!"));
  CHECK_FALSE(base64_decode("Zm=v"));  // '=' in the middle
  CHECK(base64_decode("Zh==") == base64_decode("Zg=="));   // non-zero leftover bits are ignored, as Java does
  CHECK(base64_decode("QR==") == base64_decode("QQ=="));
  CHECK_FALSE(base64_decode("Zm9v YmFy"));
}

TEST_CASE("base64: the AVX2 encoder gives the portable encoder's text for every length and byte") {
  std::mt19937 rng(20261129);
  for (size_t n = 0; n <= 400; ++n) {
    ringlog::model::bytes data(n);
    for (auto& b : data) b = static_cast<std::byte>(rng());
    const std::string fast = base64_encode(data);
    CHECK(fast == base64_encode_portable(data));
    auto back = base64_decode(fast);
    REQUIRE(back);
    CHECK(*back == data);
  }
  std::string appended = "x";
  base64_encode_append(appended, std::span(reinterpret_cast<const std::byte*>("foobar"), 6));
  CHECK(appended == "xZm9vYmFy");
}

TEST_CASE("media types and negotiation") {
  CHECK(media_type_of("Application/JSON; charset=utf-8") == "application/json");
  CHECK(media_type_of("") == "");
  std::vector<std::string> offers = {"application/vnd.kafka.v2+json", "application/json"};
  CHECK(negotiate("", offers) == "application/vnd.kafka.v2+json");
  CHECK(negotiate("*/*", offers) == "application/vnd.kafka.v2+json");
  CHECK(negotiate("application/json", offers) == "application/json");
  CHECK(negotiate("text/html, application/*;q=0.5", offers) == "application/vnd.kafka.v2+json");
  CHECK(negotiate("application/vnd.kafka.v2+json;q=0.2, application/json", offers) == "application/json");
  CHECK_FALSE(negotiate("text/html", offers));
  CHECK_FALSE(negotiate("application/json;q=0", {"application/json"}));
  CHECK(negotiate("application/json;q=0, */*;q=0.1", {"application/json", "text/plain"}) == "text/plain");
}

TEST_CASE("latin1_to_utf8: ASCII stays, 0x80..0xFF become their two-byte UTF-8 code points") {
  CHECK(latin1_to_utf8("") == "");
  CHECK(latin1_to_utf8("{\"a\": 1}") == "{\"a\": 1}");
  CHECK(latin1_to_utf8("caf\xe9") == "caf\xc3\xa9");          // U+00E9
  CHECK(latin1_to_utf8("\x80\xbf\xc0\xff") == "\xc2\x80\xc2\xbf\xc3\x80\xc3\xbf");
  CHECK(latin1_to_utf8(std::string_view("a\0b", 3)) == std::string("a\0b", 3));
}

TEST_CASE("query strings and integers") {
  auto q = parse_query("offset=10&timeout=a%20b&x=+1&empty=");
  REQUIRE(q);
  CHECK((*q)["offset"] == "10");
  CHECK((*q)["timeout"] == "a b");
  CHECK((*q)["x"] == " 1");
  CHECK((*q)["empty"] == "");
  CHECK_FALSE(parse_query("a=%zz"));
  CHECK_FALSE(parse_query("a=%4"));
  CHECK(parse_int("42", 0, 100) == 42);
  CHECK_FALSE(parse_int("-1", 0, 100));
  CHECK_FALSE(parse_int("101", 0, 100));
  CHECK_FALSE(parse_int("1.5", 0, 100));
  CHECK_FALSE(parse_int(" 1", 0, 100));
  CHECK_FALSE(parse_int("+1", 0, 100));
  CHECK_FALSE(parse_int("99999999999999999999999", 0, INT64_MAX));
  CHECK_FALSE(parse_int("", 0, 100));
}

TEST_CASE("path templates") {
  std::map<std::string, std::string> p;
  CHECK(match_path("/topics/{topic}/partitions/{partition}", "/topics/a%2Eb/partitions/3", p));
  CHECK(p["topic"] == "a.b");
  CHECK(p["partition"] == "3");
  CHECK(match_path("/topics", "/topics/", p));
  CHECK_FALSE(match_path("/topics/{topic}", "/topics/", p));
  CHECK_FALSE(match_path("/topics/{topic}", "/topics/a/b", p));
  CHECK(match_path("/v3/clusters/{c}/topics/{t}/configs:alter", "/v3/clusters/x/topics/y/configs:alter", p));
  CHECK_FALSE(match_path("/v3/clusters/{c}/topics/{t}/configs:alter", "/v3/clusters/x/topics/y/configs", p));
  auto [path, query] = split_target("/a/b?x=1");
  CHECK(path == "/a/b");
  CHECK(query == "x=1");
}

TEST_CASE("an encoded path segment stays one segment and decodes back to every byte") {
  CHECK(percent_encode_segment("orders-1.v2_x~") == "orders-1.v2_x~");
  CHECK(percent_encode_segment("team/app") == "team%2Fapp");
  CHECK(percent_encode_segment("q?x#y %41") == "q%3Fx%23y%20%2541");
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
  const std::string encoded = percent_encode_segment(every_byte);
  CHECK(encoded.find_first_of("/?#") == std::string::npos);
  CHECK(percent_decode(encoded, false) == every_byte);
  std::map<std::string, std::string> p;
  CHECK(match_path("/consumers/{group}/instances/{instance}", "/consumers/" + encoded + "/instances/" +
                                                                    percent_encode_segment("a+b"), p));
  CHECK(p["group"] == every_byte);
  CHECK(p["instance"] == "a+b");
}

TEST_CASE("base64: the AVX2 decoder equals the portable one on valid and corrupted input") {
  std::mt19937_64 rng(20261129);
  for (size_t length = 0; length < 400; ++length) {
    std::string raw(length, '\0');
    for (auto& ch : raw) ch = static_cast<char>(rng());
    const std::string text = base64_encode(std::string_view(raw));
    auto fast = base64_decode(text);
    auto portable = base64_decode_portable(text);
    REQUIRE(fast.has_value());
    REQUIRE(fast == portable);
    REQUIRE(ringlog::model::to_string(*fast) == raw);
    // One bad character anywhere (outside the alphabet, or '=' inside) is refused by both.
    if (text.size() > 4) {
      for (char bad : {'=', '*', '-', '_', ' ', '\x80', '\xff', '\0'}) {
        std::string broken = text;
        broken[rng() % (text.size() - 3)] = bad;
        REQUIRE(base64_decode(broken) == base64_decode_portable(broken));
        REQUIRE(!base64_decode(broken).has_value());
      }
    }
  }
}

TEST_CASE("origin_allowed: * allows any origin, a list matches whole origins case-insensitively") {
  const std::vector<std::string> any = {"*"};
  CHECK(origin_allowed(any, "https://evil.example"));
  CHECK(origin_allowed(any, ""));
  const std::vector<std::string> list = {"https://app.example.com", "http://localhost:3000"};
  CHECK(origin_allowed(list, "https://app.example.com"));
  CHECK(origin_allowed(list, "HTTPS://App.Example.COM"));
  CHECK(origin_allowed(list, "http://localhost:3000"));
  CHECK_FALSE(origin_allowed(list, "http://localhost:3001"));
  CHECK_FALSE(origin_allowed(list, "https://app.example.com.evil.test"));
  CHECK_FALSE(origin_allowed(list, "null"));   // sandboxed frames and file:// pages
  CHECK_FALSE(origin_allowed(list, ""));
  CHECK_FALSE(origin_allowed({}, "https://app.example.com"));
}

TEST_CASE("etag_matches: If-None-Match lists, *, and weak comparison") {
  CHECK(etag_matches("\"ab12\"", "\"ab12\""));
  CHECK(etag_matches("*", "\"ab12\""));
  CHECK(etag_matches("\"x\", W/\"ab12\"", "\"ab12\""));
  CHECK(etag_matches(" \"x\" ,\t\"ab12\" ", "\"ab12\""));
  CHECK_FALSE(etag_matches("", "\"ab12\""));
  CHECK_FALSE(etag_matches("\"ab1\"", "\"ab12\""));
  CHECK_FALSE(etag_matches("ab12", "\"ab12\""));   // an unquoted tag is not the same tag
  CHECK_FALSE(etag_matches(",,", "\"ab12\""));
}

TEST_CASE("charset of a Content-Type (issue 14 item 14)") {
  CHECK(charset_of("application/json") == "");
  CHECK(charset_of("application/json; charset=UTF-8") == "utf-8");
  CHECK(charset_of("application/json;charset=\"ISO-8859-1\"") == "iso-8859-1");
  CHECK(charset_of("application/json; boundary=x; Charset = utf-16") == "utf-16");
  CHECK(charset_of("text/plain; charsetx=y") == "");
}

TEST_CASE("without_query_parameter drops every parameter of a name and keeps the rest as sent") {
  CHECK(without_query_parameter("/r", "access_token") == "/r");
  CHECK(without_query_parameter("/r?", "access_token") == "/r");
  CHECK(without_query_parameter("/r?access_token=t", "access_token") == "/r");
  CHECK(without_query_parameter("/r?timeout=5&access_token=t&max_bytes=9", "access_token") == "/r?timeout=5&max_bytes=9");
  CHECK(without_query_parameter("/r?access_token=a&access_token=b&x=%20", "access_token") == "/r?x=%20");
  CHECK(without_query_parameter("/r?access%5Ftoken=t&x=1", "access_token") == "/r?x=1");   // an escaped name too
  CHECK(without_query_parameter("/r?access_token", "access_token") == "/r");
  CHECK(without_query_parameter("/r?my_access_token=t&access_tokens=u", "access_token") ==
        "/r?my_access_token=t&access_tokens=u");
}

TEST_CASE("held_bytes_budget: holds up to the max together, one alone always, given back when dropped") {
  ringlog::gateway::held_bytes_budget budget(100);
  auto big = budget.hold(150);   // nothing held: one answer of any size passes
  REQUIRE(big);
  CHECK_FALSE(budget.hold(1));
  big.reset();
  CHECK(budget.held() == 0);
  auto a = budget.hold(60);
  auto a_copy = a;
  REQUIRE(a);
  CHECK_FALSE(budget.hold(41));
  auto b = budget.hold(40);
  CHECK(b);
  CHECK(budget.held() == 100);
  a.reset();   // a copy still holds
  CHECK(budget.held() == 100);
  a_copy.reset();
  b.reset();
  CHECK(budget.held() == 0);
}

TEST_CASE("host_permitted: addresses, localhost and the server's names pass; a rebound page's name does not") {
  const std::vector<std::string> names = {"broker-1", "Broker.Example.com"};
  CHECK(host_permitted(names, ""));                       // HTTP/1.0, no Host
  CHECK(host_permitted(names, "127.0.0.1:8082"));
  CHECK(host_permitted(names, "10.1.2.3"));
  CHECK(host_permitted(names, "[::1]:8082"));
  CHECK(host_permitted(names, "[::1]"));
  CHECK(host_permitted(names, "localhost:8082"));
  CHECK(host_permitted(names, "LOCALHOST."));
  CHECK(host_permitted(names, "app.localhost:3000"));     // RFC 6761: always loopback
  CHECK(host_permitted(names, "broker-1:8082"));
  CHECK(host_permitted(names, "broker.example.com.:8082"));
  // The breaker of session 31: a page at rebind.evil.example whose name now resolves here.
  CHECK(!host_permitted(names, "rebind.evil.example:8082"));
  CHECK(!host_permitted(names, "localhost.evil.example"));
  CHECK(!host_permitted(names, "127.0.0.1.evil.example"));
  CHECK(!host_permitted(names, "[::1"));
  CHECK(!host_permitted(names, "[not-an-address]:80"));
  CHECK(!host_permitted({}, "broker-1"));
  CHECK(host_permitted({"*"}, "anything.example"));
}

TEST_CASE("same_origin compares scheme, host and port (RFC 6454 section 5)") {
  CHECK(same_origin("http://127.0.0.1:8082", "127.0.0.1:8082", false));
  CHECK(same_origin("HTTPS://Broker:8443", "broker:8443", true));
  // Session 32: "ftp://x" with Host x counted as this server's own page.
  CHECK(!same_origin("ftp://127.0.0.1:8082", "127.0.0.1:8082", false));
  CHECK(!same_origin("https://127.0.0.1:8082", "127.0.0.1:8082", false));   // an https page is another origin
  CHECK(!same_origin("http://broker:8443", "broker:8443", true));
  CHECK(!same_origin("http://127.0.0.1:8082", "127.0.0.1:8083", false));
  CHECK(!same_origin("null", "127.0.0.1:8082", false));
}

TEST_CASE("origin_form: an absolute-form target of the listener's scheme gives its path and its authority (RFC 9112 3.2.2)") {
  using form = std::optional<std::pair<std::string, std::string>>;
  CHECK(origin_form("http://127.0.0.1:8082/v1/health", false) == form({"/v1/health", "127.0.0.1:8082"}));
  CHECK(origin_form("HTTP://Broker:8082/topics?x=1", false) == form({"/topics?x=1", "Broker:8082"}));
  CHECK(origin_form("http://broker:8082", false) == form({"/", "broker:8082"}));
  CHECK(origin_form("http://broker:8082?x", false) == form({"/?x", "broker:8082"}));
  CHECK(origin_form("https://broker:8443/v1/health", true) == form({"/v1/health", "broker:8443"}));
  CHECK_FALSE(origin_form("https://broker:8082/v1/health", false));   // not the listener's scheme
  CHECK_FALSE(origin_form("ftp://broker:8082/v1/health", false));
  CHECK_FALSE(origin_form("http:///v1/health", false));              // no authority
  CHECK_FALSE(origin_form("http://user@broker:8082/v1/health", false));   // userinfo
}
