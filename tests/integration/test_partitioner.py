"""Kafka's murmur2 partitioner against kafka-python's for 10,000 keys, in the tool and end to end."""
import base64
import os
import pathlib
import random
import string
import subprocess

import pytest
import requests
from kafka.partitioner.default import murmur2

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = pathlib.Path(os.environ.get("RINGLOG_MURMUR2_TOOL", ROOT / "build" / "tests" / "gateway" / "murmur2_tool"))


def keys(n, seed=1234):
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "-_.:/é"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def java_partition(key_bytes, partitions):
    # kafka-python returns murmur2 as unsigned 32 bits; Kafka's toPositive clears the sign bit.
    return (murmur2(key_bytes) & 0x7fffffff) % partitions


def test_murmur2_tool_matches_kafka_python_for_10000_keys():
    if not TOOL.exists():
        pytest.fail(f"{TOOL} not built (ninja -C build tests/gateway/murmur2_tool)")
    ks = keys(10000)
    out = subprocess.run([str(TOOL), "12"], input="\n".join(ks) + "\n", capture_output=True, text=True,
                         check=True, encoding="utf-8").stdout.splitlines()
    assert len(out) == len(ks)
    for key, line in zip(ks, out):
        h, p = map(int, line.split())
        kb = key.encode("utf-8")
        assert h & 0xffffffff == murmur2(kb), key
        assert p == java_partition(kb, 12), key


def test_keyed_records_land_on_the_java_partition(broker, topic_name):
    partitions = 7
    broker.create_topic(topic_name, partitions=partitions)
    ks = keys(1000, seed=99)
    url = f"{broker.url}/topics/{topic_name}"
    for start in range(0, len(ks), 250):
        batch = ks[start:start + 250]
        records = [{"key": base64.b64encode(k.encode()).decode(), "value": None} for k in batch]
        r = requests.post(url, json={"records": records},
                          headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
        assert r.status_code == 200, r.text
        for k, o in zip(batch, r.json()["offsets"]):
            assert o["partition"] == java_partition(k.encode("utf-8"), partitions), k
