#!/usr/bin/env python3
"""Copies with CUDA arrays and device variables on the timeline, through the
driver and through the runtime (array_copies.c), and the runtime's forms of
copies, memsets, batches and graph launches; and graph mode's results with
such copies between the kernels it holds.

CUDA 12.8's forms of the 3-D and 1-D batches (with their failing index),
which a 12.8 runtime reaches through cuGetProcAddress at version 12080, are
drawn and end graph mode's region as 13's do.

Each copy is drawn on the stream it ran on (synchronous ones on the legacy
default stream) as "memcpy <direction>" with its bytes, the direction by
the memory types (an array or a variable is device memory), and its call on
the host row, named after the entry point, with an arrow to it.

usage: test_array_timeline.py CASE --grape GRAPE --prog ARRAY_COPIES --preload PRELOAD --simdir DIR"""
import argparse
import collections
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_timeline  # noqa: E402
from grape_cli import fail, grape  # noqa: E402

ROUNDS = 6
CAPTURED = 2   # the runtime's kernels captured into the program's graph: no work of their own
# (entry point, device slice, bytes, on the legacy default stream, calls)
DRIVER = [("cuMemcpyDtoA_v2", "memcpy DtoD", 16, True, ROUNDS),
          ("cuMemcpy2DAsync_v2", "memcpy DtoD", 16, False, ROUNDS),
          ("cuMemcpy3DBatchAsync", "memcpy DtoD", 16, False, ROUNDS),   # 12.8's, by cuGetProcAddress
          ("cuMemcpyBatchAsync", "memcpy DtoD", 8 + 8, False, ROUNDS),   # 12.8's, by cuGetProcAddress
          ("cuMemcpyAtoD_v2", "memcpy DtoD", 16, True, ROUNDS),
          ("cuMemcpyDtoH_v2", "memcpy DtoH", 16, True, 4 * ROUNDS + 2),
          ("cuMemcpyHtoA_v2", "memcpy HtoD", 16, True, 1),
          ("cuMemcpyAtoH_v2", "memcpy DtoH", 16, True, 1),
          ("cuMemcpyAtoHAsync_v2", "memcpy DtoH", 16, False, 1),
          ("cuMemcpy3D_v2", "memcpy DtoH", 32, True, 1),
          ("cuMemcpy3DBatchAsync_v2", "memcpy DtoD", 4 * 4 + 16, False, 1),
          ("cuMemsetD32Async", "memset", 16, False, ROUNDS + 2)]
RUNTIME = [("cudaMemcpyToSymbol", "memcpy DtoD", 16, True, ROUNDS),
           ("cudaMemcpy2DToArrayAsync", "memcpy DtoD", 16, False, ROUNDS),
           ("cudaMemcpyFromSymbol", "memcpy DtoD", 16, True, ROUNDS),
           ("cudaMemcpy2DFromArrayAsync", "memcpy DtoD", 16, False, ROUNDS),
           ("cudaMemcpy", "memcpy DtoH", 16, True, 3 * ROUNDS + 4),
           ("cudaMemcpy2DFromArray", "memcpy DtoH", 32, True, 2),
           ("cudaMemsetAsync", "memset", 16, False, ROUNDS + 2),
           ("cudaMemset", "memset", 16, True, 1),
           ("cudaMemset2D", "memset", 4 * 3, True, 1),
           ("cudaMemset2DAsync", "memset", 8, False, 1),
           ("cudaMemset3D", "memset", 4, True, 1),
           ("cudaMemset3DAsync", "memset", 4, False, 1),
           ("cudaMemcpyBatchAsync", "memcpy HtoD", 16, False, 1),
           ("cudaMemcpy3DBatchAsync", "memcpy HtoD", 4 * 4 * 2 + 16, False, 1),
           ("cudaGraphLaunch", "graph launch (2 nodes)", None, False, 1),
           ("cudaLaunchKernel", "", None, False, 10 * ROUNDS + CAPTURED)]
# Graph mode with graphs free to build, built on the program's thread (so
# that a run replays the same calls every time) and launches dear enough
# that a held region is never cut into segments: each region's kernels,
# before and after the copy that ends it, reach the device in one launch,
# where a copy that graph mode let pass (classed as not touching the
# region) would run before the kernels issued ahead of it.
WHOLE = {"GRAPE_COSTS": "build=0,build_node=0,launch=100000,graph_launch=50000",
         "GRAPE_BUILDER": "inline"}


def run(a, tmp, mode, rounds=ROUNDS, **env):
    p = grape(a, ["run", "--device", "sim", "--", a.prog, mode, str(rounds)], tmp, **env)
    if p.returncode != 0 or "ok" not in p.stdout:
        fail(f"array_copies {mode} under grape run", p)
    return p


