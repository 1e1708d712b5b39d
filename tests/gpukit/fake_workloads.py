#!/usr/bin/env python3
"""fake_workloads.py - stands in for bench/gpu/workloads.py in the kit's dry run on a
machine without torch: same command line, same JSON lines, made-up numbers. It lets the
dry run go through kit.py's torch paths (routes comparison, workload table, op CSVs and
the predictor's MAPE). FAKE_DIGEST_BAD=1 makes grape's variant differ from eager, so the
test can prove that a digest mismatch is reported as a failure."""
import argparse
import csv
import json
import os

p = argparse.ArgumentParser()
p.add_argument("--workloads", default="mlp,lstm,gpt,moe")
p.add_argument("--variants", default="eager,cudagraph")
p.add_argument("--iters", type=int, default=30)
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--label", default="")
p.add_argument("--out", default="")
p.add_argument("--deadline", type=float, default=0)
p.add_argument("--routes", default="")
p.add_argument("--opbench", default="")
p.add_argument("--per-op", type=int, default=30)
p.add_argument("--sweep", default="")
p.add_argument("--repeat-eager", action="store_true")
a = p.parse_args()


def emit(rec):
    with open(a.out, "a") as f:
        f.write(json.dumps(rec) + "\n")


if a.routes:
    # no kernels launched: the shim's count (0) must agree with this one
    emit({"kind": "routes", "section": a.routes, "status": "ok", "profiler_kernels": 0, "top": []})
elif a.opbench:
    os.makedirs(a.opbench, exist_ok=True)
    with open(os.path.join(a.opbench, "bmm.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["OPName", "Latency", "Device", "Kernel Name", "Grid x", "Grid y", "Grid z", "Block x", "Block y",
                    "Block z", "B", "M", "N", "K"])
        w.writerow(["bmm", 0.05, "NVIDIA H200", "sm90_xmma_gemm", 4, 1, 6, 256, 1, 1, 6, 27, 21, 390])
    emit({"kind": "opbench", "status": "ok", "rows": {"bmm": 1}})
elif a.sweep:
    # one op through the harness and its kernel timed alone, in the sweep's two formats
    os.makedirs(a.sweep, exist_ok=True)
    with open(os.path.join(a.sweep, "ln.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["OPName", "Latency", "Device", "Kernel Name", "Grid x", "Grid y", "Grid z", "Block x", "Block y",
                    "Block z", "Kernels", "B", "H"])
        w.writerow(["ln", 0.06, "NVIDIA H200", "vectorized_layer_norm_kernel", 65536, 1, 1, 256, 1, 1, ";", 65536, 4096])
    with open(os.path.join(a.sweep, "kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "smem", "regs", "device",
                    "time_ms", "timing", "op", "dims", "source"])
        w.writerow(["vectorized_layer_norm_kernel", 65536, 1, 1, 256, 1, 1, 0, 32, "NVIDIA H200", 0.4, "kernel",
                    "layernorm", "65536x4096", "sweep ln"])
    emit({"kind": "sweep", "status": "ok", "rows": {"ln": 1}, "kernel_rows": 1})
else:
    for wl in a.workloads.split(","):
        for v in a.variants.split(","):
            label = a.label or v
            bad = label == "grape" and os.environ.get("FAKE_DIGEST_BAD") == "1"
            emit({"kind": "workload", "workload": wl, "variant": v, "label": a.label, "status": "ok",
                  "iters": a.iters, "median_ms": 1.0 if label == "eager" else 0.5,
                  "digest": "bad" if bad else "d" + wl,
                  **({"digest_repeat": "d" + wl} if a.repeat_eager and v == "eager" else {})})
