/* The real driver behind graph mode (see graph_driver.h for the design). */
#include "graph_driver.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "log.h"
#include "real.h"
#include "timeline.h"

grape_real_graph_t grape__rg;
static int real_state;   /* 0 unresolved, 1 complete, -1 something missing (no graphs) */
static pthread_mutex_t real_lock = PTHREAD_MUTEX_INITIALIZER;

/* The context the cache's driver calls name (grape__ctx_enter). */
static __thread CUcontext sub_ctx __attribute__((tls_model("initial-exec")));


#define REAL_ROW(field, name) {(void**)&grape__rg.field, name}
int grape__graph_real_resolve(void) {
  int st = __atomic_load_n(&real_state, __ATOMIC_ACQUIRE);
  if (st != 0)
    return st;
  pthread_mutex_lock(&real_lock);
  if (real_state == 0) {
    const struct {
      void** slot;
      const char* name;
    } rows[] = {
      REAL_ROW(graph_create, "cuGraphCreate"),       REAL_ROW(add_kernel, "cuGraphAddKernelNode_v2"),
      REAL_ROW(add_memset, "cuGraphAddMemsetNode"),  REAL_ROW(add_memcpy, "cuGraphAddMemcpyNode"),
      REAL_ROW(instantiate, "cuGraphInstantiateWithFlags"),
      REAL_ROW(graph_destroy, "cuGraphDestroy"),     REAL_ROW(exec_destroy, "cuGraphExecDestroy"),
      REAL_ROW(set_kernel, "cuGraphExecKernelNodeSetParams_v2"),
      REAL_ROW(set_memset, "cuGraphExecMemsetNodeSetParams"),
      REAL_ROW(set_memcpy, "cuGraphExecMemcpyNodeSetParams"),
      REAL_ROW(launch, "cuGraphLaunch"),             REAL_ROW(launch_kernel, "cuLaunchKernel"),
      REAL_ROW(launch_kernel_ex, "cuLaunchKernelEx"),
      REAL_ROW(node_set_attr, "cuGraphKernelNodeSetAttribute"),
      REAL_ROW(memset8, "cuMemsetD8Async"),          REAL_ROW(memset16, "cuMemsetD16Async"),
      REAL_ROW(memset32, "cuMemsetD32Async"),        REAL_ROW(memcpy_dtod, "cuMemcpyDtoDAsync_v2"),
      REAL_ROW(memcpy_dtoh, "cuMemcpyDtoHAsync_v2"),
      REAL_ROW(ctx_get, "cuCtxGetCurrent"),          REAL_ROW(ctx_set, "cuCtxSetCurrent"),
      REAL_ROW(ctx_device, "cuCtxGetDevice"),        REAL_ROW(stream_flags, "cuStreamGetFlags"),
      REAL_ROW(stream_ctx, "cuStreamGetCtx"),        REAL_ROW(device_count, "cuDeviceGetCount"),
      REAL_ROW(event_create, "cuEventCreate"),       REAL_ROW(event_destroy, "cuEventDestroy_v2"),
      REAL_ROW(event_elapsed, "cuEventElapsedTime"),
      REAL_ROW(add_event_record, "cuGraphAddEventRecordNode"),
      REAL_ROW(func_attr, "cuFuncGetAttribute"),     REAL_ROW(kernel_attr, "cuKernelGetAttribute"),
      REAL_ROW(device_attr, "cuDeviceGetAttribute"),
    };
    st = 1;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
      *rows[i].slot = grape__real_driver(rows[i].name);
      if (*rows[i].slot == NULL) {
        grape_log_warn("graph mode needs %s, which the driver does not have; running as observe",
                       rows[i].name);
        st = -1;
        break;
      }
    }
    __atomic_store_n(&real_state, st, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&real_lock);
  return real_state;
}

/* CUDA_KERNEL_NODE_PARAMS of a kernel op: its packed parameter block as the
 * 'extra' buffer, so no per-parameter pointers are needed. */
typedef struct kernel_args_s {
  CUDA_KERNEL_NODE_PARAMS p;
  void* extra[5];
  size_t size;
} kernel_args_t;

static void kernel_args(const grape_gc_op_t* op, CUcontext ctx, kernel_args_t* a) {
  memset(&a->p, 0, sizeof(a->p));
  if (op->flags & GRAPE_SIG_CUKERNEL) {
    a->p.kern = (CUkernel)op->fn;
    a->p.ctx = ctx;
  } else {
    a->p.func = (CUfunction)op->fn;
  }
  a->p.gridDimX = op->dims->grid[0];
  a->p.gridDimY = op->dims->grid[1];
  a->p.gridDimZ = op->dims->grid[2];
  a->p.blockDimX = op->dims->block[0];
  a->p.blockDimY = op->dims->block[1];
  a->p.blockDimZ = op->dims->block[2];
  a->p.sharedMemBytes = op->dims->shmem;
  a->size = op->param_bytes;
  a->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
  a->extra[1] = (void*)op->params;
  a->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
  a->extra[3] = &a->size;
  a->extra[4] = CU_LAUNCH_PARAM_END;
  a->p.extra = a->size ? a->extra : NULL;
}

