/* Life cycle of the shim: init, passthrough fallback, per-thread counters,
 * fork, exit (report and trace).
 *
 * DESIGN: init only reads options and sets up logging: it never touches CUDA
 * (a program that never uses CUDA must run unaffected, and CUDA may not be
 * initialised from a constructor). It runs from the constructor, or earlier
 * from the first hook if another library's constructor calls CUDA first. At
 * exit, the destructor ends every open region and writes the trace and the
 * report (interrupt.c writes them instead when a signal ends the process). A fork child starts clean: counters, regions, paths, the function
 * table, the image registry and the allocation map are forgotten (not freed:
 * another thread of the parent may have held one of their locks at the
 * fork). */
#include "internal.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "bind.h"
#include "funcattrs.h"
#include "funcinfo.h"
#include "graph.h"
#include "images.h"
#include "interrupt.h"
#include "outfile.h"
#include "real.h"
#include "report.h"
#include "streams.h"
#include "capture.h"
#include "nvtx.h"
#include "timeline.h"
#include "trace.h"
#include "grape/grape.h"

int grape__state = GRAPE_STATE_UNINIT;
int grape__mode = GRAPE_MODE_OBSERVE;
__thread int grape__depth __attribute__((tls_model("initial-exec")));
int grape__captures;
int grape__api_sample_mask = GRAPE_API_SAMPLE - 1;

/* ---- Per-thread counters (internal.h) ---- */

__thread grape_counters_t* grape__counters_tls __attribute__((tls_model("initial-exec")));
static grape_counters_t* counter_blocks;       /* every block made (never freed) */
static grape_counters_t exited;                /* the counts of threads that exited */
static grape_counters_t shared_fallback;       /* when a block cannot be allocated */
static pthread_mutex_t counters_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t counters_key;
static pthread_once_t counters_once = PTHREAD_ONCE_INIT;

static void add_counts(grape_counters_t* to, const grape_counters_t* from) {
  /* The extremes first: they need to know whether `to` had a timed call. */
  for (int h = 0; h < GRAPE_HOOK_COUNT; h++) {
    if (__atomic_load_n(&from->api_timed[h], __ATOMIC_RELAXED) == 0)
      continue;
    long lo = __atomic_load_n(&from->api_min_ns[h], __ATOMIC_RELAXED);
    long hi = __atomic_load_n(&from->api_max_ns[h], __ATOMIC_RELAXED);
    if (to->api_timed[h] == 0 || lo < to->api_min_ns[h])
      to->api_min_ns[h] = lo;
    if (to->api_timed[h] == 0 || hi > to->api_max_ns[h])
      to->api_max_ns[h] = hi;
  }
  const long* f = (const long*)from;
  long* t = (long*)to;
  for (size_t i = 0; i < offsetof(grape_counters_t, next) / sizeof(long); i++)
    t[i] += __atomic_load_n(&f[i], __ATOMIC_RELAXED);
}

int grape__api_begin(int h, uint64_t* t0) {
  if (grape__counters_tls == NULL) {   /* the thread's first call: counted here */
    grape_counters_t* c = grape__counters_mine();
    long n = __atomic_load_n(&c->api_seen[h], __ATOMIC_RELAXED);
    __atomic_store_n(&c->api_seen[h], n + 1, __ATOMIC_RELAXED);
    if (n & __atomic_load_n(&grape__api_sample_mask, __ATOMIC_RELAXED))
      return 0;
  }
  if (__atomic_load_n(&grape__capture_closed, __ATOMIC_RELAXED))
    return 0;   /* outside GRAPE_CAPTURE's ranges: counted, not timed */
  if (!__atomic_load_n(&grape__api_clock_on, __ATOMIC_ACQUIRE) && !grape__api_clock_ready())
    return 0;
  *t0 = grape__clock_ns();
  return 1;
}

void grape__api_timed(grape_counters_t* c, int h, uint64_t t0) {
  uint64_t t1 = grape__clock_ns();
  long d = t1 >= t0 ? (long)(t1 - t0) : 0;
  long n = __atomic_load_n(&c->api_timed[h], __ATOMIC_RELAXED);
  if (n == 0 || d < __atomic_load_n(&c->api_min_ns[h], __ATOMIC_RELAXED))
    __atomic_store_n(&c->api_min_ns[h], d, __ATOMIC_RELAXED);
  if (n == 0 || d > __atomic_load_n(&c->api_max_ns[h], __ATOMIC_RELAXED))
    __atomic_store_n(&c->api_max_ns[h], d, __ATOMIC_RELAXED);
  __atomic_store_n(&c->api_ns[h], __atomic_load_n(&c->api_ns[h], __ATOMIC_RELAXED) + d,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&c->api_timed[h], n + 1, __ATOMIC_RELAXED);
}

/* A thread exits: its counts join the total and its block is free for the
 * next thread. */
