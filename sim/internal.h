/* internal.h: shared state of the simulated driver (libcuda.so.1 stand-in).
 *
 * DESIGN: one process-wide state `grape__sim` guarded by one mutex (`lock`).
 * Every stream owns an ordered queue of ops and a worker thread that runs
 * them; an op may carry dependencies (stream, sequence number) that must have
 * completed first, which is how events, cuStreamWaitEvent and the legacy NULL
 * stream's implicit synchronisation are expressed. Completion of any op
 * broadcasts `done_cv`, which every waiter (host syncs, workers blocked on a
 * dependency) watches. Ops run outside the lock.
 *
 * Handles (streams, events, modules, functions, graphs, nodes, execs, pools)
 * are checked against a registry before use, so a destroyed or made-up handle
 * yields CUDA_ERROR_INVALID_HANDLE instead of a crash. Stream objects are
 * never freed: events and pending dependencies may still name a destroyed
 * one. A destroyed stream whose work has all finished is handed out again by
 * the next cuStreamCreate, as drivers reuse handle values; its sequence
 * numbers keep counting, so every (stream, seq) pair still held anywhere reads
 * as finished. Function and module objects of unloaded modules are reused the
 * same way. SIMCU_NO_REUSE=1 parks all of them instead.
 *
 * Simulated time (cost.h): an op starts no earlier than its stream's previous
 * op, its dependencies, and the host time of its submission plus a latency.
 * A dependency on an op still pending holds a shared "done" cell that the op
 * fills with its finish time, so finish times are exact whatever the real
 * scheduling (SIMCU_SYNC=1 gives the same times as worker threads).
 *
 * Invariants: seq numbers of one stream increase by one per op; an op only
 * depends on ops submitted before it, so waits can never form a cycle.
 */
#ifndef GRAPE_SIM_INTERNAL_H
#define GRAPE_SIM_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaProfiler.h>   /* cuProfiler*: exported and in the cuGetProcAddress table */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

#include "grape/cubin.h"
#include "simcu.h"
#include "util/grow.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_DRIVER_VERSION 13000
#define SIM_ARCH 90
#define SIM_TOTAL_MEM 150754820096ULL   /* what an H200 reports: 143771 MiB */

/* ---- Entry-point counters ---- */

/* One counter per exported entry point: api.def's, then the generated stubs'
 * (sim_stub_syms.h), so a call of an entry point the sim does not serve is
 * counted and charged like any other. */
enum sim_sym_e {
#define SIM_P1(base, ver, sym) SYM_##sym,
#define SIM_P2(base, ver, sym, ptsym) SYM_##sym, SYM_##ptsym,
#define SIM_ALIAS(base, ver, sym)
#define SIM_EXTRA(sym) SYM_##sym,
#include "api.def"
#define SIM_STUB(sym) SYM_##sym,
#include "sim_stub_syms.h"
#undef SIM_STUB
  SYM__COUNT
};
extern const char* const grape__sim_sym_names[SYM__COUNT];
/* Returns the driver error of expr, if any, from the calling entry point. */
#define SIM_TRY(expr)                    \
  do {                                   \
    CUresult try_r_ = (expr);            \
    if (try_r_ != CUDA_SUCCESS)          \
      return try_r_;                     \
  } while (0)
/* Counts a call of an entry point and charges its cost on the caller's host
 * clock (cost.c). */
void grape__sim_enter(int sym);
#define SIM_COUNT(sym) grape__sim_enter(SYM_##sym)

/* An entry point and its twin for the per-thread default stream (suffix
 * _ptsz or _ptds), written once: each is counted under its own name and
 * calls impl(args..., ptds) with ptds 0 and 1. params is the parameter list
 * of both, in parentheses. */
