/* core.c: the simulated driver's initialisation, device and context entry
 * points, cuGetProcAddress, the exit report and the fork handlers: the top of
 * the driver, which reaches every other file and is reached by none (the
 * state they share is state.c's).
 *
 * DESIGN: the sim is one H200-like device (ordinal 0) with one primary
 * context. cuInit must precede every other call as with the real driver
 * (CUDA_ERROR_NOT_INITIALIZED otherwise). Contexts beyond the primary one are
 * not simulated (state.c). A primary context reset destroys the context
 * with its streams and events and makes a new primary context with a new
 * handle value: threads that keep the old one current get
 * CUDA_ERROR_CONTEXT_IS_DESTROYED, so code that keeps a context (or a
 * stream's context) across a reset is caught.
 *
 * SIMCU_REPORT=<file> writes, from the library destructor, the number of
 * calls of every entry point plus execution counters and the simulated host
 * and end-to-end times as one JSON object.
 *
 * A device fault raised by a kernel body is the context's sticky error
 * (grape__sim_sticky): as on a GPU the context is unusable afterwards, so
 * every call that needs it returns the fault; device queries, error strings,
 * versions and cuGetProcAddress keep answering.
 *
 * Fork: the handlers below take every lock of the sim before fork() and give
 * the child a consistent state without the parent's worker threads (queued
 * work is dropped, stream.c), so a child can exit at once; using CUDA in it
 * is undefined, as with a real driver.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Initialisation ---- */

/* A real-time sleep of the test knobs SIMCU_SLOW_*_US (us; 0 when unset or
 * not positive). */
static long env_sleep_us(const char* name) {
  const char* s = getenv(name);
  long us = s != NULL ? atol(s) : 0;
  return us > 0 ? us : 0;
}

