#!/usr/bin/python3
"""Per-module include roots: the module graph of layering.py made into compiler search paths, so
a wrong include fails to compile (design.md section 3), not only the layering test.

  include_roots.py --farm DIR --source SRC   (meson, at configure time) makes DIR/<module>/ for
      every module of SRC/src and SRC/include/ringlog, holding DIR/<module>/ringlog/<m> ->
      SRC/include/ringlog/<m> (relative symbolic links) for the module itself and each module it
      may include; prints the module names, one a line. Rerunning brings DIR up to date.
  include_roots.py --check BUILDDIR          (meson test include-roots) reads
      BUILDDIR/compile_commands.json and fails when a compile of src/<module>/ can see the headers
      of a module it may not include through any of its -I directories; then the negative control:
      a file that includes a gateway header, compiled with the flags of a storage source, must
      fail with "No such file", and one that includes an io header must compile.

The graph is layering.py's, the one source: module N may include module M when M is on a lower
row of LAYERS, in SAME_ROW[N], or the target of an ALLOWLIST entry of N; closed transitively
(a header of M includes the modules below M). Generated headers (ringlog/protocol/messages.h)
are not in the farm: they come with protocol_dep's own include directory in the build tree.

Limits: a module's -I list is the union of its own root and its meson dependencies' roots, each
a subset of its closure; the check is on the compile commands of the libraries of src/ only (tests and app
use every module).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layering  # noqa: E402  (the graph: LAYERS, SAME_ROW, ALLOWLIST)


def module_of_path(rel):
    """Module of a path relative to the source root (src/<m>/... or include/ringlog/<m>/...)."""
    parts = rel.split("/")
    if len(parts) > 2 and parts[0] == "src":
        return parts[1]
    if len(parts) > 3 and parts[0] == "include" and parts[1] == "ringlog":
        return parts[2]
    return None


def closures(modules):
    """Module -> set of modules whose headers it may see (itself included)."""
    rows = layering.module_rows()
    edges = {}
    for module in modules:
        edges[module] = {m for m in modules if m != module and layering.may_include(module, m, rows)}
    for (rel, path), _ in layering.ALLOWLIST.items():
        parts = path.split("/")
        including = module_of_path(rel)
        if path.startswith("ringlog/") and len(parts) > 2 and including in edges and parts[1] in modules:
            edges[including].add(parts[1])
    result = {}
    for module in modules:
        seen = {module}
        todo = [module]
        while todo:
            for m in edges[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        result[module] = seen
    return result


def source_modules(source):
    """Every module with a directory in src/ or include/ringlog/; each must be in LAYERS."""
    found = set()
    for base in ("src", os.path.join("include", "ringlog")):
        top = os.path.join(source, base)
        found |= {d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))}
    rows = layering.module_rows()
    unknown = sorted(found - set(rows))
    if unknown:
        sys.exit(f"include_roots.py: module(s) {', '.join(unknown)} not in LAYERS: place each in "
                 "tests/layering/layering.py (design.md section 3, docs/architecture.md) first")
    return sorted(found)


def make_farm(farm, source):
    modules = source_modules(source)
    headers = os.path.join(source, "include", "ringlog")
    for module, visible in sorted(closures(modules).items()):
        root = os.path.join(farm, module, "ringlog")
        os.makedirs(root, exist_ok=True)
        wanted = {m: os.path.relpath(os.path.join(headers, m), root)
                  for m in visible if os.path.isdir(os.path.join(headers, m))}
        for name in os.listdir(root):
            path = os.path.join(root, name)
            if name not in wanted or not os.path.islink(path) or os.readlink(path) != wanted[name]:
                os.remove(path)
        for name, target in wanted.items():
            if not os.path.lexists(os.path.join(root, name)):
                os.symlink(target, os.path.join(root, name))
    print("\n".join(modules))
    return 0


def include_dirs(entry):
    """Absolute -I / -isystem / -iquote directories of one compile_commands.json entry."""
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    dirs = []
    for i, arg in enumerate(args):
        for flag in ("-I", "-isystem", "-iquote"):
            if arg == flag and i + 1 < len(args):
                dirs.append(args[i + 1])
            elif arg.startswith(flag) and len(arg) > len(flag):
                dirs.append(arg[len(flag):])
    return [os.path.normpath(os.path.join(entry["directory"], d)) for d in dirs]


def library_compile(entry):
    """True for a compile of a module's own target (its object under <builddir>/src/): the sims'
    negative controls compile src/ files again with the flags of their tests."""
    return entry.get("output", "").startswith("src/")


def check_leaks(commands, source):
    """Lines naming each src/ compile whose -I directories show a module it may not include."""
    modules = source_modules(source)
    visible = closures(modules)
    problems = []
    checked = 0
    for entry in commands:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        rel = os.path.relpath(path, source)
        module = module_of_path(rel)
        if module is None or not library_compile(entry):
            continue
        checked += 1
        for directory in include_dirs(entry):
            for m in modules:
                if m not in visible[module] and os.path.isdir(os.path.join(directory, "ringlog", m)):
                    problems.append(f"{rel}: {module} sees ringlog/{m}/ through -I {directory}, "
                                    f"but may include only {', '.join(sorted(visible[module]))}")
    return checked, problems


def compiles(entry, text):
    """(exit code, compiler output) of `text` compiled with the flags of `entry`."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    kept = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-o", "-MF", "-MQ", "-MT"):
            skip = True
        elif arg in ("-c", "-MD", "-MMD") or arg == entry["file"]:
            continue
        else:
            kept.append(arg)
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as f:
        f.write(text)
    try:
        done = subprocess.run(kept + ["-fsyntax-only", f.name], cwd=entry["directory"],
                              capture_output=True, text=True)
    finally:
        os.remove(f.name)
    return done.returncode, done.stdout + done.stderr


def first_header(source, module):
    directory = os.path.join(source, "include", "ringlog", module)
    return f"ringlog/{module}/{sorted(n for n in os.listdir(directory) if n.endswith('.h'))[0]}"


def check(build):
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    source = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    checked, problems = check_leaks(commands, source)
    for line in problems:
        print(line)
    print(f"include-roots: {checked} compiles of src/ checked, {len(problems)} see a module they may not")
    storage = next(e for e in commands if library_compile(e)
                   and module_of_path(os.path.relpath(os.path.normpath(os.path.join(e["directory"], e["file"])),
                                                     source)) == "storage")
    failures = len(problems) + (checked == 0)
    for header, want in ((first_header(source, "gateway"), False), (first_header(source, "io"), True)):
        code, output = compiles(storage, f'#include "{header}"\n')
        ok = (code == 0) == want and (want or "No such file" in output)
        failures += not ok
        print(f"{'ok' if ok else 'WRONG'}: #include \"{header}\" with the flags of {storage['file']}: "
              f"{'compiles' if code == 0 else 'fails'} (expected to {'compile' if want else 'fail'})"
              + ("" if ok else "\n" + output))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--farm", help="directory of the roots (configure time)")
    parser.add_argument("--source", help="the source tree (with --farm)")
    parser.add_argument("--check", metavar="BUILDDIR", help="check a configured build directory")
    args = parser.parse_args()
    if args.farm:
        return make_farm(os.path.abspath(args.farm), os.path.abspath(args.source))
    if args.check:
        return check(os.path.abspath(args.check))
    parser.error("--farm or --check")
    return 2


if __name__ == "__main__":
    sys.exit(main())
