#!/usr/bin/env python3
"""Tables from the held-out predictions `grape train --cv-shapes` and
`--cv-families` write with GRAPE_CV_DUMP=FILE: per evaluation group, grape
as served against the baselines (per-kernel MAPE %), and coverage % and
median width (upper / lower bound) of the 80% intervals per regime, for all
rows and for the rows whose dims are all multiples of 8 ("aligned").

    python3 bench/predict/cv_table.py DUMP.csv [NAME=DUMP.csv ...]

Several dumps print one after another, each headed by its NAME."""
import csv
import math
import sys

GROUPS = {0: "bmm", 1: "elementwise", 2: "softmax", 3: "layernorm", 4: "conv", 6: "linear"}
REGIMES = {1: "known", 2: "known-extrapolated", 0: "transfer"}


def load(path):
    rows = []
    with open(path) as f:
        for v in csv.reader(f):
            # gpu, group, measured, roofline, Li, transfer, served, lo, hi, regime, distance, align
            rows.append({"group": int(v[1]), "lat": float(v[2]), "roof": float(v[3]),
                         "li": float(v[4]), "transfer": float(v[5]), "served": float(v[6]),
                         "lo": float(v[7]), "hi": float(v[8]), "regime": int(v[9]),
                         "align": float(v[11])})
    return rows


def ape(rows, key):
    return 100 * sum(abs(r[key] - r["lat"]) / r["lat"] for r in rows) / len(rows)


def cover(rows):
    return 100 * sum(r["lo"] <= r["lat"] <= r["hi"] for r in rows) / len(rows)


def width(rows):
    w = sorted(r["hi"] / r["lo"] for r in rows if r["lo"] > 0 and math.isfinite(r["hi"]))
    return w[len(w) // 2] if w else float("nan")


def table(name, rows):
    print(f"## {name}: {len(rows)} held-out rows\n")
    print("| group | rows | aligned | grape | roofline | Li | grape, aligned | roofline, aligned |"
          " coverage | aligned | width |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for g, gname in GROUPS.items():
        rs = [r for r in rows if r["group"] == g]
        if not rs:
            continue
        al = [r for r in rs if r["align"] >= 8]
        a = lambda f, x: f"{f(x):.1f}" if x else "-"
        print(f"| {gname} | {len(rs)} | {len(al)} | {ape(rs, 'served'):.1f} | {ape(rs, 'roof'):.1f} |"
              f" {ape(rs, 'li'):.1f} | {a(lambda x: ape(x, 'served'), al)} |"
              f" {a(lambda x: ape(x, 'roof'), al)} | {cover(rs):.1f} | {a(cover, al)} |"
              f" {width(rs):.2f} |")
    print("\nper regime: rows / coverage % / median width (upper / lower bound)\n")
    print("| group | " + " | ".join(REGIMES.values()) + " |")
    print("|---|" + "---|" * len(REGIMES))
    for g, gname in GROUPS.items():
        cells = []
        for reg in REGIMES:
            rs = [r for r in rows if r["group"] == g and r["regime"] == reg]
            cells.append(f"{len(rs)} / {cover(rs):.1f} / {width(rs):.2f}" if rs else "-")
        if any(c != "-" for c in cells):
            print(f"| {gname} | " + " | ".join(cells) + " |")
    print()


def main(args):
    if not args:
        sys.exit(__doc__)
    for a in args:
        name, _, path = a.rpartition("=")
        table(name or path, load(path))


if __name__ == "__main__":
    main(sys.argv[1:])
