#!/usr/bin/env python3
"""On a real CUDA library (cuRAND: 109 images, ~2,960 kernels, SASS and PTX
of the same kernels): every image parses, every layout is ordered and within
its parameter block, and where an arch has both SASS and PTX of a kernel the
two layouts (KPARAM_INFO vs .param declarations) agree.
Usage: check_real_library.py GRAPE LIBRARY  (exit 77 = skipped)"""
import json
import os
import subprocess
import sys

grape, lib = sys.argv[1], sys.argv[2]
if not os.path.exists(lib):
    print(f"SKIP: {lib} not found")
    sys.exit(77)
p = subprocess.run([grape, "cubin-info", "--json", lib], capture_output=True, text=True)
if p.returncode != 0:
    sys.exit(f"cubin-info failed: {p.stderr}")
doc = json.loads(p.stdout)
sass, ptx, nkernels = {}, {}, 0
for img in doc["images"]:
    for k in img["kernels"]:
        nkernels += 1
        end = 0
        for q in k["params"]:
            assert q["offset"] >= end and q["size"] > 0, (k["name"], k["params"])
            end = q["offset"] + q["size"]
        assert end <= k["param_bytes"], (k["name"], end, k["param_bytes"])
        lay = [(q["offset"], q["size"]) for q in k["params"]]
        (sass if img["kind"] == "elf" else ptx)[(img["arch"], k["name"])] = lay
both = [key for key in ptx if key in sass]
bad = [key for key in both if ptx[key] != sass[key]]
assert nkernels > 1000 and len(both) > 100, (nkernels, len(both))
assert not bad, [(k[1], ptx[k], sass[k]) for k in bad[:3]]
print(f"{lib}: {nkernels} kernels; PTX and SASS layouts agree on {len(both)}")
