/* Generators shared by hooks_driver.c and hooks_runtime.c: from one hooks.def
 * row, a body_<name>(route, real, args...) and the functions that call it.
 *
 * DESIGN: a row's body receives the real function of the route it was reached
 * by. Generic kinds count the call, end regions where the row says, and call
 * the real function with the re-entry guard raised; CUSTOM rows call the
 * hand-written hook_<base>(route, row, ptds, real, args...) defined before the
 * generator is expanded; most of those only add work before or after the real
 * call and are written with GRAPE_HOOK_DEF, so every hook shares one shape
 * (GRAPE_HOOK_BODY). Bodies are inlined into each entry's out-of-line slow
 * part (GRAPE_GEN_ENTRY), so that the entry itself stays small: off mode costs
 * a few loads, a branch and a tail jump to the real function. */
#ifndef GRAPE_INTERPOSE_HOOKS_COMMON_H
#define GRAPE_INTERPOSE_HOOKS_COMMON_H

#include "internal.h"
#include "allocmap.h"
#include "graph.h"
#include "streams.h"

#define GRAPE_UNPAREN(...) __VA_ARGS__

/* Calls real with the guard raised, into a local r_ of type ret. */
#define GRAPE_CALL(ret, real, args) \
  ret r_;                           \
  GRAPE_NO_REENTRY(r_ = (real) args)

/* The shape of every hook: pass through while inactive, count the call as
 * row hk, run `before`, call real with the guard raised, run `after` (which
 * sees the result r_), return r_. */
#define GRAPE_HOOK_BODY(ret, hk, real, args, before, after) \
  if (!grape__active())                                    \
    return real args;                                      \
  GRAPE_COUNT(api_calls[hk]);            \
  before;                                                  \
  GRAPE_CALL(ret, real, args);                             \
  after;                                                   \
  return r_;

/* A hand-written hook_<base> of that shape, for rows whose work is only
 * `before` and `after`. */
#define GRAPE_HOOK_DEF(ret, base, params, args, before, after)                            \
  static inline ret hook_##base(grape_route_t route, grape_hook_t h, int ptds,            \
                                pfn_##base real, GRAPE_UNPAREN params) {                  \
    (void)route;                                                                          \
    (void)ptds;                                                                           \
    GRAPE_HOOK_BODY(ret, h, real, args, before, after)                                    \
  }

/* What the generic kinds do before and after the real call:
 *   PLAIN        count only
 *   SYNC_ALL     end every stream's region first (a device-wide ordering point)
 *   SYNC_STREAM  end `stream`'s region first (work on it, or a point where the
 *                host sees its results), after the legacy-stream rules
 *   WAIT_ALL, WAIT_STREAM  as SYNC_*, and the call reports asynchronous
 *                errors: one met while flushing held work is returned by it
 *   REPORT       reports asynchronous errors only */
#define GRAPE_BEFORE_PLAIN(ptds, stream)
#define GRAPE_BEFORE_SYNC_ALL(ptds, stream) grape__flush_all()
#define GRAPE_BEFORE_SYNC_STREAM(ptds, stream) \
  grape__flush_stream(grape__stream_key((const void*)(stream), ptds))
#define GRAPE_BEFORE_WAIT_ALL GRAPE_BEFORE_SYNC_ALL
#define GRAPE_BEFORE_WAIT_STREAM GRAPE_BEFORE_SYNC_STREAM
#define GRAPE_BEFORE_REPORT GRAPE_BEFORE_PLAIN
#define GRAPE_AFTER_PLAIN
#define GRAPE_AFTER_SYNC_ALL
#define GRAPE_AFTER_SYNC_STREAM
#define GRAPE_AFTER_WAIT_ALL r_ = (__typeof__(r_))grape__report_async((int)r_)
#define GRAPE_AFTER_WAIT_STREAM GRAPE_AFTER_WAIT_ALL
#define GRAPE_AFTER_REPORT GRAPE_AFTER_WAIT_ALL

