#!/usr/bin/env python3
"""NeuSight as a baseline: its per-operator predictor, reimplemented from the
paper and its public code, trained on the rows grape's default model is
trained on, and scored beside grape on NeuSight's own held-out rows.

    PY=/path/to/python-with-torch   # torch on CPU is enough
    $PY bench/predict/neusight.py --test NEUSIGHT/scripts/asplos/data/dataset/test \
        [--train neusight/train] [--devices data/neusight-subset/devices] \
        [--grape build/tools/grape] [--out grape-neusight] \
        [--classes bmm,linear,elem,softmax,ln] [--epochs N] [--minutes M] [--threads T]

NEUSIGHT is a checkout of https://github.com/sitar-lab/NeuSight (MIT); its
`dataset/test/*.csv` hold real models' operator shapes (BERT, GPT-2, GPT-3,
OPT, Switch) measured on the five training GPUs and on three GPUs no
training row comes from (A100 80GB PCIe, H100 80GB HBM3, L4). Nothing of
NeuSight is imported: this file follows its method, described below.

NeuSight (Lee, Phanishayee, Mahajan, ASPLOS 2025) predicts an operator's
latency from its tiles and waves: num_wave = ceil(blocks / SMs), the time
of one wave is the work of one tile on every SM over an effective
bandwidth, and that bandwidth is the roofline bound times a utilisation
    util = sigmoid(gamma) - sigmoid(alpha) / num_wave
whose (alpha, beta, gamma) an MLP predicts per class (8 layers of 512, ReLU)
from log2 of the tile's FLOPs, its bytes, and the wave's bytes against the
device's memory and L2, each per SM and normalised by the GPU's peak FLOP
rate, bandwidth, memory and L2. Trained per class on SMAPE with AdamW (the
class's learning rate and batch), 80/20 train/validation split, the epoch
with the best validation MAPE kept. Its training sets keep only large
elementwise (B > 8192, H > 512), softmax and layer-norm (B > 4096,
H > 512) shapes; the same filter is applied here (--all-rows turns it
off). Tiles come from the measured kernel's name (`sgemm_AxB`,
`tilesizeAxB`), a row for softmax and layer norm, and for elementwise ops
the power of two at or above the elements per block.

NeuSight trains 100 epochs (its run_train_nvidia_neusight.py) on a GPU.
--epochs and --minutes (per class) bound it on a CPU; the table says how
many epochs each class ran, so a shortened run is never passed off as the
recipe. grape is scored on its `harness_ms` (the same event-timed op call
NeuSight's `Latency` measures) from `grape predict --csv` of the same rows,
with the default model (trained on the same training rows, unfiltered).
"""
import argparse
import csv
import glob
import gzip
import json
import math
import os
import re
import subprocess
import sys
import time

import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402

CLASSES = {
    "bmm": ["bmm"],
    "linear": ["linear"],
    "elem": ["add", "mul", "pow", "div", "addu", "mulu", "powu", "divu", "relu", "gelu", "tanh"],
    "softmax": ["softmax"],
    "ln": ["ln"],
}
# NeuSight's configs (data/predictor/MLP_WAVE/*/config.json): learning rate, batch.
RECIPE = {"bmm": (1e-5, 128), "linear": (5e-3, 128), "elem": (5e-4, 64),
          "softmax": (1e-6, 16), "ln": (1e-6, 16)}
# Flops and bytes per output element (NeuSight's dataset.py counts).
OPS_PER_OUT = {"ln": 6.0, "softmax": 5.0}
UNARY = {"ln", "softmax", "tanh", "addu", "mulu", "powu", "divu", "relu", "gelu"}
LARGE = {"elem": (8192, 512), "softmax": (4096, 512), "ln": (4096, 512)}


def read_rows(paths):
    rows = []
    for p in paths:
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rt") as f:
            rows.extend(csv.DictReader(f))
    return rows


def load_devices(dirs):
    dev = {}
    for d in dirs:
        for p in glob.glob(os.path.join(d, "*.json")):
            with open(p) as f:
                j = json.load(f)
            dev[j["Device"]] = j
    return dev


def gemm_tile(kname):
    k = kname.lower()
    m = re.search(r"sgemm_(\d+)x(\d+)", k) or re.search(r"tilesize(\d+)x(\d+)", k)
    return (float(m.group(1)), float(m.group(2))) if m else None


