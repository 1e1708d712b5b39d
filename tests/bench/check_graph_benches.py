#!/usr/bin/env python3
"""Smoke test of the graph-mode benches (bench/graph): each script runs on a
tiny configuration and prints the table it exists for, with results equal
between eager and graph mode. Speed is not judged here (benches are ninja
targets, bench/meson.build); only that the scripts still work.

usage: check_graph_benches.py grid|anchors|soak|patterns --bench DIR --examples DIR
                              --simdir DIR --lib LIBGRAPE [--soak PROG] [--patterns PROG]"""
import argparse
import os
import re
import subprocess
import sys


def fail(msg, out=""):
    print(f"FAIL: {msg}\n{out[-3000:]}")
    sys.exit(1)


def grape_ms(table):
    """The grape column of the quick anchors' first row (decode --iters 1, HOST_NS 0)."""
    m = re.search(r"^\| `decode --iters 1` \| 0 \| [\d.]+ \| ([\d.]+) \|", table, re.M)
    if m is None:
        fail("anchors.py printed no row for decode --iters 1 at HOST_NS 0", table)
    return float(m.group(1))


def check_shim_env(a, cmd, graph_ms):
    """--shim-env reaches the graph-mode runs: with builds forced (free, so
    built at the warm-up and at once) this short run replays sooner than by
    the default rule, which waits until the run has lasted twice a build's
    estimated cost, so grape ends earlier."""
    p = subprocess.run([sys.executable, os.path.join(a.bench, cmd[0])] + cmd[1:] +
                       ["--host-ns", "0", "--shim-env", "GRAPE_COSTS=build=0,build_node=0"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail(f"{cmd[0]} --shim-env exited with {p.returncode}", p.stdout + p.stderr)
    forced_ms = grape_ms(p.stdout)
    if forced_ms >= graph_ms:
        fail(f"--shim-env GRAPE_COSTS=build=0,build_node=0: grape {forced_ms} ms, not below the "
             f"default rule's {graph_ms} ms: the variable did not reach the shim", p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", choices=["grid", "anchors", "soak", "patterns"])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--soak")
    ap.add_argument("--patterns")
    a = ap.parse_args()
    common = ["--simdir", a.simdir, "--lib", a.lib]
    if a.which == "grid":
        cmd = ["grid.py", "--examples", a.examples, "--quick", "--jobs", "1"] + common
        want = ["**decode** (graph mode / eager", "| --iters | HOST_NS |", "decode: ",
                "worst", "Checksums and kernels executed identical in all 8 regimes."]
    elif a.which == "anchors":
        cmd = ["anchors.py", "--examples", a.examples, "--quick", "--jobs", "1"] + common
        want = ["| run | HOST_NS | eager | grape | hand-written | LB |", "| `decode --iters 1` | 0 |",
                "| `decode --iters 1` | 5000 |", "gap closed"]
    elif a.which == "patterns":
        cmd = ["patterns.py", "--prog", a.patterns, "--profiles", "fair", "--patterns", "alt,multi",
               "--steps", "20", "--kernels-us", "1", "--host-ns", "0", "--jobs", "1"] + common
        want = ["| profile | regimes | more than 2% slower than eager |", "| `fair` | 2 |",
                "over all 2 regimes"]
    else:
        cmd = ["run_soak.py", "--prog", a.soak, "--launches", "2000", "--streams", "40"] + common
        want = ["| phase | ops |", "| launches | 2,000 |", "| churn | 40 |", "| idle | 40 |",
                "graph mode: "]
    p = subprocess.run([sys.executable, os.path.join(a.bench, cmd[0])] + cmd[1:],
                       capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        fail(f"{cmd[0]} exited with {p.returncode}", out)
    for w in want:
        if w not in p.stdout:
            fail(f"{cmd[0]} printed no {w!r}", out)
    if "**Problems:**" in p.stdout or "changed the result" in p.stdout or "FAIL " in p.stdout:
        fail(f"{cmd[0]} found results that differ", out)
    if a.which == "anchors":
        check_shim_env(a, cmd, grape_ms(p.stdout))
    # The shim did run in graph mode: it replayed something.
    # (the grid: its hits over all regimes of an example, not only the worst's)
    hits = [int(h) for h in re.findall(r"(\d+) (?:graph )?hits", p.stdout.replace(",", ""))]
    if a.which != "anchors" and not any(hits):
        fail(f"{cmd[0]}: no graph hits reported: graph mode did not run", out)
    print(p.stdout)


if __name__ == "__main__":
    main()