#define SIM_TWINS(name, suffix, params, impl, ...) \
  SIM_EXPORT CUresult name params {                 \
    SIM_COUNT(name);                                \
    return impl(__VA_ARGS__, 0);                    \
  }                                                 \
  SIM_EXPORT CUresult name##suffix params {         \
    SIM_COUNT(name##suffix);                        \
    return impl(__VA_ARGS__, 1);                    \
  }

/* ---- Objects ---- */

enum sim_kind_e {
  K_STREAM = 1, K_EVENT, K_MODULE, K_FUNC, K_GRAPH, K_NODE, K_EXEC, K_POOL, K_CTX, K_VMEM,
  K_ARRAY,
};

typedef struct sim_module_s sim_module_t;
typedef struct sim_capture_s sim_capture_t;
typedef struct sim_node_s sim_node_t;

struct CUfunc_st {               /* also serves as CUkernel: a CUkernel may be passed as a CUfunction */
  sim_module_t* mod;
  char* name;                    /* mangled */
  uint32_t nparams;
  uint32_t* poff;                /* parameter offsets */
  uint32_t* psize;               /* parameter sizes */
  uint32_t param_bytes;
  int params_known;
  simcu_body_fn body;            /* NULL until bound */
  simcu_cost_fn cost;            /* SIMCU_COST of the body's object, or NULL (device.c) */
  int body_looked_up;
  int timed;                     /* no body, SIMCU_KERNELS=timed: run timed, not computed */
  int registers;
  int shared_bytes;
  int max_threads;
  int max_dyn_smem;              /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  int cuda_api_version;
  uint64_t gen;                  /* this incarnation of the object (its value is reused) */
  struct CUfunc_st* free_next;   /* unloaded, waiting for reuse */
};

/* A variable of a module's image in device memory (cuModuleGetGlobal). */
typedef struct sim_var_s {
  const char* name;              /* the image's (fb) */
  CUdeviceptr dptr;
  size_t size;
} sim_var_t;

struct sim_module_s {
  grape_fatbin_t* fb;
  int is_library;
  uint32_t nfuncs;
  struct CUfunc_st** funcs;
  uint32_t nvars;
  sim_var_t* vars;               /* allocated and initialised at load, freed at unload */
  struct sim_module_s* free_next;   /* unloaded, waiting for reuse */
};

enum sim_op_kind_e {
  OP_NOP, OP_KERNEL, OP_MEMCPY, OP_MEMSET, OP_EVENT, OP_HOSTFN, OP_FREE,
};

/* The finish time of one op, shared by the op and the ops and waiters that
 * depend on it; freed when the last holder lets go (lock held). */
typedef struct sim_done_s {
  uint64_t t;
  int refs;
} sim_done_t;

/* Op seq of stream s must have finished; its finish time is done->t when
 * done is set, else at (known when the dependency was taken). */
typedef struct sim_dep_s {
  struct CUstream_st* s;
  uint64_t seq;
  sim_done_t* done;
  uint64_t at;
} sim_dep_t;

/* Lock held: the finish time of a dependency (known by the time it is read). */
static inline uint64_t grape__sim_dep_time(const sim_dep_t* d) {
  return d->done != NULL ? d->done->t : d->at;
}

/* A copy's direction, for the memory-operation table (0: not known). */
enum { SIM_DIR_UNKNOWN = 0, SIM_DIR_HTOD, SIM_DIR_DTOH, SIM_DIR_DTOD, SIM_DIR_HTOH };

