#!/usr/bin/env python3
"""check_torch_examples.py EXAMPLE CASE --grape GRAPE --source DIR: the
PyTorch programs of examples/python/ under `grape run --device sim
--sim-kernels timed`, as docs/frameworks.md runs them, with small step
counts so that each case takes seconds.

Cases (one meson test each, `torch_<example>_<case>`):

- `off`: the program runs with GRAPE_MODE=off and again in observe mode;
  the sim runs the same number of kernels in both (SIMCU_REPORT), and in
  observe mode grape's launch count equals the kernels the sim ran
  (`device_times`), less the program's own graph replays for cuda_graph.py
  (their kernels are `launches_captured` once each, in the capture).
- `graph`: graph mode by its default rule, with a trace and `--predict-gpu
  H100`: launches = the sim's kernels, the report's graph launches reached
  the device, the predicted totals are in the report and the summary, and
  `grape replay --sim-kernels timed` replays every path of the trace.
  train_mlp (the long run of the three) must replay by the default rule.
- `forced`: graph mode with builds forced (`GRAPE_COSTS=build=0,build_node=0`):
  launches = the sim's kernels and graph hits > 0.
- `gain` (decode only): the long run of docs/frameworks.md (`--max-steps 200
  --min-len 150`, keys that live 32 to 64 steps, SIMCU_HOST_NS=7000) under
  `grape run --compare`: graph mode by its default rule takes at least 2%
  less simulated time than GRAPE_MODE=off. Its keys' first cuts are a guess
  that their timed replays correct; judged on the guess, they were stood
  down and the run was 0.4% slower than eager.

In the ASan build they run as in the normal one, the sanitizer's runtime
preloaded into PyTorch's Python (leak checks off), and take about three
times as long (docs/frameworks.md); in a TSan build they are skipped.

Where torch is found: $GRAPE_TORCH_PYTHON (a Python that imports a CUDA
build of torch), else `.venv-frameworks/bin/python` in the source tree (what
`scripts/setup-deps --frameworks` makes, `$GRAPE_FRAMEWORKS_VENV` if set).
Without one, each case is skipped (exit 77) saying so, and citing why the
install failed where setup-deps noted it (install-failed.txt: CI installs
torch, and goes on without it when the download fails).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# Small arguments: each case stays well under 30 s on a loaded 2-core machine.
ARGS = {
    "train_mlp": ["--steps", "48"],
    "decode": [],                       # 8 sequences, at most 48 steps
    "cuda_graph": ["--replays", "12"],
}
DONE = {"train_mlp": "trained 48 steps", "decode": "decoded ", "cuda_graph": "replayed it 12 times"}
REPLAYS = {"cuda_graph": 12}   # the program's own graph replays


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-5000:]}"
    sys.exit("FAIL: " + msg)


def install_failure(venv):
    """Why scripts/setup-deps --frameworks last failed to install torch into
    venv (its install-failed.txt, one line), or ''."""
    try:
        lines = open(os.path.join(venv, "install-failed.txt")).read().split("\n")
    except OSError:
        return ""
    return "; ".join(x.strip() for x in lines if x.strip())


def python_path(source):
    """Where the torch Python is looked for: $GRAPE_TORCH_PYTHON, else the
    environment setup-deps --frameworks makes ($GRAPE_FRAMEWORKS_VENV, else
    .venv-frameworks/). (python, that environment)"""
    venv = os.environ.get("GRAPE_FRAMEWORKS_VENV") or os.path.join(source, ".venv-frameworks")
    return os.environ.get("GRAPE_TORCH_PYTHON") or os.path.join(venv, "bin", "python"), venv


def find_python(source):
    """The torch Python and why there is none (None, reason): the one of
    python_path, citing the reason its environment's install failed if it
    did."""
    py, venv = python_path(source)
    where = "GRAPE_TORCH_PYTHON" if os.environ.get("GRAPE_TORCH_PYTHON") else py
    failed = "" if os.environ.get("GRAPE_TORCH_PYTHON") else install_failure(venv)
    if failed:
        failed = f"; the framework install failed: {failed}"
    if not os.path.exists(py):
        return None, (f"no torch: {py} does not exist (scripts/setup-deps --frameworks "
                      f"installs PyTorch there, or set GRAPE_TORCH_PYTHON){failed}")
    p = subprocess.run([py, "-c", "import importlib.util as u, os; s = u.find_spec('torch'); "
                        "print(s.origin if s else '')"], capture_output=True, text=True, timeout=60)
    origin = p.stdout.strip()
    if p.returncode != 0 or not origin:
        return None, f"no torch: {where} cannot find torch{failed}"
    if not os.path.exists(os.path.join(os.path.dirname(origin), "lib", "libtorch_cuda.so")):
        return None, f"no CUDA build of torch in {where} ({origin} has no libtorch_cuda.so){failed}"
    return py, None


def torch_python(a):
    """The torch Python these tests run, or (None, why they are skipped): a
    build without the cuBLAS stand-ins, or no torch. In a sanitizer build
    the sanitizer's runtime is preloaded into every process the test starts
    (before libgrape.so, as grape run keeps it), leak checks off: Python's
    own allocations outlive it."""
    san = ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))
    if "libtsan" in san:
        return None, ("a ThreadSanitizer build: scripts/test runs only the threads suite there, "
                      "and these tests were not tried under TSan")
    if san:
        os.environ["LD_PRELOAD"] = san
        os.environ["ASAN_OPTIONS"] = "detect_leaks=0"
    if a.cublas == "no":
        return None, ("built without nvcc, so without the sim's cuBLAS stand-ins that "
                      "PyTorch's GEMMs need")
    return find_python(a.source)


def parse_torch_args(ap):
    """Adds the options every torch test takes to ap, parses the command line
    and finds torch: the arguments (a.python set), or None once it has said
    why the test is skipped."""
    ap.add_argument("--grape", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--cublas", choices=["yes", "no"], default="yes",
                    help="whether the sim's cuBLAS stand-ins were built (they need nvcc)")
    ap.add_argument("--preload", default="",
                    help="the build's preload list (sanitizer runtimes first in a sanitizer build)")
    a = ap.parse_args()
    a.python, why = torch_python(a)
    if a.python is None:
        print("skipped: " + why)
        return None
    return a


def reports(pattern):
    """The reports of every process a run left (torch spawns some that run no CUDA)."""
    return [json.load(open(f)) for f in sorted(glob.glob(pattern))]


def total(reps, key):
    return sum(r.get(key) or 0 for r in reps)


def device_kernels(reps):
    """Kernels the sim ran, as the shim copied its statistics into the reports."""
    return sum(k["calls"] for r in reps if r.get("device_times")
               for k in r["device_times"]["kernels"])


def run_env(extra):
    """The caller's environment without the settings a case chooses itself, plus extra."""
    e = dict(os.environ)
    for k in ("GRAPE_MODE", "GRAPE_COSTS", "GRAPE_TRACE", "GRAPE_REPORT", "SIMCU_REPORT"):
        e.pop(k, None)
    e.update(extra or {})
    return e