static CUDA_MEMSET_NODE_PARAMS memset_args(const grape_gc_op_t* op) {
  grape_memset_params_t m;
  memcpy(&m, op->params, sizeof(m));
  return (CUDA_MEMSET_NODE_PARAMS){.dst = m.dst, .pitch = 0, .value = m.value,
                                   .elementSize = m.esize, .width = m.count, .height = 1};
}

static CUDA_MEMCPY3D memcpy_args(const grape_gc_op_t* op) {
  grape_memcpy_params_t m;
  memcpy(&m, op->params, sizeof(m));
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = m.src;
  if (op->flags & GRAPE_SIG_TO_HOST) {
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = (void*)(uintptr_t)m.dst;
  } else {
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = m.dst;
  }
  c.WidthInBytes = m.bytes;
  c.Height = 1;
  c.Depth = 1;
  return c;
}


static int d_graph_create(void* self, void** g) {
  (void)self;
  return grape__rg.graph_create((CUgraph*)g, 0);
}

/* A node of op after deps[0, ndeps). */
static int add_node(void** node, void* graph, const CUgraphNode* deps, size_t ndeps,
                    const grape_gc_op_t* op) {
  switch (op->kind) {
  case GRAPE_OP_KERNEL: {
    kernel_args_t a;
    kernel_args(op, sub_ctx, &a);
    CUresult r = grape__rg.add_kernel((CUgraphNode*)node, graph, deps, ndeps, &a.p);
    /* Its launch attributes go on the node (a key's are fixed: never updated). */
    /* They follow the parameter bytes, maybe misaligned: copied out one by one. */
    const uint8_t* at = (const uint8_t*)op->params + op->param_bytes;
    for (size_t i = 0; r == CUDA_SUCCESS && i < op->attrs_bytes / sizeof(CUlaunchAttribute); i++) {
      CUlaunchAttribute a;
      memcpy(&a, at + i * sizeof(a), sizeof(a));
      if (a.id != CU_LAUNCH_ATTRIBUTE_IGNORE)
        r = grape__rg.node_set_attr(*node, (CUkernelNodeAttrID)a.id, (const CUkernelNodeAttrValue*)&a.value);
    }
    return r;
  }
  case GRAPE_OP_MEMSET: {
    CUDA_MEMSET_NODE_PARAMS m = memset_args(op);
    return grape__rg.add_memset((CUgraphNode*)node, graph, deps, ndeps, &m, sub_ctx);
  }
  default: {
    CUDA_MEMCPY3D m = memcpy_args(op);
    return grape__rg.add_memcpy((CUgraphNode*)node, graph, deps, ndeps, &m, sub_ctx);
  }
  }
}

static int d_graph_add(void* self, void** node, void* graph, void* after, const grape_gc_op_t* op) {
  (void)self;
  CUgraphNode dep = after;
  return add_node(node, graph, &dep, after != NULL, op);
}

static int d_graph_add_deps(void* self, void** node, void* graph, void* const* deps, size_t ndeps,
                            const grape_gc_op_t* op) {
  (void)self;
  return add_node(node, graph, (const CUgraphNode*)deps, ndeps, op);
}

static int d_instantiate(void* self, void** exec, void* graph) {
  (void)self;
  return grape__rg.instantiate((CUgraphExec*)exec, graph, 0);
}

static int d_graph_destroy(void* self, void* g) {
  (void)self;
  return grape__rg.graph_destroy(g);
}

static int d_exec_destroy(void* self, void* e) {
  (void)self;
  return grape__rg.exec_destroy(e);
}

static int d_exec_update(void* self, void* exec, void* node, const grape_gc_op_t* op) {
  (void)self;
  switch (op->kind) {
  case GRAPE_OP_KERNEL: {
    kernel_args_t a;
    kernel_args(op, sub_ctx, &a);
    return grape__rg.set_kernel(exec, node, &a.p);
  }
  case GRAPE_OP_MEMSET: {
    CUDA_MEMSET_NODE_PARAMS m = memset_args(op);
    return grape__rg.set_memset(exec, node, &m, sub_ctx);
  }
  default: {
    CUDA_MEMCPY3D m = memcpy_args(op);
    return grape__rg.set_memcpy(exec, node, &m, sub_ctx);
  }
  }
}

