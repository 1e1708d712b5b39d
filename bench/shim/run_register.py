#!/usr/bin/env python3
"""What the shim costs a process that does no CUDA work: a framework's import
(bench_register: N kernels registered, none launched, the fatbins unregistered
at exit) and /bin/true, without the shim and under it in each mode.

DESIGN: measured are the process's peak RSS (median of --runs runs:
bench_register reads its own high-water mark after the unregistration;
/bin/true runs under GNU time, whose own pages before the exec are fewer) and
the instructions callgrind counts: for bench_register the registration loop
and the unregistration at exit alone (the program's CALLGRIND_DUMP_STATS_AT
phases), with the share executed inside libgrape.so; for /bin/true the whole
process (loading and initialising the shim included).

usage: run_register.py --prog bench_register --simdir build/sim
                       --lib build/interpose/libgrape.so [--n 24133] [--per N] [--runs 3]
Prints Markdown tables; docs/performance.md records the numbers."""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

from run_bench import self_cost_by_object

CONFIGS = [("none", None), ("off", "off"), ("observe", "observe"), ("graph", "graph")]


def env_for(a, mode):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = a.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
    # MALLOC_PERTURB_ would make glibc write every page of a large calloc.
    for k in [k for k in env if k.startswith("GRAPE_")] + ["LD_PRELOAD", "MALLOC_PERTURB_"]:
        env.pop(k, None)
    if mode is not None:
        env["LD_PRELOAD"] = a.lib
        env["GRAPE_MODE"] = mode
    return env


def peak_rss_kib(cmd, env):
    """Peak RSS (KiB): bench_register prints its own; anything else is run
    under GNU time (None without it). Not ru_maxrss of a child of this
    process: that counts Python's pages until the exec."""
    timed = not os.path.basename(cmd[0]).startswith("bench_register")
    if timed:
        if not os.path.exists("/usr/bin/time"):
            return None
        cmd = ["/usr/bin/time", "-f", "peak_rss_kib %M"] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = re.search(r"peak_rss_kib (\d+)", p.stderr if timed else p.stdout)
    if p.returncode != 0 or m is None:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stdout}{p.stderr}")
    return int(m.group(1))


def median_rss(a, cmd, env):
    vals = [peak_rss_kib(cmd, env) for _ in range(a.runs)]
    return None if None in vals else statistics.median(vals)


def callgrind(cmd, env, atstart):
    """{dump name or 'total': (instructions, in libgrape.so)} of one run."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=" + atstart,
                        "--compress-strings=yes", "--compress-pos=no",
                        "--callgrind-out-file=" + out] + cmd,
                       env=env, check=True, capture_output=True)
        res = {}
        for path in sorted(glob.glob(out + "*")):
            text = open(path).read()
            m = re.search(r"^totals: (\d+)", text, re.M) or re.search(r"^summary: (\d+)", text, re.M)
            trig = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
            name = trig.group(1) if trig else "total"
            own = sum(v for k, v in self_cost_by_object(text).items() if k.startswith("libgrape"))
            res[name] = (int(m.group(1)) if m else 0, own)
        return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--n", type=int, default=24133)
    ap.add_argument("--per", type=int, default=0, help="kernels per fatbin (0: all in one)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    prog = [a.prog, str(a.n)] + ([str(a.per)] if a.per else [])
    true = ["/bin/true"]

    print(f"`bench_register {' '.join(prog[1:])}`: {a.n} registrations\n")
    print("| config | peak RSS KiB | added | bytes/registration | registration instr. | added/registration "
          "| in libgrape.so | unregistration instr. | added |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = None
    for name, mode in CONFIGS:
        env = env_for(a, mode)
        rss = median_rss(a, prog, env)
        cg = callgrind(prog, env, "no")
        reg, reg_own = cg.get("registration", (0, 0))
        unreg, _ = cg.get("unregistration", (0, 0))
        if base is None:
            base = (rss, reg, unreg)
        print(f"| {name} | {rss:.0f} | {rss - base[0]:+.0f} | {(rss - base[0]) * 1024 / a.n:+.0f} | "
              f"{reg} | {(reg - base[1]) / a.n:+.0f} | {reg_own / a.n:.0f} | {unreg} | "
              f"{unreg - base[2]:+d} |")
        sys.stdout.flush()

    print("\n`/bin/true`, whole process\n")
    print("| config | peak RSS KiB | added | instructions | added | in libgrape.so |")
    print("|---|---:|---:|---:|---:|---:|")
    base = None
    for name, mode in CONFIGS:
        env = env_for(a, mode)
        rss = median_rss(a, true, env)
        total, own = callgrind(true, env, "yes")["total"]
        if base is None:
            base = (rss, total)
        rss_cols = "n/a | n/a" if rss is None else f"{rss:.0f} | {rss - base[0]:+.0f}"
        print(f"| {name} | {rss_cols} | {total} | {total - base[1]:+d} | {own} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