class Run:
    def __init__(self, a, d):
        self.a, self.d, self.n = a, d, 0

    def __call__(self, mode_args, env=None, extra=()):
        """grape run ... -- python EXAMPLE ARGS; returns (process, reports, sim reports)."""
        self.n += 1
        rep = os.path.join(self.d, f"r{self.n}.%p.json")
        e = run_env(env)
        cmd = ([self.a.grape, "run", "--device", "sim", "--sim-kernels", "timed", "--report", rep]
               + list(mode_args) + list(extra) + ["--", self.a.python, "-W", "ignore",
               os.path.join(self.a.source, "examples", "python", self.a.example + ".py")]
               + ARGS[self.a.example])
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=self.d)
        print(f"{' '.join(mode_args + list(extra))} {' '.join(f'{k}={v}' for k, v in (env or {}).items())}: "
              f"{time.time() - t0:.1f} s")
        if p.returncode != 0:
            fail(f"{self.a.example} under grape run {' '.join(mode_args)}", p)
        if DONE[self.a.example] not in p.stdout:
            fail(f"{self.a.example} did not finish ('{DONE[self.a.example]}' not printed)", p)
        sims = [json.load(open(f)) for f in glob.glob(os.path.join(self.d, f"sim{self.n}.*.json"))]
        return p, reports(rep.replace("%p", "*")), sims


def check_counts(a, p, reps, what):
    """grape's launches = the kernels the sim ran outside the program's own graphs."""
    launches, captured = total(reps, "launches"), total(reps, "launches_captured")
    ran = device_kernels(reps)
    own = captured * REPLAYS.get(a.example, 0)
    if a.example == "cuda_graph" and captured == 0:
        fail(f"{what}: the program's capture is not counted (launches_captured 0)", p)
    if a.example != "cuda_graph" and captured != 0:
        fail(f"{what}: {captured} launches captured, but the program captures nothing", p)
    if launches == 0 or launches + own != ran:
        fail(f"{what}: grape counted {launches} launches (+ {captured} captured x "
             f"{REPLAYS.get(a.example, 0)} replays = {launches + own}), the sim ran {ran} kernels", p)
    return launches, ran


