#!/usr/bin/env python3
"""Whole models: grape's prediction of a transformer's inference against its
measured end-to-end latency, beside NeuSight's and Li et al.'s published
errors on the same runs.

    python3 bench/predict/e2e.py NEUSIGHT [--grape build/tools/grape] [-m MODEL] [--train DIR]

NEUSIGHT is a checkout of github.com/sitar-lab/NeuSight (MIT). Its
scripts/asplos/label/GPU/MODEL-inf-SEQ-BATCH.json holds the measured latency
of one whole forward pass (events around the model's call, the fastest runs
averaged) and the layer count; results/prediction/GPU/neusight/ the same
run's operator graph (one layer, its prologue and epilogue, each operator's
dims) and NeuSight's own prediction; summary/nvidia_inf.csv the published
errors of NeuSight and the baselines. The layer is repeated as NeuSight's
aggregator does (neusight/Prediction/aggregator.py).

Each operator becomes the kernel launch the shim would see: its launch
(name, grid, block) is the one NeuSight's test rows measured for the same
op and dims on that GPU (data/dataset/test), else PyTorch's launch of the
op scaled from the nearest measured row of that op (that GPU's test rows,
then its training rows under --train, then any GPU's: the kernel's name
does not depend on the GPU). Copies (contiguous, where, the embedding
gather) are elementwise kernels of two operands; views (getitem) launch
nothing. grape's kernel times are composed as a stream runs them
(docs/predictor.md, *Paths and runs*): the host issues kernel after kernel
launch_us apart, the device runs each when issued and the previous one has
ended. The sum of grape's harness-inclusive times (each op through a timing
harness, NeuSight's way of summing) is printed beside it. No torch needed.
"""
import argparse
import ast
import collections
import csv
import glob
import json
import gzip
import math
import os
import subprocess
import sys
import tempfile

# The GPUs NeuSight's training rows come from; the others are unseen.
TRAIN_GPUS = {"NVIDIA A100-PCIE-40GB", "Tesla P100-PCIE-16GB", "Tesla P4", "Tesla T4",
              "Tesla V100-PCIE-32GB"}
# NeuSight's test files and the dims their rows give, in that order.
TEST_FILES = {"bmm": ("B", "M", "N", "K"), "linear": ("B", "M", "N", "K"),
              "elem": ("B", "H"), "softmax": ("B", "H"), "ln": ("B", "H")}
# One layer of each family: its first and last operator (aggregator.py).
LAYER = {"bert": ("bert_encoder_layer_0_attention_self_query", "bert_encoder_layer_0_output_layer_norm"),
         "gpt": ("transformer_h_0_ln_1", "add_15"),
         "opt": ("model_decoder_layers_0_self_attn_layer_norm", "view_11")}
# Column names of summary/nvidia_inf.csv.
MODEL_NAMES = {"bert_large": "BERT-Large", "gpt2_large": "GPT2-Large", "gpt3_xl": "GPT3-XL",
               "opt_13": "OPT-1.3B", "gpt3_27": "GPT3-2.7B"}


def gpu_name(folder):
    return folder.replace("_", " ")


class Launches:
    """Measured launches by (GPU, op), each a (dims, name, blocks, block xyz) row."""

    def __init__(self):
        self.rows = collections.defaultdict(list)
        self.exact = {}

    def add(self, dev, op, dims, r):
        blocks = 1
        for c in ("Grid x", "Grid y", "Grid z"):
            blocks *= max(1, int(float(r[c])))
        row = (dims, r["Kernel Name"], blocks, tuple(int(float(r[c])) for c in ("Block x", "Block y", "Block z")))
        self.rows[(dev, op)].append(row)
        self.exact.setdefault((dev, op, dims), row)

    def nearest(self, dev, op, dims):
        """The exact launch, else the row of the same op nearest in log dims:
        that GPU's, else any GPU's. @return (row, exact) or (None, False)."""
        if (dev, op, dims) in self.exact:
            return self.exact[(dev, op, dims)], True
        for keys in ([(dev, op)], [k for k in self.rows if k[1] == op]):
            cands = [r for k in keys for r in self.rows.get(k, [])]
            if cands:
                return min(cands, key=lambda r: sum(abs(math.log(a / b)) for a, b in zip(r[0], dims))), False
        return None, False


def load_launches(test, train):
    L = Launches()
    for f, cols in TEST_FILES.items():
        path = os.path.join(test, f + ".csv")
        if not os.path.exists(path):
            continue
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                L.add(r["Device"], r["OPName"], tuple(int(float(r[c])) for c in cols), r)
    # The training rows: launches of ops a GPU's test rows lack (nearest
    # shapes only; an exact match is the test rows' first).
    for path in sorted(glob.glob(os.path.join(train, "*", "*.csv*"))) if train else []:
        op = os.path.basename(os.path.dirname(path))
        cols = TEST_FILES.get(op, TEST_FILES["elem"])
        if op == "conv":
            continue
        with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as fh:
            for r in csv.DictReader(fh):
                try:
                    dims = tuple(int(float(r[c])) for c in cols)
                except (KeyError, ValueError):
                    continue
                L.add(r["Device"], r["OPName"], dims, r)
    return L


