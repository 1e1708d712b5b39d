#!/usr/bin/env python3
"""Shim overhead per launch on the simulated device, as instructions (callgrind,
launch loop only) and nanoseconds (median of several timed runs).

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

CONFIGS = [("none", None), ("off", "off"), ("observe", "observe")]
ROUTES = ["runtime", "driver"]


def env_for(a, mode):
    env = dict(os.environ, SIMCU_SYNC="1")
    env["LD_LIBRARY_PATH"] = a.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
    env.pop("LD_PRELOAD", None)
    env.pop("GRAPE_REPORT", None)
    if mode is not None:
        env["LD_PRELOAD"] = a.lib
        env["GRAPE_MODE"] = mode
    return env


def instructions(a, mode, route):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        "--callgrind-out-file=" + out, a.prog, route, str(a.n)],
                       env=env_for(a, mode), check=True, capture_output=True)
        text = open(out).read()
        m = re.search(r"^totals: (\d+)", text, re.M)
        return int(m.group(1)) / a.n


def nanoseconds(a, mode, route):
    vals = []
    for _ in range(a.runs):
        p = subprocess.run([a.prog, route, str(a.timed_n)], env=env_for(a, mode), check=True,
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
    print("| route | config | instructions/launch | added | ns/launch | added |")
    print("|---|---|---|---|---|---|")
    for route in ROUTES:
        base_i = base_t = None
        for name, mode in CONFIGS:
            i = instructions(a, mode, route)
            t = nanoseconds(a, mode, route)
            if base_i is None:
                base_i, base_t = i, t
            print(f"| {route} | {name} | {i:.0f} | {i - base_i:+.0f} | {t:.0f} | {t - base_t:+.0f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