SIM_EXPORT CUresult cuInit(unsigned int flags) {
  SIM_COUNT(cuInit);
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&grape__sim.lock);
  if (!grape__sim.initialized) {
    const char* s = getenv("SIMCU_SYNC");
    grape__sim.sync_mode = s != NULL && s[0] == '1';
    s = getenv("SIMCU_NO_REUSE");
    grape__sim.no_reuse = s != NULL && s[0] == '1';
    grape__sim.slow_instantiate_us = env_sleep_us("SIMCU_SLOW_INSTANTIATE_US");
    grape__sim.slow_graph_create_us = env_sleep_us("SIMCU_SLOW_GRAPH_CREATE_US");
    grape__sim.slow_alloc_us = env_sleep_us("SIMCU_SLOW_ALLOC_US");
    grape__sim.initialized = 1;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  (void)grape__sim_kernels_timed();   /* says at start that results will not be computed */
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDriverGetVersion(int* v) {
  SIM_COUNT(cuDriverGetVersion);
  if (v == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *v = SIM_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

/* ---- Devices ---- */

static CUresult check_dev(CUdevice d) {
  SIM_TRY(grape__sim_check_init());
  return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  SIM_COUNT(cuDeviceGet);
  SIM_TRY(grape__sim_check_init());
  if (d == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetCount(int* n) {
  SIM_COUNT(cuDeviceGetCount);
  SIM_TRY(grape__sim_check_init());
  if (n == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *n = 1;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  SIM_COUNT(cuDeviceGetName);
  SIM_TRY(check_dev(d));
  if (name == NULL || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", "NVIDIA H200 (simcu)");
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* u, CUdevice d) {
  SIM_COUNT(cuDeviceGetUuid_v2);
  SIM_TRY(check_dev(d));
  if (u == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(u->bytes, "simcu-h200-0000\0", 16);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
  SIM_COUNT(cuDeviceTotalMem_v2);
  SIM_TRY(check_dev(d));
  if (bytes == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *bytes = (size_t)SIM_TOTAL_MEM;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice d) {
  SIM_COUNT(cuDeviceGetPCIBusId);
  SIM_TRY(check_dev(d));
  if (id == NULL || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(id, (size_t)len, "%s", "0000:00:00.0");
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceCanAccessPeer(int* can, CUdevice a, CUdevice b) {
  SIM_COUNT(cuDeviceCanAccessPeer);
  CUresult r = check_dev(a);
  if (r == CUDA_SUCCESS)
    r = check_dev(b);
  if (r != CUDA_SUCCESS)
    return r;
  if (can == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *can = 0;
  return CUDA_SUCCESS;
}

/* An H200 SXM's attributes (values a real one reports with CUDA 12/13). */
static int attr_value(CUdevice_attribute a, int* v) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = CU_COMPUTEMODE_DEFAULT; break;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 6144; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 52428800; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 5; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: *v = 2; break;
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *v = 32505856; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: *v = 0; break;
  /* stream memory operations (memop.c), both API versions */
  case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: *v = 1; break;
  default:
    if ((int)a <= 0 || a >= CU_DEVICE_ATTRIBUTE_MAX)
      return -1;
    *v = 0;   /* a feature the sim does not have */
  }
  return 0;
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  SIM_COUNT(cuDeviceGetAttribute);
  SIM_TRY(check_dev(d));
  if (v == NULL || attr_value(a, v) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/* ---- Contexts ---- */

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  SIM_COUNT(cuDevicePrimaryCtxRetain);
  SIM_TRY(check_dev(d));
  if (c == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&grape__sim.lock);
  struct CUctx_st* p = grape__sim_primary();
  p->refs++;
  pthread_mutex_unlock(&grape__sim.lock);
  *c = p;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  SIM_COUNT(cuDevicePrimaryCtxRelease_v2);
  CUresult r = check_dev(d);
  if (r != CUDA_SUCCESS)
    return r;
  pthread_mutex_lock(&grape__sim.lock);
  struct CUctx_st* p = grape__sim_primary();
  if (p->refs > 0)
    p->refs--;
  else
    r = CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

/* Waits for the device, then destroys the primary context with its streams
 * and events: their handles fail from now on (INVALID_HANDLE; threads whose
 * current context it was get CONTEXT_IS_DESTROYED), and the next primary
 * context is a new object, so its handle value differs (CUDA does not
 * promise either way; a value that changes catches code that keeps one).
 * Retains stay counted ("resetting the primary context does not release
 * it"), as do the flags set with cuDevicePrimaryCtxSetFlags. Memory,
 * modules and graphs are not reset (sim/README.md). A sticky device fault
 * stays: the sim's faults are not recoverable. */
SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice d) {
  SIM_COUNT(cuDevicePrimaryCtxReset_v2);
  SIM_TRY(check_dev(d));
  SIM_TRY(grape__sim_check_init());
  CUresult r = grape__sim_wait_all();
  struct CUctx_st* fresh = calloc(1, sizeof(*fresh));
  if (fresh == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&grape__sim.lock);
  grape__sim_stream_reset_locked();
  struct CUctx_st* old = grape__sim_primary();
  fresh->primary = 1;
  fresh->flags = atomic_load(&old->flags);
  fresh->refs = atomic_load(&old->refs);
  atomic_store(&old->destroyed, 1);
  atomic_store(&grape__sim.primary, fresh);
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned int flags) {
  SIM_COUNT(cuDevicePrimaryCtxSetFlags_v2);
  SIM_TRY(check_dev(d));
  grape__sim_primary()->flags = flags;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int* flags, int* active) {
  SIM_COUNT(cuDevicePrimaryCtxGetState);
  SIM_TRY(check_dev(d));
  if (flags == NULL || active == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st* p = grape__sim_primary();
  *flags = p->flags;
  *active = p->refs > 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext* c) {
  SIM_COUNT(cuCtxGetCurrent);
  SIM_TRY(grape__sim_check_init());
  if (c == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *c = grape__sim_ctx_get();
  return CUDA_SUCCESS;
}

/* Only the live primary context may be made current: a context destroyed by
 * a reset is no context any more (CUDA_ERROR_INVALID_CONTEXT, the thread's
 * current context unchanged). */
SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
  SIM_COUNT(cuCtxSetCurrent);
  SIM_TRY(grape__sim_check_init());
  if (c != NULL && c != grape__sim_primary())
    return CUDA_ERROR_INVALID_CONTEXT;
  grape__sim_ctx_set(c);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c) {
  SIM_COUNT(cuCtxPushCurrent_v2);
  SIM_TRY(grape__sim_check_init());
  if (c != grape__sim_primary())
    return CUDA_ERROR_INVALID_CONTEXT;
  grape__sim_ctx_set(c);   /* a one-deep stack: the sim has one context */
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* c) {
  SIM_COUNT(cuCtxPopCurrent_v2);
  SIM_TRY(grape__sim_check_init());
  struct CUctx_st* cur = grape__sim_ctx_get();
  if (cur == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (c != NULL)
    *c = cur;
  grape__sim_ctx_set(NULL);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice* d) {
  SIM_COUNT(cuCtxGetDevice);
  SIM_TRY(grape__sim_need_ctx());
  if (d == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize(void) {
  SIM_COUNT(cuCtxSynchronize);
  CUresult r = grape__sim_need_ctx();
  if (r != CUDA_SUCCESS)
    return r;
  r = grape__sim_unsafe_call();
  if (r != CUDA_SUCCESS)
    return r;
  return grape__sim_wait_all();
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext c, unsigned int* v) {
  SIM_COUNT(cuCtxGetApiVersion);
  (void)c;
  if (v == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *v = 3020;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) {
  SIM_COUNT(cuCtxGetFlags);
  SIM_TRY(grape__sim_need_ctx());
  if (flags == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *flags = grape__sim_primary()->flags;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  SIM_COUNT(cuCtxGetStreamPriorityRange);
  if (least != NULL)
    *least = 0;
  if (greatest != NULL)
    *greatest = -5;
  return CUDA_SUCCESS;
}

static size_t limits[CU_LIMIT_MAX] = {
  [CU_LIMIT_STACK_SIZE] = 1024, [CU_LIMIT_PRINTF_FIFO_SIZE] = 1048576,
  [CU_LIMIT_MALLOC_HEAP_SIZE] = 8388608, [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
  [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048, [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
};

SIM_EXPORT CUresult cuCtxGetLimit(size_t* v, CUlimit l) {
  SIM_COUNT(cuCtxGetLimit);
  if (v == NULL || (int)l < 0 || l >= CU_LIMIT_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  *v = limits[l];
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetLimit(CUlimit l, size_t v) {
  SIM_COUNT(cuCtxSetLimit);
  if ((int)l < 0 || l >= CU_LIMIT_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  limits[l] = v;
  return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ---- */

/* Every (name, version, variant) triple of the headers the sim is built with,
 * sorted by name then version (sim_procs.h, generated by gen_api.py from
 * cudaTypedefs.h and cuda.h, plus api.def's aliases). Entry points the sim
 * does not serve resolve to stubs that say so; an unknown name is
 * SYMBOL_NOT_FOUND, as with NVIDIA's driver. */
typedef struct proc_s {
  const char* name;
  int version;      /* returned to callers asking for this version or newer */
  int per_thread;   /* the variant CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM selects */
  void* fn;
} proc_t;

static const proc_t procs[] = {
#define SIM_PROC(name, ver, pt, sym) {name, ver, pt, (void*)&sym},
#include "sim_procs.h"
#undef SIM_PROC
};
#define NPROCS (sizeof(procs) / sizeof(procs[0]))

/* The newest row of one variant not newer than version, or NULL. */
static const proc_t* proc_pick(size_t lo, size_t hi, int version, int per_thread) {
  const proc_t* best = NULL;
  for (size_t i = lo; i < hi; i++)
    if (procs[i].per_thread == per_thread && procs[i].version <= version)
      best = &procs[i];   /* rows are in version order */
  return best;
}

static CUresult proc_lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                            CUdriverProcAddressQueryResult* status) {
  if (symbol == NULL || pfn == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    return CUDA_ERROR_INVALID_VALUE;
  /* The rows of one name are contiguous: find the first by binary search. */
  size_t lo = 0, hi = NPROCS;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(procs[mid].name, symbol) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t end = lo;
  while (end < NPROCS && strcmp(procs[end].name, symbol) == 0)
    end++;
  /* The per-thread flag picks the _ptds/_ptsz variant where the version has
   * one; older versions had none and answer with the plain function. */
  const proc_t* best = NULL;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    best = proc_pick(lo, end, version, 1);
  if (best == NULL)
    best = proc_pick(lo, end, version, 0);
  *pfn = NULL;
  if (best == NULL) {
    if (status != NULL)
      *status = end > lo ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                         : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = best->fn;
  if (status != NULL)
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  SIM_COUNT(cuGetProcAddress_v2);
  return proc_lookup(symbol, pfn, cudaVersion, flags, status);
}

SIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags) {
  SIM_COUNT(cuGetProcAddress);
  return proc_lookup(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- Exit report ---- */

static void write_report(void) {
  char path[4096];
  if (!grape__sim_out_path("SIMCU_REPORT", path, sizeof(path)))
    return;
  FILE* f = fopen(path, "w");
  if (f == NULL) {
    grape__sim_logf("cannot write SIMCU_REPORT file %s", path);
    return;
  }
  fprintf(f, "{\"api_calls\":{");
  int first = 1;
  for (int i = 0; i < SYM__COUNT; i++) {
    unsigned long long n = atomic_load(&grape__sim.calls[i]);
    if (n == 0)
      continue;
    fprintf(f, "%s\"%s\":%llu", first ? "" : ",", grape__sim_sym_names[i], n);
    first = 0;
  }
  sim_bound_t b;
  grape__sim_bound_report(&b);
  fprintf(f, "},\"pid\":%ld,\"kernels\":", (long)getpid());
  grape__sim_kstat_write(f);
  fprintf(f, ",\"memops\":");
  grape__sim_mstat_write(f);
  fprintf(f, ",\"kernels_executed\":%llu,\"graph_launches\":%llu,"
             "\"graph_kernel_nodes_executed\":%llu,\"exec_node_param_updates\":%llu,"
             "\"sim_host_ns\":%llu,\"sim_end_ns\":%llu,\"device_busy_ns\":%llu,"
             "\"lower_bound_ns\":%llu,\"lower_bound_host_ns\":%llu,"
             "\"lower_bound_device_ns\":%llu,\"lower_bound_stretches\":%llu,"
             "\"helper_end_ns\":%llu,\"shim_ops\":%llu}\n",
          (unsigned long long)atomic_load(&grape__sim.kernels_executed),
          (unsigned long long)atomic_load(&grape__sim.graph_launches),
          (unsigned long long)atomic_load(&grape__sim.graph_kernel_nodes_executed),
          (unsigned long long)atomic_load(&grape__sim.exec_node_param_updates),
          (unsigned long long)grape__sim_host_total(), (unsigned long long)grape__sim_end_ns(),
          (unsigned long long)b.device_busy_ns, (unsigned long long)b.lower_bound_ns,
          (unsigned long long)b.host_ns, (unsigned long long)b.device_ns,
          (unsigned long long)b.stretches, (unsigned long long)grape__sim_helper_end_ns(),
          (unsigned long long)grape__sim_shim_ops());
  fclose(f);
}

/* ---- Fork ---- */

static void fork_prepare(void) {
  grape__sim_module_atfork(SIM_FORK_PREPARE);
  pthread_mutex_lock(&grape__sim.lock);
  grape__sim_reg_atfork(SIM_FORK_PREPARE);
  grape__sim_mem_atfork(SIM_FORK_PREPARE);
  grape__sim_memop_atfork(SIM_FORK_PREPARE);
}

static void fork_parent(void) {
  grape__sim_memop_atfork(SIM_FORK_PARENT);
  grape__sim_mem_atfork(SIM_FORK_PARENT);
  grape__sim_reg_atfork(SIM_FORK_PARENT);
  pthread_mutex_unlock(&grape__sim.lock);
  grape__sim_module_atfork(SIM_FORK_PARENT);
}

/* The forking thread holds every lock; the condition variables may have had
 * waiters that do not exist here, so they start afresh. */
static void fork_child(void) {
  (void)pthread_cond_init(&grape__sim.done_cv, NULL);
  grape__sim_kstat_atfork_child();
  grape__sim_stream_atfork_child();
  grape__sim_memop_atfork(SIM_FORK_CHILD);
  grape__sim_mem_atfork(SIM_FORK_CHILD);
  grape__sim_reg_atfork(SIM_FORK_CHILD);
  pthread_mutex_unlock(&grape__sim.lock);
  grape__sim_module_atfork(SIM_FORK_CHILD);
}

__attribute__((constructor)) static void sim_init(void) {
  (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

__attribute__((destructor)) static void sim_fini(void) {
  /* Let queued work finish so the counters describe everything submitted,
   * but never hang the exit on a host function that does not return. */
  if (grape__sim.initialized)
    grape__sim_wait_all_timed(2000);
  write_report();
  grape__sim_timeline_close();
}