def timeline(a, tmp, mode, **env):
    trace = os.path.join(tmp, mode + ".grape")
    run(a, tmp, mode, GRAPE_TRACE=trace, GRAPE_TIMELINE="1", **env)
    out = os.path.join(tmp, mode + ".json")
    p = grape(a, ["export", "--chrome", trace, "-o", out], tmp)
    if p.returncode != 0:
        fail("grape export --chrome", p)
    try:
        return check_timeline.check(json.load(open(out)))
    except check_timeline.Broken as e:
        fail(f"{out}: {e}")


def host_calls(got):
    return [s for k, sl in got["tracks"].items() if got["names"][k].endswith("CUDA calls")
            for s in sl if s["cat"] in ("api", "held")]


def device(got, legacy):
    return [s for k, sl in got["tracks"].items()
            if got["names"][k].startswith("stream") and
            (got["names"][k] == "stream (legacy default)") == legacy for s in sl]


def check_forms(a, mode, want, captured=0):
    """Observe mode: each entry point's calls on the host row, and as many
    device slices of its kind, bytes and direction on the stream it names."""
    with tempfile.TemporaryDirectory() as tmp:
        got = timeline(a, tmp, mode, GRAPE_MODE="observe")
        calls = collections.Counter(s["name"] for s in host_calls(got))
        slices = {legacy: collections.Counter((s["name"], s["args"].get("bytes")) for s in device(got, legacy))
                  for legacy in (True, False)}
        for entry, name, nbytes, legacy, n in want:
            if calls[entry] != n:
                fail(f"{entry}: {calls[entry]} calls on the host row, want {n} (all calls: {dict(calls)})")
        for legacy in (True, False):
            expect = collections.Counter()
            for entry, name, nbytes, on_legacy, n in want:
                if on_legacy == legacy and name:
                    expect[(name, nbytes)] += n
            have = collections.Counter({k: v for k, v in slices[legacy].items()
                                        if k[0].startswith(("memcpy", "memset", "graph launch"))})
            where = "the legacy default stream" if legacy else "the program's stream"
            if have != expect:
                fail(f"{where} holds {dict(have)}, want {dict(expect)}")
        dev = device(got, True) + device(got, False)
        for s in dev:
            if s["name"].startswith("memcpy") and s["name"] != "memcpy " + s["args"].get("dir", "?"):
                fail(f"a copy slice that does not say its direction: {s}")
        if got["flows"] != len(host_calls(got)) - captured:
            fail(f"{got['flows']} arrows for {len(host_calls(got))} calls, {captured} of them "
                 "captured: each other call has one")
        print(f"{mode}: {sum(calls.values())} calls, {len(dev)} device slices, each form as wanted")


def case_driver(a):
    check_forms(a, "driver", DRIVER)


def case_runtime(a):
    check_forms(a, "runtime", RUNTIME, CAPTURED)


def case_graph_mode(a):
    """Graph mode holds the kernels on either side of every array and
    variable copy and replays them, and gives the results of a run without
    the shim, through the driver and the runtime: each round's kernels read
    what the copies after them overwrite, so a copy run ahead of them (one
    that graph mode does not end the region for) changes the checksum."""
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("driver", "runtime"):
            plain = run(a, tmp, mode, rounds=12, GRAPE_MODE="off").stdout
            got = timeline(a, tmp, mode, **WHOLE)
            held = [s for s in host_calls(got) if s["cat"] == "held"]
            graphs = [s for sl in got["tracks"].values() for s in sl if s["name"].startswith("graph (")]
            if not held or not graphs:
                fail(f"{mode}: graph mode held {len(held)} calls and launched {len(graphs)} graphs")
            report = os.path.join(tmp, mode + ".report.json")
            p = run(a, tmp, mode, rounds=12, GRAPE_REPORT=report, **WHOLE)
            if p.stdout != plain:
                fail(f"{mode}: graph mode printed {p.stdout!r}, without the shim {plain!r}", p)
            rep = json.load(open(report))
            # Every path of a round (12 sightings; the one before the first
            # round and the first round's first are others) replayed.
            rounds = [t for t in rep.get("top_paths", []) if t["count"] >= 11]
            if rep.get("graph_hits", 0) == 0 or len(rounds) < 5 or any(t["hits"] == 0 for t in rounds):
                fail(f"{mode}: {rep.get('graph_hits')} graph hits; the rounds' paths: " +
                     ", ".join(f"{t['kernels']} {t['hits']} of {t['count']} ({t['why']})" for t in rounds))
            print(f"{mode}: {len(held)} calls held, {len(graphs)} graph launches, {rep['graph_hits']} "
                  f"graph hits over {len(rounds)} paths a round, {plain.split()[1]} as without the shim")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--grape", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--preload", default="")
    ap.add_argument("--simdir", required=True)
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()
