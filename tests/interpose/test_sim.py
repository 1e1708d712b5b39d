#!/usr/bin/env python3
"""Runs nvcc-built programs on the simulated device (sim/) under
LD_PRELOAD=libgrape.so and checks the exit report against the program's own
account and the sim's SIMCU_REPORT (kernels_executed).

usage: test_sim.py CASE --preload LIBS --simdir DIR --prog PROGRAM [ARGS...]
Exits 77 (skipped) when PROGRAM is "-" (built without nvcc)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg, p=None):
    if p is not None:
        msg += f"\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-4000:]}"
    sys.exit("FAIL: " + msg)


def run(a, args, mode=None, preload=True, extra_env=None):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = a.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
        env["SIMCU_REPORT"] = os.path.join(d, "sim.json")
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        # Sanitizer runtimes (everything in --preload but libgrape.so) stay
        # preloaded for the run without the shim: the sim is instrumented too.
        san = ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))
        if san:
            env["LD_PRELOAD"] = san
        if preload:
            env["LD_PRELOAD"] = a.preload
            env["GRAPE_REPORT"] = os.path.join(d, "grape.json")
            if mode:
                env["GRAPE_MODE"] = mode
        env.update(extra_env or {})
        p = subprocess.run([a.prog] + args, env=env, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            fail(f"{a.prog} {args} exited {p.returncode}", p)
        rep = sim = None
        if preload:
            with open(os.path.join(d, "grape.json")) as f:
                rep = json.load(f)
            if sum(rep["launches_by_route"].values()) != rep["launches"]:
                fail(f"routes do not add up: {rep}", p)
        with open(os.path.join(d, "sim.json")) as f:
            sim = json.load(f)
        return p, rep, sim


def case_routes(a):
    p, rep, sim = run(a, ["all", "3"])
    want = {m[0]: int(m[1]) for m in re.findall(r"^route (\w+) (\d+)$", p.stdout, re.M)}
    if rep["launches_by_route"] != want:
        fail(f"routes {rep['launches_by_route']} != program's {want}", p)
    if rep["launches"] != sim["kernels_executed"]:
        fail(f"launches {rep['launches']} != kernels_executed {sim['kernels_executed']}", p)


def case_params(a):
    p, rep, sim = run(a, ["params"], extra_env={"GRAPE_LOG": "debug"})
    want = re.findall(r"^params (\S+) ([0-9a-f]*)$", p.stdout, re.M)
    got = re.findall(r"launch (\S+) route=\S+ .* params=([0-9a-f]*)$", p.stderr, re.M)
    if len(got) != len(want) or len(want) < 9:
        fail(f"captured {len(got)} launches, program made {len(want)}", p)
    for (gn, gh), (wn, wh) in zip(got, want):
        # The host mirror may carry tail padding past the parameter block.
        if gn != wn or not (wh.startswith(gh) and set(wh[len(gh):]) <= {"0"}) or len(gh) < len(wh.rstrip("0")) - 1:
            fail(f"{gn}: captured {gh}\n{wn}: launched {wh}", p)
    if rep["launches_without_layout"] != 0 or rep["launches"] != sim["kernels_executed"]:
        fail(f"report {rep}", p)


def case_checksum(a):
    base, _, sim0 = run(a, ["checksum"], preload=False)
    for mode in ("off", "observe"):
        p, rep, sim = run(a, ["checksum"], mode=mode)
        if p.stdout != base.stdout:
            fail(f"output differs in {mode} mode:\n{p.stdout}\nvs\n{base.stdout}", p)
        if mode == "observe" and rep["launches"] != sim["kernels_executed"]:
            fail(f"launches {rep['launches']} != kernels_executed {sim['kernels_executed']}", p)
        if mode == "observe" and (rep["regions"] == 0 or rep["paths"] == 0):
            fail(f"no regions recorded: {rep}", p)


def case_example(a):
    """An example of examples/: identical output without the shim, in off and in
    observe mode; launches equal the kernels the sim ran; the routes the example
    uses are seen; dynrnn's regions and ops follow its documented structure."""
    name = os.path.basename(a.prog)
    args = ["--iters", "2"] if name == "dynrnn" else []
    base, _, sim0 = run(a, args, preload=False)
    for mode in ("off", "observe"):
        p, rep, sim = run(a, args, mode=mode)
        if p.stdout != base.stdout or "checksum" not in p.stdout:
            fail(f"{name}: output differs in {mode} mode:\n{p.stdout}\nvs\n{base.stdout}", p)
        if sim["kernels_executed"] != sim0["kernels_executed"]:
            fail(f"{name}: the sim ran {sim['kernels_executed']} kernels, {sim0['kernels_executed']} without the shim", p)
    r = rep
    if r["launches"] != sim["kernels_executed"]:
        fail(f"{name}: launches {r['launches']} != kernels_executed {sim['kernels_executed']}", p)
    routes = r["launches_by_route"]
    want = {"dynrnn": ["runtime"], "beam": ["runtime", "entrypoint"], "mlp_train": ["runtime", "dlsym"],
            "decode": ["runtime"]}
    for route in want.get(name, []):
        if routes[route] == 0:
            fail(f"{name}: no launches seen through {route}: {routes}", p)
    if name == "decode":
        # 100 kernels per step, all through <<<>>>; each step ends at the copy
        # of its sampled tokens into page-locked memory, an op of the region
        # (held in graph mode), so the frequent paths are whole steps and
        # their copy; a batch ends with one more such copy (its KV cache).
        m = re.search(r"(\d+) steps, (\d+) kernels per step", p.stderr)
        steps, per_step = map(int, m.groups())
        if per_step != 100 or r["launches"] != steps * per_step or r["regions"] < steps:
            fail(f"decode: {r['launches']} launches, {r['regions']} regions, {steps} steps of {per_step}", p)
        for t in r["top_paths"]:
            if t["kernels"] == ["memcpy"]:
                continue
            if t["ops"] != per_step + 1 or t["kernels"][:3] != ["embed", "rmsnorm", "gemm"]:
                fail(f"decode: path {t} is not one step", p)
        decode_dynamics(a)
    if name == "dynrnn":
        # One region per step (it ends at the wait for the copy of the step's
        # stats into page-locked host memory, the region's last op); its ops:
        # [memset on an iteration's first step] [renorm] (step_dense |
        # compact, D2D copy, step_sparse) stats, copy to the host.
        m = re.search(r"(\d+) iterations, (\d+) steps \((\d+) dense, (\d+) sparse, (\d+) renorm\)", p.stderr)
        iters, steps, dense, sparse, renorm = map(int, m.groups())
        if r["regions"] != steps:
            fail(f"dynrnn: {r['regions']} regions for {steps} steps", p)
        if r["ops"] != 2 * dense + 4 * sparse + renorm + iters + steps:
            fail(f"dynrnn: {r['ops']} ops", p)
        top = r["top_paths"][0]
        if top["kernels"] != ["step_dense", "stats", "memcpy"]:
            fail(f"dynrnn: the most frequent path should be dense: {r['top_paths']}", p)
        shape = re.compile(r"(memset )?(renorm )?(step_dense|compact memcpy step_sparse) stats memcpy")
        for t in r["top_paths"]:
            if not shape.fullmatch(" ".join(t["kernels"])) or len(t["kernels"]) != t["ops"]:
                fail(f"dynrnn: path {t} is not one of the documented ones", p)


