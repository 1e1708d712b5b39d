/* Offline replay: a trace's paths rebuilt as CUDA graphs and run on a device
 * (grape replay).
 *
 * DESIGN: setup first, then one path at a time. Setup loads the driver
 * (driver.c), makes the primary context current, loads every image the chosen
 * paths need with cuModuleLoadData, resolves their functions by name,
 * allocates every recorded allocation they point into (zero-filled, same
 * size and kind), and on the simulated device makes sure each kernel's CPU
 * body can be found, failing with the list of places looked in if not. Each
 * path then becomes a chain of graph nodes in recorded order: its kernels
 * with the representative parameters, every pointer word rewritten to the
 * new allocation at the same offset; memsets and copies on scratch buffers
 * of the recorded size (the shim records their size, not their addresses).
 * With timing, the path also gets a second graph with an event-record node
 * before each op and after the last: the plain graph, timed by stream events
 * around its launch, gives the path's time, the instrumented one each op's.
 * A path that cannot be built (an unknown kernel, missing parameters, a
 * failed allocation or node) is skipped with its reason; nothing is retried. */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "driver.h"
#include "grape/trace.h"
#include "graphcache/fingerprint.h"

typedef struct engine_s {
  grape_trace_t* t;
  const grape_replay_opts_t* o;
  grape_drv_t d;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  uint8_t* want;               /* per path: chosen */
  CUmodule* modules;           /* per image; NULL = not loaded */
  CUfunction* funcs;           /* per function; NULL = not found */
  CUdeviceptr* bases;          /* per allocation; 0 = not allocated */
  uint8_t* alloc_host;         /* per allocation: allocated with cuMemAllocHost */
  CUdeviceptr scratch[2];
  size_t scratch_bytes;
  void* scratch_host;          /* page-locked: where copies to the host go */
  size_t scratch_host_bytes;
  CUevent* events;             /* n + 1 for the longest path */
  CUevent path_ev[2];
  size_t nevents;
  const char* device;          /* its name, for the times */
  char* err;
  size_t errlen;
} engine_t;

