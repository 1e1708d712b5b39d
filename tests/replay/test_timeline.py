#!/usr/bin/env python3
"""The timeline end to end on the simulated device: a program of two streams
(two_streams.c) traced with GRAPE_TIMELINE=1, exported by `grape export
--chrome` and checked against the trace-event rules (check_timeline.py); and
the checker itself shown to refuse each broken rule.

usage: test_timeline.py CASE --grape GRAPE --prog TWO_STREAMS --preload PRELOAD --simdir DIR"""
import argparse
import copy
import glob
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_timeline  # noqa: E402
from grape_cli import fail, grape  # noqa: E402

ROUNDS = 12
KERNELS = 4 * ROUNDS          # two kernels on each of two streams a round
MEMOPS = 6 * ROUNDS           # a memset and a device-to-device copy on each stream, 2 memsets
# At the end, on the legacy default stream: (entry point, device slice, bytes).
SYNC_COPIES = [("cuMemcpyDtoH_v2", "memcpy DtoH", 4), ("cuMemcpyDtoH_v2", "memcpy DtoH", 4),
               ("cuMemcpyHtoD_v2", "memcpy HtoD", 16), ("cuMemcpy2D_v2", "memcpy DtoH", 16),
               ("cuMemsetD32_v2", "memset", 16), ("cuMemcpyDtoH_v2", "memcpy DtoH", 16),
               ("cuMemcpyDtoH_v2", "memcpy DtoH", 4)]
# ... and between them, a 2-D memset on the second stream, and the launch of
# the program's own graph of two kernels on the first.
MEMSET_2D = ("cuMemsetD2D8Async", "memset", 8)
OWN_GRAPH = ("cuGraphLaunch", "graph launch (2 nodes)")
# ... and a batch of two copies to the device, 8 bytes each, on the second stream.
BATCH = ("cuMemcpyBatchAsync_v2", "memcpy HtoD", 16)
END_CALLS = len(SYNC_COPIES) + 3
STREAMS = 3                   # two streams and the legacy default one


def traced(a, tmp, name, rounds=ROUNDS, steady=False, **extra):
    """Runs the program under grape run with a timeline; returns the trace."""
    p = grape(a, ["run", "--device", "sim", "--", a.prog, str(rounds)] + (["steady"] if steady else []), tmp,
              GRAPE_TRACE=os.path.join(tmp, name), GRAPE_TIMELINE="1", **extra)
    if p.returncode != 0 or "ok" not in p.stdout:
        fail("two_streams under grape run", p)
    return os.path.join(tmp, name), p


def export(a, tmp, traces, want_rc=0):
    out = os.path.join(tmp, "timeline.json")
    p = grape(a, ["export", "--chrome"] + traces + ["-o", out], tmp)
    if p.returncode != want_rc:
        fail(f"grape export --chrome {traces}: exit {p.returncode}, want {want_rc}", p)
    return out, p


def checked(path):
    try:
        return check_timeline.check(json.load(open(path)))
    except check_timeline.Broken as e:
        fail(f"{path}: {e}")


def calls(got, kind):
    """Host slices of the program's calls (not grape's submissions) of a category."""
    return [s for k, sl in got["tracks"].items() if got["names"][k].endswith("CUDA calls")
            for s in sl if s["cat"] == kind]