/* One unit of stream work; also the payload of a graph node. */
typedef struct sim_work_s {
  int kind;
  /* Set at submission: the statistics' epoch then and whether they were
   * counting (stats_gate, kstats.c); the work is counted in the device's
   * statistics only when both still hold when it runs. */
  uint32_t stats_epoch;
  int stats_off;
  union {
    struct {
      struct CUfunc_st* f;
      uint64_t fgen;             /* f->gen when the work was made: f may be unloaded since */
      unsigned grid[3], block[3];
      unsigned smem;
      unsigned char* params;     /* owned copy of the parameter block */
      uint32_t params_size;
      int from_graph;
    } k;
    struct {
      void* dst;
      const void* src;
      size_t n;                  /* bytes (per row for 2-D/3-D copies) */
      void* owned;               /* snapshot of pageable host source, freed with the work */
      size_t rows, depth;        /* 2-D/3-D copies (copy.c): rows per slice, slices; 0 = 1 */
      size_t spitch, dpitch;     /* bytes between rows */
      size_t sslice, dslice;     /* bytes between slices */
      int dir;                   /* SIM_DIR_*: which memories it joins (kstats.c) */
    } cp;
    struct {
      void* dst;
      unsigned value;
      unsigned esize;            /* 1, 2 or 4 */
      size_t n;                  /* elements per row */
      size_t height;
      size_t pitch;
    } ms;
    struct {
      struct CUevent_st* ev;     /* a reference is held */
    } ev;
    struct {
      CUhostFn fn;
      void* data;
      int blocks;                /* may block on the host: host code, or a stream wait
                                    for a value in memory (memop.c); 0: a stream write */
    } host;
    struct {
      CUdeviceptr p;
      CUresult (*free)(CUdeviceptr p);   /* mem.c's, run in stream order */
    } fr;
  } u;
} sim_work_t;

typedef struct sim_op_s {
  struct sim_op_s* next;
  uint64_t seq;
  sim_work_t w;
  int ndeps;
  sim_dep_t* deps;
  uint64_t not_before;           /* simulated ns: submission and finished dependencies */
  sim_done_t* done;              /* set once something depends on this op */
  int planned;                   /* device model: times fixed at submission (device.c) */
  uint64_t plan_start, plan_end; /* simulated ns, when planned */
} sim_op_t;

struct CUstream_st {
  unsigned flags;                /* CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING */
  int priority;
  int legacy;                    /* the legacy NULL stream */
  int per_thread;                /* a per-thread default stream */
  unsigned long long id;
  pthread_t thread;
  int has_thread;
  pthread_cond_t cv;             /* work queued */
  sim_op_t* head;
  sim_op_t* tail;
  uint64_t submitted;            /* seq of the last op queued */
  uint64_t completed;            /* seq of the last op finished */
  uint64_t clock_ns;             /* simulated time at which the last op finished */
  uint64_t plan_ns;              /* device model: finish of all work submitted so far */
  sim_op_t* last_op;             /* the op of seq `submitted` until it finishes */
  sim_op_t* running;             /* the op being run outside the lock, if any */
  int destroyed;
  struct CUstream_st* all_next;  /* list of every stream ever made */
  struct CUstream_st* free_next; /* destroyed streams waiting for reuse */
  /* capture */
  sim_capture_t* cap;
  sim_node_t** cap_deps;
  int ncap_deps;
  /* the lower bound (bound.c) */
  uint64_t lb_epoch;             /* the stretch lb_path belongs to */
  uint64_t lb_path;              /* device time of the chain ending with its last op in it */
};

struct CUevent_st {
  struct CUevent_st* live_prev;  /* the list of live events (a reset destroys them) */
  struct CUevent_st* live_next;
  unsigned flags;
  int refs;                      /* handle + pending record ops */
  int live;                      /* handle not destroyed */
  struct CUstream_st* s;         /* last record: stream and seq; NULL if never */
  uint64_t seq;
  sim_op_t* rec_op;              /* the last record's op until it finishes */
  uint64_t time_ns;
  int timed;                     /* time_ns belongs to the last record */
  /* record during capture */
  sim_capture_t* cap;
  sim_node_t** cap_nodes;
  int ncap_nodes;
  uint64_t lb_epoch, lb_upto;    /* bound.c: its stream's chain at the last record */
};

struct CUctx_st {
  int primary;
  _Atomic unsigned flags;
  _Atomic int refs;              /* read without the lock by every entry point */
  _Atomic int destroyed;         /* reset: the value stays readable, using it fails */
};

