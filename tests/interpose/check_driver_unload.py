#!/usr/bin/env python3
"""check_driver_unload.py --prog DRIVER_UNLOAD --preload P --simdir D: a
program that dlopens the sim's libcuda.so.1 RTLD_LOCAL, calls it and dlcloses
it, preloaded with the shim in each mode and GRAPE_REPORT set: it exits 0 and
the report is written, with the sim's device times. The shim used to keep
only pointers into the driver, so the report called into an unloaded library
at exit (SIGSEGV in put_device_times; CuPy under grape run, whose static
NVIDIA runtime unloads the driver when it finds no device)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simenv import sim_env  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    a = ap.parse_args()
    for mode in ("off", "observe", "graph"):
        with tempfile.TemporaryDirectory() as d:
            e = sim_env(a.simdir, a.preload, d, True, mode)
            p = subprocess.run([a.prog], env=e, capture_output=True, text=True, timeout=30)
            if p.returncode != 0 or "devices 1" not in p.stdout:
                sys.exit(f"FAIL: {mode}: exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
            reps = [f for f in os.listdir(d) if f.startswith("grape.")]
            if len(reps) != 1:
                sys.exit(f"FAIL: {mode}: want one grape report, got {reps}\n{p.stderr}")
            r = json.load(open(os.path.join(d, reps[0])))
            if mode != "off" and r.get("device_times") is None:
                sys.exit(f"FAIL: {mode}: the report has no device_times (the sim's statistics)")
        print(f"{mode}: exit 0, report written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