DECODE_LAYER = ["rmsnorm", "gemm", "gemm", "gemm", "rope", "kv_append", "attn_scores",
                "attn_softmax", "attn_pv", "gemm", "add", "rmsnorm", "gemm", "act_mul", "gemm", "add"]
DECODE_STEP = ["embed"] + 6 * DECODE_LAYER + ["rmsnorm", "gemm", "sample"]


def decode_dynamics(a):
    """decode's steps as examples/README.md documents them, from the launches
    the shim logs: the same 100 kernels in order; attn_scores's block is the
    position + 1; and from one step to the next, unless the program reports
    that its buffer addresses moved, only the 6 attn_scores launches differ."""
    p, r, _ = run(a, ["--iters", "3"], mode="observe", extra_env={"GRAPE_LOG": "debug"})
    launches = re.findall(r"^grape: launch _Z\d+(\w+?)P\S* route=\S+ grid=(\S+) block=(\S+) "
                          r"shmem=(\d+) \S+ \S+ params=([0-9a-f]*)$", p.stderr, re.M)
    steps = [launches[i:i + len(DECODE_STEP)] for i in range(0, len(launches), len(DECODE_STEP))]
    m = re.search(r"(\d+) steps, .* addresses changed on (\d+) steps", p.stderr)
    nsteps, moved = map(int, m.groups())
    if len(launches) != r["launches"] or len(steps) != nsteps:
        fail(f"decode: {len(launches)} launches logged in {len(steps)} steps, {nsteps} steps run", p)
    scores = [i for i, k in enumerate(DECODE_STEP) if k == "attn_scores"]
    pos, same, batches = 0, 0, 0
    for i, st in enumerate(steps):
        if [k[0] for k in st] != DECODE_STEP:
            fail(f"decode: step {i} launched {[k[0] for k in st]}", p)
        blocks = {st[j][2] for j in scores}
        if blocks == {"1,1,1"}:   # a batch starts at position 0
            pos = 0
            batches += 1
        if blocks != {f"{pos + 1},1,1"}:
            fail(f"decode: step {i}: attn_scores blocks {blocks} at position {pos}", p)
        pos += 1
        if i > 0:
            diff = [j for j in range(len(st)) if st[j][1:] != steps[i - 1][j][1:]]
            same += diff == scores
    if batches != 3:
        fail(f"decode: {batches} batches started at position 0 of 3", p)
    if same != nsteps - 1 - moved:
        fail(f"decode: {same} of {nsteps - 1} step changes touch only attn_scores; "
             f"the program moved buffers on {moved}", p)


