#!/usr/bin/env python3
"""Runs tests/interpose/routes under LD_PRELOAD=libgrape.so on the fake CUDA and
checks the exit report against what the program did.

usage: test_routes.py CASE --preload LIBS --routes PROGRAM"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROUTES = ["runtime", "driver", "dlsym", "getprocaddress", "entrypoint"]


def run(prog, args, preload, env_extra=None, check=True):
    with tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "report.%p.json")
        env = dict(os.environ, LD_PRELOAD=preload, GRAPE_REPORT=report)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        env.update(env_extra or {})
        p = subprocess.run([prog] + args, env=env, capture_output=True, text=True, timeout=50)
        if check and p.returncode != 0:
            sys.exit(f"{prog} {args} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        reports = {}
        for name in os.listdir(d):
            m = re.match(r"report\.(\d+)\.json$", name)
            if m:
                with open(os.path.join(d, name)) as f:
                    reports[int(m.group(1))] = json.load(f)
        return p, reports


def fail(msg, p=None):
    if p is not None:
        msg += f"\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    sys.exit("FAIL: " + msg)


def kernels(p):
    m = re.findall(r"^kernels (\d+)$", p.stdout, re.M)
    if not m:
        fail("no kernels line", p)
    return int(m[-1])


def only_report(p, reports):
    if len(reports) != 1:
        fail(f"expected one report, got {len(reports)}", p)
    r = next(iter(reports.values()))
    if sum(r["launches_by_route"].values()) != r["launches"]:
        fail(f"routes do not add up: {r}", p)
    return r


def case_all(a):
    for env in ({}, {"FAKE_GPA_GLOBAL": "1"}):
        all_routes(a, env)


def all_routes(a, env):
    n = 4
    p, reports = run(a.routes, ["all", str(n)], a.preload, env)
    r = only_report(p, reports)
    want = {m[0]: int(m[1]) for m in re.findall(r"^route (\w+) (\d+)$", p.stdout, re.M)}
    if r["launches_by_route"] != want:
        fail(f"routes {r['launches_by_route']} != program's {want}", p)
    if r["launches"] != kernels(p):
        fail(f"launches {r['launches']} != kernels run {kernels(p)}", p)
    # The per-thread wrapper must call the driver's _ptsz function.
    if f"ptsz_launches {2 * n}" not in p.stdout:  # __cudaLaunchKernel_ptsz + the gpa wrapper
        fail("per-thread-stream pointer not honoured", p)


def case_structure(a):
    p, reports = run(a.routes, ["structure"], a.preload)
    r = only_report(p, reports)
    if r["launches"] != kernels(p) or r["launches"] != 15:
        fail(f"launches {r['launches']}", p)
    if r["regions"] != 6 or r["paths"] != 2:
        fail(f"regions {r['regions']} paths {r['paths']}, want 6 and 2", p)
    got = sorted((t["ops"], t["count"]) for t in r["top_paths"])
    if got != [(2, 3), (3, 3)]:
        fail(f"top_paths {r['top_paths']}", p)
    for t in r["top_paths"]:
        if not re.fullmatch(r"[0-9a-f]{16}", t["fingerprint"]):
            fail(f"fingerprint {t['fingerprint']}", p)


def case_params(a):
    p, reports = run(a.routes, ["params"], a.preload, {"GRAPE_LOG": "debug"})
    r = only_report(p, reports)
    want = re.findall(r"^params (\S+) ([0-9a-f]*)$", p.stdout, re.M)
    got = re.findall(r"launch (\S+) route=\S+ .* params=([0-9a-f]*)$", p.stderr, re.M)
    if len(want) != 5 or got != want:
        fail(f"captured {got}\nlaunched {want}", p)
    if r["launches_without_layout"] != 0:
        fail("a layout was not found", p)


def case_threads(a):
    n = 200
    p, reports = run(a.routes, ["threads", str(n)], a.preload)
    r = only_report(p, reports)
    if r["launches"] != kernels(p):
        fail(f"launches {r['launches']} != kernels {kernels(p)}", p)
    runtime = 8 * n
    driver = 8 * ((n + 2) // 3)
    if r["launches_by_route"]["runtime"] != runtime or r["launches_by_route"]["driver"] != driver:
        fail(f"routes {r['launches_by_route']}", p)


def case_fork(a):
    n = 4
    p, reports = run(a.routes, ["fork", str(n)], a.preload)
    if len(reports) != 2:
        fail(f"expected parent and child reports, got {sorted(reports)}", p)
    counts = sorted(r["launches"] for r in reports.values())
    # The child starts clean: it reports only its own 3 launches.
    if counts != [3, 2 * n]:
        fail(f"launch counts {counts}", p)


def case_off(a):
    p_on, _ = run(a.routes, ["structure"], a.preload)
    p_off, reports = run(a.routes, ["structure"], a.preload, {"GRAPE_MODE": "off"})
    r = only_report(p_off, reports)
    if r["mode"] != "off" or r["launches"] != 0:
        fail(f"off mode recorded: {r}", p_off)
    p_none = subprocess.run([a.routes, "structure"], capture_output=True, text=True, timeout=50)
    if not (p_on.stdout == p_off.stdout == p_none.stdout):
        fail("output differs with the shim", p_off)


def case_nocuda(a):
    for prog in (["/bin/true"], ["/usr/bin/env", "echo", "hello"]):
        p, reports = run(prog[0], prog[1:], a.preload)
        r = only_report(p, reports)
        if r["launches"] != 0 or p.stderr.strip():
            fail(f"non-CUDA program affected: {r}", p)
        if prog[0] == "/usr/bin/env" and p.stdout != "hello\n":
            fail("output changed", p)


def case_badopt(a):
    p, reports = run("/bin/true", [], a.preload, {"GRAPE_MODE": "fast", "GRAPE_LOG": "warn"})
    lines = [l for l in p.stderr.splitlines() if "GRAPE_MODE" in l]
    if len(lines) != 1 or "off | observe | graph" not in lines[0]:
        fail("want one warning naming GRAPE_MODE and its values", p)
    r = only_report(p, reports)
    if r["mode"] != "graph":
        fail("default not used", p)
    p, _ = run("/bin/true", [], a.preload, {"GRAPE_MODE": "graph"})
    if p.stderr:
        fail("graph mode in a program that never used CUDA must say nothing", p)


def case_ctor(a):
    """A library constructor launches before main (and maybe before the shim's
    own constructor ran): the launch is counted like any other."""
    p, reports = run(a.routes, ["structure"], a.preload, {"ROUTES_CTOR": "1"})
    r = only_report(p, reports)
    if r["launches"] != 16 or kernels(p) != 16:
        fail(f"launches {r['launches']}, kernels {kernels(p)}: want 15 + 1 from the constructor", p)


def case_reuse(a):
    """A function handle value reused for another kernel after an unload: each
    launch is captured with its own kernel's name and layout."""
    n = 6
    p, reports = run(a.routes, ["reuse", str(n)], a.preload, {"GRAPE_LOG": "debug"})
    r = only_report(p, reports)
    want = re.findall(r"^params (\S+) ([0-9a-f]*)$", p.stdout, re.M)
    got = re.findall(r"launch (\S+) route=\S+ .* params=([0-9a-f]*)$", p.stderr, re.M)
    if len(want) != 2 * n or got != want:
        fail(f"captured {got}\nlaunched {want}", p)
    paths = sorted((t["ops"], t["count"]) for t in r["top_paths"])
    if r["launches"] != 2 * n or r["paths"] != 2 or paths != [(1, n), (1, n)]:
        fail(f"report {r}", p)