static int d_exec_launch(void* self, void* exec, void* stream) {
  (void)self;
  GRAPE_TL_START(tl, -1);
  if (!GRAPE_TL_ON(tl))
    return grape__rg.launch(exec, stream);
  grape__tl_dev_begin(&tl, stream, 0);   /* (nothing when the call is not recorded) */
  int r = grape__rg.launch(exec, stream);
  grape__tl_submit_end(&tl, GRAPE_TRACE_TL_GRAPH, grape_gc_launch_ops, stream, r == 0);
  return r;
}

static int submit_op(const grape_gc_op_t* op, void* stream);

/* One held op submitted eagerly (recorded in the timeline with its own events). */
static int d_submit(void* self, const grape_gc_op_t* op, void* stream) {
  (void)self;
  GRAPE_TL_START(tl, -1);
  if (!GRAPE_TL_ON(tl))
    return submit_op(op, stream);
  grape__tl_dev_begin(&tl, stream, 0);
  int r = submit_op(op, stream);
  /* A kernel is named by the held call it ran for (the export pairs them);
   * a memset or copy by its bytes. */
  uint64_t what = op->kind == GRAPE_OP_KERNEL
                      ? 0
                      : op->dims->grid[0] | (uint64_t)op->dims->grid[1] << 32;
  grape__tl_submit_end(&tl, op->kind, what, stream, r == 0);
  return r;
}

static int submit_op(const grape_gc_op_t* op, void* stream) {
  switch (op->kind) {
  case GRAPE_OP_KERNEL: {
    kernel_args_t a;
    kernel_args(op, NULL, &a);
    const grape_op_dims_t* d = op->dims;
    if (op->attrs_bytes) {
      /* The kept attributes may be misaligned (after the parameter bytes):
       * the driver gets an aligned copy. */
      unsigned n = op->attrs_bytes / (unsigned)sizeof(CUlaunchAttribute);
      CUlaunchAttribute local[16];
      CUlaunchAttribute* at = n <= 16 ? local : malloc(op->attrs_bytes);
      if (at == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
      memcpy(at, (const uint8_t*)op->params + op->param_bytes, (size_t)n * sizeof(*at));
      CUlaunchConfig c = {d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2],
                          d->shmem, stream, at, n};
      int r = grape__rg.launch_kernel_ex(&c, (CUfunction)op->fn, NULL, a.p.extra);
      if (at != local)
        free(at);
      return r;
    }
    return grape__rg.launch_kernel((CUfunction)op->fn, d->grid[0], d->grid[1], d->grid[2], d->block[0],
                              d->block[1], d->block[2], d->shmem, stream, NULL, a.p.extra);
  }
  case GRAPE_OP_MEMSET: {
    grape_memset_params_t m;
    memcpy(&m, op->params, sizeof(m));
    if (m.esize == 4)
      return grape__rg.memset32(m.dst, m.value, m.count, stream);
    if (m.esize == 2)
      return grape__rg.memset16(m.dst, (unsigned short)m.value, m.count, stream);
    return grape__rg.memset8(m.dst, (unsigned char)m.value, m.count, stream);
  }
  default: {
    grape_memcpy_params_t m;
    memcpy(&m, op->params, sizeof(m));
    if (op->flags & GRAPE_SIG_TO_HOST)
      return grape__rg.memcpy_dtoh((void*)(uintptr_t)m.dst, m.src, m.bytes, stream);
    return grape__rg.memcpy_dtod(m.dst, m.src, m.bytes, stream);
  }
  }
}

/* The builder thread's builds run in ctx, made current there. */
static int d_bind(void* self, void* ctx) {
  (void)self;
  sub_ctx = ctx;
  return ctx != NULL ? grape__rg.ctx_set(ctx) : 0;
}

/* A segment's timer: the timing events its graphs record first and last. */
typedef struct timer_s {
  CUevent ev[2];
} seg_timer_t;

