/* Generators shared by hooks_driver.c and hooks_runtime.c: from one hooks.def
 * row, a body_<name>(route, real, args...) and the functions that call it.
 *
 * DESIGN: a row's body receives the real function of the route it was reached
 * by. Generic kinds count the call, end regions where the row says, and call
 * the real function with the re-entry guard raised; CUSTOM rows call the
 * hand-written hook_<base>(route, row, ptds, real, args...) defined before the
 * generator is expanded. Most of those only add work before the real call or
 * after it succeeded, and are written with GRAPE_HOOK_DEF, whose `before` and
 * `on_success` are calls of named functions on the row's own parameters: a
 * reader sees every name a hook uses in its row. Bodies are inlined into each
 * entry's out-of-line slow part (GRAPE_GEN_ENTRY), so that the entry itself
 * stays small: off mode costs a few loads, a branch and a tail jump to the
 * real function. Every body and hook runs only after its entry found the shim
 * active (grape__active()). */
#ifndef GRAPE_INTERPOSE_HOOKS_COMMON_H
#define GRAPE_INTERPOSE_HOOKS_COMMON_H

#include "allocmap.h"
#include "apitimes.h"
#include "copies.h"
#include "funcattrs.h"
#include "funcinfo.h"
#include "graph.h"
#include "launch.h"
#include "owngraphs.h"
#include "real.h"
#include "shim.h"
#include "streams.h"
#include "timeline.h"

#define GRAPE_UNPAREN(...) __VA_ARGS__

/* True when a launch hook tries the hit path first (launch.h,
 * grape__hold_hit): graph mode, with the timeline off (a timeline records
 * every call, which the full path does). */
static inline __attribute__((always_inline)) int grape__hit_path_on(void) {
  return grape__mode == GRAPE_MODE_GRAPH && !__builtin_expect(grape__timeline_on, 0);
}

/* An empty `before` or `on_success`. */
#define GRAPE_NOTHING ((void)0)

/* GRAPE_HOOK_DEF(ret, base, (params), (args), before, on_success) defines
 *   ret hook_<base>(grape_route_t route, grape_hook_t h, int ptds,
 *                   pfn_<base> real, params)
 * which counts the call as row h, evaluates `before`, calls real(args) with
 * the re-entry guard raised, evaluates `on_success` when that returned success
 * (0 in both APIs), and returns the real result unchanged. `before` and
 * `on_success` are calls of functions on the row's parameters and ptds (1
 * when the entry is a per-thread-default-stream variant), or GRAPE_NOTHING. */
#define GRAPE_HOOK_DEF(ret, base, params, args, before, on_success) \
  GRAPE_HOOK_DEF_AS(GRAPE_NO_REENTRY, ret, base, params, args, before, on_success)
/* The same, the real call made through CALL (GRAPE_CALL_NO_WAIT for a call
 * that cannot wait for stream work; state.h). */
#define GRAPE_HOOK_DEF_AS(CALL, ret, base, params, args, before, on_success)               \
  static inline ret hook_##base(grape_route_t route, grape_hook_t h, int ptds,            \
                                pfn_##base real, GRAPE_UNPAREN params) {                  \
    (void)route;                                                                          \
    (void)ptds;                                                                           \
    GRAPE_COUNT(api_calls[h]);                                                            \
    before;                                                                               \
    ret r;                                                                                \
    CALL(r = real args);                                                                  \
    if (r == 0)                                                                           \
      on_success;                                                                         \
    return GRAPE_SEEN(r);                                                                 \
  }

/* ---- What hooks do around the real call ---- */

/* Ends the region of stream s as a call names it (ptds: the call's
 * per-thread-default-stream flag): work on it, or a point where the host sees
 * its results, after the legacy-stream rules. */
static inline void grape__flush_stream_of(const void* s, int ptds) {
  grape__flush_stream(grape__stream_key(s, ptds));
}

/* The generic kinds, before the real call (row's ptds and stream argument)
 * and on its result:
 *   PLAIN        count only
 *   SYNC_ALL     end every stream's region first (a device-wide ordering point)
 *   SYNC_STREAM  end `stream`'s region first
 *   WAIT_ALL, WAIT_STREAM  as SYNC_*, and the call reports asynchronous
 *                errors: one met while flushing held work is returned by it
 *   REPORT       reports asynchronous errors only */