def op_rows(ops, dev, L):
    """grape's CSV rows (kernel, grid, block, op, dims) of one graph node's
    operators, and how many of them had their measured launch."""
    out, exact = [], 0
    for kind, dims in ops:
        if kind == "MEM":
            # (input shapes..., output shape): a copy of the output.
            numel = math.prod(dims[-1])
            op, d, grape_dims = "add", (1, numel), f"{numel}x2"
            grape_op = "elementwise"
        elif kind == "Linear":
            op, d = "linear", (1,) + tuple(dims)
        elif kind == "BMM":
            op, d = "bmm", tuple(dims)
        else:
            op, d = kind[3:], tuple(dims)
        if kind in ("Linear", "BMM"):
            b, m, n, k = d
            grape_op, grape_dims = "gemm", f"{b}x{m}x{k}x{n}"   # C[b,M,K] = A[b,M,N] B[b,N,K]
            work = b * m * k
        elif kind != "MEM":
            grape_op = op
            grape_dims = f"{d[0]}x{d[1]}" if op in ("ln", "softmax") else f"{d[0] * d[1]}x0"
            work = d[0] if op in ("ln", "softmax") else d[0] * d[1]
        else:
            work = numel
        if work <= 1:
            continue
        ref, hit = L.nearest(dev, op, d)
        if ref is None and grape_op not in ("gemm", "ln", "softmax"):
            # No row of this elementwise op anywhere: one of its arity, the
            # operands given (a unary op reads one tensor and writes one).
            unary = op.endswith("u") or op in ("relu", "gelu", "tanh")
            ref, hit = L.nearest(dev, "gelu" if unary else "add", d)
            if grape_dims.endswith("x0"):
                grape_dims = grape_dims[:-1] + ("2" if unary else "3")
        if ref is None:
            sys.exit(f"no measured launch of {op} on any GPU to take a kernel name from")
        rd = ref[0]
        rwork = (rd[0] * rd[1] * rd[3] if kind in ("Linear", "BMM") else
                 rd[0] if op in ("ln", "softmax") else rd[0] * rd[1])
        blocks = ref[2] if hit else max(1, round(ref[2] * work / rwork))
        exact += hit and kind != "MEM"
        out.append([ref[1], blocks, 1, 1, *ref[3], grape_op, grape_dims, dev])
    return out, exact


def layer_span(nodes, model):
    fam = next(f for f in LAYER if f in model)
    names = [n["Name"] for n in nodes]
    first, last = LAYER[fam]
    if first not in names and fam == "gpt":
        first += "_grad"
    return names.index(first), names.index(last) + 1


def launch_gap_ms(model_path):
    with open(model_path) as f:
        for line in f:
            if line.startswith("launch_us"):
                return float(line.split()[1]) / 1000
    sys.exit(f"{model_path}: no launch_us line")


def compose(kernels_ms, gap_ms):
    """A stream: kernel i is issued gap_ms after kernel i-1 and starts when
    issued and the previous one has ended."""
    issued = end = 0.0
    for k in kernels_ms:
        issued += gap_ms
        end = max(issued, end) + k
    return end


