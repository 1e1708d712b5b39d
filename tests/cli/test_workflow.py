#!/usr/bin/env python3
"""The user's workflow with `grape run` and `grape report` on the simulated
device: the reports of several processes, output names, never overwriting,
interrupts, multi-rank launchers (torchrun, mpirun), merging a job's reports,
the kernel table, bad options and JSON output for any bytes.

usage: test_workflow.py CASE --grape GRAPE --job JOB --job-mpi JOB_MPI|- --preload P --simdir D
                        [--decode DECODE|-]
Each case prints what it checked; a failure exits with the reason."""
import argparse
import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def fail(msg, p=None):
    if p is not None:
        msg += f"\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    sys.exit("FAIL: " + msg)


def skip(why):
    print("skipped:", why)
    sys.exit(77)


def sanitizer_preload(a):
    return ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))


def base_env(a, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPE_", "SIMCU_"))}
    for k in ("RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        env.pop(k, None)
    env["ASAN_OPTIONS"] = "detect_leaks=0"
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    san = sanitizer_preload(a)
    if san:
        env["LD_PRELOAD"] = san
    else:
        env.pop("LD_PRELOAD", None)
    env.update(extra or {})
    return env


def grape(a, args, env=None, cwd=None, timeout=100):
    return subprocess.run([a.grape] + args, capture_output=True, text=True, timeout=timeout,
                          env=base_env(a, env), cwd=cwd)


def run(a, args, **kw):
    return grape(a, ["run", "--device", "sim"] + args, **kw)


def preloaded(a, cmd, env, **kw):
    """The job under LD_PRELOAD, as a launcher without grape run starts it."""
    e = base_env(a, env)
    e["LD_PRELOAD"] = a.preload
    e["LD_LIBRARY_PATH"] = a.simdir + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=100, env=e, **kw)


def launches(p):
    m = re.search(r"mode \w+: (\d+) kernel launches .*?(?: in (\d+) processes)?\n", p.stderr)
    if not m:
        fail("no summary line", p)
    return int(m.group(1)), int(m.group(2) or 1)


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))   # strict UTF-8, as a JSON reader must


def case_processes(a):
    """The summary covers exactly this run's processes: a shell that exits last
    does not replace its children's report, and an earlier run's reports in the
    same folder are not added."""
    with tempfile.TemporaryDirectory() as d:
        cmd = ["--", "bash", "-c", f"{a.job} 3 & {a.job} 5 & wait"]
        p = run(a, ["--report", os.path.join(d, "x.json")] + cmd)
        if p.returncode != 0 or launches(p) != (16, 3):
            fail(f"want 16 launches in 3 processes, got {launches(p)}", p)
        files = sorted(os.listdir(d))
        if files != ["x.1.json", "x.2.json", "x.json"]:
            fail(f"one report per process, none replaced: {files}", p)
        if sum(load(os.path.join(d, f))["launches"] for f in files) != 16:
            fail("the reports do not add up to the summary", p)
        for f in files:
            if f"grape: report: {os.path.join(d, f)}" not in p.stderr:
                fail(f"the summary does not name {f}", p)
        for _ in range(2):
            p = run(a, ["--report", os.path.join(d, "y.%p.json")] + cmd)
            if launches(p) != (16, 3):
                fail(f"a second run counts the first run's reports: {launches(p)}", p)
    print("ok processes")


