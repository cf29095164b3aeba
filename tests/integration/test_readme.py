"""Runs README.md's commands as written and checks what they print (the case
"readme-as-a-newcomer.md": instructions that were never executed as written).

Which blocks run: a fenced ```sh or ```python block right after the line `<!-- readme-test -->`
runs in the single-node session, against one broker this test starts the way `./scripts/run.sh`
does (defaults, plus a Kafka listener), in the README's order, in one bash process, so shell
variables and background jobs carry from block to block as in a user's terminal. A block after
`<!-- readme-test: cluster -->` runs in the cluster session, a second bash process that starts
its own nodes with the README's commands. Other blocks (the scripts that install and build, the
benchmarks) are not run here.

What is checked: a block is a series of steps, each one or more command lines followed by the
`# ` lines that show their output. Every command must exit 0 (bash -e) and the step's output
(stdout and stderr) must be exactly the lines shown, whitespace runs compared as one space, with
these wildcards: `...` inside a line matches any text, a line that is only `...` matches any
number of lines, a number of 7 or more digits (timestamps, CRCs) matches any number, an ISO
time (2026-12-01T21:39:27.668Z) any ISO time, and a 22-character base64url token (topic and
incarnation ids) any such token. A step that
shows no output must print nothing. `#   (note)` lines and notes after two spaces at the end
of a line, `output  (note)`, are prose, not output. In the cluster session, where which node
leads is decided by an election, every number matches any number or a lone "-", and yes/no,
leader/follower match each other.

What is rewritten: the README's ports become free ones (8082 and 9092 for the single node;
the 808N, 909N and 919N ports of the cluster, by their prefix), `./build/src/app/ringlog` becomes the
binary under test (its client commands get `--bootstrap-server` of the test's broker), and
`/var/log/dpkg.log` becomes tests/integration/readme/dpkg.log (300 lines of a Debian 12 image's
log), which the README's dpkg figures come from. Each session has a deadline; nothing sleeps
but the README's own commands.

Beside the sessions, every ```sh block (run or not) is checked for what breaks outside bash: a
URL with `?` not in quotes (zsh: "no matches found") and `$'...'` quoting.
"""
import os
import re
import signal
import socket
import subprocess

from conftest import ROOT, Broker, binary_path, free_port

README = ROOT / "README.md"
DPKG_FIXTURE = ROOT / "tests" / "integration" / "readme" / "dpkg.log"
# The single-node session's own commands wait about 15 s (a 5 s long poll, a 5 s stream, a 2 s
# stream, a 1 s poll); the cluster's elect a leader in about 2 s. Generous for a loaded machine.
SESSION_DEADLINE_S = 60.0
MARKER = re.compile(r"^<!-- readme-test(?::\s*(\w+))?\s*-->$")
NOTE_START = re.compile(r"^\s+\(")
TRAILING_NOTE = re.compile(r"\s{2,}\(.*\)\s*$")
ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"
WILDCARDS = re.compile(r"(\.\.\.|(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])|" + ISO_TIME + r"|\d{7,})")
CLI_WITH_BOOTSTRAP = "topics|produce|consume|groups|bench|cluster"


