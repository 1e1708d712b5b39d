#!/usr/bin/env python3
"""The sim's cuBLAS stand-ins look like NVIDIA's to the dynamic linker.

usage: check_cublas_symbols.py STANDIN_libcublas.so.13 STANDIN_libcublasLt.so.13 CUDA_LIB64 [CUDA_INCLUDE]

Each stand-in has NVIDIA's soname and exports its cuBLAS names in NVIDIA's
version node (cublasGemmEx@@libcublas.so.13, cublasLtMatmul@@libcublasLt.so.13),
every one of them a name NVIDIA's library of the toolkit exports too (so a
program linked against the real library binds to the stand-in, and a shim's
versioned lookups find it); the GEMM family the sim serves is all there; and
nothing else leaks but the sim's kernel bodies and the engine's private entry.
And the other way (issue 24: Python binds extensions immediately, so torch
and cuSOLVER need every name they import): every name NVIDIA's library
exports, the stand-in exports too, except names no cuBLAS header mentions
(cuBLASLt's per-type kernels such as cublasLtSSSMatmul, its private
cublasLt_for_cublas_* entries), which have no prototype to honour; those are
counted.
Without the toolkit's libraries the comparison is skipped (the rest still runs)."""
import os
import re
import subprocess
import sys

FAMILY = {
    "libcublas.so.13": [
        "cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasGetStream_v2",
        "cublasSetWorkspace_v2", "cublasSetMathMode", "cublasGetMathMode", "cublasSetPointerMode_v2",
        "cublasSetSmCountTarget", "cublasGetSmCountTarget", "cublasGemmEx", "cublasGemmStridedBatchedEx",
        "cublasSgemm_v2", "cublasDgemm_v2", "cublasHgemm", "cublasSgemmStridedBatched",
        "cublasDgemmStridedBatched", "cublasHgemmStridedBatched", "cublasSgemmEx",
        "cublasSgemmBatched", "cublasDgemmBatched", "cublasHgemmBatched", "cublasGemmBatchedEx"],
    "libcublasLt.so.13": [
        "cublasLtCreate", "cublasLtDestroy", "cublasLtMatmul", "cublasLtMatmulDescCreate",
        "cublasLtMatmulDescSetAttribute", "cublasLtMatmulDescGetAttribute", "cublasLtMatmulDescInit_internal",
        "cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutSetAttribute", "cublasLtMatmulPreferenceCreate",
        "cublasLtMatmulPreferenceSetAttribute", "cublasLtMatmulAlgoGetHeuristic",
        "cublasLtMatmulAlgoConfigGetAttribute"],
}
PRIVATE = re.compile(r"^(simcu_(body|params|cost)_simcublas_\w+|simcublasLt_gemm)$")


def dynsyms(path):
    out = subprocess.run(["nm", "-D", "--with-symbol-versions", "--defined-only", path],
                         capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] not in "TWRDB" or "@@" not in parts[2]:
            continue
        name, ver = parts[2].split("@@", 1)
        syms[name] = ver
    return syms


def soname(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Library soname: \[([^\]]+)\]", out)
    return m.group(1) if m else None


def header_text(include):
    """All cuBLAS headers' text ("" without the include folder)."""
    if include is None:
        return ""
    text = []
    for h in ("cublas_api.h", "cublas.h", "cublasLt.h", "cublasXt.h", "cublas_v2.h"):
        with open(os.path.join(include, h), errors="replace") as f:
            text.append(f.read())
    return "\n".join(text)


def main():
    bad = 0
    headers = header_text(sys.argv[4] if len(sys.argv) > 4 else None)
    if not headers:
        print("note: no include folder given: NVIDIA's exports are not required of the stand-ins")
    for path, lib in ((sys.argv[1], "libcublas.so.13"), (sys.argv[2], "libcublasLt.so.13")):
        if soname(path) != lib:
            print(f"{path}: soname {soname(path)}, want {lib}")
            bad += 1
        mine = dynsyms(path)
        for name, ver in sorted(mine.items()):
            if ver != lib:
                print(f"{path}: {name}@@{ver}, want the version node {lib}")
                bad += 1
        missing = [f for f in FAMILY[lib] if f not in mine]
        if missing:
            print(f"{path}: the GEMM family lacks {missing}")
            bad += 1
        real = os.path.join(sys.argv[3], lib)
        if not os.path.exists(real):
            print(f"note: {real} not found: names not compared with NVIDIA's")
            continue
        theirs = dynsyms(real)
        for name in sorted(mine):
            if PRIVATE.match(name):
                continue
            if name not in theirs:
                print(f"{path}: exports {name}, which {real} does not")
                bad += 1
            elif theirs[name] != mine[name]:
                print(f"{path}: {name}@@{mine[name]}, NVIDIA's is @@{theirs[name]}")
                bad += 1
        undocumented = 0
        for name in sorted(set(theirs) - set(mine)):
            if name == lib:
                continue
            if re.search(r"\b%s\b" % re.escape(name), headers):
                print(f"{path}: lacks {name}, which {real} exports and the headers declare")
                bad += 1
            else:
                undocumented += 1
        print(f"{lib}: {len(mine)} exports checked against {real}; {undocumented} of its "
              f"exports no header declares are not exported")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
