"""torch_vendor_lib.py LIB STEPS: a synchronised step (a GEMM and two
elementwise kernels) STEPS times, then one call into a vendor library that
PyTorch loads with NVIDIA's runtime linked in (LIB: fft for cuFFT, sparse for
cuSPARSE, nccl for NCCL at world size 1), twice, then STEPS more steps.
Prints "LIB failed: TYPE: first line" or "LIB ran" per call, then "done".
check_torch_libs.py runs it under grape run on the sim."""
import os
import sys

import torch

torch.backends.cudnn.enabled = False
x = torch.randn(64, 64, device="cuda")


def step():
    global x
    x = torch.relu(x @ x * 0.5 + 1.0)
    torch.cuda.synchronize()


def call(lib):
    if lib == "fft":
        torch.fft.fft(x[0])
    elif lib == "sparse":   # built as CSR on the host: no coalescing reads nnz back from the device
        c = torch.sparse_csr_tensor(torch.tensor([0, 1, 3]), torch.tensor([2, 0, 2]),
                                    torch.tensor([3., 4., 5.]), (2, 3)).cuda()
        c @ x[:3]
    elif lib == "nccl":
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(20000 + os.getpid() % 20000))
        if not dist.is_initialized():
            dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
        t = torch.ones(8, device="cuda")
        dist.all_reduce(t)
    torch.cuda.synchronize()


lib, steps = sys.argv[1], int(sys.argv[2])
for _ in range(steps):
    step()
for _ in range(2):
    try:
        call(lib)
        print(lib, "ran", flush=True)
    except Exception as e:   # the library's failure, as PyTorch reports it
        print(f"{lib} failed: {type(e).__name__}: {str(e).strip().splitlines()[0]}", flush=True)
for _ in range(steps):
    step()
print("done")