def features(cls, rows, dev):
    """Per row: the MLP's four inputs, num_wave, and the time per wave
    before utilisation (seconds), as NeuSight's MLPWaveMM / MLPWaveVec
    compute them. Rows it cannot tile are dropped (mask)."""
    n = len(rows)
    x = torch.ones(n, 4, dtype=torch.float64)
    wave = torch.ones(n, dtype=torch.float64)
    base = torch.ones(n, dtype=torch.float64)
    ok = torch.ones(n, dtype=torch.bool)
    for i, r in enumerate(rows):
        d = dev.get(r["Device"])
        if d is None:
            ok[i] = False
            continue
        sm, flops, bw = float(d["Num_Sm"]), float(d["SingleFLOPs"]), float(d["Mem_Bw"])
        mem, l2 = float(d["Dev_Mem"]), float(d["L2Cache"])
        B = float(r["B"])
        if cls in ("bmm", "linear"):
            t = gemm_tile(r["Kernel Name"])
            if t is None:
                ok[i] = False
                continue
            M, N, K = float(r["M"]), float(r["N"]), float(r["K"])
            tm, tn, tk = t[1], N, t[0]  # NeuSight: tile y is M's, tile x K's, N whole
            blocks = B * math.ceil(M / tm) * math.ceil(K / tk)
            op_flops = 2.0 * (math.ceil(M / tm) * tm * N * math.ceil(K / tk) * tk) / 1e9
            op_mem = 4.0 * (M * N + N * K + M * K) / 2**30
            tile_ops = 2.0 * tm * tn * tk / 1e9
            tile_mem = 4.0 * (tm * tn + tn * tk + tm * tk) / 2**20
        else:
            op = r["OPName"]
            H = float(r["H"])
            if cls in ("softmax", "ln"):
                tile = H
            else:
                g = float(r["Grid x"]) * float(r["Grid y"]) * float(r["Grid z"])
                tile = 2.0 ** math.ceil(math.log2(math.ceil(B * H / g)))
            opo = OPS_PER_OUT.get(op, 1.0)
            memo = (1 if op in UNARY else 2) * 4.0 + 4.0
            blocks = B * math.ceil(H / tile)
            op_flops = opo * math.ceil(H / tile) * tile / 1e9
            op_mem = memo * H / 2**30
            tile_ops = opo * tile / 1e9
            tile_mem = memo * tile / 2**30 * 1024
        nw = math.ceil(blocks / sm)
        roof = min(flops, op_flops / op_mem * bw)  # GFLOP/s
        wave[i] = nw
        base[i] = nw * tile_ops * sm / roof  # time at full utilisation, s
        x[i] = torch.tensor([tile_ops / (flops / 1000 / sm), tile_mem / (bw / sm),
                nw * tile_mem / (mem * 1024 / sm), nw * tile_mem / (l2 * 1024 / sm)])
    x = torch.log2(x)
    return x, wave, base, ok


def neusight_net():
    layers = [torch.nn.Linear(4, 512), torch.nn.ReLU()]
    for _ in range(6):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(512, 3))
    return torch.nn.Sequential(*layers)


def predict_s(net, x, wave, base):
    out = net(x)
    util = torch.sigmoid(out[:, 2]) - torch.sigmoid(out[:, 0]) / wave
    return base / util


def train_class(cls, x, wave, base, y, epochs, minutes, seed):
    lr, batch = RECIPE[cls]
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    n = len(y)
    perm = torch.randperm(n, generator=g)
    ntr = int(0.8 * n)
    tr, va = perm[:ntr], perm[ntr:]
    X, W, Bs, Y = (a.float() for a in (x, wave, base, y))
    net = neusight_net()
    opt = torch.optim.AdamW(net.parameters(), lr=lr)
    best, best_state, done = float("inf"), None, 0
    t0 = time.time()
    for ep in range(epochs):
        net.train()
        order = tr[torch.randperm(ntr, generator=g)]
        for s in range(0, ntr, batch):
            idx = order[s:s + batch]
            p = predict_s(net, X[idx], W[idx], Bs[idx])
            loss = torch.mean(torch.abs((Y[idx] - p) / (Y[idx] + p)))
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            p = predict_s(net, X[va], W[va], Bs[va]).clamp(min=0)
            err = float(torch.mean(torch.abs(p - Y[va]) / Y[va]))
        done = ep + 1
        if err < best:
            best = err
            best_state = {k: v.clone() for k, v in net.state_dict().items()}
        if minutes and time.time() - t0 > 60 * minutes:
            break
    net.load_state_dict(best_state)
    return net, done, best, time.time() - t0


def grape_harness(grape, csv_in, out):
    """grape's harness-inclusive time, its 80% interval and its regime per row."""
    subprocess.run([grape, "predict", "--csv", csv_in, "-o", out], check=True,
                   stderr=subprocess.DEVNULL)
    nan = float("nan")
    with open(out) as f:
        return [(float(r["harness_ms"]) if r["harness_ms"] else nan,
                 float(r["harness_lower_ms"]) if r["harness_lower_ms"] else nan,
                 float(r["harness_upper_ms"]) if r["harness_upper_ms"] else nan,
                 r["regime"]) for r in csv.DictReader(f)]