static void counters_thread_exit(void* arg) {
  grape_counters_t* c = arg;
  pthread_mutex_lock(&counters_lock);
  add_counts(&exited, c);
  memset(c, 0, offsetof(grape_counters_t, next));
  c->in_use = 0;
  pthread_mutex_unlock(&counters_lock);
  grape__counters_tls = NULL;
}

static void counters_key_make(void) {
  pthread_key_create(&counters_key, counters_thread_exit);
}

grape_counters_t* grape__counters_slow(void) {
  pthread_once(&counters_once, counters_key_make);
  pthread_mutex_lock(&counters_lock);
  grape_counters_t* c = counter_blocks;
  while (c != NULL && c->in_use)
    c = c->next;
  if (c == NULL && (c = calloc(1, sizeof(*c))) != NULL) {
    c->next = counter_blocks;
    counter_blocks = c;
  }
  if (c != NULL)
    c->in_use = 1;
  pthread_mutex_unlock(&counters_lock);
  grape__interrupt_arm();   /* the first CUDA call: from now on there is work to save */
  if (c == NULL)
    return &shared_fallback;
  pthread_setspecific(counters_key, c);
  grape__counters_tls = c;
  return c;
}

void grape__counters_sum(grape_counters_t* out) {
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&counters_lock);
  add_counts(out, &exited);
  add_counts(out, &shared_fallback);
  for (grape_counters_t* c = counter_blocks; c != NULL; c = c->next)
    if (c->in_use)
      add_counts(out, c);
  pthread_mutex_unlock(&counters_lock);
}

int grape__stream_capturing(const void* stream, int ptds) {
  typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus*);
  static is_capturing_fn fn;
  if (fn == NULL) {
    fn = (is_capturing_fn)grape__real_driver("cuStreamIsCapturing");
    if (fn == NULL)
      return 0;
  }
  CUstream s = (CUstream)stream;
  if (s == NULL && ptds)
    s = CU_STREAM_PER_THREAD;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult rc;
  GRAPE_NO_REENTRY(rc = fn(s, &st));
  /* An error is an answer too: the legacy stream while a blocking stream
   * captures (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), where work would join or
   * break the capture. Such work is never held: the driver decides. */
  if (rc != CUDA_SUCCESS)
    return -1;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void) {
  grape__reset_child();
  grape__interrupt_reset_child();
  grape__report_mark_forked();
}

static void register_atfork(void) {
  pthread_atfork(NULL, NULL, atfork_child);
}

static void do_init(void) {
  grape__options_load();
  int mode = (int)grape__option_get(grape_option_mode);
  grape__mode = mode;
  pthread_once(&atfork_once, register_atfork);
  if (grape__log_level() >= GRAPE_LOG_INFO) {
    grape_log_info("libgrape %u.%u.%u loaded", grape_version() / 10000, grape_version() / 100 % 100,
                   grape_version() % 100);
    grape__options_print();
  }
  /* Outputs that cannot be written are said now, not at exit. */
  grape__log_open();
  grape__outfile_check(grape_option_report);
  grape__outfile_check(grape_option_trace);
  grape__capture_init();
  if (mode != GRAPE_MODE_OFF)
    grape__timeline_init();
  /* Statistics or a timeline asked for: every API call timed, not a sample. */
  if (grape__option_get(grape_option_api_times) == 1 || grape__timeline_on)
    __atomic_store_n(&grape__api_sample_mask, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&grape__state, mode == GRAPE_MODE_OFF ? GRAPE_STATE_OFF : GRAPE_STATE_ON,
                   __ATOMIC_RELEASE);
}

int grape__init(void) {
  pthread_once(&init_once, do_init);
  return __atomic_load_n(&grape__state, __ATOMIC_ACQUIRE);
}

void grape__disable(const char* why) {
  if (__atomic_exchange_n(&grape__state, GRAPE_STATE_OFF, __ATOMIC_ACQ_REL) == GRAPE_STATE_ON)
    grape_log_warn("%s; passing every call through from now on", why);
}

void grape__reset_child(void) {
  /* Only this thread lives on in the child: the other blocks are forgotten. */
  counter_blocks = NULL;
  memset(&exited, 0, sizeof(exited));
  memset(&shared_fallback, 0, sizeof(shared_fallback));
  pthread_mutex_init(&counters_lock, NULL);
  grape__counters_tls = NULL;
  grape__captures = 0;
  grape__graph_reset_child();
  grape__timeline_reset_child();
  grape__nvtx_reset_child();
  grape__func_attrs_reset();
  grape__streams_reset(0);
  grape__func_reset(0);
  grape__images_reset(0);
  grape__alloc_reset(0);
  grape__log_reset();
  grape__depth = 0;
}

__attribute__((constructor)) static void grape_ctor(void) {
  grape__bind_init();
  grape__init();
}

__attribute__((destructor)) static void grape_dtor(void) {
  if (grape__state == GRAPE_STATE_UNINIT)
    return;
  grape__depth++;   /* CUDA libraries tearing down must not re-enter the recorder */
  grape__flush_all();
  grape__outputs_write();
}

