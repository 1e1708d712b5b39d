#!/usr/bin/env python3
"""decode.py: a small transformer's greedy decode loop, as LLM serving runs it:
the batch shrinks as sequences finish and each layer's KV cache grows by one
position per step. It knows nothing of grape.

    grape run --device sim --sim-kernels timed -- python examples/python/decode.py

Each step embeds the last token of every live sequence, runs `--layers`
decoder layers (attention over the cache, grown with `torch.cat`, then an
MLP), picks the next token with `argmax`, and asks the device which
sequences produced the end token (`.item()` and `.tolist()`: a
synchronisation per step). Finished sequences leave the batch (their cache
rows are dropped with `index_select`).

Each sequence has host-side bounds, as a serving request has its own
`min_new_tokens` and `max_new_tokens`: the end token counts only after its
minimum, and it stops at its maximum; the loop stops at `--max-steps`. On the
simulated device kernels run timed, not computed, so the values read back
are stale (docs/frameworks.md) and whatever the device says: the bounds make
the batch shrink step by step there too.
"""
import argparse
import math

import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x, cache):
        """x: [B, 1, d]; cache: (k, v) of [B, heads, T, d/heads] or None."""
        b, _, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.norm1(x)).view(b, 1, 3, h, d // h).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, 1, d)
        x = x + self.out(y)
        return x + self.mlp(self.norm2(x)), (k, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8, help="sequences at the start (default 8)")
    ap.add_argument("--max-steps", type=int, default=48, help="host-side bound on steps")
    ap.add_argument("--min-len", type=int, default=8, help="the least of the sequences' minimum lengths")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--prompt", type=int, default=16, help="prompt length")
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.enabled = False  # cuDNN cannot run on the sim (docs/frameworks.md)
    dev = torch.device("cuda")
    embed = nn.Embedding(a.vocab, a.d).to(dev)
    layers = nn.ModuleList(Layer(a.d, a.heads, 4 * a.d) for _ in range(a.layers)).to(dev).eval()
    head = nn.Linear(a.d, a.vocab).to(dev)
    eos = a.vocab - 1  # not 0: stale device memory is mostly zeros on the sim

    # Each sequence's minimum and maximum length, drawn on the host.
    gen = torch.Generator().manual_seed(1)
    least = torch.randint(a.min_len, max(a.min_len, a.max_steps // 2) + 1, (a.batch,),
                          generator=gen).tolist()
    budget = [m + int(torch.randint(0, max(a.max_steps - m, 0) + 1, (1,), generator=gen))
              for m in least]
    live = list(range(a.batch))  # original index of each row still decoding
    out = [[] for _ in range(a.batch)]

    with torch.inference_mode():
        # Prefill: run the prompt one position at a time to build the cache.
        tokens = torch.randint(0, a.vocab - 1, (a.batch, a.prompt), device=dev)
        caches = [None] * a.layers
        for t in range(a.prompt):
            x = embed(tokens[:, t:t + 1])
            for i, layer in enumerate(layers):
                x, caches[i] = layer(x, caches[i])
        nxt = head(x[:, -1]).argmax(dim=-1)

        steps = 0
        while live and steps < a.max_steps:
            steps += 1
            x = embed(nxt.unsqueeze(1))
            for i, layer in enumerate(layers):
                x, caches[i] = layer(x, caches[i])
            nxt = head(x[:, -1]).argmax(dim=-1)
            # The device says which sequences ended (stale on the sim).
            # Only .item() and .tolist(): a shape that depends on device values
            # (nonzero) would be garbage on the sim.
            ended = (nxt == eos)
            if ended.any().item():
                done = {r for r, e in enumerate(ended.tolist()) if e}
            else:
                done = set()
            got = nxt.tolist()
            keep = []
            for row, seq in enumerate(live):
                out[seq].append(got[row])
                ended_here = row in done and len(out[seq]) >= least[seq]
                if not ended_here and len(out[seq]) < budget[seq]:
                    keep.append(row)
            if len(keep) < len(live):
                idx = torch.tensor(keep, device=dev, dtype=torch.long)
                caches = [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in caches]
                nxt = nxt.index_select(0, idx)
                live = [live[r] for r in keep]
    print(f"decoded {steps} steps, {sum(len(o) for o in out)} tokens for {a.batch} sequences "
          f"(lengths {sorted(len(o) for o in out)})")


if __name__ == "__main__":
    main()
