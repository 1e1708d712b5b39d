/* The run's clock: the simulated device's host clock when the driver is the
 * sim (its private export table, include/grape/simcu_private.h), so that
 * graph mode decides in the time the sim reports; else CLOCK_MONOTONIC. Also
 * the sim's other private entries the shim uses: its charges for the shim's
 * own host work, the builder's hand-over and its statistics.
 *
 * DESIGN: which clock a run has is known only once the driver is loaded: the
 * first timed API call after that, or the path cache's creation, looks the
 * table up (grape__api_clock_ready). Calls before it are counted, not timed,
 * so that wall and simulated nanoseconds never mix. */
#ifndef GRAPE_INTERPOSE_CLOCK_H
#define GRAPE_INTERPOSE_CLOCK_H

#include <stdint.h>

#include "grape/simcu_private.h"

/* Now, on the run's clock (ns). */
uint64_t grape__clock_ns(void);
/* 1 when grape__clock_ns is the simulated host clock. */
int grape__clock_simulated(void);

/* Threads: stored once (release, under a mutex) by the thread that finds the clock, loaded
 * (acquire) by a sampled call; one that misses the store takes the mutex and sees it. */
extern int grape__api_clock_on;
/* Finds the run's clock when the driver is loaded (any thread).
 * @return 1 when it is known. */
__attribute__((cold, noinline)) int grape__api_clock_ready(void);

/* The clock in every mode; the sim's host-work charges and the builder's
 * hand-over only when graphs is set (graph mode), so that observe mode's
 * simulated time stays the program's own. Called once, as the path cache
 * is made. */
void grape__clock_init(int graphs);

/* ---- The shim's own host time on the sim ----
 * On the simulated device (graph mode), each op the shim records or holds
 * tells the sim that the shim did one op's work (SIMCU_WORK_SHIM_OP), which
 * the sim charges to the calling thread's clock at its row shim_op: the
 * shim's overhead shows in simulated time. Elsewhere nothing is called. */
/* Threads: set once in graph mode on the sim; read by any thread. */
extern void (*grape__sim_work)(int);
static inline __attribute__((always_inline)) void grape__charge_op(void) {
  void (*w)(int) = __atomic_load_n(&grape__sim_work, __ATOMIC_RELAXED);
  if (__builtin_expect(w != NULL, 0))
    w(SIMCU_WORK_SHIM_OP);
}
/* n units of the shim's other work of that kind (SIMCU_WORK_SHIM_CHECK: one
 * op re-checked before a plan's replay; SIMCU_WORK_SHIM_TARGET: one GEMM's
 * SM-count target applied and restored; SIMCU_WORK_SHIM_REQUERY: a cuBLASLt
 * heuristic query made for a targeted descriptor), charged the same way. */
void grape__charge_work(int kind, uint32_t n);

/* How long the process has run, in ns (0: not known). Any thread. */
uint64_t grape__clock_age_ns(void);

/* The builder takes up a build queued at t (the sim's clocks; a GPU's need
 * nothing). */
void grape__sim_handoff(uint64_t t);

/* The simulated device's statistics (simcu_private.h: stats_json), a
 * malloc'd JSON object the caller frees; NULL on a GPU, or before the
 * clock was found. */
char* grape__sim_stats_json(void);

#endif