/* ---- Graphs ---- */

enum sim_node_type_e {
  N_KERNEL = CU_GRAPH_NODE_TYPE_KERNEL,
  N_MEMCPY = CU_GRAPH_NODE_TYPE_MEMCPY,
  N_MEMSET = CU_GRAPH_NODE_TYPE_MEMSET,
  N_HOST = CU_GRAPH_NODE_TYPE_HOST,
  N_EMPTY = CU_GRAPH_NODE_TYPE_EMPTY,
  N_WAIT_EVENT = CU_GRAPH_NODE_TYPE_WAIT_EVENT,
  N_EVENT_RECORD = CU_GRAPH_NODE_TYPE_EVENT_RECORD,
};

struct sim_node_s {
  struct CUgraph_st* g;
  int type;
  uint32_t id;                   /* index in g->nodes */
  sim_work_t w;                  /* kernel/memcpy/memset/host payload */
  struct CUevent_st* ev;         /* event nodes */
  sim_node_t** deps;
  int ndeps;
  unsigned attr_set;             /* bit per CUkernelNodeAttrID set on the node */
  CUkernelNodeAttrValue attrs[32];
};

struct CUgraph_st {
  sim_node_t** nodes;
  uint32_t nnodes;
  size_t cap;
};

struct CUgraphExec_st {
  uint32_t n;
  int* types;                    /* per position, topological order */
  sim_work_t* work;              /* per position */
  struct CUevent_st** evs;       /* per position, event nodes */
  uint32_t* pos_of_id;           /* original node id -> position */
  uint32_t* pred_off;            /* per position p: its predecessors' positions are */
  uint32_t* preds;               /*   preds[pred_off[p] .. pred_off[p+1]) */
  uint32_t nids;
  struct CUgraph_st* src;        /* the graph it came from (identity only) */
  unsigned long long flags;
  uint64_t ready_ns;             /* host time its instantiation ended (another thread's, maybe) */
};

struct sim_capture_s {
  struct CUgraph_st* g;
  CUstreamCaptureMode mode;
  struct CUstream_st* origin;
  pthread_t thread;
  int invalidated;
  unsigned long long id;
  int nstreams;                  /* streams currently in the capture */
  int to_graph;                  /* cuStreamBeginCaptureToGraph: g is the caller's */
  struct sim_capture_s* next;    /* every capture ever begun (kept until exit) */
};

/* A capture still in progress (ended captures keep their record, without a graph). */
static inline int grape__sim_cap_live(const sim_capture_t* c) {
  return c != NULL && c->g != NULL;
}

/* ---- Process state ---- */

typedef struct sim_state_s {
  pthread_mutex_t lock;
  pthread_cond_t done_cv;
  _Atomic int initialized;       /* read without the lock by every entry point */
  int sync_mode;                 /* SIMCU_SYNC=1 */
  struct CUstream_st* legacy;
  struct CUstream_st* all_streams;
  struct sim_capture_s* captures;
  _Atomic(struct CUctx_st*) primary;   /* the primary context now: a new object after each
                                          reset (old ones are kept, destroyed) */
  unsigned long long next_stream_id;
  unsigned long long next_capture_id;
  int active_global_captures;    /* captures in GLOBAL mode */
  int active_captures;
  int no_reuse;                  /* SIMCU_NO_REUSE=1: handle values are never handed out again */
  long slow_instantiate_us;      /* SIMCU_SLOW_INSTANTIATE_US: real time each instantiation sleeps */
  long slow_graph_create_us;     /* SIMCU_SLOW_GRAPH_CREATE_US: real time each cuGraphCreate sleeps */
  long slow_alloc_us;            /* SIMCU_SLOW_ALLOC_US: real time each cuMemAlloc sleeps */
  struct CUstream_st* free_streams;
  struct CUevent_st* live_events;   /* events created and not destroyed */
  uint64_t retired_blocking_ns;  /* latest finish of reused blocking streams' earlier work */
  uint64_t retired_all_ns;       /* the same for every reused stream */
  int host_blocked;              /* blocking host ops running now (host functions, stream
                                    waits for a value): work that waits on the host */
  _Atomic int sticky;            /* a device fault: every later use of the context fails */
  _Atomic unsigned long long calls[SYM__COUNT];
  _Atomic unsigned long long kernels_executed;
  _Atomic unsigned long long graph_launches;
  _Atomic unsigned long long graph_kernel_nodes_executed;
  _Atomic unsigned long long exec_node_param_updates;
} sim_state_t;

