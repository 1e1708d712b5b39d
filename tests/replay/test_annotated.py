#!/usr/bin/env python3
"""NVTX ranges and capture ranges end to end on the simulated device, with a
program annotated through NVTX v3's header-only API and the profiler API
(annotated.c), run by `grape run` with the timeline on.

  nvtx      the ranges and the kernels inside them in the report, its text
            tables and CSV (--table nvtx, nvtx-kernels), and the Chrome export
            (ranges nested on the thread's NVTX row, marks, every call naming
            its innermost range), which check_timeline.py accepts
  nvtx_off  an NVTX_INJECTION64_PATH the user set is kept (here a library that
            does not exist: NVTX then stays a no-op and grape sees no range)
  profiler  GRAPE_CAPTURE=cudaProfilerApi (grape run --capture-range): only the
            kernels between cudaProfilerStart/Stop and cuProfilerStart/Stop are
            in the timeline and the kernel table; without it, all are

usage: test_annotated.py CASE --grape GRAPE --prog ANNOTATED --preload PRELOAD --simdir DIR"""
import argparse
import collections
import csv
import io
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_timeline  # noqa: E402
from grape_cli import fail, grape  # noqa: E402


def run(a, tmp, mode, flags=(), **extra):
    """The program under grape run with a timeline: (report, trace path, stderr)."""
    p = grape(a, ["run", "--device", "sim", "--stats", "--report", "r.json", "--trace", "t.grape"] +
              list(flags) + ["--", a.prog, mode], tmp, timeout=60, GRAPE_TIMELINE="1", **extra)
    if p.returncode != 0 or "ok" not in p.stdout:
        fail(f"annotated {mode} under grape run", p)
    with open(os.path.join(tmp, "r.json")) as f:
        return json.load(f), os.path.join(tmp, "t.grape"), p.stderr


def csv_rows(a, tmp, table):
    p = grape(a, ["report", "--csv", "--table", table, "r.json"], tmp, timeout=60)
    if p.returncode != 0:
        fail(f"grape report --csv --table {table}", p)
    return list(csv.DictReader(io.StringIO(p.stdout)))


def chrome(a, tmp, trace):
    p = grape(a, ["export", "--chrome", trace, "-o", "tl.json"], tmp, timeout=60)
    if p.returncode != 0:
        fail("grape export --chrome", p)
    with open(os.path.join(tmp, "tl.json")) as f:
        doc = json.load(f)
    try:
        return doc, check_timeline.check(doc)
    except check_timeline.Broken as e:
        fail(f"the Chrome export breaks a rule: {e}")


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got}, want {want}")


def stick_out(ev):
    step = next(e for e in ev if e.get("cat") == "nvtx" and e["name"] == "step")
    attn = next(e for e in ev if e.get("cat") == "nvtx" and e["name"] == "attn")
    attn["dur"] = step["ts"] + step["dur"] - attn["ts"] + 1   # ends after its parent


def stray_mark(ev):
    mark = next(e for e in ev if e["ph"] == "i")
    ev.append(dict(mark, tid=mark["tid"] + 777))


