/* graph.c: CUDA graphs: build, instantiate, launch, update.
 *
 * DESIGN: a graph owns its nodes; a node owns a copy of its work (kernel
 * parameters are copied when the node is added, as CUDA does). Instantiation
 * copies the nodes in a topological order into the executable graph, which is
 * independent of the graph afterwards, with the edges (each position's
 * predecessors). A launch queues the executable's work on the stream as one
 * contiguous batch in a topological order (its own, or the reversed or
 * shuffled one SIMCU_GRAPH_ORDER asks for, device.c): a valid serialisation
 * of the DAG, so results equal eager execution unless the graph lacks an
 * edge its program needs. The device model times the nodes by the edges, so
 * unordered nodes run concurrently in simulated time. Per-launch copies of the
 * parameters mean a later cuGraphExecKernelNodeSetParams never changes a launch
 * already queued, as documented. Stream capture (capture.c) builds its graphs
 * with the same node constructor. An executable exists from the end of its
 * instantiation on the instantiating thread's host clock (ready_ns): a thread
 * that launches or updates it earlier in simulated time begins that call
 * then (cost.c), since it could not have had the handle before.
 */
#include "internal.h"
#include "cost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Graph and node objects ---- */

struct CUgraph_st* grape__sim_graph_new(void) {
  return grape__sim_reg_new(sizeof(struct CUgraph_st), K_GRAPH);
}