def mape(pred, meas):
    return 100 * float(torch.mean(torch.abs(pred - meas) / meas))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--test", required=True, help="NeuSight's scripts/asplos/data/dataset/test")
    ap.add_argument("--train", default="neusight/train",
                    help="the training rows as docs/predictor.md lays them out")
    ap.add_argument("--devices", default="data/neusight-subset/devices",
                    help="NeuSight's GPU spec files (its test folder's device_configs too)")
    ap.add_argument("--grape", default="build/tools/grape")
    ap.add_argument("--out", default="grape-neusight")
    ap.add_argument("--classes", default="bmm,linear,elem,softmax,ln")
    ap.add_argument("--epochs", type=int, default=100, help="NeuSight's 100 by default")
    ap.add_argument("--minutes", type=float, default=0, help="per-class training bound (0: none)")
    ap.add_argument("--threads", type=int, default=2,
                    help="torch's CPU threads (2: the figures of docs/predictor.md)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--all-rows", action="store_true", help="no large-shape filter")
    a = ap.parse_args()
    # Checked before minutes of training, not after them.
    missing = [os.path.join(a.test, cls + ".csv") for cls in a.classes.split(",")
               if not os.path.isfile(os.path.join(a.test, cls + ".csv"))]
    if missing:
        sys.exit(f"neusight.py: no {', '.join(missing)}: --test names NeuSight's "
                 "scripts/asplos/data/dataset/test (docs/predictor.md)")

    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    dev = load_devices([a.devices, os.path.join(a.test, "device_configs")])
    train_gpus = set()
    lines, cover, per_gpu = [], [], []
    for cls in a.classes.split(","):
        paths = [p for op in CLASSES[cls] for p in glob.glob(os.path.join(a.train, op, "*.csv*"))]
        rows = read_rows(paths)
        train_gpus |= {r["Device"] for r in rows}
        if cls in LARGE and not a.all_rows:
            b0, h0 = LARGE[cls]
            rows = [r for r in rows if float(r["B"]) > b0 and float(r["H"]) > h0]
        x, wave, base, ok = features(cls, rows, dev)
        y = torch.tensor([float(r["Latency"]) / 1000 for r in rows], dtype=torch.float64)
        net, done, val, secs = train_class(cls, x[ok], wave[ok], base[ok], y[ok],
                                           a.epochs, a.minutes, a.seed)
        test_csv = os.path.join(a.test, cls + ".csv")
        trows = read_rows([test_csv])
        tx, tw, tb, tok = features(cls, trows, dev)
        with torch.no_grad():
            ns = predict_s(net, tx[tok].float(), tw[tok].float(),
                           tb[tok].float()).clamp(min=0).double() * 1000
        meas = torch.tensor([float(r["Latency"]) for r in trows], dtype=torch.float64)[tok]
        gh = [g for g, k in zip(grape_harness(a.grape, test_csv,
                                              os.path.join(a.out, "grape_" + cls + ".csv")),
                                tok.tolist()) if k]
        gr = torch.tensor([g[0] for g in gh], dtype=torch.float64)
        inside = [g[1] <= m <= g[2] for g, m in zip(gh, meas.tolist())]
        regime = [g[3] for g in gh]
        devs = [r["Device"] for r, k in zip(trows, tok.tolist()) if k]
        with open(os.path.join(a.out, "neusight_" + cls + ".csv"), "w") as f:
            w = csv.writer(f)
            w.writerow(["Device", "Latency", "neusight_ms", "grape_harness_ms"])
            w.writerows(zip(devs, meas.tolist(), ns.tolist(), gr.tolist()))
        seen = torch.tensor([d in train_gpus for d in devs])
        cells = []
        for part in (seen, ~seen):
            if part.sum() == 0:
                cells.append("–")
                continue
            g, n = mape(gr[part], meas[part]), mape(ns[part], meas[part])
            cells.append("%.1f / %.1f (%.2f×), %d rows" % (g, n, g / n, int(part.sum())))
        lines.append("| %s | %s | %s | %d rows, %d epochs, %.0f s, val %.1f%% |"
                     % (cls, cells[0], cells[1], int(ok.sum()), done, secs, 100 * val))
        print(lines[-1], flush=True)
        for reg in ("known", "known-extrapolated", "transfer"):
            sel = [c for c, g in zip(inside, regime) if g == reg]
            if sel:
                cover.append("| %s | %s | %d | %.1f |" % (cls, reg, len(sel), 100 * sum(sel) / len(sel)))
        for d in sorted(set(devs)):
            part = torch.tensor([x == d for x in devs])
            per_gpu.append("| %s | %s%s | %.1f / %.1f |" % (
                cls, d, "" if d in train_gpus else " (unseen)",
                mape(gr[part], meas[part]), mape(ns[part], meas[part])))
    print()
    print("| class | training GPUs: grape / NeuSight MAPE % (ratio) | unseen GPUs | NeuSight's training |")
    print("|---|---|---|---|")
    print("\n".join(lines))
    print()
    print("| class | GPU | grape / NeuSight MAPE % |")
    print("|---|---|---|")
    print("\n".join(per_gpu))
    print()
    print("| class | grape's regime | rows | 80% interval (harness) holds % |")
    print("|---|---|---:|---:|")
    print("\n".join(cover))


if __name__ == "__main__":
    sys.exit(main())