def case_streams(a):
    """Graph mode: every call on its thread's row, held ones marked, one row
    per stream, graphs launched, and an arrow from every call to its work."""
    with tempfile.TemporaryDirectory() as tmp:
        trace, _ = traced(a, tmp, "t.grape")
        out, p = export(a, tmp, [trace])
        got = checked(out)
        eager, held = calls(got, "api"), calls(got, "held")
        kernels = [s for s in eager + held if s["args"].get("kernel") in ("ts_add", "ts_twice")]
        if got["processes"] != 1 or got["streams"] != STREAMS:
            fail(f"{got['processes']} processes and {got['streams']} stream rows, want 1 and {STREAMS}")
        want = KERNELS + MEMOPS + END_CALLS
        if len(kernels) != KERNELS or len(eager) + len(held) != want:
            fail(f"{len(kernels)} kernel calls of {len(eager) + len(held)} calls drawn, want "
                 f"{KERNELS} of {want}")
        if not held or not any(s["name"].startswith("graph (") for k, sl in got["tracks"].items() for s in sl):
            fail("graph mode held no call or launched no graph in the timeline")
        host = sum(len(sl) for k, sl in got["tracks"].items() if not got["names"][k].startswith("stream"))
        if got["flows"] != host:
            fail(f"{got['flows']} arrows for {host} calls and submissions: each has one")
        if f"{got['flows']} arrows" not in p.stderr:
            fail("the export's summary does not count the arrows it wrote", p)
        print(f"{len(eager)} eager and {len(held)} held calls, {got['device_slices']} device "
              f"slices on 2 streams, {got['flows']} arrows")


def case_observe(a):
    """Observe mode: nothing held, each call's own device work drawn, arrow to it."""
    with tempfile.TemporaryDirectory() as tmp:
        trace, _ = traced(a, tmp, "t.grape", GRAPE_MODE="observe")
        got = checked(export(a, tmp, [trace])[0])
        eager = calls(got, "api")
        want = KERNELS + MEMOPS + END_CALLS   # the synchronous and 2-D copies and memsets too
        if calls(got, "held") or len(eager) != want:
            fail(f"observe mode: {len(eager)} eager calls, {len(calls(got, 'held'))} held; want "
                 f"{want} and none")
        if got["flows"] != len(eager) or got["device_slices"] != len(eager):
            fail(f"{got['flows']} arrows and {got['device_slices']} device slices for "
                 f"{len(eager)} eager calls")


def case_names(a):
    """What nsys shows of each call and its work: a host slice is named after
    the entry point the program called (its kernel in the args), a kernel's
    device slice carries its grid, block and shared memory, a copy's its
    direction and bytes, a memset's its bytes; synchronous copies and memsets
    are drawn on the legacy default stream, a 2-D memset and the program's own
    graph launch (its nodes) on their streams."""
    with tempfile.TemporaryDirectory() as tmp:
        trace, _ = traced(a, tmp, "t.grape", GRAPE_MODE="observe")
        got = checked(export(a, tmp, [trace])[0])
        host = calls(got, "api")
        names = {s["name"] for s in host}
        want = {"cuLaunchKernel", "cuMemsetD32Async", "cuMemcpyDtoDAsync_v2"} | \
            {c[0] for c in SYNC_COPIES} | {MEMSET_2D[0], OWN_GRAPH[0], BATCH[0]}
        if names != want:
            fail(f"host slices named {sorted(names)}, want the entry points {sorted(want)}")
        launches = [s for s in host if s["name"] == "cuLaunchKernel"]
        if len(launches) != KERNELS or {s["args"].get("kernel") for s in launches} != {"ts_add", "ts_twice"}:
            fail(f"{len(launches)} cuLaunchKernel slices naming kernels "
                 f"{sorted({str(s['args'].get('kernel')) for s in launches})}")
        dev = [s for k, sl in got["tracks"].items() if got["names"][k].startswith("stream") for s in sl]
        for s in dev:
            if s["cat"] == "kernel" and (s["args"].get("grid") != "[2,1,1]" or
                                         s["args"].get("block") != "[32,1,1]" or
                                         s["args"].get("shared_mem_dynamic") != 0):
                fail(f"a kernel slice without its launch's grid, block and shared memory: {s}")
            if s["name"].startswith("memcpy") and s["name"] != "memcpy " + s["args"].get("dir", "?"):
                fail(f"a copy slice that does not say its direction: {s}")
        d2d = [s for s in dev if s["name"] == "memcpy DtoD"]
        if len(d2d) != 2 * ROUNDS or any(s["args"]["bytes"] != 4 for s in d2d):
            fail(f"{len(d2d)} device-to-device copies drawn, want {2 * ROUNDS} of 4 bytes")
        legacy = [k for k, n in got["names"].items() if n == "stream (legacy default)"]
        on_legacy = [(s["name"], s["args"].get("bytes")) for k in legacy for s in got["tracks"][k]]
        if on_legacy != [(c[1], c[2]) for c in SYNC_COPIES]:
            fail(f"the legacy default stream holds {on_legacy}, want the synchronous and 2-D copies "
                 f"and memsets {[(c[1], c[2]) for c in SYNC_COPIES]}")
        last = [(sl[-1]["name"], sl[-1]["args"].get("bytes")) for k, sl in got["tracks"].items()
                if got["names"][k].startswith("stream 0x")]
        ends = [[(s["name"], s["args"].get("bytes")) for s in sl[-2:]] for k, sl in got["tracks"].items()
                if got["names"][k].startswith("stream 0x")]
        if [MEMSET_2D[1:], BATCH[1:]] not in ends:
            fail(f"no stream ends with the 2-D memset {MEMSET_2D[1:]} and the batch of copies "
                 f"{BATCH[1:]} (one slice): they end with {ends}")
        own = [s for s in dev if s["name"] == OWN_GRAPH[1]]
        if len(own) != 1 or own[0]["cat"] != "graph" or own[0]["args"].get("nodes") != 2 or \
                (OWN_GRAPH[1], None) not in last:
            fail(f"the program's graph launch drawn as {own}, want one '{OWN_GRAPH[1]}' slice "
                 f"(2 nodes) last on its stream, which ends with {last}")
        print(f"{len(host)} calls named after {len(names)} entry points; {len(dev)} device slices "
              f"with their shape or direction; {on_legacy} on the legacy default stream")


