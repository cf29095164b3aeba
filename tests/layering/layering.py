#!/usr/bin/python3
"""Layering test: every include in src/<module>/ and include/ringlog/<module>/ points down the
module graph of design.md section 3 (docs/architecture.md is the same table for a reader).

  layering.py --root DIR     checks the tree at DIR; exit 0 when clean, 1 with one line per
                             violation (file:line, the include, the rule it breaks)
  layering.py --self-test    negative controls: fake trees with one wrong include each must fail

Three rules, all from design.md section 3 and style.md "Layout":
  1. `#include "ringlog/M/..."` (or <ringlog/M/...>) from module N is allowed only when M is on a
     lower row of LAYERS than N, or M is listed in SAME_ROW[N] (rows like "rpc protocol" have an
     order inside them). Every directory in src/ must be a module of LAYERS.
  2. A quoted include without "ringlog/" names a private header of the same module: it must exist
     in the including file's own directory under src/<module>/ (never "../other/x.h").
  3. Third-party headers stay in the modules THIRD_PARTY allows, also when they arrive through a
     ringlog header (a storage file that includes a runtime header that includes Boost sees Boost).

  4. The cores and the broker run under a simulator (issue 28 stage F): in DETERMINISTIC modules no
     line outside a // comment calls a thread sleep, std::random_device or a std::chrono clock's
     now(); time comes from base::clock (measurements from base::stopwatch), randomness from
     base::random_source, waits are runtime timers.

ALLOWLIST holds today's violations, each with why it is there. It can only shrink: an entry whose
include is gone, or no longer breaks a rule, fails the test until it is removed from the list.

Limits: includes are read line by line (`#include` at the start of a line, after blanks); an
include inside a /* */ comment or behind an #if that is never compiled still counts, and one made
by a macro is not seen. Generated headers (ringlog/protocol/messages.h, written to the build
directory) are taken as their module's, without reading them.
"""
import argparse
import os
import re
import sys
import tempfile

# design.md section 3, top to bottom. A module may include modules of the rows below its own.
# Names in parentheses in the comments are design.md's where today's directory differs;
# "producer_state" is a row design.md plans and src/ has not yet; security sits
# below broker (design.md lists it above), because the broker authorizes each call with it.
LAYERS = [
    ["app"],                              # main, signals, start/stop order (composition root)
    ["cli"],                              # CLI commands, load generators, client code
    ["gateway"],                          # HTTP/REST, WebSocket, console files
    ["kafka"],                            # (kafka_api) the Kafka-protocol listener for clients
    ["broker"],                           # the service API and router: authorizes every call
    ["security"],                         # principals, authenticators, authorizer, quotas
    ["group", "txn", "delay"],            # coordinators built on partitions
    ["partition"],                        # replica object (issue 28 stage B), partition manager
    ["replication", "controller"],        # pure replica state; metadata image, active controller
    ["raft", "producer_state"],           # raft state machine; idempotence state (planned)
    ["rpc", "protocol"],                  # inter-broker transport; Kafka wire codec
    ["storage"],                          # segments, indexes, recovery, retention, compaction
    ["runtime"],                          # shards, event loops, cross-shard queues, timers
    ["io", "codec", "model", "config", "base"],
]

# Edges inside one row, which design.md draws on one line but which have an order: the transport
# speaks the wire codec; every bottom-row module stands on base, and codec and io on model's types.
SAME_ROW = {
    "rpc": {"protocol"},
    "model": {"base"},
    "codec": {"model", "base"},
    "io": {"model", "base"},
    "config": {"model", "base"},
}

