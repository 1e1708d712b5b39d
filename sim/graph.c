/* graph.c: CUDA graphs (build, instantiate, launch, update) and stream capture.
 *
 * DESIGN: a graph owns its nodes; a node owns a copy of its work (kernel
 * parameters are copied when the node is added, as CUDA does). Instantiation
 * copies the nodes in a topological order into the executable graph, which is
 * independent of the graph afterwards. A launch queues the executable's work
 * on the stream as one contiguous batch in that order: a valid serialisation
 * of the DAG, so results equal eager execution. Per-launch copies of the
 * parameters mean a later cuGraphExecKernelNodeSetParams never changes a launch
 * already queued, as documented.
 *
 * Capture: a capturing stream turns submitted work into nodes whose
 * dependencies are the stream's current capture frontier. Events recorded
 * during capture carry the frontier to other streams (fork/join). Capture
 * records are never freed (they are small), so an event that points to an
 * ended capture stays safe to inspect.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

CUresult grape__sim_submit_batch(struct CUstream_st* s, sim_work_t* works, sim_dep_t** deps,
                                 int* ndeps, int n);
void grape__sim_capture_thread_account(CUstreamCaptureMode mode, int delta);

/* ---- Graph and node objects ---- */

static struct CUgraph_st* graph_new(void) {
  return grape__sim_reg_new(sizeof(struct CUgraph_st), K_GRAPH);
}

/* Lock not required; event references are taken by the caller under the lock. */
static sim_node_t* node_new(struct CUgraph_st* g, int type, sim_node_t* const* deps, size_t ndeps) {
  for (size_t i = 0; i < ndeps; i++)
    if (deps[i] == NULL || !grape__sim_reg_has(deps[i], K_NODE) || deps[i]->g != g)
      return NULL;
  if (g->nnodes == g->cap) {
    uint32_t nc = g->cap ? g->cap * 2 : 16;
    sim_node_t** nn = realloc(g->nodes, nc * sizeof(*nn));
    if (nn == NULL)
      return NULL;
    g->nodes = nn;
    g->cap = nc;
  }
  sim_node_t* n = calloc(1, sizeof(*n));
  if (n == NULL)
    return NULL;
  if (ndeps > 0) {
    n->deps = malloc(ndeps * sizeof(*n->deps));
    if (n->deps == NULL) {
      free(n);
      return NULL;
    }
    memcpy(n->deps, deps, ndeps * sizeof(*n->deps));
  }
  n->ndeps = (int)ndeps;
  n->g = g;
  n->type = type;
  n->id = g->nnodes;
  if (grape__sim_reg_add(n, K_NODE) != 0) {
    free(n->deps);
    free(n);
    return NULL;
  }
  g->nodes[g->nnodes++] = n;
  return n;
}

/* Lock held (event references). */
static void graph_free_locked(struct CUgraph_st* g) {
  for (uint32_t i = 0; i < g->nnodes; i++) {
    sim_node_t* n = g->nodes[i];
    grape__sim_reg_del(n);
    grape__sim_work_release(&n->w);
    if (n->ev != NULL)
      grape__sim_event_unref_locked(n->ev);
    free(n->deps);
    free(n);
  }
  free(g->nodes);
  grape__sim_reg_del(g);
  free(g);
}