def readme_blocks(text):
    """[(session, language, [lines], line number of the first line)] of the marked blocks, in
    the README's order; session is "single" or the marker's word ("cluster")."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        if not m:
            i += 1
            continue
        fence = lines[i + 1] if i + 1 < len(lines) else ""
        assert fence.startswith("```") and fence[3:].strip() in ("sh", "python"), \
            f"README.md:{i + 1}: a readme-test marker must be followed by a ```sh or ```python fence"
        end = i + 2
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        blocks.append((m.group(1) or "single", fence[3:].strip(), lines[i + 2:end], i + 3))
        i = end + 1
    return blocks


def expected_lines(comments):
    """The output that `# ...` lines show, without the notes: a note starts with `#   (` and
    runs to the line that ends with `)`."""
    shown, in_note = [], False
    for comment in comments:
        body = comment[2:] if comment.startswith("# ") else comment[1:]
        if in_note or NOTE_START.match(body):
            in_note = not body.rstrip().endswith(")")
            continue
        shown.append(TRAILING_NOTE.sub("", body))
    return shown


def steps_of(language, lines, first_line_no):
    """[(readme line, command text, [expected lines])]. A python block is one step: the script,
    with the comment lines after its last statement as its output."""
    if language == "python":
        last_code = max(n for n, l in enumerate(lines) if l.strip() and not l.startswith("#"))
        shown = expected_lines([l for l in lines[last_code + 1:] if l.startswith("#")])
        return [(first_line_no, "\n".join(lines[:last_code + 1]), shown)]
    steps = []
    commands, comments, start = [], [], first_line_no
    for n, line in enumerate(lines):
        if line.startswith("#"):
            comments.append(line)
            continue
        if comments or (commands and not line.strip()):
            steps.append((start, "\n".join(commands), expected_lines(comments)))
            commands, comments = [], []
        if not line.strip():
            continue
        if not commands:
            start = first_line_no + n
        commands.append(line)
    if commands:
        steps.append((start, "\n".join(commands), expected_lines(comments)))
    return steps


# In the cluster session a number may also be "-" (a follower does not know the voters' lag).
SHAPE_TOKENS = re.compile(r"(\d+|(?<!\S)-(?!\S)|\byes\b|\bno\b|\bleader\b|\bfollower\b)")
SHAPE_ALTERNATIVES = {"yes": "(?:yes|no)", "no": "(?:yes|no)", "leader": "(?:leader|follower)",
                      "follower": "(?:leader|follower)"}


def line_pattern(expected, shape):
    parts = []
    for token in WILDCARDS.split(expected):
        if token == "...":
            parts.append(".*")
        elif re.fullmatch(ISO_TIME, token):
            parts.append(ISO_TIME)
        elif re.fullmatch(r"\d{7,}", token):
            parts.append(r"\d+")
        elif len(token) == 22 and re.fullmatch(r"[A-Za-z0-9_-]{22}", token):
            parts.append(r"[A-Za-z0-9_-]{22}")
        elif shape:
            for sub in SHAPE_TOKENS.split(token):
                if sub.isdigit() or sub == "-":
                    parts.append(r"(?:\d+|-)")
                else:
                    parts.append(SHAPE_ALTERNATIVES.get(sub) or re.escape(sub))
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts))


def normalize(line):
    return " ".join(line.split())


def output_matches(expected, actual, shape):
    """expected lines (with `...` lines) against actual lines: whole-list match, iteratively."""
    exp = [normalize(e) for e in expected]
    act = [normalize(a) for a in actual]
    while exp and not exp[-1]:
        exp.pop()
    while act and not act[-1]:
        act.pop()
    pats = [None if e == "..." else line_pattern(e, shape) for e in exp]
    # ok[j]: the expected lines so far match act[:j]
    ok = [True] + [False] * len(act)
    for p in pats:
        nxt = [False] * (len(act) + 1)
        for j in range(len(act) + 1):
            if p is None:
                nxt[j] = ok[j] or (j > 0 and nxt[j - 1])
            elif j > 0:
                nxt[j] = ok[j - 1] and p.fullmatch(act[j - 1]) is not None
        ok = nxt
    return ok[len(act)]


def free_prefix(avoid=()):
    """A 4-digit prefix P whose ports P1, P2 and P3 (below the ephemeral range) are free now."""
    for p in range(2100, 3200):
        if str(p) in avoid:
            continue
        try:
            socks = []
            for n in (1, 2, 3):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", int(f"{p}{n}")))
            return str(p)
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError("no free port prefix")


def cli_wrapper(workdir, bootstrap):
    """An executable that runs the binary under test, adding `--bootstrap-server` to the client
    commands. A script that execs, not a shell function: a function run with `&` would be a
    subshell whose pid `kill $(jobs -p)` stops instead of the binary's."""
    path = workdir / "ringlog"
    path.write_text("#!/bin/sh\n"
                    f"case \"$1\" in {CLI_WITH_BOOTSTRAP}) exec '{binary_path()}' \"$@\" --bootstrap-server '{bootstrap}';;\n"
                    f"*) exec '{binary_path()}' \"$@\";;\nesac\n")
    path.chmod(0o755)
    return path


