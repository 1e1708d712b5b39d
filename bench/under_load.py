#!/usr/bin/env python3
"""under_load.py BUILD [TEST...] [--suite S] [--loops N] [--min-margin M] [--skip-quiet]:
the margin of a build's slowest tests against their timeouts on a busy machine.

Runs `meson test -C BUILD --num-processes 2 TEST...` once on the machine as it
is, then again beside N busy loops run with `nice -n 19` (default: one per
CPU, so that the tests compete for every core), and prints per test its meson
timeout, both durations, loaded / quiet and timeout / loaded. `--suite S`
adds every test of suite S (`--suite all`: the whole suite, slowest first). Exits 1 when a
test fails or when a loaded test's timeout / loaded is under M (default 2).
docs/testing.md ("The suite under load") records its numbers.
"""
import argparse
import json
import os
import subprocess
import sys


def durations(build, tests):
    """Runs the tests; {name: (result, seconds)} from meson's test log."""
    subprocess.run(["meson", "test", "-C", build, "--num-processes", "2", "--no-rebuild"] + tests,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = {}
    with open(os.path.join(build, "meson-logs", "testlog.json")) as f:
        for line in f:
            r = json.loads(line)
            got[r["name"].split(" / ")[-1]] = (r["result"], r["duration"])
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("tests", nargs="*")
    ap.add_argument("--suite", help="every test of this suite (all: every test)")
    ap.add_argument("--loops", type=int, default=os.cpu_count())
    ap.add_argument("--min-margin", type=float, default=2.0)
    ap.add_argument("--skip-quiet", action="store_true", help="only the loaded run")
    a = ap.parse_args()
    intro = json.loads(subprocess.run(["meson", "introspect", "--tests", a.build],
                                      capture_output=True, text=True, check=True).stdout)
    timeout = {t["name"]: t["timeout"] for t in intro}
    if a.suite:
        a.tests += [t["name"] for t in intro if a.suite == "all"
                    or any(s.split(":")[-1] == a.suite for s in t["suite"])]
    if not a.tests:
        sys.exit("no tests given")
    unknown = [t for t in a.tests if t not in timeout]
    if unknown:
        sys.exit(f"no such test in {a.build}: {unknown}")
    quiet = {} if a.skip_quiet else durations(a.build, a.tests)
    loops = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"])
             for _ in range(a.loops)]
    try:
        loaded = durations(a.build, a.tests)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    bad = []
    print(f"{a.build}, beside {a.loops} nice -n 19 busy loops:")
    print("| test | timeout (s) | quiet (s) | loaded (s) | loaded / quiet | timeout / loaded |")
    print("|---|---|---|---|---|---|")
    for t in sorted(a.tests, key=lambda t: -loaded.get(t, ("", 0.0))[1]):
        res, sec = loaded.get(t, ("MISSING", 0.0))
        q = quiet.get(t, (None, None))[1]
        margin = timeout[t] / sec if sec else 0.0
        print(f"| `{t}` | {timeout[t]} | {'-' if q is None else f'{q:.1f}'} | {sec:.1f} | "
              f"{'-' if not q else f'{sec / q:.2f}'} | {margin:.1f} |")
        if res not in ("OK", "SKIP") or (res == "OK" and margin < a.min_margin):
            bad.append(f"{t}: {res}, margin {margin:.1f}")
    if bad:
        print("under load: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
