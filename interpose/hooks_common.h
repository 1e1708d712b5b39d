/* Generators shared by hooks_driver.c and hooks_runtime.c: from one hooks.def
 * row, a body_<name>(route, real, args...) and the functions that call it.
 *
 * DESIGN: a row's body receives the real function of the route it was reached
 * by. Generic kinds count the call, end regions where the row says, and call
 * the real function with the re-entry guard raised; CUSTOM rows call the
 * hand-written hook_<base>(route, row, ptds, real, args...) defined before the
 * generator is expanded. */
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
  static inline ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    return hook_##base(route, GRAPE_HOOK_##name, ptds, (pfn_##base)(void*)real, GRAPE_UNPAREN args); \
  }
#define GRAPE_GEN_BODY_GENERIC(K, ret, name, base, ptds, stream, params, args)            \
  static inline ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    GRAPE_BODY_##K(ret, name, ptds, stream, real, args)                                  \
  }
#define GRAPE_GEN_BODY_PLAIN(...) GRAPE_GEN_BODY_GENERIC(PLAIN, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_ALL(...) GRAPE_GEN_BODY_GENERIC(SYNC_ALL, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_STREAM(...) GRAPE_GEN_BODY_GENERIC(SYNC_STREAM, __VA_ARGS__)
#define GRAPE_GEN_BODY_MANUAL(...)

#endif
