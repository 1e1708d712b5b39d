#!/usr/bin/env python3
"""check_torch_libs.py LIB --grape GRAPE --source DIR: PyTorch's calls into a
vendor library that carries NVIDIA's runtime linked in (cuFFT, cuSPARSE,
NCCL) under `grape run --device sim --sim-kernels timed`, in observe mode and
in graph mode with builds forced (tests/cli/torch_vendor_lib.py: synchronised
steps, two calls into the library, more steps).

Such a library cannot work on the sim (its runtime needs the driver's private
export tables: docs/frameworks.md). Each call must fail at once, as PyTorch
reports the library's error, never hang or crash; the sim names the library's
file once, however often it is called; the program goes on, grape's launch
count equals the kernels the sim ran, and in graph mode the steps around the
failed calls still replay.

Skipped, saying why, as check_torch_examples.py's cases are: without torch,
without the cuBLAS stand-ins, in a TSan build.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_torch_examples import device_kernels, fail, parse_torch_args, reports, total  # noqa: E402

STEPS = 10
# The library's file, as the sim names it, and what PyTorch's error says.
LIBS = {
    "fft": ("libcufft.so", "cuFFT error"),
    "sparse": ("libcusparse.so", "cusparseCreate"),
    "nccl": ("libnccl.so", "NCCL"),
}


def run(a, d, mode, env=None):
    rep = os.path.join(d, f"{mode}.%p.json")
    e = dict(os.environ)
    for k in ("GRAPE_MODE", "GRAPE_COSTS", "GRAPE_TRACE", "GRAPE_REPORT"):
        e.pop(k, None)
    e.update(env or {})
    cmd = [a.grape, "run", "--device", "sim", "--sim-kernels", "timed", "--mode", mode,
           "--report", rep, "--", a.python, "-W", "ignore",
           os.path.join(a.source, "tests", "cli", "torch_vendor_lib.py"), a.lib, str(STEPS)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=d)
    if p.returncode != 0 or "done" not in p.stdout:
        fail(f"{a.lib} in {mode} mode: the program did not finish", p)
    soname, error = LIBS[a.lib]
    failed = [x for x in p.stdout.splitlines() if x.startswith(f"{a.lib} failed: ")]
    if len(failed) != 2 or not all(error in x for x in failed):
        fail(f"{mode} mode: want both calls to fail with PyTorch's '{error}'", p)
    named = [x for x in p.stderr.splitlines()
             if soname in x and "carries NVIDIA's CUDA runtime" in x]
    if len(named) != 1:
        fail(f"{mode} mode: the sim named {soname} {len(named)} times, want once", p)
    reps = reports(rep.replace("%p", "*"))
    launches, ran = total(reps, "launches"), device_kernels(reps)
    if launches == 0 or launches != ran or total(reps, "launches_captured"):
        fail(f"{mode} mode: grape counted {launches} launches, the sim ran {ran} kernels", p)
    return p, reps, launches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib", choices=sorted(LIBS))
    a = parse_torch_args(ap)
    if a is None:
        return 77
    with tempfile.TemporaryDirectory() as d:
        p, reps, n = run(a, d, "observe")
        if total(reps, "graphs_built") or total(reps, "graph_hits"):
            fail("observe mode built or replayed graphs", p)
        p, reps, n = run(a, d, "graph", env={"GRAPE_COSTS": "build=0,build_node=0"})
        hits = total(reps, "graph_hits")
        graph_kernels = sum(k["graph_calls"] for r in reps if r.get("device_times")
                            for k in r["device_times"]["kernels"])
        if hits == 0 or graph_kernels == 0:
            fail(f"graph mode, builds forced: {hits} hits, {graph_kernels} graph kernels on the "
                 "sim: the steps around the failed calls must replay", p)
    print(f"{a.lib}: failed twice, named once; {n} launches = the sim's kernels; "
          f"graph mode {hits} hits of {total(reps, 'regions')} regions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
