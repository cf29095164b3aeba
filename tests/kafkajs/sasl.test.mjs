// KafkaJS 2.2 over SASL_PLAINTEXT with SCRAM-SHA-256 (issue 29): produce, a consumer group that
// consumes and commits. Started by tests/integration/test_sasl.py, which passes the broker in
// KAFKA_BOOTSTRAP and the user in KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Kafka, logLevel } from "kafkajs";
import { waitFor } from "./wait_for.mjs";

const bootstrap = process.env.KAFKA_BOOTSTRAP;
const topic = `kafkajs-sasl-${Date.now()}`;

test("KafkaJS: SCRAM-SHA-256 and PLAIN logins, produce, consume, commit", { timeout: 120_000 }, async () => {
  for (const mechanism of ["scram-sha-256", "plain"]) {
    const kafka = new Kafka({
      clientId: "kafkajs-sasl",
      brokers: [bootstrap],
      logLevel: logLevel.NOTHING,
      sasl: { mechanism, username: process.env.KAFKA_SASL_USERNAME, password: process.env.KAFKA_SASL_PASSWORD },
    });
    const name = `${topic}-${mechanism}`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: name, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: name, acks: -1, messages: Array.from({ length: 10 }, (_, i) => ({ value: `v${i}` })) });
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: `${name}-group` });
    await consumer.connect();
    await consumer.subscribe({ topic: name, fromBeginning: true });
    const seen = [];
    await consumer.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()); } });
    await waitFor(() => seen.length >= 10, "ten records", 30_000);
    await consumer.disconnect();
    assert.deepEqual(seen, Array.from({ length: 10 }, (_, i) => `v${i}`));
  }
  // A wrong password is refused.
  const wrong = new Kafka({ clientId: "kafkajs-sasl", brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 0 },
    sasl: { mechanism: "scram-sha-256", username: process.env.KAFKA_SASL_USERNAME, password: "wrong" } });
  const admin = wrong.admin();
  await assert.rejects(admin.connect(), /SASL|[Aa]uthentication/);
});