sim_node_t* grape__sim_node_add_locked(struct CUgraph_st* g, int type, sim_node_t* const* deps,
                                       size_t ndeps, sim_work_t* w, struct CUevent_st* ev) {
  for (size_t i = 0; i < ndeps; i++)
    if (deps[i] == NULL || !grape__sim_reg_has(deps[i], K_NODE) || deps[i]->g != g)
      return NULL;
  if (g->nnodes == g->cap) {
    sim_node_t** nn = grape__grow(g->nodes, &g->cap, (size_t)g->nnodes + 1, sizeof(*nn), 16);
    if (nn == NULL)
      return NULL;
    g->nodes = nn;
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
  if (w != NULL) {
    n->w = *w;
    memset(w, 0, sizeof(*w));
  }
  if (ev != NULL) {
    n->ev = ev;
    ev->refs++;
  }
  return n;
}

void grape__sim_graph_free_locked(struct CUgraph_st* g) {
  for (size_t i = 0; i < g->nnodes; i++) {
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
  /* Slower in real time only, as an instantiation can be: a thread that
   * builds graphs falls behind before it adds their nodes. */
  if (grape__sim.slow_graph_create_us > 0)
    usleep((useconds_t)grape__sim.slow_graph_create_us);
  *out = grape__sim_graph_new();
  return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph g) {
  SIM_COUNT(cuGraphDestroy);
  if (check_graph(g) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;   /* cuGraphDestroy documents INVALID_VALUE */
  pthread_mutex_lock(&grape__sim.lock);
  grape__sim_graph_free_locked(g);
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
  sim_node_t* n = grape__sim_node_add_locked(g, type, (sim_node_t* const*)deps, ndeps, w, ev);
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
  return grape__sim_memset_work(p->dst, p->value, p->elementSize, p->width, p->height, pitch,
                                out);
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
  return grape__sim_copy3d_work(p, out);   /* 1-D, 2-D and 3-D (copy.c) */
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
  if (n == NULL || p == NULL || n->type != N_KERNEL || !grape__sim_work_func_live(&n->w))
    return CUDA_ERROR_INVALID_VALUE;   /* an unloaded function has no parameter layout */
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
  free(x->pred_off);
  free(x->preds);
  free(x);
}

/* The edges of g with nodes at positions pos[id]: position p's predecessors
 * are preds[off[p] .. off[p+1]), ascending. Lock held; -ENOMEM. */
static int edges_of(struct CUgraph_st* g, const uint32_t* pos, uint32_t** off_out,
                    uint32_t** preds_out) {
  uint32_t n = g->nnodes, total = 0;
  for (uint32_t i = 0; i < n; i++)
    total += (uint32_t)g->nodes[i]->ndeps;
  uint32_t* off = calloc((size_t)n + 1, sizeof(uint32_t));
  uint32_t* preds = calloc(total ? total : 1, sizeof(uint32_t));
  if (off == NULL || preds == NULL) {
    free(off);
    free(preds);
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < n; i++)
    off[pos[i] + 1] = (uint32_t)g->nodes[i]->ndeps;
  for (uint32_t p = 0; p < n; p++)
    off[p + 1] += off[p];
  for (uint32_t i = 0; i < n; i++) {
    sim_node_t* nd = g->nodes[i];
    uint32_t* dst = preds + off[pos[i]];
    for (int d = 0; d < nd->ndeps; d++) {
      uint32_t v = pos[nd->deps[d]->id], k = (uint32_t)d;
      while (k > 0 && dst[k - 1] > v) {   /* insertion sort: fan-in is small */
        dst[k] = dst[k - 1];
        k--;
      }
      dst[k] = v;
    }
  }
  *off_out = off;
  *preds_out = preds;
  return 0;
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
  /* Slower in real time only (simulated time is unchanged): a thread that
   * instantiates falls behind the others, as a busy machine makes it. */
  if (grape__sim.slow_instantiate_us > 0)
    usleep((useconds_t)grape__sim.slow_instantiate_us);
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
    if (!grape__sim_work_func_live(&nd->w)) {
      x->n = k;
      r = CUDA_ERROR_INVALID_VALUE;   /* a kernel node whose function was unloaded */
      goto fail;
    }
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
  x->ready_ns = grape__sim_host_now();
  grape__sim_lock_held(grape__sim_host_call_start(), x->ready_ns);
  if (edges_of(g, x->pos_of_id, &x->pred_off, &x->preds) != 0) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto fail;
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

/* Lock held. Whether every kernel node of x names a function still loaded:
 * a launch of an executable whose node names an unloaded function (or a
 * later load's function under the same handle value) queues nothing and
 * returns CUDA_ERROR_INVALID_VALUE, the error cuGraphLaunch documents for an
 * invalid graph, instead of running a body that no longer exists. */
static int exec_funcs_live_locked(const struct CUgraphExec_st* x) {
  for (uint32_t k = 0; k < x->n; k++)
    if (!grape__sim_work_func_live(&x->work[k]))
      return 0;
  return 1;
}

static CUresult graph_launch(CUgraphExec x, CUstream h, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (!grape__sim_reg_has(x, K_EXEC))
    return CUDA_ERROR_INVALID_HANDLE;
  grape__sim_host_not_before(x->ready_ns);
  uint32_t n = x->n;
  grape__sim_host_charge(grape__sim_costs[COST_GRAPH_LAUNCH_NODE] * n);
  sim_work_t* works = calloc(n ? n : 1, sizeof(*works));
  sim_dep_t** deps = calloc(n ? n : 1, sizeof(*deps));
  sim_dep_t* depv = calloc(n ? n : 1, sizeof(*depv));
  int* ndeps = calloc(n ? n : 1, sizeof(int));
  /* Batch op i runs position order[i]; its predecessors as batch indices. */
  uint32_t* order = calloc(n ? n : 1, sizeof(uint32_t));
  uint32_t* at = calloc(n ? n : 1, sizeof(uint32_t));
  uint32_t* off = calloc((size_t)n + 1, sizeof(uint32_t));
  uint32_t* preds = calloc(x->pred_off[n] ? x->pred_off[n] : 1, sizeof(uint32_t));
  if (works == NULL || deps == NULL || depv == NULL || ndeps == NULL || order == NULL ||
      at == NULL || off == NULL || preds == NULL) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto out;
  }
  int nw = 0;
  pthread_mutex_lock(&grape__sim.lock);
  if (!exec_funcs_live_locked(x)) {
    pthread_mutex_unlock(&grape__sim.lock);
    r = CUDA_ERROR_INVALID_VALUE;
    goto out;
  }
  int capturing = s->cap != NULL;
  grape__sim_graph_order_locked(x, order);
  for (uint32_t i = 0; i < n; i++)
    at[order[i]] = i;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t p = order[i], m = x->pred_off[p + 1] - x->pred_off[p];
    off[i + 1] = off[i] + m;
    for (uint32_t j = 0; j < m; j++)
      preds[off[i] + j] = at[x->preds[x->pred_off[p] + j]];
  }
  /* Every position becomes one op, empty nodes and waits for events never
   * recorded included (as empty ops), so that batch op i is position
   * order[i] and the edges stay whole. */
  for (uint32_t i = 0; i < n; i++) {
    uint32_t k = order[i];
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
      works[nw].kind = OP_NOP;
      if (grape__sim_dep_on_event_locked(x->evs[k], &depv[nw])) {
        deps[nw] = &depv[nw];
        ndeps[nw] = 1;
      }
      nw++;
      break;
    default:   /* empty nodes */
      works[nw].kind = OP_NOP;
      nw++;
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
  sim_batch_dag_t dag = {off, preds, order};
  r = grape__sim_submit_batch(s, works, deps, ndeps, nw, &dag);
  pthread_mutex_lock(&grape__sim.lock);
  for (uint32_t k = 0; k < n; k++)
    if (x->types[k] == N_EVENT_RECORD)
      grape__sim_event_unref_locked(x->evs[k]);
  pthread_mutex_unlock(&grape__sim.lock);
  if (r == CUDA_SUCCESS && !capturing)
    atomic_fetch_add(&grape__sim.graph_launches, 1);
out:
  free(works);
  free(deps);
  free(depv);
  free(ndeps);
  free(order);
  free(at);
  free(off);
  free(preds);
  return r;
}

SIM_TWINS(cuGraphLaunch, _ptsz, (CUgraphExec x, CUstream s), graph_launch, x, s)

static CUresult graph_upload(CUgraphExec x, CUstream h, int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if (!grape__sim_reg_has(x, K_EXEC))
    return CUDA_ERROR_INVALID_HANDLE;
  grape__sim_host_not_before(x->ready_ns);
  pthread_mutex_lock(&grape__sim.lock);
  int live = exec_funcs_live_locked(x);
  pthread_mutex_unlock(&grape__sim.lock);
  return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_TWINS(cuGraphUpload, _ptsz, (CUgraphExec x, CUstream s), graph_upload, x, s)

/* Node h of the graph x was instantiated from, where it has the given type. */
static sim_node_t* exec_node(CUgraphExec x, CUgraphNode h, int type) {
  if (!grape__sim_reg_has(x, K_EXEC))
    return NULL;
  grape__sim_host_not_before(x->ready_ns);
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
  /* Every field may change, the function too (CUDA 11.2 on): the sim has
   * one context and no dynamic parallelism, the only things CUDA forbids a
   * new function to change. A node whose function was unloaded becomes
   * launchable again this way. */
  pthread_mutex_lock(&grape__sim.lock);
  sim_work_t* cur = &x->work[x->pos_of_id[n->id]];
  grape__sim_work_release(cur);
  *cur = w;
  atomic_fetch_add(&grape__sim.exec_node_param_updates, 1);
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

/* Whether an instantiated memset may take new dimensions: CUDA rejects every
 * dimension change of a 2-D memset and a change of height of a 1-D one (a
 * 1-D memset's width and element size may change "if the resulting work
 * maps onto the resources already allocated", which the sim allows). */
static int memset_dims_ok(const sim_work_t* cur, const sim_work_t* w) {
  if (cur->u.ms.height != w->u.ms.height)
    return 0;
  return cur->u.ms.height == 1 ||
         (cur->u.ms.n == w->u.ms.n && cur->u.ms.esize == w->u.ms.esize &&
          cur->u.ms.pitch == w->u.ms.pitch);
}

SIM_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec x, CUgraphNode h,
                                                   const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx) {
  SIM_COUNT(cuGraphExecMemsetNodeSetParams);
  (void)ctx;
  sim_work_t w;
  SIM_TRY(memset_work_from(p, &w));
  sim_node_t* n = exec_node(x, h, N_MEMSET);
  if (n != NULL) {
    pthread_mutex_lock(&grape__sim.lock);
    int ok = memset_dims_ok(&x->work[x->pos_of_id[n->id]], &w);
    pthread_mutex_unlock(&grape__sim.lock);
    if (!ok) {
      grape__sim_work_release(&w);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return exec_set_work(x, h, N_MEMSET, &w);
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
  grape__sim_host_not_before(x->ready_ns);
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
  /* Same topology: the same edges between the same positions. A kernel
   * node's function may change (CUDA 11.2 on; FUNCTION_CHANGED is what older
   * drivers answered), but not to one that has been unloaded. */
  uint32_t *noff = NULL, *npreds = NULL;
  if (edges_of(g, pos, &noff, &npreds) != 0) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    goto out;
  }
  int same = memcmp(noff, x->pred_off, ((size_t)n + 1) * sizeof(uint32_t)) == 0 &&
             memcmp(npreds, x->preds, noff[n] * sizeof(uint32_t)) == 0;
  free(noff);
  free(npreds);
  if (!same) {
    res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    goto out;
  }
  for (uint32_t k = 0; k < n && res == CU_GRAPH_EXEC_UPDATE_SUCCESS; k++) {
    sim_node_t* nd = g->nodes[order[k]];
    if (nd->type != x->types[k]) {
      res = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
      bad = (CUgraphNode)nd;
    } else if (!grape__sim_work_func_live(&nd->w)) {
      res = CU_GRAPH_EXEC_UPDATE_ERROR;   /* "passed an invalid value": an unloaded function */
      bad = (CUgraphNode)nd;
      r = CUDA_ERROR_INVALID_VALUE;
    } else if ((nd->type == N_EVENT_RECORD || nd->type == N_WAIT_EVENT) && nd->ev != x->evs[k]) {
      res = CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      bad = (CUgraphNode)nd;
    } else if (nd->type == N_MEMSET && !memset_dims_ok(&x->work[k], &nd->w)) {
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
        (w.u.k.f != x->work[k].u.k.f || w.u.k.fgen != x->work[k].u.k.fgen ||
         w.u.k.params_size != x->work[k].u.k.params_size ||
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