def memops_of(obj):
    return {(m["kind"], m["dir"]): (m["count"], m["bytes"]) for m in obj["memops"]}


def case_memtable(a):
    """The memory-operation table as measured: the report's "measured" (the
    timeline's events) counts every copy and memset, synchronous and 2-D ones too, by
    kind and direction as the simulated device does; and a report without
    the sim's "device_times" (a GPU's) gets its `grape report` table from it."""
    with tempfile.TemporaryDirectory() as tmp:
        rep = os.path.join(tmp, "r.json")
        traced(a, tmp, "t.grape", GRAPE_MODE="observe", GRAPE_REPORT=rep)
        r = json.load(open(rep))
        got, sim = memops_of(r["measured"]), memops_of(r["device_times"])
        want = {("memcpy", "DtoD"): (2 * ROUNDS, 8 * ROUNDS), ("memcpy", "DtoH"): (5, 44),
                ("memcpy", "HtoD"): (2, 32), ("memset", "device"): (4 * ROUNDS + 2, 16 * ROUNDS + 24)}
        # The batch is one record on the timeline, two copies on the device.
        sim_want = dict(want)
        sim_want[("memcpy", "HtoD")] = (3, 32)
        if got != want or sim != sim_want:
            fail(f"measured memory operations {got}, simulated {sim}; want {want} and {sim_want}")
        gpu = os.path.join(tmp, "gpu")
        os.mkdir(gpu)
        r["device_times"] = None   # as a run on a GPU writes it
        json.dump(r, open(os.path.join(gpu, "r.json"), "w"))
        p = grape(a, ["report", "--csv", "--table", "memops", os.path.join(gpu, "r.json")], tmp)
        rows = {tuple(line.split(",")[:4]) for line in p.stdout.splitlines()[1:]}
        wrows = {(k, d, str(c), str(b)) for (k, d), (c, b) in want.items()}
        if p.returncode != 0 or rows != wrows:
            fail(f"grape report's memops table of a GPU's report: {sorted(rows)}, want {sorted(wrows)}", p)
        p = grape(a, ["report", os.path.join(gpu, "r.json")], tmp)
        if "memory operations (measured" not in p.stdout + p.stderr:
            fail("the table must say its times were measured", p)
        print(f"measured and simulated tables agree: {sorted(got.items())}")