# Third-party include families and the modules that may see them. design.md section 3: "storage,
# raft, replication's state machine and the coordinators never see sockets, HTTP, JSON or Boost.
# liburing appears only in io (and runtime's loop integration)"; section 2: each shard's loop
# drives Asio (runtime), the listeners and the cluster transport are Asio servers (kafka, rpc);
# style.md: simdjson/nlohmann in gateway (simdjson also in config), the compression libraries in
# codec. cli is the client side (Beast, JSON) and app the composition root.
THIRD_PARTY_PREFIXES = [
    ("boost/", "boost"),
    ("liburing", "liburing"),
    ("simdjson", "json"),
    ("nlohmann/", "json"),
    ("lz4", "compression"),
    ("zlib.h", "compression"),
    ("snappy", "compression"),
    ("zstd", "compression"),
    ("openssl/", "openssl"),
]
THIRD_PARTY = {
    "boost": {"app", "cli", "gateway", "kafka", "rpc", "runtime"},
    "liburing": {"io", "runtime"},
    "json": {"app", "cli", "gateway", "config"},
    "compression": {"codec"},
    # TLS through Asio's SSL streams on the listeners and clients, SCRAM and JWT in security.
    "openssl": {"app", "cli", "gateway", "kafka", "rpc", "runtime", "security"},
}

# Today's violations, each (including file, included path) -> why, and what removes it.
# Only removals: an entry that no longer matches a violation fails the test (see module doc).
ALLOWLIST = {
}

GENERATED = {"ringlog/protocol/messages.h"}

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".cc", ".cpp", ".cxx", ".ipp")


# Rule 4: modules whose code a simulation runs, and what they may not call themselves.
DETERMINISTIC = {"broker", "partition", "controller", "replication", "raft", "producer_state", "storage",
                 "group", "txn", "delay"}
NONDETERMINISTIC_CALLS = re.compile(
    r"this_thread::sleep_for|this_thread::sleep_until|std::random_device|"
    r"(steady_clock|system_clock|high_resolution_clock)::now\s*\(")


def nondeterministic_calls(root, rel):
    """[(line number, the call)] of rule 4 in one file; // comments are skipped."""
    found = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            code = line.split("//", 1)[0]
            m = NONDETERMINISTIC_CALLS.search(code)
            if m:
                found.append((number, m.group(0)))
    return found


def module_rows():
    """Module name -> row index (0 = top)."""
    rows = {}
    for index, row in enumerate(LAYERS):
        for module in row:
            rows[module] = index
    return rows


def may_include(including, included, rows):
    """True when module `including` may include a header of module `included`."""
    if including == included:
        return True
    if rows[included] > rows[including]:
        return True
    return included in SAME_ROW.get(including, set())


def third_party_family(path):
    for prefix, family in THIRD_PARTY_PREFIXES:
        if path.startswith(prefix):
            return family
    return None


def source_files(root):
    """(relative path, module) of every C++ file of a module: src/<m>/** and include/ringlog/<m>/**."""
    found = []
    for base in ("src", os.path.join("include", "ringlog")):
        top = os.path.join(root, base)
        if not os.path.isdir(top):
            continue
        for module in sorted(os.listdir(top)):
            module_dir = os.path.join(top, module)
            if not os.path.isdir(module_dir):
                continue
            for dirpath, dirnames, filenames in os.walk(module_dir):
                dirnames.sort()
                for name in sorted(filenames):
                    if name.endswith(SOURCE_SUFFIXES):
                        rel = os.path.relpath(os.path.join(dirpath, name), root)
                        found.append((rel, module))
    return found


def read_includes(root, rel):
    """[(line number, '<' or '"', path)] of the file's #include lines."""
    result = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                result.append((number, m.group(1), m.group(2)))
    return result