#define GRAPE_BEFORE_PLAIN(ptds, stream) GRAPE_NOTHING
#define GRAPE_BEFORE_SYNC_ALL(ptds, stream) grape__flush_all()
#define GRAPE_BEFORE_SYNC_STREAM(ptds, stream) grape__flush_stream_of((const void*)(stream), ptds)
#define GRAPE_BEFORE_WAIT_ALL GRAPE_BEFORE_SYNC_ALL
#define GRAPE_BEFORE_WAIT_STREAM GRAPE_BEFORE_SYNC_STREAM
#define GRAPE_BEFORE_REPORT GRAPE_BEFORE_PLAIN
/* How the real call is made: a PLAIN call cannot wait for stream work, so
 * the watchdog leaves its thread's held work alone while it runs. A REPORT
 * call may wait (an event's synchronisation: the event's own stream was
 * flushed when it was recorded, but its work may wait on work another
 * stream still holds), as SYNC and WAIT calls may. */
#define GRAPE_CALL_PLAIN GRAPE_CALL_NO_WAIT
#define GRAPE_CALL_REPORT GRAPE_NO_REENTRY
#define GRAPE_CALL_SYNC_ALL GRAPE_NO_REENTRY
#define GRAPE_CALL_SYNC_STREAM GRAPE_NO_REENTRY
#define GRAPE_CALL_WAIT_ALL GRAPE_NO_REENTRY
#define GRAPE_CALL_WAIT_STREAM GRAPE_NO_REENTRY
/* After the real call: a stream sync that returned tells how long the device
 * ran on past the host (graph mode's first plans). */
#define GRAPE_AFTER_PLAIN(ptds, stream, r) GRAPE_NOTHING
#define GRAPE_AFTER_SYNC_ALL GRAPE_AFTER_PLAIN
#define GRAPE_AFTER_SYNC_STREAM GRAPE_AFTER_PLAIN
#define GRAPE_AFTER_WAIT_ALL GRAPE_AFTER_PLAIN
#define GRAPE_AFTER_WAIT_STREAM(ptds, stream, r)                                         \
  do {                                                                                   \
    if ((r) == 0)                                                                        \
      grape__stream_synced(grape__stream_key((const void*)(stream), ptds));              \
  } while (0)
#define GRAPE_AFTER_REPORT GRAPE_AFTER_PLAIN
#define GRAPE_RESULT_PLAIN(r) GRAPE_SEEN(r)
#define GRAPE_RESULT_SYNC_ALL(r) GRAPE_SEEN(r)
#define GRAPE_RESULT_SYNC_STREAM(r) GRAPE_SEEN(r)
#define GRAPE_RESULT_WAIT_ALL(r) ((__typeof__(r))grape__report_async(grape__seen((int)(r))))
#define GRAPE_RESULT_WAIT_STREAM GRAPE_RESULT_WAIT_ALL
#define GRAPE_RESULT_REPORT GRAPE_RESULT_WAIT_ALL

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

/* hook_<base> of cuStreamEndCapture / cudaStreamEndCapture(s, g): whether s
 * was capturing is asked before the real call, so that the count falls only
 * for a capture this call ended. */
#define GRAPE_CAPTURE_END_HOOK(ret, base, stream_type, graph_type)                         \
  static inline ret hook_##base(grape_route_t route, grape_hook_t h, int ptds,              \
                                pfn_##base real, stream_type s, graph_type* g) {            \
    (void)route;                                                                            \
    GRAPE_COUNT(api_calls[h]);                                                              \
    int was_capturing = grape__stream_capturing(s, ptds) == 1;                               \
    ret r;                                                                                  \
    GRAPE_NO_REENTRY(r = real(s, g));                                                       \
    if (was_capturing && grape__stream_capturing(s, ptds) != 1)                             \
      grape__capture_ended();                                                               \
    return GRAPE_SEEN(r);                                                                   \
  }

/* A stream is destroyed (its handle value may come back for another). */
static inline void grape__stream_gone(const void* s) {
  grape__stream_destroyed(grape__stream_key(s, 0));
}

/* A function or kernel h fetched by name (NULL when the call made none): its
 * name and image are recorded. */
static inline void grape__fetched(const void* h, grape_handle_kind_t kind, const char* name,
                                  const void* image) {
  GRAPE_NO_REENTRY(grape__func_register(h, kind, name, image));
}

/* Handle h stands for the kernel of (cuKernelGetFunction, __cudaGetKernel):
 * it shares that kernel's info. */
