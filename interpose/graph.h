/* Graph mode's side of the shim: holding ops on known paths, the flush points,
 * and the graph cache behind them.
 *
 * DESIGN: graphcache/ decides (paths, keys, executables, replay); this file
 * gives it the real driver (a function table), the streams (interpose/streams.h)
 * and the moments: an op is held when its stream's region follows a known path
 * (grape_gc_step) and the op is one a graph node can carry; everything that
 * lets the program observe or order stream work flushes first (see the
 * flush functions below, and api.txt for which call flushes what); a watchdog thread flushes what has
 * been held with no new op for GRAPE_FLUSH_US. Held work is submitted with the
 * stream handle and context it was issued under, so any thread can flush it;
 * a per-thread default stream has no handle another thread can use, so its
 * ops are never held. Observe mode uses the same regions and cache with
 * graphs off: nothing is held, every region is accounted.
 *
 * Errors met at flush time (a failed eager submission of a held op) are kept
 * per thread (the watchdog's for everyone) and returned by the next call that
 * reports asynchronous errors: a synchronisation, a query,
 * cudaGetLastError/cudaPeekAtLastError. */
#ifndef GRAPE_INTERPOSE_GRAPH_H
#define GRAPE_INTERPOSE_GRAPH_H

#include <stdint.h>

#include "clock.h"
#include "cuda_types.h"
#include "funcinfo.h"
#include "graphcache/cache.h"
#include "streams.h"

/* The cache (made on first use, from the options). NULL when out of memory. */
grape_gc_t* grape__gc(void);

/* The cache if the program's CUDA work made it, else NULL: for the exit
 * report and trace, which must not load the driver for a program that never
 * used CUDA. */
grape_gc_t* grape__gc_peek(void);

/* Where a stream's region starts holding: the trie root in graph mode for a
 * stream whose ops may be held, else NULL. */
const grape_gc_node_t* grape__hold_start(grape_stream_t* s);

/* Finds a stream's kind and context if not yet known (see graph.c). */
void grape__stream_classify(grape_stream_t* s);

/* True when s's work may be held now: its kind and context are known (found
 * on this thread if need be) and allow it. Asked before a chunk's first held
 * op (s locked). */
int grape__hold_ready_slow(grape_stream_t* s);
static inline __attribute__((always_inline)) int grape__hold_ready(grape_stream_t* s) {
  int kind = __atomic_load_n(&s->kind, __ATOMIC_RELAXED);
  if (__builtin_expect((kind == GRAPE_STREAM_BLOCKING || kind == GRAPE_STREAM_NON_BLOCKING) &&
                           s->ctx != NULL, 1))
    return 1;
  return grape__hold_ready_slow(s);
}

/* ---- The shim's own host time per op, measured ----
 * A thread's first 64 ops it records or holds, then one in 32, have that work timed (graph mode),
 * on the clock replays are timed with (on the sim it sees grape__charge_op):
 * the cache weighs what replays save against it (graphcache/ledger.c). */
extern __thread unsigned grape__shim_tick __attribute__((tls_model("initial-exec")));
extern int grape__timed;
static inline __attribute__((always_inline)) uint64_t grape__shim_time_start(void) {
  /* A thread's first 64 ops, then one in 32: the cost is known early, for
   * the ledger's budget (graphcache/ledger.c). */
  unsigned t = ++grape__shim_tick;
  if ((__builtin_expect((t & 31) != 0, 1) && __builtin_expect(t > 64, 1)) ||
      !__atomic_load_n(&grape__timed, __ATOMIC_RELAXED))
    return 0;
  return grape__clock_ns();
}
void grape__shim_time_end(uint64_t t0);

/* ---- Standing down, and pausing ----
 * When graph mode's replays do not pay for the shim's own work (the cache's
 * ledger), it stands down: grape__pass goes to GRAPE_PASS_PENDING at the
 * region end that found it, and the calling thread's next launch or memop
 * (no lock held there) submits everything held and sets GRAPE_PASS_ON; from
 * then on launches and memops are only counted. A pause (the ledger's
 * budget: what graph mode cost so far is past GRAPE_BUDGET_PCT of the run)
 * goes the same way through GRAPE_PASS_PAUSING to GRAPE_PASS_PAUSED, and is
 * undone: one passed op in 64 of each thread asks the cache whether it may
 * end (grape__pause_end), and streams hold again from their next regions.
 * Threads: PENDING and PAUSING stored by the thread whose region end found
 * the cache's answer, ON and PAUSED by the one thread that stands down or
 * pauses, OFF again by the one that ends a pause (those three under
 * graph.c's cache lock); loaded (relaxed) by every launch and memop in
 * graph mode. */
