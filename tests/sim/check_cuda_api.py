#!/usr/bin/env python3
"""check_cuda_api.py SCRIPTS INCLUDE LIBDIR: scripts/cuda_api.py reads the
headers right.

- Against NVIDIA's own binaries of the same toolkit: the runtime functions of
  cuda_runtime_api.h and RUNTIME_OTHER_HEADERS (profiler, OpenGL, EGL,
  VDPAU) are exactly what LIBDIR/libcudart.so.13 exports, less nvcc's __cuda*
  plumbing; the driver symbols of cuda.h and cudaProfiler.h are exactly what
  the stub LIBDIR/stubs/libcuda.so exports. Skipped (exit 77) when those
  files are absent.
- Known triples and mappings of cuda.h/cudaTypedefs.h (legacy, current,
  per-thread, several versions sharing one signature, an alias).
- The CLI: text and JSON output, and a clear error for a missing header.
"""
import json
import os
import re
import subprocess
import sys

NO_HEADER = re.compile(r"^__cuda")   # nvcc's plumbing (crt/host_runtime.h declares some)

TRIPLES = [
    ("cuMemAlloc", 2000, "", "cuMemAlloc"),
    ("cuMemAlloc", 3020, "", "cuMemAlloc_v2"),
    ("cuMemcpyHtoD", 7000, "ptds", "cuMemcpyHtoD_v2_ptds"),
    ("cuMemcpyAsync", 7000, "ptsz", "cuMemcpyAsync_ptsz"),
    ("cuStreamWaitValue32", 8000, "", "cuStreamWaitValue32"),
    ("cuStreamWaitValue32", 11070, "", "cuStreamWaitValue32_v2"),
    ("cuStreamWaitValue32", 11070, "ptsz", "cuStreamWaitValue32_v2_ptsz"),
    ("cuCtxCreate", 2000, "", "cuCtxCreate"),
    ("cuCtxCreate", 3020, "", "cuCtxCreate_v2"),
    ("cuCtxCreate", 12050, "", "cuCtxCreate_v4"),
    ("cuGraphInstantiate", 11000, "", "cuGraphInstantiate_v2"),
    ("cuGetProcAddress", 12000, "", "cuGetProcAddress_v2"),
    ("cuStreamGetCaptureInfo", 12030, "ptsz", "cuStreamGetCaptureInfo_v3_ptsz"),
    ("cuCtxSynchronize", 13000, "", "cuCtxSynchronize_v2"),
]


def dynsyms(lib):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], capture_output=True, text=True,
                         check=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] not in ("UND", "ABS") and f[3] == "FUNC":
            names.add(f[7].split("@")[0])
    return names


def main():
    scripts, include, libdir = sys.argv[1:4]
    sys.path.insert(0, scripts)
    import cuda_api
    bad = []

    funcs = cuda_api.runtime_functions(include)
    names = [f["name"] for f in funcs]
    if len(names) != len(set(names)):
        bad.append("runtime: a function is listed twice")
    byname = {f["name"]: f for f in funcs}
    m = byname.get("cudaMemcpy2DAsync_ptsz")
    if m is None or m["base"] != "cudaMemcpy2DAsync" or m["variant"] != "ptsz":
        bad.append(f"runtime: cudaMemcpy2DAsync_ptsz missing or misread: {m}")
    elif [p["name"] for p in m["params"]] != ["dst", "dpitch", "src", "spitch", "width", "height",
                                              "kind", "stream"]:
        bad.append(f"runtime: parameters of cudaMemcpy2DAsync_ptsz: {m['params']}")
    if byname.get("cudaGetErrorString", {}).get("ret") != "const char*":
        bad.append("runtime: return type of cudaGetErrorString")

    api = cuda_api.driver_api(include)
    procs = {(p["name"], p["version"], p["variant"]): p["symbol"] for p in api["procs"]}
    for name, ver, var, sym in TRIPLES:
        got = procs.get((name, ver, var))
        if got != sym:
            bad.append(f"driver: ({name}, {ver}, {var or '-'}) -> {got}, want {sym}")
    if api["aliases"].get("cuGraphInstantiate") != "cuGraphInstantiateWithFlags":
        bad.append(f"driver: alias of cuGraphInstantiate: {api['aliases'].get('cuGraphInstantiate')}")
    symbols = {f["name"] for f in api["symbols"]}
    if {p["symbol"] for p in api["procs"]} != symbols:
        bad.append("driver: the triples and the symbols do not cover each other")

    # The CLI, as the lead's tools call it.
    here = os.path.join(scripts, "cuda_api.py")
    out = subprocess.run([sys.executable, here, "--driver", "--include", include],
                         capture_output=True, text=True)
    if out.returncode != 0 or "cuMemAlloc 3020 - cuMemAlloc_v2" not in out.stdout.splitlines():
        bad.append(f"cli --driver: rc {out.returncode}, {out.stderr.strip()}")
    out = subprocess.run([sys.executable, here, "--runtime", "--json", "--include", include],
                         capture_output=True, text=True)
    try:
        if len(json.loads(out.stdout)) != len(funcs):
            bad.append("cli --runtime --json: wrong length")
    except ValueError as e:
        bad.append(f"cli --runtime --json: {e}")
    out = subprocess.run([sys.executable, here, "--runtime", "--include", "/nonexistent"],
                         capture_output=True, text=True)
    if out.returncode != 1 or "cannot read /nonexistent/cuda_runtime_api.h" not in out.stderr:
        bad.append(f"cli with a missing header: rc {out.returncode}, {out.stderr.strip()!r}")

    # NVIDIA's binaries of the same toolkit.
    real_rt = os.path.join(libdir, "libcudart.so.13")
    stub_drv = os.path.join(libdir, "stubs", "libcuda.so")
    skipped = []
    if os.path.exists(real_rt):
        want = {n for n in dynsyms(real_rt) if not NO_HEADER.match(n)}
        have = set(names)
        for h in cuda_api.RUNTIME_OTHER_HEADERS:
            have |= {f["name"] for f in cuda_api.runtime_functions(include, h)}
        bad += [f"runtime: {n} exported by {real_rt} but not listed" for n in sorted(want - have)]
        bad += [f"runtime: {n} listed but not exported by {real_rt}" for n in sorted(have - want)]
    else:
        skipped.append(real_rt)
    if os.path.exists(stub_drv):
        want = dynsyms(stub_drv)
        listed = set(symbols)
        for h, th in cuda_api.DRIVER_OTHER_HEADERS:
            listed |= {f["name"] for f in cuda_api.driver_api(include, h, th)["symbols"]}
        bad += [f"driver: {n} exported by {stub_drv} but not listed" for n in sorted(want - listed)]
        bad += [f"driver: {n} listed but not exported by {stub_drv}" for n in sorted(listed - want)]
    else:
        skipped.append(stub_drv)

    for b in bad:
        print("FAIL:", b)
    if bad:
        return 1
    if skipped:
        print("skipped: no", " or ".join(skipped), "to compare with")
        return 77
    print(f"{len(funcs)} runtime functions and {len(api['procs'])} driver triples agree with "
          f"NVIDIA's binaries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
