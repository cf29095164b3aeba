#!/usr/bin/python3
"""Function-length ratchet (issue 28): no new C++ function over FUNCTION_LINES_MAX lines in src/,
no file in src/broker over BROKER_FILE_LINES_MAX lines, and the long ones of today, listed in
baseline.txt, may only shrink.

  function_length.py --root DIR           check; exit 1 naming each new, grown or shrunk entry
  function_length.py --root DIR --update  lower the baseline to what shrank and drop what went
                                          (never adds an entry or raises a figure)
  function_length.py --list [N]           the scanner's view: every function over N lines
  function_length.py --self-test          negative controls on fake sources

A listed function or file that is shorter than its figure, or gone, also fails: the baseline must
follow it down (run --update and commit the file), so the list stays honest and can only shrink.

How long: the lines from the function body's opening brace to its closing brace, both included
(a signature, however long, does not count). A function's key is path:qualified-name as written
at the definition (`broker_impl::produce_appending`, or `produce_appending` inside a class body);
a second definition of the same name in one file is name#2, and so on, in file order.

Limits of the scan (brace matching, not a C++ parser): comments, string and character literals
(raw strings too) and preprocessor lines are blanked first; a brace opens a function body when
the text before it, back to the previous `;`, `{` or `}` of the same scope, has a parameter list
followed by nothing but qualifiers, a trailing return type or a constructor's initializer list.
Lambdas and local classes count as part of the function that holds them; a lambda assigned at
namespace scope is not measured. A macro that expands to braces, or an `#if` with unbalanced
braces in its branches, confuses it.
"""
import argparse
import os
import re
import sys
import tempfile

FUNCTION_LINES_MAX = 100       # issue 28: "no new function over 100 lines"
BROKER_FILE_LINES_MAX = 1000   # issue 28: "no file in src/broker over 1,000 lines"
BROKER_DIR = "src/broker"
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".cc", ".cpp", ".cxx", ".ipp")
HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "baseline.txt")
REFRESH = "/usr/bin/python3 tests/function_length/function_length.py --update"

SCOPE_RE = re.compile(r"^(?:template\s*<.*>\s*)?(?:inline\s+)?(namespace|class|struct|union|enum|extern)\b",
                      re.S)
QUALIFIERS_RE = re.compile(
    r"^(?:\s*(?:const|volatile|noexcept(?:\s*\([^)]*\))?|override|final|mutable|&&|&|->.*|requires.*))*\s*$",
    re.S)
NAME_RE = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*~?(?:operator\s*[^\s(]+|[A-Za-z_]\w*))\s*(?:<[^()]*>)?\s*$")


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i = 0
    n = len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A directive, with its backslash continuations.
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():
                out.append(" ")  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, open_index):
    """Index of the '}' that closes the '{' at open_index (len(text) when unbalanced)."""
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def first_paren_group(header):
    """(start, end) of the first top-level (...) of a declaration header, or None."""
    angle = 0
    start = None
    depth = 0
    for i, c in enumerate(header):
        if start is None:
            if c == "<":
                angle += 1
            elif c == ">" and angle:
                angle -= 1
            elif c == "(" and angle == 0:
                start = i
                depth = 1
        else:
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return start, i
    return None


def classify(header):
    """'scope', 'function', 'member_init' or 'initializer' for the '{' that ends header."""
    stripped = header.strip()
    stripped = re.sub(r"^(?:\[\[[^\]]*\]\]\s*|(?:public|private|protected)\s*:\s*)+", "", stripped)
    if SCOPE_RE.match(stripped) and "(" not in stripped.split("{")[0]:
        return "scope"
    group = first_paren_group(stripped)
    if group is None or "=" in stripped[:group[0]].replace("operator=", "").replace("==", ""):
        return "initializer"
    tail = stripped[group[1] + 1:]
    if tail.lstrip().startswith(":") and not tail.lstrip().startswith("::"):
        # A constructor's initializer list: a brace right after a member's name is its init.
        if re.search(r"[\w>]\s*$", stripped):
            return "member_init"
        return "function"
    if QUALIFIERS_RE.match(tail):
        return "function"
    return "initializer"


