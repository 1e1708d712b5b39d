/* The full timeline (see timeline.h for the design). */
#include "timeline.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_types.h"
#include "capture.h"
#include "funcinfo.h"
#include "grape/simcu_private.h"
#include "state.h"
#include "log.h"
#include "options.h"
#include "real.h"
#include "streams.h"

int grape__timeline_on;

/* One record and what resolves it at exit. */
typedef struct slot_s {
  grape_trace_tl_op_t op;         /* kind 0: claimed, not (yet) recorded */
  const grape_func_t* f;          /* a kernel's function: its id is read at exit */
  CUevent ev[2];                  /* start and end events, NULL when none */
} slot_t;

static slot_t* slots;
static uint64_t cap, claimed, dropped;
static int closed;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t base_lock = PTHREAD_MUTEX_INITIALIZER;

/* The clock: the simulated device's host clock (per thread, in the time the
 * sim's events report), else CLOCK_MONOTONIC. */
static uint64_t (*sim_now)(void);
static uint64_t origin;

/* The base event: the device clock is read relative to it. */
static CUevent base_ev;
static uint64_t base_host;        /* host clock once base_ev had completed */

static struct {
  CUresult (*create)(CUevent*, unsigned);
  CUresult (*record)(CUevent, CUstream);
  CUresult (*sync)(CUevent);
  CUresult (*elapsed)(float*, CUevent, CUevent);
  CUresult (*destroy)(CUevent);
} ev_api;

/* The capture window, ns after the first call the timeline saw (0: none). */
static uint64_t delay_ns, duration_ns;

/* Held ops numbered per stream: how many were held, how many submitted. A
 * submission runs the oldest held ops of its stream, in order. */
typedef struct seqs_s {
  uint64_t key, held, submitted;
} seqs_t;
#define SEQ_STREAMS 4096
static seqs_t seqs[SEQ_STREAMS];
static pthread_mutex_t seq_lock = PTHREAD_MUTEX_INITIALIZER;

/* The stream's counter (held or submitted) before adding n, or
 * GRAPE_TRACE_TL_UNKNOWN when the table is full. */
static uint64_t seq_take(uint64_t key, int submitted, uint64_t n) {
  uint64_t v = GRAPE_TRACE_TL_UNKNOWN;
  pthread_mutex_lock(&seq_lock);
  for (size_t i = 0, h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 52); i < SEQ_STREAMS; i++) {
    seqs_t* e = &seqs[(h + i) % SEQ_STREAMS];
    if (e->key != key && e->key != 0)
      continue;
    e->key = key;
    uint64_t* c = submitted ? &e->submitted : &e->held;
    v = *c;
    *c += n;
    break;
  }
  pthread_mutex_unlock(&seq_lock);
  return v;
}

static __thread uint32_t thread_no __attribute__((tls_model("initial-exec")));
static uint32_t threads;

