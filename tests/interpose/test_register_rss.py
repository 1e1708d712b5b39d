#!/usr/bin/env python3
"""The shim's memory in a process that only registers kernels, as a framework
does at import (a PyTorch import registers 24,133): bench_register (bench/shim) run
on the sim's runtime without the shim and under LD_PRELOAD=libgrape.so in
observe and graph mode. Fails when the shim's added peak RSS exceeds the
bound, or when the shim did not see every registration (its exit report).

DESIGN: the bound is set from what the shim must keep per registration and
nothing more (docs/performance.md, "Processes that do no CUDA work"; measured
+5.2 MiB at 24,133 registrations): ~1.4 MiB of loaded code (libgrape.so and
the libraries it links), the function table's 1 MiB (65,536 slots of 16
bytes, every page touched), a 120-byte info per handle (128 bytes of heap:
2.9 MiB) and, at exit, the unregistration's list of retired infos (0.2 MiB).
7 MiB leaves ~1.8 MiB for heap and library variation. Copying each name at
registration (strdup, >= 144 bytes of heap each here) adds >= 3.3 MiB and
fails it; demangling each eagerly adds the demangled copy (~300 bytes) and
libstdc++ as well. Peak RSS is the program's own high-water mark (VmHWM) read
after the unregistration at exit, so the Python harness's pages do not count.

Under a sanitizer the allocator's redzones and shadow memory make the sizes
meaningless: --sanitized keeps the checks of the exit report and skips the
bound (the run then checks that registration and unregistration are clean).

usage: test_register_rss.py --preload LIBS --simdir DIR --prog bench_register
                            [--n 24133] [--max-added-kib 7168] [--sanitized]"""
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


def run(a, mode):
    """(peak RSS KiB, exit report or None) of one run; mode None: no shim."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ)
        # meson test sets MALLOC_PERTURB_, which makes glibc write every page
        # of a large calloc (the shim's two 1 MiB tables, mostly untouched).
        for k in [k for k in env if k.startswith("GRAPE_")] + ["MALLOC_PERTURB_"]:
            env.pop(k, None)
        env["LD_LIBRARY_PATH"] = a.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        # Sanitizer runtimes (everything in --preload but libgrape.so) stay
        # preloaded for the run without the shim.
        san = ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))
        env.pop("LD_PRELOAD", None)
        if san:
            env["LD_PRELOAD"] = san
        report = os.path.join(d, "grape.json")
        if mode is not None:
            env["LD_PRELOAD"] = a.preload
            env["GRAPE_MODE"] = mode
            env["GRAPE_REPORT"] = report
        p = subprocess.run([a.prog, str(a.n)], env=env, capture_output=True, text=True,
                           timeout=120)
        m = re.search(r"^registered (\d+) kernels in 1 fatbins; peak_rss_kib (\d+)$", p.stdout,
                      re.M)
        if p.returncode != 0 or m is None or int(m.group(1)) != a.n:
            fail(f"{a.prog} {a.n} ({mode or 'no shim'}) exited {p.returncode}", p)
        rep = None
        if mode is not None:
            if not os.path.exists(report):
                fail(f"{mode}: no exit report: was {a.preload} preloaded?", p)
            with open(report) as f:
                rep = json.load(f)
        return int(m.group(2)), rep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--n", type=int, default=24133)
    ap.add_argument("--max-added-kib", type=int, default=7 * 1024)
    ap.add_argument("--sanitized", action="store_true")
    a = ap.parse_args()

    base, _ = run(a, None)
    print(f"no shim: peak RSS {base} KiB")
    for mode in ("observe", "graph"):
        rss, rep = run(a, mode)
        added = rss - base
        print(f"{mode}: peak RSS {rss} KiB, added {added} KiB ({added * 1024 / a.n:.0f} bytes per "
              f"registration; bound {a.max_added_kib} KiB{', not checked' if a.sanitized else ''})")
        calls = rep.get("api_calls", {})
        want = {"__cudaRegisterFatBinary": 1, "__cudaRegisterFunction": a.n,
                "__cudaUnregisterFatBinary": 1}
        got = {k: calls.get(k) for k in want}
        if rep.get("mode") != mode or got != want or rep.get("launches") != 0:
            fail(f"{mode}: the shim did not see the registrations: mode {rep.get('mode')}, "
                 f"calls {got}, launches {rep.get('launches')} (want {want}, none)")
        if not a.sanitized and added > a.max_added_kib:
            fail(f"{mode}: the shim added {added} KiB of peak RSS for {a.n} registrations, more "
                 f"than {a.max_added_kib} KiB: are names copied or demangled at registration?")


if __name__ == "__main__":
    main()
