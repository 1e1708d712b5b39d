#!/usr/bin/env python3
"""eval.py - grape's kernel-time predictions against public kernel-level timings.

Runs `grape predict --csv` on a timings CSV of real GPUs' kernels (kineto_csv.py makes one
from PyTorch profiler traces; bench/kernels/README.md names the data and its sources) and
prints the per-kernel MAPE (one row per distinct launch, its median time) of grape's
kernel time (`predicted_ms`) and, for comparison, of its harness-inclusive time
(`harness_ms`, what a timing harness like the training data's measures), per GPU and by
measured duration: under 10 us, 10-100 us, over 100 us. Rows from the sources given with
--exclude (the calibration trace) are left out.

  eval.py --grape build/tools/grape [--exclude SOURCE]... TIMINGS.csv[.gz]
"""
import argparse
import csv
import gzip
import io
import statistics
import subprocess
import sys
import tempfile

BANDS = [(0, 0.010, "<10us"), (0.010, 0.100, "10-100us"), (0.100, 1e9, ">100us")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grape", required=True)
    ap.add_argument("--model", default="")
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("timings")
    a = ap.parse_args()
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        cmd = [a.grape, "predict", "--csv", a.timings, "-o", out.name] + (["-m", a.model] if a.model else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"grape predict failed: {p.stderr}")
        print(p.stderr.strip().splitlines()[-1])
        rows = list(csv.DictReader(open(out.name, newline="")))
    cells, small = {}, {}
    skipped = 0
    for r in rows:
        if r["source"] in a.exclude:
            continue
        try:
            t, k, h = float(r["time_ms"]), float(r["predicted_ms"]), float(r["harness_ms"])
            inside = float(r["lower_ms"]) <= t <= float(r["upper_ms"])
        except (KeyError, ValueError):
            skipped += 1
            continue
        for lo, hi, band in BANDS:
            if lo <= t < hi:
                for key in ((r["device"], band), ("all", band)):
                    cells.setdefault(key, []).append((abs(k - t) / t, abs(h - t) / t, k / t))
        if t < BANDS[0][1]:
            small.setdefault(r["source"], []).append((abs(k - t) / t, k / t, inside, r["resolution_us"]))
    print(f"per-kernel MAPE %: grape's kernel time (harness-inclusive time), median predicted/measured; "
          f"{skipped} rows not predicted")
    print(f"{'gpu':<24} " + " ".join(f"{b:>26}" for _, _, b in BANDS))
    for dev in sorted({d for d, _ in cells if d != "all"}) + ["all"]:
        line = f"{dev:<24} "
        for _, _, band in BANDS:
            v = cells.get((dev, band))
            if not v:
                line += f"{'-':>26} "
                continue
            ke = 100 * statistics.mean(x[0] for x in v)
            he = 100 * statistics.mean(x[1] for x in v)
            line += f"{ke:7.1f} ({he:6.1f}) x{statistics.median(x[2] for x in v):4.2f} n{len(v):4d} "
        print(line)
    print("kernels under 10 us per trace: MAPE %, median APE %, median predicted/measured, "
          "coverage % of the 80% interval, time resolution")
    for src, v in sorted(small.items()):
        print(f"  {len(v):4d} {100 * statistics.mean(x[0] for x in v):6.1f} "
              f"{100 * statistics.median(x[0] for x in v):6.1f} x{statistics.median(x[1] for x in v):4.2f} "
              f"{100 * sum(x[2] for x in v) / len(v):5.1f} {'1 us' if v[0][3] == '1' else 'ns':>5} {src}")


if __name__ == "__main__":
    sys.exit(main())
