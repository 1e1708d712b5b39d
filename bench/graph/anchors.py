#!/usr/bin/env python3
"""Graph mode between its two anchors, in simulated time: per example and
framework work per op (SIMCU_HOST_NS 0, 2000, 5000, 8000), the run's end
without the shim (eager), in graph mode (grape, the shim's default costs),
written by hand with CUDA graphs (decode --graphs-by-hand) and the lower bound
LB of the sim's report (docs/sim.md), with the share of the eager -> LB gap
each closes; for decode also grape's saving over eager as a share of the
hand-written version's, on the whole run and in the steady state (what
batches 9-16 add to a run of 8).

LB is the eager run's; the graph-mode run's must be the same (it is a
property of the program), else the table says so.

usage: anchors.py --examples DIR --simdir DIR --lib LIBGRAPE [--quick] [--jobs J]
                  [--profile default|fair|pessimistic|FILE] [--host-ns 0,2000]
                  [--cost ROW=NS ...] [--shim-env NAME=VALUE ...]
(ninja -C build bench-graph-anchors)"""
import argparse
import concurrent.futures
import os
import sys

import simrun

RUNS = [("decode", []), ("mlp_train", ["--iters", "200"]), ("beam", ["--iters", "50"]),
        ("dynrnn", ["--iters", "50"])]
HOST_NS = [0, 2000, 5000, 8000]
HAND = "--graphs-by-hand"


def measure(job):
    examples, simdir, lib, prog, args, host_ns, mode, profile, rows, shim_env = job
    hand = mode == "hand"
    env = dict(shim_env) if mode == "graph" else {}
    costs = None
    if rows:   # the profile's rows with --cost's on top, as one cost file
        table = simrun.profile_rows(profile)
        table.update(rows)
        costs = "".join(f"{k} {v}\n" for k, v in table.items())
    elif profile:
        env["SIMCU_COSTS"] = profile
    r = simrun.run(os.path.join(examples, prog), args + ([HAND] if hand else []), simdir, lib,
                   "eager" if hand else mode, host_ns, costs=costs, env=env)
    return (prog, tuple(args), host_ns, mode), {
        "end": r.sim["sim_end_ns"], "lb": r.sim["lower_bound_ns"],
        "busy": r.sim["device_busy_ns"], "checksum": r.checksum,
        "kernels": r.sim["kernels_executed"]}


def ms(ns):
    return f"{ns / 1e6:.2f}"


def pct(x):
    return "—" if x is None else f"{round(100 * x)}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--quick", action="store_true", help="decode, 1 batch (a smoke test)")
    ap.add_argument("--profile", default="",
                    help="the sim's cost profile (SIMCU_COSTS: default, fair, pessimistic, or "
                         "a cost file); none: the sim's built-in table")
    ap.add_argument("--host-ns", default="", help="comma-separated SIMCU_HOST_NS values")
    ap.add_argument("--cost", action="append", default=[], type=simrun.pair, metavar="ROW=NS",
                    help="a row of the sim's cost table set for every run, after the profile "
                         "(e.g. graph_exec_set_params=0: node updates free, a bound on what "
                         "fewer updates could gain); repeatable")
    ap.add_argument("--shim-env", action="append", default=[], metavar="NAME=VALUE",
                    help="a GRAPE_ variable for the graph-mode runs (repeatable; the shim's "
                         "defaults apply otherwise)")
    a = ap.parse_args()
    shim_env = tuple(tuple(kv.split("=", 1)) for kv in a.shim_env)
    if any(len(kv) != 2 or not kv[0].startswith("GRAPE_") for kv in shim_env):
        ap.error("--shim-env wants GRAPE_NAME=VALUE")
    runs = [("decode", ["--iters", "1"])] if a.quick else RUNS
    hosts = [0, 5000] if a.quick else HOST_NS
    if a.host_ns:
        hosts = [int(x) for x in a.host_ns.split(",")]
    jobs = []
    for prog, args in runs + ([] if a.quick else [("decode", ["--iters", "16"])]):
        for h in hosts:
            for mode in ["eager", "graph"] + (["hand"] if prog == "decode" else []):
                jobs.append((a.examples, a.simdir, a.lib, prog, args, h, mode, a.profile,
                             tuple((k, int(v)) for k, v in a.cost), shim_env))
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        res = dict(ex.map(measure, jobs))

    problems = []
    print("| run | HOST_NS | eager | grape | hand-written | LB | device busy, eager | "
          "gap closed: grape | gap closed: hand-written | grape / hand-written saving |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for prog, args in runs:
        for h in hosts:
            k = (prog, tuple(args), h)
            e, g, hd = res[k + ("eager",)], res[k + ("graph",)], res.get(k + ("hand",))
            for other, name in ((g, "graph mode"), (hd, "hand-written")):
                if other is not None and (other["checksum"] != e["checksum"] or
                                          other["kernels"] != e["kernels"]):
                    problems.append(f"{prog} {' '.join(args)} HOST_NS {h}: {name} changed the "
                                    f"result")
            if g["lb"] != e["lb"]:
                problems.append(f"{prog} {' '.join(args)} HOST_NS {h}: LB {g['lb']} in graph "
                                f"mode, {e['lb']} eager")
            lb = e["lb"]
            share = None
            if hd is not None and e["end"] > hd["end"]:
                share = (e["end"] - g["end"]) / (e["end"] - hd["end"])
            print(f"| `{' '.join([prog] + args)}` | {h} | {ms(e['end'])} | {ms(g['end'])} | "
                  f"{ms(hd['end']) if hd else '—'} | {ms(lb)} | {ms(e['busy'])} | "
                  f"{pct(simrun.gap_closed(e['end'], g['end'], lb))} | "
                  f"{pct(simrun.gap_closed(e['end'], hd['end'], lb)) if hd else '—'} | "
                  f"{pct(share)} |")
    print("\nTimes in ms of simulated time (sim_end_ns); gap closed = (eager − run) / "
          "(eager − LB).")
    if not a.quick:
        print("\ndecode, steady state (what batches 9-16 add to a run of 8): grape's saving over "
              "eager as a share of the hand-written version's")
        for h in hosts:
            d = {m: res[("decode", ("--iters", "16"), h, m)]["end"] -
                 res[("decode", (), h, m)]["end"] for m in ("eager", "graph", "hand")}
            share = (d["eager"] - d["graph"]) / (d["eager"] - d["hand"]) if d["eager"] > d["hand"] \
                else None
            print(f"- HOST_NS {h}: eager +{ms(d['eager'])} ms, grape +{ms(d['graph'])} ms, "
                  f"hand-written +{ms(d['hand'])} ms: {pct(share)}")
    if problems:
        print("\n**Problems:**")
        for p in problems:
            print(f"- {p}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