extern sim_state_t grape__sim;

/* cost.c (the table itself, grape__sim_costs, is declared beside its rows in cost.h) */
void grape__sim_costs_load(void);
void grape__sim_host_charge(uint64_t ns);
void grape__sim_host_enter(uint64_t ns);         /* an entry point's own cost */
uint64_t grape__sim_host_now(void);
uint64_t grape__sim_host_call_start(void);      /* the clock before the current entry point */
uint64_t grape__sim_submit_time(void);          /* host now + submission latency */
void grape__sim_host_wait(uint64_t t_done);     /* waited for work that finished at t_done */
/* An instantiation held the driver lock over [from, until) of the calling
 * thread's clock: other threads' calls made then wait for its end (row
 * instantiate_lock; nothing when the row is 0). */
void grape__sim_lock_held(uint64_t from, uint64_t until);
void grape__sim_host_not_before(uint64_t t);    /* the current call may not begin before t */
void grape__sim_charge_event_record(int sym, int timing);
uint64_t grape__sim_host_total(void);
/* Ops an interposer reported its own work for (SIMCU_WORK_SHIM_OP), all threads. */
uint64_t grape__sim_shim_ops(void);
/* The latest clock of a helper thread (host_handoff), 0 without one. */
uint64_t grape__sim_helper_end_ns(void);
uint64_t grape__sim_host_end_ns(void);   /* the latest host clock, helpers' included */
/* Charges host work of a kind that simcu_private.h's host_work reports
 * (SIMCU_WORK_*); returns the ns charged. */
uint64_t grape__sim_host_work(int kind);
/* simcu_private.h's host_handoff: the calling thread is a helper that resumes at t. */
void grape__sim_host_handoff(uint64_t t);

/* Per kernel name: one executed kernel of ns simulated device time (kstats.c),
 * and the table as a JSON array for SIMCU_REPORT. */
void grape__sim_kstat_add(const char* name, uint64_t ns, int from_graph);
void grape__sim_kstat_write(FILE* f);
/* One executed memcpy (dir: SIM_DIR_*) or memset of bytes and ns, by kind and
 * direction (kstats.c). */
void grape__sim_mstat_add(int is_memset, int dir, uint64_t bytes, uint64_t ns);
void grape__sim_mstat_write(FILE* f);
/* Capture ranges of the statistics (simcu_private_t.stats_gate): stamp marks
 * work at submission; counts says whether it goes into the statistics. */
void grape__sim_stats_gate(int on);
void grape__sim_stats_stamp(sim_work_t* w);
int grape__sim_stats_counts(const sim_work_t* w);
void grape__sim_kstat_atfork_child(void);

/* state.c */
CUresult grape__sim_check_init(void);
CUresult grape__sim_need_ctx(void);   /* init done, a current context, no sticky fault */
CUresult grape__sim_sticky(void);     /* the sticky fault, or CUDA_SUCCESS */
void grape__sim_logf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/* The file env var `var` names, "%p" made the process id (state.c); 0: unset. */
int grape__sim_out_path(const char* var, char* path, size_t cap);
/* SIMCU_TIMELINE (timeline.c): kernel w of stream `stream` placed from ready
 * to end (lock held); the file flushed at exit. */
void grape__sim_timeline_kernel(unsigned long long stream, const sim_work_t* w, uint64_t ready,
                                uint64_t end);