def function_name(header):
    stripped = re.sub(r"^(?:\[\[[^\]]*\]\]\s*|(?:public|private|protected)\s*:\s*)+", "", header.strip())
    group = first_paren_group(stripped)
    m = NAME_RE.search(stripped[:group[0]])
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def scan(text):
    """[(qualified name, body lines)] of the functions defined in a C++ source text."""
    code = blank(text)
    found = []
    # Scopes to walk: (start, end) ranges of namespace and class bodies, file first.
    pending = [(0, len(code))]
    while pending:
        start, end = pending.pop()
        header_start = start
        i = start
        while i < end:
            c = code[i]
            if c in ";}":
                header_start = i + 1
            elif c == "{":
                header = code[header_start:i]
                kind = classify(header)
                close = matching_brace(code, i)
                if kind == "member_init":
                    i = close + 1
                    continue
                if kind == "scope":
                    if not re.match(r"\s*(?:template\s*<.*>\s*)?enum\b", header, re.S):
                        pending.append((i + 1, close))
                elif kind == "function":
                    lines = code.count("\n", i, close) + 1
                    found.append((function_name(header), lines, code.count("\n", 0, i) + 1))
                i = close + 1
                header_start = i
                continue
            i += 1
    found.sort(key=lambda f: f[2])
    result = []
    seen = {}
    for name, lines, _ in found:
        seen[name] = seen.get(name, 0) + 1
        result.append((name if seen[name] == 1 else f"{name}#{seen[name]}", lines))
    return result


def measure(root):
    """({'path:function': lines} over FUNCTION_LINES_MAX, {'path': lines} of long broker files)."""
    functions = {}
    files = {}
    src = os.path.join(root, "src")
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for function, lines in scan(text):
                if lines > FUNCTION_LINES_MAX:
                    functions[f"{rel}:{function}"] = lines
            total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if rel.startswith(BROKER_DIR + "/") and total > BROKER_FILE_LINES_MAX:
                files[rel] = total
    return functions, files


def read_baseline(path):
    functions, files = {}, {}
    if not os.path.exists(path):
        return functions, files
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, lines, key = line.split(None, 2)
            (functions if kind == "function" else files)[key] = int(lines)
    return functions, files


def write_baseline(path, functions, files):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Function-length ratchet (tests/function_length/function_length.py): the C++ functions\n"
                f"# in src/ over {FUNCTION_LINES_MAX} lines and the files in {BROKER_DIR} over "
                f"{BROKER_FILE_LINES_MAX} lines of\n"
                "# the day the ratchet came (issue 28). Each may only shrink; lower it with\n"
                f"#   {REFRESH}\n"
                "# kind  lines  path[:function]\n")
        for key in sorted(files):
            f.write(f"file {files[key]} {key}\n")
        for key in sorted(functions):
            f.write(f"function {functions[key]} {key}\n")


def compare(current, baseline, limit, what):
    """(failures, lowerable) for one kind: new or grown are failures, shrunk or gone lowerable."""
    failures, lowerable = [], []
    for key, lines in sorted(current.items()):
        if key not in baseline:
            failures.append(f"new {what} over {limit} lines: {key} has {lines}: split it "
                            f"(no new {what} over {limit} lines, issue 28)")
        elif lines > baseline[key]:
            failures.append(f"{what} grew: {key} has {lines} lines, the baseline allows "
                            f"{baseline[key]}: it may only shrink")
        elif lines < baseline[key]:
            lowerable.append(f"{what} shrank: {key} has {lines} lines, baseline {baseline[key]}")
    for key in sorted(set(baseline) - set(current)):
        lowerable.append(f"{what} gone or now within {limit} lines: {key} (baseline {baseline[key]})")
    return failures, lowerable


def check(root, baseline_path):
    functions, files = measure(root)
    base_functions, base_files = read_baseline(baseline_path)
    f_fail, f_low = compare(functions, base_functions, FUNCTION_LINES_MAX, "function")
    b_fail, b_low = compare(files, base_files, BROKER_FILE_LINES_MAX, "file")
    return f_fail + b_fail, f_low + b_low, (functions, files), (base_functions, base_files)


