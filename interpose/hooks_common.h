/* Generators shared by hooks_driver.c and hooks_runtime.c: from one hooks.def
 * row, a body_<name>(route, real, args...) and the functions that call it.
 *
 * DESIGN: a row's body receives the real function of the route it was reached
 * by. Generic kinds count the call, end regions where the row says, and call
 * the real function with the re-entry guard raised; CUSTOM rows call the
 * hand-written hook_<base>(route, row, ptds, real, args...) defined before the
 * generator is expanded. Bodies are inlined into each entry's out-of-line slow
 * part (GRAPE_GEN_ENTRY), so that the entry itself stays small: off mode costs
 * a few loads, a branch and a tail jump to the real function. */
#ifndef GRAPE_INTERPOSE_HOOKS_COMMON_H
#define GRAPE_INTERPOSE_HOOKS_COMMON_H

#include "internal.h"
#include "recorder.h"

#define GRAPE_UNPAREN(...) __VA_ARGS__

/* Calls real with the guard raised, into a local r_ of type ret. */
#define GRAPE_CALL(ret, real, args) \
  ret r_;                           \
  GRAPE_NO_REENTRY(r_ = (real) args)

#define GRAPE_BODY_PLAIN(ret, name, ptds, stream, real, args)          \
  if (!grape__active())                                                \
    return real args;                                                  \
  grape__count(&grape__counters.api_calls[GRAPE_HOOK_##name]);         \
  GRAPE_CALL(ret, real, args);                                         \
  return r_;

#define GRAPE_BODY_SYNC_ALL(ret, name, ptds, stream, real, args)       \
  if (!grape__active())                                                \
    return real args;                                                  \
  grape__count(&grape__counters.api_calls[GRAPE_HOOK_##name]);         \
  grape__rec_end_all();                                                \
  GRAPE_CALL(ret, real, args);                                         \
  return r_;

#define GRAPE_BODY_SYNC_STREAM(ret, name, ptds, stream, real, args)    \
  if (!grape__active())                                                \
    return real args;                                                  \
  grape__count(&grape__counters.api_calls[GRAPE_HOOK_##name]);         \
  grape__rec_end_stream(grape__stream_key((const void*)(stream), ptds)); \
  GRAPE_CALL(ret, real, args);                                         \
  return r_;

/* body_<name>(route, real, params...) for each kind. */
#define GRAPE_GEN_BODY_CUSTOM(ret, name, base, ptds, stream, params, args)                 \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    return hook_##base(route, GRAPE_HOOK_##name, ptds, (pfn_##base)(void*)real, GRAPE_UNPAREN args); \
  }
#define GRAPE_GEN_BODY_GENERIC(K, ret, name, base, ptds, stream, params, args)            \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    GRAPE_BODY_##K(ret, name, ptds, stream, real, args)                                  \
  }
/* One entry point: fname (exported or a route wrapper) reaching body_<name>.
 * The entry itself only tests for off mode and jumps to the real function; all
 * else (a missing real function, init, re-entry, the work) is in fname_slow,
 * reached by a jump with the same arguments, so the entry needs no frame. */
#define GRAPE_GEN_ENTRY(attrs, ret, name, params, args, fname, SLOT, ROUTE)                   \
  static __attribute__((noinline)) ret fname##_slow params {                                  \
    pfn_##name real = (pfn_##name)(SLOT == GRAPE_SLOT_EXPORT                                  \
                                       ? grape__real_export(GRAPE_HOOK_##name)                \
                                       : __atomic_load_n(&grape__real[SLOT][GRAPE_HOOK_##name], \
                                                         __ATOMIC_RELAXED));                  \
    if (real == NULL)                                                                         \
      return GRAPE_MISSING_##ret;                                                             \
    if (!grape__active())                                                                     \
      return real args;                                                                       \
    return body_##name(ROUTE, real, GRAPE_UNPAREN args);                                      \
  }                                                                                           \
  attrs ret fname params {                                                                    \
    pfn_##name real = (pfn_##name)__atomic_load_n(&grape__real[SLOT][GRAPE_HOOK_##name],       \
                                                  __ATOMIC_RELAXED);                          \
    if (real != NULL && __atomic_load_n(&grape__state, __ATOMIC_RELAXED) == GRAPE_STATE_OFF)   \
      return real args;                                                                       \
    return fname##_slow args;                                                                 \
  }

/* A route wrapper (dlsym, cuGetProcAddress, entry point): these are only
 * handed out while the shim is on, so they skip the off-mode fast path. */
#define GRAPE_GEN_ROUTE_ENTRY(ret, name, params, args, fname, SLOT, ROUTE)                    \
  ret fname params {                                                                          \
    pfn_##name real = (pfn_##name)__atomic_load_n(&grape__real[SLOT][GRAPE_HOOK_##name],       \
                                                  __ATOMIC_RELAXED);                          \
    if (!grape__active())                                                                     \
      return real args;                                                                       \
    return body_##name(ROUTE, real, GRAPE_UNPAREN args);                                      \
  }

#define GRAPE_GEN_BODY_PLAIN(...) GRAPE_GEN_BODY_GENERIC(PLAIN, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_ALL(...) GRAPE_GEN_BODY_GENERIC(SYNC_ALL, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_STREAM(...) GRAPE_GEN_BODY_GENERIC(SYNC_STREAM, __VA_ARGS__)
#define GRAPE_GEN_BODY_MANUAL(...)

#endif
