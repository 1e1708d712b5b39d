#!/usr/bin/env python3
"""Graph mode on programs it was never tuned on (bench/graph/patterns.cu):
every pattern x run length x kernel duration x SIMCU_HOST_NS, without the
shim, in graph mode by its default rule and with builds forced
(GRAPE_COSTS=build=0,build_node=0), under each cost profile. The output and
the kernels executed must be the same in all three (else it says so and
exits 1); it prints, per profile, the regimes where graph mode is more than
2% slower than eager, the worst, and the geometric mean of graph / eager.

usage: patterns.py --prog build/bench/patterns --simdir build/sim
                   --lib build/interpose/libgrape.so [--jobs 2]
                   [--profiles fair,default,pessimistic] [--patterns alt,...]
                   [--steps 3,20,200] [--kernels-us 1,5,20] [--host-ns 0,2000]
                   [--shim-env NAME=VALUE ...] [--top 10]"""
import argparse
import itertools
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simrun  # noqa: E402

PATTERNS = ["alt", "rand", "dims", "multi", "memops", "scalar", "hostwrite"]
FORCED = {"GRAPE_COSTS": "build=0,build_node=0"}


def ints(text):
    return [int(x) for x in text.split(",") if x]


def floats(text):
    return [float(x) for x in text.split(",") if x]


def regime(a, cfg):
    """(cfg, problems, graph / eager, graph hits, regions) for one regime."""
    profile, pattern, steps, kernel_us, host_ns = cfg
    costs = simrun.kernel_costs(int(kernel_us * 1000), profile)
    args = [pattern, str(steps)]
    e = simrun.run(a.prog, args, a.simdir, None, "eager", host_ns=host_ns, costs=costs)
    g = simrun.run(a.prog, args, a.simdir, a.lib, "graph", host_ns=host_ns, costs=costs,
                   env=dict(a.shim_env))
    f = simrun.run(a.prog, args, a.simdir, a.lib, "graph", host_ns=host_ns, costs=costs,
                   env=dict(a.shim_env, **FORCED))
    problems = [f"{name}: printed {r.stdout.strip()!r} and ran {r.sim['kernels_executed']} "
                f"kernels, eager {e.stdout.strip()!r} and {e.sim['kernels_executed']}"
                for name, r in (("graph mode", g), ("forced builds", f))
                if r.stdout != e.stdout or r.sim["kernels_executed"] != e.sim["kernels_executed"]]
    return (cfg, problems, g.sim["sim_end_ns"] / e.sim["sim_end_ns"], g.grape["graph_hits"],
            g.grape["regions"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prog", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--profiles", default="fair,default,pessimistic")
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--steps", type=ints, default=[3, 20, 200])
    ap.add_argument("--kernels-us", type=floats, default=[1, 5, 20])
    ap.add_argument("--host-ns", type=ints, default=[0, 2000])
    ap.add_argument("--shim-env", type=simrun.pair, action="append", default=[],
                    help="NAME=VALUE for the graph-mode runs (repeatable)")
    ap.add_argument("--top", type=int, default=10, help="slowest regimes listed per profile")
    a = ap.parse_args()
    profiles = [p for p in a.profiles.split(",") if p]
    cfgs = list(itertools.product(profiles, a.patterns.split(","), a.steps, a.kernels_us,
                                  a.host_ns))
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda c: regime(a, c), cfgs))
    bad = [r for r in results if r[1]]
    print("| profile | regimes | more than 2% slower than eager | worst | geometric mean |")
    print("|---|---:|---:|---:|---:|")
    for p in profiles:
        rs = [r for r in results if r[0][0] == p]
        ratios = [r[2] for r in rs]
        print(f"| `{p}` | {len(rs)} | {sum(x > 1.02 for x in ratios)} | {max(ratios):.3f} | "
              f"{statistics.geometric_mean(ratios):.4f} |")
    print(f"\n{sum(r[3] for r in results)} graph hits of {sum(r[4] for r in results)} regions "
          f"over all {len(results)} regimes")
    for p in profiles:
        slow = sorted((r for r in results if r[0][0] == p and r[2] > 1.02), key=lambda r: -r[2])
        if slow and a.top > 0:
            print(f"\n`{p}`, the slowest (pattern, steps, kernel us, HOST_NS: graph / eager, "
                  "graph hits of regions):")
            for (_, pat, steps, k, h), _, ratio, hits, regions in slow[:a.top]:
                print(f"- {pat} {steps} {k:g} {h}: {ratio:.3f}, {hits} of {regions}")
    for cfg, problems, *_ in bad:
        print(f"FAIL {cfg}: " + "; ".join(problems))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
