/* nv_runtime LIBCUDART: NVIDIA's own runtime (the libcudart.so.13 PyTorch and
 * CuPy carry), loaded against the sim's driver (LD_LIBRARY_PATH), finds no
 * device instead of failing with "operation not supported", and the sim says
 * once, naming the library, why and what it can run.
 *
 * Exit 0 on success, 1 with a FAIL line per failure, 77 (skipped) when
 * LIBCUDART does not exist. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errcap.h"

enum { CUDA_ERROR_NO_DEVICE_ = 100 };   /* cudaErrorNoDevice */

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: nv_runtime LIBCUDART\n");
    return 2;
  }
  if (access(argv[1], R_OK) != 0) {
    printf("skipped: %s is not there\n", argv[1]);
    return 77;
  }
  int cap = errcap_begin();
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  int (*count)(int*) = h ? (int (*)(int*))dlsym(h, "cudaGetDeviceCount") : NULL;
  int (*last)(void) = h ? (int (*)(void))dlsym(h, "cudaGetLastError") : NULL;
  int (*mall)(void**, size_t) = h ? (int (*)(void**, size_t))dlsym(h, "cudaMalloc") : NULL;
  int n = -1, r1 = -1, r2 = -1, r3 = -1, le = -1;
  void* p = NULL;
  if (count != NULL && last != NULL && mall != NULL) {
    r1 = count(&n);
    r2 = count(&n);
    r3 = mall(&p, 16);
    le = last();
  }
  char* text = errcap_end(cap);
  int bad = 0;
  if (h == NULL || count == NULL) {
    printf("FAIL: cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  if (r1 != CUDA_ERROR_NO_DEVICE_ || r2 != CUDA_ERROR_NO_DEVICE_ || r3 != CUDA_ERROR_NO_DEVICE_) {
    printf("FAIL: cudaGetDeviceCount %d, again %d, cudaMalloc %d; want %d (cudaErrorNoDevice)\n",
           r1, r2, r3, CUDA_ERROR_NO_DEVICE_);
    bad = 1;
  }
  if (le != CUDA_ERROR_NO_DEVICE_) {
    printf("FAIL: cudaGetLastError %d, want cudaErrorNoDevice\n", le);
    bad = 1;
  }
  /* The line also proves that the driver which answered was the sim's. */
  char line[PATH_MAX + 64], real[PATH_MAX];   /* the sim names the file with links resolved */
  snprintf(line, sizeof(line), "simcu: %s carries NVIDIA's CUDA runtime",
           realpath(argv[1], real) != NULL ? real : argv[1]);
  if (errcap_count(text, line) != 1 || errcap_count(text, "needs a real GPU") != 1 ||
      errcap_count(text, "its own libcudart.so.13") != 1 || errcap_count(text, "sim/README.md") != 1) {
    printf("FAIL: the sim must say once, naming %s, why and what it runs; it printed:\n%s\n",
           argv[1], text);
    bad = 1;
  }
  if (!bad)
    printf("NVIDIA's runtime: cudaErrorNoDevice, and the sim said:\n%s", text);
  free(text);
  return bad;
}