def published(summary):
    """{(GPU folder, model, batch): {method: error %}} of summary/nvidia_inf.csv."""
    out = {}
    with open(summary, newline="") as f:
        rows = list(csv.reader(f))
    i = 0
    while i < len(rows):
        if len(rows[i]) == 1 and rows[i][0]:
            gpu, header, batches = rows[i][0], rows[i + 1], rows[i + 2]
            models, last = [], ""
            for c in header[1:]:
                last = c or last
                models.append(last)
            j = i + 3
            while j < len(rows) and len(rows[j]) > 1:
                for col, (m, b) in enumerate(zip(models, batches[1:])):
                    v = rows[j][col + 1] if col + 1 < len(rows[j]) else ""
                    if v:
                        out.setdefault((gpu, m, int(b)), {})[rows[j][0]] = float(v)
                j += 1
            i = j
        else:
            i += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("neusight", help="a checkout of NeuSight")
    ap.add_argument("--grape", default="build/tools/grape")
    ap.add_argument("-m", "--model", help="model file (default: the one built into grape)")
    ap.add_argument("--train", default="neusight/train",
                    help="NeuSight's training rows, for launches its test rows lack (skipped if absent)")
    a = ap.parse_args()
    root = os.path.join(a.neusight, "scripts", "asplos")
    L = load_launches(os.path.join(root, "data", "dataset", "test"),
                      a.train if os.path.isdir(a.train) else None)
    pub = published(os.path.join(root, "summary", "nvidia_inf.csv"))
    model_file = a.model or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                         "data", "default_model.txt")
    gap = launch_gap_ms(model_file)

    runs, rows = [], []
    for label in sorted(glob.glob(os.path.join(root, "label", "*", "*-inf-*.json"))):
        folder, run = os.path.basename(os.path.dirname(label)), os.path.basename(label)[:-5]
        model, _, seq, batch = run.split("-")
        graph = os.path.join(root, "results", "prediction", folder, "neusight", run + ".csv")
        if model not in MODEL_NAMES or not os.path.exists(graph):
            continue
        with open(label) as f:
            lab = json.load(f)
        with open(graph[:-4] + ".json") as f:
            ns = json.load(f)
        with open(graph, newline="") as f:
            nodes = list(csv.DictReader(f))
        with open(label[:-5] + ".csv", newline="") as f:
            measured_op = {n["Name"]: float(n["latency"]) for n in csv.DictReader(f)}
        s, e = layer_span(nodes, model)
        dev = gpu_name(folder)
        first = len(rows)
        exact = total = 0
        starts = []   # each node's first row
        for n in nodes:
            starts.append(len(rows))
            ops = ast.literal_eval(n["FwOps"]) if n["FwOps"] not in ("", "[]") else []
            if n["OpName"] == "getitem":
                ops = []   # a view: no kernel
            r, hit = op_rows([tuple(o) for o in ops], dev, L)
            rows += r
            exact += hit
            total += sum(1 for o in ops if o[0] != "MEM")
        starts.append(len(rows))
        # One layer measured op by op (events around each, as the test rows):
        # its operators that launch kernels.
        layer_ms = sum(measured_op[n["Name"]] for i, n in enumerate(nodes[s:e], s)
                       if starts[i + 1] > starts[i])
        runs.append({"gpu": dev, "folder": folder, "model": model, "batch": int(batch),
                     "first": first, "end": len(rows), "layer": (starts[s], starts[e]),
                     "layers": int(lab["num_layer"]), "measured": float(lab["e2e_latency"]),
                     "neusight": float(ns["e2e_latency"]), "exact": exact, "ops": total,
                     "layer_ms": layer_ms})

    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "ops.csv"), os.path.join(tmp, "pred.csv")
        with open(src, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kernel", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                        "op", "dims", "device"])
            w.writerows(rows)
        cmd = [a.grape, "predict", "--csv", src, "-o", out] + (["-m", a.model] if a.model else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"grape predict failed: {p.stderr}")
        with open(out, newline="") as f:
            pred = list(csv.DictReader(f))
    if any(not r["predicted_ms"] for r in pred):
        sys.exit("grape predicted no time for some operators: " + p.stderr)

    print("| GPU | model | batch | layers | measured ms | grape ms (error %) | NeuSight % | Li et al. % | "
          "one layer, measured / grape ms (error %) | launches measured |")
    print("|---|---|---:|---:|---:|---|---:|---:|---|---|")
    errs = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in runs:
        ls, le = r["layer"]
        order = list(range(r["first"], ls)) + list(range(ls, le)) * r["layers"] + list(range(le, r["end"]))
        kern = compose([float(pred[i]["predicted_ms"]) for i in order], gap)
        harness = sum(float(pred[i]["harness_ms"]) for i in order)
        layer = sum(float(pred[i]["harness_ms"]) for i in range(ls, le))
        m, lm = r["measured"], r["layer_ms"]
        cell = pub.get((r["folder"], MODEL_NAMES[r["model"]], r["batch"]), {})
        for e in (errs["training GPUs" if r["gpu"] in TRAIN_GPUS else "unseen GPUs"], errs[r["gpu"]]):
            for name, v in (("grape", kern), ("harness", harness), ("NeuSight", r["neusight"])):
                e[name].append(100 * abs(v - m) / m)
            e["layer"].append(100 * abs(layer - lm) / lm)
            if "Li et al." in cell:
                e["Li"].append(cell["Li et al."])
        print(f"| {r['gpu']} | {MODEL_NAMES[r['model']]} | {r['batch']} | {r['layers']} | {m:.1f} | "
              f"{kern:.1f} ({e['grape'][-1]:.1f}) | {e['NeuSight'][-1]:.1f} | "
              f"{cell.get('Li et al.', float('nan')):.1f} | {lm:.2f} / {layer:.2f} ({e['layer'][-1]:.1f}) | "
              f"{r['exact']} of {r['ops']} |")
    print()
    print("Mean absolute error %, whole model (one layer for the layer column):")
    print()
    print("| GPU | runs | grape | grape, harness times summed | NeuSight | Li et al. | one layer, grape |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    gpus = sorted(k for k in errs if not k.endswith(" GPUs"))
    for kind in gpus + ["training GPUs", "unseen GPUs"]:
        e = errs[kind]
        if e["grape"]:
            mean = {k: f"{sum(v) / len(v):.1f}" if v else "-" for k, v in e.items()}
            print(f"| {kind} | {len(e['grape'])} | {mean['grape']} | {mean['harness']} | "
                  f"{mean['NeuSight']} | {mean.get('Li', '-')} | {mean['layer']} |")

if __name__ == "__main__":
    sys.exit(main())