__attribute__((format(printf, 2, 3)))
static void say(const engine_t* e, const char* fmt, ...) {
  if (e->o->log == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(e->o->log, fmt, ap);
  va_end(ap);
}

__attribute__((format(printf, 2, 3)))
static int fail(engine_t* e, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (e->err && e->errlen)
    vsnprintf(e->err, e->errlen, fmt, ap);
  va_end(ap);
  return -EIO;
}

static const char* cu_err(const engine_t* e, CUresult rc) {
  static __thread char buf[96];
  return grape__drv_err(&e->d, rc, buf, sizeof(buf));
}

static int chosen(const grape_replay_opts_t* o, uint64_t fp) {
  if (o->paths == NULL)
    return 1;
  for (size_t i = 0; i < o->npaths; i++)
    if (o->paths[i] == fp)
      return 1;
  return 0;
}

/* ---- Kernel bodies on the simulated device ---- */

static int file_exists(const char* p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Loads obj's bodies: "<obj>_sim.so" when it exists (an executable's bodies
 * built as a shared object beside it), else obj itself. Each attempt is
 * noted in tried. @return the handle, or NULL. */
static void* load_bodies(const char* obj, char* tried, size_t cap) {
  char alt[4200];
  snprintf(alt, sizeof(alt), "%s_sim.so", obj);
  const char* cands[2] = {alt, obj};
  for (int i = 0; i < 2; i++) {
    size_t n = strlen(tried);
    void* h = file_exists(cands[i]) ? dlopen(cands[i], RTLD_NOW | RTLD_LOCAL) : NULL;
    snprintf(tried + n, cap - n, "%s%s (%s)", n ? ", " : "", cands[i],
             h ? "loaded" : file_exists(cands[i]) ? dlerror() : "missing");
    if (h != NULL)
      return h;
  }
  return NULL;
}

/* 1 when one of the n handles, or the global scope, has name's CPU body
 * (where the sim looks, less SIMCU_KERNELS, which it loads itself). */
static int body_in(void* const* h, size_t n, const char* name) {
  char sym[1100];
  if (snprintf(sym, sizeof(sym), "simcu_body_%s", name) >= (int)sizeof(sym))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (h[i] != NULL && dlsym(h[i], sym) != NULL)
      return 1;
  return dlsym(RTLD_DEFAULT, sym) != NULL;
}

/* Loads the bodies the chosen paths' kernels need, from --bodies, each
 * function's recorded object and the traced program; fails naming the first
 * kernel without one and where it was looked for. */
static int sim_bodies(engine_t* e) {
  grape_trace_t* t = e->t;
  size_t nf = grape_trace_func_count(t), nmax = nf + e->o->nbodies + 1, n = 0;
  uint8_t* used = calloc(nf + 1, 1);
  const char** objs = calloc(nmax, sizeof(*objs));
  void** h = calloc(nmax, sizeof(*h));
  size_t cap = 8192;
  char* tried = calloc(cap, 1);
  int rc = 0;
  if (used == NULL || objs == NULL || h == NULL || tried == NULL) {
    rc = fail(e, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    for (uint32_t j = 0; e->want[i] && j < p->nops; j++)
      if (p->ops[j].func != GRAPE_TRACE_NONE)
        used[p->ops[j].func] = 1;
  }
  for (size_t i = 0; i < e->o->nbodies; i++) {
    h[n] = dlopen(e->o->bodies[i], RTLD_NOW | RTLD_LOCAL);
    if (h[n++] == NULL) {
      rc = fail(e, "--bodies %s: %s", e->o->bodies[i], dlerror());
      goto done;
    }
  }
  size_t first = n;
  for (size_t f = 0; f <= nf; f++) {
    const char* b = f < nf ? grape_trace_func(t, f)->bodies : grape_trace_info(t)->program;
    int dup = (f < nf && !used[f]) || b[0] == '\0';
    for (size_t k = first; k < n && !dup; k++)
      dup = strcmp(objs[k], b) == 0;
    if (dup)
      continue;
    objs[n] = b;
    h[n++] = load_bodies(b, tried, cap);
  }
  for (size_t f = 0; f < nf; f++) {
    const char* name = grape_trace_func(t, f)->name;
    if (!used[f] || name[0] == '\0' || e->o->sim_timed || body_in(h, n, name))
      continue;
    rc = fail(e, "the simulated device has no CPU body for kernel %s (simcu_body_%s); looked in: "
              "%s%sthe replaying process. Build the program's bodies as a shared object beside "
              "it (examples/: <program>_sim.so), name one with --bodies LIB or SIMCU_KERNELS, or run "
              "kernels without one timed (--sim-kernels timed: a framework's kernels)",
              name, name, tried, tried[0] ? ", " : "");
    goto done;
  }
done:
  free(used);
  free(objs);
  free(h);
  free(tried);
  return rc;
}

/* ---- Setup ---- */

static int setup_device(engine_t* e, grape_replay_stats_t* st) {
  CUresult rc;
  int n = 0;
  if ((rc = e->d.cuInit(0)) != CUDA_SUCCESS || (rc = e->d.cuDeviceGetCount(&n)) != CUDA_SUCCESS)
    return fail(e, "the CUDA driver %s does not initialise: %s", e->o->driver, cu_err(e, rc));
  if (n <= 0)
    return fail(e, "the CUDA driver %s reports no device", e->o->driver);
  if ((rc = e->d.cuDeviceGet(&e->dev, 0)) != CUDA_SUCCESS ||
      (rc = e->d.cuDeviceGetName(st->device, (int)sizeof(st->device), e->dev)) != CUDA_SUCCESS ||
      (rc = e->d.cuDevicePrimaryCtxRetain(&e->ctx, e->dev)) != CUDA_SUCCESS ||
      (rc = e->d.cuCtxSetCurrent(e->ctx)) != CUDA_SUCCESS ||
      (rc = e->d.cuStreamCreate(&e->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
    return fail(e, "cannot set up device 0: %s", cu_err(e, rc));
  return 0;
}

/* Loads image i (once). NUL-terminated for PTX, and copied so that the
 * driver gets an aligned buffer whatever the trace file's layout. */
static int load_image(engine_t* e, uint32_t i) {
  if (e->modules[i] != NULL)
    return 0;
  const grape_trace_image_t* im = grape_trace_image(e->t, i);
  uint8_t* copy = malloc((size_t)im->size + 1);
  if (copy == NULL)
    return -ENOMEM;
  memcpy(copy, im->data, (size_t)im->size);
  copy[im->size] = '\0';
  CUresult rc = e->d.cuModuleLoadData(&e->modules[i], copy);
  free(copy);
  if (rc != CUDA_SUCCESS) {
    e->modules[i] = NULL;
    say(e, "grape: warning: image %u (sm_%u %s, %llu bytes) does not load: %s\n", i, im->arch,
        im->kind == GRAPE_TRACE_IMAGE_ELF ? "cubin" : "PTX", (unsigned long long)im->size,
        cu_err(e, rc));
    return -EIO;
  }
  return 0;
}

/* Functions of the chosen paths: their images loaded, handles found. */
static int setup_functions(engine_t* e) {
  for (size_t i = 0; i < grape_trace_path_count(e->t); i++) {
    const grape_trace_path_t* p = grape_trace_path(e->t, i);
    for (uint32_t j = 0; e->want[i] && j < p->nops; j++) {
      uint32_t fi = p->ops[j].func;
      if (fi == GRAPE_TRACE_NONE || e->funcs[fi] != NULL)
        continue;
      const grape_trace_func_t* f = grape_trace_func(e->t, fi);
      if (f->image == GRAPE_TRACE_NONE || f->name[0] == '\0' || load_image(e, f->image) != 0 ||
          e->d.cuModuleGetFunction(&e->funcs[fi], e->modules[f->image], f->name) != CUDA_SUCCESS) {
        e->funcs[fi] = NULL;
        continue;
      }
    }
  }
  return 0;
}

/* Allocation a of the trace, zero-filled. @return 0 or a CUDA error. */
static CUresult alloc_one(engine_t* e, uint32_t a) {
  const grape_trace_alloc_t* al = grape_trace_alloc(e->t, a);
  CUresult rc;
  if (al->kind == GRAPE_TRACE_ALLOC_HOST_PINNED || al->kind == GRAPE_TRACE_ALLOC_HOST_REGISTERED) {
    void* p = NULL;
    rc = e->d.cuMemAllocHost(&p, (size_t)al->size);
    if (rc == CUDA_SUCCESS) {
      memset(p, 0, (size_t)al->size);
      e->bases[a] = (CUdeviceptr)(uintptr_t)p;   /* unified addressing: the same address */
      e->alloc_host[a] = 1;
    }
    return rc;
  }
  if (al->kind == GRAPE_TRACE_ALLOC_MANAGED)
    rc = e->d.cuMemAllocManaged(&e->bases[a], (size_t)al->size, CU_MEM_ATTACH_GLOBAL);
  else
    rc = e->d.cuMemAlloc(&e->bases[a], (size_t)al->size);
  if (rc == CUDA_SUCCESS)
    rc = e->d.cuMemsetD8(e->bases[a], 0, (size_t)al->size);
  return rc;
}

/* ---- One path ---- */

typedef struct built_s {
  CUgraph g;
  CUgraphExec x;
} built_t;

static void built_free(engine_t* e, built_t* b) {
  if (b->x)
    e->d.cuGraphExecDestroy(b->x);
  if (b->g)
    e->d.cuGraphDestroy(b->g);
  b->x = NULL;
  b->g = NULL;
}

/* Everything path p needs that setup may not have: allocations, scratch.
 * @return NULL, or why the path cannot run. */
static const char* path_ready(engine_t* e, const grape_trace_path_t* p, char* why, size_t cap) {
  for (uint32_t j = 0; j < p->nops; j++) {
    const grape_trace_op_t* op = &p->ops[j];
    if (op->kind != GRAPE_TRACE_OP_KERNEL) {
      if (op->sig_func > e->scratch_bytes) {
        for (int k = 0; k < 2; k++) {
          if (e->scratch[k])
            e->d.cuMemFree(e->scratch[k]);
          e->scratch[k] = 0;
        }
        e->scratch_bytes = 0;
        CUresult rc = CUDA_SUCCESS;
        for (int k = 0; k < 2 && rc == CUDA_SUCCESS; k++)
          rc = e->d.cuMemAlloc(&e->scratch[k], (size_t)op->sig_func);
        if (rc != CUDA_SUCCESS) {
          snprintf(why, cap, "op %u: no scratch buffer of %llu bytes: %s", j,
                   (unsigned long long)op->sig_func, cu_err(e, rc));
          return why;
        }
        e->scratch_bytes = (size_t)op->sig_func;
      }
      if (op->kind == GRAPE_TRACE_OP_MEMCPY && (op->flags & GRAPE_TRACE_OP_TO_HOST) &&
          op->sig_func > e->scratch_host_bytes) {
        if (e->scratch_host)
          e->d.cuMemFreeHost(e->scratch_host);
        e->scratch_host = NULL;
        e->scratch_host_bytes = 0;
        CUresult rc = e->d.cuMemAllocHost(&e->scratch_host, (size_t)op->sig_func);
        if (rc != CUDA_SUCCESS) {
          e->scratch_host = NULL;
          snprintf(why, cap, "op %u: no page-locked scratch buffer of %llu bytes: %s", j,
                   (unsigned long long)op->sig_func, cu_err(e, rc));
          return why;
        }
        e->scratch_host_bytes = (size_t)op->sig_func;
      }
      continue;
    }
    const grape_trace_func_t* f = op->func == GRAPE_TRACE_NONE ? NULL : grape_trace_func(e->t, op->func);
    if (f == NULL || e->funcs[op->func] == NULL) {
      snprintf(why, cap, "op %u: kernel %s is in no image the device loads", j,
               f && f->name[0] ? f->name : "(unnamed)");
      return why;
    }
    if (op->param_bytes == 0 && f->param_bytes > 0) {
      snprintf(why, cap, "op %u: the parameters of %s were not captured", j, f->name);
      return why;
    }
    for (uint32_t k = 0; k < op->nptrs; k++) {
      uint32_t a = op->ptrs[k].alloc;
      if (e->bases[a])
        continue;
      CUresult rc = alloc_one(e, a);
      if (rc != CUDA_SUCCESS) {
        e->bases[a] = 0;
        snprintf(why, cap, "op %u: allocation %u (%llu bytes) failed: %s", j, a,
                 (unsigned long long)grape_trace_alloc(e->t, a)->size, cu_err(e, rc));
        return why;
      }
    }
  }
  return NULL;
}

/* Adds op to graph g after dep (NULL: first). */
static CUresult add_op(engine_t* e, CUgraph g, const grape_trace_op_t* op, CUgraphNode* dep,
                       CUgraphNode* node, uint8_t* buf, void** argv) {
  size_t ndep = *dep ? 1 : 0;
  if (op->kind == GRAPE_TRACE_OP_MEMSET) {
    unsigned w = op->grid[0] == 2 || op->grid[0] == 4 ? op->grid[0] : 1;
    if (op->sig_func % w)
      w = 1;
    CUDA_MEMSET_NODE_PARAMS ms = {.dst = e->scratch[0], .pitch = 0, .value = 0,
                                  .elementSize = w, .width = (size_t)op->sig_func / w, .height = 1};
    return e->d.cuGraphAddMemsetNode(node, g, dep, ndep, &ms, e->ctx);
  }
  if (op->kind == GRAPE_TRACE_OP_MEMCPY) {
    CUDA_MEMCPY3D cp;
    memset(&cp, 0, sizeof(cp));
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.srcDevice = e->scratch[0];
    if (op->flags & GRAPE_TRACE_OP_TO_HOST) {
      cp.dstMemoryType = CU_MEMORYTYPE_HOST;
      cp.dstHost = e->scratch_host;
    } else {
      cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      cp.dstDevice = e->scratch[1];
    }
    cp.WidthInBytes = (size_t)op->sig_func;
    cp.Height = 1;
    cp.Depth = 1;
    return e->d.cuGraphAddMemcpyNode(node, g, dep, ndep, &cp, e->ctx);
  }
  const grape_trace_func_t* f = grape_trace_func(e->t, op->func);
  memcpy(buf, op->params, op->param_bytes);
  for (uint32_t k = 0; k < op->nptrs; k++) {
    uint64_t v = (uint64_t)e->bases[op->ptrs[k].alloc] + op->ptrs[k].delta;
    memcpy(buf + op->ptrs[k].offset, &v, 8);
  }
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof(kp));
  kp.func = e->funcs[op->func];
  kp.gridDimX = op->grid[0];
  kp.gridDimY = op->grid[1];
  kp.gridDimZ = op->grid[2];
  kp.blockDimX = op->block[0];
  kp.blockDimY = op->block[1];
  kp.blockDimZ = op->block[2];
  kp.sharedMemBytes = op->shmem;
  size_t bytes = op->param_bytes;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                   CU_LAUNCH_PARAM_END};
  /* kernelParams following the layout when it matches what was captured;
   * otherwise the block as one buffer, as an 'extra' launch passes it. */
  if (f->nparams != GRAPE_TRACE_NONE && f->param_bytes == op->param_bytes) {
    for (uint32_t k = 0; k < f->nparams; k++)
      argv[k] = buf + f->params[k].offset;
    kp.kernelParams = argv;
  } else {
    kp.extra = extra;
  }
  if (op->shmem > 48 * 1024)
    e->d.cuFuncSetAttribute(kp.func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)op->shmem);
  CUresult rc = e->d.cuGraphAddKernelNode(node, g, dep, ndep, &kp);
  if (rc != CUDA_SUCCESS)
    return rc;
  /* Launch attributes as captured (cuLaunchKernelEx), and cooperative launches. */
  size_t na = op->attr_bytes / sizeof(CUlaunchAttribute);
  for (size_t k = 0; k < na; k++) {
    CUlaunchAttribute a;
    memcpy(&a, op->attrs + k * sizeof(a), sizeof(a));
    if (e->d.cuGraphKernelNodeSetAttribute(*node, a.id, &a.value) != CUDA_SUCCESS)
      say(e, "grape: warning: launch attribute %d of %s not applied to its graph node\n",
          (int)a.id, f->name);
  }
  if (op->flags & 1u) {
    CUkernelNodeAttrValue v;
    memset(&v, 0, sizeof(v));
    v.cooperative = 1;
    e->d.cuGraphKernelNodeSetAttribute(*node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v);
  }
  return CUDA_SUCCESS;
}

/* Builds p as a chain of nodes; with events, an event-record node before
 * each op and after the last. */
static CUresult build(engine_t* e, const grape_trace_path_t* p, int events, built_t* b,
                      char* why, size_t cap) {
  uint32_t maxp = 64, maxargs = 1;
  for (uint32_t j = 0; j < p->nops; j++) {
    if (p->ops[j].param_bytes > maxp)
      maxp = p->ops[j].param_bytes;
    if (p->ops[j].func != GRAPE_TRACE_NONE) {
      uint32_t n = grape_trace_func(e->t, p->ops[j].func)->nparams;
      if (n != GRAPE_TRACE_NONE && n > maxargs)
        maxargs = n;
    }
  }
  uint8_t* buf = malloc(maxp + 8);
  void** argv = malloc(maxargs * sizeof(*argv));
  CUresult rc = buf && argv ? e->d.cuGraphCreate(&b->g, 0) : CUDA_ERROR_OUT_OF_MEMORY;
  CUgraphNode dep = NULL, node = NULL;
  for (uint32_t j = 0; rc == CUDA_SUCCESS && j <= p->nops; j++) {
    if (events) {
      rc = e->d.cuGraphAddEventRecordNode(&node, b->g, dep ? &dep : NULL, dep ? 1 : 0, e->events[j]);
      if (rc != CUDA_SUCCESS) {
        snprintf(why, cap, "event node %u: %s", j, cu_err(e, rc));
        break;
      }
      dep = node;
    }
    if (j == p->nops)
      break;
    rc = add_op(e, b->g, &p->ops[j], &dep, &node, buf, argv);
    if (rc != CUDA_SUCCESS)
      snprintf(why, cap, "op %u: graph node: %s", j, cu_err(e, rc));
    dep = node;
  }
  if (rc == CUDA_SUCCESS) {
    rc = e->d.cuGraphInstantiateWithFlags(&b->x, b->g, 0);
    if (rc == CUDA_SUCCESS)
      rc = e->d.cuGraphUpload(b->x, e->stream);
    if (rc != CUDA_SUCCESS)
      snprintf(why, cap, "instantiate: %s", cu_err(e, rc));
  }
  if (rc == CUDA_ERROR_OUT_OF_MEMORY && (buf == NULL || argv == NULL))
    snprintf(why, cap, "out of memory");
  free(buf);
  free(argv);
  return rc;
}

static int ensure_events(engine_t* e, size_t n) {
  if (n <= e->nevents)
    return 0;
  CUevent* ev = realloc(e->events, n * sizeof(*ev));
  if (ev == NULL)
    return -ENOMEM;
  e->events = ev;
  for (; e->nevents < n; e->nevents++)
    if (e->d.cuEventCreate(&e->events[e->nevents], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return -EIO;
  return 0;
}

/* Runs path i: warmup + iters launches, timed when asked. @return 0, or -1
 * with why. */
static int run_path(engine_t* e, size_t i, uint64_t* kernels, char* why, size_t cap) {
  const grape_trace_path_t* p = grape_trace_path(e->t, i);
  const grape_replay_opts_t* o = e->o;
  if (path_ready(e, p, why, cap) != NULL)
    return -1;
  if (o->time && ensure_events(e, (size_t)p->nops + 1) != 0) {
    snprintf(why, cap, "cannot create %u events", p->nops + 1);
    return -1;
  }
  built_t plain = {0}, timed = {0};
  int rc = -1;
  if (build(e, p, 0, &plain, why, cap) != CUDA_SUCCESS ||
      (o->time && build(e, p, 1, &timed, why, cap) != CUDA_SUCCESS))
    goto done;
  uint32_t nk = 0;
  for (uint32_t j = 0; j < p->nops; j++)
    nk += p->ops[j].kind == GRAPE_TRACE_OP_KERNEL;
  double path_ms = 0, *op_ms = calloc((size_t)p->nops + 1, sizeof(double));
  if (op_ms == NULL) {
    snprintf(why, cap, "out of memory");
    goto done;
  }
  CUresult r = CUDA_SUCCESS;
  for (long it = 0; it < o->warmup + o->iters && r == CUDA_SUCCESS; it++) {
    int timing = o->time && it >= o->warmup;
    if (timing)
      r = e->d.cuEventRecord(e->path_ev[0], e->stream);
    if (r == CUDA_SUCCESS)
      r = e->d.cuGraphLaunch(plain.x, e->stream);
    if (r == CUDA_SUCCESS && timing)
      r = e->d.cuEventRecord(e->path_ev[1], e->stream);
    if (r == CUDA_SUCCESS && o->time)
      r = e->d.cuGraphLaunch(timed.x, e->stream);
    if (r == CUDA_SUCCESS && o->time)
      r = e->d.cuStreamSynchronize(e->stream);
    *kernels += (uint64_t)nk * (o->time ? 2 : 1);
    if (r != CUDA_SUCCESS || !timing)
      continue;
    float ms;
    r = e->d.cuEventElapsedTime(&ms, e->path_ev[0], e->path_ev[1]);
    path_ms += ms;
    for (uint32_t j = 0; j < p->nops && r == CUDA_SUCCESS; j++) {
      r = e->d.cuEventElapsedTime(&ms, e->events[j], e->events[j + 1]);
      op_ms[j] += ms;
    }
  }
  if (r == CUDA_SUCCESS)
    r = e->d.cuStreamSynchronize(e->stream);
  if (r != CUDA_SUCCESS) {
    snprintf(why, cap, "launch: %s", cu_err(e, r));
  } else if (o->time) {
    for (uint32_t j = 0; j < p->nops; j++)
      op_ms[j] /= (double)o->iters;
    grape_trace_times_t tm = {(uint32_t)o->iters, path_ms / (double)o->iters, op_ms, e->device};
    rc = grape_trace_set_times(e->t, i, &tm) == 0 ? 0 : -1;
    if (rc)
      snprintf(why, cap, "out of memory");
  } else {
    rc = 0;
  }
  free(op_ms);
done:
  built_free(e, &plain);
  built_free(e, &timed);
  return rc;
}

/* ---- The replay ---- */

static void teardown(engine_t* e) {
  if (e->ctx == NULL)
    return;
  for (size_t i = 0; i < e->nevents; i++)
    e->d.cuEventDestroy(e->events[i]);
  for (int k = 0; k < 2; k++) {
    if (e->path_ev[k])
      e->d.cuEventDestroy(e->path_ev[k]);
    if (e->scratch[k])
      e->d.cuMemFree(e->scratch[k]);
  }
  if (e->scratch_host)
    e->d.cuMemFreeHost(e->scratch_host);
  for (size_t a = 0; e->bases && a < grape_trace_alloc_count(e->t); a++) {
    if (e->bases[a] == 0)
      continue;
    if (e->alloc_host[a])
      e->d.cuMemFreeHost((void*)(uintptr_t)e->bases[a]);
    else
      e->d.cuMemFree(e->bases[a]);
  }
  for (size_t m = 0; e->modules && m < grape_trace_image_count(e->t); m++)
    if (e->modules[m])
      e->d.cuModuleUnload(e->modules[m]);
  if (e->stream)
    e->d.cuStreamDestroy(e->stream);
  e->d.cuDevicePrimaryCtxRelease(e->dev);
}

int grape_replay_run(grape_trace_t* t, const grape_replay_opts_t* o, grape_replay_stats_t* st,
                     char* err, size_t errlen) {
  engine_t e;
  memset(&e, 0, sizeof(e));
  memset(st, 0, sizeof(*st));
  e.t = t;
  e.o = o;
  e.err = err;
  e.errlen = errlen;
  if (o->sz < offsetof(grape_replay_opts_t, progress) || o->iters < 1 || o->warmup < 0 || o->driver == NULL) {
    fail(&e, "bad replay options");
    return -EINVAL;
  }
  size_t np = grape_trace_path_count(t), nf = grape_trace_func_count(t);
  size_t ni = grape_trace_image_count(t), na = grape_trace_alloc_count(t);
  e.want = calloc(np + 1, 1);
  e.modules = calloc(ni + 1, sizeof(*e.modules));
  e.funcs = calloc(nf + 1, sizeof(*e.funcs));
  e.bases = calloc(na + 1, sizeof(*e.bases));
  e.alloc_host = calloc(na + 1, 1);
  int rc = 0;
  if (!e.want || !e.modules || !e.funcs || !e.bases || !e.alloc_host) {
    rc = -ENOMEM;
    fail(&e, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < np; i++)
    e.want[i] = (uint8_t)chosen(o, grape_trace_path(t, i)->fp);
  for (size_t k = 0; o->paths != NULL && k < o->npaths; k++) {
    size_t i = 0;
    while (i < np && grape_trace_path(t, i)->fp != o->paths[k])
      i++;
    if (i == np) {
      rc = -ENOENT;
      fail(&e, "path %016llx is not in the trace ('grape inspect' lists its paths)",
           (unsigned long long)o->paths[k]);
      goto done;
    }
  }
  char msg[512];
  if ((rc = grape__drv_open(o->driver, &e.d, msg, sizeof(msg))) != 0) {
    fail(&e, "%s", msg);
    goto done;
  }
  if (o->sim && (rc = sim_bodies(&e)) != 0)
    goto done;
  if ((rc = setup_device(&e, st)) != 0 || (rc = setup_functions(&e)) != 0)
    goto done;
  e.device = st->device;
  if (o->time && (e.d.cuEventCreate(&e.path_ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
                  e.d.cuEventCreate(&e.path_ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS)) {
    rc = fail(&e, "cannot create events");
    goto done;
  }
  void (*progress)(void*, size_t, size_t, int) = o->sz >= sizeof(*o) ? o->progress : NULL;
  size_t chosen_n = 0, done_n = 0;
  for (size_t i = 0; i < np; i++)
    chosen_n += e.want[i];
  for (size_t i = 0; i < np; i++) {
    if (!e.want[i])
      continue;
    const grape_trace_path_t* p = grape_trace_path(t, i);
    char fp[17], why[512] = "";
    grape__fp_hex(p->fp, fp);
    if (progress != NULL)
      progress(o->progress_arg, done_n, chosen_n, 1);
    int ran = run_path(&e, i, &st->kernels_launched, why, sizeof(why));
    if (progress != NULL)
      progress(o->progress_arg, done_n++, chosen_n, 0);
    if (ran != 0) {
      st->paths_failed++;
      say(&e, "grape: path %s: not replayed: %s\n", fp, why);
      continue;
    }
    st->paths_replayed++;
    if (p->times != NULL && o->time)
      say(&e, "grape: path %s x%llu: %u ops, %.6f ms as a graph\n", fp,
          (unsigned long long)p->count, p->nops, p->times->path_ms);
  }
done:
  teardown(&e);
  free(e.want);
  free(e.modules);
  free(e.funcs);
  free(e.bases);
  free(e.alloc_host);
  free(e.events);
  return rc;
}
