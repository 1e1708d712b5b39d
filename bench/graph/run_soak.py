#!/usr/bin/env python3
"""Bounded memory and per-launch cost over a long run (bench/graph/soak.cu):
runs the soak program on the simulated device (SIMCU_SYNC=1, and
SIMCU_NO_REUSE=1 so that every stream is a new handle value) without the shim
and under it in graph mode (default costs), and prints a markdown table of
its checkpoints: resident memory of each run and the shim's growth since the
start of the run (the difference between the two runs, less the difference at
the first checkpoint), and the launching thread's CPU time per op in each run
and the shim's part (the difference). The phases: LAUNCHES launches in
regions of 4 with random grids (a new path per region, one graph key), STREAMS
streams created, used once and destroyed, STREAMS streams used once and kept
alive, and STREAMS non-blocking streams that each launch REGION kernels per
round with a device sync after every round, ROUNDS rounds (their checkpoints
come just before each sync, when every stream holds its round's work: the
peak). Ends with the shim's path and graph counts.

usage: run_soak.py --prog soak --simdir DIR --lib LIBGRAPE [--launches 10000000]
                   [--streams 100000] [--rounds 3] [--round-streams N]
(--launches 0 --streams 0 --round-streams 100000: the rounds phase alone, as
docs/performance.md measures it)
(ninja -C build bench-graph-soak)"""
import argparse
import sys

import simrun


def checkpoints(stdout):
    """[(phase, ops, rss_kib, ns_per_op)] from the program's checkpoint lines."""
    out = []
    for line in stdout.splitlines():
        w = line.split()
        if len(w) == 5 and w[0] == "checkpoint":
            out.append((w[1], int(w[2]), int(w[3]), float(w[4])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prog", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--launches", type=int, default=10_000_000)
    ap.add_argument("--streams", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--round-streams", type=int, help="streams of the rounds phase (default: --streams)")
    a = ap.parse_args()
    if a.round_streams is None:
        a.round_streams = a.streams
    args = [str(a.launches), str(a.streams), "4", str(a.rounds), str(a.round_streams)]
    env = {"SIMCU_SYNC": "1", "SIMCU_NO_REUSE": "1"}
    e = simrun.run(a.prog, args, a.simdir, None, "eager", 0, env=env)
    g = simrun.run(a.prog, args, a.simdir, a.lib, "graph", 0, env=env)
    if g.checksum != e.checksum or g.sim["kernels_executed"] != e.sim["kernels_executed"]:
        print(f"graph mode changed the result: {g.checksum!r} against {e.checksum!r}")
        return 1
    ce, cg = checkpoints(e.stdout), checkpoints(g.stdout)
    if len(ce) != len(cg) or not ce:
        print(f"checkpoints differ: {len(ce)} without the shim, {len(cg)} with it")
        return 1
    base = cg[0][2] - ce[0][2]
    print(f"soak: {a.launches:,} launches (regions of 4, random grids), {a.streams:,} streams "
          f"created and destroyed, then as many kept alive, then {a.round_streams:,} non-blocking "
          f"streams launching 4 kernels each per round, {a.rounds} rounds with a device sync after "
          "each; "
          "SIMCU_SYNC=1, SIMCU_NO_REUSE=1")
    print()
    print("| phase | ops | RSS without shim, MB | RSS graph mode, MB | shim's growth, MB | "
          "CPU ns/op without shim | graph mode | shim's ns/op |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (ph, ops, re_, ne), (_, _, rg, ng) in zip(ce, cg):
        ns = f"{ne:.0f} | {ng:.0f} | {ng - ne:+.0f}" if ops > 0 else "— | — | —"
        print(f"| {ph} | {ops:,} | {re_ / 1024:.1f} | {rg / 1024:.1f} | "
              f"{(rg - re_ - base) / 1024:+.1f} | {ns} |")
    r = g.grape
    print()
    print(f"graph mode: {r.get('regions', 0):,} regions, {r.get('paths', 0):,} paths, "
          f"{r.get('graph_keys', 0):,} graph keys, {r.get('graphs_built', 0):,} graphs built, "
          f"{r.get('graph_hits', 0):,} hits; sim: {g.sim['kernels_executed']:,} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
