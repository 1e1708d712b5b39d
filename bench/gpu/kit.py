#!/usr/bin/env python3
"""kit.py - the checks of grape's GPU validation kit; run.sh calls it after the build.

DESIGN
The checks run in the order of the questions they answer (routes, correctness, torch
workloads, costs, concurrency, predictor), each given min(its own cap, what is left of one deadline),
so a short run still answers the first ones. Nothing here assumes a grape feature
exists: each is probed first (a file in the build, a subcommand in `grape --help`, a
field in an exit report) and what is missing is recorded as status "n/a" with the
reason "not available yet", which is not a failure. A result row is
{check, name, status: pass|fail|info|n/a|skip|error, why?, ...numbers}; "fail" means
grape did something wrong (a checksum differs, a count disagrees), "error" means the
kit could not measure. Everything lands in results.json and a Markdown summary named
<date>-<gpu>.md; the last thing printed is a short table. Standard library only.
"""
import argparse
import csv
import glob
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

EXAMPLES = ["dynrnn", "beam", "mlp_train"]
WORKLOADS = ["mlp", "lstm", "gpt", "moe"]
ROUTE_SECTIONS = ["native", "cublas", "cudnn", "triton"]
CHECKS = ["routes", "correctness", "workloads", "costs", "concurrency", "predictor"]
CONC_VARIANTS = ["seq", "streams", "chain", "branches", "smtarget"]
ROUTE_KEYS = ["runtime", "driver", "dlsym", "getprocaddress", "entrypoint"]
NA = "not available yet"