enum { GRAPE_PASS_OFF = 0, GRAPE_PASS_PENDING, GRAPE_PASS_PAUSING, GRAPE_PASS_ON, GRAPE_PASS_PAUSED };
extern int grape__pass;
void grape__stand_down(void);
void grape__pause(void);
void grape__pause_end(void);
extern __thread unsigned grape__pause_tick __attribute__((tls_model("initial-exec")));
extern int grape__holding;   /* (below) */
/* True when the op may skip the shim's recording: standing down or a pause
 * is done and nothing is held anywhere (a hold that raced it is submitted in
 * order first, the normal way). */
static inline __attribute__((always_inline)) int grape__passed(void) {
  return __builtin_expect(__atomic_load_n(&grape__pass, __ATOMIC_RELAXED) >= GRAPE_PASS_ON, 0) &&
         __atomic_load_n(&grape__holding, __ATOMIC_RELAXED) == 0;
}
/* As grape__passed, doing a pending stand-down or pause first, or asking
 * now and then whether a pause may end (call with no lock held). */
static inline __attribute__((always_inline)) int grape__passing(void) {
  int p = __atomic_load_n(&grape__pass, __ATOMIC_RELAXED);
  if (__builtin_expect(p == GRAPE_PASS_OFF, 1))
    return 0;
  if (p == GRAPE_PASS_PENDING)
    grape__stand_down();
  else if (p == GRAPE_PASS_PAUSING)
    grape__pause();
  else if (p == GRAPE_PASS_PAUSED && (++grape__pause_tick & 63) == 0)
    grape__pause_end();
  return grape__passed();
}
const char* grape__stood_down(void);

/* ---- What an eager launch costs the host, measured ----
 * A thread's first 64 eager launches, then one in sixteen, are timed in graph mode (graphcache/costs.c
 * then weighs replays against the measured cost, not a configured one). */
extern __thread unsigned grape__launch_tick __attribute__((tls_model("initial-exec")));
extern int grape__timed;
extern int grape__launch_watch;   /* launches still to time since a build was queued */
/* Threads: written by the thread that queues a build (when the builds queued
 * so far are estimated done, by the clock) and cleared by the launch that
 * finds the clock past it; read by every launch. Nonzero: every launch is
 * timed. */
extern uint64_t grape__build_until;
uint64_t grape__launch_time_watched(void);
static inline __attribute__((always_inline)) uint64_t grape__launch_time_start(void) {
  unsigned t = grape__launch_tick++;
  /* A thread's first 64, then 1 in 16; every launch just after a build was
   * queued, and every launch until the builds queued are estimated done, by
   * the clock (builds that stall the program show there: costs.c). */
  if (__builtin_expect(t >= 64 && (t & 15) != 0, 1) &&
      (__builtin_expect(__atomic_load_n(&grape__launch_watch, __ATOMIC_RELAXED) <= 0, 1) ||
       __atomic_sub_fetch(&grape__launch_watch, 1, __ATOMIC_RELAXED) < 0) &&
      __builtin_expect(__atomic_load_n(&grape__build_until, __ATOMIC_RELAXED) == 0, 1))
    return 0;
  if (!__atomic_load_n(&grape__timed, __ATOMIC_RELAXED))
    return 0;
  return grape__launch_time_watched();
}
void grape__launch_time_end(uint64_t t0);

/* ---- Timing ---- */

/* Graph mode times each chunk from its first op (graphcache/cache.h:
 * measured cycles); set once the cache is made. */
/* Threads: stored (relaxed) once by the thread that makes the cache, loaded (relaxed) at each
 * chunk's first op: a thread that misses the store only leaves one chunk untimed. */
extern int grape__timed;

/* ---- Flush points ---- */

