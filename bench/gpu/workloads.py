#!/usr/bin/env python3
"""workloads.py - PyTorch workloads of grape's GPU kit (pure torch, random weights, no downloads).

DESIGN
Each workload is a small, launch-bound loop with the kind of control flow grape must
handle, written once and run in several variants so the variants compare like for like:
  mlp   small-batch MLP training step with a loss readback (launch-bound)
  lstm  LSTM-cell loop over variable-length sequences (a different kernel count per batch)
  gpt   tiny GPT greedy decode with a growing KV cache and a data-dependent early stop
  moe   top-1 mixture-of-experts: the expert of each step is read back from the device
Variants: eager; cudagraph (torch.cuda.CUDAGraph, one graph per shape or expert where
the workload allows it); compile (torch.compile mode="reduce-overhead"). Running the eager
variant in a process under LD_PRELOAD=libgrape.so (GRAPE_MODE=graph) is grape's variant:
the kit does that, this file does not know about grape. Inputs come from a seeded CPU
generator, weights from a seeded CPU init, so every process computes the same numbers;
each run ends with a SHA-256 digest of its outputs, so bit-identity across processes and
variants is one string comparison.

Other modes: --routes SECTION (run one small section inside the torch profiler and report
its kernel count, for comparison with the shim's launch count of the same process) and
--opbench DIR (time single ops, NeuSight's method and CSV format, for the predictor check);
--sweep DIR (time a sweep of single ops of every class, from the smallest to the shapes real
layers use and beyond the predictor's training range, both as an op through NeuSight's
harness and as the op's kernels on the device: rows grape train takes as this GPU's data).
Output: one JSON object per line to --out (appended, flushed after each result).
"""
import argparse
import collections
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time
import traceback

T0 = time.time()


