// The needs grammar of the route table and the ACL host of a peer (issue 30, authorization.h).
#include "authorization.h"

#include <doctest/doctest.h>

using namespace ringlog;
using namespace ringlog::gateway;
using security::acl_operation;
using security::resource_type;

TEST_CASE("route needs: none, path parameters, the cluster, body and listed names") {
  auto none = parse_route_needs("none");
  REQUIRE(none.has_value());
  CHECK(none->empty());

  auto needs = parse_route_needs("READ GROUP:{group}; READ TOPIC:body");
  REQUIRE(needs.has_value());
  REQUIRE(needs->size() == 2);
  CHECK((*needs)[0].any_of[0].operation == acl_operation::read);
  CHECK((*needs)[0].any_of[0].resource == resource_type::group);
  CHECK((*needs)[0].any_of[0].from == route_need::source::path);
  CHECK((*needs)[0].any_of[0].param == "group");
  CHECK((*needs)[1].any_of[0].resource == resource_type::topic);
  CHECK((*needs)[1].any_of[0].from == route_need::source::body);

  auto cluster = parse_route_needs("DESCRIBE_CONFIGS CLUSTER:kafka-cluster");
  REQUIRE(cluster.has_value());
  CHECK((*cluster)[0].any_of[0].operation == acl_operation::describe_configs);
  CHECK((*cluster)[0].any_of[0].from == route_need::source::cluster);

  auto listed = parse_route_needs("DESCRIBE TRANSACTIONAL_ID:listed");
  REQUIRE(listed.has_value());
  CHECK((*listed)[0].any_of[0].resource == resource_type::transactional_id);
  CHECK((*listed)[0].any_of[0].from == route_need::source::listed);
}

TEST_CASE("route needs: alternatives, any one of which is enough") {
  auto either = parse_route_needs("DELETE TOPIC:{topic_name} | DELETE CLUSTER:kafka-cluster; READ GROUP:body");
  REQUIRE(either.has_value());
  REQUIRE(either->size() == 2);
  REQUIRE((*either)[0].any_of.size() == 2);
  CHECK((*either)[0].any_of[0].operation == acl_operation::delete_);
  CHECK((*either)[0].any_of[0].from == route_need::source::path);
  CHECK((*either)[0].any_of[0].param == "topic_name");
  CHECK((*either)[0].any_of[1].resource == resource_type::cluster);
  CHECK((*either)[0].any_of[1].from == route_need::source::cluster);
  REQUIRE((*either)[1].any_of.size() == 1);
  CHECK((*either)[1].any_of[0].from == route_need::source::body);
}

TEST_CASE("route needs: malformed texts are refused") {
  CHECK_FALSE(parse_route_needs("").has_value());                       // say "none"
  CHECK_FALSE(parse_route_needs("READ").has_value());                   // no resource
  CHECK_FALSE(parse_route_needs("FLY TOPIC:{topic}").has_value());      // no such operation
  CHECK_FALSE(parse_route_needs("READ PLANET:{topic}").has_value());    // no such resource type
  CHECK_FALSE(parse_route_needs("READ TOPIC:orders").has_value());      // a fixed topic name
  CHECK_FALSE(parse_route_needs("READ TOPIC:kafka-cluster").has_value());   // only the cluster is kafka-cluster
  CHECK_FALSE(parse_route_needs("READ TOPIC:{topic};").has_value());    // an empty need
  CHECK_FALSE(parse_route_needs("READ TOPIC:{topic} |").has_value());   // an empty alternative
  CHECK_FALSE(parse_route_needs("| READ TOPIC:{topic}").has_value());
}

TEST_CASE("peer host: the address without its port, IPv4 and IPv6") {
  CHECK(peer_host("127.0.0.1:5000") == "127.0.0.1");
  CHECK(peer_host("::1:5000") == "::1");
  CHECK(peer_host("[::1]:5000") == "::1");
  CHECK(peer_host("10.0.0.1") == "10.0.0.1");   // no port (never from the server): kept whole
}