void grape__sim_timeline_close(void);
/* The calling thread's current context when it is the live primary context,
 * else NULL (none set, released, or destroyed by a reset). */
struct CUctx_st* grape__sim_current_ctx(void);
/* CUDA_SUCCESS, CUDA_ERROR_INVALID_CONTEXT (no current context) or
 * CUDA_ERROR_CONTEXT_IS_DESTROYED (the thread's current context was reset). */
CUresult grape__sim_ctx_error(void);
struct CUctx_st* grape__sim_primary(void);   /* the device's primary context now */
/* The context the calling thread last made current (NULL: none, or popped),
 * whatever has become of it since; and making c current (core.c's cuCtx*). */
struct CUctx_st* grape__sim_ctx_get(void);
void grape__sim_ctx_set(struct CUctx_st* c);

/* errors.c */
const char* grape__sim_err_name(CUresult e);   /* NULL if unknown */

/* registry.c */
int grape__sim_reg_add(const void* p, int kind);
void grape__sim_reg_del(const void* p);
int grape__sim_reg_has(const void* p, int kind);   /* caller may hold the lock or not */
/* A zeroed handle object of size bytes, registered as kind; NULL when either fails. */
void* grape__sim_reg_new(size_t size, int kind);

/* mem.c */
int grape__sim_dev_range(CUdeviceptr p, size_t n);   /* 1 if [p, p+n) lies in one device allocation */
int grape__sim_host_range(const void* p, size_t n);  /* 1 if pinned/registered host memory */
CUresult grape__sim_free_now(CUdeviceptr p);
CUresult grape__sim_dev_alloc(CUdeviceptr* out, size_t n);   /* as cuMemAlloc, no checks */

/* array.c: where a CUDA array's elements lie (packed: rows of row bytes,
 * rows per slice, slices). */
typedef struct sim_array_box_s {
  CUdeviceptr mem;
  unsigned esize;          /* bytes per element */
  size_t row, rows, slices;
  int one_dim;             /* a 1-D array (Height and Depth 0) */
} sim_array_box_t;
CUresult grape__sim_array_box(CUarray a, sim_array_box_t* out);

/* stream.c */
CUresult grape__sim_stream(CUstream h, int ptds, struct CUstream_st** out);
/* The stream of a copy or memset; a synchronous one may not be issued while
 * that stream (or, for the legacy stream, a blocking one) captures. */
CUresult grape__sim_op_stream(CUstream h, int ptds, int async, struct CUstream_st** out);
CUresult grape__sim_submit(struct CUstream_st* s, sim_work_t* w, const sim_dep_t* extra, int nextra);
CUresult grape__sim_wait_stream(struct CUstream_st* s);
CUresult grape__sim_wait_all(void);
void grape__sim_wait_all_timed(int ms);
int grape__sim_run_work(sim_work_t* w, uint64_t* clock);   /* returns a device fault or 0 */
int grape__sim_dep_on_event_locked(struct CUevent_st* e, sim_dep_t* d);
void grape__sim_deps_drop_locked(sim_dep_t* d, int n);
/* The end-to-end simulated time: the latest host clock or finished device work. */
uint64_t grape__sim_end_ns(void);
/* A graph's edges for grape__sim_submit_batch: batch op i waits (in the
 * device model's time) for the ops preds[off[i] .. off[i+1]), and rank[i] is
 * its position in the graph's own topological order (ties of readiness go
 * to the lower rank, so times do not depend on the order bodies run in). */
typedef struct sim_batch_dag_s {
  const uint32_t* off;
  const uint32_t* preds;
  const uint32_t* rank;
} sim_batch_dag_t;
/* Submits a batch (a graph launch) contiguously; works[] and the
 * dependencies' cells are consumed. dag may be NULL (a chain). */
CUresult grape__sim_submit_batch(struct CUstream_st* s, sim_work_t* works, sim_dep_t** deps,
                                 int* ndeps, int n, const sim_batch_dag_t* dag);
