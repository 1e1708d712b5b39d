/* driver_unload: a library that loads the driver itself, uses it and unloads
 * it, as NVIDIA's static CUDA runtime does inside CuPy or cuDNN when it finds
 * no device: dlopen("libcuda.so.1", RTLD_LOCAL), a few calls through dlsym,
 * dlclose. The shim's pointers into the driver (and the simulated device's
 * private table it reads its clock and statistics from) must stay valid
 * until the exit report is written, which calls into the driver again.
 *
 *   driver_unload        prints "devices N" and exits 0 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "driver_unload: %s\n", dlerror());
    return 2;
  }
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
  CUresult (*count)(int*) = (CUresult(*)(int*))dlsym(h, "cuDeviceGetCount");
  CUresult (*retain)(CUcontext*, CUdevice) =
      (CUresult(*)(CUcontext*, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
  CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
  CUresult (*alloc)(CUdeviceptr*, size_t) =
      (CUresult(*)(CUdeviceptr*, size_t))dlsym(h, "cuMemAlloc_v2");
  CUresult (*release)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
  int n = -1;
  CUcontext ctx;
  CUdeviceptr p;
  /* Calls the shim times (a memory allocation and free), so that it has
   * looked up the driver's tables before the unload. */
  if (init == NULL || count == NULL || retain == NULL || set == NULL || alloc == NULL ||
      release == NULL || init(0) != CUDA_SUCCESS || count(&n) != CUDA_SUCCESS ||
      retain(&ctx, 0) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS ||
      alloc(&p, 256) != CUDA_SUCCESS || release(p) != CUDA_SUCCESS) {
    fprintf(stderr, "driver_unload: a driver call failed\n");
    return 2;
  }
  dlclose(h);   /* the last reference the program held */
  printf("devices %d\n", n);
  return 0;
}
