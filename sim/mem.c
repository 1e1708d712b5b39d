/* mem.c: device, host and managed memory of the simulated device: the
 * arena, host ranges, pointer attributes, pools, virtual memory management,
 * pitched allocation and managed-memory hints. Copies are in copy.c and
 * memsets in memset.c.
 *
 * DESIGN: device memory is one large anonymous mapping (the arena, reserved
 * with MAP_NORESERVE so untouched pages cost nothing), carved by a first-fit
 * allocator with 256-byte alignment like cudaMalloc. Every device address
 * therefore lies in one known range that never aliases malloc'd host memory,
 * which is how cuPointerGetAttribute tells device from host. Pinned and
 * registered host ranges are kept in a second sorted table.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ALIGN 256u

typedef struct range_s {
  uintptr_t base;
  size_t size;
  unsigned flags;   /* device: 1 managed; host: 1 allocated by the sim (else registered) */
} range_t;

typedef struct table_s {
  range_t* v;
  size_t n, cap;
} table_t;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t arena_base;
static size_t arena_size;
static table_t dev_used;   /* sorted by base */
static table_t dev_free;   /* sorted by base, coalesced */
static table_t host;       /* sorted by base */
static size_t dev_bytes_used;

/* ---- Sorted range tables ---- */

static size_t tab_lower(const table_t* t, uintptr_t p) {   /* first index with base >= p */
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->v[mid].base < p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int tab_insert(table_t* t, size_t at, range_t r) {
  if (t->n == t->cap) {
    range_t* nv = grape__grow(t->v, &t->cap, t->n + 1, sizeof(*nv), 64);
    if (nv == NULL)
      return -ENOMEM;
    t->v = nv;
  }
  memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof(range_t));
  t->v[at] = r;
  t->n++;
  return 0;
}

static void tab_remove(table_t* t, size_t at) {
  memmove(&t->v[at], &t->v[at + 1], (t->n - at - 1) * sizeof(range_t));
  t->n--;
}

/* Index of the range containing p, or -1. */
static long tab_find(const table_t* t, uintptr_t p) {
  size_t i = tab_lower(t, p + 1);
  if (i == 0)
    return -1;
  const range_t* r = &t->v[i - 1];
  return p >= r->base && p < r->base + r->size ? (long)(i - 1) : -1;
}

/* ---- Arena ---- */

static int arena_init(void) {
  if (arena_base != 0)
    return 0;
  size_t sizes[] = {(size_t)64 << 30, (size_t)16 << 30, (size_t)4 << 30, (size_t)1 << 30};
  const char* env = getenv("SIMCU_MEM_GB");
  if (env != NULL && atol(env) > 0)
    sizes[0] = (size_t)atol(env) << 30;
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    void* p = mmap(NULL, sizes[i], PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      continue;
    arena_base = (uintptr_t)p;
    arena_size = sizes[i];
    /* Keep the first page unused so no allocation starts at the arena base. */
    range_t r = {arena_base + 4096, arena_size - 4096, 0};
    if (tab_insert(&dev_free, 0, r) != 0)
      return -ENOMEM;
    return 0;
  }
  return -ENOMEM;
}

/* mem_lock held: takes `need` bytes from the free list, first fit. */
static int arena_carve(size_t need, uintptr_t* out) {
  for (size_t i = 0; i < dev_free.n; i++) {
    range_t* f = &dev_free.v[i];
    if (f->size < need)
      continue;
    *out = f->base;
    f->base += need;
    f->size -= need;
    if (f->size == 0)
      tab_remove(&dev_free, i);
    return 0;
  }
  return -ENOMEM;
}

static CUresult arena_return(uintptr_t base, size_t size);

static CUresult dev_alloc(CUdeviceptr* out, size_t n, unsigned flags) {
  if (out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (n == 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&mem_lock);
  if (arena_init() != 0)
    goto out;
  uintptr_t base;
  if (arena_carve(need, &base) != 0)
    goto out;
  range_t a = {base, need, flags};
  if (tab_insert(&dev_used, tab_lower(&dev_used, a.base), a) != 0) {
    (void)arena_return(base, need);
    goto out;
  }
  dev_bytes_used += need;
  *out = (CUdeviceptr)a.base;
  r = CUDA_SUCCESS;
out:
  pthread_mutex_unlock(&mem_lock);
  return r;
}

static CUresult arena_return(uintptr_t base, size_t size);

CUresult grape__sim_dev_alloc(CUdeviceptr* out, size_t n) {
  return dev_alloc(out, n, 0);
}

CUresult grape__sim_free_now(CUdeviceptr p) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&mem_lock);
  size_t i = tab_lower(&dev_used, (uintptr_t)p);
  if (i >= dev_used.n || dev_used.v[i].base != (uintptr_t)p) {
    r = CUDA_ERROR_INVALID_VALUE;
    goto out;
  }
  range_t a = dev_used.v[i];
  tab_remove(&dev_used, i);
  dev_bytes_used -= a.size;
  r = arena_return(a.base, a.size);
