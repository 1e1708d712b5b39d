#!/usr/bin/env python3
"""check_chunk_phase.py CASE --prog CHUNK_PHASE --preload P --simdir D: graph
mode on chunk_phase.c's loops of K parameterless PTX kernels (timed on the
sim), builds free (simenv.py).

- `zero_params`: steps of 2 kernels without parameters, a sync per step: their
  graphs are built and replayed, and the program exits 0. The sim's copy of a
  parameterless kernel's work shared its 1-byte parameter block with the
  original, so a graph node, its executable and each launch freed one block
  ("free(): double free detected"; found by the PyTorch runs' probe).
- `aligned`: 32-kernel steps without a sync, cut only by GRAPE_CHUNK (1,024 =
  32 x 32 ops): every chunk follows one path, which is replayed.
- `phase`: 31-kernel steps without a sync. Cut at GRAPE_CHUNK alone, chunk c
  would start at op (c x 1,024) mod 31 of a step: 31 paths, none recurring
  in 200 steps (docs/frameworks.md, "A step that never synchronises"). A
  chunk ends instead at the phase the first one ended at, where the next
  such point would pass 1,024 ops: the chunks after the first are 1,023 ops
  (33 steps) and one path, which is replayed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simenv import sim_env  # noqa: E402


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-3000:]}"
    sys.exit("FAIL: " + msg)


def run(a, args):
    with tempfile.TemporaryDirectory() as d:
        e = sim_env(a.simdir, a.preload, d, True, "graph", {"SIMCU_KERNELS": "timed"})
        p = subprocess.run([a.prog] + args, env=e, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            fail(f"chunk_phase {' '.join(args)} exited {p.returncode}", p)
        reps = [json.load(open(os.path.join(d, f))) for f in os.listdir(d) if f.startswith("grape.")]
        if len(reps) != 1:
            fail(f"want one grape report, got {len(reps)}", p)
        return p, reps[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["zero_params", "aligned", "phase"])
    ap.add_argument("--prog", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    a = ap.parse_args()
    if a.case == "zero_params":
        p, r = run(a, ["2", "10", "1"])
        if r["graphs_built"] == 0 or r["graph_hits"] == 0 or r["launches"] != 20:
            fail(f"{r['launches']} launches, {r['graphs_built']} graphs built, "
                 f"{r['graph_hits']} hits", p)
    elif a.case == "aligned":
        p, r = run(a, ["32", "200", "0"])
        if r["paths"] > 2 or r["graph_hits"] == 0:
            fail(f"32-op steps in 1,024-op chunks: {r['paths']} paths, {r['graph_hits']} hits", p)
    else:
        p, r = run(a, ["31", "200", "0"])
        # The first chunk, the recurring one, and the rest at the end.
        if r["paths"] > 3 or r["graph_hits"] == 0:
            fail(f"31-op steps without a sync: {r['paths']} paths, {r['graph_hits']} hits", p)
    print(f"{a.case}: {r['regions']} regions, {r['paths']} paths, {r['graphs_built']} built, "
          f"{r['graph_hits']} hits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