def case_graph(a):
    """dynrnn --graph: the program's own stream captures pass through. Launches
    into a capture are not counted as launches (launches_captured), so the
    report's launches are the kernels the sim ran outside graphs."""
    args = ["--iters", "2", "--graph"]
    base, _, _ = run(a, ["--iters", "2"], preload=False)
    p, r, sim = run(a, args)
    if p.stdout != base.stdout:
        fail("--graph output differs under the shim", p)
    m = re.search(r"(\d+) dense", p.stderr)
    dense = int(m.group(1))
    # Each captured launch runs once, as a node of the program's graph; grape's
    # own replays run exactly the launches it held, which count as launches.
    if r["launches"] + r["launches_captured"] != sim["kernels_executed"]:
        fail(f"launches {r['launches']} + captured {r['launches_captured']} != "
             f"kernels_executed {sim['kernels_executed']}", p)
    if r["launches_captured"] != 2 * dense or r["api_calls"].get("cudaStreamBeginCapture") != dense:
        fail(f"captured {r['launches_captured']}, {dense} dense steps: {r['api_calls']}", p)


def case_predict(a):
    """GRAPE_PREDICT_GPU: dynrnn's report has positive predicted times, graph <=
    eager per path (up to a graph launch), each top path's times equal what the public predictor API
    (grape_predict_path, in the helper) gives for the kernels the report lists,
    the totals are the count-weighted sums over every path, and the totals'
    bounds are the whole run's (grape_run_combine), within the paths' bounds
    summed, never those sums. An unknown GPU:
    one warning naming the variable and the known GPUs, "predicted": null, and
    the program's output unchanged."""
    args = ["--iters", "2"]
    base, _, _ = run(a, args, preload=False)
    # H100: the transfer regime throughout; T4: a GPU of the training data,
    # where some kernels get the known regime.
    for gpu in ("H100", "T4"):
        predicted_matches_api(a, args, base, gpu)
    p, r, _ = run(a, args, extra_env={"GRAPE_PREDICT_GPU": "NoSuchGPU"})
    if p.stdout != base.stdout or r.get("predicted", 0) is not None:
        fail(f"unknown GPU: predicted {r.get('predicted', 'missing')}", p)
    warn = [l for l in p.stderr.splitlines() if "GRAPE_PREDICT_GPU" in l]
    if len(warn) != 1 or "NoSuchGPU" not in warn[0] or "NVIDIA H100 80GB HBM3" not in warn[0]:
        fail(f"unknown GPU warning: {warn}", p)


