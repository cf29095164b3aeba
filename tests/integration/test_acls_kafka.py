"""Issue 30: ACLs enforced on the Kafka listener, per Kafka's KafkaApis table, with Kafka's codes
(29 TOPIC_, 30 GROUP_, 31 CLUSTER_, 53 TRANSACTIONAL_ID_AUTHORIZATION_FAILED). A SASL/SCRAM
listener with the StandardAuthorizer on: `admin` is a super user, `bob` has no ACL, `carol` may do
everything through ACLs. The table-driven test walks every api key the server's ApiVersions lists
(so a new api without a row here fails it); real clients (confluent-kafka, kafka-python) show the
rules a user meets: prefixed ALLOW, DENY over ALLOW, User:*, host filters, filtered ListGroups and
Metadata, ACLs kept across a restart.
"""
import time
import uuid

import pytest

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.admin import NewTopic as RdNewTopic
from kafka import KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                         ResourcePattern, ResourcePatternFilter, ResourceType)
from kafka.errors import TopicAuthorizationFailedError

import kafka_schema
import kafka_wire
from conftest import Broker, free_port, wait_until
from test_sasl import scram_login
from tls_certs import Material

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ADMIN, BOB, CAROL = ("admin", "admin-secret"), ("bob", "bob-secret"), ("carol", "carol-secret")
DAVE = ("dave", "dave-secret")   # holds only what a test gives him
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
CLUSTER_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 31, 53
AUTHORIZATION_CODES = {29, 30, 31, 53}
# Served before a login, asked of nobody (Kafka's rule).
NO_CHECK = {17, 18, 36}


class AclBroker(Broker):
    """SASL_PLAINTEXT:// with SCRAM users admin (super user), bob, carol and dave, and the authorizer."""

    def __init__(self, data_dir, extra_sets=(), port=None, kafka_port=None):
        port, kafka_port = port or free_port(), kafka_port or free_port()
        users = [f"SCRAM-SHA-512=[name={u},password={p}]" for u, p in (ADMIN, BOB, CAROL, DAVE)]
        super().__init__(data_dir, [f"listeners=http://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
                                    "sasl.enabled.mechanisms=SCRAM-SHA-512", AUTHORIZER, "super.users=User:admin",
                                    *extra_sets],
                         port=port, kafka_port=kafka_port,
                         extra_args=[arg for u in users for arg in ("--add-scram", u)])


def conf(b, user, **more):
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user[0], "sasl.password": user[1], **more}


def kafka_python_admin(b, user=ADMIN):
    """kafka-python's admin client (confluent-kafka 1.7 has no ACL or group listing calls)."""
    return KafkaAdminClient(bootstrap_servers=b.bootstrap, security_protocol="SASL_PLAINTEXT",
                            sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=user[0], sasl_plain_password=user[1],
                            request_timeout_ms=15000)


def create_acls(b, *acls):
    a = kafka_python_admin(b)
    try:
        out = a.create_acls(list(acls))
        assert out["failed"] == [], out
    finally:
        a.close()


def allow(principal, rtype, name, op, pattern=ACLResourcePatternType.LITERAL, host="*",
          permission=ACLPermissionType.ALLOW):
    return ACL(principal, host, op, permission, ResourcePattern(rtype, name, pattern))


def create_topic(b, name, partitions=1):
    a = AdminClient(conf(b, ADMIN))   # kept alive until its futures are done
    for f in a.create_topics([RdNewTopic(name, partitions, 1)]).values():
        f.result(timeout=15)


def group_names(b, user):
    a = kafka_python_admin(b, user)
    try:
        return sorted(g for g, _ in a.list_consumer_groups())
    finally:
        a.close()


def produce_one(b, user, topic, value=b"v", **more):
    """Produces one record as `user`; returns the delivery error (None: stored)."""
    p = Producer(conf(b, user, **{"message.timeout.ms": 10000, **more}))
    got = []
    p.produce(topic, value, on_delivery=lambda err, msg: got.append(err))
    p.flush(20)
    assert got, "no delivery report"
    return got[0]


@pytest.fixture(scope="module")
def acl_broker(ringlog_bin, tmp_path_factory):
    b = AclBroker(tmp_path_factory.mktemp("aclkafka") / "data").start()
    yield b
    assert b.stop() == 0


# ---------------------------------------------------------------- the table, from ApiVersions

TOPIC, GROUP, TXN = "secret", "g-secret", "tx-secret"


