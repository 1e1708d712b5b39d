/* State shared by the shim's files: on/off, the re-entry guard, per-thread
 * counters, the program's stream captures (see state.h). */
#include "state.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "real.h"

int grape__state = GRAPE_STATE_UNINIT;
int grape__mode = GRAPE_MODE_OBSERVE;
__thread int grape__depth __attribute__((tls_model("initial-exec")));
__thread int grape__no_wait __attribute__((tls_model("initial-exec")));
int grape__captures;
int grape__api_sample_mask = GRAPE_API_SAMPLE - 1;
int grape__api_sample_mask_late = GRAPE_API_SAMPLE_LATE - 1;

/* ---- Per-thread counters ---- */

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

/* A thread exits: its counts join the total and its block is free for the
 * next thread. */
static void counters_thread_exit(void* arg) {
  grape_counters_t* c = arg;
  pthread_mutex_lock(&counters_lock);
  add_counts(&exited, c);
  memset(c, 0, offsetof(grape_counters_t, next));
  c->in_use = 0;
  c->tid = 0;
  c->no_wait = NULL;   /* this thread's variables go with it */
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
  if (c != NULL) {
    c->in_use = 1;
    c->tid = (int)syscall(SYS_gettid);
    c->no_wait = &grape__no_wait;
  }
  pthread_mutex_unlock(&counters_lock);
  if (c == NULL)
    return &shared_fallback;
  pthread_setspecific(counters_key, c);
  grape__counters_tls = c;
  return c;
}

int grape__thread_no_wait(const grape_counters_t* c, int tid) {
  int in = 0;
  pthread_mutex_lock(&counters_lock);
  if (c != NULL && c->tid == tid && c->no_wait != NULL)
    in = __atomic_load_n(c->no_wait, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&counters_lock);
  return in;
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

void grape__disable(const char* why) {
  if (__atomic_exchange_n(&grape__state, GRAPE_STATE_OFF, __ATOMIC_ACQ_REL) == GRAPE_STATE_ON)
    grape_log_warn("%s; passing every call through from now on", why);
}

void grape__state_reset_child(void) {
  /* Only this thread lives on in the child: the other blocks are forgotten. */
  counter_blocks = NULL;
  memset(&exited, 0, sizeof(exited));
  memset(&shared_fallback, 0, sizeof(shared_fallback));
  pthread_mutex_init(&counters_lock, NULL);
  grape__counters_tls = NULL;
  grape__captures = 0;
  grape__depth = 0;
}