static uint64_t now(void) {
  if (sim_now != NULL)
    return sim_now();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t since_origin(uint64_t t) {
  return t > origin ? t - origin : 0;
}

/* Threads: each stored once (release) by the part that registers it, loaded
 * (acquire) by any thread that records or closes. */
static uint32_t (*range_source)(void);
static void (*before_close)(void);

void grape__timeline_range_source(uint32_t (*innermost)(void)) {
  __atomic_store_n(&range_source, innermost, __ATOMIC_RELEASE);
}

void grape__timeline_before_close(void (*flush)(void)) {
  __atomic_store_n(&before_close, flush, __ATOMIC_RELEASE);
}

void grape__timeline_init(void) {
  if (!grape__option_get(grape_option_timeline))
    return;
  const char* trace = grape__option_str(grape_option_trace);
  if (trace == NULL || *trace == '\0') {
    grape_log_warn("GRAPE_TIMELINE=1 is written into the trace: set GRAPE_TRACE too; no timeline");
    return;
  }
  long mb = grape__option_get(grape_option_timeline_max_mb);
  cap = ((uint64_t)mb << 20) / 108;   /* 108 bytes a record in the file (TLIN and TLAR) */
  delay_ns = (uint64_t)grape__option_get(grape_option_timeline_delay_ms) * 1000000u;
  duration_ns = (uint64_t)grape__option_get(grape_option_timeline_duration_ms) * 1000000u;
  if (cap > UINT32_MAX)
    cap = UINT32_MAX;
  __atomic_store_n(&grape__timeline_on, cap > 0, __ATOMIC_RELEASE);
}

/* Once, at the first record: the clock, the event functions, the array, and
 * the exit hook (registered after the CUDA runtime's, so it runs before the
 * runtime tears the device down). */
static void setup(void) {
  typedef CUresult (*get_table_t)(const void**, const CUuuid*);
  get_table_t get_table = (get_table_t)grape__real_driver("cuGetExportTable");
  static const CUuuid id = {SIMCU_PRIVATE_UUID};
  const void* table = NULL;
  GRAPE_NO_REENTRY({
    if (get_table != NULL && get_table(&table, &id) == CUDA_SUCCESS && table != NULL) {
      const simcu_private_t* t = table;
      if (t->size >= offsetof(simcu_private_t, host_ns) + sizeof(t->host_ns))
        sim_now = t->host_ns;
    }
  });
  ev_api.create = (CUresult(*)(CUevent*, unsigned))grape__real_driver("cuEventCreate");
  ev_api.record = (CUresult(*)(CUevent, CUstream))grape__real_driver("cuEventRecord");
  ev_api.sync = (CUresult(*)(CUevent))grape__real_driver("cuEventSynchronize");
  ev_api.elapsed = (CUresult(*)(float*, CUevent, CUevent))grape__real_driver("cuEventElapsedTime");
  ev_api.destroy = (CUresult(*)(CUevent))grape__real_driver("cuEventDestroy_v2");
  if (!ev_api.create || !ev_api.record || !ev_api.sync || !ev_api.elapsed || !ev_api.destroy) {
    grape_log_warn("GRAPE_TIMELINE: the driver lacks the event functions; host times only");
    ev_api.create = NULL;
  }
  origin = now();
  slots = calloc(cap, sizeof(*slots));   /* pages are touched only as records are written */
  if (slots == NULL) {
    grape_log_warn("GRAPE_TIMELINE: out of memory for %llu records; no timeline",
                   (unsigned long long)cap);
    __atomic_store_n(&grape__timeline_on, 0, __ATOMIC_RELAXED);
    return;
  }
  atexit(grape__timeline_close);
}

void grape__tl_start(grape_tl_call_t* c, int api) {
  c->slot = NULL;
  c->on = 1;
  pthread_once(&setup_once, setup);
  if (slots == NULL || __atomic_load_n(&closed, __ATOMIC_RELAXED) ||
      __atomic_load_n(&grape__capture_closed, __ATOMIC_RELAXED))
    return;
  uint64_t t = since_origin(now());
  if (t < delay_ns || (duration_ns > 0 && t - delay_ns >= duration_ns))
    return;   /* outside the capture window */
  uint64_t i = __atomic_fetch_add(&claimed, 1, __ATOMIC_RELAXED);
  if (i >= cap) {
    __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  if (thread_no == 0)
    thread_no = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
  slot_t* s = &slots[i];
  s->op.thread = thread_no;
  s->op.func = GRAPE_TRACE_NONE;
  s->op.host_start = t;
  s->op.dev_start = s->op.dev_end = GRAPE_TRACE_TL_UNKNOWN;
  uint32_t (*range_of)(void) = __atomic_load_n(&range_source, __ATOMIC_ACQUIRE);
  s->op.range = range_of != NULL ? range_of() : 0;
  s->op.api = (uint32_t)(api + 1);   /* a hook row until the trace names it (trace.c) */
  c->slot = s;
}

int grape__tl_now(uint64_t* t, uint32_t* thread, int* rec_ok) {
  pthread_once(&setup_once, setup);
  *rec_ok = 0;
  if (slots == NULL)
    return 0;
  *t = since_origin(now());
  if (thread_no == 0)
    thread_no = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
  *thread = thread_no;
  *rec_ok = !__atomic_load_n(&closed, __ATOMIC_RELAXED) && *t >= delay_ns &&
            !(duration_ns > 0 && *t - delay_ns >= duration_ns);
  return 1;
}

/* The driver's handle for a stream as a call names it. */
static CUstream handle_of(const void* stream, int ptds) {
  return stream == NULL && ptds ? CU_STREAM_PER_THREAD : (CUstream)stream;
}

/* The base event, recorded and waited for on the first stream that runs
 * timed work: its completion is the moment the host clock reads base_host. */
static int base_ready(CUstream h) {
  if (__atomic_load_n(&base_ev, __ATOMIC_ACQUIRE) != NULL)
    return 1;
  pthread_mutex_lock(&base_lock);
  if (base_ev == NULL) {
    CUevent e = NULL;
    GRAPE_NO_REENTRY({
      if (ev_api.create(&e, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
          (ev_api.record(e, h) != CUDA_SUCCESS || ev_api.sync(e) != CUDA_SUCCESS)) {
        ev_api.destroy(e);
        e = NULL;
      }
    });
    if (e != NULL) {
      base_host = now();
      __atomic_store_n(&base_ev, e, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&base_lock);
  return base_ev != NULL;
}

static CUevent record_event(CUstream h) {
  CUevent e = NULL;
  GRAPE_NO_REENTRY({
    if (ev_api.create(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      e = NULL;
    else if (ev_api.record(e, h) != CUDA_SUCCESS) {
      ev_api.destroy(e);
      e = NULL;
    }
  });
  return e;
}

void grape__tl_dev_begin(grape_tl_call_t* c, const void* stream, int ptds) {
  slot_t* s = c->slot;
  CUstream h = handle_of(stream, ptds);
  if (s == NULL || ev_api.create == NULL || !base_ready(h))
    return;
  s->ev[0] = record_event(h);
}

/* Ends the record: the end event after the device work, the host end time. */
static void finish(grape_tl_call_t* c, uint32_t kind, uint32_t how, uint64_t stream_key,
                   const void* stream, int ptds, uint64_t what, int ok) {
  slot_t* s = c->slot;
  uint64_t seq = 0;
  if (ok && how != GRAPE_TRACE_TL_EAGER)   /* numbered even when not recorded */
    seq = seq_take(stream_key, how == GRAPE_TRACE_TL_SUBMIT,
                   kind == GRAPE_TRACE_TL_GRAPH ? what : 1);
  if (s == NULL)
    return;
  s->op.seq = seq;
  if (!ok) {   /* a failed call: no device work; its slot stays empty */
    if (s->ev[0] != NULL)
      GRAPE_NO_REENTRY(ev_api.destroy(s->ev[0]));
    s->ev[0] = NULL;
    return;
  }
  if (s->ev[0] != NULL && (s->ev[1] = record_event(handle_of(stream, ptds))) == NULL) {
    GRAPE_NO_REENTRY(ev_api.destroy(s->ev[0]));
    s->ev[0] = NULL;
  }
  s->op.host_end = since_origin(now());
  if (s->op.host_end < s->op.host_start)   /* another thread's simulated clock */
    s->op.host_end = s->op.host_start;
  s->op.stream = stream_key;
  s->op.what = what;
  s->op.how = how;
  __atomic_store_n(&s->op.kind, kind, __ATOMIC_RELEASE);
}

void grape__tl_launch_end(grape_tl_call_t* c, const grape_launch_t* l, int ok, int held) {
  slot_t* s = c->slot;
  const grape_func_t* f = s != NULL ? grape__func_get(l->fn, (grape_handle_kind_t)l->kind) : NULL;
  if (s != NULL) {
    s->f = f;
    memcpy(s->op.grid, l->grid, sizeof(s->op.grid));
    memcpy(s->op.block, l->block, sizeof(s->op.block));
    s->op.shmem = l->shmem;
  }
  finish(c, GRAPE_TRACE_OP_KERNEL, held ? GRAPE_TRACE_TL_HELD : GRAPE_TRACE_TL_EAGER,
         grape__stream_key(l->stream, l->ptds), l->stream, l->ptds, f ? f->id : 0, ok);
}

void grape__tl_memop_end(grape_tl_call_t* c, const grape_memop_t* m, int ok, int held) {
  uint64_t bytes = m->kind == GRAPE_OP_MEMSET ? m->p.set.count * m->p.set.esize : m->p.cpy.bytes;
  if (c->slot != NULL && m->kind != GRAPE_OP_MEMSET)   /* a region's copies end in device or pinned memory */
    ((slot_t*)c->slot)->op.dir = m->flags & GRAPE_SIG_TO_HOST ? GRAPE_TRACE_DIR_DTOH : GRAPE_TRACE_DIR_DTOD;
  finish(c, m->kind == GRAPE_OP_MEMSET ? GRAPE_TRACE_OP_MEMSET : GRAPE_TRACE_OP_MEMCPY,
         held ? GRAPE_TRACE_TL_HELD : GRAPE_TRACE_TL_EAGER, grape__stream_key(m->stream, m->ptds),
         m->stream, m->ptds, bytes, ok);
}

void grape__tl_copy_end(grape_tl_call_t* c, uint32_t kind, const void* stream, int ptds,
                        uint64_t bytes, uint32_t dir, int ok) {
  if (c->slot != NULL && kind == GRAPE_TRACE_OP_MEMCPY)
    ((slot_t*)c->slot)->op.dir = dir;
  finish(c, kind, GRAPE_TRACE_TL_EAGER, grape__stream_key(stream, ptds), stream,
         ptds, bytes, ok);
}

void grape__tl_submit_end(grape_tl_call_t* c, uint32_t kind, uint64_t what, const void* stream,
                          int ok) {
  if (c->slot != NULL && kind == GRAPE_TRACE_OP_MEMCPY)   /* a region's copies are device to device */
    ((slot_t*)c->slot)->op.dir = GRAPE_TRACE_DIR_DTOD;
  finish(c, kind, GRAPE_TRACE_TL_SUBMIT, grape__stream_key(stream, 0), stream, 0, what, ok);
}

/* Device time of e on the host's clock, after the origin; or UNKNOWN. */
static uint64_t dev_time(CUevent e) {
  float ms;
  if (e == NULL || ev_api.elapsed(&ms, base_ev, e) != CUDA_SUCCESS || !(ms >= 0))
    return GRAPE_TRACE_TL_UNKNOWN;
  return since_origin(base_host + (uint64_t)((double)ms * 1e6 + 0.5));
}

void grape__timeline_close(void) {
  if (slots == NULL || __atomic_load_n(&closed, __ATOMIC_ACQUIRE))
    return;
  void (*flush)(void) = __atomic_load_n(&before_close, __ATOMIC_ACQUIRE);
  if (flush != NULL)
    flush();   /* held work is submitted (and recorded) first */
  if (__atomic_exchange_n(&closed, 1, __ATOMIC_ACQ_REL))
    return;
  uint64_t n = claimed < cap ? claimed : cap;
  grape__depth++;
  for (uint64_t i = 0; i < n; i++) {
    slot_t* s = &slots[i];
    if (s->ev[0] == NULL)
      continue;
    if (__atomic_load_n(&s->op.kind, __ATOMIC_ACQUIRE) != 0 && s->ev[1] != NULL &&
        ev_api.sync(s->ev[1]) == CUDA_SUCCESS) {
      /* Start from the base (float ms: about 60 ns apart after a second), the
       * duration from the start event (exact to the float's precision). */
      float d;
      uint64_t t0 = dev_time(s->ev[0]);
      if (t0 != GRAPE_TRACE_TL_UNKNOWN && ev_api.elapsed(&d, s->ev[0], s->ev[1]) == CUDA_SUCCESS &&
          d >= 0) {
        s->op.dev_start = t0;
        s->op.dev_end = t0 + (uint64_t)((double)d * 1e6 + 0.5);
      }
    }
    ev_api.destroy(s->ev[0]);
    if (s->ev[1] != NULL)
      ev_api.destroy(s->ev[1]);
    s->ev[0] = s->ev[1] = NULL;
  }
  if (base_ev != NULL)
    ev_api.destroy(base_ev);
  base_ev = NULL;
  grape__depth--;
}

void grape__timeline_meta(uint64_t* drop, const char** clock, uint64_t* org) {
  *drop = __atomic_load_n(&dropped, __ATOMIC_RELAXED);
  *clock = sim_now != NULL ? "simulated" : "monotonic";
  *org = origin;
}

void grape__timeline_each(grape_tl_each_fn* fn, void* arg) {
  uint64_t n = slots == NULL ? 0 : claimed < cap ? claimed : cap;
  for (uint64_t i = 0; i < n; i++)
    if (__atomic_load_n(&slots[i].op.kind, __ATOMIC_ACQUIRE) != 0)
      fn(&slots[i].op, slots[i].f, arg);
}

int grape__timeline_memops(grape_tl_mstat_t out[2][GRAPE_TRACE_DIR_HTOH + 1]) {
  memset(out, 0, 2 * sizeof(*out));
  if (slots == NULL)
    return 0;
  grape__timeline_close();
  uint64_t n = claimed < cap ? claimed : cap;
  for (uint64_t i = 0; i < n; i++) {
    const grape_trace_tl_op_t* op = &slots[i].op;
    uint32_t kind = __atomic_load_n(&op->kind, __ATOMIC_ACQUIRE);
    if ((kind != GRAPE_TRACE_OP_MEMCPY && kind != GRAPE_TRACE_OP_MEMSET) ||
        op->dev_start == GRAPE_TRACE_TL_UNKNOWN || op->how == GRAPE_TRACE_TL_HELD)
      continue;
    grape_tl_mstat_t* m = &out[kind == GRAPE_TRACE_OP_MEMSET][kind == GRAPE_TRACE_OP_MEMSET ? 0 : op->dir];
    m->count++;
    m->bytes += op->what;
    m->ns += op->dev_end - op->dev_start;
  }
  return 1;
}

void grape__timeline_reset_child(void) {
  __atomic_store_n(&grape__timeline_on, 0, __ATOMIC_RELAXED);
  pthread_mutex_init(&seq_lock, NULL);
  slots = NULL;   /* the parent's records stay the parent's */
}
