"""torch.compile of a small MLP's training step on the simulated device
(check_torch_compile.py runs it under grape run): Inductor generates Triton
kernels, Triton compiles them to cubins with its own ptxas, and PyTorch's
launcher loads each cubin from its file (cuModuleLoad) and launches it.
Timed kernels compute nothing, so the loss printed is stale; the steps are
counted on the host. Usage: torch_compile_mlp.py [STEPS]"""
import sys

import torch

torch.backends.cudnn.enabled = False
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64, device="cuda")
y = torch.randint(0, 10, (32,), device="cuda")


@torch.compile
def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return loss


for _ in range(steps):
    step()
    opt.step()
    torch.cuda.synchronize()
print(f"compiled and ran {steps} training steps")
