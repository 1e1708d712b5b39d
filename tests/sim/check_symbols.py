#!/usr/bin/env python3
"""check_symbols.py LIBCUDA LIBCUDART: the sim's libraries export what the real
ones do and nothing of grape: libcuda.so.1 only cu* names (unversioned, like
NVIDIA's), libcudart.so.13 only cuda*/__cuda* names, all in the version node
libcudart.so.13 that nvcc-built programs import."""
import re
import subprocess
import sys


def dynsyms(lib):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] not in ("UND", "ABS") and f[4] in ("GLOBAL", "WEAK") and f[3] in ("FUNC", "OBJECT"):
            syms.append(f[7])
    return syms


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", out)
    return m.group(1) if m else None


bad = []
cuda, cudart = sys.argv[1], sys.argv[2]
if soname(cuda) != "libcuda.so.1":
    bad.append(f"{cuda}: soname {soname(cuda)}")
if soname(cudart) != "libcudart.so.13":
    bad.append(f"{cudart}: soname {soname(cudart)}")
s = dynsyms(cuda)
bad += [f"{cuda}: exports {x}" for x in s if not x.startswith("cu") or "@" in x]
for need in ("cuGetProcAddress_v2", "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuMemAlloc_v2"):
    if need not in s:
        bad.append(f"{cuda}: lacks {need}")
s = dynsyms(cudart)
bad += [f"{cudart}: exports {x}" for x in s
        if not re.match(r"(cuda|__cuda)\w*@@libcudart\.so\.13$", x)]
for need in ("__cudaLaunchKernel", "__cudaRegisterFatBinary", "cudaMalloc", "cudaGetDriverEntryPoint"):
    if need + "@@libcudart.so.13" not in s:
        bad.append(f"{cudart}: lacks {need}@@libcudart.so.13")
out = subprocess.run(["readelf", "-d", cudart], capture_output=True, text=True, check=True).stdout
if "libcuda.so" in out:
    bad.append(f"{cudart}: links libcuda (it must dlopen it)")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
