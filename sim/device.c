/* device.c: the simulated H200's shared resources in simulated time
 * (SIMCU_DEVICE_MODEL), and the order in which a graph launch runs its nodes
 * (SIMCU_GRAPH_ORDER).
 *
 * DESIGN: without this file every stream has its own clock, and work on two
 * streams (or two branches of a graph) overlaps for free. Here the device's
 * 132 multiprocessors are one calendar of CTA slots over simulated time,
 * shared by every stream:
 *
 * - Slots. A multiprocessor is DM_SM_UNITS units (lcm(1..32), so that every
 *   occupancy divides it); a block of a kernel that fits o blocks per SM
 *   (CUDA's occupancy calculator, occupancy.c) holds DM_SM_UNITS / o units
 *   while it runs. The units of all SMs are pooled: which SM a block lands on
 *   is not modelled, so co-runners pack perfectly (no fragmentation).
 * - Blocks. A kernel's blocks are dispatched in index order, each as soon as
 *   enough units are free for its whole duration, in rounds: alone, a kernel
 *   of G blocks runs ceil(G / (132 o)) rounds ("waves"). Without a cost hook a
 *   kernel's work is today's W = threads / device_threads_per_ns, split into
 *   equal rounds (the last takes the remainder), so a kernel that runs alone
 *   takes exactly the time it took before this model: launch overhead + W.
 *   A SIMCU_COST hook (simcu.h) gives a block's time and the launch's memory
 *   traffic instead (the sim's cuBLAS uses one).
 * - Memory bandwidth. Bytes move at no more than device_mem_bytes_per_ns over
 *   the whole device. A group of blocks started together needs its bytes at
 *   (bytes / block time); where the kernels already placed leave less, the
 *   group gets what is left and lasts until its bytes have moved (a fluid
 *   model). A kernel's block time is never shorter than its own full round
 *   allows, so a kernel alone is never slowed by its own traffic.
 * - Placement happens once, when an op is submitted, in submission order and
 *   under the sim's lock: an op's start and finish are fixed then (stream.c
 *   uses them when the op runs), and an earlier op's blocks are never moved
 *   (non-retroactive), which keeps times causal and independent of how the
 *   worker threads are scheduled. A kernel submitted earlier keeps the slots
 *   it was given even where a later one becomes ready first: the later one
 *   backfills around it ("in order" across streams, as the hardware
 *   dispatches kernels in submission order and later ones take what is left).
 * - Graph launches: a node starts when its predecessors in the graph have
 *   finished (not when the node before it in the stream has), so nodes with
 *   no edge between them run concurrently; nodes are placed in the order they
 *   become ready (ties: the graph's own topological order), so their times do
 *   not depend on the order their bodies run in.
 * - Copies, memsets, host functions and event records keep their modelled
 *   durations and take no slots (copy engines and the host are not modelled).
 *
 * SIMCU_DEVICE_MODEL=streams restores the per-stream clocks (stream.c then
 * times ops as they run). SIMCU_GRAPH_ORDER=reverse | shuffle:<seed> runs a
 * graph launch's nodes in a reversed or seeded random topological order
 * (default "topo": lowest node first): a node that needs another's results
 * but has no edge to it then reads them too early or too late, and the
 * program's checksum shows it. It changes only the order bodies run in.
 * SIMCU_TIME_ONLY=1 skips kernels' bodies (their results are undefined):
 * for timing studies of problems too large to compute on a CPU.
 *
 * Invariants: segs[] is sorted by t with segs[0].t the oldest time kept
 * (earlier time is treated as free); the last segment reaches to infinity
 * and is empty once every reservation has ended; all of it is guarded by
 * grape__sim.lock.
 */
#include "internal.h"
#include "cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DM_SMS 132
#define DM_SM_UNITS 144403552893600ULL   /* lcm(1..32): one multiprocessor */
#define DM_CAP ((uint64_t)DM_SMS * DM_SM_UNITS)
#define DM_KEEP_NS 10000000ULL           /* simulated past kept before the submitter's clock */
#define DM_MAX_SEGS 16384

enum { MODEL_SM, MODEL_STREAMS };
enum { ORDER_TOPO, ORDER_REVERSE, ORDER_SHUFFLE };

/* [t, next segment's t): units held, bytes per ns moving. */
typedef struct seg_s {
  uint64_t t;
  uint64_t used;
  double bw;
} seg_t;

