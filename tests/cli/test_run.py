#!/usr/bin/env python3
"""Tests of `grape run`: exit status, signal forwarding, LD_PRELOAD prepending,
the summary on the simulated device, --report, and the option listing.

usage: test_run.py CASE --grape GRAPE --optionsdef FILE --docs FILE [--prog PROG]"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def fail(msg, p=None):
    if p is not None:
        msg += f"\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    sys.exit("FAIL: " + msg)


def sanitizer_preload(a):
    """The sanitizer runtimes of --preload (everything but libgrape.so)."""
    return ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))


def need_prog(a):
    """Cases that run a CUDA program are skipped when it was not built (no nvcc)."""
    if a.prog == "-":
        print("skipped: built without nvcc")
        sys.exit(77)


def grape(a, args, **kw):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    env.update(kw.pop("env", {}))
    san = sanitizer_preload(a)
    if san:
        env["LD_PRELOAD"] = san + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    return subprocess.run([a.grape, "run"] + args, capture_output=True, text=True, timeout=60,
                          env=env, **kw)


def case_status(a):
    p = grape(a, ["--device", "sim", "--", "/bin/false"])
    if p.returncode != 1:
        fail(f"exit status {p.returncode}, want 1", p)
    # How the command ended is said first, and a failed command gets no hint
    # that it merely ran no kernels.
    first = p.stderr.splitlines()[0] if p.stderr else ""
    if first != "grape: the command exited with status 1" or "ran no kernels" in p.stderr:
        fail("a failed command's status must come first, without the no-kernel hint", p)
    p = grape(a, ["--device", "sim", "--", "sh", "-c", "kill -TERM $$"])
    if p.returncode != 128 + signal.SIGTERM:
        fail(f"exit status {p.returncode}, want {128 + signal.SIGTERM}", p)
    if "grape: the command was killed by SIGTERM" not in p.stderr.splitlines()[:1]:
        fail("the signal that killed the command must come first", p)
    p = grape(a, ["--device", "sim", "--", "/nonexistent/program"])
    if p.returncode != 127:
        fail(f"exit status {p.returncode}, want 127", p)
    p = grape(a, ["--mode", "fast", "--", "/bin/true"])
    if p.returncode != 2:
        fail("a bad --mode must be refused", p)


def case_signal(a):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    if sanitizer_preload(a):
        env["LD_PRELOAD"] = sanitizer_preload(a)
    proc = subprocess.Popen([a.grape, "run", "--device", "sim", "--", "sleep", "30"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    if proc.returncode != 128 + signal.SIGINT or time.time() - t0 > 10:
        fail(f"status {proc.returncode}: SIGINT not forwarded\n{err}")


def case_preload(a):
    p = grape(a, ["--device", "sim", "--", "sh", "-c", "echo \"$LD_PRELOAD\""],
              env={"LD_PRELOAD": "libm.so.6"})
    san = sanitizer_preload(a)
    parts = p.stdout.strip().split(":")[len(san.split(":")) if san else 0:]
    # libgrape.so first, then the sim's runtime and cuBLAS (case_rpath), then
    # the user's list
    sim = [x for x in parts[1:-1] if "/sim/" in x]
    if not parts[0].endswith("libgrape.so") or parts[-1] != "libm.so.6" or \
            len(sim) != len(parts) - 2 or not any(x.endswith("libcudart.so.13") for x in sim):
        fail(f"LD_PRELOAD {p.stdout!r}", p)


def case_sim_kernels(a):
    """--sim-kernels timed turns the sim's timed kernels on (SIMCU_KERNELS gets
    the word, beside body libraries already named); bad values and a real
    device are refused."""
    show = ["--", "sh", "-c", "echo \"$SIMCU_KERNELS\""]
    p = grape(a, ["--device", "sim", "--sim-kernels", "timed"] + show, env={"SIMCU_KERNELS": ""})
    if p.returncode != 0 or p.stdout.strip() != "timed":
        fail(f"SIMCU_KERNELS {p.stdout!r}, want 'timed'", p)
    p = grape(a, ["--device", "sim", "--sim-kernels=timed"] + show, env={"SIMCU_KERNELS": "/x.so"})
    if sorted(p.stdout.strip().split(":")) != ["/x.so", "timed"]:
        fail(f"SIMCU_KERNELS {p.stdout!r}, want /x.so and timed", p)
    p = grape(a, ["--device", "sim"] + show, env={"SIMCU_KERNELS": ""})
    if p.stdout.strip() != "":
        fail(f"SIMCU_KERNELS {p.stdout!r} without --sim-kernels", p)
    p = grape(a, ["--device", "sim", "--sim-kernels", "fast"] + show)
    if p.returncode != 2 or "--sim-kernels must be bodies or timed" not in p.stderr:
        fail("a bad --sim-kernels must be refused", p)
    p = grape(a, ["--device", "cuda", "--sim-kernels", "timed"] + show)
    if p.returncode != 2 or "applies to the simulated device" not in p.stderr:
        fail("--sim-kernels timed with --device cuda must be refused", p)


def case_summary(a):
    need_prog(a)
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "r.%p.json")
        p = grape(a, ["--device", "sim", "--report", rep, "--", a.prog, "all", "2"])
        if p.returncode != 0:
            fail("command failed", p)
        m = re.search(r"mode graph: (\d+) kernel launches \(runtime (\d+), driver (\d+), dlsym (\d+), "
                      r"getprocaddress (\d+), entrypoint (\d+)\)", p.stderr)
        if not m or [int(x) for x in m.groups()] != [12, 4, 2, 2, 2, 2]:
            fail("summary", p)
        files = os.listdir(d)
        if len(files) != 1:
            fail(f"report files {files}", p)
        with open(os.path.join(d, files[0])) as f:
            r = json.load(f)
        if r["launches"] != 12 or f"report: {os.path.join(d, files[0])}" not in p.stderr:
            fail(f"report {r}", p)


def case_nokernel_hint(a):
    """The hint that the command ran no kernel on the sim comes only when the
    sim ran none: not in off mode, where grape itself counts nothing."""
    need_prog(a)
    p = grape(a, ["--device", "sim", "--mode", "off", "--", a.prog, "all", "2"])
    if p.returncode != 0 or "ran no kernels" in p.stderr:
        fail("off mode: the sim ran the kernels, yet the summary says none ran", p)
    p = grape(a, ["--device", "sim", "--", "/bin/true"])
    if p.returncode != 0 or "ran no kernels" not in p.stderr or "--sim-kernels timed" not in p.stderr:
        fail("a command without kernels gets the hint, naming --sim-kernels timed", p)


def case_launchers(a):
    """The CUDA work of a child process (timeout, a shell, a Python parent) is
    in the summary, with one line per process that did it; a forked child that
    leaves through _exit is named."""
    need_prog(a)
    py_parent = ("import subprocess, sys; "
                 "sys.exit(subprocess.run(sys.argv[1:]).returncode)")
    for cmd in (["timeout", "60", a.prog, "all", "2"],
                ["bash", "-c", f"{a.prog} all 2; true"],
                ["python3", "-c", py_parent, a.prog, "all", "2"]):
        p = grape(a, ["--device", "sim", "--"] + cmd)
        if p.returncode != 0:
            fail(f"{cmd} failed", p)
        m = re.search(r"mode graph: (\d+) kernel launches .* in (\d+) processes", p.stderr)
        if not m or int(m.group(1)) != 12 or int(m.group(2)) < 2:
            fail(f"{cmd[0]}: want 12 launches over the processes", p)
        if not re.search(r"grape:   pid \d+ sim_routes: 12 launches", p.stderr):
            fail(f"{cmd[0]}: no line for the process that launched", p)
        if "most frequent paths" not in p.stderr:
            fail(f"{cmd[0]}: the busiest process's paths are missing", p)
    quiet = "import os; pid = os.fork(); os._exit(0) if pid == 0 else os.waitpid(pid, 0)"
    p = grape(a, ["--device", "sim", "--", "python3", "-c", quiet])
    if "1 forked process exited without a report" not in p.stderr:
        fail("a child that left through _exit is not named", p)
    p = grape(a, ["--device", "sim", "--", "python3", "-c", "import os; os.wait() if os.fork() else None"])
    if "exited without a report" in p.stderr:
        fail("a child that exited normally is named as silent", p)


def case_predict(a):
    """--predict-gpu sets GRAPE_PREDICT_GPU; the summary gives the report's totals."""
    need_prog(a)
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "r.json")
        p = grape(a, ["--device", "sim", "--report", rep, "--predict-gpu", "T4", "--", a.prog, "all", "2"])
        if p.returncode != 0:
            fail("command failed", p)
        with open(rep) as f:
            pr = json.load(f)["predicted"]
        m = re.search(r"predicted on (.+): ([0-9.]+) ms eager, ([0-9.]+) ms as graphs", p.stderr)
        if not m or m.group(1) != pr["gpu"] or pr["gpu"] != "Tesla T4" or \
                abs(float(m.group(2)) - pr["total_eager_ms"]) > 0.0006 or \
                abs(float(m.group(3)) - pr["total_graph_ms"]) > 0.0006:
            fail(f"summary vs report {pr}", p)
        m = re.search(r"80% intervals: eager ([0-9.]+)-([0-9.]+) ms, graphs ([0-9.]+)-([0-9.]+) ms",
                      p.stderr)
        keys = ("total_eager_lo_ms", "total_eager_hi_ms", "total_graph_lo_ms", "total_graph_hi_ms")
        if not m or any(abs(float(m.group(i + 1)) - pr[k]) > 0.0006 for i, k in enumerate(keys)):
            fail(f"summary intervals vs report {pr}", p)


