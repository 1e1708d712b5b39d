/* capture.c: stream capture: work submitted to a capturing stream becomes
 * graph nodes, and the rules CUDA sets for what may happen while a capture
 * is in progress.
 *
 * DESIGN: a capturing stream turns submitted work into nodes (graph.c's
 * constructor) whose dependencies are the stream's current capture frontier;
 * stream.c's grape__sim_submit hands captured work here. Events recorded
 * during capture carry the frontier to other streams (fork/join). Capture
 * records are never freed (they are small), so an event that points to an
 * ended capture stays safe to inspect.
 *
 * Capture-time rules: a synchronising call on a capturing stream, or on the
 * legacy stream while a blocking stream captures, fails and invalidates the
 * capture; a "potentially unsafe" call (allocation, free, device sync) is
 * judged by the calling thread's capture interaction mode
 * (cuThreadExchangeStreamCaptureMode), which is thread-local, as is the
 * count of the thread's own non-relaxed captures.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local CUstreamCaptureMode tls_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static _Thread_local int tls_own_strict;   /* this thread's non-relaxed captures */

/* ---- Capture-time rules ---- */

int grape__sim_capturing(struct CUstream_st* s) {
  pthread_mutex_lock(&grape__sim.lock);
  int c = s->cap != NULL;
  pthread_mutex_unlock(&grape__sim.lock);
  return c;
}

/* Lock held. */
static void invalidate_all_strict(void) {
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
    if (t->cap != NULL && t->cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED)
      t->cap->invalidated = 1;
}

/* A "potentially unsafe" call (cuMemAlloc, cuMemFree, cuCtxSynchronize, ...),
 * judged by the calling thread's capture interaction mode. */
CUresult grape__sim_unsafe_call(void) {
  if (tls_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_SUCCESS;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if (tls_own_strict > 0 ||
      (tls_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && grape__sim.active_global_captures > 0)) {
    invalidate_all_strict();
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

/* A synchronising operation on s: illegal if s is capturing (and that
 * invalidates the capture), or if it is the legacy stream while a blocking
 * stream captures. */
CUresult grape__sim_capture_check(struct CUstream_st* s, int legacy_ok) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if (s->cap != NULL) {
    s->cap->invalidated = 1;
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (s->legacy && !legacy_ok) {
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
      if (!(t->flags & CU_STREAM_NON_BLOCKING) && t->cap != NULL) {
        t->cap->invalidated = 1;
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
  }
  pthread_mutex_unlock(&grape__sim.lock);
  if (r == CUDA_SUCCESS)
    r = grape__sim_unsafe_call();
  return r;
}

/* A capture begins (delta = 1) or ends (-1) on this thread. */
static void thread_account(CUstreamCaptureMode mode, int delta) {
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    tls_own_strict += delta;
}

SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  SIM_COUNT(cuThreadExchangeStreamCaptureMode);
  if (mode == NULL || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = tls_mode;
  tls_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

/* ---- Capture into a graph ---- */

/* Lock held. Takes ownership of *w (when w is not NULL). */
CUresult grape__sim_capture_add(struct CUstream_st* s, sim_work_t* w, int type,
                                struct CUevent_st* ev) {
  sim_capture_t* c = s->cap;
  if (c->invalidated)
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  sim_node_t* n =
      grape__sim_node_add_locked(c->g, type, s->cap_deps, (size_t)s->ncap_deps, w, ev);
  if (n == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  sim_node_t** nd = realloc(s->cap_deps, sizeof(*nd));
  if (nd == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  s->cap_deps = nd;
  s->cap_deps[0] = n;
  s->ncap_deps = 1;
  return CUDA_SUCCESS;
}

/* Lock held: an event recorded in a capturing stream marks the capture frontier. */
static CUresult record_event(struct CUstream_st* s, struct CUevent_st* e) {
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

static int node_type_of(int kind) {
  switch (kind) {
  case OP_KERNEL: return N_KERNEL;
  case OP_MEMCPY: return N_MEMCPY;
  case OP_MEMSET: return N_MEMSET;
  case OP_HOSTFN: return N_HOST;
  default: return -1;
  }
}

CUresult grape__sim_capture_submit_locked(struct CUstream_st* s, sim_work_t* w) {
  if (s->cap->invalidated)
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (w->kind == OP_EVENT)
    return record_event(s, w->u.ev.ev);
  int type = node_type_of(w->kind);
  if (type < 0)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return grape__sim_capture_add(s, w, type, NULL);
}

void grape__sim_capture_invalidate(struct CUstream_st* s) {
  if (s->cap != NULL)
    s->cap->invalidated = 1;
}

/* Begins a capture into a new graph, or (cuStreamBeginCaptureToGraph) into
 * the caller's graph g after its nodes deps, which stays the caller's. */
static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, CUgraph g,
                              const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t ndeps,
                              int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (s->legacy)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  sim_node_t** first = NULL;
  if (g != NULL) {
    if (!grape__sim_reg_has(g, K_GRAPH) || (ndeps > 0 && deps == NULL))
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
  c->g = g != NULL ? g : grape__sim_graph_new();
  if (c->g == NULL) {
    free(first);
    free(c);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&grape__sim.lock);
  if (s->cap != NULL) {
    if (!c->to_graph)
      grape__sim_graph_free_locked(c->g);
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
  thread_account(mode, 1);
  return CUDA_SUCCESS;
}

SIM_TWINS(cuStreamBeginCapture_v2, _ptsz, (CUstream s, CUstreamCaptureMode mode), begin_capture,
          s, mode, NULL, NULL, NULL, 0)

static CUresult begin_capture_to_graph(CUstream s, CUgraph g, const CUgraphNode* deps,
                                       const CUgraphEdgeData* edges, size_t ndeps,
                                       CUstreamCaptureMode mode, int ptds) {
  if (g == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(s, mode, g, deps, edges, ndeps, ptds);
}

SIM_TWINS(cuStreamBeginCaptureToGraph, _ptsz,
          (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* edges,
           size_t ndeps, CUstreamCaptureMode mode),
          begin_capture_to_graph, s, g, deps, edges, ndeps, mode)

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
      grape__sim_graph_free_locked(g);   /* a graph given to cuStreamBeginCaptureToGraph stays the caller's */
    *out = NULL;
    r = unjoined && !c->invalidated ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                                    : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    *out = g;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  thread_account(c->mode, -1);
  return r;
}

SIM_TWINS(cuStreamEndCapture, _ptsz, (CUstream s, CUgraph* g), end_capture, s, g)

static CUresult capture_status(CUstream h, CUstreamCaptureStatus* st, sim_capture_t** cp,
                               int ptds) {
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

static CUresult is_capturing(CUstream s, CUstreamCaptureStatus* st, int ptds) {
  if (st == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return capture_status(s, st, NULL, ptds);
}

SIM_TWINS(cuStreamIsCapturing, _ptsz, (CUstream s, CUstreamCaptureStatus* st), is_capturing, s, st)

static CUresult capture_info(CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g,
                             const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* n,
                             int ptds) {
  if (st == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_capture_t* c = NULL;
  SIM_TRY(capture_status(h, st, &c, ptds));
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

SIM_TWINS(cuStreamGetCaptureInfo_v3, _ptsz,
          (CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g,
           const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* n),
          capture_info, s, st, id, g, deps, edges, n)
