"""A consume-transform-produce app (the exactly-once pipeline of issue 16), run as its own
process by test_transactions.py so that it can be killed with SIGKILL at any moment:

    eos_app.py BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC GROUP TRANSACTIONAL_ID BATCH

It reads INPUT_TOPIC as a member of GROUP (read_committed), writes each record's value with
b"|out" appended to OUTPUT_TOPIC (same key, same partition number) and commits its input
offsets in the same transaction, BATCH records per transaction, until it is killed. A restart
with the same transactional.id fences the killed instance and aborts what it left open.
"""
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer


def main():
    bootstrap, input_topic, output_topic, group, tid, batch = sys.argv[1:7]
    batch = int(batch)
    # A static member (KIP-345): the restarted instance takes the killed one's place at once
    # instead of waiting for its session to lapse.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": tid,
                         "session.timeout.ms": 6000, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 30000})
    producer.init_transactions(30)
    consumer.subscribe([input_topic])
    print("ready", flush=True)
    while True:
        msgs = consumer.consume(batch, 1.0)
        msgs = [m for m in msgs if m.error() is None or m.error().code() != KafkaError._PARTITION_EOF]
        if not msgs:
            continue
        for m in msgs:
            if m.error():
                raise KafkaException(m.error())
        producer.begin_transaction()
        for m in msgs:
            producer.produce(output_topic, key=m.key(), value=m.value() + b"|out", partition=m.partition())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)


if __name__ == "__main__":
    main()
