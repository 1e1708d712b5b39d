#!/usr/bin/env python3
"""kineto_csv.py - kernel timings of PyTorch profiler (Kineto) traces as a grape timings CSV.

Reads traces (JSON, plain or gzip), keeps the GPU kernel events ("cat": "kernel": CUPTI's
start-to-end duration of each kernel on the device), groups them by launch (kernel name,
grid, block, shared memory, registers) and writes one row per launch with the median
duration: the columns grape predict --csv and grape train read (docs/predictor.md), with
timing=kernel (the kernel's own time, no harness), count (events), resolution_us (the
trace's time resolution: 1 where every duration is a whole microsecond) and source.

The device is the trace's deviceProperties name, mapped to the predictor's name where
the two differ (MAP below, each with its reason). Standard library only.

  kineto_csv.py -o OUT.csv[.gz] TRACE.json[.gz]...
"""
import argparse
import collections
import csv
import gzip
import io
import json
import os
import statistics
import sys

# Board names the CUDA runtime reports that the spec table knows by another name.
MAP = {
    # "PG509-200" is the HGX A100 40 GB board: deviceProperties give 108 SMs, sm_80 and
    # 42.3 GB of memory, the A100-SXM4-40GB's.
    "NVIDIA A100-PG509-200": "NVIDIA A100-SXM4-40GB",
}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    rows = []
    for path in a.traces:
        d = load(path)
        if not isinstance(d, dict):
            print(f"{path}: not a Kineto trace (no object at the top)", file=sys.stderr)
            continue
        props = d.get("deviceProperties") or []
        dev = {p.get("id"): MAP.get(p.get("name"), p.get("name")) for p in props if isinstance(p, dict)}
        ker = [e for e in d.get("traceEvents", []) if isinstance(e, dict) and e.get("cat") == "kernel"]
        by = collections.defaultdict(list)
        for e in ker:
            args = e.get("args") or {}
            g = (list(args.get("grid") or []) + [1, 1, 1])[:3]
            b = (list(args.get("block") or []) + [1, 1, 1])[:3]
            name = dev.get(args.get("device"), dev.get(0))
            if not name or "dur" not in e:
                continue
            key = (e["name"], tuple(g), tuple(b), int(args.get("shared memory") or 0),
                   int(args.get("registers per thread") or -1), name)
            by[key].append(float(e["dur"]))
        durs = [x for v in by.values() for x in v]
        whole = bool(durs) and all(x == int(x) for x in durs)
        src = path
        for (name, g, b, smem, regs, devname), v in by.items():
            rows.append([name, *g, *b, smem, regs, devname, statistics.median(v) / 1000, "kernel", len(v),
                         1 if whole else 0, src])
        print(f"{src}: {len(ker)} kernel events, {len(by)} launches on {sorted(set(dev.values()))}",
              file=sys.stderr)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kernel", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "smem", "regs",
                "device", "time_ms", "timing", "count", "resolution_us", "source"])
    w.writerows(sorted(rows, key=lambda r: (r[-1], r[0], r[1:7])))
    data = buf.getvalue().encode()
    if a.out.endswith(".gz"):
        with gzip.GzipFile(a.out, "wb", mtime=0) as f:
            f.write(data)
    else:
        with open(a.out, "wb") as f:
            f.write(data)
    print(f"{a.out}: {len(rows)} launches", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
