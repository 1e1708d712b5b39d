/* vendor.h: what the sim's vendor libraries (libsimblas, the cuBLAS stand-ins
 * of sim/cublas/) do alike: find the sim driver's private table in the driver
 * they opened themselves, give the calling thread a context (a vendor library
 * on CUDA works on the caller's context or its own), and keep their handles.
 * Header-only (static functions), libc and cuda.h only. */
#ifndef SIMBLAS_VENDOR_H
#define SIMBLAS_VENDOR_H

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

/* The few driver functions the context handling needs, as the library got them. */
typedef struct simcu_vendor_drv_s {
  CUresult (*Init)(unsigned);
  CUresult (*CtxGetCurrent)(CUcontext*);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
} simcu_vendor_drv_t;

/* The sim driver's private table (sim/cost.h) from the driver opened as h, or
 * NULL on a real driver (which does not know the id). */
static inline const simcu_private_t* simcu_vendor_private(void* h) {
  CUresult (*get_table)(const void**, const CUuuid*);
  *(void**)&get_table = dlsym(h, "cuGetExportTable");
  static const CUuuid id = {SIMCU_PRIVATE_UUID};
  const void* t = NULL;
  if (get_table != NULL && get_table(&t, &id) == CUDA_SUCCESS && t != NULL &&
      ((const simcu_private_t*)t)->size >= sizeof(simcu_private_t))
    return (const simcu_private_t*)t;
  return NULL;
}

/* cuInit, then the calling thread's context, or the primary one made
 * current when it has none; *ctx is the context the library will use. */
static inline CUresult simcu_vendor_start(const simcu_vendor_drv_t* d, CUcontext* ctx) {
  CUcontext c = NULL;
  CUresult r = d->Init(0);
  if (r == CUDA_SUCCESS)
    r = d->CtxGetCurrent(&c);
  if (r == CUDA_SUCCESS && c == NULL) {
    r = d->DevicePrimaryCtxRetain(&c, 0);
    if (r == CUDA_SUCCESS)
      r = d->CtxSetCurrent(c);
  }
  *ctx = c;
  return r;
}

/* A later call on another thread: the caller's context, or lib_ctx when it
 * has none. */
static inline CUresult simcu_vendor_thread(const simcu_vendor_drv_t* d, CUcontext lib_ctx) {
  CUcontext c = NULL;
  CUresult r = d->CtxGetCurrent(&c);
  if (r == CUDA_SUCCESS && c == NULL)
    r = d->CtxSetCurrent(lib_ctx);
  return r;
}

/* Handles are never freed: a destroyed one waits in its pool for reuse (as
 * drivers reuse handle values), so a call on it finds a zero magic instead of
 * freed memory. Every handle struct begins with a simcu_handle_t. */
typedef struct simcu_handle_s {
  uint32_t magic;
  struct simcu_handle_s* next_free;
} simcu_handle_t;

typedef struct simcu_handle_pool_s {
  pthread_mutex_t lock;
  simcu_handle_t* free;
} simcu_handle_pool_t;

/* A zeroed handle of size bytes with the given magic, or NULL without memory. */
static inline void* simcu_handle_new(simcu_handle_pool_t* pool, size_t size, uint32_t magic) {
  pthread_mutex_lock(&pool->lock);
  simcu_handle_t* h = pool->free;
  if (h != NULL)
    pool->free = h->next_free;
  pthread_mutex_unlock(&pool->lock);
  if (h != NULL)
    memset(h, 0, size);
  else if ((h = (simcu_handle_t*)calloc(1, size)) == NULL)
    return NULL;
  h->magic = magic;
  return h;
}

static inline void simcu_handle_park(simcu_handle_pool_t* pool, simcu_handle_t* h) {
  pthread_mutex_lock(&pool->lock);
  h->magic = 0;
  h->next_free = pool->free;
  pool->free = h;
  pthread_mutex_unlock(&pool->lock);
}

#endif