def run(root, baseline_path, update):
    failures, lowerable, (functions, files), (base_functions, base_files) = check(root, baseline_path)
    for line in failures:
        print("FAIL:", line)
    if update:
        kept_functions = {k: min(v, functions[k]) for k, v in base_functions.items() if k in functions}
        kept_files = {k: min(v, files[k]) for k, v in base_files.items() if k in files}
        write_baseline(baseline_path, kept_functions, kept_files)
        for line in lowerable:
            print("lowered:", line)
        return 1 if failures else 0
    for line in lowerable:
        print(f"LOWER THE BASELINE: {line}: run `{REFRESH}` and commit "
              "tests/function_length/baseline.txt")
    print(f"function-length: {len(functions)} functions over {FUNCTION_LINES_MAX} lines "
          f"(baseline {len(base_functions)}), {len(files)} files in {BROKER_DIR} over "
          f"{BROKER_FILE_LINES_MAX} lines (baseline {len(base_files)})")
    return 1 if failures or lowerable else 0


def self_test():
    """Negative controls: a new long function, a grown one, a shrunk one, a long broker file."""
    def body(n):
        return "".join(f"  x += {k};\n" for k in range(n - 2))

    short = "int small() {\n  return 1;\n}\n"
    long_fn = (lambda n: "namespace ringlog {\nclass broker_impl : public base {\n public:\n"
               "  broker_impl(int a) : a_{a}, b_(a) {\n  }\n  int inline_member(int x) const {\n" + body(n) +
               "  }\n};\n}  // namespace ringlog\n"
               "int broker_impl::produce(std::string_view s /* { */) noexcept {\n"
               '  auto text = "}}}";\n  char c = \'{\';\n' + body(n) + "}\n")
    expected_scan = [("broker_impl", 2), ("inline_member", 120), ("broker_impl::produce", 122)]
    cases = []
    got = [(name, lines) for name, lines in scan(long_fn(120)) if name in {"broker_impl",
                                                                            "inline_member",
                                                                            "broker_impl::produce"}]
    cases.append(("the scanner finds members, ctors and out-of-line definitions past literals",
                  got == expected_scan, f"{got}"))
    baseline_120 = ("function 120 src/x/a.cc:inline_member\nfunction 122 src/x/a.cc:broker_impl::produce\n")
    scenarios = [
        ("as listed: passes", {"src/x/a.cc": long_fn(120)}, baseline_120, 0),
        ("a new function over the limit fails", {"src/x/a.cc": long_fn(120), "src/x/b.cc": long_fn(101)},
         baseline_120, 1),
        ("a listed function that grew fails", {"src/x/a.cc": long_fn(121)}, baseline_120, 1),
        ("a listed function that shrank asks for --update", {"src/x/a.cc": long_fn(110)}, baseline_120, 1),
        ("a listed function that went asks for --update", {"src/x/a.cc": short}, baseline_120, 1),
        ("a function of exactly the limit passes", {"src/x/a.cc": long_fn(98)}, "", 0),
        ("a broker file over the limit fails", {"src/broker/big.cc": short + "\n" * 1000}, "", 1),
        ("a listed broker file as long as its figure passes", {"src/broker/big.cc": short + "\n" * 1000},
         "file 1003 src/broker/big.cc\n", 0),
    ]
    for name, tree, baseline, want in scenarios:
        with tempfile.TemporaryDirectory() as root:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w") as f:
                    f.write(text)
            path = os.path.join(root, "baseline.txt")
            with open(path, "w") as f:
                f.write(baseline)
            failures, lowerable, _, _ = check(root, path)
            rc = 1 if failures or lowerable else 0
            cases.append((name, rc == want, "; ".join(failures + lowerable)))
    wrong = 0
    for name, ok, detail in cases:
        wrong += not ok
        print(f"{'ok' if ok else 'WRONG'}: {name}" + (f"\n    {detail}" if detail else ""))
    print(f"function-length self-test: {len(cases) - wrong}/{len(cases)} as expected")
    return 1 if wrong else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(HERE, "..", ".."))
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--init", action="store_true", help="write the baseline from today's tree (once)")
    parser.add_argument("--list", type=int, nargs="?", const=FUNCTION_LINES_MAX, default=None)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        return self_test()
    if args.list is not None:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, "src")):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for function, lines in scan(f.read()):
                            if lines > args.list:
                                print(f"{lines:5d} {os.path.relpath(path, root)}:{function}")
        return 0
    if args.init:
        functions, files = measure(root)
        write_baseline(args.baseline, functions, files)
        print(f"wrote {args.baseline}: {len(functions)} functions, {len(files)} files")
        return 0
    return run(root, args.baseline, args.update)


if __name__ == "__main__":
    sys.exit(main())