out:
  pthread_mutex_unlock(&mem_lock);
  return r;
}

/* mem_lock held: gives [base, base+size) back to the free list. */
static CUresult arena_return(uintptr_t base, size_t size) {
  CUresult r = CUDA_SUCCESS;
  range_t a = {base, size, 0};
  /* Large blocks give their pages back, so the arena's resident size stays
   * close to what is allocated. */
  if (a.size >= (1u << 20))
    madvise((void*)a.base, a.size, MADV_DONTNEED);
  size_t j = tab_lower(&dev_free, a.base);
  range_t fr = {a.base, a.size, 0};
  if (j > 0 && dev_free.v[j - 1].base + dev_free.v[j - 1].size == fr.base) {
    dev_free.v[j - 1].size += fr.size;
    if (j < dev_free.n && fr.base + fr.size == dev_free.v[j].base) {
      dev_free.v[j - 1].size += dev_free.v[j].size;
      tab_remove(&dev_free, j);
    }
  } else if (j < dev_free.n && fr.base + fr.size == dev_free.v[j].base) {
    dev_free.v[j].base = fr.base;
    dev_free.v[j].size += fr.size;
  } else if (tab_insert(&dev_free, j, fr) != 0) {
    r = CUDA_ERROR_OUT_OF_MEMORY;   /* the block is lost to the arena, nothing else */
  }
  return r;
}

/* mem_lock is a leaf lock: taken last before fork, released first after. */
void grape__sim_mem_atfork(int phase) {
  grape__sim_fork_lock(&mem_lock, phase);
}

int grape__sim_dev_range(CUdeviceptr p, size_t n) {
  pthread_mutex_lock(&mem_lock);
  long i = tab_find(&dev_used, (uintptr_t)p);
  int ok = i >= 0 && (uintptr_t)p + n <= dev_used.v[i].base + dev_used.v[i].size;
  pthread_mutex_unlock(&mem_lock);
  return ok;
}

int grape__sim_host_range(const void* p, size_t n) {
  pthread_mutex_lock(&mem_lock);
  long i = tab_find(&host, (uintptr_t)p);
  int ok = i >= 0 && (uintptr_t)p + n <= host.v[i].base + host.v[i].size;
  pthread_mutex_unlock(&mem_lock);
  return ok;
}

static int in_arena(uintptr_t p) {
  return arena_base != 0 && p >= arena_base && p < arena_base + arena_size;
}

/* ---- Allocation entry points ---- */

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  SIM_COUNT(cuMemAlloc_v2);
  CUresult r = grape__sim_need_ctx();
  if (r == CUDA_SUCCESS)
    r = grape__sim_unsafe_call();
  if (r != CUDA_SUCCESS)
    return r;
  if (grape__sim.slow_alloc_us > 0)   /* blocked in real time, as behind a lock */
    usleep((useconds_t)grape__sim.slow_alloc_us);
  return dev_alloc(p, n, 0);
}

SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned int flags) {
  SIM_COUNT(cuMemAllocManaged);
  SIM_TRY(grape__sim_need_ctx());
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  return dev_alloc(p, n, 1);
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  SIM_COUNT(cuMemFree_v2);
  CUresult r = grape__sim_need_ctx();
  if (r == CUDA_SUCCESS)
    r = grape__sim_unsafe_call();
  if (r != CUDA_SUCCESS)
    return r;
  if (p == 0)
    return CUDA_SUCCESS;
  /* cuMemFree synchronises the device so no queued work still uses the block. */
  r = grape__sim_wait_all();
  if (r != CUDA_SUCCESS)
    return r;
  return grape__sim_free_now(p);
}

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t* free_b, size_t* total) {
  SIM_COUNT(cuMemGetInfo_v2);
  SIM_TRY(grape__sim_check_init());
  size_t t = (size_t)SIM_TOTAL_MEM;
  pthread_mutex_lock(&mem_lock);
  size_t used = dev_bytes_used;
  pthread_mutex_unlock(&mem_lock);
  if (free_b != NULL)
    *free_b = t - used;
  if (total != NULL)
    *total = t;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  SIM_COUNT(cuMemGetAddressRange_v2);
  CUresult r = CUDA_ERROR_NOT_FOUND;
  pthread_mutex_lock(&mem_lock);
  long i = tab_find(&dev_used, (uintptr_t)p);
  if (i >= 0) {
    if (base != NULL)
      *base = (CUdeviceptr)dev_used.v[i].base;
    if (size != NULL)
      *size = dev_used.v[i].size;
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&mem_lock);
  return r;
}

static CUresult host_add(void* p, size_t n, unsigned flags) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&mem_lock);
  size_t at = tab_lower(&host, (uintptr_t)p);
  if ((at > 0 && host.v[at - 1].base + host.v[at - 1].size > (uintptr_t)p) ||
      (at < host.n && host.v[at].base < (uintptr_t)p + n))
    r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  else if (tab_insert(&host, at, (range_t){(uintptr_t)p, n, flags}) != 0)
    r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&mem_lock);
  return r;
}

static CUresult host_del(void* p, unsigned want_flags) {
  CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  pthread_mutex_lock(&mem_lock);
  size_t at = tab_lower(&host, (uintptr_t)p);
  if (at < host.n && host.v[at].base == (uintptr_t)p && host.v[at].flags == want_flags) {
    tab_remove(&host, at);
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&mem_lock);
  return r;
}

static CUresult host_alloc(void** pp, size_t n) {
  CUresult r = grape__sim_need_ctx();
  if (r != CUDA_SUCCESS)
    return r;
  if (pp == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  void* p = NULL;
  if (posix_memalign(&p, 4096, n ? n : 1) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = host_add(p, n ? n : 1, 1);
  if (r != CUDA_SUCCESS) {
    free(p);
    return r;
  }
  *pp = p;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t n) {
  SIM_COUNT(cuMemAllocHost_v2);
  return host_alloc(pp, n);
}

SIM_EXPORT CUresult cuMemHostAlloc(void** pp, size_t n, unsigned int flags) {
  SIM_COUNT(cuMemHostAlloc);
  if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                          CU_MEMHOSTALLOC_WRITECOMBINED))
    return CUDA_ERROR_INVALID_VALUE;
  return host_alloc(pp, n);
}

SIM_EXPORT CUresult cuMemFreeHost(void* p) {
  SIM_COUNT(cuMemFreeHost);
  CUresult r = grape__sim_wait_all();
  if (r != CUDA_SUCCESS)
    return r;
  r = host_del(p, 1);
  if (r != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  free(p);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t n, unsigned int flags) {
  SIM_COUNT(cuMemHostRegister_v2);
  (void)flags;
  SIM_TRY(grape__sim_check_init());
  if (p == NULL || n == 0)
    return CUDA_ERROR_INVALID_VALUE;
  return host_add(p, n, 0);
}

SIM_EXPORT CUresult cuMemHostUnregister(void* p) {
  SIM_COUNT(cuMemHostUnregister);
  return host_del(p, 0);
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* d, void* p, unsigned int flags) {
  SIM_COUNT(cuMemHostGetDevicePointer_v2);
  if (d == NULL || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_host_range(p, 1))
    return CUDA_ERROR_INVALID_VALUE;
  *d = (CUdeviceptr)(uintptr_t)p;   /* unified addressing: the same address */
  return CUDA_SUCCESS;
}

/* ---- Pointer attributes ---- */

static CUresult ptr_attr(void* data, CUpointer_attribute a, CUdeviceptr p) {
  uintptr_t u = (uintptr_t)p;
  int dev = 0, hst = 0;
  range_t rr = {0, 0, 0};
  pthread_mutex_lock(&mem_lock);
  long i = tab_find(&dev_used, u);
  if (i >= 0) {
    dev = 1;
    rr = dev_used.v[i];
  } else if ((i = tab_find(&host, u)) >= 0) {
    hst = 1;
    rr = host.v[i];
  }
  int arena = in_arena(u);
  pthread_mutex_unlock(&mem_lock);
  if (!dev && !hst) {
    /* Like the driver: unknown memory is an error for most attributes. */
    if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE || a == CU_POINTER_ATTRIBUTE_CONTEXT)
      return arena ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_VALUE;
    if (a == CU_POINTER_ATTRIBUTE_IS_MANAGED || a == CU_POINTER_ATTRIBUTE_MAPPED) {
      *(int*)data = 0;
      return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (a) {
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext*)data = grape__sim_primary(); break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned*)data = dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr*)data = p; break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (dev && !(rr.flags & 1))
      return CUDA_ERROR_INVALID_VALUE;
    *(void**)data = (void*)u;
    break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int*)data = dev && (rr.flags & 1); break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int*)data = 0; break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr*)data = (CUdeviceptr)rr.base; break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t*)data = rr.size; break;
  case CU_POINTER_ATTRIBUTE_MAPPED: *(int*)data = 1; break;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long*)data = rr.base; break;
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *(int*)data = 1; break;
  case CU_POINTER_ATTRIBUTE_P2P_TOKENS: return CUDA_ERROR_NOT_SUPPORTED;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
  SIM_COUNT(cuPointerGetAttribute);
  SIM_TRY(grape__sim_check_init());
  if (data == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return ptr_attr(data, a, p);
}