def case_folders(a):
    """Output folders are made: those a --report name fixes by grape run, those
    with escapes (one per rank) by each process's shim."""
    need_prog(a)
    with tempfile.TemporaryDirectory() as d:
        p = grape(a, ["--device", "sim", "--report", os.path.join(d, "run", "a", "r.%p.json"), "--",
                      a.prog, "all", "2"])
        if p.returncode != 0 or len(os.listdir(os.path.join(d, "run", "a"))) != 1:
            fail("--report into a new folder", p)
        p = grape(a, ["--device", "sim", "--", a.prog, "all", "2"],
                  env={"RANK": "3", "GRAPE_REPORT": os.path.join(d, "ranks", "rank%r", "r.json")})
        if p.returncode != 0 or not os.path.exists(os.path.join(d, "ranks", "rank3", "r.json")):
            fail("GRAPE_REPORT into a new folder per rank", p)


def case_cublas(a):
    """A program linked to cuBLAS runs on the sim: grape run puts the sim's
    cuBLAS stand-ins on the library path too."""
    if a.moe == "-":
        print("skipped: built without nvcc")
        sys.exit(77)
    # meson's own LD_LIBRARY_PATH names the build's libraries: not a user's.
    p = grape(a, ["--device", "sim", "--", a.moe], env={"LD_LIBRARY_PATH": ""})
    if p.returncode != 0 or "cublasCreate failed" in p.stderr:
        fail("moe under grape run on the sim", p)