def requests_by_api(records):
    """api key -> (version, request fields, the refusal a principal without ACLs gets: a code, or
    'filtered' for the lists that leave unauthorized entries out). Minimal bodies naming TOPIC,
    GROUP and TXN."""
    topic_partitions = lambda extra=None: [{"Name": TOPIC, "PartitionIndexes": [0], **(extra or {})}]  # noqa: E731
    return {
        0: (9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 10000,
                "TopicData": [{"Name": TOPIC, "PartitionData": [{"Index": 0, "Records": records}]}]},
            TOPIC_AUTHORIZATION_FAILED),
        1: (12, {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 1 << 20, "SessionEpoch": -1,
                 "Topics": [{"Topic": TOPIC, "Partitions": [{"Partition": 0, "FetchOffset": 0,
                                                              "PartitionMaxBytes": 1 << 20}]}]},
            TOPIC_AUTHORIZATION_FAILED),
        2: (6, {"ReplicaId": -1, "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "Timestamp": -1}]}]},
            TOPIC_AUTHORIZATION_FAILED),
        3: (12, {"Topics": [{"Name": TOPIC}], "AllowAutoTopicCreation": False}, TOPIC_AUTHORIZATION_FAILED),
        8: (8, {"GroupId": GROUP, "GenerationIdOrMemberEpoch": -1, "MemberId": "",
                "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1}]}]},
            GROUP_AUTHORIZATION_FAILED),
        9: (7, {"GroupId": GROUP, "Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}, GROUP_AUTHORIZATION_FAILED),
        10: (6, {"KeyType": 0, "CoordinatorKeys": [GROUP]}, GROUP_AUTHORIZATION_FAILED),
        11: (7, {"GroupId": GROUP, "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": "",
                 "ProtocolType": "consumer", "Protocols": [{"Name": "range", "Metadata": b""}]},
             GROUP_AUTHORIZATION_FAILED),
        12: (4, {"GroupId": GROUP, "GenerationId": 1, "MemberId": "m"}, GROUP_AUTHORIZATION_FAILED),
        13: (5, {"GroupId": GROUP, "Members": [{"MemberId": "m"}]}, GROUP_AUTHORIZATION_FAILED),
        14: (5, {"GroupId": GROUP, "GenerationId": 1, "MemberId": "m", "ProtocolType": "consumer",
                 "ProtocolName": "range"}, GROUP_AUTHORIZATION_FAILED),
        15: (5, {"Groups": [GROUP], "IncludeAuthorizedOperations": True}, GROUP_AUTHORIZATION_FAILED),
        16: (4, {}, "filtered"),
        19: (7, {"Topics": [{"Name": "made-by-" + uuid.uuid4().hex[:6], "NumPartitions": 1, "ReplicationFactor": 1}],
                 "TimeoutMs": 10000}, TOPIC_AUTHORIZATION_FAILED),
        20: (5, {"TopicNames": [TOPIC], "TimeoutMs": 10000}, TOPIC_AUTHORIZATION_FAILED),
        21: (2, {"Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "Offset": 0}]}], "TimeoutMs": 10000},
             TOPIC_AUTHORIZATION_FAILED),
        22: (4, {"TransactionalId": TXN, "TransactionTimeoutMs": 60000, "ProducerId": -1, "ProducerEpoch": -1},
             TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        23: (4, {"ReplicaId": -1, "Topics": [{"Topic": TOPIC, "Partitions": [{"Partition": 0, "LeaderEpoch": 0,
                                                                               "CurrentLeaderEpoch": -1}]}]},
             TOPIC_AUTHORIZATION_FAILED),
        24: (3, {"V3AndBelowTransactionalId": TXN, "V3AndBelowProducerId": 1, "V3AndBelowProducerEpoch": 0,
                 "V3AndBelowTopics": [{"Name": TOPIC, "Partitions": [0]}]}, TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        25: (3, {"TransactionalId": TXN, "ProducerId": 1, "ProducerEpoch": 0, "GroupId": GROUP},
             TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        26: (3, {"TransactionalId": TXN, "ProducerId": 1, "ProducerEpoch": 0, "Committed": False},
             TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        28: (3, {"TransactionalId": TXN, "GroupId": GROUP, "ProducerId": 1, "ProducerEpoch": 0, "GenerationId": -1,
                 "MemberId": "", "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1}]}]},
             TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        29: (3, {"ResourceTypeFilter": 1, "PatternTypeFilter": 1, "Operation": 1, "PermissionType": 1},
             CLUSTER_AUTHORIZATION_FAILED),
        30: (3, {"Creations": [{"ResourceType": 2, "ResourceName": "x", "ResourcePatternType": 3,
                                "Principal": "User:bob", "Host": "*", "Operation": 2, "PermissionType": 3}]},
             CLUSTER_AUTHORIZATION_FAILED),
        31: (3, {"Filters": [{"ResourceTypeFilter": 1, "PatternTypeFilter": 1, "Operation": 1, "PermissionType": 1}]},
             CLUSTER_AUTHORIZATION_FAILED),
        32: (4, {"Resources": [{"ResourceType": 2, "ResourceName": TOPIC, "ConfigurationKeys": None}]},
             TOPIC_AUTHORIZATION_FAILED),
        33: (2, {"Resources": [{"ResourceType": 2, "ResourceName": TOPIC,
                                "Configs": [{"Name": "retention.ms", "Value": "1000"}]}]}, TOPIC_AUTHORIZATION_FAILED),
        37: (3, {"Topics": [{"Name": TOPIC, "Count": 3, "Assignments": None}], "TimeoutMs": 10000},
             TOPIC_AUTHORIZATION_FAILED),
        42: (2, {"GroupsNames": [GROUP]}, GROUP_AUTHORIZATION_FAILED),
        44: (1, {"Resources": [{"ResourceType": 2, "ResourceName": TOPIC,
                                "Configs": [{"Name": "retention.ms", "ConfigOperation": 0, "Value": "1000"}]}]},
             TOPIC_AUTHORIZATION_FAILED),
        45: (0, {"TimeoutMs": 10000, "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "Replicas": None}]}]},
             CLUSTER_AUTHORIZATION_FAILED),
        46: (0, {"TimeoutMs": 10000, "Topics": None}, CLUSTER_AUTHORIZATION_FAILED),
        47: (0, {"GroupId": GROUP, "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0}]}]},
             GROUP_AUTHORIZATION_FAILED),
        48: (1, {"Components": [], "Strict": False}, CLUSTER_AUTHORIZATION_FAILED),
        49: (1, {"Entries": [{"Entity": [{"EntityType": "client-id", "EntityName": "acl-walk"}],
                              "Ops": [{"Key": "producer_byte_rate", "Value": float(1 << 30), "Remove": False}]}]},
             CLUSTER_AUTHORIZATION_FAILED),
        50: (0, {"Users": None}, CLUSTER_AUTHORIZATION_FAILED),
        51: (0, {"Deletions": [{"Name": "nobody", "Mechanism": 2}]}, CLUSTER_AUTHORIZATION_FAILED),
        60: (1, {"IncludeClusterAuthorizedOperations": True}, CLUSTER_AUTHORIZATION_FAILED),
        61: (0, {"Topics": topic_partitions()}, TOPIC_AUTHORIZATION_FAILED),
        65: (0, {"TransactionalIds": [TXN]}, TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        66: (1, {}, "filtered"),
    }


def served_api_keys(b):
    with kafka_wire.connect(b.bootstrap) as s:
        answer = kafka_schema.exchange(s, "ApiVersions", 0, 1, {})
    assert answer["ErrorCode"] == 0
    return {a["ApiKey"]: (a["MinVersion"], a["MaxVersion"]) for a in answer["ApiKeys"]}


def walk(b, user, rows, keys):
    """Sends each row's request as `user` on one connection; api key -> decoded answer."""
    out = {}
    with kafka_wire.connect(b.bootstrap, timeout=30) as s:
        scram_login(s, "SCRAM-SHA-512", user)
        for n, key in enumerate(sorted(keys)):
            version, fields, _ = rows[key]
            out[key] = kafka_schema.exchange(s, kafka_schema.api_name(key), version, 100 + n, fields)
    return out


def state(b):
    """What the refused requests must not change, as the super user sees it."""
    a = AdminClient(conf(b, ADMIN))
    md = a.list_topics(timeout=15)
    topics = {t: len(m.partitions) for t, m in md.topics.items()}
    config = a.describe_configs([ConfigResource("topic", TOPIC)])
    retention = list(config.values())[0].result(timeout=15)["retention.ms"].value
    k = kafka_python_admin(b)
    try:
        acls, _ = k.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
        committed = k.list_consumer_group_offsets(GROUP, partitions=[KafkaTopicPartition(TOPIC, 0)])
    finally:
        k.close()
    return (topics, sorted(repr(x) for x in acls), retention, group_names(b, ADMIN),
            {tp.partition: o.offset for tp, o in committed.items()})


def test_every_api_refuses_without_the_acl_and_serves_with_it(acl_broker):
    b = acl_broker
    served = served_api_keys(b)
    records = kafka_wire.batch([(b"k", b"v", None, 1700000000000)])
    rows = requests_by_api(records)
    missing = sorted(set(served) - NO_CHECK - set(rows))
    assert not missing, f"api keys served without a row in this test (add the check and the row): {missing}"
    for key, (version, _, _) in rows.items():
        assert key in served, f"api {key} has a row but is not served"
        assert served[key][0] <= version <= served[key][1], (key, version, served[key])

    # The state a refusal must leave alone: a topic with a record, a group with a committed offset.
    create_topic(b, TOPIC)
    assert produce_one(b, ADMIN, TOPIC) is None
    c = Consumer(conf(b, ADMIN, **{"group.id": GROUP, "enable.auto.commit": False}))
    c.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
    c.close()
    before = state(b)

    refused = walk(b, BOB, rows, rows.keys())
    for key, answer in refused.items():
        expected = rows[key][2]
        codes = kafka_schema.error_codes(answer)
        if expected == "filtered":
            assert not AUTHORIZATION_CODES & set(codes), (key, answer)
            continue
        assert expected in codes, (key, kafka_schema.api_name(key), answer)
    assert [g["GroupId"] for g in refused[16]["Groups"]] == [], refused[16]
    assert refused[66]["TransactionStates"] == [], refused[66]
    assert refused[60]["ClusterAuthorizedOperations"] == -2147483648
    assert state(b) == before, "a refused request changed something"
    # KIP-679: an idempotent producer's InitProducerId (no transactional id) needs IDEMPOTENT_WRITE
    # on the cluster or WRITE on some topic; bob has neither.
    idempotent = {"TransactionalId": None, "TransactionTimeoutMs": 60000, "ProducerId": -1, "ProducerEpoch": -1}
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", BOB)
        assert kafka_schema.exchange(s, "InitProducerId", 4, 9, idempotent)["ErrorCode"] == CLUSTER_AUTHORIZATION_FAILED
    log = b.log_path.read_text()
    assert 'principal="User:bob"' in log and 'operation="CreateTopics"' in log, "the audit line names the connection's principal"

    # carol holds ALL on every resource type through ACLs (no super user): nothing is refused.
    create_acls(b, *[allow("User:carol", rtype, name, ACLOperation.ALL)
                     for rtype, name in [(ResourceType.TOPIC, "*"), (ResourceType.GROUP, "*"),
                                         (ResourceType.TRANSACTIONAL_ID, "*"), (ResourceType.CLUSTER, "kafka-cluster")]])
    allowed = walk(b, CAROL, rows, rows.keys())
    for key, answer in allowed.items():
        assert not AUTHORIZATION_CODES & set(kafka_schema.error_codes(answer)), (key, kafka_schema.api_name(key), answer)
    assert GROUP in [g["GroupId"] for g in allowed[16]["Groups"]], allowed[16]
    # authorized_operations (Kafka's bitfield of AclOperation codes), asked in DescribeCluster and
    # DescribeGroups: ALL on the cluster allows its 7 operations.
    cluster_ops = {2 + i for i in range(13) if allowed[60]["ClusterAuthorizedOperations"] >> (2 + i) & 1}
    assert cluster_ops == {5, 7, 8, 9, 10, 11, 12}, allowed[60]
    group_ops = allowed[15]["Groups"][0]["AuthorizedOperations"]
    assert {op for op in range(16) if group_ops >> op & 1} == {3, 6, 8}, allowed[15]


def test_metadata_hides_topics_and_names_refused_ones(acl_broker):
    b = acl_broker
    for t in ("md-open", "md-hidden"):
        create_topic(b, t)
    create_acls(b, allow("User:bob", ResourceType.TOPIC, "md-open", ACLOperation.DESCRIBE))
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", BOB)
        everything = kafka_schema.exchange(s, "Metadata", 12, 10, {"Topics": None, "IncludeTopicAuthorizedOperations": True})
        names = [t["Name"] for t in everything["Topics"]]
        assert "md-open" in names and "md-hidden" not in names, names
        ops = [t["TopicAuthorizedOperations"] for t in everything["Topics"] if t["Name"] == "md-open"][0]
        assert {op for op in range(16) if ops >> op & 1} == {8}, ops   # DESCRIBE only
        # Named: refused ones say TOPIC_AUTHORIZATION_FAILED, whether they exist or not.
        named = kafka_schema.exchange(s, "Metadata", 12, 11, {"Topics": [{"Name": "md-hidden"}, {"Name": "no-such"}],
                                                              "AllowAutoTopicCreation": True})
        assert [(t["Name"], t["ErrorCode"]) for t in named["Topics"]] == \
            [("md-hidden", 29), ("no-such", 29)], named
    assert "no-such" not in AdminClient(conf(b, ADMIN)).list_topics(timeout=15).topics, "auto-created without CREATE"


def test_librdkafka_and_kafka_python_need_write_and_a_prefixed_allow_grants_it(acl_broker):
    b = acl_broker
    topic = "orders-eu"
    create_topic(b, topic)
    err = produce_one(b, BOB, topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    # The refusal is logged, as Kafka's authorizer logs its denials.
    denied = wait_until(lambda: [line for line in b.log_path.read_text().splitlines()
                                 if "audit=authorization" in line and 'principal="User:bob"' in line
                                 and f'resource="TOPIC:{topic}"' in line], 5, "the denial's audit line")
    assert "door=kafka" in denied[0] and "operation=" in denied[0], denied[0]
    # kafka-python finds the topic by an all-topics Metadata, which leaves out what bob may not
    # DESCRIBE (it would wait for the topic to appear): with DESCRIBE but not WRITE, the produce
    # itself is refused.
    create_acls(b, allow("User:bob", ResourceType.TOPIC, topic, ACLOperation.DESCRIBE))
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": BOB[0], "sasl_plain_password": BOB[1]}
    kp = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", max_block_ms=15000, **sasl)
    with pytest.raises(TopicAuthorizationFailedError):
        kp.send(topic, b"x").get(timeout=15)
    kp.close()

    create_acls(b, allow("User:bob", ResourceType.TOPIC, "orders-", ACLOperation.WRITE,
                         pattern=ACLResourcePatternType.PREFIXED))
    assert produce_one(b, BOB, topic) is None
    kp = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", max_block_ms=15000, **sasl)
    assert kp.send(topic, b"y").get(timeout=15).offset == 1
    kp.close()
    # WRITE does not give READ: with READ on its group, bob's fetch of the topic is refused.
    create_acls(b, allow("User:bob", ResourceType.GROUP, "bob-reads", ACLOperation.READ))
    cons = Consumer(conf(b, BOB, **{"group.id": "bob-reads", "auto.offset.reset": "earliest"}))
    cons.assign([TopicPartition(topic, 0, 0)])
    errors, records = [], []
    deadline = time.monotonic() + 20
    while KafkaError.TOPIC_AUTHORIZATION_FAILED not in errors and time.monotonic() < deadline:
        msg = cons.poll(0.5)
        if msg is not None:
            (errors.append(msg.error().code()) if msg.error() else records.append(msg.value()))
    cons.close()
    assert KafkaError.TOPIC_AUTHORIZATION_FAILED in errors and records == [], (errors, records)


def test_deny_wins_over_allow_and_user_star_and_host_filters(acl_broker):
    b = acl_broker
    create_topic(b, "shared")
    create_topic(b, "from-elsewhere")
    # User:* may write "shared"; carol holds ALL on every topic: a DENY for carol wins over both.
    create_acls(b, allow("User:*", ResourceType.TOPIC, "shared", ACLOperation.WRITE))
    assert produce_one(b, BOB, "shared") is None
    create_acls(b, allow("User:carol", ResourceType.TOPIC, "shared", ACLOperation.WRITE,
                         permission=ACLPermissionType.DENY))
    err = produce_one(b, CAROL, "shared")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    assert produce_one(b, BOB, "shared") is None
    # A host filter: an ALLOW from another address does nothing; from 127.0.0.1 it grants.
    create_acls(b, allow("User:bob", ResourceType.TOPIC, "from-elsewhere", ACLOperation.WRITE, host="10.1.2.3"))
    err = produce_one(b, BOB, "from-elsewhere")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    create_acls(b, allow("User:bob", ResourceType.TOPIC, "from-elsewhere", ACLOperation.WRITE, host="127.0.0.1"))
    assert produce_one(b, BOB, "from-elsewhere") is None


def test_list_groups_is_filtered_not_refused(acl_broker):
    b = acl_broker
    create_topic(b, "lg")
    for g in ("lg-visible", "lg-hidden"):
        c = Consumer(conf(b, ADMIN, **{"group.id": g}))
        c.commit(offsets=[TopicPartition("lg", 0, 0)], asynchronous=False)
        c.close()
    create_acls(b, allow("User:bob", ResourceType.GROUP, "lg-visible", ACLOperation.DESCRIBE))
    names = group_names(b, BOB)
    assert "lg-visible" in names and "lg-hidden" not in names, names
    assert {"lg-visible", "lg-hidden"} <= set(group_names(b, ADMIN))


def test_describe_transactions_names_only_the_topics_the_caller_may_describe(acl_broker):
    """The breaker's txn_leak.py (session 26): DESCRIBE on a transactional id answered the
    partitions of every topic the transaction wrote, a topic bob may not DESCRIBE among them.
    Kafka's describeTransactions keeps only the topics the caller may DESCRIBE (KIP-664)."""
    b = acl_broker
    for t in ("dt-open", "dt-hidden"):
        create_topic(b, t)
    p = Producer(conf(b, ADMIN, **{"transactional.id": "dt-tx"}))
    p.init_transactions(20)
    p.begin_transaction()
    for t in ("dt-open", "dt-hidden"):
        p.produce(t, b"v", partition=0)
    p.flush(15)
    create_acls(b, allow("User:bob", ResourceType.TRANSACTIONAL_ID, "dt-tx", ACLOperation.DESCRIBE),
                allow("User:bob", ResourceType.TOPIC, "dt-open", ACLOperation.DESCRIBE))

    def described(user):
        with kafka_wire.connect(b.bootstrap) as s:
            scram_login(s, "SCRAM-SHA-512", user)
            state = kafka_schema.exchange(s, "DescribeTransactions", 0, 7, {"TransactionalIds": ["dt-tx"]})
        (one,) = state["TransactionStates"]
        if one["ErrorCode"] != 0:
            return one["ErrorCode"]   # 53 until the ACL is visible
        assert one["TransactionState"] == "Ongoing", one
        return sorted(t["Name"] for t in one["TopicPartitions"])

    assert described(ADMIN) == ["dt-hidden", "dt-open"]
    shown = wait_until(lambda: (lambda d: d if isinstance(d, list) else None)(described(BOB)), 5, "bob's DESCRIBE ACL")
    assert shown == ["dt-open"], shown
    p.abort_transaction(20)


def test_acls_survive_a_restart(ringlog_bin, tmp_path):
    port, kafka_port = free_port(), free_port()
    b = AclBroker(tmp_path / "data", port=port, kafka_port=kafka_port).start()
    try:
        create_topic(b, "kept")
        create_acls(b, allow("User:bob", ResourceType.TOPIC, "kept", ACLOperation.WRITE))
        assert produce_one(b, BOB, "kept") is None
    finally:
        assert b.stop() == 0
    b = AclBroker(tmp_path / "data", port=port, kafka_port=kafka_port).start()
    try:
        assert produce_one(b, BOB, "kept") is None
        err = produce_one(b, CAROL, "kept")
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    finally:
        assert b.stop() == 0


def test_the_mtls_principal_is_the_one_checked(ringlog_bin, tmp_path):
    """On an SSL listener with client certificates the mapped subject is the principal (alice's
    certificate -> User:alice); without a certificate the caller is User:ANONYMOUS."""
    certs = Material(tmp_path / "certs")
    http, sasl, ssl_port, client = free_port(), free_port(), free_port(), free_port()
    b = Broker(tmp_path / "data", port=http, kafka_port=sasl, extra_sets=[
        f"listeners=http://127.0.0.1:{http},SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{ssl_port},"
        f"CLIENT://127.0.0.1:{client}",
        "listener.security.protocol.map=CLIENT:SSL", f"ssl.keystore.location={certs.broker_pem}",
        f"ssl.truststore.location={certs.ca_file}", "listener.name.client.ssl.client.auth=required",
        "listener.name.client.ssl.principal.mapping.rules=RULE:^.*CN=([a-z]+).*$/$1/", AUTHORIZER,
        "sasl.enabled.mechanisms=SCRAM-SHA-512", "super.users=User:admin"],
        extra_args=["--add-scram", f"SCRAM-SHA-512=[name={ADMIN[0]},password={ADMIN[1]}]"]).start()
    try:
        create_topic(b, "mtls")   # as admin, over SASL
        tls = {"security.protocol": "SSL", "ssl.ca.location": certs.ca_file, "message.timeout.ms": 10000}
        alice = {**tls, "bootstrap.servers": f"127.0.0.1:{client}", "ssl.certificate.location": certs.alice_crt,
                 "ssl.key.location": certs.alice_key}
        anonymous = {**tls, "bootstrap.servers": f"127.0.0.1:{ssl_port}"}

        def produce(conf_):
            p = Producer(conf_)
            got = []
            p.produce("mtls", b"v", on_delivery=lambda err, msg: got.append(err))
            p.flush(20)
            return got[0]

        assert produce(alice).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        create_acls(b, allow("User:alice", ResourceType.TOPIC, "mtls", ACLOperation.WRITE))
        assert produce(alice) is None
        assert produce(anonymous).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        assert b.stop() == 0


def test_kafkajs_meets_the_same_rules(acl_broker, monkeypatch):
    from test_kafka_groups import run_kafkajs
    b = acl_broker
    topic = "kjs-acl-topic"
    create_topic(b, topic)
    create_acls(b, allow("User:bob", ResourceType.TOPIC, topic, ACLOperation.DESCRIBE))
    monkeypatch.setenv("KAFKA_ADMIN_USERNAME", ADMIN[0])
    monkeypatch.setenv("KAFKA_ADMIN_PASSWORD", ADMIN[1])
    monkeypatch.setenv("KAFKA_SASL_USERNAME", BOB[0])
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", BOB[1])
    run_kafkajs("acls.test.mjs", b.bootstrap, topic)


def test_offset_for_leader_epoch_needs_cluster_action_or_describe_whatever_the_replica_id(ringlog_bin, tmp_path):
    """OffsetForLeaderEpoch was a follower's api (CLUSTER_ACTION on the cluster) until KIP-320 let
    consumers ask it with DESCRIBE on the topic. Kafka's KafkaApis.handleOffsetForLeaderEpochRequest
    serves a principal holding either, whatever the request's ReplicaId (-1 a consumer, >= 0 a
    follower). Before: only DESCRIBE counted, so a principal with CLUSTER_ACTION alone (a
    follower's) was refused with TOPIC_AUTHORIZATION_FAILED."""
    b = AclBroker(tmp_path / "data").start()
    try:
        create_topic(b, "olfe-acl")
        create_topic(b, "olfe-closed")
        assert produce_one(b, ADMIN, "olfe-acl") is None   # epoch 0 ends at offset 1
        create_acls(b, allow("User:bob", ResourceType.TOPIC, "olfe-acl", ACLOperation.DESCRIBE),
                    allow("User:carol", ResourceType.CLUSTER, "kafka-cluster", ACLOperation.CLUSTER_ACTION))

        def end_offset(user, topic, replica_id):
            with kafka_wire.connect(b.bootstrap) as s:
                scram_login(s, "SCRAM-SHA-512", user)
                answer = kafka_schema.exchange(s, "OffsetForLeaderEpoch", 4, 1, {
                    "ReplicaId": replica_id,
                    "Topics": [{"Topic": topic, "Partitions": [{"Partition": 0, "LeaderEpoch": 0, "CurrentLeaderEpoch": -1}]}]})
            [p] = answer["Topics"][0]["Partitions"]
            return p["ErrorCode"], p["EndOffset"]

        for replica_id in (-1, 1):
            wait_until(lambda: end_offset(CAROL, "olfe-acl", replica_id) == (0, 1), 15,
                       f"CLUSTER_ACTION alone to be served (ReplicaId {replica_id})")
            assert end_offset(BOB, "olfe-acl", replica_id) == (0, 1), replica_id
            assert end_offset(BOB, "olfe-closed", replica_id) == (TOPIC_AUTHORIZATION_FAILED, -1), replica_id
    finally:
        assert b.stop() == 0


def test_metadata_by_topic_id_is_authorized_as_by_name(acl_broker):
    """KIP-516, Metadata v12 naming topics by id: DESCRIBE on the topic, as a by-name request. A
    refused topic answers TOPIC_AUTHORIZATION_FAILED with its id and a null name (Kafka's
    KafkaApis.handleTopicMetadataRequest: ids are not secret, names are)."""
    b = acl_broker
    for t in ("id-open", "id-hidden"):
        create_topic(b, t)
    create_acls(b, allow("User:bob", ResourceType.TOPIC, "id-open", ACLOperation.DESCRIBE))
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", ADMIN)
        named = kafka_schema.exchange(s, "Metadata", 12, 1, {"Topics": [{"Name": "id-open"}, {"Name": "id-hidden"}],
                                                             "AllowAutoTopicCreation": False})
    ids = {t["Name"]: t["TopicId"] for t in named["Topics"]}
    by_id = {"Topics": [{"TopicId": uuid.UUID(ids[n]).bytes, "Name": None} for n in ("id-open", "id-hidden")],
             "AllowAutoTopicCreation": False}
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", BOB)
        answer = wait_until(lambda: (lambda a: a if a["Topics"][0]["ErrorCode"] == 0 else None)(
            kafka_schema.exchange(s, "Metadata", 12, 2, by_id)), 15, "bob's DESCRIBE ACL")
    assert [(t["ErrorCode"], t["Name"], t["TopicId"]) for t in answer["Topics"]] == \
        [(0, "id-open", ids["id-open"]), (TOPIC_AUTHORIZATION_FAILED, None, ids["id-hidden"])], answer


def test_offset_fetch_refused_for_the_group_answers_30_in_every_version(acl_broker):
    """OffsetFetch by a caller without DESCRIBE on the group (Kafka's
    OffsetFetchRequest.getErrorResponse): v1 has no answer-wide error field, so every partition
    asked for carries GROUP_AUTHORIZATION_FAILED, whatever the topic's own authorization; v2-v7
    answer it once with no partitions; v8 on the group with no topics. (Session 39's breaker: v1
    answered 29 for a topic the caller may not describe, and v2 listed the partitions.)"""
    b = acl_broker
    for t in ("of-open", "of-hidden"):
        create_topic(b, t)
    create_acls(b, allow("User:bob", ResourceType.TOPIC, "of-open", ACLOperation.DESCRIBE))
    topics = [{"Name": t, "PartitionIndexes": [0]} for t in ("of-open", "of-hidden")]
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", BOB)
        wait_until(lambda: kafka_schema.exchange(s, "Metadata", 12, 1, {"Topics": [{"Name": "of-open"}],
                                                                        "AllowAutoTopicCreation": False})
                   ["Topics"][0]["ErrorCode"] == 0, 15, "bob's DESCRIBE ACL")
        v1 = kafka_schema.exchange(s, "OffsetFetch", 1, 2, {"GroupId": "of-g", "Topics": topics})
        answers = {v: kafka_schema.exchange(s, "OffsetFetch", v, 10 + v, {"GroupId": "of-g", "Topics": topics})
                   for v in (2, 7)}
        v8 = kafka_schema.exchange(s, "OffsetFetch", 8, 20, {"Groups": [{"GroupId": "of-g", "Topics": topics}],
                                                             "RequireStable": False})
    assert sorted((t["Name"], p["ErrorCode"], p["CommittedOffset"]) for t in v1["Topics"] for p in t["Partitions"]) == \
        [("of-hidden", GROUP_AUTHORIZATION_FAILED, -1), ("of-open", GROUP_AUTHORIZATION_FAILED, -1)], v1
    for v, answer in answers.items():
        assert (answer["ErrorCode"], answer["Topics"]) == (GROUP_AUTHORIZATION_FAILED, []), (v, answer)
    assert [(g["GroupId"], g["ErrorCode"], g["Topics"]) for g in v8["Groups"]] == \
        [("of-g", GROUP_AUTHORIZATION_FAILED, [])], v8


def test_delete_topics_describe_only_and_delete_on_the_cluster_answer_as_kafka_does(acl_broker):
    """Kafka's ControllerApis.deleteTopics: a topic the principal may DESCRIBE but not DELETE answers
    UNKNOWN_TOPIC_OR_PARTITION (3) when it does not exist and TOPIC_AUTHORIZATION_FAILED (29) when it does
    (and stays); without DESCRIBE it is 29 either way (never revealed). DELETE on the cluster deletes every
    topic, by name or by id, and makes every topic describable (a missing one is then 3).
    Before: 29 for every topic without DELETE on it; DELETE on the cluster counted for nothing."""
    b = acl_broker
    for t in ("dd-existing", "dd-cluster-a", "dd-cluster-b"):
        create_topic(b, t)
    create_acls(b, allow("User:dave", ResourceType.TOPIC, "dd-missing", ACLOperation.DESCRIBE),
                allow("User:dave", ResourceType.TOPIC, "dd-existing", ACLOperation.DESCRIBE))
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", ADMIN)
        named = kafka_schema.exchange(s, "Metadata", 12, 1, {"Topics": [{"Name": "dd-cluster-b"}],
                                                             "AllowAutoTopicCreation": False})
    cluster_b = named["Topics"][0]["TopicId"]
    names = ["dd-missing", "dd-hidden-missing", "dd-existing", "dd-cluster-a"]

    def answer(s, version, topics, correlation_id):
        body = {"TimeoutMs": 10000, **({"Topics": topics} if version >= 6 else {"TopicNames": topics})}
        return [(t["ErrorCode"], t["Name"]) + ((t["TopicId"],) if version >= 6 else ())
                for t in kafka_schema.exchange(s, "DeleteTopics", version, correlation_id, body)["Responses"]]
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", DAVE)
        refused = [(3, "dd-missing"), (TOPIC_AUTHORIZATION_FAILED, "dd-hidden-missing"),
                   (TOPIC_AUTHORIZATION_FAILED, "dd-existing"), (TOPIC_AUTHORIZATION_FAILED, "dd-cluster-a")]
        got = wait_until(lambda: (lambda a: a if a == refused else None)(answer(s, 5, names, 2)), 15, "dave's ACLs")
        assert got == refused
    create_acls(b, allow("User:dave", ResourceType.CLUSTER, "kafka-cluster", ACLOperation.DELETE))
    zero = str(uuid.UUID(int=0))
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", DAVE)
        # Nothing is deleted while the ACL is not seen yet: a missing topic dave may not describe says so.
        probe = [{"Name": "dd-probe-missing", "TopicId": uuid.UUID(zero).bytes}]
        wait_until(lambda: answer(s, 6, probe, 3) == [(3, "dd-probe-missing", zero)], 15, "dave's DELETE on the cluster")
        deleted = answer(s, 6, [{"Name": "dd-cluster-a", "TopicId": uuid.UUID(zero).bytes},
                                {"Name": None, "TopicId": uuid.UUID(cluster_b).bytes}], 4)
    assert [(code, name) for code, name, _ in deleted] == [(0, "dd-cluster-a"), (0, "dd-cluster-b")], deleted
    assert deleted[1][2] == cluster_b, deleted
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", ADMIN)
        wait_until(lambda: [t["ErrorCode"] for t in kafka_schema.exchange(s, "Metadata", 12, 5, {
            "Topics": [{"Name": "dd-cluster-a"}, {"Name": "dd-cluster-b"}, {"Name": "dd-existing"}],
            "AllowAutoTopicCreation": False})["Topics"]] == [3, 3, 0], 15, "both deleted, dd-existing kept")


def test_delete_topics_by_topic_id_is_authorized_as_kafka_does(acl_broker):
    """KIP-516, DeleteTopics v6 naming topics by id: DELETE on the topic, as by name. A refused topic
    answers TOPIC_AUTHORIZATION_FAILED with its id, and its name only when the principal may DESCRIBE it
    (Kafka's ControllerApis.deleteTopics: ids are not secret, names are).
    Before: every entry named by id answered UNKNOWN_TOPIC_ID."""
    b = acl_broker
    for t in ("del-id-described", "del-id-hidden", "del-id-deletable"):
        create_topic(b, t)
    create_acls(b, allow("User:bob", ResourceType.TOPIC, "del-id-described", ACLOperation.DESCRIBE),
                allow("User:bob", ResourceType.TOPIC, "del-id-deletable", ACLOperation.DELETE))
    names = ("del-id-described", "del-id-hidden", "del-id-deletable")
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", ADMIN)
        named = kafka_schema.exchange(s, "Metadata", 12, 1, {"Topics": [{"Name": n} for n in names],
                                                             "AllowAutoTopicCreation": False})
    ids = {t["Name"]: t["TopicId"] for t in named["Topics"]}
    by_id = {"TimeoutMs": 10000, "Topics": [{"Name": None, "TopicId": uuid.UUID(ids[n]).bytes} for n in names]}
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", BOB)
        answer = wait_until(lambda: (lambda a: a if a["Responses"][2]["ErrorCode"] == 0 else None)(
            kafka_schema.exchange(s, "DeleteTopics", 6, 2, by_id)), 15, "bob's DELETE ACL")
    assert [(t["ErrorCode"], t["Name"], t["TopicId"]) for t in answer["Responses"]] == [
        (TOPIC_AUTHORIZATION_FAILED, "del-id-described", ids["del-id-described"]),
        (TOPIC_AUTHORIZATION_FAILED, None, ids["del-id-hidden"]),
        (0, "del-id-deletable", ids["del-id-deletable"])], answer