def check(root):
    """Returns (violations, stale allowlist entries); each a list of printable lines."""
    rows = module_rows()
    files = source_files(root)
    includes = {rel: read_includes(root, rel) for rel, _ in files}
    module_of = dict(files)
    problems = {}  # (file, included) -> message; the allowlist's key

    for rel, module in files:
        if module not in rows:
            problems[(rel, "")] = (f"{rel}: module '{module}' is not in LAYERS: place it in "
                                   "design.md's graph (and docs/architecture.md) first")
    # Rules 1 and 2, direct includes.
    for rel, module in files:
        if module not in rows:
            continue
        for number, delim, path in includes[rel]:
            if path.startswith("ringlog/"):
                parts = path.split("/")
                target = parts[1] if len(parts) > 2 else ""
                if target not in rows:
                    problems[(rel, path)] = f"{rel}:{number}: {path}: no module '{target}' in LAYERS"
                elif not may_include(module, target, rows):
                    problems[(rel, path)] = (
                        f"{rel}:{number}: {module} includes {path}, but {target} is not below "
                        f"{module} in design.md section 3 (row {rows[module]} -> row {rows[target]})")
            elif delim == '"':
                local = os.path.normpath(os.path.join(os.path.dirname(rel), path))
                if ".." in path.split("/") or not os.path.isfile(os.path.join(root, local)):
                    problems[(rel, path)] = (
                        f"{rel}:{number}: \"{path}\" is not a header of {module}'s own directory: "
                        "other modules' headers come from include/ringlog/<module>/")
    # Rule 4: no clock, sleep or entropy of its own in the code a simulation runs.
    for rel, module in files:
        if module not in DETERMINISTIC:
            continue
        for number, call in nondeterministic_calls(root, rel):
            problems[(rel, "determinism:" + call)] = (
                f"{rel}:{number}: {call} in {module}, which a simulation runs: take time from "
                "base::clock (base::stopwatch to measure), randomness from base::random_source, "
                "and wait on a runtime timer")
    # Rule 3: third-party families each file sees, through its ringlog and local includes.
    resolved = {}  # file -> [(included file, path as written)]
    direct = {}    # file -> {family: path as written}
    for rel, _ in files:
        resolved[rel] = []
        direct[rel] = {}
        for _, delim, path in includes[rel]:
            family = third_party_family(path) if delim == "<" else None
            if family:
                direct[rel].setdefault(family, path)
            elif path.startswith("ringlog/") and path not in GENERATED:
                header = os.path.join("include", path)
                if header in module_of:
                    resolved[rel].append((header, path))
            elif delim == '"':
                local = os.path.normpath(os.path.join(os.path.dirname(rel), path))
                if local in module_of:
                    resolved[rel].append((local, path))
    # seen[file][family] = chain of files by which the family arrives; a fixpoint, not recursion.
    seen = {rel: {fam: [p] for fam, p in direct[rel].items()} for rel in resolved}
    changed = True
    while changed:
        changed = False
        for rel in resolved:
            for header, _ in resolved[rel]:
                for family, chain in seen[header].items():
                    if family not in seen[rel]:
                        seen[rel][family] = [header] + chain
                        changed = True
    for rel, module in files:
        if module not in rows:
            continue
        for family, chain in seen[rel].items():
            if module in THIRD_PARTY[family]:
                continue
            # The allowlist key is the include as written in this file: the header it came by.
            key_path = next((p for h, p in resolved[rel] if h == chain[0]), chain[0])
            problems[(rel, key_path)] = (
                f"{rel}: {module} sees {family} ({' -> '.join(chain)}), which design.md allows "
                f"only in {', '.join(sorted(THIRD_PARTY[family]))}")

    violations = [msg for key, msg in sorted(problems.items()) if key not in ALLOWLIST]
    stale = [f"ALLOWLIST entry {key} no longer matches a violation: remove it from "
             f"tests/layering/layering.py (the list may only shrink)"
             for key in sorted(ALLOWLIST) if key not in problems]
    return violations, stale