/* The program's own stream capture: while any is open, each launch asks
 * whether its stream is capturing. Only captures the driver accepted count: a
 * begin that succeeded, and an end after which the stream that was capturing
 * (actively or invalidated) no longer is. A failed end (a stream that is not
 * capturing, another thread's capture) leaves the count alone. */
static inline void grape__capture_begun(void) {
  __atomic_add_fetch(&grape__captures, 1, __ATOMIC_RELAXED);
}
static inline void grape__capture_ended(void) {
  int n = __atomic_load_n(&grape__captures, __ATOMIC_RELAXED);
  while (n > 0 && !__atomic_compare_exchange_n(&grape__captures, &n, n - 1, 0, __ATOMIC_RELAXED,
                                               __ATOMIC_RELAXED))
    ;
}
/* The end-capture hook's two halves: whether stream s was capturing before the
 * real call, and, after it, the count lowered if it no longer is. */
#define GRAPE_CAPTURE_END_BEFORE(s) int was_capturing_ = grape__stream_capturing((s), ptds)
#define GRAPE_CAPTURE_END_AFTER(s)                                 \
  if (was_capturing_ && !grape__stream_capturing((s), ptds))       \
    grape__capture_ended()

/* Allocation and free hooks, driver and runtime alike (0 is success in both
 * APIs): `before` is the flush the call needs (an implicitly synchronising
 * free ends every region; a stream-ordered alloc or free ends its stream's),
 * then the allocation map follows what succeeded. */
#define GRAPE_FLUSH_NONE
#define GRAPE_FLUSH_ALL grape__flush_all()
#define GRAPE_FLUSH_STREAM(s) grape__flush_stream(grape__stream_key((s), ptds))
#define GRAPE_ALLOC_HOOK(ret, base, kind, before, call_args, params_decl, ptr_expr, size_expr)   \
  GRAPE_HOOK_DEF(ret, base, params_decl, call_args, before,                                    \
                 if (r_ == 0) grape__alloc_add((uint64_t)(uintptr_t)(ptr_expr), (size_expr), kind))
#define GRAPE_FREE_HOOK(ret, base, before, call_args, params_decl, ptr_expr)                     \
  GRAPE_HOOK_DEF(ret, base, params_decl, call_args, before,                                    \
                 if (r_ == 0 && (ptr_expr) != 0) grape__alloc_remove((uint64_t)(uintptr_t)(ptr_expr)))

/* body_<name>(route, real, params...) for each kind. */
#define GRAPE_GEN_BODY_CUSTOM(ret, name, base, ptds, stream, params, args)                 \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    return hook_##base(route, GRAPE_HOOK_##name, ptds, (pfn_##base)(void*)real, GRAPE_UNPAREN args); \
  }
#define GRAPE_GEN_BODY_GENERIC(K, ret, name, base, ptds, stream, params, args)            \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    GRAPE_HOOK_BODY(ret, GRAPE_HOOK_##name, real, args, GRAPE_BEFORE_##K(ptds, stream),  \
                    GRAPE_AFTER_##K)                                                     \
  }
/* Row name's real function for an entry of slot: the exported override's is
 * looked up on first use, a route wrapper's was stored when it was handed out. */