static inline void grape__aliased(const void* h, grape_handle_kind_t kind, const void* of) {
  GRAPE_NO_REENTRY(grape__func_alias(h, kind, of));
}

/* A module, library or fatbin was unloaded: its functions' infos, the
 * executable graphs that launch them and the remembered attribute values go,
 * since the driver may hand their handle values out again. */
static inline void grape__image_unloaded(const void* image) {
  GRAPE_NO_REENTRY(grape__graphs_forget_image(image));
  grape__func_attrs_forget();
}

/* hook_<base> of an async memset or device-to-device copy, driver and
 * runtime alike: the op `memop` (a grape_memop_t built from the row's
 * parameters and ptds: grape__memset_op, grape__memcpy_op) is held in graph
 * mode, and the call returns success (0); else the real call is made and the
 * op recorded when it succeeded. */
#define GRAPE_MEMOP_HOOK(ret, base, params, args, memop)                                   \
  static inline ret hook_##base(grape_route_t route, grape_hook_t h, int ptds,             \
                                pfn_##base real, GRAPE_UNPAREN params) {                   \
    (void)route;                                                                           \
    GRAPE_COUNT(api_calls[h]);                                                             \
    grape_memop_t m = memop;                                                               \
    GRAPE_TL_START(tl_, h);                                                                   \
    if (grape__mode == GRAPE_MODE_GRAPH && grape__hold_memop(&m)) {                        \
      if (GRAPE_TL_ON(tl_))                                                                \
        grape__tl_memop_end(&tl_, &m, 1, 1);                                               \
      return (ret)0;                                                                       \
    }                                                                                      \
    ret r;                                                                                 \
    if (GRAPE_TL_ON(tl_))                                                                  \
      grape__tl_dev_begin(&tl_, m.stream, m.ptds);                                         \
    GRAPE_CALL_NO_WAIT(r = real args);                                                     \
    if (GRAPE_TL_ON(tl_))                                                                  \
      grape__tl_memop_end(&tl_, &m, r == 0, 0);                                            \
    if (r == 0)                                                                            \
      GRAPE_NO_REENTRY(grape__on_memop(&m));                                               \
    return GRAPE_SEEN(r);                                                                  \
  }

/* The rest of a copy hook's body, driver and runtime alike, once it knows
 * whether the copy is an op of the region (`op`: memop m, held in graph
 * mode) or a point where the host sees results (it ends the region first);
 * `dir` is its direction on the timeline, `call` the real call. */
#define GRAPE_COPY_HOOK_REST(ret, op, m, dir, call)                                        \
  if (!(op))                                                                               \
    grape__flush_stream_of((m).stream, (m).ptds);                                          \
  GRAPE_TL_START(tl_, h);                                                                  \
  if ((op) && grape__mode == GRAPE_MODE_GRAPH && grape__hold_memop(&(m))) {                \
    if (GRAPE_TL_ON(tl_))                                                                  \
      grape__tl_memop_end(&tl_, &(m), 1, 1);                                               \
    return (ret)0;                                                                         \
  }                                                                                        \
  ret r;                                                                                   \
  if (GRAPE_TL_ON(tl_))                                                                    \
    grape__tl_dev_begin(&tl_, (m).stream, (m).ptds);                                       \
  GRAPE_NO_REENTRY(r = call);                                                              \
  if (GRAPE_TL_ON(tl_))                                                                    \
    grape__tl_copy_end(&tl_, GRAPE_TRACE_OP_MEMCPY, (m).stream, (m).ptds, (m).p.cpy.bytes, \
                       dir, r == 0);                                                       \
  if ((op) && r == 0)                                                                      \
    GRAPE_NO_REENTRY(grape__on_memop(&(m)));                                               \
  if (!(op))                                                                               \
    GRAPE_COUNT(submissions);                                                              \
  return GRAPE_SEEN(r);

/* Allocation and free hooks, driver and runtime alike: `flush` is what the
 * call needs first (GRAPE_NOTHING; grape__flush_all() for a free that
 * synchronises implicitly; grape__flush_stream_of(s, ptds) for a
 * stream-ordered alloc or free), then the allocation map follows what
 * succeeded: [ptr, ptr + size) added as kind, or the allocation at ptr
 * removed (ptr and size: expressions of the row's parameters, evaluated after
 * the call). */
#define GRAPE_ALLOC_HOOK(ret, base, params, args, flush, kind, ptr, size)              \
  GRAPE_HOOK_DEF_AS(GRAPE_CALL_NO_WAIT, ret, base, params, args, flush,                 \
                    grape__alloc_add((uintptr_t)(ptr), (size), kind))
