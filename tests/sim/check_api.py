#!/usr/bin/env python3
"""check_api.py SCRIPTS INCLUDE LIBCUDA LIBCUDART: the sim's libraries cover
the whole API of the CUDA headers they were built with.

- libcudart.so.13 exports every function of cuda_runtime_api.h (per-thread
  _ptds/_ptsz forms included) and of the other headers NVIDIA's runtime
  exports (profiler, GL/EGL/VDPAU interop) in the version node libcudart.so.13;
- libcuda.so.1 exports every symbol cuda.h and cudaProfiler.h declare
  (current, legacy and per-thread forms);
- the functions the sim implements (rather than answering with a stub) include
  the ones issue 13 names: a weak definition is the generated stub, a global
  one the runtime's own.

The header lists come from scripts/cuda_api.py, not from the build's
generated files, so a function the generator dropped is caught here.
"""
import subprocess
import sys

# Implemented by the runtime, not stubs: what programs of issue 13 used.
IMPLEMENTED = """
cudaLaunchCooperativeKernel cudaLaunchCooperativeKernel_ptsz
cudaMemcpy2D cudaMemcpy2D_ptds cudaMemcpy2DAsync cudaMemcpy2DAsync_ptsz
cudaMemcpy3D cudaMemcpy3D_ptds cudaMemcpy3DAsync cudaMemcpy3DAsync_ptsz
cudaMemset2D cudaMemset2D_ptds cudaMemset2DAsync cudaMemset2DAsync_ptsz
cudaMemset3D cudaMemset3D_ptds cudaMemset3DAsync cudaMemset3DAsync_ptsz
cudaMemcpyPeer cudaMemcpyPeerAsync cudaMemcpy3DPeer cudaMemcpy3DPeerAsync
cudaStreamAddCallback cudaStreamAddCallback_ptsz
cudaMemPrefetchAsync cudaMemPrefetchAsync_ptsz cudaMemAdvise
cudaOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
cudaOccupancyAvailableDynamicSMemPerBlock
cudaMemPoolCreate cudaMemPoolDestroy cudaMemPoolSetAttribute cudaMemPoolGetAttribute cudaMemPoolTrimTo
cudaMallocFromPoolAsync cudaMallocFromPoolAsync_ptsz
cudaDeviceGetDefaultMemPool cudaDeviceGetMemPool cudaDeviceSetMemPool
cudaFuncGetParamInfo cudaFuncGetName
cudaStreamBeginCaptureToGraph cudaStreamBeginCaptureToGraph_ptsz
cudaProfilerStart cudaProfilerStop
""".split()

def dynsyms(lib):
    """{name: binding} of the defined functions a library exports."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] not in ("UND", "ABS") and f[3] == "FUNC":
            syms[f[7]] = f[4]
    return syms


def main():
    scripts, include, libcuda, libcudart = sys.argv[1:5]
    sys.path.insert(0, scripts)
    import cuda_api
    bad = []

    rt = dynsyms(libcudart)
    node = "@@libcudart.so.13"
    funcs = cuda_api.runtime_functions(include)
    for h in cuda_api.RUNTIME_OTHER_HEADERS:
        funcs += cuda_api.runtime_functions(include, h)
    for f in funcs:
        if f["name"] + node not in rt:
            bad.append(f"{libcudart}: lacks {f['name']}{node} ({f['proto']})")
    header = {f["name"] for f in funcs}
    for name in IMPLEMENTED:
        if name not in header:
            bad.append(f"test list names {name}, which cuda_runtime_api.h does not declare")
        elif rt.get(name + node) != "GLOBAL":
            bad.append(f"{libcudart}: {name} is a stub ({rt.get(name + node)}), not implemented")

    drv = dynsyms(libcuda)
    api = cuda_api.driver_api(include)
    for h, th in cuda_api.DRIVER_OTHER_HEADERS:
        api["symbols"] += cuda_api.driver_api(include, h, th)["symbols"]
    for f in api["symbols"]:
        if f["name"] not in drv:
            bad.append(f"{libcuda}: lacks {f['name']} ({f['proto']})")

    for b in bad:
        print("FAIL:", b)
    print(f"{len(funcs)} runtime functions, {len(api['symbols'])} driver symbols checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
