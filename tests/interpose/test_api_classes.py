#!/usr/bin/env python3
"""Every function of cuda.h and cuda_runtime_api.h is classified for graph
mode (interpose/api.txt), and every driver name NVIDIA's libcudart.so.13 asks
cuGetProcAddress for (the names in its strings) comes back wrapped through the
shim unless it is harmless.

usage: test_api_classes.py CASE --build-interpose DIR --api FILE
       [--preload LIBS --simdir DIR --probe PROG]
  classified   no header function is left unclassified
  runtime      the names NVIDIA's runtime asks for are accounted for, and on
               the simulated device the shim hands back its own wrapper for
               every one that is not harmless"""
import argparse
import json
import os
import re
import subprocess
import sys

CUDART = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64", "libcudart.so.13")


def fail(msg):
    sys.exit("FAIL: " + msg)


def case_classified(a):
    with open(os.path.join(a.build, "api_unclassified.txt")) as f:
        left = f.read().split()
    if left:
        fail(f"header functions no line of interpose/api.txt classifies: {' '.join(left)}")
    with open(os.path.join(a.build, "api_classes.json")) as f:
        c = json.load(f)
    if len(c["driver"]) < 400 or len(c["runtime"]) < 300:
        fail(f"only {len(c['driver'])} driver and {len(c['runtime'])} runtime names were read")


def cudart_names():
    if not os.path.exists(CUDART):
        print(f"skipped: {CUDART} is not here")
        sys.exit(77)
    data = open(CUDART, "rb").read()
    return sorted({m.decode() for m in re.findall(rb"(?<![A-Za-z0-9_])cu[A-Z][A-Za-z0-9_]{2,}(?=\0)", data)})


def classes_of(a):
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.api)))
    import gen_hooks
    rules = gen_hooks.read_classes(a.api)
    with open(os.path.join(a.build, "api_classes.json")) as f:
        return rules, gen_hooks, json.load(f)


def case_runtime(a):
    names = cudart_names()
    rules, gen_hooks, c = classes_of(a)
    procs, symbols = c["driver"], c["driver_symbols"]
    asked = []
    for n in names:
        if n in procs:
            asked.append(n)
        elif n not in symbols and gen_hooks.classify(rules, n)[0] != "interop":
            fail(f"NVIDIA's runtime asks for {n}, which is neither in cuda.h nor listed as interop")
    must_wrap = [n for n in asked if procs[n] not in ("harmless", "interop")]
    if len(must_wrap) < 50:
        fail(f"only {len(must_wrap)} of the runtime's driver names need wrapping: the scan is broken")
    env = dict(os.environ, LD_PRELOAD=a.preload,
               LD_LIBRARY_PATH=a.simdir + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    p = subprocess.run([a.probe], input="\n".join(must_wrap), env=env, capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        fail(f"gpa_probe failed:\n{p.stderr}")
    served = unwrapped = 0
    bad = []
    for line in p.stdout.splitlines():
        name, flag, obj = line.split()
        if obj == "absent":
            continue
        served += 1
        if obj != "libgrape.so" and not obj.startswith("libgrape"):
            unwrapped += 1
            bad.append(f"{name} (flag {flag}) -> {obj}")
    if bad:
        fail("handed back unwrapped through cuGetProcAddress:\n  " + "\n  ".join(bad))
    if served < 40:
        fail(f"the simulated driver served only {served} of the names: nothing was checked")
    print(f"{served} answers for {len(must_wrap)} names, all wrapped")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--build-interpose", dest="build", required=True)
    ap.add_argument("--api", required=True)
    ap.add_argument("--preload")
    ap.add_argument("--simdir")
    ap.add_argument("--probe")
    a = ap.parse_args()
    globals()["case_" + a.case](a)


if __name__ == "__main__":
    main()
