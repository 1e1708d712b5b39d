/* A library whose constructor launches a kernel (when ROUTES_CTOR is set): the
 * shim must work before its own constructor may have run, and count it. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "fake.h"

static int ran;

/* Referenced by routes.c, so that the linker keeps this library. */
__attribute__((visibility("default"))) int fake_ctor_ran(void) { return ran; }

static fake_fn_t k_ctor = {FAKE_FN_MAGIC, "_Z6k_ctorv", 0, {0}, {0}, 0, NULL};

__attribute__((constructor)) static void launch_early(void) {
  if (getenv("ROUTES_CTOR") == NULL)
    return;
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  if (cudaLaunchKernel(&k_ctor, g, b, NULL, 0, 0) != cudaSuccess)
    abort();
  ran = 1;
}