/* A free: the flush, then the builds already begun end (grape__builds_settle). */
#define GRAPE_FREE_HOOK(ret, base, params, args, flush, ptr)                              \
  GRAPE_HOOK_DEF(ret, base, params, args, (flush, grape__builds_settle()),               \
                 grape__alloc_freed((uintptr_t)(ptr)))
static inline void grape__alloc_freed(uintptr_t p) {
  if (p != 0)   /* freeing NULL is allowed and frees nothing */
    grape__alloc_remove((uint64_t)p);
}

/* body_<name>(route, real, params...) for each kind. */
#define GRAPE_GEN_BODY_CUSTOM(ret, name, base, ptds, stream, params, args)                 \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    return hook_##base(route, GRAPE_HOOK_##name, ptds, (pfn_##base)(void*)real, GRAPE_UNPAREN args); \
  }
/* The generated body of kind K: counted, K's work before and after the real
 * call, and on_ok run when the call succeeded. */
#define GRAPE_GEN_BODY_CALL(K, on_ok, ret, name, base, ptds, stream, params, args)         \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    GRAPE_COUNT(api_calls[GRAPE_HOOK_##name]);                                           \
    GRAPE_BEFORE_##K(ptds, stream);                                                      \
    ret r;                                                                               \
    GRAPE_CALL_##K(r = real args);                                                       \
    if (r == 0)                                                                          \
      on_ok;                                                                             \
    GRAPE_AFTER_##K(ptds, stream, r);                                                    \
    return GRAPE_RESULT_##K(r);                                                          \
  }
#define GRAPE_GEN_BODY_GENERIC(K, ...) GRAPE_GEN_BODY_CALL(K, (void)0, __VA_ARGS__)

/* Returns the call `body` of row name, counted and, one call in
 * GRAPE_API_SAMPLE, timed (apitimes.h). For the manual entries; generated
 * ones use GRAPE_GEN_TIMED, which keeps the timed path out of line. */
