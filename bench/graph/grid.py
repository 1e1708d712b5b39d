#!/usr/bin/env python3
"""Graph mode against eager execution over a grid of regimes, in simulated
time: every example, at several run lengths (every one from 1 to 5
iterations, then longer), with kernels of 1 to 100 us (14 durations,
SIMCU_COSTS) and 0, 0.5, 2, 5, 8 or 20 us of framework work per op
(SIMCU_HOST_NS), on the sim's built-in table or a cost profile
(--profile). Each regime runs once without the shim and once in graph mode
with the shim's default costs; their checksums and kernels executed must be
identical. Prints markdown: per example, the ratio
graph / eager of sim_end_ns for every regime, those above 1.02 in bold, and
the worst.

The sim is deterministic, so one run per figure. The grid splits into chunks
that may run anywhere, side by side: --chunk K/N takes every N-th regime from
the K-th (1-based) and --out writes its results as JSON; --merge reads such
files and prints the tables. Without --chunk, all regimes run on --jobs
processes (default: the machine's cores).

usage: grid.py --examples DIR --simdir DIR --lib LIBGRAPE [--jobs J]
                [--chunk K/N --out FILE] [--quick] [--profile default|fair|pessimistic]
       grid.py --merge FILE...
(ninja -C build bench-graph-grid)"""
import argparse
import concurrent.futures
import json
import os
import sys

import simrun

# Kernel durations on the device, ns (14 values from 1 to 100 us).
KERNEL_NS = [1000, 1500, 2000, 3000, 4000, 5000, 6000, 7500, 10000, 15000, 20000, 30000, 50000,
             100000]
HOST_NS = [0, 500, 2000, 5000, 8000, 20000]
# Run lengths (--iters) per example: dynrnn iterations of ~46 steps, beam
# decodes, mlp_train SGD steps, decode batches of ~42 steps; every length
# from 1 to 5 (short runs, where a build is a bet), then longer ones.
LENGTHS = {"dynrnn": [1, 2, 3, 4, 5, 8, 50], "beam": [1, 2, 3, 4, 5, 9, 50],
           "mlp_train": [1, 2, 3, 4, 5, 55, 200, 1000], "decode": [1, 2, 3, 4, 5, 8, 16]}
QUICK = {"kernel_ns": [2000, 50000], "host_ns": [0, 5000], "lengths": {"beam": [2], "decode": [2]}}
SLOWER = 1.02   # graph mode more than 2% slower than eager: a losing regime


def regimes(quick):
    lengths = QUICK["lengths"] if quick else LENGTHS
    kns = QUICK["kernel_ns"] if quick else KERNEL_NS
    hns = QUICK["host_ns"] if quick else HOST_NS
    return [(prog, n, k, h) for prog in lengths for n in lengths[prog] for h in hns for k in kns]


def measure(job):
    """One regime: eager and graph mode; returns a result dict."""
    examples, simdir, lib, profile, rows, shim_env, (prog, iters, kernel_ns, host_ns) = job
    path = os.path.join(examples, prog)
    args = ["--iters", str(iters)]
    costs = simrun.kernel_costs(kernel_ns, profile) + "".join(f"{k} {v}\n" for k, v in rows)
    e = simrun.run(path, args, simdir, None, "eager", host_ns, costs)
    g = simrun.run(path, args, simdir, lib, "graph", host_ns, costs, env=dict(shim_env))
    problems = []
    if g.checksum != e.checksum:
        problems.append(f"checksum {g.checksum!r} against {e.checksum!r}")
    if g.sim["kernels_executed"] != e.sim["kernels_executed"]:
        problems.append(f"kernels executed {g.sim['kernels_executed']} against "
                        f"{e.sim['kernels_executed']}")
    return {"prog": prog, "iters": iters, "kernel_ns": kernel_ns, "host_ns": host_ns,
            "eager_ns": e.sim["sim_end_ns"], "graph_ns": g.sim["sim_end_ns"],
            "hits": g.grape["graph_hits"], "built": g.grape["graphs_built"],
            "regions": g.grape["regions"], "problems": problems}


def run_all(a, todo):
    jobs = [(a.examples, a.simdir, a.lib, a.profile, a.cost, a.shim_env, r) for r in todo]
    if a.jobs == 1:
        return shown(map(measure, jobs), len(jobs))
    with concurrent.futures.ProcessPoolExecutor(max_workers=a.jobs) as ex:
        return shown(ex.map(measure, jobs), len(jobs))


def shown(results, total):
    """The results, with a status line of how many are done on a terminal
    (stderr), never in a pipe or a log."""
    tty = sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
    out = []
    for r in results:
        out.append(r)
        if tty:
            print(f"\r\033[Kgrid: {len(out)} of {total} regimes run", end="", file=sys.stderr,
                  flush=True)
    if tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return out


