#!/usr/bin/env python3
"""GRAPE_CONCURRENCY on the simulated device (docs/concurrency.md): the moe
example (or another program) without the shim and in graph mode with
concurrency off, observe and safe, at each --iters given; then safe mode
under the reversed and --orders shuffled graph orders. Prints a markdown
table: simulated end-to-end time, speed-up against graph mode with chain
graphs (off), checksum, graph hits, plans built/kept/reverted, and the
device time of the timed segment launches (every replay of a segment with a
timer: chains and concurrent plans together) with their count. "builder"
marks a run whose end is the builder thread's last build, not the program's
(a short run that exits while graphs are still being built).

Builds are free in the shim's cost model (GRAPE_COSTS=build=0,build_node=0)
and happen on its builder thread, as in the graph-mode benches.

usage: concurrency.py --prog build/examples/moe --simdir build/sim:build/sim/cublas
                      --lib build/interpose/libgrape.so [--iters 3 20 60] [--orders 20] [--order-iters 20]"""
import argparse
import sys

import simrun

COSTS = {"GRAPE_COSTS": "build=0,build_node=0"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--iters", nargs="*", default=["3", "20", "60"])
    ap.add_argument("--orders", type=int, default=20)
    ap.add_argument("--order-iters", default="20", help="--iters of the adversarial runs")
    a = ap.parse_args()
    print("| iters | mode | sim_end ms | vs off | checksum | graph hits | plans built/kept/reverted "
          "| timed segment launches: device ms (count; of them plans) |")
    print("|---|---|---|---|---|---|---|---|")
    bad = 0
    for iters in a.iters:
        args = ["--iters", iters]
        eager = simrun.run(a.prog, args, a.simdir)
        want = eager.checksum
        print(f"| {iters} | eager | {eager.sim['sim_end_ns'] / 1e6:.3f} | | {want.split()[-1]} | | | |")
        off = None
        for mode in ("off", "observe", "safe"):
            r = simrun.run(a.prog, args, a.simdir, a.lib, "graph", env=dict(COSTS, GRAPE_CONCURRENCY=mode))
            t = r.sim["sim_end_ns"]
            off = off or t
            c = r.grape["concurrency"]
            same = "same" if r.checksum == want else "DIFFERENT"
            bad += r.checksum != want
            ends = " (builder)" if r.sim["helper_end_ns"] == t else ""
            print(f"| {iters} | {mode} | {t / 1e6:.3f}{ends} | {off / t:.3f}x | {same} | {r.grape['graph_hits']} "
                  f"| {c['plans_built']}/{c['plans_kept']}/{c['plans_reverted']} "
                  f"| {(c['device_ns_chain'] + c['device_ns_plan']) / 1e6:.3f} "
                  f"({c['timed_chain'] + c['timed_plan']}; {c['timed_plan']}) |")
    args = ["--iters", a.order_iters]
    want = simrun.run(a.prog, args, a.simdir).checksum
    orders = ["reverse"] + [f"shuffle:{s}" for s in range(1, a.orders + 1)]
    wrong, replayed = [], 0
    for order in orders:
        r = simrun.run(a.prog, args, a.simdir, a.lib, "graph",
                       env=dict(COSTS, GRAPE_CONCURRENCY="safe", SIMCU_GRAPH_ORDER=order))
        replayed += r.grape["concurrency"]["plan_launches"]
        if r.checksum != want:
            wrong.append(order)
    bad += len(wrong)
    print(f"\nsafe, --iters {a.order_iters}, {len(orders)} adversarial graph orders: "
          f"{len(orders) - len(wrong)} with the eager checksum, {replayed} plan launches in all"
          + (f"; DIFFERENT under {', '.join(wrong)}" if wrong else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