def predicted_matches_api(a, args, base, gpu):
    p, r, _ = run(a, args, extra_env={"GRAPE_PREDICT_GPU": gpu, "GRAPE_TOP_PATHS": "1000"})
    if p.stdout != base.stdout:
        fail("output differs with GRAPE_PREDICT_GPU", p)
    pr = r.get("predicted")
    if not pr or gpu not in pr["gpu"] or pr["model"] != "grape" or pr["level"] != 0.8:
        fail(f"no predicted section: {pr}", p)
    paths = pr["paths"]
    if len(paths) != r["paths"] or pr["paths_predicted"] != r["paths"] or len(r["top_paths"]) != len(paths):
        fail(f"{len(paths)} predicted paths, {r['paths']} paths", p)
    text = ""
    for t, q in zip(r["top_paths"], paths):
        if t["fingerprint"] != q["fingerprint"] or t["predicted_eager_ms"] != q["eager_ms"] or \
                t["predicted_graph_ms"] != q["graph_ms"]:
            fail(f"top path {t} vs predicted {q}", p)
        # Eager, host issue overlaps the kernels; a graph pays its launch
        # once: a short path of tiny kernels may predict no faster as a graph.
        if not 0 < q["graph_ms"] <= q["eager_ms"] + 0.005:
            fail(f"path times {q}", p)
        # Kernels only: memsets and copies are not modelled.
        nk = sum(1 for k in t["kernels"] if k not in ("memset", "memcpy"))
        if len(q["kernels"]) != nk or nk == 0:
            fail(f"path {t} lists {len(q['kernels'])} kernels", p)
        for k in q["kernels"]:
            if k["ms"] <= 0 or not k["name"] or k["regime"] not in ("known", "known-extrapolated", "transfer") or \
                    not k["lo_ms"] <= k["ms"] <= k["hi_ms"]:
                fail(f"kernel {k}", p)
            text += " ".join(map(str, k["grid"] + k["block"] + [k["smem"]])) + "\t" + k["name"] + "\n"
        text += f"end {q['count']}\n"
    h = subprocess.run([a.helper, gpu], input=text, capture_output=True, text=True, timeout=60)
    if h.returncode != 0:
        fail(f"helper failed: {h.stderr}")
    lines = h.stdout.splitlines()
    if not lines or not lines[-1].startswith("run "):
        fail(f"helper printed no run line: {lines[-1:]}")
    run_want = tuple(map(float, lines[-1].split()[1:]))
    want = [tuple(map(float, l.split())) for l in lines[:-1]]
    close = lambda x, y: abs(x - y) <= 1e-9 * max(abs(x), abs(y))
    fields = ("eager_ms", "graph_ms", "eager_lo_ms", "eager_hi_ms", "graph_lo_ms", "graph_hi_ms")
    for q, w in zip(paths, want):
        got = [float("inf") if q[f] is None else q[f] for f in fields]
        if not all(close(x, y) for x, y in zip(got, w)):
            fail(f"{gpu}: path {q['fingerprint']}: report {got}, API {w}", p)
        if not q["eager_lo_ms"] <= q["eager_ms"] <= q["eager_hi_ms"]:
            fail(f"{gpu}: path bounds {q}", p)
    for f in ("eager_ms", "graph_ms"):
        tot = sum(q["count"] * q[f] for q in paths)
        if not close(tot, pr["total_" + f]):
            fail(f"{gpu}: total_{f} {pr['total_' + f]}, want {tot}", p)
    # The run's bounds combine its kernels' errors (grape_run_combine): no
    # wider than the paths' bounds summed.
    for f, w in zip(fields, run_want):
        got = float("inf") if pr["total_" + f] is None else pr["total_" + f]
        if not close(got, w):
            fail(f"{gpu}: total_{f} {got}, run combined by the API {w}", p)
    if pr["total_eager_hi_ms"] > sum(q["count"] * q["eager_hi_ms"] for q in paths) * (1 + 1e-9) or \
            pr["total_eager_lo_ms"] < sum(q["count"] * q["eager_lo_ms"] for q in paths) * (1 - 1e-9):
        fail(f"{gpu}: run bounds wider than the paths' summed: {pr}", p)
    if not 0 < pr["total_graph_ms"] < pr["total_eager_ms"]:
        fail(f"{gpu}: totals {pr['total_eager_ms']}/{pr['total_graph_ms']}", p)
    return pr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--helper")
    a = ap.parse_args()
    if a.prog == "-":
        print("skipped: built without nvcc")
        sys.exit(77)
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()