def run_session(steps, workdir, rewrite, shape):
    """Runs the steps in one bash -e; returns [(line, command, expected, actual lines)] and
    fails naming the first step that exits non-zero, or a session that passes its deadline."""
    out = workdir / "readme-out"
    out.mkdir()
    script = []
    for k, (line_no, command, expected) in enumerate(steps):
        script.append(f"{{\n{rewrite(command)}\n}} > {out}/{k} 2>&1")
    path = workdir / "readme-session.sh"
    path.write_text("\n".join(script) + "\n")
    # bash's own output goes to a file, not a pipe: the README's background jobs may keep a copy
    # of bash's descriptors open after bash exits, and a pipe would then never end.
    with open(workdir / "readme-session.log", "wb") as log:
        proc = subprocess.Popen(["bash", "-e", str(path)], cwd=workdir, start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            proc.wait(timeout=SESSION_DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            done = len(list(out.iterdir()))
            line_no, command, _ = steps[done - 1]
            raise AssertionError(f"README step at line {line_no} did not finish within the session's "
                                 f"{SESSION_DEADLINE_S}s:\n{command}\n"
                                 f"output so far:\n{(out / str(done - 1)).read_text()}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the README's background jobs, if any are left
        except ProcessLookupError:
            pass
    done = len(list(out.iterdir()))
    if proc.returncode != 0:
        line_no, command, _ = steps[done - 1]
        raise AssertionError(f"README step at line {line_no} exited {proc.returncode}:\n{command}\n"
                             f"output:\n{(out / str(done - 1)).read_text()}"
                             f"{(workdir / 'readme-session.log').read_text(errors='replace')}")
    assert done == len(steps)
    results = []
    for k, (line_no, command, expected) in enumerate(steps):
        actual = (out / str(k)).read_text(errors="replace").splitlines()
        results.append((line_no, command, [rewrite(e) for e in expected], actual, shape))
    return results


def check(results):
    bad = []
    for line_no, command, expected, actual, shape in results:
        if not output_matches(expected, actual, shape):
            bad.append(f"README line {line_no}:\n{command}\n--- shown:\n" + "\n".join(expected) +
                       "\n--- printed:\n" + "\n".join(actual))
    assert not bad, "README output differs from what its commands print:\n\n" + "\n\n".join(bad)


def session_steps(session):
    steps = []
    for s, language, lines, first in readme_blocks(README.read_text()):
        if s != session:
            continue
        if language == "python":
            (line_no, code, expected), = steps_of(language, lines, first)
            name = f"readme_{line_no}.py"
            steps.append((line_no, f"cat > {name} <<'READMEPY'\n{code}\nREADMEPY\n/usr/bin/python3 {name}", expected))
        else:
            steps.extend(steps_of(language, lines, first))
    return steps


def test_readme_marks_runnable_blocks():
    sessions = [s for s, *_ in readme_blocks(README.read_text())]
    assert sessions.count("single") >= 10 and sessions.count("cluster") >= 2
    assert set(sessions) == {"single", "cluster"}


def test_readme_single_node_session(ringlog_bin, tmp_path):
    """The README from "Run it" to the WebSocket, on one broker started as run.sh starts it."""
    steps = session_steps("single")
    broker = Broker(tmp_path / "ringlog-data", kafka_port=free_port())
    # As `ringlog serve` with its defaults (conftest fixes num.shards=2; the README's defaults).
    broker.start()
    try:
        http, kafka = broker.port, broker.kafka_port

        cli = cli_wrapper(tmp_path, broker.url)

        def rewrite(text):
            text = text.replace("./build/src/app/ringlog", str(cli)).replace("/var/log/dpkg.log", str(DPKG_FIXTURE))
            return re.sub(r":9092\b", f":{kafka}", re.sub(r":8082\b", f":{http}", text))

        results = run_session(steps, tmp_path, rewrite, False)
    finally:
        code = broker.stop()
    check(results)
    assert code == 0


def test_readme_cluster_session(ringlog_bin, tmp_path):
    """The README's three-node cluster: started, inspected and stopped by its own commands."""
    steps = session_steps("cluster")
    http_prefix = free_prefix()
    cluster_prefix = free_prefix(avoid=(http_prefix,))
    kafka_prefix = free_prefix(avoid=(http_prefix, cluster_prefix))

    def rewrite(text):
        text = text.replace("./build/src/app/ringlog", str(binary_path()))
        text = re.sub(r":909(?=[\d$])", f":{kafka_prefix}", text)
        return re.sub(r":919(?=[\d$])", f":{cluster_prefix}", re.sub(r":808(?=[\d$])", f":{http_prefix}", text))

    results = run_session(steps, tmp_path, rewrite, True)
    check(results)
    # The README's last cluster command stops the nodes with SIGTERM: each shut down cleanly.
    for n in (1, 2, 3):
        assert "stopped cleanly" in (tmp_path / f"n{n}.log").read_text(), f"node {n} did not stop cleanly"


def unquoted_globs(command):
    """The characters of `command` that a shell would take as a file pattern: `?`, `*` and `[`
    outside quotes (zsh stops with "no matches found" when nothing matches), and `$'`, ANSI-C
    quoting, which POSIX sh lacks."""
    found = []
    quote = None
    i = 0
    while i < len(command):
        c = command[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c == "\\":
            i += 2
            continue
        elif c == "$" and command[i + 1:i + 2] == "'":
            found.append("$'")
            quote = "'"
            i += 2
            continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or command[i - 1].isspace()):
            break   # a comment to the end of the line
        elif c in "?*[" and command[i - 1:i] != "$":
            found.append(c)
        i += 1
    return found


def test_readme_commands_are_portable_between_bash_and_zsh():
    """Every command line of every ```sh block (run by the sessions above or not): no unquoted
    `?`, `*` or `[` (a URL with a query must be quoted for zsh) and no bash-only `$'...'`."""
    bad = []
    for _, language, lines, first in readme_blocks_all(README.read_text()):
        if language != "sh":
            continue
        for n, line in enumerate(lines):
            if line.startswith("#"):
                continue
            if unquoted_globs(line):
                bad.append(f"README.md:{first + n}: {line}")
    assert not bad, "shell patterns or $'...' outside quotes:\n" + "\n".join(bad)


def readme_blocks_all(text):
    """Every fenced block, marked or not: [(session or None, language, [lines], first line)]."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```") or not lines[i][3:].strip():
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        blocks.append((None, lines[i][3:].strip(), lines[i + 1:end], i + 2))
        i = end + 1
    return blocks