def case_names(a):
    """%q{VAR}, %r, %h and %p in every output name; a relative --report is
    relative to where grape run started; the user's GRAPE_REPORT is kept, and
    replaced by --report only with a message."""
    host = socket.gethostname()
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "out"))
        env = {"JOBTAG": "exp7", "GRAPE_TRACE": os.path.join(d, "out", "t.%q{JOBTAG}.%r.grape"),
               "GRAPE_LOG_FILE": os.path.join(d, "out", "log.%q{JOBTAG}.%h.txt"), "GRAPE_LOG": "info"}
        p = run(a, ["--report", "out/r.%q{JOBTAG}.%r.%h.%p.json", "--", "bash", "-c",
                    f"cd / && exec {a.job} 2"], env=env, cwd=d)
        if p.returncode != 0:
            fail("command failed", p)
        files = sorted(os.listdir(os.path.join(d, "out")))
        rep = [f for f in files if f.startswith("r.")]
        if len(rep) != 1 or not re.fullmatch(rf"r\.exp7\.0\.{re.escape(host)}\.\d+\.json", rep[0]):
            fail(f"report name {files}", p)
        if "t.exp7.0.grape" not in files or f"log.exp7.{host}.txt" not in files:
            fail(f"trace and log names {files}", p)
        r = load(os.path.join(d, "out", rep[0]))
        if r["trace_file"] != os.path.join(d, "out", "t.exp7.0.grape"):
            fail(f"the report names the trace {r['trace_file']}", p)
        # The user's GRAPE_REPORT, without --report: kept as set.
        mine = os.path.join(d, "mine.%p.json")
        p = run(a, ["--", a.job, "1"], env={"GRAPE_REPORT": mine})
        got = [f for f in os.listdir(d) if f.startswith("mine.")]
        if len(got) != 1 or "replaces" in p.stderr:
            fail(f"GRAPE_REPORT not kept: {got}", p)
        p = run(a, ["--report", os.path.join(d, "other.json"), "--", a.job, "1"],
                env={"GRAPE_REPORT": mine})
        if f"--report {os.path.join(d, 'other.json')} replaces GRAPE_REPORT={mine}" not in p.stderr \
                or not os.path.exists(os.path.join(d, "other.json")):
            fail("--report must say that it replaces GRAPE_REPORT", p)
    print("ok names")


def case_overwrite(a):
    """Two processes writing one trace name keep both; an existing report is
    not replaced unless --force-overwrite."""
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "r.json")
        with open(rep, "w") as f:
            f.write("keep")
        p = run(a, ["--report", rep, "--trace", os.path.join(d, "t.grape"), "--", "bash", "-c",
                    f"{a.job} 2 & {a.job} 3 & wait"])
        if open(rep).read() != "keep":
            fail("an existing report was replaced", p)
        traces = sorted(f for f in os.listdir(d) if f.endswith(".grape"))
        if traces != ["t.1.grape", "t.grape"]:
            fail(f"two processes, one trace name: {traces}", p)
        counts = []
        for t in traces:
            q = grape(a, ["inspect", "--json", os.path.join(d, t)])
            if q.returncode != 0:
                fail(f"{t} unreadable", q)
            counts.append(sum(x["count"] for x in json.loads(q.stdout)["paths"]))
        if sorted(counts) != [2, 3]:
            fail(f"the traces' path counts {counts}, want one per process (2 and 3)", p)
        if "exists; written to" not in p.stderr:
            fail("no warning names the numbered file", p)
        p = run(a, ["--force-overwrite", "--report", rep, "--", a.job, "1"])
        if load(rep)["launches"] != 2:
            fail("--force-overwrite did not replace the report", p)
    print("ok overwrite")