def us(ns):
    return f"{ns / 1000:g}"


def tables(results):
    """Markdown: per example, ratios graph / eager for every regime, the
    losing ones in bold, then the worst regime and the count of losing ones."""
    out = []
    bad = [r for r in results if r["problems"]]
    for prog in [p for p in LENGTHS if any(r["prog"] == p for r in results)]:
        rs = [r for r in results if r["prog"] == prog]
        kns = sorted({r["kernel_ns"] for r in rs})
        by = {(r["iters"], r["host_ns"], r["kernel_ns"]): r for r in rs}
        out.append(f"**{prog}** (graph mode / eager, sim_end_ns; columns: kernel duration, us; "
                   f"bold: > {SLOWER:.2f})\n")
        out.append("| --iters | HOST_NS | " + " | ".join(us(k) for k in kns) + " |")
        out.append("|---:|---:|" + "---:|" * len(kns))
        for iters in sorted({r["iters"] for r in rs}):
            for h in sorted({r["host_ns"] for r in rs}):
                cells = []
                for k in kns:
                    r = by.get((iters, h, k))
                    if r is None:
                        cells.append("")
                        continue
                    ratio = r["graph_ns"] / r["eager_ns"]
                    cell = f"{ratio:.3f}"
                    cells.append(f"**{cell}**" if ratio > SLOWER else cell)
                out.append(f"| {iters} | {h} | " + " | ".join(cells) + " |")
        worst = max(rs, key=lambda r: r["graph_ns"] / r["eager_ns"])
        losing = sum(1 for r in rs if r["graph_ns"] > SLOWER * r["eager_ns"])
        out.append("")
        out.append(f"{prog}: {losing} of {len(rs)} regimes more than {100 * (SLOWER - 1):.0f}% "
                   f"slower than eager; worst {worst['graph_ns'] / worst['eager_ns']:.3f} at "
                   f"--iters {worst['iters']}, {us(worst['kernel_ns'])} us kernels, HOST_NS "
                   f"{worst['host_ns']} ({worst['built']} graphs built, {worst['hits']} hits of "
                   f"{worst['regions']} regions); {sum(r['hits'] for r in rs)} graph hits over "
                   f"all {len(rs)}\n")
    if bad:
        out.append(f"**{len(bad)} regimes changed the results:**")
        for r in bad:
            out.append(f"- {r['prog']} --iters {r['iters']}, {us(r['kernel_ns'])} us, HOST_NS "
                       f"{r['host_ns']}: {'; '.join(r['problems'])}")
    else:
        out.append(f"Checksums and kernels executed identical in all {len(results)} regimes.")
    return "\n".join(out), len(bad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples")
    ap.add_argument("--simdir")
    ap.add_argument("--lib")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--chunk", help="K/N: run every N-th regime from the K-th (1-based)")
    ap.add_argument("--out", help="write the chunk's results here (JSON) instead of tables")
    ap.add_argument("--merge", nargs="+", metavar="FILE", help="print the tables of chunk files")
    ap.add_argument("--quick", action="store_true", help="a tiny grid (a smoke test)")
    ap.add_argument("--profile", default="",
                    help="the sim's cost profile under the kernel durations (sim/costs/: "
                         "default, fair, pessimistic); none: the sim's built-in table")
    ap.add_argument("--cost", action="append", default=[], type=simrun.pair, metavar="ROW=NS",
                    help="a row of the sim's cost table set for both runs, after the profile "
                         "and the kernel duration (e.g. shim_op=0: the shim's own host time "
                         "left out); repeatable")
    ap.add_argument("--shim-env", action="append", default=[], type=simrun.pair, metavar="NAME=VALUE",
                    help="a GRAPE_ variable for the graph-mode runs (e.g. "
                         "GRAPE_WARMUP=1000000000: nothing built, the recording alone); repeatable")
    a = ap.parse_args()
    if a.merge:
        results = []
        for path in a.merge:
            with open(path) as f:
                results += json.load(f)
    else:
        if not (a.examples and a.simdir and a.lib):
            ap.error("--examples, --simdir and --lib are needed to run")
        todo = regimes(a.quick)
        if a.chunk:
            try:
                k, n = (int(x) for x in a.chunk.split("/"))
                if not 1 <= k <= n:
                    raise ValueError
            except ValueError:
                ap.error(f"--chunk wants K/N with 1 <= K <= N, not {a.chunk!r}")
            todo = todo[k - 1::n]
        results = run_all(a, todo)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(results, f)
            print(f"{len(results)} regimes written to {a.out}")
            return 1 if any(r["problems"] for r in results) else 0
    text, nbad = tables(results)
    print(text)
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
