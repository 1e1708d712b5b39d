/* State shared by the shim's files: on/off, the re-entry guard, counters.
 *
 * DESIGN: the per-call test is one load of grape__state plus one thread-local
 * load (grape__depth). State moves UNINIT -> ON | OFF once (init), and ON -> OFF
 * when an internal failure makes the shim fall back to passthrough for the rest
 * of the run. Counters are relaxed atomics: they are read once, at exit. */
#ifndef GRAPE_INTERPOSE_INTERNAL_H
#define GRAPE_INTERPOSE_INTERNAL_H

#include <stdint.h>

#include "hooks.h"
#include "log.h"
#include "options.h"

enum { GRAPE_STATE_UNINIT = 0, GRAPE_STATE_OFF = 1, GRAPE_STATE_ON = 2 };

/* Threads: published (release) by the one thread that runs the init (pthread_once), set OFF
 * (acq_rel exchange) at exit or failure; every hook loads it (relaxed: OFF only passes through). */
extern int grape__state;
/* Threads: written once by the init thread before grape__state's release store, read plainly
 * by hooks only after grape__init (pthread_once) returned: ordered, never a race. */
extern int grape__mode;   /* GRAPE_MODE_*, valid once state != UNINIT */
/* Thread-local: the thread's own re-entry depth; no other thread touches it. */
extern __thread int grape__depth __attribute__((tls_model("initial-exec")));

/* Reads the options and sets grape__state. Touches libc only: never CUDA.
 * Safe to call from any thread, any number of times. @return the state. */
__attribute__((cold, noinline)) int grape__init(void);

/* Drops to passthrough for the rest of the run, logging why once. */
void grape__disable(const char* why);

/* True when a hook should do its work: the shim is on and this thread is not
 * already inside a hook (the runtime calling the driver from inside a wrapper). */
static inline __attribute__((always_inline)) int grape__active(void) {
  int s = __atomic_load_n(&grape__state, __ATOMIC_RELAXED);
  if (__builtin_expect(s == GRAPE_STATE_UNINIT, 0))
    s = grape__init();
  return s == GRAPE_STATE_ON && grape__depth == 0;
}

/* Runs expr with the re-entry guard raised; saves and restores the previous depth. */
#define GRAPE_NO_REENTRY(expr)          \
  do {                                  \
    int saved_depth_ = grape__depth;    \
    grape__depth = saved_depth_ + 1;    \
    expr;                               \
    grape__depth = saved_depth_;        \
  } while (0)

/* Counters of one thread. Only that thread writes them (relaxed stores, no
 * locked instruction, no shared cache line); the exit report adds up every
 * thread's, and a thread's counts move to a common total when it exits. */
typedef struct grape_counters_s {
  long launches[GRAPE_ROUTE_COUNT];   /* kernel launches by route */
  long api_calls[GRAPE_HOOK_COUNT];   /* calls seen per hooked symbol (active only) */
  long param_unknown;                 /* launches whose parameter layout was unknown */
  long captured;                      /* launches into the program's own stream capture */
  long submissions;                   /* the program's launches, memsets and copies that
                                         reached the driver as they came */
  long api_seen[GRAPE_HOOK_COUNT];    /* calls through a generated entry, launches included */
  long api_timed[GRAPE_HOOK_COUNT];   /* of those, timed (one in GRAPE_API_SAMPLE) */
  long api_ns[GRAPE_HOOK_COUNT];      /* host ns of the timed calls, summed */
  /* Above: sums, added up by position. Below: merged by min and max. */
  struct grape_counters_s* next;      /* every block, in use or free */
  int in_use;
  long api_min_ns[GRAPE_HOOK_COUNT];  /* the shortest and longest timed call; */
  long api_max_ns[GRAPE_HOOK_COUNT];  /* valid where api_timed > 0 */
} grape_counters_t;

/* Thread-local: the thread's own counters block (the block list itself is under a lock). */
extern __thread grape_counters_t* grape__counters_tls __attribute__((tls_model("initial-exec")));
grape_counters_t* grape__counters_slow(void);