static pthread_once_t dm_once = PTHREAD_ONCE_INIT;
static int dm_model;
static int dm_time_only;   /* SIMCU_TIME_ONLY=1: kernels' bodies are skipped */
static int dm_order;
static uint64_t dm_rng;   /* shuffle state (splitmix64), lock held */
static seg_t* seg_mem;   /* the calendar's allocation: segs starts inside it */
static size_t capmem;
static seg_t* segs;
static size_t nsegs, capsegs;   /* capsegs: room from segs to the allocation's end */

/* ---- Options ---- */

static void dm_init(void) {
  const char* m = getenv("SIMCU_DEVICE_MODEL");
  dm_model = MODEL_SM;
  if (m != NULL && m[0] != '\0') {
    if (strcmp(m, "streams") == 0)
      dm_model = MODEL_STREAMS;
    else if (strcmp(m, "sm") != 0)
      grape__sim_logf("SIMCU_DEVICE_MODEL=%s is not 'sm' or 'streams': 'sm' applies", m);
  }
  const char* o = getenv("SIMCU_GRAPH_ORDER");
  dm_order = ORDER_TOPO;
  if (o != NULL && o[0] != '\0' && strcmp(o, "topo") != 0) {
    char* end = NULL;
    if (strcmp(o, "reverse") == 0) {
      dm_order = ORDER_REVERSE;
    } else if (strncmp(o, "shuffle:", 8) == 0 && o[8] != '\0' &&
               (dm_rng = strtoull(o + 8, &end, 10), *end == '\0')) {
      dm_order = ORDER_SHUFFLE;
    } else {
      grape__sim_logf("SIMCU_GRAPH_ORDER=%s is not 'topo', 'reverse' or 'shuffle:<seed>': "
                      "'topo' applies", o);
    }
  }
  const char* t = getenv("SIMCU_TIME_ONLY");
  dm_time_only = t != NULL && t[0] == '1';
  if (dm_time_only)
    grape__sim_logf("SIMCU_TIME_ONLY=1: kernels are timed but not run, their results are "
                    "undefined");
  segs = seg_mem = calloc(16, sizeof(*segs));
  if (segs != NULL) {
    capsegs = capmem = 16;
    nsegs = 1;   /* {0, 0, 0}: a free device from time 0 */
  } else {
    dm_model = MODEL_STREAMS;   /* no memory for the calendar: streams keep their own clocks */
  }
}

int grape__sim_dm_on(void) {
  pthread_once(&dm_once, dm_init);
  return dm_model == MODEL_SM;
}

int grape__sim_time_only(void) {
  pthread_once(&dm_once, dm_init);
  return dm_time_only;
}

/* ---- The calendar ---- */

static double bw_cap(void) {
  return (double)grape__sim_costs[COST_DEVICE_MEM_BYTES_PER_NS];
}