def start(a, args, env=None):
    e = base_env(a, env)
    p = subprocess.Popen([a.grape, "run", "--device", "sim"] + args, env=e, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    line = p.stdout.readline()
    deadline = time.time() + 60
    while line and "ready" not in line and time.time() < deadline:
        line = p.stdout.readline()
    if "ready" not in line:
        p.kill()
        fail(f"the job did not start: {p.communicate()}")
    return p


def case_interrupt(a):
    """SIGTERM to grape run, and Ctrl-C to the terminal's process group, during
    a long job: the report and the trace of what ran are written, the summary
    names the signal, and the exit status is the signal's."""
    with tempfile.TemporaryDirectory() as d:
        for sig, group in ((signal.SIGTERM, False), (signal.SIGINT, True)):
            name = signal.Signals(sig).name
            rep, tr = os.path.join(d, f"r.{name}.json"), os.path.join(d, f"t.{name}.grape")
            p = start(a, ["--report", rep, "--trace", tr, "--", a.job, "3", "wait"])
            if group:
                os.killpg(p.pid, sig)   # as the terminal does: to grape run and the job
            else:
                p.send_signal(sig)
            out, err = p.communicate(timeout=60)
            if p.returncode != 128 + sig:
                fail(f"{name}: status {p.returncode}\n{err}")
            if not os.path.exists(rep) or not os.path.exists(tr):
                fail(f"{name}: report or trace lost: {os.listdir(d)}\n{err}")
            r = load(rep)
            if r["signal"] != name or r["launches"] != 6:
                fail(f"{name}: report {r['signal']} {r['launches']}\n{err}")
            if grape(a, ["inspect", tr]).returncode != 0:
                fail(f"{name}: trace unreadable")
            if f"interrupted by {name}" not in err or "_exit" in err:
                fail(f"{name}: the summary must name the signal\n{err}")
        # Without grape run: the process still dies by the signal, after its report.
        rep = os.path.join(d, "direct.json")
        e = base_env(a, {"GRAPE_REPORT": rep})
        e["LD_PRELOAD"] = a.preload
        e["LD_LIBRARY_PATH"] = a.simdir
        p = subprocess.Popen([a.job, "2", "wait"], env=e, stdout=subprocess.PIPE, text=True)
        p.stdout.readline()
        p.stdout.readline()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
        if p.returncode != -signal.SIGTERM or load(rep)["signal"] != "SIGTERM":
            fail(f"direct: status {p.returncode}, report {os.path.exists(rep)}")
    print("ok interrupt")


KROW = re.compile(r"^\s+[\d.]+\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                  r"\s+([\d.]+)\s+[\d.-]+\s+(job_\w+)$", re.M)


def kernel_rows(text):
    """{name: (total_ms, calls, avg, med, min, max, stddev)} of a kernel table
    with its spread columns."""
    text = re.sub(r"^grape: ", "", text, flags=re.M)
    return {m[7]: (float(m[0]), int(m[1]), float(m[2]), float(m[3]), float(m[4]), float(m[5]),
                   float(m[6])) for m in KROW.findall(text)}


def case_stats(a):
    """nsys-style statistics that survive the run: the kernel table's spread,
    the CUDA API and memory-operation tables and the paths, as text and CSV,
    from the reports alone (grape run's SIMCU_REPORT files are gone), after a
    plain run and after an interrupt."""
    with tempfile.TemporaryDirectory() as d:
        p = run(a, ["--stats", "--report", os.path.join(d, "run", "r.%p.json"), "--", a.job, "4"])
        if p.returncode != 0:
            fail("job failed", p)
        live = kernel_rows(p.stderr)
        if sorted(live) != ["job_add", "job_scale"] or "CUDA API calls" not in p.stderr:
            fail(f"grape run --stats: kernel spread and API table {live}", p)
        q = grape(a, ["report", os.path.join(d, "run")])
        again = kernel_rows(q.stdout)
        if q.returncode != 0 or again != live:
            fail(f"the reports read again must give the run's times: {again} vs {live}", q)
        for name, (total, calls, avg, med, lo, hi, sd) in again.items():
            if calls != 4 or not (total > 0 and 0 < lo <= med <= hi and lo <= avg <= hi and sd >= 0):
                fail(f"{name}: total {total}, calls {calls}, avg {avg}, med {med}, min {lo}, max {hi}", q)
        api = re.search(r"^\s+[\d.]+\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+cuLaunchKernel$",
                        q.stdout, re.M)
        if not api or int(api.group(2)) != 8 or not float(api.group(1)) > 0 or \
                not float(api.group(4)) <= float(api.group(3)) <= float(api.group(5)):
            fail("API table: cuLaunchKernel's 8 calls with their host time", q)
        mem = re.search(r"^\s+[\d.]+\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+[\d.]+\s+memcpy DtoH$", q.stdout, re.M)
        if not mem or int(mem.group(2)) != 1 or not float(mem.group(1)) > 0:
            fail("memory-operation table: the job's one copy to the host", q)
        if not re.search(r"^\s+\d+ [0-9a-f]{16}\s+4\s+2 ", q.stdout, re.M):
            fail("path table: the job's path of 2 ops, seen 4 times", q)
        for table, header in (("api", "name,calls,timed,total_ms,avg_us,min_us,max_us,clock"),
                              ("memops", "kind,dir,count,bytes,total_ms,avg_us"),
                              ("paths", "pid,fingerprint,graph_key,count,ops,ran_as,why,"),
                              ("kernels", "name,calls,sim_calls,")):
            c = grape(a, ["report", "--csv", "--table", table, os.path.join(d, "run")])
            rows = list(csv.reader(c.stdout.splitlines()))
            if c.returncode != 0 or not c.stdout.startswith(header) or len(rows) < 2 or \
                    any(len(r) != len(rows[0]) for r in rows):
                fail(f"--csv --table {table}", c)
        # After an interrupt: the report the signal left has its times too.
        rep = os.path.join(d, "int.json")
        p = start(a, ["--report", rep, "--", a.job, "3", "wait"])
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
        q = grape(a, ["report", rep])
        rows = kernel_rows(q.stdout)
        if q.returncode != 0 or sorted(rows) != ["job_add", "job_scale"] or \
                not all(r[0] > 0 and r[1] == 3 for r in rows.values()):
            fail(f"an interrupted run's report must keep its times: {rows}", q)
    print("ok stats")


def per_rank(p):
    return {int(r): int(n) for r, n in re.findall(r"rank (\d+): (\d+) launches", p.stderr)}


def check_ranks(a, p, d, launcher):
    if p.returncode != 0:
        fail(f"{launcher} failed", p)
    reps = sorted(f for f in os.listdir(d) if f.startswith("r."))
    traces = sorted(f for f in os.listdir(d) if f.startswith("t."))
    if reps != ["r.0.json", "r.1.json"] or traces != ["t.0.grape", "t.1.grape"]:
        fail(f"{launcher}: one report and one trace per rank: {reps} {traces}", p)
    for r in (0, 1):
        j = load(os.path.join(d, f"r.{r}.json"))
        if j["rank"] != r or j["launches"] != 6 * (r + 1):
            fail(f"{launcher}: rank {r} report {j['rank']} {j['launches']}", p)
    if per_rank(p) != {0: 6, 1: 12}:
        fail(f"{launcher}: per-rank lines {per_rank(p)}", p)
    if launches(p)[0] != 18:
        fail(f"{launcher}: total {launches(p)}", p)


def case_torchrun(a):
    exe = shutil.which("torchrun")
    if exe is None:
        skip("torchrun not installed (scripts/setup-deps installs python3-torch)")
    helptext = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    if "--nproc-per-node" in helptext:
        flags = ["--nproc-per-node", "2", "--no-python"]
    else:
        # torch 1.13 (Debian 12): underscores; with Python 3.11 its default
        # '--redirects 0' parses to None, so a mapping that names no local rank is given.
        flags = ["--nproc_per_node", "2", "--no_python", "--redirects", "9:0", "--tee", "9:0"]
    with tempfile.TemporaryDirectory() as d:
        p = run(a, ["--report", os.path.join(d, "r.%r.json"), "--trace", os.path.join(d, "t.%r.grape"),
                    "--", exe, "--master-port" if "--master-port" in helptext else "--master_port",
                    "29517"] + flags + [a.job, "3"], timeout=110)
        check_ranks(a, p, d, "torchrun")
        if "rank 1 of 1: sum" not in p.stdout:
            fail("torchrun: rank 1's output", p)
    print("ok torchrun")


def case_mpirun(a):
    exe = shutil.which("mpirun")
    if exe is None or a.job_mpi == "-":
        skip("Open MPI not installed (scripts/setup-deps installs openmpi-bin and libopenmpi-dev)")
    with tempfile.TemporaryDirectory() as d:
        p = run(a, ["--report", os.path.join(d, "r.%r.json"), "--trace", os.path.join(d, "t.%r.grape"),
                    "--", exe, "-np", "2", a.job_mpi, "3"], timeout=110)
        check_ranks(a, p, d, "mpirun")
        sums = re.findall(r"rank (\d) of 2: sum (\d+), total (\d+)", p.stdout)
        if len(sums) != 2 or any(int(t) != int(sums[0][1]) + int(sums[1][1]) for _, _, t in sums):
            fail(f"the ranks did not exchange their sums: {sums}", p)
    print("ok mpirun")


def case_report(a):
    """A job launched without grape run (as Slurm's srun does: SLURM_PROCID per
    rank) leaves a report per rank; grape report merges them."""
    with tempfile.TemporaryDirectory() as d:
        for r in (0, 1):
            p = preloaded(a, [a.job, "3"], {"SLURM_PROCID": str(r), "RANK": str(r),
                                           "GRAPE_REPORT": os.path.join(d, "r.%r.json"),
                                           "SIMCU_REPORT": os.path.join(d, "sim.%p.json")})
            if p.returncode != 0:
                fail("job failed", p)
        p = grape(a, ["report", d])
        if p.returncode != 0:
            fail("grape report failed", p)
        p.stderr = p.stdout
        if per_rank(p) != {0: 6, 1: 12} or launches(p)[0] != 18:
            fail("per rank and in total", p)
        rows = re.findall(r"^\s+[\d.]+\s+[\d.]+\s+(\d+)\s+[\d.]+(?:\s+[\d.-]+){4}\s+[\d.-]+\s+(job_\w+)",
                          p.stdout, re.M)
        if sorted(rows) != [("9", "job_add"), ("9", "job_scale")]:
            fail(f"kernel table rows {rows}", p)
        if "simulated device time" not in p.stdout or \
                len(re.findall(r"rank \d: .* [\d.]+ ms simulated", p.stdout)) != 2:
            fail("simulated times from the SIMCU_REPORT files, paired with each rank's report", p)
        q = grape(a, ["report", "--csv", "--sort=name", os.path.join(d, "r.0.json"),
                      os.path.join(d, "r.1.json")])
        lines = q.stdout.strip().split("\n")
        if q.returncode != 0 or len(lines) != 3 or not lines[1].startswith('"job_add",9,'):
            fail("CSV by name", q)
        # Measured times from grape replay --time of a rank's trace.
        tr, tm = os.path.join(d, "t.grape"), os.path.join(d, "timings.csv")
        p = preloaded(a, [a.job, "2"], {"GRAPE_TRACE": tr})
        q = grape(a, ["replay", "--device", "sim", "--time", "--all", "--bodies", a.bodies, "-o", tm, tr])
        if p.returncode != 0 or q.returncode != 0:
            fail("trace and replay --time", q)
        q = grape(a, ["report", "--timings", tm, os.path.join(d, "r.0.json"), os.path.join(d, "r.1.json")])
        meas = dict((n, float(v)) for v, n in re.findall(r"([\d.]+)  (job_\w+)$", q.stdout, re.M))
        if q.returncode != 0 or "meas(us)" not in q.stdout or sorted(meas) != ["job_add", "job_scale"] \
                or not all(v > 0 for v in meas.values()):
            fail(f"measured times in the kernel table {meas}", q)
        q = grape(a, ["report", "--timings", os.path.join(d, "r.0.json"), os.path.join(d, "r.0.json")])
        if q.returncode == 0 or "not a timings CSV" not in q.stderr:
            fail("a file that is no timings CSV must be refused", q)
        q = grape(a, ["report", os.path.join(d, "nope.json")])
        if q.returncode == 0 or "nope.json" not in q.stderr:
            fail("a missing file must be named", q)
    print("ok report")


def sim_ms(p):
    m = re.search(r"simulated time: ([\d.]+) ms", p.stderr)
    if not m:
        fail("no simulated time", p)
    return float(m.group(1))


def case_kernels(a):
    """The kernel table in simulated time, sortable, as text and CSV; the run's
    simulated time, and graph mode's effect on it (decode)."""
    with tempfile.TemporaryDirectory() as d:
        csv = os.path.join(d, "k.csv")
        p = run(a, ["--kernels-csv", csv, "--sort", "calls", "--predict-gpu", "H100", "--", a.job, "4"])
        if p.returncode != 0 or "kernels (simulated device time)" not in p.stderr:
            fail("kernel table", p)
        rows = [l.split(",") for l in open(csv).read().strip().split("\n")]
        byname = {r[0].strip('"'): r for r in rows[1:]}
        for k in ("job_add", "job_scale"):
            r = byname.get(k)
            if r is None or r[1] != "4" or r[2] != "4" or float(r[4]) <= 0 or float(r[6]) <= 0:
                fail(f"CSV row {k}: {r}", p)
        # job_scale runs 4 blocks of 64 threads, job_add 1 of 32: more simulated time.
        if float(byname["job_scale"][4]) <= float(byname["job_add"][4]):
            fail("simulated times per kernel", p)
        sim_ms(p)
    if a.decode == "-":
        print("ok kernels (decode not built: no nvcc)")
        return
    p = run(a, ["--compare", "--", a.decode])
    m = re.search(r"graph mode's effect \(--compare\): ([\d.]+) ms with GRAPE_MODE=off, ([\d.]+) ms "
                  r"with GRAPE_MODE=graph \(([\d.]+)% less simulated time\)", p.stderr)
    off = run(a, ["--mode", "off", "--", a.decode])
    if p.returncode != 0 or not m or abs(float(m.group(1)) - sim_ms(off)) > 0.01 or \
            abs(float(m.group(2)) - sim_ms(p)) > 0.01 or not float(m.group(2)) < 0.7 * float(m.group(1)):
        fail(f"graph mode's effect on decode's simulated time (off: {sim_ms(off)})", p)
    if p.stdout != off.stdout:
        fail("--compare must print the command's output once", p)
    print(f"ok kernels (decode: {m.group(1)} ms off, {m.group(2)} ms graph mode)")


def case_badopts(a):
    """Every bad value warns once with the accepted range and the value used;
    --opt=value works; grape help CMD; unwritable outputs are said at start."""
    bad = {"GRAPE_LOG": ("loud", "error | warn | info | debug"),
           "GRAPE_FLUSH_US": ("-1", "using 10"), "GRAPE_VARIANTS": ("99", "using 16"),
           "GRAPE_CHUNK": ("0", "using 1"), "GRAPE_TOP_PATHS": ("-1", "using 0"),
           "GRAPE_WARMUP": ("-3", "using 1"), "GRAPE_OVERWRITE": ("maybe", "yes")}
    for var, (val, want) in bad.items():
        p = preloaded(a, [a.job, "1"], {var: val})
        n = p.stderr.count(f"{var}")
        if p.returncode != 0 or n != 1 or want not in p.stderr:
            fail(f"{var}={val}: want one warning with '{want}'", p)
    p = preloaded(a, [a.job, "1"], {"GRAPE_VARIANTS": "99", "GRAPE_LOG": "info"})
    if "option GRAPE_VARIANTS=16" not in p.stderr:
        fail("GRAPE_LOG=info must print the value used", p)
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "r.json")
        p = run(a, ["--mode=observe", f"--report={rep}", "--", a.job, "1"])
        if p.returncode != 0 or load(rep)["mode"] != "observe":
            fail("--opt=value", p)
        # Missing folders are made, so an unwritable name is one below a file.
        blocker = os.path.join(d, "a-file")
        open(blocker, "w").close()
        p = run(a, ["--report", f"{blocker}/r.json", "--", a.job, "1"])
        if p.returncode != 2 or f"{blocker}/r.json" not in p.stderr or "rank 0" in p.stdout:
            fail("an unwritable --report must be refused before the command runs", p)
        for var in ("GRAPE_TRACE", "GRAPE_REPORT", "GRAPE_LOG_FILE"):
            p = preloaded(a, ["sh", "-c", f"echo started >&2; exec {a.job} 1"],
                          {var: f"{blocker}/out.%p"})
            first = p.stderr.find(f"{blocker}/out.")
            if first < 0 or first > p.stderr.find("started") or ".tmp" in p.stderr or ".part" in p.stderr:
                fail(f"{var}: say the user's path at start", p)
    p = grape(a, ["help", "run"])
    if p.returncode != 0 or "usage: grape run" not in p.stdout:
        fail("grape help run", p)
    p = grape(a, ["help", "report"])
    if p.returncode != 0 or "usage: grape report" not in p.stdout:
        fail("grape help report", p)
    if grape(a, ["help", "nope"]).returncode != 2:
        fail("grape help of an unknown command")
    p = grape(a, ["gpus", "--json"])
    gpus = json.loads(p.stdout)
    if p.returncode != 0 or not any(g["name"] == "NVIDIA H100 80GB HBM3" or "H100" in g["name"]
                                    for g in gpus) or "sm_count" not in gpus[0]:
        fail("grape gpus --json", p)
    # Numbers in their shortest form that reads back (5.699, not 5.6989999999999998).
    for tok in re.findall(r":(-?\d+\.\d+(?:e[-+]\d+)?)[,}]", p.stdout):
        if tok != repr(float(tok)):
            fail(f"grape gpus --json writes {tok} for {float(tok)!r}", p)
    print("ok badopts")


def case_json(a):
    """The report stays valid JSON whatever bytes the program's name holds."""
    with tempfile.TemporaryDirectory() as d:
        name = os.path.join(d.encode(), b'j"\\\xff\x01q')
        shutil.copy(a.job, name)
        rep = os.path.join(d, "r.json")
        p = subprocess.run([a.grape.encode(), b"run", b"--device", b"sim", b"--report", rep.encode(),
                            b"--", name, b"1"], capture_output=True, env=base_env(a), timeout=60)
        if p.returncode != 0:
            fail(f"command failed {p.stderr!r}")
        r = load(rep)
        if r["command"] != 'j"\\\u00ff\x01q':
            fail(f"command {r['command']!r}")
    print("ok json")


def case_equals(a):
    """Every command takes '--opt=value' as '--opt value' (same output, same
    status); the command after grape run's own options keeps its own."""
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subset = os.path.join(src, "data", "neusight-subset", "ln.csv.gz")
    cubin = os.path.join(src, "tests", "fuzz", "corpus", "sm90.cubin")
    trace = os.path.join(src, "tests", "fuzz", "corpus-trace", "sample.grape")
    with tempfile.TemporaryDirectory() as d:
        cases = [
            (["predict", "--gpu=H100", f"--csv={subset}"], ["predict", "--gpu", "H100", "--csv", subset]),
            (["cubin-info", "--kernel=nope", cubin], ["cubin-info", "--kernel", "nope", cubin]),
            (["cubin-info", "--arch=90", "--summary", cubin], ["cubin-info", "--arch", "90", "--summary", cubin]),
            (["replay", "--iters=0", trace], ["replay", "--iters", "0", trace]),
            (["export", "--chrome", "--predict-gpu=H100", trace], ["export", "--chrome", "--predict-gpu", "H100", trace]),
            (["gpus", "--device-json=/nonexistent.json"], ["gpus", "--device-json", "/nonexistent.json"]),
        ]
        for eq, sp in cases:
            p, q = grape(a, eq), grape(a, sp)
            if (p.returncode, p.stdout, p.stderr) != (q.returncode, q.stdout, q.stderr):
                fail(f"{' '.join(eq)} differs from {' '.join(sp)}:\n{p.returncode} {p.stdout[:300]} "
                     f"{p.stderr[:300]}\n{q.returncode} {q.stdout[:300]} {q.stderr[:300]}")
        p = run(a, ["--kernels=0", "--", "sh", "-c", 'echo "$1"', "sh", "--x=1"])
        if p.returncode != 0 or p.stdout != "--x=1\n" or "kernels (" in p.stderr:
            fail("grape run --opt=value, and the command's own arguments untouched", p)
    print("ok equals")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--grape", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--job-mpi", default="-")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--decode", default="-")
    ap.add_argument("--bodies", default="-")
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()
