#!/usr/bin/env python3
"""bench/predict/e2e.py on the one NeuSight run of data/neusight-e2e (GPT-2
Large, batch 4, on the V100), the subset's rows as NeuSight's test rows:

- the run's kernels are composed as a stream runs them: a host-bound run
  costs its issue, a device-bound one its kernels, not their sum;
- the layer is repeated num_layer times: the whole model grows by one layer's
  time per layer;
- a view (getitem) launches nothing: the same node as a copy costs more.

    check_e2e.py --grape build/tools/grape --source .
"""
import argparse
import gzip
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

RUN = os.path.join("scripts", "asplos", "label", "Tesla_V100-PCIE-32GB", "gpt2_large-inf-1024-4")
GRAPH = os.path.join("scripts", "asplos", "results", "prediction", "Tesla_V100-PCIE-32GB", "neusight",
                     "gpt2_large-inf-1024-4.csv")
TEST_ROWS = {"bmm": ["bmm"], "linear": ["linear"], "elem": ["add", "gelu"], "softmax": ["softmax"],
             "ln": ["ln"]}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def lay_out(tmp, source):
    ns = os.path.join(tmp, "NeuSight")
    shutil.copytree(os.path.join(source, "data", "neusight-e2e", "scripts"), os.path.join(ns, "scripts"))
    test = os.path.join(ns, "scripts", "asplos", "data", "dataset", "test")
    os.makedirs(test)
    for cls, ops in TEST_ROWS.items():
        with open(os.path.join(test, cls + ".csv"), "w") as out:
            for i, op in enumerate(ops):
                with gzip.open(os.path.join(source, "data", "neusight-subset", op + ".csv.gz"), "rt") as f:
                    lines = f.read().splitlines(True)
                out.writelines(lines if i == 0 else lines[1:])
    return ns


def run(a, ns):
    p = subprocess.run([sys.executable, os.path.join(a.source, "bench", "predict", "e2e.py"), ns,
                        "--grape", a.grape], capture_output=True, text=True, timeout=60)
    m = re.search(r"^\| Tesla V100-PCIE-32GB \| GPT2-Large \| 4 \| (\d+) \| [\d.]+ \| ([\d.]+) \(.*"
                  r"\| [\d.]+ / ([\d.]+) \(", p.stdout, re.M)
    if p.returncode != 0 or not m:
        fail(f"e2e.py printed no row of the run:\n{p.stdout}\n{p.stderr}")
    return int(m.group(1)), float(m.group(2)), float(m.group(3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grape", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()

    spec = importlib.util.spec_from_file_location("e2e", os.path.join(a.source, "bench", "predict", "e2e.py"))
    e2e = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(e2e)
    # 10 kernels of 1 us issued 4 us apart: the issue, 40 us and the last kernel.
    if abs(e2e.compose([0.001] * 10, 0.004) - 0.041) > 1e-12:
        fail(f"a host-bound stream: {e2e.compose([0.001] * 10, 0.004)} ms, want 0.041")
    # 3 kernels of 1 ms: the first issue, then the device's time.
    if abs(e2e.compose([1.0] * 3, 0.004) - 3.004) > 1e-12:
        fail(f"a device-bound stream: {e2e.compose([1.0] * 3, 0.004)} ms, want 3.004")

    with tempfile.TemporaryDirectory() as tmp:
        ns = lay_out(tmp, a.source)
        label = os.path.join(ns, RUN + ".json")
        with open(label) as f:
            lab = json.load(f)
        times = {}
        for layers in (1, 2, 3):
            with open(label, "w") as f:
                json.dump(dict(lab, num_layer=layers), f)
            got, times[layers], layer = run(a, ns)
            if got != layers:
                fail(f"the run printed {got} layers, its label says {layers}")
        one, two = times[2] - times[1], times[3] - times[2]
        # Each layer adds its kernels (device-bound: its harness-inclusive
        # time less an offset per op), the same for every layer.
        if not (0.7 * layer < one <= layer + 0.1 and abs(two - one) <= 0.2):
            fail(f"whole model with 1, 2, 3 layers: {times} ms; one layer's ops {layer} ms")
        with open(label, "w") as f:
            json.dump(lab, f)
        base = run(a, ns)[1]
        graph = os.path.join(ns, GRAPH)
        with open(graph) as f:
            text = f.read()
        # split's outputs (views of the fused QKV projection) as copies.
        with open(graph, "w") as f:
            f.write(re.sub(r"^(getitem_[567]),getitem,", r"\1,contiguous,", text, flags=re.M))
        copies = run(a, ns)[1]
        if not copies > base + 1:
            fail(f"three views per layer as copies: {copies} ms, as views {base} ms")
    print(f"composed: host-bound and device-bound streams; 1/2/3 layers {times[1]:.1f} / "
          f"{times[2]:.1f} / {times[3]:.1f} ms (a layer's ops {layer:.2f} ms); views as copies "
          f"{base:.1f} -> {copies:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
