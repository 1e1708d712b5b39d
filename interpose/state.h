/* State shared by the shim's files: on/off, the re-entry guard, counters.
 * Who may race on each is said beside it.
 *
 * DESIGN: the per-call test is one load of grape__state plus one thread-local
 * load (grape__depth); the entry points (shim.h's grape__active) also start
 * the shim on their first call. State moves UNINIT -> ON | OFF once (init), and ON -> OFF
 * when an internal failure makes the shim fall back to passthrough for the rest
 * of the run. Counters are relaxed atomics: they are read once, at exit. */
#ifndef GRAPE_INTERPOSE_STATE_H
#define GRAPE_INTERPOSE_STATE_H

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

/* Drops to passthrough for the rest of the run, logging why once. */
void grape__disable(const char* why);

/* True when the shim is on and this thread is not already inside it. For
 * code that runs only once the shim was started (the entry points call
 * shim.h's grape__active, which starts it). */
static inline __attribute__((always_inline)) int grape__on(void) {
  return __atomic_load_n(&grape__state, __ATOMIC_RELAXED) == GRAPE_STATE_ON && grape__depth == 0;
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
  /* The owning thread's id (0: none, or the block shared when none could be
   * made) and its grape__no_wait (NULL once it exited). Threads: set and
   * cleared under the blocks' lock, which grape__thread_no_wait takes to
   * read them: a block outlives its thread and passes to the next. */
  int tid;
  int* no_wait;
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

/* Thread-local: 1 while the thread is in a driver call that cannot wait for
 * stream work (GRAPE_CALL_NO_WAIT). Threads: stored (relaxed) by its thread,
 * loaded (relaxed) by the graph-mode watchdog through
 * grape__thread_no_wait. */
extern __thread int grape__no_wait __attribute__((tls_model("initial-exec")));

/* Runs expr, a driver call that cannot wait for stream work (an allocation,
 * the launch or memop of an op not held, an instantiation), with the
 * re-entry guard raised and the thread marked as in such a call: the
 * graph-mode watchdog leaves the thread's held work alone meanwhile (graph.c,
 * watchdog_look), so that a call blocked in real time on a driver lock whose
 * owner the OS has descheduled is not taken for a program stuck outside
 * CUDA. Two stores: the thread's counters block publishes where the mark is.
 * A call that may wait on the GPU (a sync, an event's synchronisation, a
 * synchronous copy, a free) uses GRAPE_NO_REENTRY. */
#define GRAPE_CALL_NO_WAIT(expr)                                \
  do {                                                          \
    __atomic_store_n(&grape__no_wait, 1, __ATOMIC_RELAXED);     \
    GRAPE_NO_REENTRY(expr);                                     \
    __atomic_store_n(&grape__no_wait, 0, __ATOMIC_RELAXED);     \
  } while (0)

/* Whether the thread that owns block c, if it is thread tid, is in a driver
 * call that cannot wait for stream work (any thread). */
int grape__thread_no_wait(const grape_counters_t* c, int tid);

/* Adds one to this thread's counter `field` (e.g. launches[route]). */
#define GRAPE_COUNT(field) grape__bump(&grape__counters_mine()->field)

/* One call in GRAPE_API_SAMPLE of each hooked symbol and thread is timed by
 * default (apitimes.h), and one in GRAPE_API_SAMPLE_LATE after its first
 * GRAPE_API_SAMPLE_EARLY calls: a symbol called rarely keeps a sample every
 * 16 calls, a launch called millions of times pays a timed call (~600
 * instructions) once in 256. A call numbered n is timed when n & the mask
 * of its stretch (grape__api_sample_mask, then grape__api_sample_mask_late)
 * is 0; both are 0 when every call is timed. Threads: set once at init,
 * before any hook runs; read by every hook. */
#define GRAPE_API_SAMPLE 16
#define GRAPE_API_SAMPLE_EARLY 1024
#define GRAPE_API_SAMPLE_LATE 256
extern int grape__api_sample_mask;
extern int grape__api_sample_mask_late;

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

/* Forgets the counters and the captures for a fork child (the atfork handler). */
void grape__state_reset_child(void);

#endif