def run(root):
    violations, stale = check(root)
    for line in violations + stale:
        print(line)
    files = len(source_files(root))
    if violations or stale:
        print(f"layering: {len(violations)} violation(s), {len(stale)} stale allowlist "
              f"entr{'y' if len(stale) == 1 else 'ies'} in {files} files")
        return 1
    print(f"layering: {files} files follow design.md section 3 ({len(ALLOWLIST)} allowlisted)")
    return 0


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def fake_tree(root):
    """A small clean tree: storage on io, broker on storage, runtime's Asio header."""
    write(root, "include/ringlog/base/result.h", "#pragma once\n#include <string>\n")
    write(root, "include/ringlog/io/file.h", '#include "ringlog/base/result.h"\n')
    write(root, "include/ringlog/storage/log.h", '#include "ringlog/io/file.h"\n')
    write(root, "include/ringlog/runtime/asio_context.h", "#include <boost/asio.hpp>\n")
    write(root, "src/storage/log.cc", '#include "ringlog/storage/log.h"\n#include "segment.h"\n')
    write(root, "src/storage/segment.h", "#pragma once\n")
    write(root, "src/broker/broker.cc", '#include "ringlog/storage/log.h"\n')
    write(root, "src/gateway/http.cc", "#include <boost/beast.hpp>\n")


def self_test():
    """Negative controls: each wrong include must be reported; the clean tree must pass."""
    global ALLOWLIST
    cases = [
        ("clean tree", [], {}, True),
        ("an include up the graph (storage -> broker)",
         [("src/storage/bad.cc", '#include "ringlog/broker/broker.h"\n')], {}, False),
        ("an include up the graph in a public header, angle brackets",
         [("include/ringlog/io/bad.h", "#include <ringlog/storage/log.h>\n")], {}, False),
        ("an include across one row (group -> txn)",
         [("src/group/bad.cc", '#include "ringlog/txn/coordinator.h"\n')], {}, False),
        ("a module missing from LAYERS",
         [("src/newthing/x.cc", '#include "ringlog/base/result.h"\n')], {}, False),
        ("another module's private header by a relative path",
         [("src/gateway/bad.cc", '#include "../storage/segment.h"\n')], {}, False),
        ("Boost in a core",
         [("src/storage/bad.cc", "#include <boost/asio.hpp>\n")], {}, False),
        ("Boost in a core through a runtime header",
         [("src/storage/bad.cc", '#include "ringlog/runtime/asio_context.h"\n')], {}, False),
        ("a thread sleep in the broker",
         [("src/broker/bad.cc", "void f() { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }\n")],
         {}, False),
        ("a raw clock in storage",
         [("src/storage/bad.cc", "auto t = std::chrono::steady_clock::now();\n")], {}, False),
        ("entropy of its own in the broker",
         [("src/broker/bad.cc", "std::random_device device;\n")], {}, False),
        ("a clock named in a comment passes",
         [("src/broker/ok.cc", "// not std::chrono::steady_clock::now() here\n")], {}, True),
        ("an allowlisted violation passes",
         [("src/storage/bad.cc", '#include "ringlog/broker/broker.h"\n')],
         {("src/storage/bad.cc", "ringlog/broker/broker.h"): "test"}, True),
        ("a stale allowlist entry fails",
         [], {("src/storage/bad.cc", "ringlog/broker/broker.h"): "test"}, False),
    ]
    saved = ALLOWLIST
    failures = 0
    try:
        for name, extra, allow, want_clean in cases:
            with tempfile.TemporaryDirectory() as root:
                fake_tree(root)
                for rel, text in extra:
                    write(root, rel, text)
                ALLOWLIST = allow
                violations, stale = check(root)
                clean = not violations and not stale
                verdict = "ok" if clean == want_clean else "WRONG"
                failures += clean != want_clean
                print(f"{verdict}: {name}: {'passes' if clean else 'fails'}"
                      + "".join(f"\n    {line}" for line in violations + stale))
    finally:
        ALLOWLIST = saved
    print(f"layering self-test: {len(cases) - failures}/{len(cases)} as expected")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    return self_test() if args.self_test else run(os.path.abspath(args.root))


if __name__ == "__main__":
    sys.exit(main())
