#!/usr/bin/env python3
"""Traces end to end on the simulated device: each example traced under the
shim (GRAPE_TRACE), summarised by `grape inspect`, replayed by `grape replay`
(the sim's kernels_executed must match), timed into a CSV that `grape predict
--csv` and `grape train` accept, exported by `grape export --chrome`; plus
ranks, damaged files, missing kernel bodies and a trace that cannot be written;
and the documented pipeline run as a user types it, its timeline checked as a
viewer draws it (case pipeline).

usage: test_trace.py CASE --grape GRAPE --preload PRELOAD --simdir DIR --examples DIR"""
import argparse
import glob
import json
import os
import re
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_viewer  # noqa: E402

# Launch counts the examples document (examples/README.md) at their default --iters.
DOCUMENTED = {
    "beam": {"regions": 85, "with": {"penalize": 10, "score": 85}},
    "dynrnn": {"regions": 184, "with": {"step_dense": 97, "step_sparse": 87, "renorm": 77}},
    "mlp_train": {"regions": 31, "with": {"clip": 5}},
}


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    sys.exit("FAIL: " + msg)


def sanitizer_preload(a):
    return ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))


def env(a, leaks=False, **extra):
    e = dict(os.environ)
    e.pop("GRAPE_TRACE", None)
    # exitcode: a sanitizer report must not look like grape's own exit status 1.
    e["ASAN_OPTIONS"] = "detect_leaks=%d:exitcode=99" % (1 if leaks else 0)
    e["UBSAN_OPTIONS"] = "halt_on_error=1:exitcode=99"
    e["SIMCU_REPORT"] = ""
    e["GRAPE_SIM_DIR"] = a.simdir
    e.update(extra)
    return e


def grape(a, args, leaks=False, timeout=300, **extra):
    e = env(a, leaks, **extra)
    san = sanitizer_preload(a)
    if san and args and args[0] == "run":
        e["LD_PRELOAD"] = san
    p = subprocess.run([a.grape] + args, capture_output=True, text=True, timeout=timeout, env=e)
    if "Sanitizer" in p.stderr or "runtime error" in p.stderr:
        fail("sanitizer report from grape " + " ".join(args), p)
    return p


def need_examples(a, name="beam"):
    if not os.path.exists(os.path.join(a.examples, name)):
        print("skipped: examples not built (no nvcc)")
        sys.exit(77)


def trace_example(a, tmp, prog, pattern="t.%p.grape", **extra):
    """Runs prog under grape run with GRAPE_TRACE; returns (trace path, report)."""
    report = os.path.join(tmp, "report.json")
    p = grape(a, ["run", "--device", "sim", "--report", report, "--", prog],
              GRAPE_TRACE=os.path.join(tmp, pattern), **extra)
    if p.returncode != 0:
        fail(f"{prog} under grape run", p)
    traces = sorted(glob.glob(os.path.join(tmp, "*.grape")))
    if len(traces) != 1:
        fail(f"expected one trace in {tmp}, found {traces}", p)
    return traces[0], json.load(open(report))


def inspect(a, trace):
    p = grape(a, ["inspect", "--json", trace], leaks=True)
    if p.returncode != 0:
        fail("grape inspect --json", p)
    return json.loads(p.stdout)


def sim_report(a, tmp, args, **extra):
    rep = os.path.join(tmp, "simcu.json")
    if os.path.exists(rep):
        os.unlink(rep)
    p = grape(a, args, SIMCU_REPORT=rep, **extra)
    return p, (json.load(open(rep)) if os.path.exists(rep) else None)


def kernels_of(path):
    return sum(1 for op in path["ops"] if op["kind"] == "kernel")


