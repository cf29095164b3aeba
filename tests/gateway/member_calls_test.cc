// A WebSocket member's group calls passed on to the coordinator (member_calls.h): the REST
// answers read back into the broker API's types, byte for byte, and REST errors mapped to the
// broker errors that give the member the same error_code it would get from a local call.

#include <doctest.h>

#include "errors.h"
#include "member_calls.h"
#include "record_json.h"

using namespace ringlog;
using namespace ringlog::gateway;

namespace {

http_response answer(unsigned status, std::string body) {
  http_response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace

TEST_CASE("records_of_rest_answer reads back what append_record_json wrote (binary format)") {
  model::record rec;
  rec.record_offset = model::offset{41};
  rec.timestamp = 1700000000123;
  rec.key = model::to_bytes("k\x01\xff");
  rec.value = model::to_bytes(std::string("v\0alue", 6));
  rec.headers.push_back({"h1", model::to_bytes("x")});
  rec.headers.push_back({"h2", std::nullopt});
  model::record tombstone;
  tombstone.record_offset = model::offset{42};
  tombstone.timestamp = 1700000000124;
  std::string body = "[";
  append_record_json(body, "", "\"orders\"", 3, rec, false);
  body += ',';
  append_record_json(body, "", "\"orders\"", 3, tombstone, false);
  body += "]";
  auto r = records_of_rest_answer(body);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].partition == model::topic_partition{"orders", model::partition_id{3}});
  CHECK((*r)[0].record == rec);
  CHECK((*r)[1].record == tombstone);
}

TEST_CASE("records_of_rest_answer refuses what it cannot read, naming it") {
  CHECK(records_of_rest_answer("{}").error().code == broker::errc::unknown_server_error);
  CHECK(records_of_rest_answer("[{\"topic\":\"t\",\"partition\":0}]").error().message.find("offset") != std::string::npos);
  auto bad = records_of_rest_answer("[{\"topic\":\"t\",\"partition\":0,\"offset\":7,\"value\":\"%%%\"}]");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("offset 7") != std::string::npos);
  CHECK(records_of_rest_answer("[]")->empty());
}

TEST_CASE("error_of_rest_answer keeps the error_code a local call would give") {
  const std::pair<unsigned, int> cases[] = {{404, error_codes::consumer_instance_not_found},
                                            {404, error_codes::group_not_found},
                                            {409, error_codes::illegal_state},
                                            {409, error_codes::consumer_already_exists},
                                            {503, error_codes::unavailable},
                                            {422, error_codes::invalid_consumer_config}};
  for (auto [status, code] : cases) {
    auto e = error_of_rest_answer(answer(status, "{\"error_code\":" + std::to_string(code) + ",\"message\":\"why\"}"));
    CHECK(e.message == "why");
    CHECK(to_api_error(e).error_code == code);
    CHECK(to_api_error(e).status == status);
  }
  // A 503 is retriable (the coordinator moves): a member keeps its membership and retries.
  CHECK(is_retriable(error_of_rest_answer(answer(503, "{\"error_code\":50301,\"message\":\"m\"}")).code));
  // Not JSON (a proxy's page): the status decides, the message says what came back.
  auto e = error_of_rest_answer(answer(502, "<html>"));
  CHECK(e.message.find("HTTP 502") != std::string::npos);
}