#define GRAPE_REAL_AT(name, slot)                                                        \
  ((pfn_##name)((slot) == GRAPE_SLOT_EXPORT                                              \
                    ? grape__real_export(GRAPE_HOOK_##name)                              \
                    : __atomic_load_n(&grape__real[slot][GRAPE_HOOK_##name], __ATOMIC_RELAXED)))

/* One entry point: fname (exported or a route wrapper) reaching body_<name>.
 * The entry itself only tests for off mode and jumps to the real function; all
 * else (a missing real function, init, re-entry, the work) is in fname_slow,
 * reached by a jump with the same arguments, so the entry needs no frame. */
#define GRAPE_GEN_ENTRY(attrs, ret, name, params, args, fname, SLOT, ROUTE)                   \
  static __attribute__((noinline)) ret fname##_slow params {                                  \
    pfn_##name real = GRAPE_REAL_AT(name, SLOT);                                              \
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

/* The same for a function without arguments (GRAPE_DRV0 / GRAPE_RT0 rows):
 * only the kinds that need no stream argument. */
#define GRAPE_GEN_BODY0_GENERIC(K, ret, name)                                                \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real) { \
    (void)route;                                                                             \
    GRAPE_HOOK_BODY(ret, GRAPE_HOOK_##name, real, (), GRAPE_BEFORE_##K(0, 0), GRAPE_AFTER_##K) \
  }
#define GRAPE_GEN_BODY0_PLAIN(ret, name) GRAPE_GEN_BODY0_GENERIC(PLAIN, ret, name)
#define GRAPE_GEN_BODY0_SYNC_ALL(ret, name) GRAPE_GEN_BODY0_GENERIC(SYNC_ALL, ret, name)
#define GRAPE_GEN_BODY0_WAIT_ALL(ret, name) GRAPE_GEN_BODY0_GENERIC(WAIT_ALL, ret, name)
#define GRAPE_GEN_BODY0_REPORT(ret, name) GRAPE_GEN_BODY0_GENERIC(REPORT, ret, name)
#define GRAPE_GEN_BODY0_MANUAL(ret, name)

/* Entries of a function without arguments (see GRAPE_GEN_ENTRY). */
#define GRAPE_GEN_ENTRY0(attrs, ret, name, fname, SLOT, ROUTE)                                \
  static __attribute__((noinline)) ret fname##_slow(void) {                                   \
    pfn_##name real = GRAPE_REAL_AT(name, SLOT);                                              \
    if (real == NULL)                                                                         \
      return GRAPE_MISSING_##ret;                                                             \
    if (!grape__active())                                                                     \
      return real();                                                                          \
    return body_##name(ROUTE, real);                                                          \
  }                                                                                           \
  attrs ret fname(void) {                                                                     \
    pfn_##name real = (pfn_##name)__atomic_load_n(&grape__real[SLOT][GRAPE_HOOK_##name],       \
                                                  __ATOMIC_RELAXED);                          \
    if (real != NULL && __atomic_load_n(&grape__state, __ATOMIC_RELAXED) == GRAPE_STATE_OFF)   \
      return real();                                                                          \
    return fname##_slow();                                                                    \
  }
#define GRAPE_GEN_ROUTE_ENTRY0(ret, name, fname, SLOT, ROUTE)                                  \
  ret fname(void) {                                                                           \
    pfn_##name real = (pfn_##name)__atomic_load_n(&grape__real[SLOT][GRAPE_HOOK_##name],       \
                                                  __ATOMIC_RELAXED);                          \
    if (!grape__active())                                                                     \
      return real();                                                                          \
    return body_##name(ROUTE, real);                                                          \
  }

#define GRAPE_GEN_BODY_PLAIN(...) GRAPE_GEN_BODY_GENERIC(PLAIN, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_ALL(...) GRAPE_GEN_BODY_GENERIC(SYNC_ALL, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_STREAM(...) GRAPE_GEN_BODY_GENERIC(SYNC_STREAM, __VA_ARGS__)
#define GRAPE_GEN_BODY_WAIT_ALL(...) GRAPE_GEN_BODY_GENERIC(WAIT_ALL, __VA_ARGS__)
#define GRAPE_GEN_BODY_WAIT_STREAM(...) GRAPE_GEN_BODY_GENERIC(WAIT_STREAM, __VA_ARGS__)
#define GRAPE_GEN_BODY_REPORT(...) GRAPE_GEN_BODY_GENERIC(REPORT, __VA_ARGS__)
#define GRAPE_GEN_BODY_MANUAL(...)

#endif