SIM_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attrs,
                                           void** data, CUdeviceptr p) {
  SIM_COUNT(cuPointerGetAttributes);
  SIM_TRY(grape__sim_check_init());
  if (attrs == NULL || data == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    if (data[i] == NULL)
      continue;
    /* The plural form reports unknown memory as zeros instead of failing. */
    if (ptr_attr(data[i], attrs[i], p) != CUDA_SUCCESS) {
      if (attrs[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        *(unsigned*)data[i] = 0;
      else if (attrs[i] == CU_POINTER_ATTRIBUTE_CONTEXT)
        *(CUcontext*)data[i] = NULL;
      else if (attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
        *(size_t*)data[i] = 0;
      else if (attrs[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
               attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
        *(CUdeviceptr*)data[i] = 0;
      else if (attrs[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
        *(void**)data[i] = NULL;
      else
        *(int*)data[i] = 0;
    }
  }
  return CUDA_SUCCESS;
}

/* ---- Stream-ordered allocation and pools ---- */

struct CUmemPoolHandle_st {
  int is_default;
  cuuint64_t release_threshold;
};
static struct CUmemPoolHandle_st default_pool = {1, 0};
/* The device's current pool (cuDeviceSetMemPool), which cuMemAllocAsync uses. */
static _Atomic(CUmemoryPool) current_pool = &default_pool;

static CUresult device_pool(CUmemoryPool* pool, CUdevice d, CUmemoryPool which) {
  if (pool == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (d != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *pool = which;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice d) {
  SIM_COUNT(cuDeviceGetDefaultMemPool);
  return device_pool(pool, d, &default_pool);
}

SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice d) {
  SIM_COUNT(cuDeviceGetMemPool);
  return device_pool(pool, d, atomic_load(&current_pool));
}

SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  SIM_COUNT(cuMemPoolCreate);
  if (pool == NULL || props == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUmemPoolHandle_st* p = grape__sim_reg_new(sizeof(*p), K_POOL);
  if (p == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pool = p;
  return CUDA_SUCCESS;
}

static int pool_ok(CUmemoryPool p) {
  return p == &default_pool || grape__sim_reg_has(p, K_POOL);
}

SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  SIM_COUNT(cuMemPoolDestroy);
  if (pool == &default_pool || !grape__sim_reg_has(pool, K_POOL))
    return CUDA_ERROR_INVALID_VALUE;
  /* A destroyed current pool leaves the device with its default one. */
  CUmemoryPool cur = pool;
  atomic_compare_exchange_strong(&current_pool, &cur, &default_pool);
  grape__sim_reg_del(pool);
  free(pool);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  SIM_COUNT(cuMemPoolTrimTo);
  (void)keep;
  return pool_ok(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v) {
  SIM_COUNT(cuMemPoolSetAttribute);
  if (!pool_ok(pool) || v == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    pool->release_threshold = *(cuuint64_t*)v;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v) {
  SIM_COUNT(cuMemPoolGetAttribute);
  if (!pool_ok(pool) || v == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    *(cuuint64_t*)v = pool->release_threshold;
  else if (a == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
           a == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
           a == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
    *(int*)v = 1;
  else
    *(cuuint64_t*)v = 0;
  return CUDA_SUCCESS;
}

/* The block is usable at once (earlier than CUDA promises, which no correct
 * program can observe); the free is ordered on the stream. */
static CUresult alloc_async(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream h, int ptds) {
  CUresult r = grape__sim_check_init();
  if (r != CUDA_SUCCESS)
    return r;
  if (!pool_ok(pool))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st* s;
  r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (grape__sim_capturing(s))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;   /* memory nodes are not simulated */
  return dev_alloc(p, n, 0);
}

SIM_TWINS(cuMemAllocAsync, _ptsz, (CUdeviceptr* p, size_t n, CUstream s),
          alloc_async, p, n, atomic_load(&current_pool), s)
SIM_TWINS(cuMemAllocFromPoolAsync, _ptsz, (CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s),
          alloc_async, p, n, pool, s)

static CUresult free_async(CUdeviceptr p, CUstream h, int ptds) {
  CUresult r = grape__sim_check_init();
  if (r != CUDA_SUCCESS)
    return r;
  struct CUstream_st* s;
  r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (grape__sim_capturing(s))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!grape__sim_dev_range(p, 1))
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w = {.kind = OP_FREE};
  w.u.fr.p = p;
  w.u.fr.free = grape__sim_free_now;
  return grape__sim_submit(s, &w, NULL, 0);
}

SIM_TWINS(cuMemFreeAsync, _ptsz, (CUdeviceptr p, CUstream s), free_async, p, s)

/* ---- Virtual memory management (cuMemAddressReserve / cuMemCreate / cuMemMap) ----
 *
 * A reservation is a granularity-aligned range carved from the arena; mapping
 * a physical handle into it makes that range a device allocation (for copies,
 * launches and pointer attributes). The arena's own pages back every mapping,
 * so one handle mapped at two addresses does not alias (not simulated). */

#define VMM_GRAN ((size_t)2 << 20)

typedef struct vres_s {
  uintptr_t base, size;      /* the reserved, aligned range */
  uintptr_t block, bsize;    /* what was carved for it */
} vres_t;

static vres_t* vres;
static size_t nvres, capvres;

struct sim_vmem_s {
  size_t size;
  int maps;
};

static long vres_find(uintptr_t p, size_t n) {
  for (size_t i = 0; i < nvres; i++)
    if (p >= vres[i].base && p + n <= vres[i].base + vres[i].size)
      return (long)i;
  return -1;
}

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* prop,
                                                  CUmemAllocationGranularity_flags option) {
  SIM_COUNT(cuMemGetAllocationGranularity);
  (void)option;
  if (g == NULL || prop == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *g = VMM_GRAN;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                        CUdeviceptr addr, unsigned long long flags) {
  SIM_COUNT(cuMemAddressReserve);
  (void)addr;   /* a hint only */
  CUresult r = grape__sim_check_init();
  if (r != CUDA_SUCCESS)
    return r;
  if (ptr == NULL || size == 0 || size % VMM_GRAN != 0 || flags != 0 ||
      (alignment & (alignment - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t al = alignment > VMM_GRAN ? alignment : VMM_GRAN;
  r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&mem_lock);
  uintptr_t block;
  if (arena_init() != 0 || arena_carve(size + al, &block) != 0)
    goto out;
  if (nvres == capvres) {
    vres_t* nv = grape__grow(vres, &capvres, nvres + 1, sizeof(*nv), 16);
    if (nv == NULL) {
      (void)arena_return(block, size + al);
      goto out;
    }
    vres = nv;
  }
  uintptr_t base = (block + al - 1) & ~(uintptr_t)(al - 1);
  vres[nvres++] = (vres_t){base, size, block, size + al};
  *ptr = (CUdeviceptr)base;
  r = CUDA_SUCCESS;
out:
  pthread_mutex_unlock(&mem_lock);
  return r;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  SIM_COUNT(cuMemAddressFree);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mem_lock);
  for (size_t i = 0; i < nvres; i++) {
    if (vres[i].base != (uintptr_t)ptr || vres[i].size != size)
      continue;
    int mapped = 0;
    for (size_t j = 0; j < dev_used.n; j++)
      mapped |= dev_used.v[j].base >= vres[i].base && dev_used.v[j].base < vres[i].base + size;
    if (mapped)
      break;   /* unmap first */
    r = arena_return(vres[i].block, vres[i].bsize);
    vres[i] = vres[--nvres];
    break;
  }
  pthread_mutex_unlock(&mem_lock);
  return r;
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t size,
                                const CUmemAllocationProp* prop, unsigned long long flags) {
  SIM_COUNT(cuMemCreate);
  SIM_TRY(grape__sim_check_init());
  if (h == NULL || prop == NULL || size == 0 || size % VMM_GRAN != 0 || flags != 0 ||
      prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id != 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct sim_vmem_s* v = grape__sim_reg_new(sizeof(*v), K_VMEM);
  if (v == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  v->size = size;
  *h = (CUmemGenericAllocationHandle)(uintptr_t)v;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  SIM_COUNT(cuMemRelease);
  struct sim_vmem_s* v = (struct sim_vmem_s*)(uintptr_t)h;
  if (!grape__sim_reg_has(v, K_VMEM))
    return CUDA_ERROR_INVALID_VALUE;
  grape__sim_reg_del(v);
  free(v);   /* existing mappings stay valid until unmapped, as in CUDA */
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle h, unsigned long long flags) {
  SIM_COUNT(cuMemMap);
  struct sim_vmem_s* v = (struct sim_vmem_s*)(uintptr_t)h;
  if (!grape__sim_reg_has(v, K_VMEM) || flags != 0 || size == 0 || offset + size > v->size ||
      (uintptr_t)ptr % VMM_GRAN != 0)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mem_lock);
  if (vres_find((uintptr_t)ptr, size) < 0)
    goto out;
  size_t at = tab_lower(&dev_used, (uintptr_t)ptr);
  if ((at > 0 && dev_used.v[at - 1].base + dev_used.v[at - 1].size > (uintptr_t)ptr) ||
      (at < dev_used.n && dev_used.v[at].base < (uintptr_t)ptr + size))
    goto out;   /* already mapped */
  if (tab_insert(&dev_used, at, (range_t){(uintptr_t)ptr, size, 0}) != 0) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto out;
  }
  dev_bytes_used += size;
  r = CUDA_SUCCESS;
out:
  pthread_mutex_unlock(&mem_lock);
  return r;
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  SIM_COUNT(cuMemUnmap);
  (void)grape__sim_wait_all();   /* no queued work may still touch the range */
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mem_lock);
  size_t at = tab_lower(&dev_used, (uintptr_t)ptr);
  if (vres_find((uintptr_t)ptr, size) >= 0 && at < dev_used.n &&
      dev_used.v[at].base == (uintptr_t)ptr && dev_used.v[at].size == size) {
    tab_remove(&dev_used, at);
    dev_bytes_used -= size;
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&mem_lock);
  return r;
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                   size_t count) {
  SIM_COUNT(cuMemSetAccess);
  if (desc == NULL || count == 0)
    return CUDA_ERROR_INVALID_VALUE;
  return grape__sim_dev_range(ptr, size) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- Pitched allocation, pool access, managed-memory hints ----
 *
 * Pitched rows are 512-byte aligned, as cudaMallocPitch gives on current GPUs.
 * The sim has one device, which always has read-write access to its pools.
 * Managed memory lives in the arena and is never migrated, so prefetches and
 * attachments are checked and ordered on their stream (an event recorded
 * after a prefetch completes after it) but move nothing, and advice is
 * checked and otherwise has no effect (cuMemRangeGetAttribute is not served).
 */

#define PITCH_ALIGN 512u

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t width, size_t height,
                                       unsigned int elem) {
  SIM_COUNT(cuMemAllocPitch_v2);
  CUresult r = grape__sim_need_ctx();
  if (r == CUDA_SUCCESS)
    r = grape__sim_unsafe_call();
  if (r != CUDA_SUCCESS)
    return r;
  if (p == NULL || pitch == NULL || width == 0 || height == 0 ||
      (elem != 4 && elem != 8 && elem != 16))
    return CUDA_ERROR_INVALID_VALUE;
  size_t pp = (width + PITCH_ALIGN - 1) & ~(size_t)(PITCH_ALIGN - 1);
  if (height > SIZE_MAX / pp)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = dev_alloc(p, pp * height, 0);
  if (r == CUDA_SUCCESS)
    *pitch = pp;
  return r;
}

SIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice d, CUmemoryPool pool) {
  SIM_COUNT(cuDeviceSetMemPool);
  SIM_TRY(grape__sim_check_init());
  if (d != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!pool_ok(pool))
    return CUDA_ERROR_INVALID_VALUE;
  atomic_store(&current_pool, pool);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t n) {
  SIM_COUNT(cuMemPoolSetAccess);
  if (!pool_ok(pool) || (n > 0 && map == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; i++) {
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
      return CUDA_ERROR_INVALID_VALUE;
    if (map[i].location.id != 0)
      return CUDA_ERROR_INVALID_DEVICE;
    /* The pool's own device keeps read-write access. */
    if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool,
                                       CUmemLocation* loc) {
  SIM_COUNT(cuMemPoolGetAccess);
  if (flags == NULL || loc == NULL || !pool_ok(pool))
    return CUDA_ERROR_INVALID_VALUE;
  if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (loc->id != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return CUDA_SUCCESS;
}

/* 1 if [p, p+n) lies inside one managed allocation. */
static int managed_range(CUdeviceptr p, size_t n) {
  pthread_mutex_lock(&mem_lock);
  long i = tab_find(&dev_used, (uintptr_t)p);
  int ok = i >= 0 && (dev_used.v[i].flags & 1) &&
           (uintptr_t)p + n <= dev_used.v[i].base + dev_used.v[i].size;
  pthread_mutex_unlock(&mem_lock);
  return ok;
}

static CUresult check_location(CUmemLocation loc) {
  switch (loc.type) {
  case CU_MEM_LOCATION_TYPE_DEVICE:
    return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
  case CU_MEM_LOCATION_TYPE_HOST:
  case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
    return CUDA_SUCCESS;
  case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;   /* one NUMA node */
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

/* A stream-ordered no-op standing for a prefetch or an attachment. */
static CUresult ordered_hint(CUdeviceptr p, size_t n, CUstream h, int ptds) {
  SIM_TRY(grape__sim_check_init());
  if (n == 0 || !managed_range(p, n))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  sim_work_t w = {.kind = OP_NOP};
  return grape__sim_submit(s, &w, NULL, 0);
}

static CUresult prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream h,
                         int ptds) {
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  SIM_TRY(check_location(loc));
  return ordered_hint(p, n, h, ptds);
}

static CUmemLocation device_location(CUdevice d) {
  CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, d};
  if (d == CU_DEVICE_CPU)
    loc.type = CU_MEM_LOCATION_TYPE_HOST;
  return loc;
}

SIM_TWINS(cuMemPrefetchAsync, _ptsz, (CUdeviceptr p, size_t n, CUdevice d, CUstream s),
          prefetch, p, n, device_location(d), 0, s)
SIM_TWINS(cuMemPrefetchAsync_v2, _ptsz,
          (CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream s),
          prefetch, p, n, loc, flags, s)

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc) {
  SIM_TRY(grape__sim_check_init());
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return CUDA_ERROR_INVALID_VALUE;
  if (advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY)
    SIM_TRY(check_location(loc));
  return n > 0 && managed_range(p, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice d) {
  SIM_COUNT(cuMemAdvise);
  return advise(p, n, advice, device_location(d));
}
SIM_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice,
                                   CUmemLocation loc) {
  SIM_COUNT(cuMemAdvise_v2);
  return advise(p, n, advice, loc);
}

static CUresult attach(CUstream h, CUdeviceptr p, size_t n, unsigned flags, int ptds) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
      flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  if (n == 0) {
    /* 0 attaches the whole allocation, which must start at p. */
    CUdeviceptr base = 0;
    pthread_mutex_lock(&mem_lock);
    long i = tab_find(&dev_used, (uintptr_t)p);
    if (i >= 0) {
      base = (CUdeviceptr)dev_used.v[i].base;
      n = dev_used.v[i].size;
    }
    pthread_mutex_unlock(&mem_lock);
    if (base != p)
      return CUDA_ERROR_INVALID_VALUE;
  }
  return ordered_hint(p, n, h, ptds);
}

SIM_TWINS(cuStreamAttachMemAsync, _ptsz, (CUstream s, CUdeviceptr p, size_t n, unsigned int flags),
          attach, s, p, n, flags)