def case_api_every(a):
    """The API table times every call when statistics or a timeline are
    asked for (grape run --stats, GRAPE_TIMELINE), and one in 16 otherwise,
    one in 256 after a symbol's first 1024 calls on a thread."""
    with tempfile.TemporaryDirectory() as tmp:
        def api(args, rounds=ROUNDS, **env):
            rep = os.path.join(tmp, f"r{len(os.listdir(tmp))}.json")   # a report is never overwritten
            p = grape(a, ["run"] + args + ["--device", "sim", "--", a.prog, str(rounds)], tmp,
                      GRAPE_REPORT=rep, **env)
            if p.returncode != 0:
                fail(f"grape run {args}", p)
            at = json.load(open(rep))["api_times"]
            api.last = at
            api.rep = rep
            return at["sampled_every"], at["calls"]["cuLaunchKernel"], p
        every, k, p = api(["--stats"])
        if every != 1 or k["timed"] != k["calls"] or k["calls"] != KERNELS:
            fail(f"--stats: sampled every {every}, cuLaunchKernel {k}: want every call timed")
        if "every call timed" not in p.stderr:
            fail("--stats's API table must say that every call was timed", p)
        every, k, _ = api([], GRAPE_TRACE=os.path.join(tmp, "t.grape"), GRAPE_TIMELINE="1")
        if every != 1 or k["timed"] != k["calls"]:
            fail(f"GRAPE_TIMELINE: sampled every {every}, cuLaunchKernel {k}: want every call timed")
        every, k, _ = api([])
        if every != 16 or not 0 < k["timed"] < k["calls"]:
            fail(f"by default: sampled every {every}, cuLaunchKernel {k}: want one call in 16 timed")
        # A long run: the launches past the 1024th are timed one in 256.
        every, k, p = api([], rounds=400)
        at = api.last
        n = k["calls"]
        want = len([i for i in range(n) if i % (16 if i < 1024 else 256) == 0])
        if (at.get("sampled_every_later"), at.get("later_from_call")) != (256, 1024) or \
                not want - 1 <= k["timed"] <= want:
            fail(f"by default, {n} launches: {at.get('sampled_every_later')} after "
                 f"{at.get('later_from_call')}, cuLaunchKernel {k}: want {want} timed")
        p = grape(a, ["report", api.rep], tmp)
        if "1 in 256 after a symbol's first 1024 on a thread" not in p.stdout + p.stderr:
            fail("the API table must say how the calls were sampled", p)
        print(f"--stats and GRAPE_TIMELINE: {KERNELS} of {KERNELS} launches timed; by default {k['timed']}")


def case_merge(a):
    """Two ranks in one file, each its own process named by its rank."""
    with tempfile.TemporaryDirectory() as tmp:
        t0, _ = traced(a, tmp, "r0.grape", RANK="0")
        t1, _ = traced(a, tmp, "r1.grape", RANK="1")
        out, _ = export(a, tmp, [t0, t1])
        got = checked(out)
        procs = [e for e in json.load(open(out))["traceEvents"] if e["name"] == "process_name"]
        names = sorted(e["args"]["name"].rsplit(", ", 1)[1] for e in procs)
        if got["processes"] != 2 or names != ["rank 0", "rank 1"] or \
                len({e["pid"] for e in procs}) != 2 or got["streams"] != 2 * STREAMS:
            fail(f"two ranks merged into {procs}, {got['streams']} stream rows")


