#!/usr/bin/env python3
"""Shim overhead per launch on the simulated device, as instructions (callgrind,
launch loop only) and nanoseconds (median of several timed runs), and the
shim's own instructions per launch (those executed inside libgrape.so): in
graph mode the launches are held and replayed as graphs, so the process's
total also changes by what the driver no longer does. The launches never
change, so graph mode measures a hit with nothing changed; builds are made
free (GRAPE_COSTS) and on the program's thread (GRAPE_BUILDER=inline) so
that the warm-up already builds the 1024-op graph.

usage: run_bench.py --prog bench_launch --simdir build/sim --lib build/interpose/libgrape.so
                    [--n 2000] [--timed-n 200000] [--runs 5]
Prints a Markdown table; docs/performance.md records the numbers."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

# (name, GRAPE_MODE, more GRAPE_ variables). "graph, eager": graph mode that
# builds nothing, so every launch goes to the driver and is recorded (the
# cost of an op graph mode only records: a warm-up, a path that never recurs).
CONFIGS = [("none", None, {}), ("off", "off", {}), ("observe", "observe", {}),
           ("graph, eager", "graph", {"GRAPE_WARMUP": "1000000000"}), ("graph", "graph", {})]
ROUTES = ["runtime", "driver", "alternate"]   # alternate: two kernels in turn (runtime route)


def env_for(a, mode, extra=None):
    env = dict(os.environ, SIMCU_SYNC="1")
    env["LD_LIBRARY_PATH"] = a.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
    env.pop("LD_PRELOAD", None)
    env.pop("GRAPE_REPORT", None)
    if mode is not None:
        env["LD_PRELOAD"] = a.lib
        env["GRAPE_MODE"] = mode
        env["GRAPE_COSTS"] = "build=0,build_node=0"
        env["GRAPE_BUILDER"] = "inline"   # built at the warm-up: the loop measures hits
        env.update(extra or {})
    return env


def self_cost_by_object(text):
    """Instructions executed in each object's own code (calls excluded)."""
    names, cost, ob, skip = {}, {}, None, False
    for line in text.splitlines():
        m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                names[m.group(2)] = os.path.basename(m.group(3))
            if m.group(1) == "ob":
                ob = names[m.group(2)]
            continue
        if line.startswith("calls="):
            skip = True
            continue
        if line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if skip:
                skip = False
            elif len(parts) > 1 and ob is not None:
                cost[ob] = cost.get(ob, 0) + int(parts[1])
    return cost


def instructions(a, mode, extra, route):
    """(all instructions, the shim's own) per launch."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--compress-strings=yes",
                        "--compress-pos=no", "--callgrind-out-file=" + out, a.prog, route, str(a.n)],
                       env=env_for(a, mode, extra), check=True, capture_output=True)
        text = open(out).read()
        m = re.search(r"^totals: (\d+)", text, re.M)
        own = sum(v for k, v in self_cost_by_object(text).items() if k.startswith("libgrape"))
        return int(m.group(1)) / a.n, own / a.n


def nanoseconds(a, mode, extra, route):
    vals = []
    for _ in range(a.runs):
        p = subprocess.run([a.prog, route, str(a.timed_n)], env=env_for(a, mode, extra), check=True,
                           capture_output=True, text=True)
        vals.append(float(re.search(r"ns_per_launch ([\d.]+)", p.stdout).group(1)))
    return statistics.median(vals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--timed-n", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    print("| route | config | instructions/launch | added | in libgrape.so | ns/launch | added |")
    print("|---|---|---|---|---|---|---|")
    for route in ROUTES:
        base_i = base_t = None
        for name, mode, extra in CONFIGS:
            i, own = instructions(a, mode, extra, route)
            t = nanoseconds(a, mode, extra, route)
            if base_i is None:
                base_i, base_t = i, t
            print(f"| {route} | {name} | {i:.0f} | {i - base_i:+.0f} | {own:.0f} | {t:.0f} | "
                  f"{t - base_t:+.0f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