def case_example(a):
    need_examples(a, a.name)
    prog = os.path.join(a.examples, a.name)
    with tempfile.TemporaryDirectory() as tmp:
        trace, report = trace_example(a, tmp, prog)
        t = inspect(a, trace)
        doc = DOCUMENTED[a.name]
        counts = sum(p["count"] for p in t["paths"])
        if not (counts == t["regions"] == report["regions"] == doc["regions"]):
            fail(f"path counts sum to {counts}; trace regions {t['regions']}, report "
                 f"{report['regions']}, documented {doc['regions']}")
        if len(t["paths"]) != report["paths"] or t["paths_omitted"] != 0:
            fail(f"{len(t['paths'])} paths in the trace, {report['paths']} in the report")
        for kernel, want in doc["with"].items():
            got = sum(p["count"] for p in t["paths"] if any(o.get("name") == kernel for o in p["ops"]))
            if got != want:
                fail(f"paths with {kernel} occur {got} times, documented {want}")
        for p in t["paths"]:
            for o in p["ops"]:
                if o["kind"] == "kernel" and (o["kernel"] is None or o["pointers"] < 1):
                    fail(f"kernel op without function or pointer words: {o}")
        if a.name == "beam":
            # Each step's copy of its result into pinned memory is an op of the path.
            shapes = {tuple(o["name"] if o["kind"] == "kernel" else
                            o["kind"] + (" to host" if o.get("to_host") else "") for o in p["ops"]): p["count"]
                      for p in t["paths"]}
            want = {("score", "topk", "reorder", "memcpy to host"): 75,
                    ("score", "penalize", "topk", "reorder", "memcpy to host"): 10}
            if shapes != want:
                fail(f"beam's paths {shapes}, documented {want}")
        # The text summary too.
        p = grape(a, ["inspect", trace])
        if p.returncode != 0 or f"counts sum to {counts}" not in p.stdout:
            fail("grape inspect text summary", p)

        # Replay every path twice: the sim runs exactly the recorded kernels.
        per_round = sum(kernels_of(p) for p in t["paths"])
        p, rep = sim_report(a, tmp, ["replay", trace, "--all", "--iters", "2", "--device", "sim"])
        if p.returncode != 0 or rep is None:
            fail("grape replay --all", p)
        if rep["kernels_executed"] != 2 * per_round or rep["graph_launches"] != 2 * len(t["paths"]):
            fail(f"kernels_executed {rep['kernels_executed']} (want {2 * per_round}), graph "
                 f"launches {rep['graph_launches']} (want {2 * len(t['paths'])})", p)

        # One path by its fingerprint; an unknown one is refused.
        first = t["paths"][0]
        p, rep = sim_report(a, tmp, ["replay", trace, "--path", first["fingerprint"], "--iters",
                                     "3", "--device", "sim"])
        if p.returncode != 0 or rep is None or rep["kernels_executed"] != 3 * kernels_of(first):
            fail(f"grape replay --path {first['fingerprint']}", p)
        p = grape(a, ["replay", trace, "--path", "00000000000000ff", "--device", "sim"])
        if p.returncode != 1 or "00000000000000ff is not in the trace" not in p.stderr:
            fail("grape replay --path of a path the trace does not hold", p)

        # Timed: warmup 1 + 2 iterations, each launching the plain and the
        # event-instrumented graph.
        csv = os.path.join(tmp, "timings.csv")
        timed = os.path.join(tmp, "timed.grape.out")
        p, rep = sim_report(a, tmp, ["replay", trace, "--iters", "2", "--time", "-o", csv,
                                     "--save", timed, "--device", "sim"])
        if p.returncode != 0 or rep is None or rep["kernels_executed"] != 2 * 3 * per_round:
            fail(f"grape replay --time: kernels {rep and rep['kernels_executed']}, want "
                 f"{6 * per_round}", p)
        rows = open(csv).read().splitlines()
        if len(rows) - 1 != per_round or "time_ms" not in rows[0]:
            fail(f"{len(rows) - 1} CSV rows, want one per kernel op ({per_round})")
        p = grape(a, ["predict", "--csv", csv])
        if p.returncode != 0 or not re.search(rf"\b{per_round} rows predicted( \(.*\))?, 0 skipped",
                                              p.stderr):
            fail("grape predict --csv on the timings", p)
        model = os.path.join(tmp, "model.txt")
        # The sim's rows are marked simulated: training takes them only when asked.
        p = grape(a, ["train", "-o", model, csv])
        if p.returncode != 1 or "--allow-simulated" not in p.stderr:
            fail("grape train took the simulated device's timings without --allow-simulated", p)
        p = grape(a, ["train", "--allow-simulated", "-o", model, csv])
        if p.returncode != 0 or not os.path.exists(model) or "%d rows" % per_round not in p.stderr:
            fail("grape train on the timings", p)

        # Timeline from the measured times: one slice per op, one track per path.
        tj = inspect(a, timed)
        if any("times" not in p for p in tj["paths"]):
            fail("--save wrote paths without times")
        out = os.path.join(tmp, "timeline.json")
        p = grape(a, ["export", "--chrome", "--by-path", timed, "-o", out], leaks=True)
        if p.returncode != 0:
            fail("grape export --chrome", p)
        check = subprocess.run([sys.executable, "-m", "json.tool", out], capture_output=True,
                               text=True)
        if check.returncode != 0:
            fail("python3 -m json.tool rejects the timeline", check)
        ev = json.load(open(out))["traceEvents"]
        slices = check_timeline(out, t["pid"])
        tracks = [e for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
        if len(tracks) != len(t["paths"]) or len(slices) != sum(len(p["ops"]) for p in t["paths"]):
            fail(f"{len(tracks)} tracks and {len(slices)} slices for {len(t['paths'])} paths")
        for i, path in enumerate(t["paths"]):
            names = [e["name"] for e in slices if e["tid"] == i + 1]
            want = [o.get("name", o["kind"]) for o in path["ops"]]
            if names != want:
                fail(f"track {i + 1} holds {names}, path {path['fingerprint']} has {want}")
            ms = tj["paths"][i]["times"]["op_ms"]
            durs = [e["dur"] for e in slices if e["tid"] == i + 1]
            # Whole nanoseconds, one fewer where a viewer's sum would pass the next start.
            if any(abs(d - m * 1000) > 0.0015 + 1e-9 * m * 1000 for d, m in zip(durs, ms)):
                fail(f"track {i + 1}: slice durations {durs} are not the measured {ms}")
        # Predicted instead: kernels only.
        p = grape(a, ["export", "--chrome", trace, "--predict-gpu", "H100", "-o", out])
        ev = json.load(open(out))["traceEvents"]
        if p.returncode != 0 or sum(1 for e in ev if e["ph"] == "X") != per_round:
            fail("grape export --predict-gpu H100", p)
        # The tracks it says are the tracks it names: a path without a kernel
        # has no predicted slice, so no track.
        named = sum(1 for e in ev if e["ph"] == "M" and e["name"] == "thread_name")
        drawn = len({e["tid"] for e in ev if e["ph"] == "X"})
        if named != drawn or f"on {drawn} tracks" not in p.stderr:
            fail(f"--predict-gpu: {named} tracks named, {drawn} drawn", p)
        p = grape(a, ["export", "--chrome", "--by-path", trace, "-o", out])
        if p.returncode != 1 or "no measured times" not in p.stderr:
            fail("export of a trace without times must say so", p)


def catapult_bounds(parent, child, unit):
    """Catapult's TimedEvent.bounds: whether its trace viewer nests child in
    parent. Times are compared rounded to the file's displayTimeUnit: whole
    microseconds for "ms" (its default), whole nanoseconds for "ns"."""
    scale = 1000 if unit == "ms" else 1000000
    r = lambda us: round(us / 1000 * scale)
    return not r(child["ts"]) < r(parent["ts"]) and \
        not r(parent["ts"] + parent["dur"]) < r(child["ts"] + child["dur"])


def check_timeline(path, pid):
    """A timeline a viewer draws as grape means it: one process, named without
    the pid (viewers print it after the name) and keyed by the traced pid;
    on every track, slices in order and disjoint, compared as a viewer does,
    in doubles: a slice that starts before the previous one ends is drawn
    nested inside it; and none that Catapult's viewer would nest in the
    previous one at the file's display precision. Returns the slices."""
    doc = json.load(open(path))
    ev = doc["traceEvents"]
    unit = doc.get("displayTimeUnit", "ms")
    procs = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    if len(procs) != 1 or procs[0]["pid"] != pid or "pid" in procs[0]["args"]["name"]:
        fail(f"process label {procs}: want one, keyed by pid {pid}, no pid in its name")
    slices = [e for e in ev if e["ph"] == "X"]
    tracks = {}
    for e in slices:
        if e["pid"] != pid:
            fail(f"slice of another process: {e}")
        tracks.setdefault(e["tid"], []).append(e)
    overlaps = []
    for tid, sl in tracks.items():
        for prev, cur in zip(sl, sl[1:]):
            if cur["dur"] < 0 or cur["ts"] < prev["ts"] + prev["dur"] or \
                    catapult_bounds(prev, cur, unit):
                overlaps.append((tid, prev, cur))
    if overlaps:
        fail(f"{len(overlaps)} of {len(slices)} slices start before the previous one on their "
             f"track ends, go backwards, or nest in it at {unit} precision; first: {overlaps[0]}")
    return slices


def case_pipeline(a):
    """The documented pipeline (README, docs/trace-format.md) on an example, as
    a user types it: traced under grape run, every path replayed and timed,
    the timed trace exported and checked as a viewer would draw it."""
    need_examples(a, a.name)
    prog = os.path.join(a.examples, a.name)
    with tempfile.TemporaryDirectory() as tmp:
        def run(args, **extra):
            e = env(a, **extra)
            if sanitizer_preload(a) and args[0] == "run":
                e["LD_PRELOAD"] = sanitizer_preload(a)
            p = subprocess.run([a.grape] + args, capture_output=True, text=True, timeout=600,
                               env=e, cwd=tmp)
            if p.returncode != 0 or "Sanitizer" in p.stderr or "runtime error" in p.stderr:
                fail("grape " + " ".join(args), p)
            return p
        run(["run", "--", prog], GRAPE_TRACE="run.%p.grape")
        traces = glob.glob(os.path.join(tmp, "run.*.grape"))
        if len(traces) != 1:
            fail(f"one trace expected, found {traces}")
        run(["replay"] + traces + ["--all", "--time", "-o", "timings.csv", "--save", "timed.grape"])
        run(["export", "--chrome", "--by-path", "timed.grape", "-o", "timeline.json"])
        t = inspect(a, os.path.join(tmp, "timed.grape"))
        kernels = sum(kernels_of(p) for p in t["paths"])
        rows = open(os.path.join(tmp, "timings.csv")).read().splitlines()
        if len(rows) - 1 != kernels:
            fail(f"{len(rows) - 1} timing rows for {kernels} kernel ops")
        slices = check_timeline(os.path.join(tmp, "timeline.json"), t["pid"])
        if len(slices) != sum(len(p["ops"]) for p in t["paths"]):
            fail(f"{len(slices)} slices for {sum(len(p['ops']) for p in t['paths'])} ops")
        print(f"{a.name}: {len(t['paths'])} paths replayed, {len(slices)} slices, none overlapping")


def case_viewer(a):
    """The export loaded in a real trace viewer: Catapult's (trace2html, the
    viewer of chrome://tracing) in headless Chromium, which must import every
    slice and nest none, and name the process once with its pid. Needs
    chromium and Catapult (what `scripts/setup-deps --viewer` installs, or a
    checkout in CATAPULT_DIR); skips otherwise, saying so. check_viewer.py
    runs it."""
    catapult, chromium = check_viewer.viewer_tools()
    need_examples(a, a.name)
    with tempfile.TemporaryDirectory() as tmp:
        trace, _ = trace_example(a, tmp, os.path.join(a.examples, a.name))
        timed = os.path.join(tmp, "timed.grape.out")
        p = grape(a, ["replay", trace, "--all", "--time", "--save", timed, "--device", "sim"])
        if p.returncode != 0:
            fail("grape replay --time --save", p)
        out = os.path.join(tmp, "timeline.json")
        p = grape(a, ["export", "--chrome", "--by-path", timed, "-o", out])
        if p.returncode != 0:
            fail("grape export --chrome", p)
        got = check_viewer.in_viewer(catapult, chromium, out, tmp)
        want = sum(len(x["ops"]) for x in inspect(a, timed)["paths"])
        if got.get("slices") != want or got.get("nested") != 0:
            fail(f"Catapult's viewer: {got}; want {want} slices, none nested")
        if got.get("errors") or len(got["names"]) != 1 or got["names"][0].count("pid") != 1:
            fail(f"Catapult's viewer names the process {got.get('names')}: {got.get('errors')}")
        print(f"Catapult's viewer: {got['slices']} slices, none nested, process "
              f"{got['names'][0]}")


def case_ranks(a):
    need_examples(a)
    prog = os.path.join(a.examples, "beam")
    with tempfile.TemporaryDirectory() as tmp:
        for rank in ("0", "1"):
            grape(a, ["run", "--device", "sim", "--", prog],
                  GRAPE_TRACE=os.path.join(tmp, "job.%r.grape"), RANK=rank, LOCAL_RANK="7")
        files = sorted(os.listdir(tmp))
        if files != ["job.0.grape", "job.1.grape"]:
            fail(f"two ranks wrote {files}")
        for r in ("0", "1"):
            t = inspect(a, os.path.join(tmp, f"job.{r}.grape"))
            if t["rank"] != int(r):
                fail(f"job.{r}.grape says rank {t['rank']}")
        grape(a, ["run", "--device", "sim", "--", prog],
              GRAPE_TRACE=os.path.join(tmp, "local.%r.grape"), LOCAL_RANK="3", RANK="")
        if inspect(a, os.path.join(tmp, "local.3.grape"))["rank"] != 3:
            fail("LOCAL_RANK is the fallback for %r")


def refused(a, path, what):
    p = grape(a, ["inspect", path], leaks=True)
    if p.returncode != 1 or "error" not in p.stderr or "byte" not in p.stderr:
        fail(f"{what}: want exit 1 and a message naming the byte offset", p)
    return p


def case_damage(a):
    need_examples(a)
    with tempfile.TemporaryDirectory() as tmp:
        trace, _ = trace_example(a, tmp, os.path.join(a.examples, "beam"))
        data = open(trace, "rb").read()
        bad = os.path.join(tmp, "bad.bin")
        rng = random.Random(5)
        cuts = sorted(set(list(range(0, len(data), max(1, len(data) // 60))) +
                          [len(data) - 1, len(data) - 24, 16, 17]))
        for n in cuts:
            open(bad, "wb").write(data[:n])
            refused(a, bad, f"cut to {n} of {len(data)} bytes")
        for trial in range(60):
            b = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            if bytes(b) == data:
                continue
            open(bad, "wb").write(b)
            refused(a, bad, f"random flips, trial {trial}")
            for cmd in (["replay", bad, "--device", "sim"], ["export", "--chrome", bad,
                                                              "--predict-gpu", "H100"]):
                p = grape(a, cmd)
                if p.returncode != 1 or "byte" not in p.stderr:
                    fail(f"grape {cmd[0]} of a damaged trace", p)
        b = bytearray(data)
        b[8] += 1   # format version
        open(bad, "wb").write(b)
        p = refused(a, bad, "newer format")
        if "newer than this grape reads" not in p.stderr:
            fail("a newer format version must be refused as such", p)


def case_bodies(a):
    need_examples(a)
    with tempfile.TemporaryDirectory() as tmp:
        # The program alone in a folder: no beam_sim.so beside it.
        prog = os.path.join(tmp, "beam")
        shutil.copy(os.path.join(a.examples, "beam"), prog)
        trace, _ = trace_example(a, tmp, prog)
        p = grape(a, ["replay", trace, "--device", "sim"])
        if p.returncode != 1 or "no CPU body for kernel" not in p.stderr or \
                "beam_sim.so (missing)" not in p.stderr:
            fail("replay without the bodies must name what is missing", p)
        p = grape(a, ["replay", trace, "--device", "sim", "--bodies",
                      os.path.join(a.examples, "beam_sim.so")])
        if p.returncode != 0:
            fail("replay with --bodies", p)


def case_write_fail(a):
    need_examples(a)
    prog = os.path.join(a.examples, "beam")
    plain = grape(a, ["run", "--device", "sim", "--", prog])
    # Missing folders are made: a name that cannot be written is one below a file.
    with tempfile.TemporaryDirectory() as tmp:
        blocker = os.path.join(tmp, "a-file")
        open(blocker, "w").close()
        p = grape(a, ["run", "--device", "sim", "--", prog], GRAPE_TRACE=f"{blocker}/t.grape")
        if p.returncode != 0 or p.stdout != plain.stdout:
            fail("a trace that cannot be written must not disturb the program", p)
        if p.stderr.count("no trace written") != 1 or f"{blocker}/t.grape" not in p.stderr:
            fail("the failed write must be reported once, naming the file", p)
    # A process that ran no CUDA work leaves no (empty) trace behind.
    with tempfile.TemporaryDirectory() as tmp:
        p = grape(a, ["run", "--device", "sim", "--", "/bin/true"],
                  GRAPE_TRACE=os.path.join(tmp, "t.%p.grape"))
        if p.returncode != 0 or os.listdir(tmp):
            fail(f"a process without CUDA work wrote {os.listdir(tmp)}", p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--name", default="beam")
    ap.add_argument("--grape", required=True)
    ap.add_argument("--preload", default="")
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--examples", required=True)
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()