static CUresult check_graph(CUgraph g) {
  return grape__sim_reg_has(g, K_GRAPH) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuGraphCreate(CUgraph* out, unsigned int flags) {
  SIM_COUNT(cuGraphCreate);
  SIM_TRY(grape__sim_check_init());
  if (out == NULL || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *out = graph_new();
  return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph g) {
  SIM_COUNT(cuGraphDestroy);
  if (check_graph(g) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;   /* cuGraphDestroy documents INVALID_VALUE */
  pthread_mutex_lock(&grape__sim.lock);
  graph_free_locked(g);
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

static CUresult add_node(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t ndeps,
                         int type, sim_work_t* w, CUevent ev) {
  if (out == NULL || (ndeps > 0 && deps == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  if (check_graph(g) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  if (ev != NULL && !grape__sim_reg_has(ev, K_EVENT))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&grape__sim.lock);
  sim_node_t* n = node_new(g, type, (sim_node_t* const*)deps, ndeps);
  if (n != NULL) {
    if (w != NULL) {
      n->w = *w;
      memset(w, 0, sizeof(*w));
    }
    if (ev != NULL) {
      n->ev = ev;
      ev->refs++;
    }
  }
  pthread_mutex_unlock(&grape__sim.lock);
  if (n == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *out = (CUgraphNode)n;
  return CUDA_SUCCESS;
}

static CUresult kernel_work_from(const CUDA_KERNEL_NODE_PARAMS* p, sim_work_t* w) {
  if (p == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  CUfunction fh = p->func != NULL ? p->func : (CUfunction)p->kern;
  if (!grape__sim_reg_has(fh, K_FUNC))
    return CUDA_ERROR_INVALID_VALUE;
  unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
  unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  return grape__sim_make_kernel_work((struct CUfunc_st*)fh, grid, block, p->sharedMemBytes,
                                     p->kernelParams, p->extra, w);
}

SIM_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                                            size_t ndeps, const CUDA_KERNEL_NODE_PARAMS* p) {
  SIM_COUNT(cuGraphAddKernelNode_v2);
  sim_work_t w;
  CUresult r = kernel_work_from(p, &w);
  if (r != CUDA_SUCCESS)
    return r;
  r = add_node(out, g, deps, ndeps, N_KERNEL, &w, NULL);
  if (r != CUDA_SUCCESS)
    grape__sim_work_release(&w);
  return r;
}

static CUresult memset_work_from(const CUDA_MEMSET_NODE_PARAMS* p, sim_work_t* out);
static CUresult memcpy_work_from(const CUDA_MEMCPY3D* p, sim_work_t* out);

SIM_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                                         size_t ndeps, const CUDA_MEMSET_NODE_PARAMS* p,
                                         CUcontext ctx) {
  SIM_COUNT(cuGraphAddMemsetNode);
  (void)ctx;
  sim_work_t w;
  SIM_TRY(memset_work_from(p, &w));
  return add_node(out, g, deps, ndeps, N_MEMSET, &w, NULL);
}

static CUresult memset_work_from(const CUDA_MEMSET_NODE_PARAMS* p, sim_work_t* out) {
  if (p == NULL || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) ||
      p->width == 0 || p->height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t pitch = p->height > 1 ? p->pitch : p->width * p->elementSize;
  if (!grape__sim_dev_range(p->dst, pitch * (p->height - 1) + p->width * p->elementSize))
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w = {.kind = OP_MEMSET};
  w.u.ms.dst = (void*)(uintptr_t)p->dst;
  w.u.ms.value = p->value;
  w.u.ms.esize = p->elementSize;
  w.u.ms.n = p->width;
  w.u.ms.height = p->height;
  w.u.ms.pitch = pitch;
  *out = w;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                                         size_t ndeps, const CUDA_MEMCPY3D* p, CUcontext ctx) {
  SIM_COUNT(cuGraphAddMemcpyNode);
  (void)ctx;
  sim_work_t w;
  SIM_TRY(memcpy_work_from(p, &w));
  return add_node(out, g, deps, ndeps, N_MEMCPY, &w, NULL);
}

static CUresult memcpy_work_from(const CUDA_MEMCPY3D* p, sim_work_t* out) {
  return grape__sim_copy3d_work(p, out);   /* 1-D, 2-D and 3-D (copy3d.c) */
}

SIM_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                                        size_t ndeps) {
  SIM_COUNT(cuGraphAddEmptyNode);
  return add_node(out, g, deps, ndeps, N_EMPTY, NULL, NULL);
}

SIM_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                                       size_t ndeps, const CUDA_HOST_NODE_PARAMS* p) {
  SIM_COUNT(cuGraphAddHostNode);
  if (p == NULL || p->fn == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w = {.kind = OP_HOSTFN};
  w.u.host.fn = p->fn;
  w.u.host.data = p->userData;
  w.u.host.blocks = 1;
  return add_node(out, g, deps, ndeps, N_HOST, &w, NULL);
}

SIM_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                                              size_t ndeps, CUevent e) {
  SIM_COUNT(cuGraphAddEventRecordNode);
  if (e == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return add_node(out, g, deps, ndeps, N_EVENT_RECORD, NULL, e);
}

SIM_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                                            size_t ndeps, CUevent e) {
  SIM_COUNT(cuGraphAddEventWaitNode);
  if (e == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return add_node(out, g, deps, ndeps, N_WAIT_EVENT, NULL, e);
}

SIM_EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode* nodes, size_t* n) {
  SIM_COUNT(cuGraphGetNodes);
  if (n == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (check_graph(g) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&grape__sim.lock);
  if (nodes == NULL) {
    *n = g->nnodes;
  } else {
    size_t k = *n < g->nnodes ? *n : g->nnodes;
    for (size_t i = 0; i < k; i++)
      nodes[i] = (CUgraphNode)g->nodes[i];
    *n = k;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

static sim_node_t* as_node(const void* h) {
  return grape__sim_reg_has(h, K_NODE) ? (sim_node_t*)h : NULL;
}

SIM_EXPORT CUresult cuGraphNodeGetType(CUgraphNode h, CUgraphNodeType* t) {
  SIM_COUNT(cuGraphNodeGetType);
  sim_node_t* n = as_node(h);
  if (n == NULL || t == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *t = (CUgraphNodeType)n->type;
  return CUDA_SUCCESS;
}

/* kernelParams handed out point into the node's own parameter copy, valid
 * until the node's parameters change or the graph is destroyed. */
static _Thread_local void* tls_argv[64];

SIM_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS* p) {
  SIM_COUNT(cuGraphKernelNodeGetParams_v2);
  sim_node_t* n = as_node(h);
  if (n == NULL || p == NULL || n->type != N_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUfunc_st* f = n->w.u.k.f;
  memset(p, 0, sizeof(*p));
  p->func = (CUfunction)f;
  p->gridDimX = n->w.u.k.grid[0];
  p->gridDimY = n->w.u.k.grid[1];
  p->gridDimZ = n->w.u.k.grid[2];
  p->blockDimX = n->w.u.k.block[0];
  p->blockDimY = n->w.u.k.block[1];
  p->blockDimZ = n->w.u.k.block[2];
  p->sharedMemBytes = n->w.u.k.smem;
  uint32_t np = f->nparams < 64 ? f->nparams : 64;
  for (uint32_t i = 0; i < np; i++)
    tls_argv[i] = n->w.u.k.params + f->poff[i];
  p->kernelParams = tls_argv;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS* p) {
  SIM_COUNT(cuGraphKernelNodeSetParams_v2);
  sim_node_t* n = as_node(h);
  if (n == NULL || n->type != N_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w;
  SIM_TRY(kernel_work_from(p, &w));
  pthread_mutex_lock(&grape__sim.lock);
  grape__sim_work_release(&n->w);
  n->w = w;
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

/* ---- Executable graphs ---- */

static void exec_free_locked(struct CUgraphExec_st* x) {
  for (uint32_t i = 0; i < x->n; i++) {
    grape__sim_work_release(&x->work[i]);
    if (x->evs[i] != NULL)
      grape__sim_event_unref_locked(x->evs[i]);
  }
  free(x->types);
  free(x->work);
  free(x->evs);
  free(x->pos_of_id);
  free(x);
}

/* Kahn's algorithm, lowest id first, so the order is deterministic.
 * Lock held. Returns 0 and order[] (node ids), or -EINVAL for a cycle. */
static int topo_order(struct CUgraph_st* g, uint32_t* order) {
  uint32_t n = g->nnodes;
  uint32_t* indeg = calloc(n ? n : 1, sizeof(uint32_t));
  char* done = calloc(n ? n : 1, 1);
  int err = 0;
  if (indeg == NULL || done == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (uint32_t i = 0; i < n; i++)
    indeg[i] = (uint32_t)g->nodes[i]->ndeps;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t pick = n;
    for (uint32_t i = 0; i < n; i++)
      if (!done[i] && indeg[i] == 0) {
        pick = i;
        break;
      }
    if (pick == n) {
      err = -EINVAL;
      goto out;
    }
    done[pick] = 1;
    order[k] = pick;
    for (uint32_t i = 0; i < n; i++)
      for (int d = 0; d < g->nodes[i]->ndeps; d++)
        if (g->nodes[i]->deps[d] == g->nodes[pick])
          indeg[i]--;
  }
out:
  free(indeg);
  free(done);
  return err;
}

SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph g, unsigned long long flags) {
  SIM_COUNT(cuGraphInstantiateWithFlags);
  SIM_TRY(grape__sim_sticky());
  if (out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (check_graph(g) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                    CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                    CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphExec_st* x = calloc(1, sizeof(*x));
  if (x == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  uint32_t n = g->nnodes;
  grape__sim_host_charge(grape__sim_costs[COST_INSTANTIATE_NODE] * n);
  x->n = n;
  x->nids = n;
  x->src = g;
  x->flags = flags;
  x->types = calloc(n ? n : 1, sizeof(int));
  x->work = calloc(n ? n : 1, sizeof(sim_work_t));
  x->evs = calloc(n ? n : 1, sizeof(*x->evs));
  x->pos_of_id = calloc(n ? n : 1, sizeof(uint32_t));
  uint32_t* order = calloc(n ? n : 1, sizeof(uint32_t));
  if (x->types == NULL || x->work == NULL || x->evs == NULL || x->pos_of_id == NULL ||
      order == NULL) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto fail;
  }
  int err = topo_order(g, order);
  if (err) {
    r = err == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
    goto fail;
  }
  for (uint32_t k = 0; k < n; k++) {
    sim_node_t* nd = g->nodes[order[k]];
    x->types[k] = nd->type;
    x->pos_of_id[nd->id] = k;
    if (grape__sim_work_copy(&x->work[k], &nd->w) != 0) {
      x->n = k;
      r = CUDA_ERROR_OUT_OF_MEMORY;
      goto fail;
    }
    if (nd->ev != NULL) {
      x->evs[k] = nd->ev;
      nd->ev->refs++;
    }
  }
  if (grape__sim_reg_add(x, K_EXEC) != 0) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto fail;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  free(order);
  *out = x;
  return CUDA_SUCCESS;
fail:
  exec_free_locked(x);
  pthread_mutex_unlock(&grape__sim.lock);
  free(order);
  return r;
}

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec x) {
  SIM_COUNT(cuGraphExecDestroy);
  if (!grape__sim_reg_has(x, K_EXEC))
    return CUDA_ERROR_INVALID_VALUE;
  grape__sim_reg_del(x);
  pthread_mutex_lock(&grape__sim.lock);
  exec_free_locked(x);
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec x, CUstream h, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (!grape__sim_reg_has(x, K_EXEC))
    return CUDA_ERROR_INVALID_HANDLE;
  uint32_t n = x->n;
  grape__sim_host_charge(grape__sim_costs[COST_GRAPH_LAUNCH_NODE] * n);
  sim_work_t* works = calloc(n ? n : 1, sizeof(*works));
  sim_dep_t** deps = calloc(n ? n : 1, sizeof(*deps));
  sim_dep_t* depv = calloc(n ? n : 1, sizeof(*depv));
  int* ndeps = calloc(n ? n : 1, sizeof(int));
  if (works == NULL || deps == NULL || depv == NULL || ndeps == NULL) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto out;
  }
  int nw = 0;
  pthread_mutex_lock(&grape__sim.lock);
  int capturing = s->cap != NULL;
  for (uint32_t k = 0; k < n; k++) {
    switch (x->types[k]) {
    case N_KERNEL:
    case N_MEMCPY:
    case N_MEMSET:
    case N_HOST:
      if (grape__sim_work_copy(&works[nw], &x->work[k]) != 0) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        break;
      }
      if (works[nw].kind == OP_KERNEL && !capturing)
        works[nw].u.k.from_graph = 1;
      nw++;
      break;
    case N_EVENT_RECORD:
      works[nw].kind = OP_EVENT;
      works[nw].u.ev.ev = x->evs[k];
      x->evs[k]->refs++;   /* the work's reference, dropped on release */
      nw++;
      break;
    case N_WAIT_EVENT:
      if (grape__sim_dep_on_event_locked(x->evs[k], &depv[nw])) {
        works[nw].kind = OP_NOP;
        deps[nw] = &depv[nw];
        ndeps[nw] = 1;
        nw++;
      }
      break;
    default:
      break;
    }
  }
  pthread_mutex_unlock(&grape__sim.lock);
  if (r != CUDA_SUCCESS) {
    pthread_mutex_lock(&grape__sim.lock);
    for (int i = 0; i < nw; i++) {
      grape__sim_work_release(&works[i]);
      grape__sim_deps_drop_locked(deps[i], ndeps[i]);
    }
    pthread_mutex_unlock(&grape__sim.lock);
    goto out;
  }
  /* Event works carry one extra reference each; submit_batch takes its own. */
  r = grape__sim_submit_batch(s, works, deps, ndeps, nw);
  pthread_mutex_lock(&grape__sim.lock);
  for (uint32_t k = 0, i = 0; k < n; k++)
    if (x->types[k] == N_EVENT_RECORD) {
      (void)i;
      grape__sim_event_unref_locked(x->evs[k]);
    }
  pthread_mutex_unlock(&grape__sim.lock);
  if (r == CUDA_SUCCESS && !capturing)
    atomic_fetch_add(&grape__sim.graph_launches, 1);
out:
  free(works);
  free(deps);
  free(depv);
  free(ndeps);
  return r;
}

SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream s) {
  SIM_COUNT(cuGraphLaunch);
  return graph_launch(x, s, 0);
}
SIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s) {
  SIM_COUNT(cuGraphLaunch_ptsz);
  return graph_launch(x, s, 1);
}

static CUresult graph_upload(CUgraphExec x, CUstream h, int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  return grape__sim_reg_has(x, K_EXEC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuGraphUpload(CUgraphExec x, CUstream s) {
  SIM_COUNT(cuGraphUpload);
  return graph_upload(x, s, 0);
}
SIM_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec x, CUstream s) {
  SIM_COUNT(cuGraphUpload_ptsz);
  return graph_upload(x, s, 1);
}

/* Node h of the graph x was instantiated from, where it has the given type. */
static sim_node_t* exec_node(CUgraphExec x, CUgraphNode h, int type) {
  if (!grape__sim_reg_has(x, K_EXEC))
    return NULL;
  sim_node_t* n = as_node(h);
  if (n == NULL || n->g != x->src || n->id >= x->nids || n->type != type)
    return NULL;
  return n;
}

SIM_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode h,
                                                      const CUDA_KERNEL_NODE_PARAMS* p) {
  SIM_COUNT(cuGraphExecKernelNodeSetParams_v2);
  sim_node_t* n = exec_node(x, h, N_KERNEL);
  if (n == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w;
  CUresult r = kernel_work_from(p, &w);
  if (r != CUDA_SUCCESS)
    return r;
  pthread_mutex_lock(&grape__sim.lock);
  sim_work_t* cur = &x->work[x->pos_of_id[n->id]];
  if (cur->u.k.f != w.u.k.f) {
    r = CUDA_ERROR_INVALID_VALUE;   /* the function of an instantiated node may not change */
    grape__sim_work_release(&w);
  } else {
    grape__sim_work_release(cur);
    *cur = w;
    atomic_fetch_add(&grape__sim.exec_node_param_updates, 1);
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

/* Replaces the work at node h's position in x, keeping its type. */
static CUresult exec_set_work(CUgraphExec x, CUgraphNode h, int type, sim_work_t* w) {
  sim_node_t* n = exec_node(x, h, type);
  if (n == NULL) {
    grape__sim_work_release(w);
    return CUDA_ERROR_INVALID_VALUE;
  }
  pthread_mutex_lock(&grape__sim.lock);
  sim_work_t* cur = &x->work[x->pos_of_id[n->id]];
  grape__sim_work_release(cur);
  *cur = *w;
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec x, CUgraphNode h,
                                                   const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx) {
  SIM_COUNT(cuGraphExecMemsetNodeSetParams);
  (void)ctx;
  sim_work_t w;
  CUresult r = memset_work_from(p, &w);
  return r != CUDA_SUCCESS ? r : exec_set_work(x, h, N_MEMSET, &w);
}

SIM_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec x, CUgraphNode h,
                                                   const CUDA_MEMCPY3D* p, CUcontext ctx) {
  SIM_COUNT(cuGraphExecMemcpyNodeSetParams);
  (void)ctx;
  sim_work_t w;
  CUresult r = memcpy_work_from(p, &w);
  return r != CUDA_SUCCESS ? r : exec_set_work(x, h, N_MEMCPY, &w);
}

/* Kernel node attributes (cluster dimensions, priority, ...) are accepted and
 * remembered for reading back; they do not change how the sim runs a kernel. */
SIM_EXPORT CUresult cuGraphKernelNodeSetAttribute(CUgraphNode h, CUkernelNodeAttrID attr,
                                                  const CUkernelNodeAttrValue* v) {
  SIM_COUNT(cuGraphKernelNodeSetAttribute);
  sim_node_t* n = as_node(h);
  if (n == NULL || n->type != N_KERNEL || v == NULL || (unsigned)attr >= 32)
    return CUDA_ERROR_INVALID_VALUE;
  if (attr == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
    unsigned c = v->clusterDim.x * v->clusterDim.y * v->clusterDim.z;
    if (c == 0 || c > 16 || n->w.u.k.grid[0] % v->clusterDim.x != 0)
      return CUDA_ERROR_INVALID_VALUE;
  }
  pthread_mutex_lock(&grape__sim.lock);
  n->attrs[attr] = *v;
  n->attr_set |= 1u << attr;
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphKernelNodeGetAttribute(CUgraphNode h, CUkernelNodeAttrID attr,
                                                  CUkernelNodeAttrValue* v) {
  SIM_COUNT(cuGraphKernelNodeGetAttribute);
  sim_node_t* n = as_node(h);
  if (n == NULL || n->type != N_KERNEL || v == NULL || (unsigned)attr >= 32)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&grape__sim.lock);
  if (n->attr_set & (1u << attr))
    *v = n->attrs[attr];
  else
    memset(v, 0, sizeof(*v));
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo* info) {
  SIM_COUNT(cuGraphExecUpdate_v2);
  if (!grape__sim_reg_has(x, K_EXEC) || check_graph(g) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  CUgraphNode bad = NULL;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  uint32_t n = g->nnodes;
  grape__sim_host_charge(grape__sim_costs[COST_GRAPH_EXEC_UPDATE_NODE] * n);
  uint32_t* order = calloc(n ? n : 1, sizeof(uint32_t));
  uint32_t* pos = calloc(n ? n : 1, sizeof(uint32_t));
  if (order == NULL || pos == NULL) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto out;
  }
  if (n != x->n || topo_order(g, order) != 0) {
    res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    goto out;
  }
  for (uint32_t k = 0; k < n; k++)
    pos[order[k]] = k;
  /* Same topology: each position has the same dependency count as before.
   * (The executable keeps no edges, so fan-in is what is compared.) */
  for (uint32_t k = 0; k < n && res == CU_GRAPH_EXEC_UPDATE_SUCCESS; k++) {
    sim_node_t* nd = g->nodes[order[k]];
    if (nd->type != x->types[k]) {
      res = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
      bad = (CUgraphNode)nd;
    } else if (nd->type == N_KERNEL && nd->w.u.k.f != x->work[k].u.k.f) {
      res = CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED;
      bad = (CUgraphNode)nd;
    } else if ((nd->type == N_EVENT_RECORD || nd->type == N_WAIT_EVENT) && nd->ev != x->evs[k]) {
      res = CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      bad = (CUgraphNode)nd;
    }
  }
  if (res != CU_GRAPH_EXEC_UPDATE_SUCCESS)
    goto out;
  for (uint32_t k = 0; k < n; k++) {
    sim_node_t* nd = g->nodes[order[k]];
    sim_work_t w;
    if (grape__sim_work_copy(&w, &nd->w) != 0) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
      goto out;
    }
    if (nd->type == N_KERNEL &&
        (w.u.k.params_size != x->work[k].u.k.params_size ||
         memcmp(w.u.k.params, x->work[k].u.k.params, w.u.k.params_size) != 0 ||
         memcmp(w.u.k.grid, x->work[k].u.k.grid, sizeof(w.u.k.grid)) != 0 ||
         memcmp(w.u.k.block, x->work[k].u.k.block, sizeof(w.u.k.block)) != 0 ||
         w.u.k.smem != x->work[k].u.k.smem))
      atomic_fetch_add(&grape__sim.exec_node_param_updates, 1);
    grape__sim_work_release(&x->work[k]);
    x->work[k] = w;
  }
  /* The executable's nodes now correspond to g's. */
  free(x->pos_of_id);
  x->pos_of_id = pos;
  pos = NULL;
  x->nids = n;
  x->src = g;
out:
  pthread_mutex_unlock(&grape__sim.lock);
  free(order);
  free(pos);
  if (info != NULL) {
    info->result = res;
    info->errorNode = bad;
    info->errorFromNode = NULL;
  }
  if (r != CUDA_SUCCESS)
    return r;
  return res == CU_GRAPH_EXEC_UPDATE_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

/* ---- Stream capture ---- */

/* Lock held. Takes ownership of *w (when w is not NULL). */
CUresult grape__sim_capture_add(struct CUstream_st* s, sim_work_t* w, int type,
                                struct CUevent_st* ev) {
  sim_capture_t* c = s->cap;
  if (c->invalidated)
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  sim_node_t* n = node_new(c->g, type, s->cap_deps, (size_t)s->ncap_deps);
  if (n == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (w != NULL) {
    n->w = *w;
    memset(w, 0, sizeof(*w));
  }
  if (ev != NULL) {
    n->ev = ev;
    ev->refs++;
  }
  sim_node_t** nd = realloc(s->cap_deps, sizeof(*nd));
  if (nd == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  s->cap_deps = nd;
  s->cap_deps[0] = n;
  s->ncap_deps = 1;
  return CUDA_SUCCESS;
}

/* Lock held: an event recorded in a capturing stream marks the capture frontier. */
CUresult grape__sim_capture_record_event(struct CUstream_st* s, struct CUevent_st* e) {
  sim_node_t** nodes = NULL;
  if (s->ncap_deps > 0) {
    nodes = malloc((size_t)s->ncap_deps * sizeof(*nodes));
    if (nodes == NULL)
      return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(nodes, s->cap_deps, (size_t)s->ncap_deps * sizeof(*nodes));
  }
  free(e->cap_nodes);
  e->cap_nodes = nodes;
  e->ncap_nodes = s->ncap_deps;
  e->cap = s->cap;
  e->s = NULL;
  return CUDA_SUCCESS;
}

/* Lock held. */
CUresult grape__sim_capture_wait_event(struct CUstream_st* s, struct CUevent_st* e) {
  int ecap = grape__sim_cap_live(e->cap) && !e->cap->invalidated ? 1 : 0;
  if (!ecap) {
    if (s->cap != NULL) {
      if (e->s == NULL || e->s->completed >= e->seq)
        return CUDA_SUCCESS;   /* nothing pending: no dependency to capture */
      s->cap->invalidated = 1;
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  if (s->cap != NULL && s->cap != e->cap)
    return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  int total = (s->cap != NULL ? s->ncap_deps : 0) + e->ncap_nodes;
  sim_node_t** nd = malloc((size_t)(total ? total : 1) * sizeof(*nd));
  if (nd == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  int k = 0;
  if (s->cap != NULL)
    for (int i = 0; i < s->ncap_deps; i++)
      nd[k++] = s->cap_deps[i];
  for (int i = 0; i < e->ncap_nodes; i++) {
    int dup = 0;
    for (int j = 0; j < k; j++)
      dup |= nd[j] == e->cap_nodes[i];
    if (!dup)
      nd[k++] = e->cap_nodes[i];
  }
  if (s->cap == NULL) {
    s->cap = e->cap;
    e->cap->nstreams++;
  }
  free(s->cap_deps);
  s->cap_deps = nd;
  s->ncap_deps = k;
  return CUDA_SUCCESS;
}

void grape__sim_capture_invalidate(struct CUstream_st* s) {
  if (s->cap != NULL)
    s->cap->invalidated = 1;
}

/* Begins a capture into a new graph, or (cuStreamBeginCaptureToGraph) into
 * the caller's graph g after its nodes deps, which stays the caller's. */
static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, int ptds, CUgraph g,
                              const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t ndeps) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (s->legacy)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  sim_node_t** first = NULL;
  if (g != NULL) {
    if (check_graph(g) != CUDA_SUCCESS || (ndeps > 0 && deps == NULL))
      return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < ndeps; i++) {
      if (!grape__sim_reg_has(deps[i], K_NODE) || ((sim_node_t*)deps[i])->g != g)
        return CUDA_ERROR_INVALID_VALUE;
      /* Edge data other than the default (full dependency, port 0) is not simulated. */
      if (edges != NULL && (edges[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT ||
                            edges[i].from_port != 0 || edges[i].to_port != 0))
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (ndeps > 0 && (first = malloc(ndeps * sizeof(*first))) == NULL)
      return CUDA_ERROR_OUT_OF_MEMORY;
    if (ndeps > 0)
      memcpy(first, deps, ndeps * sizeof(*first));
  }
  sim_capture_t* c = calloc(1, sizeof(*c));
  if (c == NULL) {
    free(first);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  c->to_graph = g != NULL;
  c->g = g != NULL ? g : graph_new();
  if (c->g == NULL) {
    free(first);
    free(c);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&grape__sim.lock);
  if (s->cap != NULL) {
    if (!c->to_graph)
      graph_free_locked(c->g);
    pthread_mutex_unlock(&grape__sim.lock);
    free(first);
    free(c);
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  c->mode = mode;
  c->origin = s;
  c->thread = pthread_self();
  c->id = ++grape__sim.next_capture_id;
  c->nstreams = 1;
  c->next = grape__sim.captures;
  grape__sim.captures = c;
  s->cap = c;
  free(s->cap_deps);
  s->cap_deps = first;
  s->ncap_deps = (int)(first != NULL ? ndeps : 0);
  grape__sim.active_captures++;
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
    grape__sim.active_global_captures++;
  pthread_mutex_unlock(&grape__sim.lock);
  grape__sim_capture_thread_account(mode, 1);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  SIM_COUNT(cuStreamBeginCapture_v2);
  return begin_capture(s, mode, 0, NULL, NULL, NULL, 0);
}
SIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
  SIM_COUNT(cuStreamBeginCapture_v2_ptsz);
  return begin_capture(s, mode, 1, NULL, NULL, NULL, 0);
}
SIM_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode* deps,
                                                const CUgraphEdgeData* edges, size_t ndeps,
                                                CUstreamCaptureMode mode) {
  SIM_COUNT(cuStreamBeginCaptureToGraph);
  if (g == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(s, mode, 0, g, deps, edges, ndeps);
}
SIM_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g,
                                                     const CUgraphNode* deps,
                                                     const CUgraphEdgeData* edges, size_t ndeps,
                                                     CUstreamCaptureMode mode) {
  SIM_COUNT(cuStreamBeginCaptureToGraph_ptsz);
  if (g == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(s, mode, 1, g, deps, edges, ndeps);
}

/* Lock held: is every node of `want` an ancestor-or-self of the frontier? */
static int joined(sim_node_t** frontier, int nf, sim_node_t** want, int nw, struct CUgraph_st* g) {
  if (nw == 0)
    return 1;
  char* seen = calloc(g->nnodes ? g->nnodes : 1, 1);
  sim_node_t** stack = malloc((g->nnodes ? g->nnodes : 1) * sizeof(*stack));
  int ok = 1;
  if (seen == NULL || stack == NULL) {
    ok = 1;   /* cannot check without memory: do not fail the capture */
    goto out;
  }
  int sp = 0;
  for (int i = 0; i < nf; i++)
    if (!seen[frontier[i]->id]) {
      seen[frontier[i]->id] = 1;
      stack[sp++] = frontier[i];
    }
  while (sp > 0) {
    sim_node_t* n = stack[--sp];
    for (int d = 0; d < n->ndeps; d++)
      if (!seen[n->deps[d]->id]) {
        seen[n->deps[d]->id] = 1;
        stack[sp++] = n->deps[d];
      }
  }
  for (int i = 0; i < nw; i++)
    if (!seen[want[i]->id])
      ok = 0;
out:
  free(seen);
  free(stack);
  return ok;
}

static CUresult end_capture(CUstream h, CUgraph* out, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&grape__sim.lock);
  sim_capture_t* c = s->cap;
  if (c == NULL) {
    pthread_mutex_unlock(&grape__sim.lock);
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  if (c->origin != s) {
    c->invalidated = 1;
    pthread_mutex_unlock(&grape__sim.lock);
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self())) {
    pthread_mutex_unlock(&grape__sim.lock);
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  int unjoined = 0;
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next) {
    if (t == s || t->cap != c)
      continue;
    if (!joined(s->cap_deps, s->ncap_deps, t->cap_deps, t->ncap_deps, c->g))
      unjoined = 1;
    t->cap = NULL;
    free(t->cap_deps);
    t->cap_deps = NULL;
    t->ncap_deps = 0;
  }
  s->cap = NULL;
  free(s->cap_deps);
  s->cap_deps = NULL;
  s->ncap_deps = 0;
  grape__sim.active_captures--;
  if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
    grape__sim.active_global_captures--;
  struct CUgraph_st* g = c->g;
  c->g = NULL;   /* the capture record stays, ended */
  if (c->invalidated || unjoined) {
    if (!c->to_graph)
      graph_free_locked(g);   /* a graph given to cuStreamBeginCaptureToGraph stays the caller's */
    *out = NULL;
    r = unjoined && !c->invalidated ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                                    : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    *out = g;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  grape__sim_capture_thread_account(c->mode, -1);
  return r;
}

SIM_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph* g) {
  SIM_COUNT(cuStreamEndCapture);
  return end_capture(s, g, 0);
}
SIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph* g) {
  SIM_COUNT(cuStreamEndCapture_ptsz);
  return end_capture(s, g, 1);
}

static CUresult capture_status(CUstream h, int ptds, CUstreamCaptureStatus* st, sim_capture_t** cp) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  pthread_mutex_lock(&grape__sim.lock);
  if (s->legacy) {
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
      if (!(t->flags & CU_STREAM_NON_BLOCKING) && t->cap != NULL)
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  sim_capture_t* c = s->cap;
  *st = c == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
                  : (c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                    : CU_STREAM_CAPTURE_STATUS_ACTIVE);
  if (cp != NULL)
    *cp = c;
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

SIM_EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  SIM_COUNT(cuStreamIsCapturing);
  if (st == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return capture_status(s, 0, st, NULL);
}
SIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus* st) {
  SIM_COUNT(cuStreamIsCapturing_ptsz);
  if (st == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return capture_status(s, 1, st, NULL);
}

static CUresult capture_info(CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g,
                             const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* n,
                             int ptds) {
  if (st == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_capture_t* c = NULL;
  SIM_TRY(capture_status(h, ptds, st, &c));
  struct CUstream_st* s;
  (void)grape__sim_stream(h, ptds, &s);
  pthread_mutex_lock(&grape__sim.lock);
  if (id != NULL)
    *id = c != NULL ? c->id : 0;
  if (g != NULL)
    *g = c != NULL ? c->g : NULL;
  if (deps != NULL)
    *deps = c != NULL ? (const CUgraphNode*)s->cap_deps : NULL;
  if (edges != NULL)
    *edges = NULL;
  if (n != NULL)
    *n = c != NULL ? (size_t)s->ncap_deps : 0;
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id,
                                              CUgraph* g, const CUgraphNode** deps,
                                              const CUgraphEdgeData** edges, size_t* n) {
  SIM_COUNT(cuStreamGetCaptureInfo_v3);
  return capture_info(s, st, id, g, deps, edges, n, 0);
}
SIM_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus* st,
                                                   cuuint64_t* id, CUgraph* g,
                                                   const CUgraphNode** deps,
                                                   const CUgraphEdgeData** edges, size_t* n) {
  SIM_COUNT(cuStreamGetCaptureInfo_v3_ptsz);
  return capture_info(s, st, id, g, deps, edges, n, 1);
}
