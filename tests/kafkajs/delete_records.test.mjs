// KafkaJS 2.2 (pinned in package-lock.json): admin.deleteTopicRecords (DeleteRecords, KIP-107)
// moves a partition's log start offset; fetchTopicOffsets then answers it as `low`, a consumer
// reading from the beginning starts there, -1 deletes up to the high watermark, and an offset past
// it is refused (OFFSET_OUT_OF_RANGE). The broker is started by
// tests/integration/test_delete_records.py, which passes its address in KAFKA_BOOTSTRAP.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Kafka, logLevel } from "kafkajs";
import { waitFor } from "./wait_for.mjs";

const bootstrap = process.env.KAFKA_BOOTSTRAP;
const topic = process.env.KAFKA_TOPIC ?? `kafkajs-dr-${Date.now()}`;

const kafka = new Kafka({
  clientId: "kafkajs-delete-records-test",
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { retries: 2 },
});

const offsetsOf = async (admin) => {
  const [p] = await admin.fetchTopicOffsets(topic);
  return { low: p.low, high: p.high };
};

test("KafkaJS: deleteTopicRecords moves the low watermark and consumers start there", { timeout: 120_000 }, async () => {
  assert.ok(bootstrap, "KAFKA_BOOTSTRAP must name the broker");
  const admin = kafka.admin();
  await admin.connect();
  const producer = kafka.producer();
  await producer.connect();
  const consumer = kafka.consumer({ groupId: `${topic}-group`, sessionTimeout: 10_000, heartbeatInterval: 500 });
  try {
    assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }), true);
    await producer.send({ topic, acks: -1, messages: Array.from({ length: 10 }, (_, i) => ({ value: `v-${i}` })) });
    assert.deepEqual(await offsetsOf(admin), { low: "0", high: "10" });

    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: "4" }] });
    assert.deepEqual(await offsetsOf(admin), { low: "4", high: "10" });

    // A consumer from the beginning starts at the new log start.
    const seen = [];
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => { seen.push(Number(message.offset)); } });
    await waitFor(() => seen.length >= 6, "the 6 records left");
    assert.deepEqual(seen.slice(0, 6), [4, 5, 6, 7, 8, 9]);

    // Past the high watermark: refused, nothing changes. KafkaJS does not retry the partition's
    // error (not retriable) and wraps it as the cause of a KafkaJSNonRetriableError.
    await assert.rejects(
      admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: "11" }] }),
      (e) => {
        const refused = e.name === "KafkaJSDeleteTopicRecordsError" ? e : e.cause;
        return refused?.name === "KafkaJSDeleteTopicRecordsError" &&
          refused.partitions.some((p) => p.error?.type === "OFFSET_OUT_OF_RANGE");
      },
    );
    assert.deepEqual(await offsetsOf(admin), { low: "4", high: "10" });

    // -1: up to the high watermark.
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: "-1" }] });
    assert.deepEqual(await offsetsOf(admin), { low: "10", high: "10" });
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
    await admin.disconnect();
  }
});
