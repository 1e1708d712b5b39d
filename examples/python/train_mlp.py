#!/usr/bin/env python3
"""train_mlp.py: a 3-layer MLP trained on synthetic data, an ordinary PyTorch
training loop that knows nothing of grape.

    grape run --device sim --sim-kernels timed -- python examples/python/train_mlp.py --steps 200

Each step draws a batch on the device, runs forward, backward and the
optimizer (Adam by default, `--optim sgd`), and reads the loss back with
`.item()` every `--log-every` steps (0: never; the loop then synchronises
only at its end, so grape sees the whole run as one stream of work cut every
GRAPE_CHUNK ops). On the simulated device the kernels run timed, not
computed, so the losses printed are stale values, not a converging curve.
"""
import argparse
import time

import torch
from torch import nn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--inputs", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--optim", choices=["adam", "sgd"], default="adam")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--log-every", type=int, default=1,
                    help="read the loss with .item() every N steps; 0 = never (default 1)")
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.enabled = False  # cuDNN cannot run on the sim (docs/frameworks.md)
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Linear(a.inputs, a.hidden), nn.ReLU(),
                          nn.Linear(a.hidden, a.hidden), nn.ReLU(),
                          nn.Linear(a.hidden, a.classes)).to(dev)
    if a.optim == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # A fixed "teacher" makes the synthetic labels learnable.
    teacher = torch.randn(a.inputs, a.classes, device=dev)

    t0 = time.perf_counter()
    losses = 0
    for step in range(a.steps):
        x = torch.randn(a.batch, a.inputs, device=dev)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if a.log_every and (step + 1) % a.log_every == 0:
            losses += 1
            value = loss.item()
            if (step + 1) % max(a.log_every, a.steps // 4 or 1) == 0:
                print(f"step {step + 1}: loss {value:.4f}")
    torch.cuda.synchronize()
    print(f"trained {a.steps} steps ({a.optim}), {losses} losses read, "
          f"{time.perf_counter() - t0:.1f} s wall")


if __name__ == "__main__":
    main()