def case_refusals(a):
    """A trace without a timeline, and --by-path with several traces, are
    refused with what to do; a size limit counts what it dropped."""
    with tempfile.TemporaryDirectory() as tmp:
        p = grape(a, ["run", "--device", "sim", "--", a.prog, "2"], tmp,
                  GRAPE_TRACE=os.path.join(tmp, "plain.grape"))
        _, p = export(a, tmp, [os.path.join(tmp, "plain.grape")], want_rc=1)
        if "GRAPE_TIMELINE=1" not in p.stderr or "--by-path" not in p.stderr:
            fail("a trace without a timeline must say how to get one", p)
        t, _ = traced(a, tmp, "t.grape")
        p = grape(a, ["export", "--chrome", "--by-path", t, t], tmp)
        if p.returncode != 2 or "one trace at a time" not in p.stderr:
            fail("--by-path with two traces", p)
        # 1 MiB holds 9709 records (108 bytes each): 2100 rounds make about 21,000 calls.
        big, run = traced(a, tmp, "big.grape", rounds=2100, GRAPE_TIMELINE_MAX_MB="1")
        if "left out past GRAPE_TIMELINE_MAX_MB" not in run.stderr:
            fail("a full timeline must warn at exit", run)
        out, p = export(a, tmp, [big])
        if "calls were not recorded" not in p.stderr:
            fail("the export must say that calls were dropped", p)
        labels = [e for e in json.load(open(out))["traceEvents"] if e["name"] == "process_labels"]
        if not labels or "not recorded" not in labels[0]["args"]["labels"]:
            fail(f"the process must be labelled with its dropped calls: {labels}")
        checked(out)


def case_window(a):
    """GRAPE_TIMELINE_DELAY_MS/DURATION_MS: only the calls inside the window
    are drawn, and each held call inside it still points at the submission
    that ran it (held ops are numbered per stream even outside the window)."""
    rounds, total = 400, 400 * 10
    with tempfile.TemporaryDirectory() as tmp:
        part, _ = traced(a, tmp, "part.grape", rounds=rounds, steady=True,
                         GRAPE_TIMELINE_DELAY_MS="2", GRAPE_TIMELINE_DURATION_MS="1", GRAPE_CHUNK="10")
        out, _ = export(a, tmp, [part])
        win = checked(out)
        drawn = calls(win, "api") + calls(win, "held")
        if not drawn or len(drawn) >= total:
            fail(f"a window of 1 ms after 2 ms drew {len(drawn)} of {total} calls")
        first = min(s["ts"] for s in drawn)
        last = max(s["ts"] for s in drawn)
        if first < 2000 or last >= 3000 + 1:
            fail(f"the window's calls start at {first} us and end at {last} us, want [2000, 3000)")
        if not calls(win, "held"):
            fail("no held call in the window: the pairing below checks nothing")
        # Every held call points at work of its own kernel (or a graph).
        ev = json.load(open(out))["traceEvents"]
        by_id = {}
        for e in ev:
            if e["ph"] in ("s", "f"):
                by_id.setdefault(e["id"], {})[e["ph"]] = e
        paired = 0
        for x in by_id.values():
            s_, f_ = x["s"], x["f"]
            call = check_timeline.enclosing(win["tracks"][(s_["pid"], s_["tid"])], s_["ts"])
            work = check_timeline.enclosing(win["tracks"][(f_["pid"], f_["tid"])], f_["ts"])
            if call["cat"] != "held":
                continue
            paired += 1
            # (A submission can start at the held call's own instant, inside
            # it; the call may have been moved a few ns by the 1-ns rule.)
            if work["args"]["submitted_at_us"] < call["ts"] - 0.02:
                fail(f"held call {call} points at work grape submitted before it: {work}")
            if not work["name"].startswith("graph") and work["name"] != call["args"].get("kernel", "memset") \
                    and not work["name"].startswith("memcpy"):
                fail(f"held call {call} points at another op's work {work}")
        print(f"window [2, 3) ms: {len(drawn)} of {total} calls, {paired} held calls paired")