/* Before work is submitted on stream key: the legacy stream's implicit
 * synchronisation. Work on the legacy stream flushes every blocking stream
 * that holds ops, and work on a blocking stream flushes the legacy stream
 * (non-blocking streams are independent). One load when nothing is held. */
/* Threads (all three): changed with atomic adds under the holding list's lock (release for
 * grape__holding), loaded lock-free by every launch (relaxed: a hint, acted on under the list's
 * lock) and by the watchdog (acquire, before it walks the list); zeroed in a fork child. */
extern int grape__holding;            /* streams holding ops now */
extern int grape__holding_legacy;     /* ... of which the legacy stream */
extern int grape__holding_blocking;   /* ... of which blocking streams */
void grape__order_slow(uintptr_t key);
static inline void grape__order_before(uintptr_t key) {
  if (__builtin_expect(__atomic_load_n(&grape__holding, __ATOMIC_RELAXED) > 0, 0))
    grape__order_slow(key);
}
/* The same for a stream already looked up (s may be NULL): a stream that is
 * itself the only one holding costs no lookup. */
static inline int grape__stream_kind(grape_stream_t* s) {
  return __atomic_load_n(&s->kind, __ATOMIC_RELAXED);
}
static inline void grape__order_stream(grape_stream_t* s, uintptr_t key) {
  if (__builtin_expect(__atomic_load_n(&grape__holding, __ATOMIC_RELAXED) == 0, 1))
    return;
  int kind = s != NULL ? grape__stream_kind(s) : GRAPE_STREAM_UNKNOWN;
  if (kind == GRAPE_STREAM_NON_BLOCKING)
    return;
  if (kind == GRAPE_STREAM_LEGACY && __atomic_load_n(&grape__holding_blocking, __ATOMIC_RELAXED) == 0)
    return;
  if ((kind == GRAPE_STREAM_BLOCKING || kind == GRAPE_STREAM_PER_THREAD) &&
      __atomic_load_n(&grape__holding_legacy, __ATOMIC_RELAXED) == 0)
    return;
  grape__order_slow(key);
}

/* Ends stream key's region (submitting what it holds first), after the
 * ordering rules: the point where the host may see the stream's results. */
void grape__flush_stream(uintptr_t key);
/* The stream of key was synchronised: the sync has returned. */
void grape__stream_synced(uintptr_t key);

/* Ends every stream's region (a device-wide synchronisation, a free, an
 * unload...). */
void grape__flush_all(void);

/* Submits what each holding stream holds for which pred(s, arg) is true
 * (s locked), counted under cause. */
void grape__flush_holding_if(int (*pred)(const grape_stream_t* s, const void* arg), const void* arg,
                              grape_gc_cause_t cause);

/* A stream is being destroyed: its region ends and its slot is reclaimed. */
void grape__stream_destroyed(uintptr_t key);

/* Ends stream s's region; s locked by the caller. */
void grape__end_locked(grape_stream_t* s);

/* Submits what s holds (s locked): launched as the segment ending where it
 * is when it is one, else one op at a time; the rest of the chunk runs
 * eagerly. */
void grape__flush_held_locked(grape_stream_t* s, grape_gc_cause_t cause);

/* s's held ops reached a cut: the segment ending there is launched (s
 * locked). */
void grape__cut_locked(grape_stream_t* s);

/* Registers s, which started holding (s locked). */
void grape__hold_begun(grape_stream_t* s);

/* Brackets (on 1, then 0) the shim's own bounded work (go's sampled
 * numerics check on a holding thread: it waits only for its private
 * stream's work, never for held ops; the builder thread's driver calls, which
 * a holder's own driver call may wait behind), during which the watchdog
 * takes no holder for a spin or a wait: flushing then changed what was
 * submitted by how long the work took in real time, and simulated time
 * with it. */
void grape__own_work(int on);

/* ---- Errors met at flush time ---- */

/* Thread-local: the calling thread's own flush error; no other thread touches it. */
extern __thread int grape__pending_error __attribute__((tls_model("initial-exec")));
/* Threads: set (release) by the watchdog after storing its error, taken (acquire load,
 * exchange of the error) by any thread that reports errors; the first error is kept. */
extern int grape__pending_any;   /* set by flushes on other threads (the watchdog) */
void grape__note_flush_error(int err);