static int d_timer_create(void* self, void** out) {
  (void)self;
  seg_timer_t* t = calloc(1, sizeof(*t));
  if (t == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = grape__rg.event_create(&t->ev[0], CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS && (r = grape__rg.event_create(&t->ev[1], CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
    grape__rg.event_destroy(t->ev[0]);
  if (r != CUDA_SUCCESS) {
    free(t);
    return r;
  }
  *out = t;
  return CUDA_SUCCESS;
}

static int d_timer_destroy(void* self, void* timer) {
  (void)self;
  seg_timer_t* t = timer;
  grape__rg.event_destroy(t->ev[0]);
  grape__rg.event_destroy(t->ev[1]);
  free(t);
  return CUDA_SUCCESS;
}

static int d_graph_add_timer(void* self, void** node, void* graph, void* after, void* timer, int end) {
  (void)self;
  CUgraphNode dep = after;
  return grape__rg.add_event_record((CUgraphNode*)node, graph, &dep, after != NULL,
                                    ((seg_timer_t*)timer)->ev[end != 0]);
}

static int d_graph_add_timer_deps(void* self, void** node, void* graph, void* const* deps,
                                  size_t ndeps, void* timer, int end) {
  (void)self;
  return grape__rg.add_event_record((CUgraphNode*)node, graph, (const CUgraphNode*)deps, ndeps,
                                    ((seg_timer_t*)timer)->ev[end != 0]);
}

/* The estimator's occupancy: blocks of op's kernel per SM, the device's SMs.
 * Asked once per function and shape (graphcache/conc.c caches it). */
static int d_occupancy(void* self, const grape_gc_op_t* op, uint32_t* per_sm, uint32_t* sms) {
  (void)self;
  typedef CUresult (*occ_fn)(int*, CUfunction, int, size_t);
  static occ_fn occ;
  if (occ == NULL && (occ = (occ_fn)grape__real_driver("cuOccupancyMaxActiveBlocksPerMultiprocessor")) == NULL)
    return CUDA_ERROR_NOT_FOUND;
  const grape_op_dims_t* d = op->dims;
  int n = 0, count = 0;
  CUdevice dev;
  /* A CUkernel may stand where a CUfunction is asked for (cuda.h). */
  CUresult r = occ(&n, (CUfunction)op->fn, (int)(d->block[0] * d->block[1] * d->block[2]), d->shmem);
  if (r == CUDA_SUCCESS && (r = grape__rg.ctx_device(&dev)) == CUDA_SUCCESS)
    r = grape__rg.device_attr(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  if (r != CUDA_SUCCESS)
    return r;
  *per_sm = n > 0 ? (uint32_t)n : 1;
  *sms = count > 0 ? (uint32_t)count : 0;
  return CUDA_SUCCESS;
}

static int d_timer_read(void* self, void* timer, uint64_t* ns) {
  (void)self;
  seg_timer_t* t = timer;
  float ms = 0;
  CUresult r = grape__rg.event_elapsed(&ms, t->ev[0], t->ev[1]);
  if (r == CUDA_SUCCESS)
    *ns = ms > 0 ? (uint64_t)(ms * 1e6) : 0;
  return r;
}

const grape_gc_driver_t grape__graph_driver = {
    .self = NULL,
    .graph_create = d_graph_create,
    .graph_add = d_graph_add,
    .graph_instantiate = d_instantiate,
    .graph_destroy = d_graph_destroy,
    .exec_destroy = d_exec_destroy,
    .exec_update = d_exec_update,
    .exec_launch = d_exec_launch,
    .submit = d_submit,
    .bind = d_bind,
    .timer_create = d_timer_create,
    .timer_destroy = d_timer_destroy,
    .graph_add_timer = d_graph_add_timer,
    .timer_read = d_timer_read,
    .graph_add_deps = d_graph_add_deps,
    .graph_add_timer_deps = d_graph_add_timer_deps,
    .occupancy = d_occupancy,
};

/* ---- The submission context ---- */

__thread char grape__ctx_thread_tag __attribute__((tls_model("initial-exec")));
static int multi_ctx = -1;   /* -1: not asked yet */

CUcontext grape__ctx_current(void) {
  CUcontext c = NULL;
  if (grape__rg.ctx_get(&c) != CUDA_SUCCESS)
    return NULL;
  return c;
}

int grape__ctx_multi(void) {
  int m = __atomic_load_n(&multi_ctx, __ATOMIC_RELAXED);
  if (__builtin_expect(m >= 0, 1))
    return m;
  int n = 0;
  GRAPE_NO_REENTRY(m = grape__rg.device_count(&n) != CUDA_SUCCESS || n != 1);
  int expected = -1;
  __atomic_compare_exchange_n(&multi_ctx, &expected, m, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return __atomic_load_n(&multi_ctx, __ATOMIC_RELAXED);
}

void grape__ctx_note_created(void) {
  __atomic_store_n(&multi_ctx, 1, __ATOMIC_RELAXED);
}

grape_ctx_guard_t grape__ctx_enter(CUcontext ctx, const void* holder) {
  grape_ctx_guard_t g = {NULL, 0};
  sub_ctx = ctx;
  /* One context in the process, and the thread that held the work: it is
   * current (that thread issued the work in it). */
  if (ctx == NULL || (holder == &grape__ctx_thread_tag && !grape__ctx_multi()))
    return g;
  GRAPE_NO_REENTRY(g.prev = grape__ctx_current());
  if (g.prev != ctx) {
    GRAPE_NO_REENTRY(grape__rg.ctx_set(ctx));
    g.switched = 1;
  }
  return g;
}

void grape__ctx_leave(grape_ctx_guard_t g) {
  if (g.switched)
    GRAPE_NO_REENTRY(grape__rg.ctx_set(g.prev));
}
