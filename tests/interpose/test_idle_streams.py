#!/usr/bin/env python3
"""Idle means idle: a stream whose held work was submitted and synchronised
returns its region buffers (issue 23, item 6). idle_streams.cu creates N
non-blocking streams and runs rounds of 4 launches on each with a device
sync after every round; run without the shim and in graph mode, the shim's
share per stream is the difference of the two runs, divided by N:
- after the last sync (every stream idle), of the heap in use: the stream's
  slot and its share of the stream table (~500 bytes), never its region's
  buffers (~480 bytes more for 4 ops);
- of resident memory just before a sync, when every stream holds its
  round's work: the slot and a region sized for 4 ops (~0.9 KiB; a region
  that starts at 64 ops and 4 KiB of parameters costs 9.7 KiB).

Under a sanitizer the allocator's redzones make the sizes meaningless:
--sanitized keeps the run and its checks of the result, not the bounds.

usage: test_idle_streams.py --preload LIBS --simdir DIR --prog idle_streams
                            [--n 20000] [--rounds 3] [--max-idle-bytes 768]
                            [--max-held-bytes 1536] [--sanitized]"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

from simenv import sim_env


def fail(msg, p=None):
    if p is not None:
        msg += f"\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-4000:]}"
    sys.exit("FAIL: " + msg)


def run(a, mode):
    """(held RSS KiB, RSS KiB before the rounds, idle heap bytes, sum, report)."""
    with tempfile.TemporaryDirectory() as d:
        # No worker thread per stream (N streams would be N threads); meson
        # test's MALLOC_PERTURB_ would make glibc write every page it hands out.
        env = sim_env(a.simdir, a.preload, d, mode is not None, mode or "graph",
                      extra={"SIMCU_SYNC": "1"}, clean=True)
        env.pop("MALLOC_PERTURB_", None)
        p = subprocess.run([a.prog, str(a.n), str(a.rounds)], env=env, capture_output=True,
                           text=True, timeout=240)
        m = re.search(r"^streams (\d+) rounds (\d+) rss_before_kib (\d+) held_rss_kib (\d+) "
                      r"idle_heap_bytes (\d+)$", p.stdout, re.M)
        s = re.search(r"^sum (\d+)$", p.stdout, re.M)
        if p.returncode != 0 or m is None or s is None:
            fail(f"{a.prog} ({mode or 'no shim'}) exited {p.returncode}", p)
        rep = None
        if mode is not None:
            reports = glob.glob(os.path.join(d, "grape.*.json"))
            if not reports:
                fail(f"{mode}: no exit report: was {a.preload} preloaded?", p)
            with open(reports[0]) as f:
                rep = json.load(f)
        return int(m.group(4)), int(m.group(3)), int(m.group(5)), int(s.group(1)), rep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-idle-bytes", type=int, default=768)
    ap.add_argument("--max-held-bytes", type=int, default=1536)
    ap.add_argument("--sanitized", action="store_true")
    a = ap.parse_args()
    if a.prog == "-":
        print("skipped: nvcc not found")
        sys.exit(77)

    e_held, e_before, e_idle, e_sum, _ = run(a, None)
    g_held, g_before, g_idle, g_sum, rep = run(a, "graph")
    want = a.n * a.rounds * 4
    if e_sum != want or g_sum != want:
        fail(f"sums {e_sum} without the shim, {g_sum} in graph mode; want {want}")
    if rep.get("mode") != "graph" or rep.get("graph_hits", 0) == 0:
        fail(f"graph mode held and replayed nothing (mode {rep.get('mode')}, "
             f"{rep.get('graph_hits')} hits): the streams' work was never held")
    idle = (g_idle - e_idle) / a.n
    held = ((g_held - g_before) - (e_held - e_before)) * 1024 / a.n
    print(f"{a.n} streams, {a.rounds} rounds of 4 launches, {rep['graph_hits']} graph hits: "
          f"the shim's share per stream: {idle:.0f} bytes of heap when idle (bound "
          f"{a.max_idle_bytes}), {held:.0f} bytes resident while every stream holds its work "
          f"(bound {a.max_held_bytes}){', not checked' if a.sanitized else ''}")
    if a.sanitized:
        return
    if idle > a.max_idle_bytes:
        fail(f"an idle stream costs {idle:.0f} bytes of heap, more than {a.max_idle_bytes}: "
             "does a stream keep its region's buffers after its work was synchronised?")
    if held > a.max_held_bytes:
        fail(f"a stream holding 4 ops costs {held:.0f} bytes, more than {a.max_held_bytes}: "
             "are a region's first buffers sized for far more ops than it holds?")


if __name__ == "__main__":
    main()
