/* Collective and spin kernels (see collective.h for the design). */
#include "collective.h"

#include <string.h>

#include "cuda_types.h"
#include "graph.h"
#include "images.h"

int grape__func_collective_slow(grape_func_t* f) {
  int yes = 0;
  if (f->name != NULL) {
    /* NCCL's and RCCL's device kernels (ncclDevKernel_*, older ncclKernel_*)
     * and NVSHMEM's, plain or inside a mangled name. */
    static const char* const names[] = {"ncclDevKernel_", "ncclKernel_", "nvshmem"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !yes; i++)
      yes = strstr(f->name, names[i]) != NULL;
  }
  if (!yes && f->image != NULL)
    yes = grape__image_collective(f->image);
  __atomic_store_n(&f->coll, yes ? GRAPE_COLL_YES : GRAPE_COLL_NO, __ATOMIC_RELAXED);
  return yes;
}

/* True when one of the n bytes at p holds, in an 8-byte word at an
 * 8-byte offset, an address of shared memory. */
static int words_shared(const void* p, size_t n) {
  for (size_t w = 0; w + 8 <= n; w += 8) {
    uint64_t v;
    memcpy(&v, (const uint8_t*)p + w, 8);
    if (grape__alloc_is_shared(v))
      return 1;
  }
  return 0;
}

int grape__params_shared(const grape_func_t* f, void** params, void** extra) {
  if (params == NULL && extra != NULL) {
    void* buf = NULL;
    size_t* size = NULL;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 16; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buf = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = extra[i + 1];
    }
    return buf != NULL && size != NULL && words_shared(buf, *size);
  }
  if (f == NULL || f->nparams < 0 || params == NULL)
    return 0;
  for (int i = 0; i < f->nparams; i++)
    if (f->params[i].size >= 8 && words_shared(params[i], f->params[i].size))
      return 1;
  return 0;
}

static int any_stream(const grape_stream_t* s, const void* arg) {
  (void)s;
  (void)arg;
  return 1;
}

void grape__barrier_flush(void) {
  grape__flush_holding_if(any_stream, NULL, GRAPE_GC_COLLECTIVE);
}
