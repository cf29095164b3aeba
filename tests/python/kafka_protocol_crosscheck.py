#!/usr/bin/python3
"""Cross-checks ringlog's generated Kafka codec against kafka-python (Debian python3-kafka).

Usage: /usr/bin/python3 kafka_protocol_crosscheck.py PATH/TO/protocol_crosscheck

Every request and response class kafka-python defines (its own schemas, written independently
of Kafka's JSON files; classic non-flexible versions only) whose api key and version ringlog's
codec also knows is filled with non-default values generically from its schema, encoded by
kafka-python, decoded by `protocol_crosscheck` and written back; the bytes must be identical and
fully consumed. Exits non-zero on the first difference, and when fewer than MIN_CHECKED pairs
were compared (so a broken discovery cannot pass by checking nothing).
"""

import importlib
import subprocess
import sys

from kafka.protocol.api import Request, Response
from kafka.protocol import types as kt

MODULES = ["admin", "commit", "fetch", "group", "metadata", "offset", "produce"]
MIN_CHECKED = 150

# kafka-python 2.0.2 schemas that disagree with Kafka's message definitions and the protocol
# guide (checked by hand); ringlog must refuse these bodies, not accept them.
KAFKA_PYTHON_BUGS = {
    # FindCoordinator Response v1 => throttle_time_ms error_code error_message node_id host port;
    # kafka-python leaves out throttle_time_ms.
    "GroupCoordinatorResponse_v1",
    # ListOffsets Request v4+: current_leader_epoch is INT32; kafka-python writes an Int64.
    "OffsetRequest_v4", "OffsetRequest_v5",
    # Produce Response v8: record_errors and error_message belong to each partition response;
    # kafka-python's parentheses put them outside the partitions array.
    "ProduceResponse_v8",
    # DescribeGroups Response v3: authorized_operations is a field of each group; kafka-python's
    # parentheses put it outside the groups array, so it is never written.
    "DescribeGroupsResponse_v3",
    # DescribeAcls v2 is Kafka's first flexible version (compact strings and arrays, tagged
    # fields: DescribeAclsRequest.json "flexibleVersions": "2+"); kafka-python writes v2 as v1.
    "DescribeAclsRequest_v2", "DescribeAclsResponse_v2",
}


def sample(t, seed):
    """A value for kafka-python type t (a type class, an instance, or a Schema)."""
    if isinstance(t, kt.Schema):
        return tuple(sample(f, seed * 3 + i + 1) for i, f in enumerate(t.fields))
    if isinstance(t, kt.Array):
        return [sample(t.array_of, seed * 5 + j + 1) for j in range(2)]
    cls = t if isinstance(t, type) else type(t)
    if issubclass(cls, kt.String):
        return "s%d" % (seed % 1000)
    if cls is kt.Int8:
        return 10 + seed % 90
    if cls is kt.Int16:
        return 100 + seed % 1000
    if cls is kt.Int32:
        return 1000 + seed % 100000
    if cls is kt.Int64:
        return 10 ** 10 + seed
    if cls is kt.Boolean:
        return True
    if cls is kt.Bytes:
        return bytes([0xab, seed % 256, 1])
    raise TypeError("no sample for %r" % (t,))


def instantiate_string_classes(t):
    """kafka-python's FetchRequest v7+ schemas name the String class where an instance belongs,
    so kafka-python itself cannot encode them; swap in instances (this process only)."""
    todo = [t]
    while todo:
        x = todo.pop()
        if isinstance(x, kt.Schema):
            x.fields = tuple(kt.String("utf-8") if f is kt.String else f for f in x.fields)
            todo.extend(x.fields)
        elif isinstance(x, kt.Array):
            if x.array_of is kt.String:
                x.array_of = kt.String("utf-8")
            todo.append(x.array_of)


def classes():
    seen = set()
    for name in MODULES:
        mod = importlib.import_module("kafka.protocol." + name)
        for attr in dir(mod):
            cls = getattr(mod, attr)
            if not isinstance(cls, type) or not hasattr(cls, "SCHEMA") or not hasattr(cls, "API_KEY"):
                continue
            if not (issubclass(cls, Request) or issubclass(cls, Response)) or cls in seen:
                continue
            if not isinstance(getattr(cls, "API_VERSION", None), int):
                continue
            seen.add(cls)
            yield cls


def main():
    tool = sys.argv[1]
    cases = []
    unencodable = []
    for cls in sorted(classes(), key=lambda c: (c.__name__)):
        kind = "request" if issubclass(cls, Request) else "response"
        instantiate_string_classes(cls.SCHEMA)
        values = sample(cls.SCHEMA, cls.API_KEY * 31 + cls.API_VERSION)
        obj = cls(*values)  # kafka-python binds encode weakly: keep the object alive
        try:
            body = obj.encode()
        except TypeError as e:  # a few kafka-python schemas name a type class it cannot encode
            unencodable.append("%s (%s)" % (cls.__name__, e))
            continue
        cases.append((cls.__name__, kind, cls.API_KEY, cls.API_VERSION, bytes(body)))
    lines = "".join("%s %d %d %s\n" % (k, key, v, b.hex()) for _, k, key, v, b in cases)
    out = subprocess.run([tool], input=lines, capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != len(cases):
        print("tool answered %d lines for %d cases" % (len(out), len(cases)))
        return 1
    checked, skipped, failures, known_bugs = 0, [], [], []
    for (name, kind, key, version, body), answer in zip(cases, out):
        if answer.startswith("error unknown api key") or "is outside" in answer:
            skipped.append(name)
            continue
        if name in KAFKA_PYTHON_BUGS:
            if answer.startswith("ok ") and answer[3:] == body.hex():
                failures.append("%s is listed as a kafka-python bug but now matches: update the list" % name)
            else:
                known_bugs.append(name)
            continue
        if not answer.startswith("ok "):
            failures.append("%s (%s %d v%d): %s" % (name, kind, key, version, answer))
            continue
        if answer[3:] != body.hex():
            failures.append("%s (%s %d v%d): re-encoded\n  %s\nkafka-python wrote\n  %s" %
                            (name, kind, key, version, answer[3:], body.hex()))
            continue
        checked += 1
    for f in failures:
        print("MISMATCH", f)
    for u in unencodable:
        print("kafka-python cannot encode", u)
    print("kafka-python crosscheck: %d classes identical, %d skipped (api or version ringlog does not know: %s), "
          "%d refused as known kafka-python schema bugs (%s), %d mismatches" %
          (checked, len(skipped), " ".join(sorted(skipped)) or "-", len(known_bugs), " ".join(sorted(known_bugs)),
           len(failures)))
    if failures or checked < MIN_CHECKED:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
