// KafkaJS 2.2 against enforced ACLs (issue 30). Started by tests/integration/test_acls_kafka.py,
// which passes the broker in KAFKA_BOOTSTRAP, a topic in KAFKA_TOPIC that bob may DESCRIBE but
// not WRITE, and the users: KAFKA_ADMIN_USERNAME/PASSWORD (a super user), KAFKA_SASL_USERNAME/
// PASSWORD (bob).
import assert from "node:assert/strict";
import { test } from "node:test";
import kafkajs from "kafkajs";

const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Kafka, logLevel, ResourcePatternTypes } = kafkajs;

const bootstrap = process.env.KAFKA_BOOTSTRAP;
const topic = process.env.KAFKA_TOPIC;
const client = (username, password) => new Kafka({
  clientId: "kafkajs-acls", brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 0 },
  sasl: { mechanism: "scram-sha-512", username, password },
});

test("KafkaJS: TOPIC_AUTHORIZATION_FAILED without WRITE, a prefixed ALLOW from admin.createAcls grants it", { timeout: 120_000 }, async () => {
  const bob = client(process.env.KAFKA_SASL_USERNAME, process.env.KAFKA_SASL_PASSWORD);
  const admin = client(process.env.KAFKA_ADMIN_USERNAME, process.env.KAFKA_ADMIN_PASSWORD);
  const producer = bob.producer();
  await producer.connect();
  try {
    await refusedThenAllowed(bob, admin, producer);
  } finally {
    await producer.disconnect();   // a failed assertion must not leave the process waiting on it
  }
});

async function refusedThenAllowed(bob, admin, producer) {
  await assert.rejects(producer.send({ topic, acks: -1, messages: [{ value: "refused" }] }),
    (e) => e.type === "TOPIC_AUTHORIZATION_FAILED" || /TOPIC_AUTHORIZATION_FAILED|authoriz/i.test(String(e)));

  // bob may not read the ACLs (DESCRIBE on the cluster); the super user may change them.
  const bobAdmin = bob.admin();
  await bobAdmin.connect();
  try {
    await assert.rejects(bobAdmin.describeAcls({
      resourceType: AclResourceTypes.ANY, resourcePatternType: ResourcePatternTypes.ANY,
      operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY,
    }), (e) => e.type === "CLUSTER_AUTHORIZATION_FAILED" || /CLUSTER_AUTHORIZATION_FAILED|authoriz/i.test(String(e)));
  } finally {
    await bobAdmin.disconnect();
  }
  const a = admin.admin();
  await a.connect();
  await a.createAcls({ acl: [{
    resourceType: AclResourceTypes.TOPIC, resourceName: topic.slice(0, 6), resourcePatternType: ResourcePatternTypes.PREFIXED,
    principal: "User:bob", host: "*", operation: AclOperationTypes.WRITE, permissionType: AclPermissionTypes.ALLOW,
  }] });
  await a.disconnect();

  const [answer] = await producer.send({ topic, acks: -1, messages: [{ value: "allowed" }] });
  assert.equal(answer.errorCode, 0);
}
