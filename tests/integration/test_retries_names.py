"""Configurable retry and dead-letter topic names (issue 18, docs/retries.md "Names"): templates with
<topic> and <group> set per consumer instance (REST body, WebSocket join) or as broker defaults
(retry.topic.template, dead.letter.topic.template); nacks, the retry subscription, the dead-letter
list and redrive use them; they survive a restart with the instance; bad ones are refused naming
the key."""
import asyncio
import base64
import json
import subprocess

import requests
import websockets

from conftest import wait_until
from test_retries import BINARY, DEADLINE_S, V2, header, headers_all, nack, poll, produce, read_all

RETRY_TEMPLATE = "retry-<group>-<topic>"
DLT_TEMPLATE = "<group>_dlt_<topic>"


def names(topic, group, retry=RETRY_TEMPLATE, dlt=DLT_TEMPLATE):
    expand = lambda t: t.replace("<topic>", topic).replace("<group>", group)   # noqa: E731
    return expand(retry), expand(dlt)


def topics(broker):
    r = requests.get(f"{broker.url}/topics")
    assert r.status_code == 200, r.text
    return set(r.json())


def create_consumer(broker, group, **settings):
    body = {"format": "binary", "auto.offset.reset": "earliest", **settings}
    r = requests.post(f"{broker.url}/consumers/{group}", json=body, headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    return r.json()["base_uri"]


def subscribe(base, topic):
    r = requests.post(base + "/subscription", json={"topics": [topic]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text


def fail_poison_until_dead(broker, base, topic, dlt, partitions=1):
    """Polls, nacks every "poison" record and commits, until one dead letter is in `dlt`.
    Returns [(value, topic it came from, attempt header)] of every delivery."""
    seen = []

    def round_():
        for rec in poll(base):
            value = base64.b64decode(rec["value"]).decode()
            seen.append((value, rec["topic"], header(rec, "ringlog-delivery-attempt")))
            if value == "poison":
                r = nack(base, [rec], f"bad {sum(1 for s in seen if s[0] == 'poison')}")
                assert r.status_code == 204, r.text
        r = requests.post(base + "/offsets", headers={"Content-Type": V2})
        assert r.status_code == 204, r.text
        return sum(len(read_all(broker, dlt, p)) for p in range(partitions)) == 1

    wait_until(round_, DEADLINE_S, f"a dead letter in {dlt}")
    return seen


def test_instance_templates_name_the_retry_and_dead_letter_topics_and_survive_a_restart(fresh_broker, topic_name):
    b = fresh_broker()
    topic = topic_name
    group = "named-" + topic
    retry, dlt = names(topic, group)
    default_retry, default_dlt = f"{topic}.{group}.retry", f"{topic}.{group}.dlq"
    b.create_topic(topic)
    produce(b, topic, [("p", "poison"), ("q", "fine")])
    base = create_consumer(b, group, **{"max.delivery.attempts": 2, "retry.backoff.ms": 100,
                                        "retry.topic.template": RETRY_TEMPLATE,
                                        "dead.letter.topic.template": DLT_TEMPLATE})
    subscribe(base, topic)
    seen = fail_poison_until_dead(b, base, topic, dlt)
    # The poison record came back from the named retry topic (subscribed for the member), then died.
    assert [s for s in seen if s[0] == "poison"] == [("poison", topic, None), ("poison", retry, "2")], seen
    assert [s for s in seen if s[0] == "fine"] == [("fine", topic, None)]
    assert retry in topics(b) and dlt in topics(b)
    assert default_retry not in topics(b) and default_dlt not in topics(b)
    letter = read_all(b, dlt, 0)[0]
    assert headers_all(letter, "ringlog-nack-reason") == ["bad 1", "bad 2"]
    # The subscription the client reads back is its own (the named retry topic is the broker's).
    r = requests.get(base + "/subscription", headers={"Accept": V2})
    assert r.status_code == 200 and r.json()["topics"] == [topic], r.text
    # The dead-letter list finds the named topic; the default name is not a dead-letter topic of it.
    listed = requests.get(b.v3(f"/consumer-groups/{group}/dead-letters"))
    assert listed.status_code == 200, listed.text
    assert [(t["topic_name"], t["original_topic_name"], t["dead_letters"]) for t in listed.json()["data"]] == [(dlt, topic, 1)]
    browse = requests.get(b.v3(f"/consumer-groups/{group}/dead-letters/{dlt}/records"))
    assert browse.status_code == 200 and browse.json()["data"][0]["attempts"] == 2, browse.text

    # A restart keeps the instance's templates (stored with it in __consumer_offsets).
    assert b.stop() == 0
    b.start()
    listed = wait_until(lambda: (lambda r: r.json() if r.status_code == 200 and r.json()["data"] else None)(
        requests.get(b.v3(f"/consumer-groups/{group}/dead-letters"))), DEADLINE_S, "the dead-letter list after restart")
    assert [t["topic_name"] for t in listed["data"]] == [dlt]
    # Redrive to the retry path goes to the named retry topic, once.
    before = len(read_all(b, retry, 0))
    r = requests.post(b.v3(f"/consumer-groups/{group}/dead-letters/{dlt}/redrive"), json={"to": "retry"})
    assert r.status_code == 200 and r.json()["redriven"] == 1, r.text
    copies = wait_until(lambda: (lambda rs: rs if len(rs) > before else None)(read_all(b, retry, 0)), DEADLINE_S,
                        "the redriven copy in the named retry topic")
    assert header(copies[-1], "ringlog-redrive-source") == f"{dlt}/0@{letter['offset']}"
    assert header(copies[-1], "ringlog-delivery-attempt") == "1"
    r = requests.post(b.v3(f"/consumer-groups/{group}/dead-letters/{dlt}/redrive"), json={"to": "retry"})
    assert r.status_code == 200 and r.json()["redriven"] == 0 and r.json()["already_redriven"] == 1, r.text
    assert default_retry not in topics(b)


def test_broker_default_templates_apply_to_instances_that_set_none(fresh_broker, topic_name):
    retry_default, dlt_default = "<topic>--<group>--again", "dead.<group>.<topic>"
    b = fresh_broker([f"retry.topic.template={retry_default}", f"dead.letter.topic.template={dlt_default}"])
    topic = topic_name
    group = "dflt-" + topic
    retry, dlt = names(topic, group, retry_default, dlt_default)
    b.create_topic(topic)
    produce(b, topic, [("p", "poison")])
    base = create_consumer(b, group, **{"max.delivery.attempts": 2, "retry.backoff.ms": 0})
    subscribe(base, topic)
    seen = fail_poison_until_dead(b, base, topic, dlt)
    assert seen == [("poison", topic, None), ("poison", retry, "2")], seen
    # The broker's configs show them.
    node = requests.get(b.v3("/brokers")).json()["data"][0]["broker_id"]
    r = requests.get(b.v3(f"/brokers/{node}/configs/dead.letter.topic.template"))
    assert r.status_code == 200 and r.json()["value"] == dlt_default, r.text
    listed = requests.get(b.v3(f"/consumer-groups/{group}/dead-letters")).json()["data"]
    assert [t["topic_name"] for t in listed] == [dlt]


def test_bad_templates_are_refused_naming_the_key(broker, topic_name, ringlog_bin, tmp_path):
    group = "badnames-" + topic_name
    too_long = "<topic><group>" + "x" * 187
    cases = [({"retry.topic.template": "<topic>.retry"}, "retry.topic.template", "<group>"),
             ({"dead.letter.topic.template": "<topic>/<group>"}, "dead.letter.topic.template", "'/'"),
             ({"dead.letter.topic.template": "__<topic>.<group>"}, "dead.letter.topic.template", "__"),
             ({"retry.topic.template": too_long}, "retry.topic.template", "200 characters"),
             ({"retry.topic.template": 5}, "retry.topic.template", "string"),
             ({"retry.topic.template": "<topic>.<group>.x", "dead.letter.topic.template": "<topic>.<group>.x"},
              "dead.letter.topic.template", "different from retry.topic.template")]
    for settings, key, why in cases:
        r = requests.post(f"{broker.url}/consumers/{group}", json=settings, headers={"Content-Type": V2})
        assert r.status_code == 422, (settings, r.text)
        assert key in r.json()["message"] and why in r.json()["message"], (settings, r.text)
    # 200 characters is the limit, not past it.
    r = requests.post(f"{broker.url}/consumers/{group}", json={"retry.topic.template": too_long[:-1]},
                      headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    requests.delete(r.json()["base_uri"], headers={"Content-Type": V2})

    async def ws_join():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "join", "id": 1, "group": group, "topics": [topic_name],
                                      "dead.letter.topic.template": "<topic>.dlq"}))
            m = json.loads(await asyncio.wait_for(ws.recv(), timeout=DEADLINE_S))
            assert m["type"] == "error" and "dead.letter.topic.template" in m["message"], m

    asyncio.run(ws_join())
    # Broker defaults: refused at start, naming the key.
    for setting, key in [("retry.topic.template=<topic>.retry", "retry.topic.template"),
                         ("dead.letter.topic.template=<group>:<topic>", "dead.letter.topic.template"),
                         ("dead.letter.topic.template=<topic>.<group>.retry", "dead.letter.topic.template")]:
        p = subprocess.run([str(ringlog_bin), "serve", "--set", f"log.dirs={tmp_path}/d", "--set", setting],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (setting, p.stdout, p.stderr)
        assert key in p.stdout + p.stderr, setting
