#!/usr/bin/env python3
"""The sim's cost profiles (sim/costs/*.costs): every row of sim/cost.h is set
in every profile, each with its source or marked an assumption, and a profile
named in SIMCU_COSTS is the one that applies.

usage: check_profiles.py COST_H PROFILE_DIR [--run SIMDIR PROGRAM]

A row's comment must be "# source: URL (...)" — the measurement's address and,
in parentheses, its GPU and CUDA version as the source gives them (or that it
does not) — or "# assumption: why". With --run, PROGRAM runs on the sim under
each profile: each must load without a message from the sim, profiles whose
rows differ must end at different simulated times, and a profile name that
does not exist must be refused with the list of names."""
import json
import os
import re
import subprocess
import sys
import tempfile

SOURCE = re.compile(r"^source: (https?://\S+).*\(([^)]+)\)")


def rows_of(header):
    return re.findall(r'X\((\w+), "(\w+)", (\d+)\)', open(header).read())


def check_file(path, names):
    bad = []
    seen = {}
    for n, line in enumerate(open(path), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        body, _, comment = text.partition("#")
        words = body.split()
        if len(words) != 2 or not words[1].isdigit():
            bad.append(f"{path}:{n}: want \"name ns\": {text}")
            continue
        name = words[0]
        if name not in names:
            bad.append(f"{path}:{n}: {name} is no row of sim/cost.h")
        if name in seen:
            bad.append(f"{path}:{n}: {name} set twice (line {seen[name]})")
        seen[name] = n
        comment = comment.strip()
        if not (SOURCE.match(comment) or
                (comment.startswith("assumption: ") and len(comment) > len("assumption: ") + 3)):
            bad.append(f"{path}:{n}: {name} has neither a source (URL and, in parentheses, GPU "
                       f"and CUDA) nor an assumption: '{comment}'")
    for name in names:
        if name not in seen:
            bad.append(f"{path}: row {name} is not set (every profile sets every row)")
    return bad, {k: int(open(path).read().splitlines()[v - 1].split()[1]) for k, v in seen.items()}


def run(simdir, prog, costs):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ)
        for k in [k for k in env if k.startswith(("SIMCU_", "GRAPE_"))]:
            env.pop(k)
        env.pop("LD_PRELOAD", None)
        env["LD_LIBRARY_PATH"] = simdir
        env["SIMCU_REPORT"] = os.path.join(d, "sim.json")
        env["SIMCU_COSTS"] = costs
        p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=120)
        rep = json.load(open(os.path.join(d, "sim.json")))
        return p, rep["sim_end_ns"]


def main():
    header, pdir = sys.argv[1], sys.argv[2]
    names = [n for _, n, _ in rows_of(header)]
    if len(names) < 10:
        print(f"check_profiles: only {len(names)} rows in {header}")
        return 1
    profiles = sorted(f[:-6] for f in os.listdir(pdir) if f.endswith(".costs"))
    want = {"default", "fair", "pessimistic"}
    bad = []
    if not want <= set(profiles):
        bad.append(f"{pdir}: profiles {sorted(want - set(profiles))} missing")
    values = {}
    for p in profiles:
        b, v = check_file(os.path.join(pdir, p + ".costs"), names)
        bad += b
        values[p] = v
    if "--run" in sys.argv:
        i = sys.argv.index("--run")
        simdir, prog = sys.argv[i + 1], sys.argv[i + 2]
        ends = {}
        for p in profiles:
            proc, ends[p] = run(simdir, prog, p)
            if "simcu:" in proc.stderr:
                bad.append(f"SIMCU_COSTS={p}: the sim said: {proc.stderr.strip()[-500:]}")
        for a in profiles:
            for b in profiles:
                if a < b and values[a] != values[b] and ends[a] == ends[b]:
                    bad.append(f"profiles {a} and {b} differ but end at the same time "
                               f"({ends[a]} ns): a profile name did not apply")
        proc, _ = run(simdir, prog, "no-such-profile")
        if "no-such-profile" not in proc.stderr or "pessimistic" not in proc.stderr:
            bad.append(f"an unknown profile name was not refused with the list of names: "
                       f"{proc.stderr.strip()[-300:]}")
        print("check_profiles: simulated end per profile: " +
              ", ".join(f"{p} {ends[p]} ns" for p in profiles))
    for b in bad:
        print("check_profiles: " + b)
    print(f"check_profiles: {len(profiles)} profiles, {len(names)} rows, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
