"""Issue 30, first stage: ACLs kept in the metadata log (Kafka's AccessControlEntryRecord), with
Kafka's CreateAcls/DescribeAcls/DeleteAcls (kafka-python's admin client) and Confluent's v3 ACL
routes; SECURITY_DISABLED without an authorizer; kept across a restart."""
import requests
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         KafkaAdminClient, ResourcePattern, ResourcePatternFilter, ResourceType)
from kafka.errors import SecurityDisabledError

from conftest import Broker, free_port

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUPER_USERS = "super.users=User:admin;User:ANONYMOUS"


def start(tmp_path, sets, kafka_port=None):
    return Broker(tmp_path / "ringlog-data", sets, kafka_port=kafka_port or free_port()).start()


def test_without_an_authorizer_the_acl_apis_say_security_disabled(tmp_path):
    b = start(tmp_path, [])
    try:
        r = requests.get(b.v3("/acls"))
        assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text
        assert "authorizer.class.name" in r.json()["message"], r.text
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
        try:
            acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                      ResourcePattern(ResourceType.TOPIC, "orders"))
            out = admin.create_acls([acl])
            assert out["succeeded"] == [] and out["failed"][0][1] is SecurityDisabledError, out
        finally:
            admin.close()
    finally:
        assert b.stop() == 0


def test_acls_through_kafka_and_http_agree_and_survive_a_restart(tmp_path):
    kafka_port = free_port()
    # ACLs are enforced (test_acls_http.py): without authentication every caller is
    # User:ANONYMOUS, the super user here that keeps the ACLs.
    b = start(tmp_path, [AUTHORIZER, SUPER_USERS], kafka_port)
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
    try:
        read_orders = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                          ResourcePattern(ResourceType.TOPIC, "orders"))
        write_logs = ACL("User:bob", "10.0.0.1", ACLOperation.WRITE, ACLPermissionType.DENY,
                         ResourcePattern(ResourceType.TOPIC, "logs-", ACLResourcePatternType.PREFIXED))
        group = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.GROUP, "app"))
        out = admin.create_acls([read_orders, write_logs, group])
        assert len(out["succeeded"]) == 3 and out["failed"] == [], out
        # Creating one that exists changes nothing (Kafka's rule).
        assert len(admin.create_acls([read_orders])["succeeded"]) == 1

        # Describe by filter: MATCH finds the ACLs that apply to a topic name.
        acls, error = admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                    ResourcePatternFilter(ResourceType.TOPIC, "logs-app",
                                                                          ACLResourcePatternType.MATCH)))
        assert [(a.principal, a.host, a.resource_pattern.resource_name) for a in acls] == \
            [("User:bob", "10.0.0.1", "logs-")], acls

        # The same ACLs through Confluent's v3 routes.
        r = requests.get(b.v3("/acls"), params={"principal": "User:alice"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["kind"] == "KafkaAclList", body
        got = sorted((a["resource_type"], a["resource_name"], a["pattern_type"], a["operation"], a["permission"])
                     for a in body["data"])
        assert got == [("GROUP", "app", "LITERAL", "READ", "ALLOW"), ("TOPIC", "orders", "LITERAL", "READ", "ALLOW")]
        assert requests.get(body["data"][0]["metadata"]["self"]).json()["data"] == [body["data"][0]]

        # HTTP create, one and a batch; bad input names the field and stores nothing.
        one = {"resource_type": "CLUSTER", "resource_name": "kafka-cluster", "pattern_type": "LITERAL",
               "principal": "User:ops", "host": "*", "operation": "DESCRIBE", "permission": "ALLOW"}
        r = requests.post(b.v3("/acls"), json=one)
        assert r.status_code == 201, r.text
        r = requests.post(b.v3("/acls:batch"), json={"data": [dict(one, principal="User:ops2"),
                                                               dict(one, principal="User:ops3")]})
        assert r.status_code == 201, r.text
        before = requests.get(b.v3("/acls")).json()["data"]
        assert len(before) == 6, before
        for bad, words in [(dict(one, operation="FLY"), "operation must be one of"),
                           (dict(one, principal="ops"), "TYPE:NAME"),
                           (dict(one, resource_name="other"), "kafka-cluster"),
                           (dict(one, pattern_type="MATCH"), "pattern_type MATCH")]:
            r = requests.post(b.v3("/acls"), json=bad)
            assert r.status_code in (400, 422) and words in r.json()["message"], (bad, r.text)
        r = requests.get(b.v3("/acls"), params={"operation": "FLY"})
        assert r.status_code == 400 and "operation" in r.json()["message"], r.text
        assert requests.get(b.v3("/acls")).json()["data"] == before

        # Delete through Kafka by filter; the answer names what went.
        deleted = admin.delete_acls([ACLFilter("User:bob", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                               ResourcePatternFilter(ResourceType.ANY, None,
                                                                     ACLResourcePatternType.ANY))])
        assert [a.principal for a, _ in deleted[0][1]] == ["User:bob"], deleted
        # Delete through HTTP: the four filter parameters are required, as Confluent's.
        r = requests.delete(b.v3("/acls"), params={"principal": "User:ops2"})
        assert r.status_code == 400 and "resource_type is required" in r.json()["message"], r.text
        r = requests.delete(b.v3("/acls"), params={"resource_type": "CLUSTER", "pattern_type": "ANY",
                                                   "operation": "ANY", "permission": "ANY", "principal": "User:ops2"})
        assert r.status_code == 200 and [a["principal"] for a in r.json()["data"]] == ["User:ops2"], r.text
    finally:
        admin.close()
        assert b.stop() == 0

    # Kept in the metadata log: a restart finds them.
    b = Broker(tmp_path / "ringlog-data", [AUTHORIZER, SUPER_USERS], kafka_port=kafka_port).start()
    try:
        left = sorted(a["principal"] for a in requests.get(b.v3("/acls")).json()["data"])
        assert left == ["User:alice", "User:alice", "User:ops", "User:ops3"], left
    finally:
        assert b.stop() == 0