def log(msg):
    print(f"[workloads {time.time() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def emit(path, rec):
    rec["elapsed_s"] = round(time.time() - T0, 2)
    line = json.dumps(rec, sort_keys=True)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")
    print(line, flush=True)


def setup_torch():
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:  # deterministic mode would also fill every torch.empty: extra kernels in the timings
        torch.utils.deterministic.fill_uninitialized_memory = False
    except AttributeError:
        pass
    return torch


class Digest:
    """SHA-256 over output tensors, in the order they are added."""

    def __init__(self):
        self.h = hashlib.sha256()
        self.n = 0

    def add(self, t):
        self.h.update(t.detach().float().contiguous().cpu().numpy().tobytes())
        self.n += 1

    def hex(self):
        return self.h.hexdigest()[:16]


def gen(torch, seed):
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return g


def capture(torch, fn):
    """A CUDA graph of fn() as the CUDA graphs docs ask: warm-up on a side stream first
    (lazy initialisation, cuBLAS workspaces), then capture. Returns (graph, fn's output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


# --------------------------------------------------------------------------- mlp
def wl_mlp(torch, variant, iters, dev):
    nn = torch.nn
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 64)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = gen(torch, 11)
    data = [(torch.randn(32, 256, generator=g).to(dev), torch.randn(32, 64, generator=g).to(dev))
            for _ in range(iters)]
    loss_fn = nn.MSELoss()
    dig = Digest()
    times = []
    if variant in ("eager", "compile"):
        fwd = torch.compile(model, mode="reduce-overhead") if variant == "compile" else model
        for x, y in data:
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(fwd(x), y)
            loss.backward()
            opt.step()
            lv = loss.item()
            times.append(time.perf_counter() - t)
            dig.h.update(repr(lv).encode())
    elif variant == "cudagraph":
        sx, sy = data[0][0].clone(), data[0][1].clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        # warm-up on a side stream as the CUDA graphs docs ask; it changes the weights,
        # so keep and restore them to stay identical to eager
        saved = [p.detach().clone() for p in model.parameters()]
        with torch.cuda.stream(s):
            for _ in range(2):
                opt.zero_grad(set_to_none=True)
                loss_fn(model(sx), sy).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            sloss = loss_fn(model(sx), sy)
            sloss.backward()
            opt.step()
        with torch.no_grad():
            for p, q in zip(model.parameters(), saved):
                p.copy_(q)
        for x, y in data:
            t = time.perf_counter()
            sx.copy_(x)
            sy.copy_(y)
            graph.replay()
            lv = sloss.item()
            times.append(time.perf_counter() - t)
            dig.h.update(repr(lv).encode())
    else:
        return None
    for p in model.parameters():
        dig.add(p)
    return times, dig


# --------------------------------------------------------------------------- lstm
def wl_lstm(torch, variant, iters, dev):
    nn = torch.nn
    torch.manual_seed(2)
    cell = nn.LSTMCell(128, 256).to(dev)
    head = nn.Linear(256, 32).to(dev)
    B, LMAX = 16, 24
    rnd = random.Random(12)
    g = gen(torch, 12)
    data = [(torch.randn(LMAX, B, 128, generator=g).to(dev), rnd.randint(4, LMAX)) for _ in range(iters)]
    dig = Digest()
    times = []

    def seq(step, x, n):
        h = torch.zeros(B, 256, device=dev)
        c = torch.zeros(B, 256, device=dev)
        for i in range(n):
            h, c = step(x[i], (h, c))
        return head(h)

    with torch.no_grad():
        if variant in ("eager", "compile"):
            step = torch.compile(cell, mode="reduce-overhead") if variant == "compile" else cell
            for x, n in data:
                t = time.perf_counter()
                y = seq(step, x, n)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
                dig.add(y)
        elif variant == "cudagraph":
            # one graph per sequence length: the shapes are static within a length
            sx = torch.zeros(LMAX, B, 128, device=dev)
            graphs = {}
            for x, n in data:
                t = time.perf_counter()
                sx.copy_(x)
                if n not in graphs:
                    graphs[n] = capture(torch, lambda: seq(cell, sx, n))
                gr, out = graphs[n]
                gr.replay()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
                dig.add(out)
        else:
            return None
    return times, dig


# --------------------------------------------------------------------------- gpt
class TinyGPT:
    def __init__(self, torch, dev, vocab=512, d=256, layers=4, heads=4, ctx=96):
        nn = torch.nn
        torch.manual_seed(3)
        self.t, self.d, self.h = torch, d, heads
        self.emb = nn.Embedding(vocab, d).to(dev)
        self.pos = nn.Embedding(ctx, d).to(dev)
        self.blocks = []
        for _ in range(layers):
            self.blocks.append(dict(ln1=nn.LayerNorm(d).to(dev), qkv=nn.Linear(d, 3 * d).to(dev),
                                    proj=nn.Linear(d, d).to(dev), ln2=nn.LayerNorm(d).to(dev),
                                    fc1=nn.Linear(d, 4 * d).to(dev), fc2=nn.Linear(4 * d, d).to(dev)))
        self.lnf = nn.LayerNorm(d).to(dev)
        self.out = nn.Linear(d, vocab, bias=False).to(dev)

    def step(self, tok, pos, cache):
        """tok: (1, T) new tokens at positions pos..pos+T-1; cache: per layer (k, v) or None."""
        t, F = self.t, self.t.nn.functional
        T = tok.shape[1]
        x = self.emb(tok) + self.pos(t.arange(pos, pos + T, device=tok.device))[None]
        new = []
        for blk, kv in zip(self.blocks, cache):
            q, k, v = blk["qkv"](blk["ln1"](x)).split(self.d, dim=-1)
            sh = lambda z: z.view(1, -1, self.h, self.d // self.h).transpose(1, 2)  # noqa: E731
            q, k, v = sh(q), sh(k), sh(v)
            if kv is not None:  # the growing cache: a new shape every step
                k = t.cat([kv[0], k], dim=2)
                v = t.cat([kv[1], v], dim=2)
            new.append((k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=kv is None and T > 1)
            x = x + blk["proj"](a.transpose(1, 2).reshape(1, T, self.d))
            x = x + blk["fc2"](F.gelu(blk["fc1"](blk["ln2"](x))))
        return self.out(self.lnf(x[:, -1])), new


def wl_gpt(torch, variant, iters, dev):
    if variant != "eager":
        return None  # dynamic shapes and .item() every step: no static graph to capture
    m = TinyGPT(torch, dev)
    g = gen(torch, 13)
    prompts = [torch.randint(1, 512, (1, 8), generator=g).to(dev) for _ in range(iters)]
    dig = Digest()
    times = []
    with torch.no_grad():
        for p in prompts:
            t = time.perf_counter()
            logits, cache = m.step(p, 0, [None] * len(m.blocks))
            toks = []
            for i in range(40):
                nxt = int(logits.argmax(-1).item())
                toks.append(nxt)
                if nxt % 13 == 0:  # data-dependent early stop ("end of sequence")
                    break
                logits, cache = m.step(torch.tensor([[nxt]], device=dev), 8 + i, cache)
            times.append(time.perf_counter() - t)
            dig.h.update(repr(toks).encode())
            dig.add(logits)
    return times, dig


# --------------------------------------------------------------------------- moe
def wl_moe(torch, variant, iters, dev):
    nn = torch.nn
    torch.manual_seed(4)
    E, D, S = 8, 256, 16
    router = nn.Linear(D, E).to(dev)
    experts = [nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D)).to(dev) for _ in range(E)]
    g = gen(torch, 14)
    data = [torch.randn(8, D, generator=g).to(dev) for _ in range(iters)]
    dig = Digest()
    times = []
    chosen = []
    with torch.no_grad():
        if variant == "eager":
            for x in data:
                t = time.perf_counter()
                for _ in range(S):
                    e = int(router(x).mean(0).argmax().item())  # data-dependent expert
                    chosen.append(e)
                    x = x + 0.5 * experts[e](x)
                    x = x / x.norm(dim=-1, keepdim=True)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
                dig.add(x)
        elif variant == "cudagraph":
            # one graph per expert for the expert's part of the step; routing stays eager
            sx = torch.zeros(8, D, device=dev)
            graphs = {}
            for x in data:
                t = time.perf_counter()
                sx.copy_(x)
                for _ in range(S):
                    e = int(router(sx).mean(0).argmax().item())
                    chosen.append(e)
                    if e not in graphs:
                        def body(f=experts[e]):
                            so = sx + 0.5 * f(sx)
                            return so / so.norm(dim=-1, keepdim=True)
                        graphs[e] = capture(torch, body)
                    gr, so = graphs[e]
                    gr.replay()
                    sx.copy_(so)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
                dig.add(sx)
        else:
            return None
    dig.h.update(repr(chosen).encode())
    return times, dig


WORKLOADS = {"mlp": wl_mlp, "lstm": wl_lstm, "gpt": wl_gpt, "moe": wl_moe}
NOT_APPLICABLE = {("gpt", "cudagraph"): "growing KV cache: a new shape every step",
                  ("gpt", "compile"): "dynamic shapes and a readback every step",
                  ("moe", "compile"): "readback every step splits the graph"}


def run_workloads(a):
    torch = setup_torch()
    dev = "cuda"
    if not torch.cuda.is_available():
        for w in a.workloads:
            for v in a.variants:
                emit(a.out, {"kind": "workload", "workload": w, "variant": v, "label": a.label,
                             "status": "skip", "why": "no CUDA device"})
        return 0
    for w in a.workloads:
        for v in a.variants:
            rec = {"kind": "workload", "workload": w, "variant": v, "label": a.label}
            if (w, v) in NOT_APPLICABLE:
                rec.update(status="n/a", why=NOT_APPLICABLE[(w, v)])
                emit(a.out, rec)
                continue
            if a.deadline and time.time() > a.deadline - 5:
                rec.update(status="skip", why="budget used up")
                emit(a.out, rec)
                continue
            t = time.time()
            try:
                r = WORKLOADS[w](torch, v, a.warmup + a.iters, dev)
                torch.cuda.synchronize()
                if r is None:
                    rec.update(status="n/a", why="variant not written for this workload")
                else:
                    times, dig = r
                    ts = [x * 1e3 for x in times[a.warmup:]]
                    rec.update(status="ok", iters=len(ts), median_ms=round(statistics.median(ts), 4),
                               p10_ms=round(sorted(ts)[len(ts) // 10], 4), p90_ms=round(sorted(ts)[len(ts) * 9 // 10], 4),
                               first_ms=round(times[0] * 1e3, 3), digest=dig.hex(), wall_s=round(time.time() - t, 2))
                    if v == "eager" and a.repeat_eager:
                        # is eager itself bit-reproducible? if not, a digest mismatch elsewhere proves nothing
                        rec["digest_repeat"] = WORKLOADS[w](torch, v, a.warmup + a.iters, dev)[1].hex()
            except Exception as e:  # one failure must not stop the others
                rec.update(status="error", why=f"{type(e).__name__}: {str(e)[:300]}")
                traceback.print_exc()
            emit(a.out, rec)
    return 0


# --------------------------------------------------------------------------- routes
def profiler_kernels(torch, prof):
    from torch.autograd import DeviceType
    try:
        evs = [(e.name(), e.device_type()) for e in prof.profiler.kineto_results.events()]
    except Exception:
        evs = [(e.name, e.device_type) for e in prof.events()]
    names = collections.Counter()
    for name, dt in evs:
        if dt != DeviceType.CUDA or name.startswith(("Memcpy", "Memset", "[memory]")):
            continue
        names[name[:80]] += 1
    return sum(names.values()), names.most_common(4)


def routes_section(torch, name):
    nn, dev = torch.nn, "cuda"
    if name == "native":  # PyTorch's own kernels: runtime route (__cudaLaunchKernel)
        x = torch.randn(1000, 100, device=dev)
        for _ in range(5):
            x = torch.softmax(x * 2 + 1, dim=-1).cumsum(0) / 100
        return x
    if name == "cublas":  # cuBLAS / cuBLASLt: driver entry points fetched by the library
        a = torch.randn(256, 256, device=dev)
        b = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
        for _ in range(5):
            a = a @ a / 16
            b = b @ b / 16
        return a
    if name == "cudnn":  # cuDNN LSTM
        lstm = nn.LSTM(64, 128, num_layers=2).to(dev)
        y, _ = lstm(torch.randn(20, 4, 64, device=dev))
        y.sum().backward()
        return y
    if name == "triton":  # Triton's own launcher (driver API)
        import triton
        import triton.language as tl

        @triton.jit
        def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            tl.store(o_ptr + i, tl.load(x_ptr + i, mask=m) + tl.load(y_ptr + i, mask=m), mask=m)

        x = torch.randn(4096, device=dev)
        o = torch.empty_like(x)
        for _ in range(5):
            add_kernel[(4,)](x, x, o, 4096, BLOCK=1024)
        return o
    raise ValueError(f"unknown routes section {name}")


def run_routes(a):
    torch = setup_torch()
    rec = {"kind": "routes", "section": a.routes, "label": a.label}
    if not torch.cuda.is_available():
        rec.update(status="skip", why="no CUDA device")
        emit(a.out, rec)
        return 0
    from torch.profiler import ProfilerActivity, profile
    try:
        torch.cuda.init()
        # everything that launches is inside the profiler, so the shim's whole-process
        # count and the profiler's count cover the same kernels
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            routes_section(torch, a.routes)
            torch.cuda.synchronize()
        n, top = profiler_kernels(torch, prof)
        rec.update(status="ok", profiler_kernels=n, top=top)
    except Exception as e:
        rec.update(status="error", why=f"{type(e).__name__}: {str(e)[:300]}")
        traceback.print_exc()
    emit(a.out, rec)
    return 0


# --------------------------------------------------------------------------- opbench
# NeuSight's CSV columns (see ../shared/data/neusight/README.md), so `grape predict --csv`
# and `grape train` read these files as they read NeuSight's.
HEAD = ["OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "Kernel Name", "Warps per SM",
        "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x", "Block y", "Block z", "CUDA Version"]
OPS = {  # op -> (dims, class)
    "bmm": (["Kernels", "B", "M", "N", "K"], "BMM"),
    "linear": (["Kernels", "B", "M", "N", "K"], "Linear"),
    "add": (["B", "H"], "EW"), "mul": (["B", "H"], "EW"), "relu": (["B", "H"], "EW"),
    "gelu": (["B", "H"], "EW"), "softmax": (["B", "H"], "Softmax"), "ln": (["Kernels", "B", "H"], "LayerNorm"),
}


def op_setup(torch, op, rnd, dev):
    F = torch.nn.functional
    if op in ("bmm", "linear"):
        B = rnd.choice([1, 2, 4, 8, 16, 32]) if op == "bmm" else 1
        M, N, K = (rnd.choice([2 ** rnd.randint(3, 11), rnd.randint(8, 2048)]) for _ in range(3))
        if op == "bmm":
            x, y = torch.randn(B, M, N, device=dev), torch.randn(B, N, K, device=dev)
            return dict(B=B, M=M, N=N, K=K), lambda: torch.bmm(x, y)
        lin = torch.nn.Linear(N, K).to(dev)
        x = torch.randn(B, M, N, device=dev)
        return dict(B=B, M=M, N=N, K=K), lambda: lin(x)
    B, H = 2 ** rnd.randint(6, 14), rnd.choice([2 ** rnd.randint(6, 12), rnd.randint(64, 4096)])
    x, y = torch.randn(B, H, device=dev), torch.randn(B, H, device=dev)
    fn = {"add": lambda: x + y, "mul": lambda: x * y, "relu": lambda: F.relu(x), "gelu": lambda: F.gelu(x),
          "softmax": lambda: torch.softmax(x, dim=-1), "ln": lambda: F.layer_norm(x, (H,))}[op]
    return dict(B=B, H=H), fn


def op_kernels(path, fn, torch):
    """The kernels one call of fn launched, as the profiler's trace events (name, dur, args.grid/block)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    with open(path) as f:
        evs = json.load(f).get("traceEvents", [])
    os.unlink(path)
    return [e for e in evs if e.get("cat") == "kernel"]


def time_op(torch, fn, prof_trace):
    """fn's latency by NeuSight's method (CUDA events around one call, after 3 warm-up calls;
    25 runs, the 5 fastest: returned as the list of runs) and the kernels one call launched."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    lat = []
    for _ in range(25):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        lat.append(s.elapsed_time(e))
    return lat, op_kernels(prof_trace, fn, torch)


def neusight_row(op, d, lat, kern, name, ver, sms):
    """An op's row in NeuSight's format (Latency the mean of the 5 fastest runs; kernel name,
    grid and block of its longest kernel), and that kernel's event."""
    k = max(kern, key=lambda e: e.get("dur", 0)) if kern else {}
    grid = (list(k.get("args", {}).get("grid", [])) + [0, 0, 0])[:3]
    block = (list(k.get("args", {}).get("block", [])) + [0, 0, 0])[:3]
    blocks = grid[0] * grid[1] * grid[2]
    warps = blocks * math.ceil(block[0] * block[1] * block[2] / 32)
    row = {"OPName": op, "Latency": sum(sorted(lat)[:5]) / 5, "Device": name, "Torch Version": ver[0],
           "CUDNN Version": ver[1], "Kernel Name": k.get("name", ""), "Warps per SM": warps / sms,
           "Blocks per SM": blocks / sms, "Grid x": grid[0], "Grid y": grid[1], "Grid z": grid[2],
           "Block x": block[0], "Block y": block[1], "Block z": block[2], "CUDA Version": ver[2],
           "Kernels": "".join(";" + e.get("name", "") for e in kern)}
    row.update(d)
    return row, k


def run_opbench(a):
    import csv
    torch = setup_torch()
    os.makedirs(a.opbench, exist_ok=True)
    if not torch.cuda.is_available():
        emit(a.out, {"kind": "opbench", "status": "skip", "why": "no CUDA device"})
        return 0
    dev = "cuda"
    prof_trace = os.path.join(a.opbench, "trace.json")
    name = torch.cuda.get_device_name()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ver = [f"p{torch.__version__.split('+')[0]}", str(torch.backends.cudnn.version()), f"cu{(torch.version.cuda or '').replace('.', '')}"]
    rnd = random.Random(7)
    counts = {}
    for op, (dims, _cls) in OPS.items():
        rows = []
        for _ in range(a.per_op):
            if a.deadline and time.time() > a.deadline - 5:
                break
            try:
                d, fn = op_setup(torch, op, rnd, dev)
                lat, kern = time_op(torch, fn, prof_trace)
                row, _ = neusight_row(op, d, lat, kern, name, ver, sms)
                rows.append(row)
            except Exception as e:
                log(f"opbench {op}: {type(e).__name__}: {e}")
        with open(os.path.join(a.opbench, f"{op}.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=HEAD + dims, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        counts[op] = len(rows)
    emit(a.out, {"kind": "opbench", "status": "ok", "device": name, "rows": counts})
    return 0


# --------------------------------------------------------------------------- sweep
# Shapes per op, smallest first: ops at the harness's floor, the training data's range
# (NeuSight's: bmm dims up to 1025, elementwise B up to 16k and H up to 4k) and the layers
# of real models beyond it (GPT-2/3, BERT, OPT: hidden 768-12288, B*T up to 65536, heads
# of 64-128 over sequences of 512-2048), so that a model trained on these rows knows this
# GPU in range and beyond.
SWEEP = {
    "bmm": [dict(B=b, M=m, N=n, K=k) for b, m, n, k in [
        (1, 8, 8, 8), (4, 64, 64, 64), (16, 128, 64, 128), (8, 512, 512, 512), (32, 1024, 64, 1024),
        (12, 512, 64, 512), (16, 1024, 128, 1024), (32, 2048, 128, 2048), (96, 2048, 128, 2048),
        (8, 4096, 4096, 4096)]],
    "linear": [dict(B=1, M=m, N=n, K=k) for m, n, k in [
        (8, 64, 64), (128, 768, 768), (512, 1024, 4096), (2048, 768, 3072), (8192, 1024, 1024),
        (16384, 1024, 4096), (32768, 4096, 4096), (65536, 768, 3072), (8192, 12288, 12288)]],
    "add": [dict(B=b, H=h) for b, h in [(1, 64), (64, 1024), (1024, 1024), (16384, 4096),
                                         (65536, 768), (65536, 4096), (16384, 12288)]],
    "gelu": [dict(B=b, H=h) for b, h in [(1, 64), (256, 3072), (16384, 3072), (65536, 3072),
                                          (8192, 49152)]],
    "softmax": [dict(B=b, H=h) for b, h in [(1, 64), (512, 512), (16384, 1024), (98304, 512),
                                             (49152, 2048), (8192, 32768)]],
    "ln": [dict(B=b, H=h) for b, h in [(1, 64), (512, 768), (16384, 1024), (65536, 768),
                                        (65536, 4096), (16384, 12288)]],
}
SWEEP_KERNEL_HEAD = ["kernel", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "smem", "regs",
                     "device", "time_ms", "timing", "op", "dims", "source"]


def sweep_fn(torch, op, d, dev):
    """The op of one sweep shape as a closure (None when it does not fit in memory)."""
    F = torch.nn.functional
    try:
        if op == "bmm":
            x, y = torch.randn(d["B"], d["M"], d["N"], device=dev), torch.randn(d["B"], d["N"], d["K"], device=dev)
            return lambda: torch.bmm(x, y)
        if op == "linear":
            lin = torch.nn.Linear(d["N"], d["K"]).to(dev)
            x = torch.randn(1, d["M"], d["N"], device=dev)
            return lambda: lin(x)
        x, y = torch.randn(d["B"], d["H"], device=dev), torch.randn(d["B"], d["H"], device=dev)
        return {"add": lambda: x + y, "gelu": lambda: F.gelu(x), "softmax": lambda: torch.softmax(x, dim=-1),
                "ln": lambda: F.layer_norm(x, (d["H"],))}[op]
    except RuntimeError:  # out of memory: the shape is skipped
        torch.cuda.empty_cache()
        return None


def sweep_dims(op, d):
    """grape's dims column for the op's kernel (docs/predictor.md): GEMM batch x M x N x K (the
    reduction last), elementwise numel, softmax and layer norm rows x cols."""
    if op in ("bmm", "linear"):
        return "gemm", f"{d['B']}x{d['M']}x{d['K']}x{d['N']}"
    if op in ("add", "gelu"):
        return "elementwise", f"{d['B'] * d['H']}x{3 if op == 'add' else 2}"
    return ("softmax" if op == "softmax" else "layernorm"), f"{d['B']}x{d['H']}"


def run_sweep(a):
    """Each sweep shape twice: its op's latency by NeuSight's method (CUDA events around one call,
    25 runs, mean of the 5 fastest: the harness's floor included) into <op>.csv in NeuSight's
    format, and each of its kernels' own time from the profiler (CUPTI: start to end on the
    device) into kernels.csv, timing "kernel", with the op's dims on its longest kernel."""
    import csv
    torch = setup_torch()
    os.makedirs(a.sweep, exist_ok=True)
    if not torch.cuda.is_available():
        emit(a.out, {"kind": "sweep", "status": "skip", "why": "no CUDA device"})
        return 0
    dev = "cuda"
    name = torch.cuda.get_device_name()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ver = [f"p{torch.__version__.split('+')[0]}", str(torch.backends.cudnn.version()),
           f"cu{(torch.version.cuda or '').replace('.', '')}"]
    prof_trace = os.path.join(a.sweep, "trace.json")
    counts, kern_rows = {}, []
    for op, shapes in SWEEP.items():
        dims_cols = ["Kernels", "B", "M", "N", "K"] if op in ("bmm", "linear") else ["Kernels", "B", "H"]
        rows = []
        for d in shapes:
            if a.deadline and time.time() > a.deadline - 5:
                break
            fn = sweep_fn(torch, op, d, dev)
            if fn is None:
                continue
            try:
                lat, kern = time_op(torch, fn, prof_trace)
            except RuntimeError as e:  # out of memory at run time
                log(f"sweep {op} {d}: {e}")
                torch.cuda.empty_cache()
                continue
            row, main = neusight_row(op, d, lat, kern, name, ver, sms)
            rows.append(row)
            opname, dims = sweep_dims(op, d)
            for k in kern:
                ka = k.get("args", {})
                g = (list(ka.get("grid", [])) + [1, 1, 1])[:3]
                b = (list(ka.get("block", [])) + [1, 1, 1])[:3]
                is_main = k is main
                kern_rows.append([k.get("name", ""), *g, *b, ka.get("shared memory", 0),
                                  ka.get("registers per thread", -1), name, float(k.get("dur", 0)) / 1000, "kernel",
                                  opname if is_main else "", dims if is_main else "", f"sweep {op}"])
            del fn
            torch.cuda.empty_cache()
        with open(os.path.join(a.sweep, f"{op}.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=HEAD + dims_cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        counts[op] = len(rows)
    with open(os.path.join(a.sweep, "kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(SWEEP_KERNEL_HEAD)
        w.writerows(r for r in kern_rows if r[10] > 0)
    emit(a.out, {"kind": "sweep", "status": "ok", "device": name, "rows": counts, "kernel_rows": len(kern_rows)})
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workloads", default="mlp,lstm,gpt,moe")
    p.add_argument("--variants", default="eager,cudagraph")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--label", default="")
    p.add_argument("--out", default="")
    p.add_argument("--deadline", type=float, default=0, help="epoch seconds; later results are skipped")
    p.add_argument("--routes", default="", help="native|cublas|cudnn|triton")
    p.add_argument("--opbench", default="", help="folder for the per-op CSVs")
    p.add_argument("--per-op", type=int, default=30)
    p.add_argument("--sweep", default="", help="folder for the sweep's CSVs")
    p.add_argument("--repeat-eager", action="store_true", help="run eager twice, report both digests")
    a = p.parse_args()
    a.workloads = [w for w in a.workloads.split(",") if w]
    a.variants = [v for v in a.variants.split(",") if v]
    bad = [w for w in a.workloads if w not in WORKLOADS]
    if bad:
        p.error(f"unknown workload(s) {bad}; known: {sorted(WORKLOADS)}")
    try:
        import torch
        del torch  # imported only to see that it imports
    except ImportError:
        kind = "routes" if a.routes else "opbench" if a.opbench else "sweep" if a.sweep else "workload"
        emit(a.out, {"kind": kind, "status": "skip", "why": "torch not available"})
        return 0
    if a.routes:
        return run_routes(a)
    if a.opbench:
        return run_opbench(a)
    if a.sweep:
        return run_sweep(a)
    return run_workloads(a)


if __name__ == "__main__":
    sys.exit(main())