def case_nvtx(a, tmp):
    rep, trace, err = run(a, tmp, "nvtx")
    nv = rep.get("nvtx")
    if not nv:
        fail(f"the report has no NVTX ranges: {sorted(rep)}")
    ranges = {(r["name"], r["style"]): r["count"] for r in nv["ranges"]}
    expect("NVTX ranges in the report", ranges,
           {("step", "PushPop"): 3, ("attn", "PushPop"): 3, ("mlp", "PushPop"): 3, ("io", "StartEnd"): 1})
    for r in nv["ranges"]:
        if not 0 < r["min_ns"] <= r["max_ns"] <= r["ns"]:
            fail(f"range times out of order: {r}")
    # Each launch counts under every range open around it, as in nsys's
    # nvtx_kern_sum (step holds attn's and mlp's kernels); the one outside all,
    # nowhere. The timeline timed each eager launch, under the same ranges.
    kern = {(k["range"], k["kernel"]): k["calls"] for k in nv["kernels"]}
    expect("kernels by range in the report", kern,
           {("attn", "an_add"): 6, ("mlp", "an_twice"): 3, ("step", "an_twice"): 6,
            ("step", "an_add"): 6})
    timed = {(k["range"], k["kernel"]): k.get("timed", 0) for k in nv["kernels"]}
    expect("kernels timed by range in the report", timed, kern)
    for table in ("NVTX ranges (", "kernels by NVTX range"):
        if table not in err:
            fail(f"grape run --stats printed no '{table}' table:\n{err[-3000:]}")
    rows = {(r["range"], r["style"]): int(r["count"]) for r in csv_rows(a, tmp, "nvtx")}
    expect("grape report --csv --table nvtx", rows, ranges)
    rows = {(r["range"], r["kernel"]): int(r["calls"]) for r in csv_rows(a, tmp, "nvtx-kernels")}
    expect("grape report --csv --table nvtx-kernels", rows, kern)
    doc, got = chrome(a, tmp, trace)
    names = got["names"]
    nvtx_rows = [k for k, n in names.items() if n.endswith(": NVTX ranges")]
    if len(nvtx_rows) != 1:
        fail(f"want one thread's NVTX ranges row: {names}")
    on_row = collections.Counter(s["name"] for s in got["tracks"][nvtx_rows[0]])
    expect("ranges on the NVTX row", dict(on_row), {"step": 3, "attn": 3, "mlp": 3})
    se = [k for k, n in names.items() if n.endswith(": NVTX start/end ranges")]
    expect("start/end ranges", [s["name"] for k in se for s in got["tracks"][k]], ["io"])
    expect("marks", collections.Counter(e["name"] for e in got["instants"]), {"tick": 3})
    # Every kernel call names its innermost range (host rows), as its device work does.
    calls = collections.Counter()
    for key, sl in got["tracks"].items():
        if names[key].endswith(": CUDA calls"):
            for s in sl:
                if s["cat"] in ("api", "held") and s["args"].get("kernel", "").startswith("an_"):
                    calls[(s["args"].get("nvtx"), s["args"]["kernel"])] += 1
    expect("kernel calls by the range their slice names", dict(calls),
           {("attn", "an_add"): 6, ("mlp", "an_twice"): 3, ("step", "an_twice"): 3, (None, "an_add"): 1})
    # The checker refuses ranges that overlap without nesting, and a mark on an unnamed row.
    for what, edit in (("a range sticking out of the one it started in", stick_out),
                       ("a mark on an unnamed row", stray_mark)):
        d = json.loads(json.dumps(doc))
        edit(d["traceEvents"])
        try:
            check_timeline.check(d)
        except check_timeline.Broken:
            continue
        fail(f"check_timeline.py accepted a timeline with {what}")
    print(f"ok: {sum(ranges.values())} ranges, {sum(kern.values())} kernels in ranges, "
          f"{got['nvtx_slices']} NVTX slices, {len(got['instants'])} marks")


def case_nvtx_off(a, tmp):
    rep, _, _ = run(a, tmp, "nvtx", NVTX_INJECTION64_PATH=os.path.join(tmp, "none.so"))
    if "nvtx" in rep:
        fail("grape run replaced the user's NVTX_INJECTION64_PATH: the report has NVTX ranges")
    print("ok: the user's NVTX_INJECTION64_PATH was kept")


def timeline_kernels(a, tmp, trace):
    _, got = chrome(a, tmp, trace)
    n = collections.Counter()
    for key, sl in got["tracks"].items():
        if got["names"][key].endswith(": CUDA calls"):
            n.update(s["args"]["kernel"] for s in sl if s["args"].get("kernel", "").startswith("an_"))
    return dict(n)


def case_profiler(a, tmp):
    whole = os.path.join(tmp, "whole")
    os.mkdir(whole)
    run(a, whole, "profiler")
    expect("kernels in the timeline without capture ranges", timeline_kernels(a, whole, "t.grape"),
           {"an_add": 7, "an_twice": 5})
    rep, trace, _ = run(a, tmp, "profiler", ["--capture-range", "cudaProfilerApi"])
    expect("the report's capture", rep.get("capture"), {"range": "cudaProfilerApi", "opened": 2})
    expect("kernels in the timeline inside the capture ranges", timeline_kernels(a, tmp, trace),
           {"an_add": 1, "an_twice": 3})
    rows = {r["name"]: int(r["calls"]) for r in csv_rows(a, tmp, "kernels")}
    expect("kernel table inside the capture ranges", rows, {"an_add": 1, "an_twice": 3})
    print("ok: only the kernels inside cudaProfilerStart/Stop and cuProfilerStart/Stop")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["nvtx", "nvtx_off", "profiler"])
    ap.add_argument("--grape", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        {"nvtx": case_nvtx, "nvtx_off": case_nvtx_off, "profiler": case_profiler}[a.case](a, tmp)


if __name__ == "__main__":
    main()