/* Index of the segment holding t (t >= segs[0].t). */
static size_t seg_at(uint64_t t) {
  size_t lo = 0, hi = nsegs;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (segs[mid].t <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

static uint64_t seg_end(size_t i) {
  return i + 1 < nsegs ? segs[i + 1].t : UINT64_MAX;
}

/* A boundary at t (t > segs[0].t); returns the index of the segment that
 * starts there, or SIZE_MAX without memory (the caller then skips the
 * reservation: times stay causal, only less contended). */
static size_t split_at(uint64_t t) {
  size_t i = seg_at(t);
  if (segs[i].t == t)
    return i;
  if (nsegs == capsegs && segs != seg_mem) {   /* the pruned front makes room */
    memmove(seg_mem, segs, nsegs * sizeof(*segs));
    segs = seg_mem;
    capsegs = capmem;
  }
  if (nsegs == capsegs) {
    seg_t* n = grape__grow(seg_mem, &capmem, nsegs + 1, sizeof(*n), 16);
    if (n == NULL)
      return SIZE_MAX;
    segs = seg_mem = n;
    capsegs = capmem;
  }
  memmove(&segs[i + 2], &segs[i + 1], (nsegs - i - 1) * sizeof(*segs));
  segs[i + 1] = segs[i];
  segs[i + 1].t = t;
  nsegs++;
  return i + 1;
}

/* Whether nothing is reserved from t on. */
static int empty_from(uint64_t t) {
  const seg_t* last = &segs[nsegs - 1];
  return t >= last->t && last->used == 0 && last->bw <= 0.0;
}

/* The fewest units free at any time in [t0, t1). */
static uint64_t min_free(uint64_t t0, uint64_t t1) {
  if (t1 <= segs[0].t)
    return DM_CAP;
  uint64_t m = 0;
  for (size_t i = seg_at(t0 > segs[0].t ? t0 : segs[0].t); i < nsegs && segs[i].t < t1; i++)
    if (segs[i].used > m)
      m = segs[i].used;
  return m < DM_CAP ? DM_CAP - m : 0;
}

/* The most bytes per ns moving at any time in [t0, t1). */
static double max_bw(uint64_t t0, uint64_t t1) {
  if (t1 <= segs[0].t)
    return 0.0;
  double m = 0.0;
  for (size_t i = seg_at(t0 > segs[0].t ? t0 : segs[0].t); i < nsegs && segs[i].t < t1; i++)
    if (segs[i].bw > m)
      m = segs[i].bw;
  return m;
}

/* The next time after t at which what is held changes. */
static uint64_t next_change(uint64_t t) {
  if (t < segs[0].t)
    return segs[0].t;
  return seg_end(seg_at(t));
}

/* When bytes, moving at no more than rate bytes per ns and no more than the
 * bandwidth the calendar leaves, have moved, starting at t. */
static uint64_t fluid_end(uint64_t t, double bytes, double rate) {
  double left = bytes, cap = bw_cap();
  uint64_t now = t;
  for (;;) {
    uint64_t stop;
    double avail;
    if (now < segs[0].t) {
      stop = segs[0].t;
      avail = cap;
    } else {
      size_t i = seg_at(now);
      stop = seg_end(i);
      avail = cap - segs[i].bw;
    }
    double r = avail < rate ? avail : rate;
    if (r > 0.0) {
      double need = left / r;
      if (stop == UINT64_MAX || (double)(stop - now) >= need)
        return now + (uint64_t)ceil(need);
      left -= r * (double)(stop - now);
    }
    if (stop == UINT64_MAX)   /* cannot happen: the last segment is empty */
      return now + (uint64_t)ceil(left / rate);
    now = stop;
  }
}

/* Holds units over [t0, t1) and moves up to rate bytes per ns (what each
 * segment leaves of the bandwidth, as fluid_end assumed). */
static void reserve(uint64_t t0, uint64_t t1, uint64_t units, double rate) {
  if (t0 < segs[0].t)
    t0 = segs[0].t;
  if (t0 >= t1)
    return;
  size_t a = split_at(t0);
  if (a == SIZE_MAX || split_at(t1) == SIZE_MAX)
    return;
  double cap = bw_cap();
  size_t i;
  for (i = a; i < nsegs && segs[i].t < t1; i++) {
    segs[i].used += units;
    if (rate > 0.0) {
      double avail = cap - segs[i].bw;
      segs[i].bw += avail < rate ? (avail > 0.0 ? avail : 0.0) : rate;
    }
  }
  /* Merge equal neighbours around what changed. */
  size_t lo = a > 0 ? a - 1 : 0, hi = i < nsegs ? i : nsegs - 1, w = lo;
  for (size_t r = lo + 1; r <= hi; r++) {
    if (segs[r].used == segs[w].used && segs[r].bw == segs[w].bw)
      continue;
    segs[++w] = segs[r];
  }
  size_t gone = hi - w;
  if (gone > 0) {
    memmove(&segs[w + 1], &segs[hi + 1], (nsegs - hi - 1) * sizeof(*segs));
    nsegs -= gone;
  }
}

/* Forgets the calendar before horizon (a placement there sees a free
 * device), and its oldest part when it grows past DM_MAX_SEGS. */
static void prune(uint64_t horizon) {
  size_t drop = seg_at(horizon > segs[0].t ? horizon : segs[0].t);
  if (nsegs - drop > DM_MAX_SEGS)
    drop = nsegs - DM_MAX_SEGS / 2;
  if (drop == 0)
    return;
  /* The front is dropped by moving the start; the rest moves down only when
   * the dropped part outgrows it (each placement prunes: moving every kept
   * segment each time made a launch cost O(segments)). */
  segs += drop;
  nsegs -= drop;
  capsegs -= drop;
  if ((size_t)(segs - seg_mem) > nsegs) {
    memmove(seg_mem, segs, nsegs * sizeof(*segs));
    segs = seg_mem;
    capsegs = capmem;
  }
}

/* ---- Kernels ---- */

/* A kernel launch as the calendar sees it. */
typedef struct dm_kernel_s {
  uint64_t ready;       /* blocks may start */
  uint64_t blocks;      /* G */
  uint64_t unit;        /* units one block holds */
  uint64_t per_round;   /* blocks that fit the whole device */
  uint64_t n_main;      /* the first n_main blocks take c_main ns, the others c_last */
  uint64_t c_main, c_last;
  double bytes;         /* per block */
} dm_kernel_t;

static double sane(double v) {
  return v >= 0.0 && v < 1e15 ? v : 0.0;   /* also NaN */
}

/* a * b, saturating far below UINT64_MAX, so later sums of times cannot wrap. */
static uint64_t mul_sat(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) || r > (UINT64_MAX >> 2) ? (UINT64_MAX >> 2) : r;
}

/* The shape of the kernel of w on the calendar, its blocks ready at ready. */
static void kernel_shape(const sim_work_t* w, uint64_t ready, dm_kernel_t* k) {
  const uint64_t* c = grape__sim_costs;
  struct CUfunc_st* f = w->u.k.f;
  uint64_t g = (uint64_t)w->u.k.grid[0] * w->u.k.grid[1] * w->u.k.grid[2];
  uint64_t bt = (uint64_t)w->u.k.block[0] * w->u.k.block[1] * w->u.k.block[2];
  int o = grape__sim_blocks_per_sm(f, (int)bt, w->u.k.smem);
  if (o < 1)
    o = 1;
  memset(k, 0, sizeof(*k));
  k->ready = ready + c[w->u.k.from_graph ? COST_DEVICE_GRAPH_KERNEL : COST_DEVICE_KERNEL];
  k->blocks = g;
  k->unit = DM_SM_UNITS / (uint64_t)o;
  k->per_round = (uint64_t)DM_SMS * (uint64_t)o;
  uint64_t waves = (g + k->per_round - 1) / k->per_round;
  if (f->cost != NULL) {
    void* argv[f->nparams > 0 ? f->nparams : 1];
    int fault = 0;
    simcu_block_t launch;
    grape__sim_kernel_view(w, argv, &launch, &fault);
    simcu_cost_t cost = {0.0, 0.0};
    f->cost(&launch, argv, &cost);
    double cta = ceil(sane(cost.cta_ns));
    k->bytes = sane(cost.bytes) / (double)g;
    /* One full round of its own blocks must not need more than the bandwidth. */
    double floor_ns = ceil(k->bytes * (double)(g < k->per_round ? g : k->per_round) / bw_cap());
    k->c_main = k->c_last = (uint64_t)(cta > floor_ns ? cta : floor_ns);
    k->n_main = g;
  } else if (f->timed) {   /* no body, SIMCU_KERNELS=timed: waves of timed_block (timed.c) */
    k->c_main = k->c_last = grape__sim_timed_block_ns(w);
    k->n_main = g;
  } else {
    uint64_t work = g * bt / c[COST_DEVICE_THREADS_PER_NS];
    k->c_main = work / waves;
    k->c_last = work - (waves - 1) * k->c_main;
    k->n_main = (waves - 1) * k->per_round;
  }
}

/* Places the kernel's blocks; returns when the last one finishes. */
static uint64_t place_kernel(const dm_kernel_t* k) {
  uint64_t t = k->ready, end = k->ready;
  uint64_t left[2] = {k->n_main, k->blocks - k->n_main};
  const uint64_t dur[2] = {k->c_main, k->c_last};
  for (int cls = 0; cls < 2;) {
    if (left[cls] == 0) {
      cls++;
      continue;
    }
    uint64_t c = dur[cls];
    if (c == 0) {   /* blocks of no duration hold nothing */
      left[cls] = 0;
      continue;
    }
    double rate1 = k->bytes / (double)c;   /* bytes per ns of one block */
    if (empty_from(t)) {
      /* Nothing else from here on: whole rounds, in closed form. */
      uint64_t rounds = (left[cls] + k->per_round - 1) / k->per_round;
      uint64_t lastn = left[cls] - (rounds - 1) * k->per_round;
      uint64_t mid = t + mul_sat(rounds - 1, c);
      if (rounds > 1)
        reserve(t, mid, k->per_round * k->unit, (double)k->per_round * rate1);
      reserve(mid, mid + c, lastn * k->unit, (double)lastn * rate1);
      t = mid + c;
      if (t > end)
        end = t;
      left[cls] = 0;
      continue;
    }
    uint64_t n = min_free(t, t + c) / k->unit;
    if (n > left[cls])
      n = left[cls];
    if (n > 0) {
      uint64_t e = t + c;
      if (k->bytes > 0.0 && max_bw(t, t + c) + (double)n * rate1 > bw_cap()) {
        e = fluid_end(t, (double)n * k->bytes, (double)n * rate1);
        uint64_t fit = min_free(t, e) / k->unit;
        if (fit < n) {   /* a shorter group frees its slots sooner: one retry fits */
          n = fit;
          e = n > 0 ? fluid_end(t, (double)n * k->bytes, (double)n * rate1) : e;
        }
      }
      if (n > 0) {
        reserve(t, e, n * k->unit, (double)n * rate1);
        left[cls] -= n;
        if (e > end)
          end = e;
        if (left[cls] == 0)
          continue;   /* the next class may start at the same time */
      }
    }
    uint64_t nt = next_change(t);
    if (nt == UINT64_MAX) {   /* only after a failed split (no memory): run unplaced */
      uint64_t rounds = (left[cls] + k->per_round - 1) / k->per_round;
      if (t + mul_sat(rounds, c) > end)
        end = t + mul_sat(rounds, c);
      left[cls] = 0;
      continue;
    }
    t = nt;
  }
  return end;
}

/* Fixes the times of op (of stream s) from ready on. */
static void fix(const struct CUstream_st* s, sim_op_t* op, uint64_t ready) {
  uint64_t end;
  if (op->w.kind == OP_KERNEL) {
    dm_kernel_t k;
    kernel_shape(&op->w, ready, &k);
    end = place_kernel(&k);
    grape__sim_timeline_kernel(s->id, &op->w, ready, end);
    uint64_t now = grape__sim_host_now();
    if (nsegs > 64)
      prune(now > DM_KEEP_NS ? now - DM_KEEP_NS : 0);
  } else {
    end = ready + grape__sim_work_ns(&op->w, 0);
  }
  op->planned = 1;
  op->plan_start = ready;
  op->plan_end = end;
  if (op->done != NULL)
    op->done->t = end;
}

/* The earliest op may start by its submission and dependencies. */
static uint64_t earliest(const sim_op_t* op, uint64_t after) {
  uint64_t t = op->not_before > after ? op->not_before : after;
  for (int i = 0; i < op->ndeps; i++) {
    uint64_t d = grape__sim_dep_time(&op->deps[i]);
    if (d > t)
      t = d;
  }
  return t;
}

void grape__sim_dm_plan_locked(struct CUstream_st* s, sim_op_t* op) {
  fix(s, op, earliest(op, s->plan_ns));
  if (op->plan_end > s->plan_ns)
    s->plan_ns = op->plan_end;
}

void grape__sim_dm_plan_batch_locked(struct CUstream_st* s, sim_op_t** ops, int n,
                                     const sim_batch_dag_t* dag, sim_op_t* join, uint64_t base) {
  size_t un = n > 0 ? (size_t)n : 1;
  size_t npreds = dag != NULL && n > 0 ? dag->off[n] : 0;
  uint64_t* ready = calloc(un, sizeof(uint64_t));
  uint32_t* waiting = calloc(un, sizeof(uint32_t));
  uint32_t* cand = calloc(un, sizeof(uint32_t));       /* the ops whose predecessors are placed */
  uint32_t* succ_off = calloc(un + 1, sizeof(uint32_t));
  uint32_t* succ = calloc(npreds ? npreds : 1, sizeof(uint32_t));
  uint64_t last = base;
  if (ready == NULL || waiting == NULL || cand == NULL || succ_off == NULL || succ == NULL) {
    /* No memory for the schedule: one after the other, as a chain. */
    for (int i = 0; i < n; i++)
      if (ops[i] != NULL) {
        fix(s, ops[i], earliest(ops[i], last));
        last = ops[i]->plan_end;
      }
    goto join;
  }
  /* Successor lists (a predecessor named twice releases twice, as it waits twice). */
  for (size_t j = 0; j < npreds; j++)
    succ_off[dag->preds[j] + 1]++;
  for (int i = 0; i < n; i++)
    succ_off[i + 1] += succ_off[i];
  for (int i = 0; dag != NULL && i < n; i++)
    for (uint32_t j = dag->off[i]; j < dag->off[i + 1]; j++)
      succ[succ_off[dag->preds[j]]++] = (uint32_t)i;
  for (int i = n; i > 0; i--)   /* the fill moved each offset to its list's end */
    succ_off[i] = succ_off[i - 1];
  succ_off[0] = 0;
  size_t ncand = 0;
  for (int i = 0; i < n; i++) {
    ready[i] = base;
    waiting[i] = dag != NULL ? dag->off[i + 1] - dag->off[i] : (i > 0);
    if (waiting[i] == 0)
      cand[ncand++] = (uint32_t)i;
  }
  /* List scheduling: the ready op that can start first (ties: lower rank,
   * then lower position). Only ops whose predecessors are placed are looked
   * at, so a chain costs O(n) and a DAG O(n * width). */
  while (ncand > 0) {
    size_t at = 0;
    uint32_t pick = cand[0];
    uint64_t pick_t = ops[pick] != NULL ? earliest(ops[pick], ready[pick]) : ready[pick];
    for (size_t c = 1; c < ncand; c++) {
      uint32_t i = cand[c];
      uint64_t t = ops[i] != NULL ? earliest(ops[i], ready[i]) : ready[i];
      int before = t < pick_t;
      if (t == pick_t)
        before = dag != NULL && dag->rank[i] != dag->rank[pick] ? dag->rank[i] < dag->rank[pick]
                                                                : i < pick;
      if (before) {
        at = c;
        pick = i;
        pick_t = t;
      }
    }
    cand[at] = cand[--ncand];
    uint64_t end = pick_t;
    if (ops[pick] != NULL) {
      fix(s, ops[pick], pick_t);
      end = ops[pick]->plan_end;
    }
    if (end > last)
      last = end;
    /* Release its successors. */
    uint32_t s0 = dag != NULL ? succ_off[pick] : 0;
    uint32_t s1 = dag != NULL ? succ_off[pick + 1] : (int)pick + 1 < n;
    for (uint32_t j = s0; j < s1; j++) {
      uint32_t i = dag != NULL ? succ[j] : pick + 1;
      if (end > ready[i])
        ready[i] = end;
      if (--waiting[i] == 0)
        cand[ncand++] = i;
    }
  }
join:
  if (join != NULL) {
    fix(s, join, earliest(join, last));
    last = join->plan_end;
  }
  if (last > s->plan_ns)
    s->plan_ns = last;
  free(ready);
  free(waiting);
  free(cand);
  free(succ_off);
  free(succ);
}

/* ---- Graph orders ---- */

static uint64_t rng_next(void) {
  uint64_t z = (dm_rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void grape__sim_graph_order_locked(const struct CUgraphExec_st* x, uint32_t* order) {
  uint32_t n = x->n;
  pthread_once(&dm_once, dm_init);
  uint32_t* indeg = dm_order != ORDER_TOPO ? calloc(n ? n : 1, sizeof(uint32_t)) : NULL;
  uint32_t* ready = dm_order != ORDER_TOPO ? calloc(n ? n : 1, sizeof(uint32_t)) : NULL;
  if (indeg == NULL || ready == NULL) {
    /* The executable's own order (positions are topological), also without memory. */
    for (uint32_t i = 0; i < n; i++)
      order[i] = i;
    free(indeg);
    free(ready);
    return;
  }
  uint32_t nready = 0;
  for (uint32_t p = 0; p < n; p++) {
    indeg[p] = x->pred_off[p + 1] - x->pred_off[p];
    if (indeg[p] == 0)
      ready[nready++] = p;
  }
  for (uint32_t k = 0; k < n && nready > 0; k++) {
    /* ready[] is kept ascending: reverse takes the last, shuffle any. */
    uint32_t at = dm_order == ORDER_REVERSE ? nready - 1 : (uint32_t)(rng_next() % nready);
    uint32_t p = ready[at];
    memmove(&ready[at], &ready[at + 1], (nready - at - 1) * sizeof(uint32_t));
    nready--;
    order[k] = p;
    for (uint32_t q = p + 1; q < n; q++)   /* successors come later in position order */
      for (uint32_t j = x->pred_off[q]; j < x->pred_off[q + 1]; j++)
        if (x->preds[j] == p && --indeg[q] == 0) {
          uint32_t i = nready;
          while (i > 0 && ready[i - 1] > q) {
            ready[i] = ready[i - 1];
            i--;
          }
          ready[i] = q;
          nready++;
        }
  }
  free(indeg);
  free(ready);
}