def case_off(a, run):
    p0, _, sims = run(["--mode", "off"], env={"SIMCU_REPORT": os.path.join(run.d, "sim1.%p.json")})
    off = sum(s.get("kernels_executed", 0) for s in sims)
    p, reps, _ = run(["--mode", "observe"])
    launches, ran = check_counts(a, p, reps, "observe")
    if off != ran:
        fail(f"the sim ran {off} kernels with GRAPE_MODE=off, {ran} in observe mode", p0)
    if total(reps, "graph_hits") or total(reps, "graphs_built"):
        fail("observe mode built or replayed graphs", p)
    print(f"off: {off} kernels; observe: {launches} launches = {ran} kernels")


def case_graph(a, run):
    trace = os.path.join(run.d, "t.%p.grape")
    p, reps, _ = run(["--mode", "graph", "--trace", trace, "--predict-gpu", "H100"])
    launches, ran = check_counts(a, p, reps, "graph mode")
    busy = max(reps, key=lambda r: r.get("launches") or 0)
    hits = busy["graph_hits"]
    if a.example == "train_mlp" and hits == 0:
        fail("the training run replayed nothing by graph mode's default rule", p)
    sim_graphs = sum(k["graph_calls"] for k in busy["device_times"]["kernels"])
    own = busy["launches_captured"] * REPLAYS.get(a.example, 0)
    if hits and sim_graphs <= own:
        fail(f"{hits} graph hits, but the sim ran no kernel of grape's graphs", p)
    pred = busy.get("predicted")
    if not pred or not pred.get("total_eager_ms") or not pred.get("total_graph_ms"):
        fail(f"no predicted totals in the report: {pred}", p)
    if "grape: predicted on NVIDIA H100" not in p.stderr:
        fail("the summary has no predicted line", p)
    traces = glob.glob(trace.replace("%p", "*"))
    if len(traces) != 1:
        fail(f"want one trace (the process that ran CUDA work), got {traces}", p)
    q = subprocess.run([a.grape, "inspect", "--json", traces[0]], capture_output=True, text=True,
                       timeout=60)
    if q.returncode != 0:
        fail("grape inspect --json", q)
    paths = len(json.loads(q.stdout)["paths"])
    if paths != busy["paths"]:
        fail(f"the trace has {paths} paths, the report {busy['paths']}", q)
    q = subprocess.run([a.grape, "replay", traces[0], "--device", "sim", "--sim-kernels", "timed",
                        "--iters", "2"], capture_output=True, text=True, timeout=60)
    if q.returncode != 0 or f"replayed {paths} of {paths} paths" not in q.stderr:
        fail(f"grape replay --sim-kernels timed of the trace ({paths} paths)", q)
    print(f"graph: {launches} launches = {ran} kernels, {hits} hits, {paths} paths replayed, "
          f"predicted {pred['total_eager_ms']:.3f} ms eager / {pred['total_graph_ms']:.3f} ms graphs")


def case_forced(a, run):
    p, reps, _ = run(["--mode", "graph"], env={"GRAPE_COSTS": "build=0,build_node=0"})
    launches, ran = check_counts(a, p, reps, "graph mode, builds forced")
    hits, built = total(reps, "graph_hits"), total(reps, "graphs_built")
    if hits == 0 or built == 0:
        fail(f"builds forced: {built} graphs built, {hits} hits", p)
    print(f"forced: {launches} launches = {ran} kernels, {built} graphs built, {hits} hits "
          f"of {total(reps, 'regions')} regions")


def case_gain(a, run):
    if a.example != "decode":
        fail("the gain case is decode's")
    e = run_env({"SIMCU_HOST_NS": "7000", "SIMCU_TIME_ONLY": "1"})
    cmd = ([a.grape, "run", "--compare", "--device", "sim", "--sim-kernels", "timed", "--",
            a.python, "-W", "ignore", os.path.join(a.source, "examples", "python", "decode.py"),
            "--max-steps", "200", "--min-len", "150"])
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=run.d)
    print(f"--compare, long run: {time.time() - t0:.1f} s")
    if p.returncode != 0 or DONE["decode"] not in p.stdout:
        fail("decode.py's long run under grape run --compare", p)
    m = re.search(r"effect \(--compare\): ([\d.]+) ms with GRAPE_MODE=off, ([\d.]+) ms with "
                  r"GRAPE_MODE=graph", p.stderr)
    if m is None:
        fail("no 'graph mode's effect' line in the summary", p)
    off, graph = float(m.group(1)), float(m.group(2))
    if graph > 0.98 * off:
        fail(f"graph mode took {graph:.3f} ms against {off:.3f} ms with GRAPE_MODE=off "
             f"({graph / off:.3f}x): want at least 2% less", p)
    print(f"gain: {off:.3f} ms off, {graph:.3f} ms in graph mode ({graph / off:.3f}x)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("example", choices=sorted(ARGS))
    ap.add_argument("case", choices=["off", "graph", "forced", "gain"])
    a = parse_torch_args(ap)
    if a is None:
        return 77
    with tempfile.TemporaryDirectory() as d:
        globals()["case_" + a.case](a, Run(a, d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