/* What streams hand to stream capture, which registers it at load (capture.c):
 * work submitted to a capturing stream, an event waited for while a capture
 * is involved, an external event record captured as a node; each lock held. */
typedef struct sim_capture_ops_s {
  CUresult (*submit_locked)(struct CUstream_st* s, sim_work_t* w);
  CUresult (*wait_event_locked)(struct CUstream_st* s, struct CUevent_st* e);
  CUresult (*record_node_locked)(struct CUstream_st* s, struct CUevent_st* e);
} sim_capture_ops_t;
void grape__sim_capture_ops_set(const sim_capture_ops_t* ops);

/* work.c */
/* The modelled device time of w (cost.h device rows); a kernel as a node of
 * a launched graph when as_node, else as it was submitted. */
uint64_t grape__sim_work_ns(const sim_work_t* w, int as_node);
/* Kernel work w as a body (or cost hook) sees it: argv[] (f->nparams entries)
 * points into its parameter copy; b holds the launch shape, fault its flag. */
void grape__sim_kernel_view(const sim_work_t* w, void** argv, simcu_block_t* b, int* fault);
/* Frees what the work owns; the event reference needs the lock held. */
void grape__sim_work_release(sim_work_t* w);
int grape__sim_work_copy(sim_work_t* dst, const sim_work_t* src);
void grape__sim_event_unref_locked(struct CUevent_st* e);

/* module.c */
CUresult grape__sim_make_kernel_work(struct CUfunc_st* f, const unsigned grid[3],
                                     const unsigned block[3], unsigned smem, void** params,
                                     void** extra, sim_work_t* w);
CUresult grape__sim_bind_body(struct CUfunc_st* f);
/* Whether the function of kernel work w is still loaded: neither unloaded
 * nor an equal handle value of a later load (any other work: 1). */
int grape__sim_work_func_live(const sim_work_t* w);

/* occupancy.c */
int grape__sim_blocks_per_sm(const struct CUfunc_st* f, int block, size_t dyn);
int grape__sim_regs_fit(const struct CUfunc_st* f, unsigned threads);
int grape__sim_max_threads(const struct CUfunc_st* f);   /* MAX_THREADS_PER_BLOCK */
int grape__sim_kernels_timed(void);   /* SIMCU_KERNELS=timed (module.c) */
/* Kernels run timed, not computed (timed.c): the device time of one block on
 * the calendar, and of the whole kernel alone (without launch overhead). */
uint64_t grape__sim_timed_block_ns(const sim_work_t* w);
uint64_t grape__sim_timed_ns(const sim_work_t* w);

/* copy.c */
CUresult grape__sim_copy3d_work(const CUDA_MEMCPY3D* p, sim_work_t* w);   /* graph memcpy nodes */

/* memset.c */
/* The work of a memset of height rows of n elements of esize bytes, pitch
 * bytes apart, at d (graph memset nodes too); CUDA_ERROR_INVALID_VALUE unless
 * d (and, for height > 1, pitch) is aligned to esize and the rows lie inside
 * one device allocation. */
CUresult grape__sim_memset_work(CUdeviceptr d, unsigned v, unsigned esize, size_t n,
                                size_t height, size_t pitch, sim_work_t* w);

/* Fork handlers of each file's locks (phase: SIM_FORK_PREPARE, _PARENT, _CHILD). */
enum { SIM_FORK_PREPARE, SIM_FORK_PARENT, SIM_FORK_CHILD };
/* One lock's part of them (state.c): taken before fork, released after it in
 * the parent and the child. */
void grape__sim_fork_lock(pthread_mutex_t* m, int phase);
void grape__sim_reg_atfork(int phase);
void grape__sim_module_atfork(int phase);
void grape__sim_mem_atfork(int phase);
void grape__sim_memop_atfork(int phase);
void grape__sim_stream_atfork_child(void);   /* grape__sim.lock held */
/* Lock held, all work finished: a primary context reset destroys every
 * created stream (values reusable) and every event (stream.c). */