def case_by_path(a):
    """The per-path view with predicted times names the tracks it draws and
    says their number: the memsets-only path gets no slice, so no track."""
    with tempfile.TemporaryDirectory() as tmp:
        trace, _ = traced(a, tmp, "t.grape")
        out = os.path.join(tmp, "paths.json")
        p = grape(a, ["export", "--chrome", "--by-path", trace, "--predict-gpu", "H100", "-o", out], tmp)
        if p.returncode != 0:
            fail("export --by-path --predict-gpu", p)
        ev = json.load(open(out))["traceEvents"]
        named = sum(1 for e in ev if e["ph"] == "M" and e["name"] == "thread_name")
        drawn = len({e["tid"] for e in ev if e["ph"] == "X"})
        if named != drawn or f"on {drawn} tracks" not in p.stderr:
            fail(f"{named} tracks named, {drawn} drawn", p)
        print(p.stderr.strip())


def case_checker(a):
    """check_timeline.py refuses each broken rule (so that its passing means something)."""
    with tempfile.TemporaryDirectory() as tmp:
        trace, _ = traced(a, tmp, "t.grape")
        good = json.load(open(export(a, tmp, [trace])[0]))
    check_timeline.check(good)
    ev = good["traceEvents"]
    xs = [i for i, e in enumerate(ev) if e["ph"] == "X"]
    stream_tids = {e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
                   and e["args"]["name"].startswith("stream")}

    def broken(what, edit):
        d = copy.deepcopy(good)
        edit(d["traceEvents"])
        try:
            check_timeline.check(d)
        except check_timeline.Broken:
            return
        fail(f"check_timeline.py accepted a timeline with {what}")

    def overlap(e):
        a_, b_ = [i for i in xs if e[i]["tid"] == e[xs[0]]["tid"]][:2]
        e[b_]["ts"] = e[a_]["ts"] + e[a_]["dur"] / 2
    broken("overlapping slices on a track", overlap)

    def backwards(e):
        same = [i for i in xs if e[i]["tid"] == e[xs[0]]["tid"]]
        e[same[0]], e[same[1]] = e[same[1]], e[same[0]]
    broken("slices out of order", backwards)

    def second_stream_row(e):
        m = next(x for x in e if x["ph"] == "M" and x["name"] == "thread_name"
                 and x["args"]["name"].startswith("stream"))
        e.append(dict(m, tid=m["tid"] + 77))
    broken("two rows for one stream", second_stream_row)

    def lost_end(e):
        e.remove(next(x for x in e if x["ph"] == "f"))
    broken("a flow without its end", lost_end)

    def end_on_host(e):
        f = next(x for x in e if x["ph"] == "f")
        s = next(x for x in e if x["ph"] == "s" and x["id"] == f["id"])
        f["tid"], f["ts"] = s["tid"], s["ts"]
    broken("a flow ending on a host row", end_on_host)

    def no_bind(e):
        del next(x for x in e if x["ph"] == "f")["bp"]
    broken("a flow end not bound to its slice", no_bind)

    def on_edge(e):
        f = next(x for x in e if x["ph"] == "f")
        work = check_timeline.enclosing([x for x in e if x["ph"] == "X" and x["tid"] == f["tid"]
                                         and x["pid"] == f["pid"]], f["ts"])
        f["ts"] = work["ts"]
    broken("a flow end on a slice's edge", on_edge)

    def unnamed(e):
        e.remove(next(x for x in e if x["ph"] == "M" and x["name"] == "thread_name"))
    broken("a track without a name", unnamed)

    def wrong_stream(e):
        i = next(i for i in xs if e[i]["tid"] in stream_tids)
        e[i]["args"]["stream"] = "0xdead"
    broken("another stream's work on a stream row", wrong_stream)
    print("check_timeline.py refuses each of 9 broken timelines")


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