def case_rpath(a):
    """A program whose DT_RPATH names a runtime that finds no device (as
    PyTorch's wheel names NVIDIA's, which wins over LD_LIBRARY_PATH) sees the
    simulated device under grape run: the sim's runtime is preloaded. Without
    grape run it sees none."""
    bare = subprocess.run([a.rpath_probe], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, LD_LIBRARY_PATH=""))
    if "devices 0" not in bare.stdout:
        fail("the probe's own runtime should find no device", bare)
    p = grape(a, ["--device", "sim", "--", a.rpath_probe], env={"LD_LIBRARY_PATH": ""})
    if p.returncode != 0 or "devices 1 (rc 0)" not in p.stdout:
        fail("under grape run on the sim the probe did not reach the sim's runtime", p)


def case_decisions(a):
    """Graph mode's decisions in the summary: concurrency plans (built, kept,
    reverted, launched, gained or lost against the chain), the verdicts over
    every path, each path's own replays, and what driver submissions count."""
    if a.moe == "-":
        print("skipped: built without nvcc")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "r.json")
        p = grape(a, ["--device", "sim", "--report", rep, "--", a.moe, "--iters", "20"],
                  env={"GRAPE_CONCURRENCY": "safe"})
        if p.returncode != 0:
            fail("moe failed", p)
        r = json.load(open(rep))
        c = r["concurrency"]
        m = re.search(r"concurrency \(safe\): (\d+) plans built, (\d+) kept, (\d+) reverted; (\d+) plan "
                      r"launches .*the plans (gained|lost) about [\d.]+ ms of device time", p.stderr)
        if not m or [int(x) for x in m.groups()[:4]] != [c["plans_built"], c["plans_kept"],
                                                        c["plans_reverted"], c["plan_launches"]] \
                or c["plans_built"] == 0:
            fail(f"the concurrency line against the report's {c}", p)
        v = r["verdicts"]
        if sum(x["paths"] for x in v) != r["paths"] or sum(x["hits"] for x in v) != r["graph_hits"] \
                or "graph mode's verdicts: " not in p.stderr:
            fail(f"verdicts {v} against {r['paths']} paths, {r['graph_hits']} hits", p)
        top = r["top_paths"][0]
        if not 0 <= top["hits"] <= top["count"] or \
                f"{top['hits']} of its {top['count']} runs replayed" not in p.stderr:
            fail(f"the busiest path's own replays {top}", p)
        if "driver submissions (ops submitted one by one, graph launches and node updates)" \
                not in p.stderr:
            fail("what driver submissions count must be said", p)
        # Nothing kept as graphs: the eager verdicts open the line (no stray ';').
        p = grape(a, ["--device", "sim", "--", a.moe, "--iters", "2"],
                  env={"GRAPE_MIN_OPS": "1048576"})
        if p.returncode != 0 or not re.search(r"graph mode's verdicts: \d+ paths? eager \(", p.stderr):
            fail("with every path eager, the verdicts line must start with them", p)


def case_predict_gpu(a):
    """An unknown --predict-gpu is refused before the command runs."""
    with tempfile.TemporaryDirectory() as d:
        mark = os.path.join(d, "ran")
        p = grape(a, ["--device", "sim", "--predict-gpu", "H900", "--", "touch", mark])
        if p.returncode != 2 or os.path.exists(mark) or "unknown GPU 'H900'" not in p.stderr:
            fail("--predict-gpu H900 must be refused before the command runs", p)


def case_options(a):
    names = re.findall(r"^GRAPE_OPTION\((\w+),", open(a.optionsdef).read(), re.M)
    p = subprocess.run([a.grape, "run", "--help"], capture_output=True, text=True)
    docs = open(a.docs).read()
    for n in names:
        env = "GRAPE_" + n.upper()
        if env not in p.stdout:
            fail(f"{env} missing from grape run --help", p)
        if f"`{env}`" not in docs:
            fail(f"{env} missing from docs/configuration.md")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--grape", required=True)
    ap.add_argument("--optionsdef", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--prog", default="-")
    ap.add_argument("--preload", default="")
    ap.add_argument("--moe", default="-")
    ap.add_argument("--rpath-probe", default="-")
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()
