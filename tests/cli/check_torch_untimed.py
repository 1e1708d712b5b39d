#!/usr/bin/env python3
"""check_torch_untimed.py --grape GRAPE --source DIR: PyTorch's CUDA build under
`grape run --device sim` without timed kernels (no --sim-kernels timed).
- `import torch` works and torch sees the simulated device: grape run puts
  the sim's runtime in place under the soname torch's RPATH names.
- A tensor op fails with "invalid device function" (PyTorch's kernels have no
  CPU body), and the sim says once why and what runs them timed
  (--sim-kernels timed), naming PyTorch's kernels.
- grape's closing hint never claims that PyTorch brings NVIDIA's runtime.
Skipped, saying why, as check_torch_examples.py's cases are: without torch,
without the cuBLAS stand-ins, in a TSan build.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_torch_examples import fail, parse_torch_args  # noqa: E402

WRONG_HINT = "bring NVIDIA's own CUDA runtime (PyTorch"
EXPLAINED = "the simulated device runs only programs built against it"


def run(a, code):
    e = {k: v for k, v in os.environ.items() if k not in ("GRAPE_MODE", "SIMCU_KERNELS")}
    return subprocess.run([a.grape, "run", "--device", "sim", "--", a.python, "-W", "ignore",
                           "-c", code], capture_output=True, text=True, timeout=300, env=e)


def main():
    a = parse_torch_args(argparse.ArgumentParser())
    if a is None:
        return 77
    p = run(a, "import torch; print(torch.cuda.is_available())")
    if p.returncode != 0 or p.stdout.strip().splitlines()[-1:] != ["True"]:
        fail("import torch under grape run on the sim: torch.cuda.is_available() should be True", p)
    if WRONG_HINT in p.stderr:
        fail("grape's hint says PyTorch brings NVIDIA's runtime", p)
    p = run(a, "import torch\n"
               "try:\n"
               "    x = torch.ones(3, device='cuda'); y = x + 1; torch.cuda.synchronize()\n"
               "except Exception as e:\n"
               "    print(type(e).__name__, e)\n")
    if p.returncode != 0 or "invalid device function" not in p.stdout:
        fail("a tensor op must fail with invalid device function", p)
    if p.stderr.count(EXPLAINED) != 1 or "such as PyTorch's" not in p.stderr or \
            "--sim-kernels timed" not in p.stderr:
        fail("the sim must say once that PyTorch's kernels need a GPU or --sim-kernels timed", p)
    if WRONG_HINT in p.stderr:
        fail("grape's hint says PyTorch brings NVIDIA's runtime", p)
    print("torch imports and sees the simulated device; its first kernel fails, explained once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
