// KafkaJS 2.2 (pinned in package-lock.json): a consumer group member seeks past the end of a
// partition. The Fetch answers OFFSET_OUT_OF_RANGE and KafkaJS resets the partition by committing
// its default offset (-2, "earliest", with fromBeginning) and reading the group's offsets back.
// Kafka stores that commit as given; a broker that refuses it makes the consumer crash
// (KafkaJSNonRetriableError) instead of recovering. The broker is started by
// tests/integration/test_kafka_groups.py, which passes its address in KAFKA_BOOTSTRAP.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Kafka, logLevel } from "kafkajs";
import { waitFor } from "./wait_for.mjs";

const bootstrap = process.env.KAFKA_BOOTSTRAP;
const topic = process.env.KAFKA_TOPIC ?? `kafkajs-seek-${Date.now()}`;
const groupId = `${topic}-group`;

const kafka = new Kafka({ clientId: "kafkajs-seek-test", brokers: [bootstrap], logLevel: logLevel.NOTHING });

test("KafkaJS: a seek past the end resets by committing -2 and the group goes on", { timeout: 120_000 }, async () => {
  assert.ok(bootstrap, "KAFKA_BOOTSTRAP must name the broker");
  const admin = kafka.admin();
  await admin.connect();
  const producer = kafka.producer();
  await producer.connect();
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 500 });
  const crashes = [];
  consumer.on(consumer.events.CRASH, (e) => crashes.push(String(e.payload.error)));
  try {
    assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }), true);
    const produce = (from, to) =>
      producer.send({ topic, acks: -1, messages: Array.from({ length: to - from }, (_, i) => ({ value: `v-${from + i}` })) });
    await produce(0, 5);

    const seen = new Set();
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => { seen.add(Number(message.offset)); } });
    await waitFor(() => seen.size === 5, "the first 5 records");

    consumer.seek({ topic, partition: 0, offset: "1000" });   // past the end (5)
    await produce(5, 10);
    // The reset commits -2 (fromBeginning), reads it back from OffsetFetch and starts over from
    // the earliest offset: the records after the seek arrive and the consumer never crashes.
    await waitFor(() => [5, 6, 7, 8, 9].every((o) => seen.has(o)) || crashes.length > 0, "records 5..9 after the seek");
    assert.deepEqual(crashes, []);
    await waitFor(async () => {
      const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
      return offsets[0].partitions[0].offset === "10";
    }, "the group's committed offset to reach 10");
    assert.deepEqual(crashes, []);
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
    await admin.disconnect();
  }
});