def case_lasterror(a):
    """The shim's first-launch queries must leave the program's last error alone."""
    p, reports = run(a.routes, ["lasterror"], a.preload)
    r = only_report(p, reports)
    if "lasterror ok" not in p.stdout or r["launches_without_layout"] != 0:
        fail(f"report {r}", p)


def case_capture(a):
    """A failed end of capture (a stream that is not capturing) must not close
    the capture that is open on another stream."""
    p, reports = run(a.routes, ["capture"], a.preload)
    r = only_report(p, reports)
    if r["launches_captured"] != 3 or r["launches"] != 1:
        fail(f"captured {r['launches_captured']}, launches {r['launches']}: want 3 and 1", p)


def case_dlsym(a):
    """dlsym over the global scope answers as without the shim: CUDA names are
    absent until the program loads CUDA RTLD_GLOBAL."""
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    san = ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))
    if san:
        env["LD_PRELOAD"] = san
    base = subprocess.run([a.probe], env=env, capture_output=True, text=True, timeout=50)
    if base.returncode != 0 or "promoted yes yes" not in base.stdout:
        fail("probe without the shim", base)
    if "global cudaMalloc default=found" not in base.stdout:
        fail("the probe cannot see a globally loaded runtime", base)
    for mode in ("observe", "off"):
        p, _ = run(a.probe, [], a.preload, {"GRAPE_MODE": mode})
        if p.stdout != base.stdout:
            fail(f"GRAPE_MODE={mode}: answers differ from the program's without the shim:\n"
                 f"{base.stdout}", p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--routes", required=True)
    ap.add_argument("--probe", required=True)
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()
