#!/usr/bin/env python3
"""cuda_graph.py: a program that captures and replays CUDA graphs itself with
`torch.cuda.graph`, as PyTorch's documentation shows ("CUDA Graphs",
whole-network capture). It knows nothing of grape.

    grape run --device sim --sim-kernels timed -- python examples/python/cuda_graph.py

It warms an MLP's training step up on a side stream (eager, as the
documentation asks), captures forward, backward and an SGD step into one
graph, then replays it `--replays` times, copying each new batch into the
static inputs and reading the loss with `.item()` (a synchronisation per
replay). Under grape the capture and the replays are the program's own:
grape must hold nothing while the program captures, and records none of the
captured launches as its own (the report's `launches_captured`).
"""
import argparse

import torch
from torch import nn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replays", type=int, default=20, help="graph replays (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="eager steps before capture")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--d", type=int, default=128)
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.enabled = False  # cuDNN cannot run on the sim (docs/frameworks.md)
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Linear(a.d, a.d), nn.ReLU(), nn.Linear(a.d, 10)).to(dev)
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    static_x = torch.randn(a.batch, a.d, device=dev)
    static_y = torch.randint(0, 10, (a.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    # Warm-up on a side stream, as torch.cuda.graph's documentation asks.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(a.warmup):
            step()
    torch.cuda.current_stream().wait_stream(side)

    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        static_loss = step()

    total = 0.0
    for i in range(a.replays):
        static_x.copy_(torch.randn(a.batch, a.d, device=dev))
        static_y.copy_(torch.randint(0, 10, (a.batch,), device=dev))
        g.replay()
        total += static_loss.item()
    torch.cuda.synchronize()
    print(f"captured one training step, replayed it {a.replays} times (mean loss {total / max(a.replays, 1):.4f})")


if __name__ == "__main__":
    main()