/* Every result a hook returns passes here: a device fault's error (sticky:
 * the context is unusable, and CUDA returns it from all later work) ends
 * graph mode, so that no later launch is held and reported as a success. */
void grape__saw_error(int r);
static inline __attribute__((always_inline)) int grape__seen(int r) {
  if (__builtin_expect(r != 0, 0))
    grape__saw_error(r);
  return r;
}
#define GRAPE_SEEN(r) ((__typeof__(r))grape__seen((int)(r)))

/* The result a reporting call returns: its own r, or the pending error (taken)
 * when r is success. peek: leave the pending error in place. */
int grape__pending_take(int r, int peek);
static inline int grape__report_async(int r) {
  if (__builtin_expect(grape__pending_error != 0 || __atomic_load_n(&grape__pending_any, __ATOMIC_RELAXED), 0))
    return grape__pending_take(r, 0);
  return r;
}

/* ---- Function limits (a held launch must be one the driver would take) ---- */

/* True when launching f with these dimensions cannot fail on its launch
 * configuration (block, grid, dynamic shared memory within limits). The
 * limits are asked of the driver once per function (and again after its
 * attributes change); then the check is a few compares. */
/* Threads: stored (relaxed) by the first launches to ask the driver, loaded (relaxed) by every
 * launch: racing first launches store the same values, and [0] == 0 only asks again. */
extern uint32_t grape__dev_limits[6];   /* max block x, y, z, grid x, y, z */
int grape__launch_fits_slow(grape_func_t* f, const uint32_t grid[3], const uint32_t block[3],
                            uint32_t shmem);
static inline int grape__launch_fits(grape_func_t* f, const uint32_t grid[3],
                                     const uint32_t block[3], uint32_t shmem) {
  if (__builtin_expect(__atomic_load_n(&f->lim_state, __ATOMIC_ACQUIRE) != 1, 0))
    return grape__launch_fits_slow(f, grid, block, shmem);
  /* Relaxed loads: two threads may ask for a function's limits at once and
   * store the same values. "- 1 <": a zero dimension wraps and fails. */
#define GRAPE_LIM(i) __atomic_load_n(&grape__dev_limits[i], __ATOMIC_RELAXED)
  return block[0] - 1 < GRAPE_LIM(0) && block[1] - 1 < GRAPE_LIM(1) && block[2] - 1 < GRAPE_LIM(2) &&
         grid[0] - 1 < GRAPE_LIM(3) && grid[1] - 1 < GRAPE_LIM(4) && grid[2] - 1 < GRAPE_LIM(5) &&
         (uint64_t)block[0] * block[1] * block[2] <= __atomic_load_n(&f->lim_threads, __ATOMIC_RELAXED) &&
         shmem <= __atomic_load_n(&f->lim_smem, __ATOMIC_RELAXED);
#undef GRAPE_LIM
}

/* A function's attributes changed (cuFuncSetAttribute & co.): its limits are
 * asked again, and the functions' generation moves (funcinfo.h), so that a
 * launch found again in its region's slot (launch.h) is checked again. */
void grape__limits_forget(const void* handle);

/* ---- Teardown ---- */

/* Every executable graph goes (context destroy, device reset); what is held
 * is submitted first, and every stream's kind and context are found anew at
 * its next use. */
void grape__graphs_drop(void);

/* Ends holding for the rest of the run because work may reach the driver past
 * the shim (bind.c): what is held is submitted now, nothing is held later.
 * Logs why once; grape__graphs_stopped() returns it for the report (NULL while
 * holding goes on). */
void grape__graphs_stop(const char* why);
const char* grape__graphs_stopped(void);

/* An image (module, library, fatbin) was unloaded: the executables that
 * launch its functions go, then its function infos. */
void grape__graphs_forget_image(const void* image);

/* The program is about to free memory (a free hook, before its real call):
 * on the sim, the builds the builder may begin by the program's last
 * reported progress end first, so that none finds the memory its graph
 * names gone (graphcache's grape_gc_settle): whether a build ran must not
 * depend on how late the OS ran the builder. Any thread. */
void grape__builds_settle(void);

/* Fork child: forgets the cache, the holding list and the watchdog. */
void grape__graph_reset_child(void);

/* At exit: submits what is held and destroys the executables. */
void grape__graph_exit(void);

#endif
