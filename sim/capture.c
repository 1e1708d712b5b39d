/* capture.c: stream capture: work submitted to a capturing stream becomes
 * graph nodes (the rules for what may happen meanwhile are capture_rules.c's).
 *
 * DESIGN: a capturing stream turns submitted work into nodes (graph.c's
 * constructor) whose dependencies are the stream's current capture frontier;
 * stream.c's grape__sim_submit hands captured work here, through the hooks
 * this file registers with stream.c at load (stream.c is below capture and
 * graphs). Events recorded during capture carry the frontier to other
 * streams (fork/join). Capture records are never freed (they are small), so
 * an event that points to an ended capture stays safe to inspect.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- Capture into a graph ---- */

/* Lock held, s capturing. Takes ownership of *w (when w is not NULL) on success. */
static CUresult capture_add(struct CUstream_st* s, sim_work_t* w, int type,
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

/* Lock held: s waits for e while a capture is involved (either is capturing):
 * s joins e's capture, or the wait is refused. */
static CUresult wait_event_locked(struct CUstream_st* s, struct CUevent_st* e) {
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

/* Lock held, s capturing: stream work becomes a node after the stream's
 * frontier; an event record moves the event to the frontier instead. */
static CUresult submit_locked(struct CUstream_st* s, sim_work_t* w) {
  if (s->cap->invalidated)
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (w->kind == OP_EVENT)
    return record_event(s, w->u.ev.ev);
  int type = node_type_of(w->kind);
  if (type < 0)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return capture_add(s, w, type, NULL);
}

/* Lock held, s capturing: an external event record becomes an event record node. */
static CUresult record_node_locked(struct CUstream_st* s, struct CUevent_st* e) {
  return capture_add(s, NULL, N_EVENT_RECORD, e);
}

/* stream.c sits below capture: it reaches captures only through these. A
 * capture exists only after begin_capture, so registering at load is in time. */
__attribute__((constructor)) static void register_with_streams(void) {
  static const sim_capture_ops_t ops = {submit_locked, wait_event_locked, record_node_locked};
  grape__sim_capture_ops_set(&ops);
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
  grape__sim_capture_thread_account(mode, 1);
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
  grape__sim_capture_thread_account(c->mode, -1);
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
