#!/usr/bin/env python3
"""check_torch_compile.py --grape GRAPE --source DIR: torch.compile under
`grape run --device sim --sim-kernels timed` (tests/cli/torch_compile_mlp.py:
a compiled MLP training step). Inductor's Triton kernels are compiled to
cubins on the host (Triton's own ptxas, the C compiler for its launcher) and
loaded from their files by PyTorch's launcher (cuModuleLoad), then run timed.

- Observe mode, with empty Inductor and Triton caches (so everything is
  compiled and loaded in this run): the program finishes, the sim ran
  Triton's kernels, and grape's launch count equals the kernels the sim ran.
- Graph mode with builds forced, the caches now warm: the same counts, and
  graphs of the compiled steps are built and replayed.

Skipped, saying why, as check_torch_examples.py's cases are: without torch,
without the cuBLAS stand-ins, in a TSan build.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_torch_examples import device_kernels, fail, parse_torch_args, reports, total  # noqa: E402

STEPS = 30


def run(a, d, mode, env=None):
    rep = os.path.join(d, f"{mode}.%p.json")
    e = {k: v for k, v in os.environ.items()
         if k not in ("GRAPE_MODE", "GRAPE_COSTS", "GRAPE_TRACE", "GRAPE_REPORT")}
    # The caches in the test's folder; one compile thread, no worker pool.
    e.update(TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"),
             TRITON_CACHE_DIR=os.path.join(d, "triton"), TORCHINDUCTOR_COMPILE_THREADS="1")
    e.update(env or {})
    cmd = [a.grape, "run", "--device", "sim", "--sim-kernels", "timed", "--mode", mode,
           "--report", rep, "--", a.python, "-W", "ignore",
           os.path.join(a.source, "tests", "cli", "torch_compile_mlp.py"), str(STEPS)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=d)
    print(f"{mode} {' '.join(f'{k}={v}' for k, v in (env or {}).items())}: {time.time() - t0:.1f} s")
    if p.returncode != 0 or f"compiled and ran {STEPS} training steps" not in p.stdout:
        fail(f"torch.compile under grape run --mode {mode}", p)
    reps = reports(rep.replace("%p", "*"))
    launches, ran = total(reps, "launches"), device_kernels(reps)
    triton = sum(k["calls"] for r in reps if r.get("device_times")
                 for k in r["device_times"]["kernels"] if k["name"].startswith("triton_"))
    if triton == 0:
        fail(f"{mode} mode: the sim ran no Triton kernel", p)
    if launches != ran:
        fail(f"{mode} mode: grape counted {launches} launches, the sim ran {ran} kernels", p)
    return p, reps, launches, triton


def main():
    a = parse_torch_args(argparse.ArgumentParser())
    if a is None:
        return 77
    with tempfile.TemporaryDirectory() as d:
        p, reps, n, triton = run(a, d, "observe")
        if total(reps, "graphs_built") or total(reps, "graph_hits"):
            fail("observe mode built or replayed graphs", p)
        print(f"observe: {n} launches = the sim's kernels, {triton} of Triton's")
        p, reps, n, triton = run(a, d, "graph", env={"GRAPE_COSTS": "build=0,build_node=0"})
        hits, built = total(reps, "graph_hits"), total(reps, "graphs_built")
        if hits == 0 or built == 0:
            fail(f"graph mode, builds forced: {built} graphs built, {hits} hits", p)
        print(f"graph, builds forced: {n} launches = the sim's kernels, {triton} of Triton's; "
              f"{built} graphs built, {hits} hits of {total(reps, 'regions')} regions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
