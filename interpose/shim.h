/* The shim's start, for its entry points: the CUDA hooks, NVTX's injection.
 *
 * DESIGN: only entry points include this header. Starting the shim reaches
 * every part of it (options, the capture ranges, the timeline, the fork
 * handler, the outputs at exit), so a part that the start itself reaches
 * must never start it: such code tests state.h's grape__on instead. */
#ifndef GRAPE_INTERPOSE_SHIM_H
#define GRAPE_INTERPOSE_SHIM_H

#include "state.h"

/* Reads the options and sets grape__state. Touches libc only: never CUDA.
 * Safe to call from any thread, any number of times. @return the state. */
__attribute__((cold, noinline)) int grape__init(void);

/* True when a hook should do its work: the shim is on and this thread is not
 * already inside a hook (the runtime calling the driver from inside a
 * wrapper). Its first call, from whichever entry point comes first (another
 * library's constructor may call CUDA before the shim's), starts the shim. */
static inline __attribute__((always_inline)) int grape__active(void) {
  int s = __atomic_load_n(&grape__state, __ATOMIC_RELAXED);
  if (__builtin_expect(s == GRAPE_STATE_UNINIT, 0))
    s = grape__init();
  return s == GRAPE_STATE_ON && grape__depth == 0;
}

#endif
