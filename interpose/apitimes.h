/* Host time per API call (the report's "api_times"), taken by the hooks.
 *
 * DESIGN: one call in GRAPE_API_SAMPLE of each hooked symbol, per thread, is
 * timed (one in GRAPE_API_SAMPLE_LATE after its first GRAPE_API_SAMPLE_EARLY,
 * state.h) around the whole hook (the shim's own work included, as the program
 * sees it) on the run's clock (clock.h): the simulated host clock on the sim,
 * else CLOCK_MONOTONIC through the vDSO (no syscall). The other calls pay a
 * counter and a branch. Every call is timed instead, as nsys does, when the
 * user asks for statistics (GRAPE_API_TIMES=every, which `grape run --stats`
 * sets) or a timeline (GRAPE_TIMELINE): grape__api_sample_mask (state.h) is
 * then 0. Calls before the run's clock is known are counted, not timed, so
 * that wall and simulated nanoseconds never mix. */
#ifndef GRAPE_INTERPOSE_APITIMES_H
#define GRAPE_INTERPOSE_APITIMES_H

#include <stdint.h>

#include "state.h"

/* The sampling mask of a symbol's call numbered n on its thread (state.h). */
static inline __attribute__((always_inline)) long grape__api_mask_at(long n) {
  int early = __atomic_load_n(&grape__api_sample_mask, __ATOMIC_RELAXED);
  int late = __atomic_load_n(&grape__api_sample_mask_late, __ATOMIC_RELAXED);
  return n < GRAPE_API_SAMPLE_EARLY ? early : late;
}

/* Counts a call of row h. @return 1 when the call goes out of line
 * (grape__api_begin): one to time, or the thread's first (not counted yet).
 * No call on this path: the hook around it stays a jump without a frame. */
static inline __attribute__((always_inline)) int grape__api_sample(int h) {
  grape_counters_t* c = grape__counters_tls;
  if (__builtin_expect(c == NULL, 0))
    return 1;
  long n = __atomic_load_n(&c->api_seen[h], __ATOMIC_RELAXED);
  __atomic_store_n(&c->api_seen[h], n + 1, __ATOMIC_RELAXED);
  return (n & grape__api_mask_at(n)) == 0;
}

/* The out-of-line start of a call grape__api_sample sent here: counts a
 * thread's first call (the process's first arms the interrupt handler:
 * from then on there is work to save), and starts the clock (*t0) when the
 * call is to be timed and the run's clock is known. @return 1 when timed. */
__attribute__((cold, noinline)) int grape__api_begin(int h, uint64_t* t0);

/* A timed call of row h took now - t0 ns: into this thread's counters. */
void grape__api_timed(grape_counters_t* c, int h, uint64_t t0);

#endif