void grape__sim_stream_reset_locked(void);

/* bound.c: the device's busy time and the lower bound of the exit report.
 * The _locked functions need grape__sim.lock. */
typedef struct sim_bound_s {
  uint64_t device_busy_ns;       /* device time of every op run */
  uint64_t lower_bound_ns;       /* LB: sum over stretches of max(host, device) */
  uint64_t host_ns, device_ns;   /* the two sides, summed apart */
  uint64_t stretches;            /* wait points + 1 */
} sim_bound_t;
void grape__sim_bound_host(uint64_t ns);        /* framework host work (SIMCU_HOST_NS) */
void grape__sim_bound_busy(uint64_t ns);        /* an op ran for ns */
void grape__sim_bound_submit_locked(struct CUstream_st* s, const sim_work_t* w);
void grape__sim_bound_record_locked(struct CUevent_st* e, struct CUstream_st* s);
void grape__sim_bound_join_locked(struct CUstream_st* s, const struct CUevent_st* e);
/* A wait point: s or e awaited; both NULL, the whole device. */
void grape__sim_bound_cut_locked(struct CUstream_st* s, const struct CUevent_st* e);
void grape__sim_bound_report(sim_bound_t* out);   /* ends the last stretch */

/* device.c: the device model (SIMCU_DEVICE_MODEL) and graph orders (SIMCU_GRAPH_ORDER) */
int grape__sim_dm_on(void);   /* the shared-device model is in force */
int grape__sim_time_only(void);   /* SIMCU_TIME_ONLY=1: kernel bodies are not run */
/* Lock held: fixes op's start and finish on stream s (submission order). */
void grape__sim_dm_plan_locked(struct CUstream_st* s, sim_op_t* op);
/* Lock held: fixes the times of a graph launch's n ops (NULL: captured) in
 * the order they become ready, each after base (the stream's work before the
 * launch) and its predecessors; join, the launch's last op, after all. */
void grape__sim_dm_plan_batch_locked(struct CUstream_st* s, sim_op_t** ops, int n,
                                     const sim_batch_dag_t* dag, sim_op_t* join, uint64_t base);
/* Lock held: the order a launch of x runs its n positions in, into order[]:
 * x's own order, or the reversed or shuffled one SIMCU_GRAPH_ORDER asks for
 * (still topological). */
void grape__sim_graph_order_locked(const struct CUgraphExec_st* x, uint32_t* order);

/* graph.c */
struct CUgraph_st* grape__sim_graph_new(void);   /* empty and registered; NULL without memory */
/* Lock held. Appends a node of g after deps (each a node of g), taking over
 * *w (zeroed; may be NULL) and a reference to ev (may be NULL); NULL when a
 * dependency is not g's or memory runs out (then *w is still the caller's). */
sim_node_t* grape__sim_node_add_locked(struct CUgraph_st* g, int type, sim_node_t* const* deps,
                                       size_t ndeps, sim_work_t* w, struct CUevent_st* ev);
void grape__sim_graph_free_locked(struct CUgraph_st* g);   /* lock held (event references) */

/* capture_rules.c: what may happen while a capture is in progress */
int grape__sim_capturing(struct CUstream_st* s);
/* A synchronising operation on s (see capture_rules.c); legacy_ok: the legacy
 * stream may sync while blocking streams capture. Invalidates what it refuses. */
CUresult grape__sim_capture_check(struct CUstream_st* s, int legacy_ok);
CUresult grape__sim_unsafe_call(void);   /* a potentially unsafe call during capture */
void grape__sim_capture_invalidate(struct CUstream_st* s);   /* lock held */
/* A capture in mode begins (delta = 1) or ends (-1) on the calling thread. */
void grape__sim_capture_thread_account(CUstreamCaptureMode mode, int delta);

#endif
