#!/usr/bin/env python3
"""check_torch.py GRAPE: PyTorch's CUDA build under grape run on the sim.

- `import torch` works: every symbol libtorch_cuda.so imports from
  libcudart.so.13 (cudaProfilerStart among them) is served; torch sees the
  simulated device when the sim's runtime is the one it loads, and no device
  when its own RPATH brings NVIDIA's (a full pip install with the cuda-toolkit
  wheels), in which case the sim says so.
- With the sim's runtime, a tensor op reaches a kernel that has no CPU body:
  it fails with "invalid device function", and the sim says once that it runs
  only programs built against it and that PyTorch's kernels need a GPU.
- grape's closing hint does not claim that PyTorch brings NVIDIA's runtime.

Skipped (exit 77), naming the reason, where no CUDA build of torch can be
imported (CI does not install a multi-GB wheel; see docs/testing.md for the
command that ran it here).
"""
import glob
import importlib.util
import os
import subprocess
import sys

WRONG_HINT = "bring NVIDIA's own CUDA runtime (PyTorch"
EXPLAINED = "the simulated device runs only programs built against it"


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-4000:]}"
    sys.exit("FAIL: " + msg)


def own_cudart(torch_lib):
    """1 when torch's RPATH (nvidia/*/lib beside it) holds NVIDIA's libcudart."""
    site = os.path.dirname(os.path.dirname(torch_lib))
    return bool(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcudart.so.13")))


def run(grape, code):
    return subprocess.run([grape, "run", "--device", "sim", "--", sys.executable, "-W", "ignore",
                           "-c", code], capture_output=True, text=True, timeout=600)


def main():
    grape = sys.argv[1]
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        print("skipped: torch is not installed (pip install torch, with its CUDA libraries)")
        return 77
    lib = os.path.join(os.path.dirname(spec.origin), "lib")
    if not os.path.exists(os.path.join(lib, "libtorch_cuda.so")):
        print(f"skipped: {spec.origin} is not a CUDA build of torch (no libtorch_cuda.so)")
        return 77

    nv = own_cudart(lib)
    p = run(grape, "import torch; print(torch.cuda.is_available())")
    if p.returncode != 0:
        fail("import torch under grape run on the sim", p)
    want = "False" if nv else "True"
    if p.stdout.strip().splitlines()[-1:] != [want]:
        fail(f"torch.cuda.is_available() should be {want} "
             f"({'NVIDIA' if nv else 'the sim'}'s runtime loaded)", p)
    if nv and "NVIDIA's CUDA runtime" not in p.stderr:
        fail("NVIDIA's runtime on the sim must be named", p)
    if WRONG_HINT in p.stderr:
        fail("grape's hint says PyTorch brings NVIDIA's runtime", p)
    if nv:
        print("torch imports; its own (NVIDIA's) runtime sees no device, as the sim says")
        return 0

    p = run(grape, "import torch\n"
                   "try:\n"
                   "    x = torch.ones(3, device='cuda'); y = x + 1; torch.cuda.synchronize()\n"
                   "except Exception as e:\n"
                   "    print(type(e).__name__, e)\n")
    if p.returncode != 0 or "invalid device function" not in p.stdout:
        fail("a tensor op must fail with invalid device function", p)
    if p.stderr.count(EXPLAINED) != 1 or "such as PyTorch's" not in p.stderr:
        fail("the sim must say once that PyTorch's kernels need a GPU", p)
    if WRONG_HINT in p.stderr:
        fail("grape's hint says PyTorch brings NVIDIA's runtime", p)
    print("torch imports and sees the simulated device; its first kernel is explained once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
