#!/usr/bin/env python3
"""check_nv_exports.py NV_LIBCUDART NV_LIBCUDA SIM_LIBCUDART SIM_LIBCUDA: the
sim's libraries export every symbol NVIDIA's do, in the same version node.

A program (PyTorch's libtorch_cuda.so, for one) that links NVIDIA's runtime
imports names like cudaProfilerStart@libcudart.so.13; run against the sim's
runtime instead, the loader refuses it if one of them is missing. So every
defined dynamic symbol of the toolkit's libcudart.so.13, and of its stub
libcuda.so (the driver's export list as the toolkit ships it), must be
defined by the sim's library of the same soname, with the same version.
Compared with NVIDIA's binaries themselves, not with a header list, so that
a function of a header no parser reads (the profiler's, the interop ones,
nvcc's undeclared plumbing) cannot be missed. Skipped (exit 77) when the
toolkit's libraries are absent.
"""
import os
import subprocess
import sys


def exports(lib):
    """{name@version or name: type} of the symbols a library defines."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or f[6] == "UND":
            continue
        if f[4] == "LOCAL":
            continue
        name = f[7].replace("@@", "@")   # the default version is the version
        syms[name] = f[3]
    return syms


def main():
    nv_rt, nv_drv, sim_rt, sim_drv = sys.argv[1:5]
    missing = [p for p in (nv_rt, nv_drv) if not os.path.exists(p)]
    if missing:
        print("skipped: no", " or ".join(missing), "to compare with")
        return 77
    bad = []
    for nv, sim in ((nv_rt, sim_rt), (nv_drv, sim_drv)):
        want, have = exports(nv), exports(sim)
        for name, kind in sorted(want.items()):
            if name not in have:
                bad.append(f"{sim} lacks {name} ({kind}), which {nv} exports")
            elif have[name] != kind:
                bad.append(f"{sim}: {name} is {have[name]}, {kind} in {nv}")
        print(f"{len(want)} symbols of {os.path.basename(nv)} checked")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