#define GRAPE_TIMED_BODY(ret, name, body)                                                    \
  do {                                                                                       \
    uint64_t t0_;                                                                            \
    if (__builtin_expect(!GRAPE_SAMPLED(name), 1) || !grape__api_begin(GRAPE_HOOK_##name, &t0_)) \
      return body;                                                                           \
    ret r_ = body;                                                                           \
    grape__api_timed(grape__counters_mine(), GRAPE_HOOK_##name, t0_);                        \
    return r_;                                                                               \
  } while (0)

/* fname_timed(real, params...): one timed call of row name's body. Out of
 * line, so that the untimed call in fname_slow stays a jump to an inlined
 * body without a frame of its own: the per-call cost is a counter and a
 * branch. */
#define GRAPE_GEN_TIMED(ret, name, fname, ROUTE, params, args)                                \
  static __attribute__((noinline, cold)) ret fname##_timed(pfn_##name real,                   \
                                                           GRAPE_UNPAREN params) {            \
    uint64_t t0_;                                                                             \
    if (!grape__api_begin(GRAPE_HOOK_##name, &t0_))                                           \
      return body_##name(ROUTE, real, GRAPE_UNPAREN args);                                    \
    ret r_ = body_##name(ROUTE, real, GRAPE_UNPAREN args);                                    \
    grape__api_timed(grape__counters_mine(), GRAPE_HOOK_##name, t0_);                         \
    return r_;                                                                                \
  }
#define GRAPE_GEN_TIMED0(ret, name, fname, ROUTE)                                             \
  static __attribute__((noinline, cold)) ret fname##_timed(pfn_##name real) {                 \
    uint64_t t0_;                                                                             \
    if (!grape__api_begin(GRAPE_HOOK_##name, &t0_))                                           \
      return body_##name(ROUTE, real);                                                        \
    ret r_ = body_##name(ROUTE, real);                                                        \
    grape__api_timed(grape__counters_mine(), GRAPE_HOOK_##name, t0_);                         \
    return r_;                                                                                \
  }
/* Counts the call; one in GRAPE_API_SAMPLE goes to fname_timed. */
#define GRAPE_SAMPLED(name) grape__api_sample(GRAPE_HOOK_##name)

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
  GRAPE_GEN_TIMED(ret, name, fname, ROUTE, params, args)                                      \
  static __attribute__((noinline)) ret fname##_slow params {                                  \
    pfn_##name real = GRAPE_REAL_AT(name, SLOT);                                              \
    if (real == NULL)                                                                         \
      return GRAPE_MISSING_##ret;                                                             \
    if (!grape__active())                                                                     \
      return real args;                                                                       \
    if (__builtin_expect(GRAPE_SAMPLED(name), 0))                                             \
      return fname##_timed(real, GRAPE_UNPAREN args);                                         \
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
  GRAPE_GEN_TIMED(ret, name, fname, ROUTE, params, args)                                      \
  ret fname params {                                                                          \
    pfn_##name real = (pfn_##name)__atomic_load_n(&grape__real[SLOT][GRAPE_HOOK_##name],       \
                                                  __ATOMIC_RELAXED);                          \
    if (!grape__active())                                                                     \
      return real args;                                                                       \
    if (__builtin_expect(GRAPE_SAMPLED(name), 0))                                             \
      return fname##_timed(real, GRAPE_UNPAREN args);                                         \
    return body_##name(ROUTE, real, GRAPE_UNPAREN args);                                      \
  }

/* The same for a function without arguments (GRAPE_DRV0 / GRAPE_RT0 rows):
 * only the kinds that need no stream argument. */
#define GRAPE_GEN_BODY0_GENERIC(K, ret, name)                                                \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real) { \
    (void)route;                                                                             \
    GRAPE_COUNT(api_calls[GRAPE_HOOK_##name]);                                               \
    GRAPE_BEFORE_##K(0, 0);                                                                  \
    ret r;                                                                                   \
    GRAPE_CALL_##K(r = real());                                                              \
    return GRAPE_RESULT_##K(r);                                                              \
  }
#define GRAPE_GEN_BODY0_PLAIN(ret, name) GRAPE_GEN_BODY0_GENERIC(PLAIN, ret, name)
#define GRAPE_GEN_BODY0_SYNC_ALL(ret, name) GRAPE_GEN_BODY0_GENERIC(SYNC_ALL, ret, name)
#define GRAPE_GEN_BODY0_WAIT_ALL(ret, name) GRAPE_GEN_BODY0_GENERIC(WAIT_ALL, ret, name)
#define GRAPE_GEN_BODY0_REPORT(ret, name) GRAPE_GEN_BODY0_GENERIC(REPORT, ret, name)
#define GRAPE_GEN_BODY0_MANUAL(ret, name)
/* A hand-written hook_<name>(real) does the work (the profiler control). */
#define GRAPE_GEN_BODY0_CUSTOM(ret, name)                                                    \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real) { \
    (void)route;                                                                             \
    GRAPE_COUNT(api_calls[GRAPE_HOOK_##name]);                                               \
    return hook_##name(real);                                                                \
  }

/* Entries of a function without arguments (see GRAPE_GEN_ENTRY). */
#define GRAPE_GEN_ENTRY0(attrs, ret, name, fname, SLOT, ROUTE)                                \
  GRAPE_GEN_TIMED0(ret, name, fname, ROUTE)                                                   \
  static __attribute__((noinline)) ret fname##_slow(void) {                                   \
    pfn_##name real = GRAPE_REAL_AT(name, SLOT);                                              \
    if (real == NULL)                                                                         \
      return GRAPE_MISSING_##ret;                                                             \
    if (!grape__active())                                                                     \
      return real();                                                                          \
    if (__builtin_expect(GRAPE_SAMPLED(name), 0))                                             \
      return fname##_timed(real);                                                             \
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
  GRAPE_GEN_TIMED0(ret, name, fname, ROUTE)                                                   \
  ret fname(void) {                                                                           \
    pfn_##name real = (pfn_##name)__atomic_load_n(&grape__real[SLOT][GRAPE_HOOK_##name],       \
                                                  __ATOMIC_RELAXED);                          \
    if (!grape__active())                                                                     \
      return real();                                                                          \
    if (__builtin_expect(GRAPE_SAMPLED(name), 0))                                             \
      return fname##_timed(real);                                                             \
    return body_##name(ROUTE, real);                                                          \
  }

/* A copy or memset the shim does not hold (COPY_ALL, MEMSET_ALL: synchronous,
 * as WAIT_ALL; COPY_STREAM, MEMSET_STREAM: asynchronous, as SYNC_STREAM): the
 * generic body, and on the timeline an op of kind OP (GRAPE_TRACE_OP_*) with
 * its bytes and direction (copies.h: DESC<base>) and its device times on its
 * stream (the default stream for a synchronous one). */
#define GRAPE_GEN_BODY_XFER(K, OP, DESC, ret, name, base, ptds, stream, params, args)       \
  static inline __attribute__((always_inline)) ret body_##name(grape_route_t route, pfn_##name real, GRAPE_UNPAREN params) { \
    (void)route;                                                                         \
    GRAPE_COUNT(api_calls[GRAPE_HOOK_##name]);                                           \
    GRAPE_BEFORE_##K(ptds, stream);                                                      \
    GRAPE_TL_START(tl_, GRAPE_HOOK_##name);                                              \
    if (GRAPE_TL_ON(tl_))                                                                \
      grape__tl_dev_begin(&tl_, (const void*)(stream), ptds);                            \
    ret r;                                                                               \
    GRAPE_NO_REENTRY(r = real args);                                                     \
    if (GRAPE_TL_ON(tl_)) {                                                              \
      grape_copy_t c_ = DESC##base args;                                                 \
      grape__tl_copy_end(&tl_, OP, (const void*)(stream), ptds, c_.bytes, c_.dir, r == 0); \
    }                                                                                    \
    GRAPE_AFTER_##K(ptds, stream, r);                                                    \
    return GRAPE_RESULT_##K(r);                                                          \
  }
#define GRAPE_GEN_BODY_COPY_ALL(...) \
  GRAPE_GEN_BODY_XFER(WAIT_ALL, GRAPE_TRACE_OP_MEMCPY, grape__copy_, __VA_ARGS__)
#define GRAPE_GEN_BODY_COPY_STREAM(...) \
  GRAPE_GEN_BODY_XFER(SYNC_STREAM, GRAPE_TRACE_OP_MEMCPY, grape__copy_, __VA_ARGS__)
#define GRAPE_GEN_BODY_MEMSET_ALL(...) \
  GRAPE_GEN_BODY_XFER(WAIT_ALL, GRAPE_TRACE_OP_MEMSET, grape__set_, __VA_ARGS__)
#define GRAPE_GEN_BODY_MEMSET_STREAM(...) \
  GRAPE_GEN_BODY_XFER(SYNC_STREAM, GRAPE_TRACE_OP_MEMSET, grape__set_, __VA_ARGS__)
/* The program launches a graph of its own (GRAPH_STREAM, as SYNC_STREAM): on
 * the timeline, one slice of its nodes (owngraphs.h: grape__launch_<base>). */
#define GRAPE_GEN_BODY_GRAPH_STREAM(...) \
  GRAPE_GEN_BODY_XFER(SYNC_STREAM, GRAPE_TRACE_TL_GRAPH, grape__launch_, __VA_ARGS__)

/* The program instantiates a graph (GRAPH_MADE, as PLAIN; GRAPH_MADE_ALL, as
 * SYNC_ALL): the executable's node count is kept for the timeline. */
#define GRAPE_GEN_BODY_MADE(K, ret, name, base, ptds, stream, params, args) \
  GRAPE_GEN_BODY_CALL(K, GRAPE_OWN_GRAPH_MADE args, ret, name, base, ptds, stream, params, args)
#define GRAPE_GEN_BODY_GRAPH_MADE(...) GRAPE_GEN_BODY_MADE(PLAIN, __VA_ARGS__)
#define GRAPE_GEN_BODY_GRAPH_MADE_ALL(...) GRAPE_GEN_BODY_MADE(SYNC_ALL, __VA_ARGS__)

#define GRAPE_GEN_BODY_PLAIN(...) GRAPE_GEN_BODY_GENERIC(PLAIN, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_ALL(...) GRAPE_GEN_BODY_GENERIC(SYNC_ALL, __VA_ARGS__)
#define GRAPE_GEN_BODY_SYNC_STREAM(...) GRAPE_GEN_BODY_GENERIC(SYNC_STREAM, __VA_ARGS__)
#define GRAPE_GEN_BODY_WAIT_ALL(...) GRAPE_GEN_BODY_GENERIC(WAIT_ALL, __VA_ARGS__)
#define GRAPE_GEN_BODY_WAIT_STREAM(...) GRAPE_GEN_BODY_GENERIC(WAIT_STREAM, __VA_ARGS__)
#define GRAPE_GEN_BODY_REPORT(...) GRAPE_GEN_BODY_GENERIC(REPORT, __VA_ARGS__)
#define GRAPE_GEN_BODY_MANUAL(...)

#endif