class Kit:
    def __init__(self, a):
        self.a = a
        self.sim = a.sim
        self.w = a.work
        self.b = a.build
        self.logs = os.path.join(self.w, "logs")
        self.reports = os.path.join(self.w, "reports")
        for d in (self.logs, self.reports):
            os.makedirs(d, exist_ok=True)
        self.rows = []
        self.env = read_env(os.path.join(self.w, "env.txt"))
        self.grape = os.path.join(self.b, "tools", "grape")
        self.shim = os.path.join(self.b, "interpose", "libgrape.so")
        self.simdir = os.path.join(self.b, "sim")
        self.exdir = os.path.join(self.b, "examples")
        self.commands = self.grape_commands()
        # the three the issue names, then any other example the build has (dynrnn_ptds...)
        extra = sorted(os.path.basename(f) for f in glob.glob(os.path.join(self.exdir, "*"))
                       if os.path.isfile(f) and os.access(f, os.X_OK) and "." not in os.path.basename(f))
        self.examples = EXAMPLES + [e for e in extra if e not in EXAMPLES]
        self.iters_ex = 3 if (a.quick or self.sim) else 8
        self.py = sys.executable or "python3"
        self.torch = None
        self.features = {}

    # ------------------------------------------------------------------ plumbing
    def left(self, reserve=0):
        """Seconds to the deadline, less `reserve` kept for the later checks (on a GPU;
        a dry run's steps take seconds, so it keeps at most 10)."""
        if self.sim:
            reserve = min(reserve, 10)
        return self.a.deadline - time.time() - reserve

    def budget(self, cap, reserve=0):
        return max(0, min(cap, self.left(reserve)))

    def add(self, check, name, status, **kw):
        row = {"check": check, "name": name, "status": status}
        row.update(kw)
        self.rows.append(row)
        extra = " ".join(f"{k}={v}" for k, v in kw.items() if k != "why" and not isinstance(v, (dict, list)))
        why = f" ({kw['why']})" if kw.get("why") else ""
        print(f"   {check:<11} {name:<28} {status:<5} {extra}{why}"[:240], flush=True)
        return row

    def run(self, name, cmd, env=None, timeout=60, cwd=None):
        """Runs cmd; returns (rc, stdout, stderr). Logs both to logs/<name>.log."""
        full = dict(os.environ)
        if env:
            for k, v in env.items():
                if v is None:
                    full.pop(k, None)
                else:
                    full[k] = v
        t = time.time()
        timeout = max(1, int(timeout))
        try:
            p = subprocess.run(cmd, env=full, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                               errors="replace")
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = 124, (e.stdout or b""), (e.stderr or b"")
            out = out.decode(errors="replace") if isinstance(out, bytes) else out
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
        except OSError as e:
            rc, out, err = 127, "", str(e)
        with open(os.path.join(self.logs, safe(name) + ".log"), "w") as f:
            envs = " ".join(f"{k}={v}" for k, v in (env or {}).items())
            f.write(f"$ {envs} {' '.join(shlex.quote(c) for c in cmd)}\n# rc={rc} {time.time() - t:.2f}s\n")
            f.write("--- stdout\n" + out + "\n--- stderr\n" + err)
        return rc, out, err

    # ------------------------------------------------------------------ environments
    def sim_libs(self):
        """The sim's library folders: the CUDA stand-ins, and its cuBLAS where built."""
        blas = os.path.join(self.simdir, "cublas")
        return [self.simdir] + ([blas] if os.path.isdir(blas) else [])

    def dev_env(self):
        """Environment for a program on the device under test: the real GPU, or the sim."""
        if self.sim:
            return {"LD_LIBRARY_PATH": join_path(*self.sim_libs(), os.environ.get("LD_LIBRARY_PATH"))}
        paths = [self.sim_extras()]
        lib = os.path.join(self.a.cuda_home or "/usr/local/cuda", "lib64")
        if os.path.exists(os.path.join(lib, "libcudart.so.13")):
            paths.append(lib)
        return {"LD_LIBRARY_PATH": join_path(os.environ.get("LD_LIBRARY_PATH"), *paths)}

    def sim_extras(self):
        """A folder with build/sim's libraries other than the CUDA stand-ins (libsimblas:
        real kernels, runs on a GPU too), so examples find them on the real driver."""
        d = os.path.join(self.w, "simextras")
        if not os.path.isdir(d):
            os.makedirs(d, exist_ok=True)
            for f in glob.glob(os.path.join(self.simdir, "*.so*")):
                b = os.path.basename(f)
                if not b.startswith(("libcuda.", "libcudart.")):
                    os.symlink(os.path.abspath(f), os.path.join(d, b))
        return d

    def sim_env(self, report=None):
        e = {"LD_LIBRARY_PATH": join_path(*self.sim_libs(), os.environ.get("LD_LIBRARY_PATH"))}
        if report:
            e["SIMCU_REPORT"] = report
        return e

    def shim_env(self, mode, report, base=None):
        e = dict(base or {})
        e["LD_PRELOAD"] = join_path(self.shim, os.environ.get("LD_PRELOAD"), sep=":")
        e["GRAPE_MODE"] = mode
        # one report per process (%p): the children a program starts (compilers, tools)
        # inherit LD_PRELOAD and would overwrite one shared file; load_report picks
        e["GRAPE_REPORT"] = report + ".%p"
        e.setdefault("GRAPE_LOG", "warn")
        return e

    def predict_gpu(self):
        """The name GRAPE_PREDICT_GPU gets: the GPU as nvidia-smi names it, the H200 on the sim."""
        name = self.env.get("gpu", "").split(",")[0].strip()
        return name if (name and not self.sim) else "H200"

    def have_shim(self):
        return os.path.exists(self.shim)

    def grape_commands(self):
        if not os.access(self.grape, os.X_OK):
            return set()
        try:
            out = subprocess.run([self.grape, "--help"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return set()
        return set(re.findall(r"^\s{2}([a-z][a-z0-9-]*)\s", out, re.M))

    def cmd_help(self, cmd):
        try:
            p = subprocess.run([self.grape, cmd, "--help"], capture_output=True, text=True, timeout=20)
            return p.stdout + p.stderr
        except (OSError, subprocess.SubprocessError):
            return ""

    def example(self, ex):
        p = os.path.join(self.exdir, ex)
        return p if os.access(p, os.X_OK) else None

    def torch_state(self):
        """None when torch runs kernels here, else why not."""
        if self.a.fake_workloads:  # tests: a stand-in for workloads.py, no torch needed
            return None
        if self.torch is None:
            rc, out, _ = self.run("torch_probe", [self.py, "-c", "import torch; print(torch.cuda.is_available())"],
                                  timeout=self.budget(90))
            if rc != 0:
                self.torch = "torch not available"
            elif out.strip() != "True":
                self.torch = "torch has no CUDA device here"
            else:
                self.torch = ""
        return self.torch or None

    # ------------------------------------------------------------------ 1. routes
    def check_routes(self):
        self.probe_summary()
        # the shim on the examples: every launch counted once, routes add up
        for ex in self.examples:
            exe = self.example(ex)
            if exe is None:
                self.add("routes", f"{ex} observe", "n/a", why=f"examples/{ex} {NA}")
                continue
            if not self.have_shim():
                self.add("routes", f"{ex} observe", "n/a", why=f"libgrape.so {NA}")
                continue
            rep = os.path.join(self.reports, f"routes_{ex}.json")
            simrep = os.path.join(self.reports, f"routes_{ex}_simcu.json")
            env = self.shim_env("observe", rep, self.sim_env(simrep) if self.sim else self.dev_env())
            rc, out, err = self.run(f"routes_{ex}", [exe] + self.ex_args(ex), env,
                                    timeout=self.budget(60))
            r = load_report(rep)
            if rc != 0 and self.plain_checksum(ex) is None:
                self.add("routes", f"{ex} observe", "error", why=f"{ex} fails without grape too", stderr=tail(err))
                continue
            if rc != 0 or r is None:
                self.add("routes", f"{ex} observe", "fail" if rc != 0 else "n/a",
                         why=f"rc={rc}" if rc != 0 else f"exit report {NA}", stderr=tail(err))
                continue
            launches = r.get("launches")
            byr = r.get("launches_by_route") or {}
            total = sum(v for v in byr.values() if isinstance(v, int))
            expect = None
            if self.sim:
                s = load_json(simrep)
                expect = s.get("kernels_executed") if s else None
            else:
                expect = self.sim_kernels(ex)
            ok = isinstance(launches, int) and total == launches and (expect is None or expect == launches)
            self.add("routes", f"{ex} observe", "pass" if ok else "fail", launches=launches, routes=compact(byr),
                     expected=expect, why="" if ok else "route counts do not add up, or launches != kernels executed")
        # the shim on PyTorch: launches vs the profiler's kernel count, per library
        why = self.torch_state()
        for sec in ROUTE_SECTIONS:
            name = f"torch {sec}"
            if why:
                self.add("routes", name, "skip", why=why)
                continue
            if not self.have_shim():
                self.add("routes", name, "n/a", why=f"libgrape.so {NA}")
                continue
            if self.left(30) < 15:
                self.add("routes", name, "skip", why="budget used up")
                continue
            rep = os.path.join(self.reports, f"routes_torch_{sec}.json")
            jl = os.path.join(self.reports, f"routes_torch_{sec}.jsonl")
            rc, out, err = self.run(f"routes_torch_{sec}", [self.py, self.wl(), "--routes", sec, "--out", jl],
                                    self.shim_env("observe", rep, self.dev_env()), timeout=self.budget(45, 20))
            res = last_jsonl(jl)
            r = load_report(rep)
            if not res or res.get("status") != "ok":
                self.add("routes", name, "error", why=(res or {}).get("why") or f"rc={rc}", stderr=tail(err))
                continue
            if r is None:
                self.add("routes", name, "n/a", profiler=res.get("profiler_kernels"), why=f"exit report {NA}")
                continue
            launches, byr = r.get("launches"), r.get("launches_by_route") or {}
            ok = launches == res["profiler_kernels"]
            self.add("routes", name, "pass" if ok else "fail", launches=launches, profiler=res["profiler_kernels"],
                     routes=compact(byr), top=res.get("top"),
                     why="" if ok else "shim launches != profiler kernels (missed route or double count)")

    def probe_summary(self):
        if self.sim:
            return
        summ = os.path.join(self.w, "probe_out", "summary.txt")
        st = self.env.get("probe", "not run")
        if os.path.exists(summ):
            with open(summ, errors="replace") as f:
                text = f.read()
            lines = [ln for ln in text.splitlines() if re.search(r"launch|route|param info|EXPECT", ln)][:12]
            self.add("routes", "shared probe", "info", probe=st, excerpt=lines)
        else:
            self.add("routes", "shared probe", "skip", why=st)

    def sim_kernels(self, ex):
        """kernels_executed of the example on the sim (the ground truth for the launch count)."""
        k = getattr(self, "_simk", {})
        self._simk = k
        if ex not in k:
            k[ex] = None
            exe = self.example(ex)
            if exe and os.path.exists(os.path.join(self.simdir, "libcuda.so.1")):
                rep = os.path.join(self.reports, f"sim_{ex}_simcu.json")
                rc, out, _ = self.run(f"sim_{ex}", [exe] + self.ex_args(ex), self.sim_env(rep),
                                      timeout=self.budget(60))
                s = load_json(rep)
                k[ex] = s.get("kernels_executed") if (s and rc == 0) else None
                self._simsum = getattr(self, "_simsum", {})
                self._simsum[ex] = checksum(out) if rc == 0 else None
        return k[ex]

    def ex_args(self, ex):
        """An example's arguments here: a few iterations; on the sim, whose CPU
        bodies compute every GEMM, prefill at its small sizes."""
        return ["--iters", str(self.iters_ex)] + (["--small"] if self.sim and ex == "prefill" else [])

    def plain_checksum(self, ex):
        """The example's checksum without grape on the device under test (None: it failed)."""
        if not hasattr(self, "_plain"):
            self._plain, self.plain_err = {}, {}
        if ex not in self._plain:
            base = self.sim_env() if self.sim else self.dev_env()
            rc, out, err = self.run(f"plain_{ex}", [self.example(ex)] + self.ex_args(ex), base,
                                    timeout=self.budget(60))
            self._plain[ex] = checksum(out) if rc == 0 else None
            self.plain_err[ex] = tail(err)
        return self._plain[ex]

    # ------------------------------------------------------------------ 2. correctness
    def check_correctness(self):
        for ex in self.examples:
            exe = self.example(ex)
            if exe is None:
                self.add("correctness", ex, "n/a", why=f"examples/{ex} {NA}")
                continue
            sums, info = {}, {}
            base = self.sim_env() if self.sim else self.dev_env()
            sums["plain"] = self.plain_checksum(ex)
            if sums["plain"] is None:  # the device or the program is broken, not grape
                self.add("correctness", ex, "error", why=f"{ex} fails without grape", stderr=self.plain_err.get(ex))
                continue
            for mode in ("observe", "graph"):
                if not self.have_shim():
                    sums[mode] = None
                    continue
                rep = os.path.join(self.reports, f"corr_{ex}_{mode}.json")
                env = self.shim_env(mode, rep, base)
                if mode == "graph":  # the shim's own prediction of the paths it saw, when it has one
                    env["GRAPE_PREDICT_GPU"] = self.predict_gpu()
                rc, out, err = self.run(f"corr_{ex}_{mode}", [exe] + self.ex_args(ex),
                                        env, timeout=self.budget(60))
                sums[mode] = checksum(out) if rc == 0 else f"rc={rc}"
                if mode == "graph":
                    info = graph_stats(load_report(rep))
            if not self.sim:
                self.sim_kernels(ex)
                sums["sim"] = getattr(self, "_simsum", {}).get(ex)
            got = {k: v for k, v in sums.items() if v is not None}
            ok = len(set(got.values())) == 1 and all(v and not v.startswith("rc=") for v in got.values())
            why = "" if ok else "checksums differ or a run failed"
            if ok and not self.have_shim():
                why = f"libgrape.so {NA}: plain run only"
            elif ok and not info.get("graph_mode"):
                why = "graph mode " + NA + " (ran as observe)" if self.have_shim() else why
            self.add("correctness", ex, "pass" if ok else "fail", checksums=sums, why=why, **info)
        # the CLI's own door: grape run
        if "run" in self.commands and self.example("dynrnn"):
            rep = os.path.join(self.reports, "grape_run_dynrnn.json")
            dev = ["--device", "sim"] if self.sim else ["--device", "cuda"]
            rc, out, err = self.run("grape_run_dynrnn", [self.grape, "run", "--mode", "observe", "--report", rep] + dev
                                    + ["--", self.example("dynrnn"), "--iters", str(self.iters_ex)],
                                    self.sim_env() if self.sim else self.dev_env(), timeout=self.budget(60))
            r = load_report(rep)
            want = self.plain_checksum("dynrnn")
            ok = rc == 0 and checksum(out) == want and r is not None
            st = "pass" if ok else ("fail" if want else "error")
            self.add("correctness", "grape run dynrnn", st, rc=rc, report=r is not None,
                     why="" if ok else ("grape run failed, changed the checksum or wrote no report" if want
                                        else "dynrnn fails without grape"))
        else:
            self.add("correctness", "grape run dynrnn", "n/a", why=f"grape run {NA}")

    # ------------------------------------------------------------------ 3. workloads
    def wl(self):
        if self.a.fake_workloads:
            return self.a.fake_workloads
        return os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py")

    def check_workloads(self):
        why = self.torch_state()
        if why:
            for w in WORKLOADS:
                self.add("workloads", w, "skip", why=why)
            return
        it = ["--iters", "10", "--warmup", "3"] if self.a.quick else ["--iters", "30", "--warmup", "5"]
        res = {}  # (workload, variant) -> record

        def collect(path, label):
            for rec in read_jsonl(path):
                if rec.get("kind") == "workload" and rec.get("workload"):
                    res[(rec["workload"], label or rec["variant"])] = rec

        # eager + torch's own CUDA graphs, no shim
        jl = os.path.join(self.reports, "wl_eager.jsonl")
        t = self.budget(120, 150)
        self.run("wl_eager", [self.py, self.wl(), "--variants", "eager,cudagraph", "--repeat-eager", "--out", jl,
                              "--deadline", str(time.time() + t - 5)] + it, self.dev_env(), timeout=t)
        collect(jl, "")
        # grape graph mode: one process per workload, so each has its own exit report
        reports = {}
        for w in WORKLOADS:
            if not self.have_shim():
                break
            t = self.budget(40, 90)
            if t < 15:
                break
            jl = os.path.join(self.reports, f"wl_grape_{w}.jsonl")
            rep = os.path.join(self.reports, f"wl_grape_{w}.json")
            env = self.shim_env("graph", rep, self.dev_env())
            env["GRAPE_TRACE"] = os.path.join(self.reports, f"wl_{w}.grape")
            env["GRAPE_PREDICT_GPU"] = self.predict_gpu()
            self.run(f"wl_grape_{w}", [self.py, self.wl(), "--workloads", w, "--variants", "eager", "--label",
                                       "grape", "--out", jl, "--deadline", str(time.time() + t - 5)] + it,
                     env, timeout=t)
            collect(jl, "grape")
            reports[w] = load_report(rep)
        # torch.compile(mode="reduce-overhead"): slow to compile, so last and budgeted
        t = self.budget(150, 80)  # keep time for costs and predictor
        if t >= 40:
            jl = os.path.join(self.reports, "wl_compile.jsonl")
            self.run("wl_compile", [self.py, self.wl(), "--workloads", "mlp,lstm,gpt,moe", "--variants", "compile",
                                    "--out", jl, "--deadline", str(time.time() + t - 5)] + it, self.dev_env(),
                     timeout=t)
            collect(jl, "")
        for w in WORKLOADS:
            eager = res.get((w, "eager"))
            if not eager or eager.get("status") != "ok":
                self.add("workloads", f"{w} eager", "error", why=(eager or {}).get("why", "no result"))
                continue
            det = eager.get("digest_repeat") in (None, eager["digest"])
            self.add("workloads", f"{w} eager", "info", median_ms=eager["median_ms"], digest=eager["digest"],
                     reproducible=det if "digest_repeat" in eager else None)
            for v in ("grape", "cudagraph", "compile"):
                r = res.get((w, v))
                name = f"{w} {v}"
                if v == "grape" and not self.have_shim():
                    self.add("workloads", name, "n/a", why=f"libgrape.so {NA}")
                    continue
                if r is None:
                    self.add("workloads", name, "skip", why="not run (budget)")
                    continue
                if r.get("status") != "ok":
                    self.add("workloads", name, r.get("status", "error"), why=r.get("why", ""))
                    continue
                same = r["digest"] == eager["digest"]
                kw = dict(median_ms=r["median_ms"], speedup=round(eager["median_ms"] / r["median_ms"], 3),
                          bit_identical=same)
                if v == "grape":
                    g = graph_stats(reports.get(w))
                    kw.update(g)
                    # the shim's predicted kernel time per iteration (whole process / iterations)
                    n = (r.get("iters") or 0) + (5 if not self.a.quick else 3)
                    for k in ("predicted_eager_ms", "predicted_graph_ms"):
                        if kw.get(k) is not None and n:
                            kw[k.replace("_ms", "_ms_per_iter")] = round(kw.pop(k) / n, 4)
                    # grape must be bit-identical; the others are reported only
                    st = "pass" if same else ("fail" if det else "info")
                    if not same and not det:
                        kw["why"] = "eager itself is not bit-reproducible here: no verdict"
                    if same and not g.get("graph_mode"):
                        kw["why"] = "graph mode " + NA + " (ran as observe)"
                else:
                    st = "info"
                self.add("workloads", name, st, **kw)

    # ------------------------------------------------------------------ 4. costs
    def check_costs(self):
        nvcc = self.a.nvcc
        if self.sim and not os.path.exists(os.path.join(self.simdir, "libcuda.so.1")):
            self.add("costs", "build", "n/a", why=f"sim/libcuda.so.1 {NA}")
            return
        if not nvcc:
            self.add("costs", "build", "skip", why="no nvcc")
            return
        here = os.path.dirname(os.path.abspath(__file__))
        exe = os.path.join(self.w, "costs")
        cuda = self.a.cuda_home or "/usr/local/cuda"
        cmd = [nvcc, "-O2", "-arch=sm_90", "-cudart", "shared", "-o", exe, os.path.join(here, "costs.cu"),
               "-L" + os.path.join(cuda, "lib64", "stubs"), "-lcuda"]
        cmd += ["-Xlinker", "--export-dynamic"]  # the sim binds the kernel's CPU body by its exported name
        rc, out, err = self.run("costs_build", cmd, timeout=self.budget(120, 60))
        if rc != 0:
            self.add("costs", "build", "error", why=tail(err, 3))
            return
        n = "200" if self.sim else ("20000" if not self.a.quick else "5000")
        args = [exe, "--n", n] + (["--sim"] if self.sim else [])
        base = self.sim_env() if self.sim else self.dev_env()
        variants = [("plain", base)]
        if self.have_shim():
            for mode in ("off", "observe", "graph"):
                variants.append((mode, self.shim_env(mode, os.path.join(self.reports, f"costs_{mode}.json"), base)))
        got = {}
        for label, env in variants:
            t = self.budget(40, 40)
            if t < 5:
                break
            rc, out, err = self.run(f"costs_{label}", args + (["--only", "launch"] if label != "plain" else []),
                                    env, timeout=t)
            recs = []
            for ln in out.splitlines():
                try:
                    recs.append(json.loads(ln))
                except ValueError:
                    pass
            if not any("ns_per_call" in r for r in recs):
                self.add("costs", f"run {label}", "error", rc=rc, why=tail(err, 3))
                continue
            got[label] = {r["name"]: r for r in recs if "name" in r}
        plain = got.get("plain", {})
        for name, r in plain.items():
            if "error" in r:  # the device (the sim, say) does not serve what this needs
                self.add("costs", name, "skip", why=r["error"][:200])
            else:
                self.add("costs", name, "info", **{k: v for k, v in r.items() if k != "name"})
        for mode in ("off", "observe", "graph"):
            if mode not in got:
                if not self.have_shim():
                    self.add("costs", f"shim {mode} per launch", "n/a", why=f"libgrape.so {NA}")
                continue
            for key in ("launch_driver", "launch_runtime"):
                a, b = plain.get(key), got[mode].get(key)
                if a and b and "ns_per_call" in a and "ns_per_call" in b:
                    self.add("costs", f"shim {mode} {key}", "info", ns_per_call=b["ns_per_call"],
                             added_ns=round(b["ns_per_call"] - a["ns_per_call"], 1))

    # ------------------------------------------------------------------ 5. concurrency
    def concurrency_run(self, label, exe, args, env, budget):
        """Runs concurrency.cu's program; returns ({set: record}, error or None)."""
        rc, out, err = self.run(label, [exe] + args, env, timeout=budget)
        recs = {}
        for ln in out.splitlines():
            try:
                r = json.loads(ln)
            except ValueError:
                continue
            if isinstance(r, dict) and "set" in r:
                recs[r["set"]] = r
            elif isinstance(r, dict) and "error" in r:
                return recs, r["error"]
        if not recs:
            return recs, f"rc={rc}: " + (tail(err, 3) or "no output")
        return recs, None

    def showcase_modes(self):
        """The concurrency showcase (examples/prefill) in graph mode as chain graphs
        (GRAPE_CONCURRENCY=observe), safe and go: wall time (on the sim: simulated end),
        checksums (the chain's must equal every mode's), plans built/kept/reverted, go's
        SM-target plans, its numerics check and the plans' host cost, from each report."""
        exe = self.example("prefill")
        if exe is None:
            self.add("concurrency", "showcase", "n/a", why=f"examples/prefill {NA}")
            return
        if not self.have_shim():
            self.add("concurrency", "showcase", "n/a", why="no shim")
            return
        args = ["--iters", "8" if self.a.quick else "30"] + (["--small"] if self.sim else [])
        base = self.sim_env() if self.sim else self.dev_env()
        sums, ends = {}, {}
        for label, conc in (("chain", "observe"), ("safe", "safe"), ("go", "go")):
            rep = os.path.join(self.reports, f"showcase_{label}.json")
            env = self.shim_env("graph", rep, base)
            env["GRAPE_CONCURRENCY"] = conc
            t0 = time.time()
            rc, out, err = self.run(f"showcase_{label}", [exe] + args, env, timeout=self.budget(120, 20))
            wall = time.time() - t0
            r = load_report(rep)
            c = (r or {}).get("concurrency") or {}
            sums[label] = checksum(out) if rc == 0 else None
            ends[label] = wall
            kw = {k: c.get(k) for k in ("plans_built", "plans_kept", "plans_reverted", "plan_launches",
                                        "go_plans_built", "go_plans_kept", "go_plans_reverted",
                                        "targets_applied", "numerics_checks", "numerics_max_rel_diff",
                                        "plan_host_ns", "plan_host_launches", "plans_dropped_host")
                  if k in c}
            if rc != 0:
                self.add("concurrency", f"showcase {label}", "error", rc=rc, why=tail(err, 3))
            else:
                self.add("concurrency", f"showcase {label}", "info", wall_s=round(wall, 3),
                         vs_chain=round(ends["chain"] / wall, 3) if ends.get("chain") else None,
                         checksum=sums[label], **kw)
        if sums.get("chain") is not None:
            same = all(v == sums["chain"] for v in sums.values() if v is not None)
            self.add("concurrency", "showcase checksums", "pass" if same else "fail",
                     why="chain, safe and go agree" if same else f"checksums differ: {sums}")

    def check_concurrency(self):
        self.showcase_modes()
        self.check_concurrency_sets()

    def check_concurrency_sets(self):
        """Independent cuBLAS GEMMs (concurrency.cu): sequential, on streams, as a chain graph,
        as graph branches, with the SM-count target. Every variant's outputs must be the same
        bits (the inputs make every sum exact); the times are measurements. On a GPU the same
        sets also run on the simulated device (SIMCU_TIME_ONLY=1): the model's prediction
        beside each measurement, and one calibration row."""
        nvcc = self.a.nvcc
        if not nvcc:
            self.add("concurrency", "build", "skip", why="no nvcc")
            return
        sim_blas = os.path.join(self.simdir, "cublas")
        have_sim_blas = os.path.exists(os.path.join(sim_blas, "libcublasLt.so.13"))
        if self.sim and not have_sim_blas:
            self.add("concurrency", "build", "n/a", why=f"the sim's cuBLAS (build/sim/cublas) {NA}")
            return
        here = os.path.dirname(os.path.abspath(__file__))
        exe = os.path.join(self.w, "concurrency")
        lib64 = os.path.join(self.a.cuda_home or "/usr/local/cuda", "lib64")
        # NVIDIA's libcublasLt to link against; the sim's (same versioned names) where there is none
        libdir = lib64 if os.path.exists(os.path.join(lib64, "libcublasLt.so")) else sim_blas
        cmd = [nvcc, "-O2", "-arch=sm_90", "-cudart", "shared", "-o", exe,
               os.path.join(here, "concurrency.cu"), "-L" + libdir, "-lcublasLt",
               "-Xlinker", "--export-dynamic"]  # kit_busy's CPU body, for the sim
        rc, out, err = self.run("concurrency_build", cmd, timeout=self.budget(120, 40))
        if rc != 0:
            self.add("concurrency", "build", "error", why=tail(err, 3))
            return
        sizes = "tiny" if self.sim else ("quick" if self.a.quick else "full")
        args = ["--sizes", sizes, "--reps", "3" if self.sim else ("10" if self.a.quick else "20")]
        sim_env = self.sim_env()
        env = sim_env if self.sim else self.dev_env()
        recs, error = self.concurrency_run("concurrency", exe, args, env, self.budget(150, 30))
        if error and not recs:
            self.add("concurrency", "run", "error", why=error[:200])
            return
        if error:
            self.add("concurrency", "run", "error", why="stopped early: " + error[:200])
        pred = {}
        if not self.sim and have_sim_blas and os.path.exists(os.path.join(self.simdir, "libcuda.so.1")):
            # the model's prediction of the same sets: times only, no data
            env = dict(sim_env, SIMCU_TIME_ONLY="1")
            pred, perr = self.concurrency_run("concurrency_sim", exe, args + ["--no-data"], env,
                                              self.budget(60, 20))
            if perr:
                self.add("concurrency", "sim prediction", "error", why=perr[:200])
        errs, signs = [], []
        for name, r in recs.items():
            v = r.get("variants", {})
            med = {k: v[k]["median_us"] for k in CONC_VARIANTS if k in v}
            digests = {k: v[k]["digest"] for k in CONC_VARIANTS if k in v}
            kw = {f"{k}_us": t for k, t in med.items()}
            kw["solo_us"] = [g["solo_us"] for g in r.get("gemms", [])]
            kw["gemms"] = [[g["m"], g["n"], g["k"]] for g in r.get("gemms", [])]
            kw["algos"] = [{"tile": g["tile"], "splitk": g["splitk"], "custom": g["custom"],
                            "waves": g["waves"]} for g in r.get("gemms", [])]
            if med.get("branches"):
                kw["speedup_branches"] = round(med["seq"] / med["branches"], 3)
            if med.get("streams"):
                kw["speedup_streams"] = round(med["seq"] / med["streams"], 3)
            p = pred.get(name, {}).get("variants", {})
            if p:
                kw["sim_us"] = {k: p[k]["median_us"] for k in CONC_VARIANTS if k in p}
                for k in ("seq", "branches"):
                    if k in p and med.get(k):
                        errs.append(abs(p[k]["median_us"] - med[k]) / med[k])
                if "branches" in p and med.get("branches"):
                    signs.append((p["branches"]["median_us"] < p["seq"]["median_us"]) ==
                                 (med["branches"] < med["seq"]))
            if len(set(digests.values())) > 1:
                self.add("concurrency", name, "fail", why="outputs differ between variants: " +
                         ", ".join(f"{k} {d}" for k, d in digests.items()), **kw)
            else:
                self.add("concurrency", name, "pass", why="same outputs in every variant", **kw)
        if errs:
            self.add("concurrency", "sim calibration", "info", sets=len(signs),
                     median_abs_err_pct=round(100 * statistics.median(errs), 1),
                     sign_agreement_pct=round(100 * sum(signs) / len(signs), 1) if signs else None,
                     why="sim (SIMCU_TIME_ONLY) against this device, seq and branches medians")

    # ------------------------------------------------------------------ 6. predictor
    def check_predictor(self):
        have_predict = "predict" in self.commands
        ops_dir = os.path.join(self.w, "ops")
        os.makedirs(ops_dir, exist_ok=True)
        why = self.torch_state()
        if why:
            if self.sim:
                # the predictor's plumbing on made-up rows: proves the CSV round trip only
                write_synthetic_ops(ops_dir)
                self.add("predictor", "measure ops", "skip", why=why + "; synthetic rows for the dry run")
            else:
                self.add("predictor", "measure ops", "skip", why=why)
        else:
            t = self.budget(90, 25)
            jl = os.path.join(self.reports, "opbench.jsonl")
            per = "10" if self.a.quick else "30"
            self.run("opbench", [self.py, self.wl(), "--opbench", ops_dir, "--per-op", per, "--out", jl,
                                 "--deadline", str(time.time() + t - 5)], self.dev_env(), timeout=t)
            r = last_jsonl(jl) or {}
            self.add("predictor", "measure ops", "info" if r.get("status") == "ok" else "error",
                     rows=r.get("rows"), why=r.get("why", ""))
        if not have_predict:
            self.add("predictor", "grape predict", "n/a", why=f"grape predict {NA}")
        elif not glob.glob(os.path.join(ops_dir, "*.csv")):
            self.add("predictor", "grape predict", "skip", why="no measured ops to predict")
        else:
            self.predict_csvs("ops", sorted(glob.glob(os.path.join(ops_dir, "*.csv"))))
        self.sweep(ops_dir, have_predict)
        # grape's own timings of traced paths (grape replay --time) vs its predictions
        traces = sorted(glob.glob(os.path.join(self.reports, "wl_*.grape")))
        if "replay" not in self.commands or "--time" not in self.cmd_help("replay"):
            self.add("predictor", "replay --time", "n/a", why=f"grape replay --time {NA}")
        elif not traces:
            self.add("predictor", "replay --time", "n/a", why=f"no trace written (GRAPE_TRACE {NA}?)")
        else:
            outs = []
            for tr in traces:
                o = tr[:-6] + ".timing.csv"
                rc, out, err = self.run("replay_" + os.path.basename(tr), [self.grape, "replay", "--time", "-o", o, tr],
                                        self.sim_env() if self.sim else self.dev_env(), timeout=self.budget(60, 10))
                if rc == 0 and os.path.exists(o):
                    outs.append(o)
                    shutil.copy(o, ops_dir)
                else:
                    self.add("predictor", "replay " + os.path.basename(tr), "error", rc=rc, why=tail(err, 3))
            if outs and have_predict:
                self.predict_csvs("replay", outs)

    def sweep(self, ops_dir, have_predict):
        """The loop closed: a sweep of single ops of every class, from the harness's floor to
        beyond the predictor's training range, timed as ops (NeuSight's method: rows with the
        harness) and as kernels (the profiler's, and grape replay --time of the sweep's own
        trace: rows without), written where grape train takes them as this GPU's data
        (ops/sweep/, in ops.tar.gz; bench/gpu/README.md says how to retrain), and predicted."""
        sweep_dir = os.path.join(ops_dir, "sweep")
        why = self.torch_state()
        if why:
            self.add("predictor", "sweep", "skip", why=why)
            return
        if "--sweep" not in self.wl_help():
            self.add("predictor", "sweep", "n/a", why=f"workloads.py --sweep {NA}")
            return
        if self.left(20) < 30:
            self.add("predictor", "sweep", "skip", why="budget used up")
            return
        t = self.budget(120, 20)
        jl = os.path.join(self.reports, "sweep.jsonl")
        trace = os.path.join(self.reports, "sweep.grape")
        env = self.dev_env()
        if self.have_shim():  # observe mode: the ops pass through; its trace is replayed below
            env = self.shim_env("observe", os.path.join(self.reports, "sweep.json"), env)
            env["GRAPE_TRACE"] = trace
        self.run("sweep", [self.py, self.wl(), "--sweep", sweep_dir, "--out", jl,
                           "--deadline", str(time.time() + t - 5)], env, timeout=t)
        r = last_jsonl(jl) or {}
        self.add("predictor", "sweep", "info" if r.get("status") == "ok" else "error", rows=r.get("rows"),
                 kernel_rows=r.get("kernel_rows"), why=r.get("why", ""))
        files = sorted(glob.glob(os.path.join(sweep_dir, "*.csv")))
        traces = glob.glob(trace + "*")
        if traces and "replay" in self.commands and "--time" in self.cmd_help("replay"):
            o = os.path.join(sweep_dir, "replay.csv.txt")  # renamed below: only a good file is a .csv
            rc, out, err = self.run("replay_sweep", [self.grape, "replay", "--all", "--time", "-o", o, traces[0]],
                                    self.dev_env(), timeout=self.budget(60, 10))
            if rc == 0 and os.path.exists(o):
                os.replace(o, o[:-4])
                files.append(o[:-4])
            else:
                self.add("predictor", "sweep replay --time", "error", rc=rc, why=tail(err, 3))
        if have_predict and files:
            self.predict_csvs("sweep", files, os.path.join(ops_dir, "sweep-pred"))

    def wl_help(self):
        rc, out, err = self.run("workloads_help", [self.py, self.wl(), "--help"], timeout=30)
        return out + err

    def predict_methods(self):
        """The models `grape predict --method` offers (first = the default), or [None]."""
        m = re.search(r"^\s+--method\s+\S+\s+(.*)$", self.cmd_help("predict"), re.M)
        names = [w for w in re.findall(r"[a-z][a-z0-9_-]*", m.group(1)) if w not in ("default", "or", "and")] if m else []
        return names or [None]

    def predict_csvs(self, label, files, outdir=None):
        """grape predict on measured CSVs: MAPE and median APE per class (and regime, where the
        CSV names it), for each model; the predictions go beside each file, or into outdir."""
        errs = {}  # class -> method -> [APE]
        methods = self.predict_methods()
        for f in files:
            if ".pred" in f:
                continue
            for meth in methods:
                o = f[:-4] + (f".{meth}" if meth else "") + ".pred.csv"
                if outdir:
                    os.makedirs(outdir, exist_ok=True)
                    o = os.path.join(outdir, os.path.basename(o))
                cmd = [self.grape, "predict", "--csv", f, "-o", o] + (["--method", meth] if meth else [])
                rc, out, err = self.run(f"predict_{meth}_" + os.path.basename(f), cmd, timeout=self.budget(30, 5))
                if rc != 0 or not os.path.exists(o):
                    self.add("predictor", f"predict {meth or ''} {os.path.basename(f)}", "error", rc=rc, why=tail(err, 3))
                    continue
                with open(o, newline="") as fh:
                    for row in csv.DictReader(fh):
                        try:
                            # NeuSight's Latency is an op's time through its harness: grape's
                            # harness_ms where it has one; time_ms (grape replay, the profiler)
                            # is a kernel's own time: predicted_ms
                            harness = row.get("Latency") not in (None, "")
                            m = float(row["Latency"] if harness else row["time_ms"])
                            p = float(row["harness_ms"] if harness and row.get("harness_ms") else row["predicted_ms"])
                        except (KeyError, TypeError, ValueError):  # no prediction for this row
                            continue
                        if m > 0:
                            cls = op_class(row.get("OPName") or row.get("op") or "?")
                            if row.get("regime"):
                                cls += " " + row["regime"]
                            errs.setdefault(cls, {}).setdefault(meth, []).append(abs(p - m) / m)
        for c, by in sorted(errs.items()):
            kw = {}
            for meth in methods:
                e = by.get(meth)
                if e:
                    kw[f"mape_{meth or 'pct'}"] = round(100 * statistics.mean(e), 1)
            first = by.get(methods[0]) or []
            kw["n"] = len(first)
            if first:
                kw["median_ape"] = round(100 * statistics.median(first), 1)
            self.add("predictor", f"{label} MAPE% {c}", "info", **kw)

    # ------------------------------------------------------------------ report
    def finish(self):
        gpu = self.env.get("gpu", "").split(",")[0].strip()
        tag = "sim" if self.sim else (re.sub(r"[^a-z0-9]+", "-", gpu.lower().replace("nvidia", "")).strip("-") or "gpu")
        stem = f"{time.strftime('%Y-%m-%d', time.gmtime())}-{tag}"
        doc = {"kit": "grape bench/gpu", "stem": stem, "env": self.env, "features": self.feature_list(),
               "rows": self.rows, "counts": self.counts()}
        with open(os.path.join(self.a.out, stem + ".json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        md = self.markdown(stem)
        with open(os.path.join(self.a.out, stem + ".md"), "w") as f:
            f.write(md)
        ops = os.path.join(self.w, "ops")
        if glob.glob(os.path.join(ops, "*.csv")) and not self.sim:
            subprocess.run(["tar", "czf", os.path.join(self.a.out, "ops.tar.gz"), "-C", self.w, "ops"])
        table = self.table()
        with open(os.path.join(self.w, "table.txt"), "w") as f:  # run.sh prints it last
            f.write(table + "\n")
        # a dry run also fails when the kit itself could not measure: that is how it rots
        bad = ("fail", "error") if self.sim else ("fail",)
        return 1 if any(r["status"] in bad for r in self.rows) else 0

    def feature_list(self):
        return {"grape_commands": sorted(self.commands), "libgrape.so": self.have_shim(),
                "sim": os.path.exists(os.path.join(self.simdir, "libcuda.so.1")),
                "examples": [e for e in self.examples if self.example(e)], "torch": self.torch or "ok"}

    def counts(self):
        c = {}
        for r in self.rows:
            c[r["status"]] = c.get(r["status"], 0) + 1
        return c

    def table(self):
        lines = [f"{'check':<11} {'name':<28} {'status':<6} result"]
        for r in self.rows:
            lines.append(f"{r['check']:<11} {r['name']:<28} {r['status']:<6} {headline(r)}"[:150])
        lines.append("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts().items())))
        return "\n".join(lines)

    def markdown(self, stem):
        e = self.env
        out = [f"# GPU kit run {stem}", "",
               f"- machine: {e.get('gpu', '?')}; {e.get('os', '?')}; {e.get('glibc', '?')}; {e.get('host', '?')}",
               f"- toolchain: nvcc {e.get('nvcc', '?')}; python {e.get('python', '?')}; torch {e.get('torch', '?')}",
               f"- grape build: commit {e.get('commit', '?')}, {e.get('build_source', '?')} ({e.get('build_dir', '?')}); "
               f"commands: {', '.join(sorted(self.commands)) or 'none'}; libgrape.so: {self.have_shim()}",
               "- headers: " + ", ".join(f"{k[7:]}={'yes' if v != 'missing' else 'no'}"
                                          for k, v in e.items() if k.startswith("header_")),
               "- totals: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts().items())), ""]
        for ch in CHECKS:
            rows = [r for r in self.rows if r["check"] == ch]
            if not rows:
                continue
            out += [f"## {ch}", "", "| name | status | result |", "|---|---|---|"]
            for r in rows:
                out.append(f"| {r['name']} | {r['status']} | {headline(r, 400).replace('|', '/')} |")
            out.append("")
        return "\n".join(out)


# ---------------------------------------------------------------------- helpers
def safe(s):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)


def join_path(*parts, sep=":"):
    return sep.join(p for p in parts if p)


def read_env(path):
    env = {}
    try:
        for ln in open(path, errors="replace"):
            if "=" in ln:
                k, v = ln.rstrip("\n").split("=", 1)
                env[k] = v
    except OSError:
        pass
    return env


def load_json(path):
    """The JSON object in path; a report with %p in its name may carry a pid suffix."""
    cands = [path] + sorted(glob.glob(path + ".*"))
    for p in cands:
        try:
            with open(p) as f:
                return json.load(f)
        except (OSError, ValueError):
            continue
    return None


def load_report(path):
    """The exit report of the process that launched most (path, or path.<pid> for each process)."""
    best = None
    for p in [path] + sorted(glob.glob(path + ".*")):
        try:
            with open(p) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and (best is None or (r.get("launches") or 0) > (best.get("launches") or 0)):
            best = r
    return best


def read_jsonl(path):
    out = []
    try:
        for ln in open(path):
            try:
                out.append(json.loads(ln))
            except ValueError:
                pass
    except OSError:
        pass
    return out


def last_jsonl(path):
    r = read_jsonl(path)
    return r[-1] if r else None


def checksum(out):
    m = re.findall(r"^checksum\s+([0-9a-fA-Fx]+)\s*$", out or "", re.M)
    return m[-1].lower() if m else None


def tail(s, n=2):
    return " / ".join((s or "").strip().splitlines()[-n:])[:300]


def compact(d):
    return ",".join(f"{k}:{v}" for k, v in sorted(d.items())) if isinstance(d, dict) else str(d)


def find_num(d, *names):
    """First numeric field with one of these names, anywhere in a report (fields may nest)."""
    if not isinstance(d, dict):
        return None
    for n in names:
        if isinstance(d.get(n), (int, float)):
            return d[n]
    for v in d.values():
        if isinstance(v, dict):
            r = find_num(v, *names)
            if r is not None:
                return r
    return None


def graph_stats(r):
    """Graph-mode numbers of an exit report, by the names ARCHITECTURE.md section 3 lists."""
    if not r:
        return {}
    hits = find_num(r, "hits", "graph_hits", "cache_hits")
    misses = find_num(r, "misses", "graph_misses", "cache_misses")
    upd = find_num(r, "node_updates", "param_updates", "exec_node_param_updates")
    built = find_num(r, "graphs_built", "graphs_instantiated")
    regions = find_num(r, "regions")
    out = {"graph_mode": hits is not None and r.get("mode") == "graph"}
    if hits is not None:
        looked = hits + (misses or 0)
        out["hit_rate"] = round(hits / looked, 3) if looked else None
        out["updates_per_hit"] = round(upd / hits, 2) if (upd is not None and hits) else None
        out["graphs_built"] = built
    out["regions"] = regions
    p = r.get("predicted")
    if isinstance(p, dict):  # GRAPE_PREDICT_GPU: the shim's predicted time of all paths
        out["predicted_eager_ms"] = round(p.get("total_eager_ms") or 0, 4)
        out["predicted_graph_ms"] = round(p.get("total_graph_ms") or 0, 4)
    calls = find_num(r, "driver_launch_calls", "launch_calls")
    if calls is not None:
        out["launch_calls"] = calls
    out["launches"] = r.get("launches")
    return out


def op_class(op):
    return {"bmm": "BMM", "linear": "Linear", "gemm": "GEMM", "softmax": "Softmax", "ln": "LayerNorm",
            "layernorm": "LayerNorm", "conv": "Conv", "?": "kernel", "": "kernel"}.get(op, "EW")


def write_synthetic_ops(d):
    rows = [("bmm", 0.05, 4, 1, 6, 256, 6, 27, 21, 390), ("bmm", 0.2, 8, 8, 16, 256, 16, 512, 512, 512)]
    with open(os.path.join(d, "bmm.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "Kernel Name", "Warps per SM",
                    "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x", "Block y", "Block z", "CUDA Version",
                    "Kernels", "B", "M", "N", "K"])
        for op, lat, gx, gy, gz, bx, B, M, N, K in rows:
            w.writerow([op, lat, "NVIDIA H200", "p2.11.0", "91000", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32",
                        1.0, 0.1, gx, gy, gz, bx, 1, 1, "cu130", ";sm90_xmma_gemm", B, M, N, K])


def headline(r, width=110):
    skip = {"check", "name", "status", "why", "excerpt", "top", "stderr"}
    parts = []
    for k, v in r.items():
        if k in skip or v is None or v == "":
            continue
        parts.append(f"{k}={compact(v) if isinstance(v, dict) else v}")
    s = " ".join(parts)
    if r.get("why"):
        s += f" ({r['why']})"
    if r.get("excerpt"):
        s += " " + " / ".join(x.strip() for x in r["excerpt"])
    return s[:width]


def main():
    p = argparse.ArgumentParser(description="grape GPU kit checks (called by run.sh)")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--deadline", type=float, required=True)
    p.add_argument("--sim", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="")
    p.add_argument("--skip", default="")
    p.add_argument("--nvcc", default="")
    p.add_argument("--cuda-home", default="")
    p.add_argument("--fake-workloads", default="", help="tests only: a stand-in for workloads.py")
    a = p.parse_args()
    kit = Kit(a)
    only = set(filter(None, a.only.split(",")))
    skip = set(filter(None, a.skip.split(",")))
    for ch in CHECKS:
        if (only and ch not in only) or ch in skip:
            kit.add(ch, "-", "skip", why="--only/--skip")
            continue
        if kit.left() < 10:
            kit.add(ch, "-", "skip", why="budget used up")
            continue
        print(f"== check {ch} ({int(kit.left())}s left)", flush=True)
        try:
            getattr(kit, "check_" + ch)()
        except Exception as e:  # a broken check must not lose the others' results
            import traceback
            traceback.print_exc()
            kit.add(ch, "-", "error", why=f"{type(e).__name__}: {e}")
    return kit.finish()


if __name__ == "__main__":
    sys.exit(main())
