#!/usr/bin/env python3
"""Graph mode against eager execution on the simulated device, per example:
submission calls, node updates and graph hits per region, and simulated
end-to-end time (sim_end_ns) with no framework work per op and with 5 us of it
(SIMCU_HOST_NS=5000). Prints a markdown table (docs/performance.md).

Each example runs without the shim (eager), in observe mode and in graph mode
with the default costs; decode also at twice its batches, so that the
difference between the two runs gives the steady state after warm-up.

usage: run_examples.py --examples DIR --simdir DIR --lib LIBGRAPE"""
import argparse
import os
import sys

import simrun

RUNS = [("dynrnn", []), ("dynrnn", ["--iters", "50"]), ("beam", []), ("beam", ["--iters", "50"]),
        ("mlp_train", []), ("mlp_train", ["--iters", "200"]), ("decode", []),
        ("decode", ["--iters", "16"])]


def run(a, prog, args, mode, host_ns):
    """Returns (grape report or None, sim report, stdout)."""
    r = simrun.run(os.path.join(a.examples, prog), args, a.simdir, a.lib, mode, host_ns)
    return r.grape, r.sim, r.stdout


def submissions(sim):
    """Driver calls that submit work: launches, graph launches, node updates,
    async copies and memsets (the sim's counts, the shim's own included)."""
    n = 0
    for name, c in sim["api_calls"].items():
        if (name.startswith(("cuLaunchKernel", "cuGraphLaunch", "cuMemcpy", "cuMemset")) or
                (name.startswith("cuGraphExec") and "SetParams" in name)):
            n += c
    return n


def launches(sim):
    return sum(c for name, c in sim["api_calls"].items() if name.startswith("cuLaunchKernel"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    rows = {}
    print("| run | mode | regions | kernel launch calls | submission calls | node updates "
          "| graph hits | graphs built | sim_end_ns, HOST_NS=0 | sim_end_ns, HOST_NS=5000 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for prog, args in RUNS:
        name = " ".join([prog] + args)
        out0 = None
        for mode in ("eager", "observe", "graph"):
            rep, sim0, out = run(a, prog, args, mode, 0)
            _, sim5, _ = run(a, prog, args, mode, 5000)
            if out0 is None:
                out0 = out
            elif out != out0:
                sys.exit(f"{name}: {mode} changed the output")
            regions = rep["regions"] if rep else rows[(name, "observe")]["regions"] if (name, "observe") in rows else 0
            r = dict(regions=regions, launches=launches(sim0), subs=submissions(sim0),
                     updates=sim0.get("exec_node_param_updates", 0),
                     hits=rep["graph_hits"] if rep else 0, built=rep["graphs_built"] if rep else 0,
                     t0=sim0["sim_end_ns"], t5=sim5["sim_end_ns"])
            rows[(name, mode)] = r
            regions_txt = str(r["regions"]) if rep else "—"
            print(f"| `{name}` | {mode} | {regions_txt} | {r['launches']} | {r['subs']} | {r['updates']} "
                  f"| {r['hits']} | {r['built']} | {r['t0']:,} | {r['t5']:,} |")
    # Steady state of decode: what batches 9-16 add to a run of 8.
    e8, e16 = rows[("decode", "eager")], rows[("decode --iters 16", "eager")]
    g8, g16 = rows[("decode", "graph")], rows[("decode --iters 16", "graph")]
    print()
    print(f"decode, batches 9-16 (the steady state after warm-up): kernel launch calls "
          f"eager +{e16['launches'] - e8['launches']}, graph mode {g16['launches'] - g8['launches']:+d}; "
          f"submission calls eager +{e16['subs'] - e8['subs']}, graph mode +{g16['subs'] - g8['subs']} "
          f"({(e16['subs'] - e8['subs']) / max(1, g16['subs'] - g8['subs']):.2f}x fewer); "
          f"graph hits +{g16['hits'] - g8['hits']} of +{g16['regions'] - g8['regions']} regions")
    for name in ("dynrnn", "beam", "mlp_train", "decode"):
        for n in [k for k in rows if k[0].startswith(name) and k[1] == "graph"]:
            e = rows[(n[0], "eager")]
            g = rows[n]
            print(f"{n[0]}: graph/eager sim_end {g['t0'] / e['t0']:.3f} (HOST_NS=0), "
                  f"{g['t5'] / e['t5']:.3f} (HOST_NS=5000); submission calls {e['subs'] / g['subs']:.2f}x fewer")


if __name__ == "__main__":
    main()
