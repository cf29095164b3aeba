// KafkaJS 2.2 (pinned in package-lock.json) against ringlog's Kafka listener: admin (create,
// describe, delete topics and groups), produce with keys and headers, and a consumer group of
// two members that consumes everything once and commits. The broker is started by
// tests/integration/test_kafka_groups.py, which passes its address in KAFKA_BOOTSTRAP.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Kafka, logLevel } from "kafkajs";
import { waitFor } from "./wait_for.mjs";

const bootstrap = process.env.KAFKA_BOOTSTRAP;
const topic = process.env.KAFKA_TOPIC ?? `kafkajs-${Date.now()}`;
const groupId = `${topic}-group`;

const kafka = new Kafka({ clientId: "kafkajs-test", brokers: [bootstrap], logLevel: logLevel.WARN });

test("KafkaJS: admin, produce, a consumer group of two, offsets, delete", { timeout: 120_000 }, async () => {
  assert.ok(bootstrap, "KAFKA_BOOTSTRAP must name the broker");
  const admin = kafka.admin();
  await admin.connect();
  try {
    assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true }), true);
    assert.ok((await admin.listTopics()).includes(topic));
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    assert.deepEqual(meta.topics[0].partitions.map((p) => p.partitionId).sort(), [0, 1, 2]);

    const producer = kafka.producer();
    await producer.connect();
    const messages = Array.from({ length: 30 }, (_, i) => ({
      key: `key-${i}`,
      value: `value-${i}`,
      headers: { n: `${i}` },
      partition: i % 3,
    }));
    const sent = await producer.send({ topic, acks: -1, messages });
    assert.equal(sent.reduce((n, r) => n + 1, 0), 3);
    await producer.disconnect();

    // Two members of one group: every record exactly once, with its key and headers.
    const seen = new Map();
    const members = [kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 500 }),
                     kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 500 })];
    for (const c of members) {
      await c.connect();
      await c.subscribe({ topic, fromBeginning: true });
      await c.run({
        eachMessage: async ({ partition, message }) => {
          const id = `${partition}/${message.offset}`;
          assert.ok(!seen.has(id), `read twice: ${id}`);
          seen.set(id, [message.key.toString(), message.value.toString(), message.headers.n.toString()]);
        },
      });
    }
    await waitFor(() => seen.size === 30, "30 records");
    for (const [key, value, n] of seen.values()) {
      assert.equal(key, `key-${n}`);
      assert.equal(value, `value-${n}`);
    }
    const described = await admin.describeGroups([groupId]);
    assert.equal(described.groups[0].state, "Stable");
    assert.equal(described.groups[0].protocolType, "consumer");
    assert.equal(described.groups[0].members.length, 2);
    // Committed offsets: 10 per partition once the members have committed.
    await waitFor(async () => {
      const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
      return offsets[0].partitions.every((p) => p.offset === "10");
    }, "committed offsets of 10 per partition");
    for (const c of members) await c.disconnect();

    assert.ok((await admin.listGroups()).groups.some((g) => g.groupId === groupId));
    await admin.deleteGroups([groupId]);
    assert.ok(!(await admin.listGroups()).groups.some((g) => g.groupId === groupId));
    await admin.deleteTopics({ topics: [topic] });
    await waitFor(async () => !(await admin.listTopics()).includes(topic), "the topic to go");
  } finally {
    await admin.disconnect();
  }
});
