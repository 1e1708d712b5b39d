#!/usr/bin/env python3
"""grape cubin-info on nvcc output: --json is one object of the documented
shape and agrees with the text output; --kernel filters; bad input fails
with a message on stderr. Usage: check_cubin_info.py GRAPE KERNEL_DIR"""
import json
import os
import subprocess
import sys
import tempfile

grape, kdir = sys.argv[1], sys.argv[2]


def run(*args, rc=0):
    p = subprocess.run([grape, "cubin-info", *args], capture_output=True, text=True)
    if p.returncode != rc:
        sys.exit(f"cubin-info {args}: exit {p.returncode}, want {rc}\n{p.stderr}")
    return p


fat = os.path.join(kdir, "kernels_size.fatbin")
doc = json.loads(run("--json", fat).stdout)
assert set(doc) == {"images"}, doc.keys()
kinds = sorted((i["arch"], i["kind"], i["compression"]) for i in doc["images"])
assert kinds == [(80, "elf", "zstd"), (90, "elf", "zstd"), (90, "ptx", "zstd")], kinds
for img in doc["images"]:
    names = {k["name"]: k for k in img["kernels"]}
    assert len(names) == 9, names.keys()
    k = names["_Z9k_scalarsidcscxPi"]
    assert k["demangled"] == "k_scalars(int, double, char, short, char, long long, int*)"
    assert [(p["offset"], p["size"]) for p in k["params"]] == [
        (0, 4), (8, 8), (16, 1), (18, 2), (20, 1), (24, 8), (32, 8)], k["params"]
    if img["kind"] == "elf":
        assert k["registers"] > 0 and k["shared_bytes"] == 0, k
    else:
        assert k["registers"] is None, k

# --kernel by unqualified name, and --arch.
doc = json.loads(run("--json", "--kernel", "k_tmpl<double, 4>", "--arch", "90", fat).stdout)
assert [len(i["kernels"]) for i in doc["images"]] == [1, 1], doc
assert doc["images"][0]["kernels"][0]["name"] == "_Z6k_tmplIdLi4EEvPT_S0_s"
run("--kernel", "no_such_kernel", fat, rc=1)

# Text output lists the same kernels.
text = run(os.path.join(kdir, "libkernels.so")).stdout
assert "k_scalars(int, double, char, short, char, long long, int*)" in text, text
assert "params   40 B: 0:4 8:8 16:1 18:2 20:1 24:8 32:8" in text, text
assert text.startswith(os.path.join(kdir, "libkernels.so") +
                       ": 5 images (4 cubin, 1 ptx), 27 kernels\n"), text[:200]
images = run("--images", "--arch", "90", fat).stdout.splitlines()
assert images[0].endswith("3 images (2 cubin, 1 ptx), 27 kernels; 2 images and 18 kernels match")
row = images[3].split()
assert row[1:4] == ["sm_90", "cubin", "zstd"] and row[5] == "9", images
# --summary: a line per arch, kind and compression (images, bytes, kernels),
# never a line per image: a library of thousands of images stays short.
summary = run("--summary", "--arch", "90", fat).stdout.splitlines()
assert summary[0] == images[0], summary
rows = [l.split() for l in summary[3:] if l.startswith("  ")]
assert [r[:4] + r[5:] for r in rows] == [["sm_90", "cubin", "zstd", "1", "9"],
                                         ["sm_90", "ptx", "zstd", "1", "9"]], summary
lt = "/usr/local/cuda/lib64/libcublasLt.so.13"
if os.path.exists(lt):
    n = len(run("--summary", lt).stdout.splitlines())
    assert n <= 40, f"cubin-info --summary of {lt}: {n} lines"
run("--summary", "--images", fat, rc=2)

# Bad input: an error naming the file, nothing on stdout.
with tempfile.NamedTemporaryFile(suffix=".fatbin") as f:
    data = bytearray(open(fat, "rb").read())
    f.write(data[: len(data) // 2])
    f.flush()
    p = run(f.name, rc=1)
    assert p.stdout == "" and f.name in p.stderr and "fat size" in p.stderr, p.stderr
run(rc=2)
assert "usage" in run("--help").stdout
print("cubin-info: ok")
