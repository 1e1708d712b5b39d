#!/usr/bin/env python3
"""check_doc_commands.py --source SOURCE [--build BUILD] [--list]: the
inventory of the commands in README.md and docs/*.md, and which test runs
each.

Every code block of the docs (indented, or fenced by ```) is read. A block
that shows output (its first line starts "grape:", "mode M:", "{" or '"', or
its fence names json) holds no command. Every other line (lines ending in a
backslash joined with the next, trailing comments dropped) must be one of:
- run by a test: the README's "Using it" section (test `readme`), or a
  recipe of check_readme.py (test or benchmark `readme_NAME`, which must
  exist in BUILD); the same command printed in another doc counts as run;
- listed in check_readme.py's NOT_RUN, with why no test runs it;
- listed in NOT_COMMANDS below (a synopsis, a formula), with what it is.
A command that is none of these fails the check, and so does an entry of
either list that no doc holds any more. Then the check is run once more on
a copy of the docs with a command added to one of them: it must fail there.
--list prints the inventory: doc:line, who runs it, the command.
"""
import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_readme import (LONG, NOT_RUN, RECIPES, code_blocks, command_of,  # noqa: E402
                          logical_lines, recipe_paragraph, using_it)

# Lines of code blocks that are not commands to run: (doc, regex of the
# command, what it is).
NOT_COMMANDS = [
    ("docs/configuration.md", r"^grape run \[--mode M\]", "synopsis of grape run"),
    ("docs/configuration.md", r"^\[--\w", "synopsis of grape run, continued"),
    ("docs/configuration.md", r"^-- CMD ARGS\.\.\.$", "synopsis of grape run, continued"),
    ("docs/configuration.md", r"^grape report \[--sort KEY\]", "synopsis of grape report"),
    ("docs/cubin.md", r"^grape cubin-info FILE \[", "synopsis of grape cubin-info"),
    ("docs/predictor.md", r"^grape (gpus|train|predict) .*\[", "synopsis of grape gpus/train/predict"),
    ("docs/predictor.md", r"^latency = max\(floor, offset \+ kernel\)$", "a formula"),
]


def numbered_commands(start, lines):
    """(line number, command) of a block's LINES from line START on, as
    logical_lines joins them."""
    out, cur, first = [], "", start
    for n, line in enumerate(lines, start):
        if not cur:
            first = n
        if line.endswith("\\"):
            cur += line[:-1] + " "
        else:
            out.append((first, command_of(cur + line)))
            cur = ""
    return out


def is_output(lines, fence):
    return fence == "json" or bool(re.match(r"grape:|mode \w+: |\{|\"", lines[0].strip()))


def runners(source, tests):
    """command -> who runs it: the README's test and each recipe's."""
    ran = {}
    for line in using_it(os.path.join(source, "README.md")):
        ran.setdefault(command_of(line), "test readme")
    for name in RECIPES:
        test = "readme_" + name.replace("-", "_")
        kind = "benchmark" if name in LONG else "test"
        if tests is not None and test not in tests.get(kind, ()):
            sys.exit(f"FAIL: the recipe {name} has no {kind} {test} in the build (tests/cli/meson.build)")
        cmds = recipe_paragraph(source, name)[2]
        if len(cmds) != 1:
            sys.exit(f"FAIL: the recipe {name} finds {len(cmds)} paragraphs of commands in "
                     f"{RECIPES[name][0]} '{RECIPES[name][1]}'")
        for line in logical_lines(cmds[0]):
            if command_of(line) not in NOT_RUN:
                ran.setdefault(command_of(line), f"{kind} {test}")
    return ran


def inventory(source, tests):
    """[(doc:line, who runs it or why not, command)] and the problems found."""
    ran = runners(source, tests)
    rows, problems, used = [], [], set()
    docs = ["README.md"] + sorted(os.path.relpath(d, source)
                                  for d in glob.glob(os.path.join(source, "docs", "*.md")))
    for doc in docs:
        for start, lines, fence in code_blocks(open(os.path.join(source, doc)).read()):
            if is_output(lines, fence):
                continue
            for n, cmd in numbered_commands(start, lines):
                if not cmd:
                    continue
                where = f"{doc}:{n}"
                if cmd in ran:
                    rows.append((where, ran[cmd], cmd))
                elif cmd in NOT_RUN:
                    used.add(("NOT_RUN", cmd))
                    rows.append((where, "not run: " + NOT_RUN[cmd], cmd))
                else:
                    what = [(d, r, w) for d, r, w in NOT_COMMANDS if d == doc and re.search(r, cmd)]
                    if what:
                        used.add(what[0][:2])
                        rows.append((where, "not a command: " + what[0][2], cmd))
                    else:
                        rows.append((where, "RUN BY NO TEST", cmd))
                        problems.append(f"{where}: run by no test and not listed: {cmd}")
    for cmd in NOT_RUN:
        if ("NOT_RUN", cmd) not in used and cmd not in ran:
            problems.append(f"check_readme.py's NOT_RUN lists '{cmd}', which no doc holds")
    for d, r, w in NOT_COMMANDS:
        if (d, r) not in used:
            problems.append(f"NOT_COMMANDS lists {d} /{r}/ ({w}), which matches no line there")
    return rows, problems


def build_tests(build):
    """The build's test and benchmark names (meson-info), or None without a build."""
    info = os.path.join(build or "", "meson-info")
    if not build or not os.path.isdir(info):
        return None
    return {kind: {t["name"] for t in json.load(open(os.path.join(info, f"intro-{kind}s.json")))}
            for kind in ("test", "benchmark")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build")
    ap.add_argument("--list", action="store_true", help="print the inventory")
    a = ap.parse_args()
    tests = build_tests(a.build)
    rows, problems = inventory(a.source, tests)
    if a.list:
        for where, who, cmd in rows:
            print(f"{where:28} {who[:60]:60} {cmd}")
    if problems:
        sys.exit("FAIL:\n  " + "\n  ".join(problems))
    # The same check on the docs with a command that nothing runs added.
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(a.source, "README.md"), tmp)
        shutil.copytree(os.path.join(a.source, "docs"), os.path.join(tmp, "docs"))
        added = "build/tools/grape gpus --json -v"
        with open(os.path.join(tmp, "docs", "sim.md"), "a") as f:
            f.write(f"\nA new recipe:\n\n    {added}\n")
        _, found = inventory(tmp, None)
        if len(found) != 1 or added not in found[0]:
            sys.exit(f"FAIL: a command added to docs/sim.md and run by no test was not the one "
                     f"problem found: {found}")
    kinds = {}
    for _, who, _ in rows:
        kind = who.split(":")[0] if who.startswith("not") else who.split(" ")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"{len(rows)} command lines in README.md and docs/*.md: run by a "
          + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items()))
          + "; a command added to a doc and run by no test is found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
