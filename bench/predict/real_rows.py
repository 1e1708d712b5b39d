#!/usr/bin/env python3
"""grape on NeuSight's held-out real-model rows, split in two halves by
shape: per-kernel MAPE % of the harness time and coverage % of its 80%
interval per (class, GPUs, regime, half).

    python3 bench/predict/real_rows.py NEUSIGHT/scripts/asplos/data/dataset/test \
        [--grape build/tools/grape] [-m MODEL] [--out grape-real-rows]

The rows (BERT, GPT-2, GPT-3, OPT and Switch layers; bench/predict/neusight.py
says where they come from) are never trained on. The halves exist so that a
rule may be decided on real models' shapes without being scored on the rows
that decided it: half 0 decides, half 1 is the score. A row's half is a hash
of its op and its dims other than the batch, so every batch and every GPU
of one shape lies in one half. No torch needed.
"""
import argparse
import collections
import csv
import os
import subprocess
import sys
import zlib

CLASSES = ("bmm", "linear", "elem", "softmax", "ln")
# The GPUs the NeuSight training rows come from; the others are unseen.
TRAIN_GPUS = {"NVIDIA A100-PCIE-40GB", "Tesla P100-PCIE-16GB", "Tesla P4", "Tesla T4",
              "Tesla V100-PCIE-32GB"}


def half(row):
    key = ",".join(row.get(k, "") for k in ("OPName", "M", "N", "K", "H"))
    return zlib.crc32(key.encode()) % 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("test", help="NeuSight's scripts/asplos/data/dataset/test")
    ap.add_argument("--grape", default="build/tools/grape")
    ap.add_argument("-m", "--model", help="model file (default: the one built into grape)")
    ap.add_argument("--out", default="grape-real-rows")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print("| class | GPUs | regime | half | rows | MAPE % | 80% interval holds % |")
    print("|---|---|---|---:|---:|---:|---:|")
    for cls in CLASSES:
        src, out = os.path.join(a.test, cls + ".csv"), os.path.join(a.out, cls + ".csv")
        cmd = [a.grape, "predict", "--csv", src, "-o", out] + (["-m", a.model] if a.model else [])
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        cells = collections.defaultdict(lambda: [0, 0.0, 0])
        with open(out) as f:
            for r in csv.DictReader(f):
                if not r["harness_ms"]:
                    continue
                meas, pred = float(r["Latency"]), float(r["harness_ms"])
                inside = float(r["harness_lower_ms"]) <= meas <= float(r["harness_upper_ms"])
                gpus = "training" if r["Device"] in TRAIN_GPUS else "unseen"
                c = cells[(gpus, r["regime"], half(r))]
                c[0] += 1
                c[1] += abs(pred - meas) / meas
                c[2] += inside
        for (gpus, regime, h), (n, ape, inside) in sorted(cells.items()):
            print("| %s | %s | %s | %d | %d | %.1f | %.1f |"
                  % (cls, gpus, regime, h, n, 100 * ape / n, 100 * inside / n))


if __name__ == "__main__":
    sys.exit(main())