static inline __attribute__((always_inline)) grape_counters_t* grape__counters_mine(void) {
  grape_counters_t* c = grape__counters_tls;
  return __builtin_expect(c != NULL, 1) ? c : grape__counters_slow();
}

static inline __attribute__((always_inline)) void grape__bump(long* c) {
  __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* Adds one to this thread's counter `field` (e.g. launches[route]). */
#define GRAPE_COUNT(field) grape__bump(&grape__counters_mine()->field)

/* ---- Host time per API call (the report's "api_times") ----
 * One call in GRAPE_API_SAMPLE of each hooked symbol, per thread, is timed
 * around the whole hook (the shim's own work included, as the program sees
 * it) on the run's clock: the simulated host clock on the sim, else
 * CLOCK_MONOTONIC through the vDSO (no syscall). The other calls pay a
 * counter and a branch. Every call is timed instead, as nsys does, when the
 * user asks for statistics (GRAPE_API_TIMES=every, which `grape run --stats`
 * sets) or a timeline (GRAPE_TIMELINE): grape__api_sample_mask is then 0. Which clock the run has is found once the driver is
 * loaded, by the first timed call after that (grape__api_clock_ready):
 * calls before it are counted, not timed, so that wall and simulated
 * nanoseconds never mix. */
#define GRAPE_API_SAMPLE 16
/* A call is timed when its number & this is 0: GRAPE_API_SAMPLE - 1, or 0
 * (every call). Set once at init, before any hook runs. */
extern int grape__api_sample_mask;
/* Threads: stored once (release, under a mutex) by the thread that finds the clock, loaded
 * (acquire) by a sampled call; one that misses the store takes the mutex and sees it. */
extern int grape__api_clock_on;
uint64_t grape__clock_ns(void);
/* Finds the run's clock when the driver is loaded (any thread).
 * @return 1 when it is known. */
__attribute__((cold, noinline)) int grape__api_clock_ready(void);
/* A timed call of row h took t1 - t0 ns: into this thread's counters. */
void grape__api_timed(grape_counters_t* c, int h, uint64_t t0);

/* Counts a call of row h. @return 1 when the call goes out of line
 * (grape__api_begin): one to time, or the thread's first (not counted yet).
 * No call on this path: the hook around it stays a jump without a frame. */
static inline __attribute__((always_inline)) int grape__api_sample(int h) {
  grape_counters_t* c = grape__counters_tls;
  if (__builtin_expect(c == NULL, 0))
    return 1;
  long n = __atomic_load_n(&c->api_seen[h], __ATOMIC_RELAXED);
  __atomic_store_n(&c->api_seen[h], n + 1, __ATOMIC_RELAXED);
  return (n & __atomic_load_n(&grape__api_sample_mask, __ATOMIC_RELAXED)) == 0;
}

/* The out-of-line start of a call grape__api_sample sent here: counts a
 * thread's first call, and starts the clock (*t0) when the call is to be
 * timed and the run's clock is known. @return 1 when timed. */
__attribute__((cold, noinline)) int grape__api_begin(int h, uint64_t* t0);

/* Every thread's counters added up into out (the report). */
void grape__counters_sum(grape_counters_t* out);

/* Stream captures the program has begun and not ended (all threads). While it
 * is non-zero, each launch asks the driver whether its stream is capturing. */
/* Threads: counted with atomic add/CAS by threads that begin or end a capture, loaded (relaxed)
 * by every launch: a capture racing a launch on another thread is unordered by the program too. */
extern int grape__captures;

/* Whether stream (as a launch names it) is being captured by the program: 1
 * (its work is then neither counted as launches nor recorded), 0, or -1 when
 * the driver answers with an error (the legacy stream while a blocking stream
 * captures): work that is then neither held nor taken as captured. */
int grape__stream_capturing(const void* stream, int ptds);

/* Resets all state for a fork child (called from the atfork handler). */
void grape__reset_child(void);

#endif
