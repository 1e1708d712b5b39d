/* What every launch route does: in graph mode, try to hold the launch; else,
 * once the real launch has succeeded, count it, find the function's info,
 * capture its arguments and record the op. Async memsets and device-to-device
 * copies go the same two ways.
 *
 * DESIGN: inlined into each launch hook, because this is the per-launch path
 * and one more call costs as much as recording. Arguments are copied once,
 * following the function's cached layout, straight into the stream's region
 * (reserved under the stream's lock). A held launch is recorded instead of
 * submitted and reported as a success: only launches the driver would take
 * are held (a resolved layout and driver function, no launch attribute a
 * graph's kernel node does not carry, no cooperative launch, dimensions
 * within the function's limits); any other op
 * makes the region leave its known path first, so it reaches the driver in
 * program order and returns its own result. */
#ifndef GRAPE_INTERPOSE_LAUNCH_H
#define GRAPE_INTERPOSE_LAUNCH_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "collective.h"
#include "footprint.h"
#include "funcinfo.h"
#include "graph.h"
#include "graphcache/fingerprint.h"
#include "nvtx.h"
#include "cuda_types.h"
#include "hooks.h"
#include "state.h"
#include "streams.h"

typedef struct grape_launch_s {
  const void* fn;           /* the handle the caller launched */
  int kind;                 /* grape_handle_kind_t of fn */
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shmem;
  const void* stream;       /* as passed */
  int ptds;                 /* per-thread-default-stream entry point */
  void** params;            /* kernelParams, or NULL */
  void** extra;             /* the 'extra' form, or NULL */
  uint32_t flags;           /* GRAPE_SIG_* */
  const void* attrs;        /* launch attributes (deep-copied with the parameters) */
  size_t attrs_bytes;
} grape_launch_t;

/* GRAPE_LOG=debug: one line per launch with its captured parameter bytes. */
void grape__log_launch(grape_route_t route, const grape_func_t* f, const grape_launch_t* l,
                       const uint8_t* p, size_t n);

/* Chunk length (GRAPE_CHUNK), read once. */
/* Threads: stored (relaxed) by the first launches that read GRAPE_CHUNK, loaded (relaxed) by
 * every launch: an initializing race resolves to the same value (mimalloc's options). */
extern long grape__chunk;
long grape__chunk_slow(void);
static inline __attribute__((always_inline)) uint32_t grape__chunk_limit(void) {
  long c = __atomic_load_n(&grape__chunk, __ATOMIC_RELAXED);
  return (uint32_t)(__builtin_expect(c > 0, 1) ? c : grape__chunk_slow());
}

/* True when s's chunk is full: at GRAPE_CHUNK ops; or, in a loop that never
 * synchronises, at the phase its last full chunk ended at (after the same two
 * ops), when the next such point would pass GRAPE_CHUNK: every chunk then
 * starts at the same op of the loop's step and they recur as one path. The
 * step's length is the distance between two such points in the chunk's
 * second half (longer steps: chunks end at GRAPE_CHUNK). Under s's lock. */
static inline __attribute__((always_inline)) int grape__chunk_done(grape_stream_t* s) {
  const grape_region_t* r = &s->region;
  uint32_t lim = grape__chunk_limit(), n = r->ops.n;
  if (__builtin_expect(n < s->phase_from || n >= lim, 1))
    return n >= lim;
  if (s->phase_memo_n == n && s->phase_memo_gen == r->ops.gen)
    return s->phase_memo;   /* asked again for the same op (ops only grow until a clear) */
  s->phase_memo_n = n;
  s->phase_memo_gen = r->ops.gen;
  if (!grape__gc_key_eq(&r->ops.keys[n - 1], &s->phase[1]) ||
      !grape__gc_key_eq(&r->ops.keys[n - 2], &s->phase[0]))
    return s->phase_memo = 0;
  uint32_t prev = s->phase_chunk == s->chunks ? s->phase_at : 0;
  if (prev == n)
    return s->phase_memo = s->phase_end;   /* asked again for the same op */
  s->phase_at = n;
  s->phase_chunk = s->chunks;
  s->phase_end = prev != 0 && n + (n - prev) > lim;
  return s->phase_memo = s->phase_end;
}

/* s's chunk ends full: its last two ops mark the phase the next full one
 * ends at. */
static inline void grape__chunk_phase_note(grape_stream_t* s) {
  const grape_region_t* r = &s->region;
  if (r->ops.n >= 2) {
    s->phase[0] = r->ops.keys[r->ops.n - 2];
    s->phase[1] = r->ops.keys[r->ops.n - 1];
    s->phase_known = 1;
    uint32_t half = grape__chunk_limit() / 2;
    s->phase_from = half < 2 ? 2 : half;   /* one compare on grape__chunk_done's fast path */
  }
}

/* Appends an op to r (reserved: grape__lock_room) whose n parameter bytes
 * are already at grape__region_next_params(r), tagged with the library call
 * it came from (footprint.h): the one way the shim records an op, held or
 * not, launch or memory op. */
static inline __attribute__((always_inline)) void grape__record_op(grape_region_t* r,
                                                                   const grape_op_key_t* k,
                                                                   const grape_op_dims_t* d,
                                                                   void* fn, size_t n) {
  uint32_t i = grape__region_push_placed(r, k, d, fn, n);
  r->ops.grp[i] = grape__call_tag(r, i);
}

/* Locks stream s with room for one more op of up to max_bytes parameters;
 * a region at its chunk length ends first. sent: the op has gone to the
 * driver already (recorded after its submission), not held. @return 0, or
 * -ENOMEM (unlocked). */
int grape__room_slow(grape_stream_t* s, size_t max_bytes);
static inline __attribute__((always_inline)) int
grape__lock_room(grape_stream_t* s, size_t max_bytes, int sent) {
  spin_lock(&s->lock);
  grape_region_t* r = &s->region;
  if (__builtin_expect(r->ops.n >= r->ops.cap || r->ops.plen + max_bytes > r->ops.pcap ||
                           grape__chunk_done(s), 0) &&
      grape__room_slow(s, max_bytes) != 0)
    return -ENOMEM;
  if (r->ops.n == 0 && __atomic_load_n(&grape__timed, __ATOMIC_RELAXED)) {
    r->timers.t_first = grape__clock_ns();   /* once per chunk: its cycle starts */
    r->timers.first_sent = sent;
  }
  return 0;
}

/* The op key of a launch of f, handle fn (named by it when f is NULL; the
 * graph key's element). */
static inline __attribute__((always_inline)) void
grape__launch_key(const grape_func_t* f, const void* fn, uint32_t n, uint32_t flags,
                  grape_op_key_t* k) {
  k->kind = GRAPE_OP_KERNEL;
  k->param_bytes = n;
  k->func = f ? f->id : (uint64_t)(uintptr_t)fn;
  k->flags = flags | (f && f->drv_kernel ? GRAPE_SIG_CUKERNEL : 0);
  k->attrs_bytes = 0;
  k->attrs = 0;
}

/* The dimensions of launch l, as an op records them. */
static inline __attribute__((always_inline)) grape_op_dims_t
grape__launch_dims(const grape_launch_t* l) {
  return (grape_op_dims_t){{l->grid[0], l->grid[1], l->grid[2]},
                           {l->block[0], l->block[1], l->block[2]}, l->shmem, 0};
}

/* True when every launch attribute of l is one a graph's kernel node carries
 * too (priority, cluster shape, memory-sync domain, L2 access policy), so the
 * launch can be held and replayed. */
static inline __attribute__((always_inline)) int grape__attrs_node_safe(const grape_launch_t* l) {
  const CUlaunchAttribute* a = l->attrs;
  for (size_t i = 0; i < l->attrs_bytes / sizeof(*a); i++)
    switch (a[i].id) {
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      break;
    default:
      return 0;
    }
  return 1;
}

/* Copies count launch attributes to dst keeping only what each one means:
 * its id and the bytes of its value's member, padding and the union's other
 * bytes zeroed, so that equal attributes are equal bytes (a program need not
 * initialise the rest, and every launch would otherwise be a new path).
 * dst follows the launch's parameter bytes in a region, so it may be
 * misaligned: it is written bytewise, and read back by copying out. */
void grape__attrs_canon(void* dst, const CUlaunchAttribute* src, size_t count);

/* Keeps l's launch attributes after its n parameter bytes at dst (room
 * allowing) and names them in k. */
static inline __attribute__((always_inline)) void
grape__launch_attrs(const grape_launch_t* l, uint8_t* dst, size_t n, size_t room,
                    grape_op_key_t* k) {
  if (l->attrs_bytes && n + l->attrs_bytes <= room) {
    grape__attrs_canon(dst + n, l->attrs,
                       l->attrs_bytes / sizeof(CUlaunchAttribute));
    k->attrs = grape__fp_bytes(dst + n, l->attrs_bytes);
    k->attrs_bytes = (uint32_t)l->attrs_bytes;
  }
}

/* Room in the region for need bytes of a launch's parameters: at least 64,
 * for the constant-size clear and the widened stores of
 * grape__func_copy_params. */
static inline __attribute__((always_inline)) size_t grape__room_for(size_t need) {
  return need < 64 ? 64 : need;
}

/* Bytes a launch's parameters take in the region (grape__room_for). */
static inline __attribute__((always_inline)) size_t
grape__launch_room(const grape_func_t* f, const grape_launch_t* l, int extra_form) {
  size_t need = extra_form ? grape__extra_size(l->extra) : f != NULL && f->nparams >= 0 ? f->param_bytes : 0;
  return grape__room_for(need + l->attrs_bytes);
}

/* Copies a launch's parameters to dst (room from grape__launch_room).
 * @return their bytes (0 when the layout is unknown). */
static inline __attribute__((always_inline)) size_t
grape__launch_params(const grape_func_t* f, const grape_launch_t* l, int extra_form, uint8_t* dst,
                     size_t room) {
  if (extra_form)
    return grape__capture_extra(l->extra, dst, room);
  if (f != NULL && f->nparams >= 0 && l->params != NULL)
    return grape__func_copy_params(f, l->params, dst);
  return 0;
}

/* True when a launch of f with these arguments (kernelParams params or a
 * buffer in extra) points into shared memory (collective.h), looked for only
 * when some exists: pinned host buffers, say. */
static inline __attribute__((always_inline)) int grape__args_shared(const grape_func_t* f,
                                                                    void** params, void** extra) {
  return __builtin_expect(grape__alloc_shared_any(), 0) && grape__params_shared(f, params, extra);
}

/* True when launch l of f is in the barrier class (collective.h): never
 * held, a region of its own, every stream's held work first. */
static inline __attribute__((always_inline)) int grape__launch_barrier(grape_func_t* f,
                                                                       const grape_launch_t* l) {
  return (l->flags & GRAPE_SIG_COOPERATIVE) || (f != NULL && grape__func_collective(f)) ||
         grape__args_shared(f, l->params, l->extra);
}

/* True when the fast paths may take a kernelParams launch of f: its layout
 * is known and it is not in the barrier class (grape__launch_barrier's test
 * without a launch record). */
static inline __attribute__((always_inline)) int grape__fast_form(grape_func_t* f,
                                                                  void** params) {
  return f != NULL && f->nparams >= 0 && !grape__func_collective(f) &&
         !grape__args_shared(f, params, NULL);
}

/* ---- Graph mode: hold a launch ---- */

/* Held ops reached a cut: the segment ending there is launched (s locked). */
void grape__held_cut(grape_stream_t* s);
/* Held launches end their chunk here when it is at its length. */
void grape__held_chunk_end(grape_stream_t* s);
/* The region leaves its known path: what it holds goes first, the rest of
 * the chunk runs eagerly (s locked). */
void grape__diverge(grape_stream_t* s, grape_gc_cause_t cause);

/* The op just pushed on s's region was held at trie node nx: the region
 * follows nx, s goes on the holding list with its first held op, a cut
 * launches the segment ending there, and the chunk ends at its length.
 * Unlocks s. */
static inline __attribute__((always_inline)) void grape__held_unlock(grape_stream_t* s,
                                                                     const grape_gc_node_t* nx) {
  grape_region_t* r = &s->region;
  r->cursor.node = nx;
  if (r->cursor.held++ == 0)
    grape__hold_begun(s);
  if (__builtin_expect(grape_gc_is_cut(nx), 0))
    grape__held_cut(s);
  if (__builtin_expect(grape__chunk_done(s), 0))
    grape__held_chunk_end(s);
  spin_unlock(&s->lock);
}

/* True when s's next op may be held (read without the lock, checked again
 * under it): its chunk follows a known path, or is at its length (the next
 * chunk starts on the root). A stream first seen here is classified on this
 * thread, which launches on it and so has its context current. */
void grape__stream_meet(grape_stream_t* s);
static inline __attribute__((always_inline)) int grape__may_hold(grape_stream_t* s) {
  if (__builtin_expect(__atomic_load_n(&s->kind, __ATOMIC_RELAXED) == GRAPE_STREAM_UNKNOWN, 0))
    grape__stream_meet(s);
  /* A chunk past half its length may end at its phase (grape__chunk_done,
   * decided under the lock). */
  return __atomic_load_n(&s->region.cursor.node, __ATOMIC_RELAXED) != NULL ||
         s->region.ops.n >= (s->phase_known ? grape__chunk_limit() / 2 : grape__chunk_limit());
}

/* Before a chunk's first held op (s locked): the chunk runs eagerly when s's
 * work may not be held now (graph.h, grape__hold_ready). */
static inline __attribute__((always_inline)) void grape__hold_check_first(grape_stream_t* s) {
  if (__builtin_expect(s->region.cursor.held == 0, 0) && s->region.cursor.node != NULL && !grape__hold_ready(s))
    s->region.cursor.node = NULL;
}

/* A barrier-class launch is recorded on s (locked): the region before it
 * ends first, and its own ends after it (launch.c). begin @return 0, or
 * -ENOMEM (s unlocked: the op goes unrecorded). */
int grape__barrier_begin(grape_stream_t* s, size_t room);
void grape__barrier_end(grape_stream_t* s, int cooperative);

/* The held launch that found no slot to take in place (grape__hold_launch,
 * s locked, its cursor on a path): checked, its parameters copied to dst
 * and key made, one step down the trie, recorded as held.
 * Out of line, so that the in-place path keeps its registers.
 * @return the trie node it was held at (*n its parameter bytes), or NULL:
 * the region left its known path (grape__diverge) and the launch goes to the
 * driver. */
const grape_gc_node_t* grape__hold_walk(grape_stream_t* s, grape_func_t* f,
                                        const grape_launch_t* l, int extra_form, uint8_t* dst,
                                        size_t room, uint32_t stamp, size_t* n);

/* The stamp held slots are marked with (grape__region_mark_held): the
 * functions' generation (funcinfo.h), so that a slot's limits check and the
 * info it was held with stand only while no function changed. */
static inline __attribute__((always_inline)) uint32_t grape__hold_stamp(void) {
  return __atomic_load_n(&grape__func_generation, __ATOMIC_RELAXED);
}

/* The slot the region's next op held in an earlier chunk, taken in place
 * when launch (f, dimensions d) is that op again (s locked, its cursor on a
 * path, f's layout known, kernelParams without attributes): held at a child
 * of the cursor, checked against the same limits (stamp), with the same key,
 * dimensions and function (a held slot's function is f->drv, never NULL).
 * Its parameters are copied to dst (*n their bytes) once the checks that
 * need none have passed. @return the trie node it was held at, or NULL: the
 * slot is not taken (dst may hold the launch's parameters, *n then set). */
static inline __attribute__((always_inline)) const grape_gc_node_t*
grape__hold_in_place(grape_region_t* r, grape_func_t* f, void** params,
                     const grape_op_dims_t* d, uint32_t stamp, uint8_t* dst, size_t* n) {
  const grape_gc_node_t* nx = grape__region_slot_held(r, f->drv);
  if (__builtin_expect(nx == NULL || nx->parent != r->cursor.node ||
                           __atomic_load_n(&nx->live, __ATOMIC_RELAXED) == 0 ||
                           r->ops.held_stamp != stamp || grape__call != NULL ||
                           __atomic_load_n(&f->lim_state, __ATOMIC_ACQUIRE) != 1, 0))
    return NULL;
  *n = grape__func_copy_params(f, params, dst);
  grape_op_key_t k;
  grape__launch_key(f, f->handle, (uint32_t)*n, 0, &k);
  if (__builtin_expect(!grape__region_slot_same(r, &k, d), 0))
    return NULL;
  grape__region_take_slot(r, *n);
  return nx;
}

/* What the fast path found for a launch (grape__hold_hit). */
enum { GRAPE_FAST_FULL = 0, GRAPE_FAST_HELD = 1, GRAPE_FAST_EAGER = 2 };
typedef struct grape_fast_s {
  grape_stream_t* s;   /* GRAPE_FAST_EAGER: the launch's stream and function */
  grape_func_t* f;
} grape_fast_t;

/* True when s's chunk left its known path and is in its middle: past its
 * first op and not done (grape__chunk_done), where the full path neither
 * holds a launch nor ends the chunk before it (s locked). */
static inline __attribute__((always_inline)) int grape__eager_mid(grape_stream_t* s) {
  return s->region.cursor.node == NULL && s->region.ops.n > 0 && !grape__chunk_done(s);
}

/* The fast eager path: a launch with kernelParams on stream s (key its
 * stream key) whose chunk left its known path (s's cursor NULL), in its
 * middle (grape__eager_mid), so that the full path would not hold it and
 * would record it after its submission (grape__hold_launch,
 * grape__on_launch). Its function (handle fn of kind)
 * must have a known layout, and the launch (kernelParams params) not be in
 * the barrier class. Out of line: inlined, it costs the hit path registers
 * (docs/performance.md, ninth round). @return GRAPE_FAST_EAGER (fa set: the
 * launch goes to the driver, then grape__record_fast records it), or
 * GRAPE_FAST_FULL. */
static __attribute__((noinline, unused)) int
grape__eager_fast(grape_stream_t* s, uintptr_t key, const void* fn, grape_handle_kind_t kind,
                  void** params, unsigned t, grape_fast_t* fa) {
  /* The full path ticks twice for such a launch (grape__hold_launch, then
   * grape__on_launch): one whose record is timed takes it, so that the
   * shim's time is sampled from the same ops. */
  if (__builtin_expect(((t + 1) & 31) == 0 ||
                           __atomic_load_n(&s->kind, __ATOMIC_RELAXED) == GRAPE_STREAM_UNKNOWN, 0))
    return GRAPE_FAST_FULL;
  grape_func_t* f = grape__func_get(fn, kind);
  if (__builtin_expect(!grape__fast_form(f, params), 0))
    return GRAPE_FAST_FULL;
  spin_lock(&s->lock);
  int mid = grape__eager_mid(s);
  spin_unlock(&s->lock);
  if (__builtin_expect(!mid, 0))
    return GRAPE_FAST_FULL;
  grape__order_stream(s, key);   /* the legacy stream's ordering, as the full path */
  grape__shim_tick = t + 1;   /* the full path's two ticks (hold, record) */
  fa->s = s;
  fa->f = f;
  return GRAPE_FAST_EAGER;
}

/* The hit path (graph mode): a launch on a stream whose chunk follows a
 * known path, with kernelParams and no attributes, that is the op its region
 * held at the same slot in an earlier chunk. The function's info is the one
 * the slot was held with for the same handle (no lookup): it is the info a
 * lookup gives while the stamp holds (grape__hold_stamp). Anything else (a
 * chunk's first held op, a chunk at its start or its length, an op whose
 * work is timed, a capture, a pass, NVTX, debug logging, a barrier, a slot
 * that differs or was held as another handle) returns 0 having changed
 * nothing but bytes past the region's parameters, and the launch takes
 * grape__hold_launch, which decides the same way from the start; a chunk
 * that left its path takes grape__eager_fast. The hook calls it only with
 * the timeline off. @return GRAPE_FAST_HELD when the launch was held,
 * GRAPE_FAST_EAGER (fa set) or GRAPE_FAST_FULL. */
static inline __attribute__((always_inline)) int
grape__hold_hit(grape_route_t route, const void* fn, grape_handle_kind_t kind, uint32_t gx,
                uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, uint32_t shm,
                const void* stream, int ptds, void** params, grape_fast_t* fa) {
  if (__builtin_expect((__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) |
                        __atomic_load_n(&grape__pass, __ATOMIC_RELAXED) | grape__nvtx_on) != 0 ||
                           params == NULL || grape__log_level() >= GRAPE_LOG_DEBUG, 0))
    return GRAPE_FAST_FULL;
  unsigned t = grape__shim_tick + 1;   /* an op whose work is timed takes the full path */
  if (__builtin_expect((t & 31) == 0 || t <= 64, 0))
    return GRAPE_FAST_FULL;
  uintptr_t key = grape__stream_key(stream, ptds);
  grape_stream_t* s = grape__stream_of(key);
  if (__builtin_expect(s == NULL, 0))
    return GRAPE_FAST_FULL;
  if (__builtin_expect(__atomic_load_n(&s->region.cursor.node, __ATOMIC_RELAXED) == NULL, 0))
    return grape__eager_fast(s, key, fn, kind, params, t, fa);
  grape__order_stream(s, key);   /* the legacy stream's ordering, held or not */
  spin_lock(&s->lock);
  grape_region_t* r = &s->region;
  uint32_t stamp = grape__hold_stamp();
  grape_func_t* f = (grape_func_t*)grape__region_slot_info(r, fn);
  if (__builtin_expect(r->ops.n == 0 || r->ops.n >= r->ops.cap || r->cursor.node == NULL ||
                           r->cursor.held == 0 || r->ops.held_stamp != stamp ||
                           !grape__fast_form(f, params) ||
                           r->ops.plen + grape__room_for(f->param_bytes) > r->ops.pcap ||
                           grape__chunk_done(s), 0))
    goto full;
  grape_op_dims_t d = {{gx, gy, gz}, {bx, by, bz}, shm, 0};
  size_t n;
  const grape_gc_node_t* nx = grape__hold_in_place(r, f, params, &d, stamp, grape__region_next_params(r), &n);
  if (__builtin_expect(nx == NULL, 0))
    goto full;
  grape__shim_tick = t;
  GRAPE_COUNT(launches[route]);
  grape__charge_op();
  grape__held_unlock(s, nx);
  return GRAPE_FAST_HELD;
full:
  spin_unlock(&s->lock);
  return GRAPE_FAST_FULL;
}

/* Tries to hold launch l (graph mode). @return 1 when it was held (recorded,
 * not submitted: the hook returns success), 0 when it goes to the driver. */
static inline __attribute__((always_inline)) int grape__hold_launch(grape_route_t route,
                                                                    const grape_launch_t* l) {
  if (__builtin_expect(__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) > 0, 0) &&
      grape__stream_capturing(l->stream, l->ptds))
    return 0;
  if (__builtin_expect(grape__passing(), 0))
    return 0;
  uint64_t t0 = grape__shim_time_start();
  uintptr_t key = grape__stream_key(l->stream, l->ptds);
  grape_stream_t* s = grape__stream_of(key);
  grape__order_stream(s, key);   /* the legacy stream's ordering, held or not */
  grape_func_t* f = grape__func_get(l->fn, (grape_handle_kind_t)l->kind);
  if (__builtin_expect(grape__launch_barrier(f, l), 0)) {
    grape__barrier_flush();   /* every stream's held work goes first */
    return 0;
  }
  if (__builtin_expect(s == NULL || !grape__may_hold(s), 0))
    return 0;
  int extra_form = l->extra != NULL && l->params == NULL;
  /* kernelParams with a known layout and no attributes: the in-place form
   * below, whose room and copy need no other test. */
  int plain = !extra_form && l->attrs_bytes == 0 && f != NULL && f->nparams >= 0 &&
              l->params != NULL;
  size_t room = plain ? grape__room_for(f->param_bytes) : grape__launch_room(f, l, extra_form);
  if (grape__lock_room(s, room, 0) != 0)
    return 0;
  grape_region_t* r = &s->region;
  grape__hold_check_first(s);
  if (r->cursor.node != NULL) {
    const grape_gc_node_t* nx;
    grape_op_dims_t d = grape__launch_dims(l);
    uint8_t* dst = grape__region_next_params(r);
    size_t n = 0;
    uint32_t stamp = grape__hold_stamp();
    if (__builtin_expect(plain, 1)) {   /* a launch without attributes needs no attribute check */
      nx = grape__hold_in_place(r, f, l->params, &d, stamp, dst, &n);
      if (__builtin_expect(nx != NULL, 1)) {
        /* The slot now names this launch's handle, so that the next chunk's
         * launch of it takes the hit path (grape__hold_hit), which knows
         * the slot's function only by the handle it was held as. */
        grape__region_mark_held(r, r->ops.n - 1, nx, f, l->fn, stamp);
        goto held;
      }
    }
    nx = grape__hold_walk(s, f, l, extra_form, dst, room, stamp, &n);
    if (nx == NULL)
      goto eager;
  held:
    GRAPE_COUNT(launches[route]);
    GRAPE_NVTX_LAUNCH(l);
    grape__charge_op();
    if (__builtin_expect(grape__log_level() >= GRAPE_LOG_DEBUG, 0))
      grape__log_launch(route, f, l, dst, n);
    /* Timed before the cut it may reach: the segment's launch is the
     * graph launch's cost, timed on its own (segment.c). */
    if (__builtin_expect(t0 != 0, 0))
      grape__shim_time_end(t0);
    grape__held_unlock(s, nx);
    return 1;
  }
eager:
  r->cursor.node = NULL;
  spin_unlock(&s->lock);
  return 0;
}

/* ---- Every mode: record a launch that reached the driver ---- */

static inline __attribute__((always_inline)) void grape__record_launch(grape_route_t route,
                                                                      const grape_launch_t* l);

/* Records launch l that came through route, after the real launch succeeded
 * (once graph mode stood down: only counts it). Call only when
 * grape__active(). */
static inline __attribute__((always_inline)) void grape__on_launch(grape_route_t route,
                                                                  const grape_launch_t* l) {
  if (__builtin_expect(__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) > 0, 0) &&
      grape__stream_capturing(l->stream, l->ptds) == 1) {
    GRAPE_COUNT(captured);   /* the program's own graph: not ours */
    return;
  }
  GRAPE_COUNT(launches[route]);
  GRAPE_COUNT(submissions);
  GRAPE_NVTX_LAUNCH(l);
  if (grape__passed())
    return;
  uint64_t t0 = grape__shim_time_start();
  grape__record_launch(route, l);
  if (__builtin_expect(t0 != 0, 0))
    grape__shim_time_end(t0);
}

static inline __attribute__((always_inline)) void grape__record_launch(grape_route_t route,
                                                                      const grape_launch_t* l) {
  grape__charge_op();
  grape_func_t* f = grape__func_get(l->fn, (grape_handle_kind_t)l->kind);
  int extra_form = l->extra != NULL && l->params == NULL;
  if (!extra_form && (f == NULL || f->nparams < 0))
    GRAPE_COUNT(param_unknown);
  size_t room = grape__launch_room(f, l, extra_form);
  grape_stream_t* s = grape__stream_of(grape__stream_key(l->stream, l->ptds));
  if (s == NULL || grape__lock_room(s, room, 1) != 0)
    return;
  grape_region_t* r = &s->region;
  int barrier = grape__launch_barrier(f, l);
  if (__builtin_expect(barrier && r->ops.n > 0, 0) && grape__barrier_begin(s, room) != 0)
    return;
  uint8_t* dst = grape__region_next_params(r);
  size_t n = grape__launch_params(f, l, extra_form, dst, room);
  grape_op_key_t k;
  grape__launch_key(f, l->fn, (uint32_t)n, l->flags | (extra_form ? GRAPE_SIG_EXTRA : 0), &k);
  if (__builtin_expect(grape__log_level() >= GRAPE_LOG_DEBUG, 0))
    grape__log_launch(route, f, l, dst, n);
  grape__launch_attrs(l, dst, n, room, &k);
  grape_op_dims_t d = grape__launch_dims(l);
  /* A graph node can carry it only with a known layout and attributes a
   * kernel node has too (a barrier, cooperative ones included, never:
   * grape__barrier_end). */
  void* fn = f != NULL && (extra_form || f->nparams >= 0) &&
                     (k.attrs_bytes == l->attrs_bytes) && grape__attrs_node_safe(l)
                 ? f->drv
                 : NULL;
  grape__record_op(r, &k, &d, fn, n + k.attrs_bytes);
  r->cursor.node = NULL;   /* an op that went to the driver: the rest of the chunk does too */
  if (__builtin_expect(barrier, 0))
    grape__barrier_end(s, (l->flags & GRAPE_SIG_COOPERATIVE) != 0);   /* never in a graph key */
  spin_unlock(&s->lock);
}

/* Records launch l, submitted after grape__eager_fast found it (fa), as
 * grape__on_launch would: its chunk must still be in its middle, off its
 * path, with room and nothing captured or passed; otherwise l takes
 * grape__on_launch. */
static inline __attribute__((always_inline)) void
grape__record_fast(grape_route_t route, const grape_fast_t* fa, const grape_launch_t* l) {
  grape_stream_t* s = fa->s;
  grape_func_t* f = fa->f;
  spin_lock(&s->lock);
  grape_region_t* r = &s->region;
  if (__builtin_expect(!grape__eager_mid(s) || r->ops.n >= r->ops.cap ||
                           r->ops.plen + grape__room_for(f->param_bytes) > r->ops.pcap ||
                           (__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) |
                            __atomic_load_n(&grape__pass, __ATOMIC_RELAXED)) != 0, 0)) {
    spin_unlock(&s->lock);
    grape__on_launch(route, l);
    return;
  }
  uint8_t* dst = grape__region_next_params(r);
  size_t n = grape__func_copy_params(f, l->params, dst);
  grape_op_key_t k;
  grape__launch_key(f, l->fn, (uint32_t)n, 0, &k);
  grape_op_dims_t d = grape__launch_dims(l);
  grape__record_op(r, &k, &d, f->drv, n);
  spin_unlock(&s->lock);
  GRAPE_COUNT(launches[route]);
  GRAPE_COUNT(submissions);
  grape__charge_op();
}

/* Records launch l after its submission succeeded: through the fast eager
 * path when grape__hold_hit took it (fa->s set), grape__on_launch
 * otherwise. */
static inline __attribute__((always_inline)) void
grape__launched(grape_route_t route, const grape_fast_t* fa, const grape_launch_t* l) {
  if (fa->s != NULL)
    grape__record_fast(route, fa, l);
  else
    grape__on_launch(route, l);
}

/* ---- Async memsets and device-to-device copies ---- */

typedef struct grape_memop_s {
  int kind;                             /* GRAPE_OP_MEMSET or GRAPE_OP_MEMCPY */
  uint32_t flags;                       /* GRAPE_SIG_TO_HOST for a copy into pinned memory */
  union {
    grape_memset_params_t set;
    grape_memcpy_params_t cpy;
  } p;
  const void* stream;
  int ptds;
} grape_memop_t;

/* The memop of an async memset of count elements of esize bytes (value v)
 * at dst, and of an async copy of n bytes, on stream s as the call names it
 * (ptds: its per-thread-default-stream flag). */
static inline grape_memop_t grape__memop_on(int kind, const void* s, int ptds) {
  grape_memop_t m;
  memset(&m, 0, sizeof(m));
  m.kind = kind;
  m.stream = s;
  m.ptds = ptds;
  return m;
}
static inline grape_memop_t grape__memset_op(uint64_t dst, uint32_t v, uint32_t esize, uint64_t count,
                                             const void* s, int ptds) {
  grape_memop_t m = grape__memop_on(GRAPE_OP_MEMSET, s, ptds);
  m.p.set = (grape_memset_params_t){dst, v, esize, count};
  return m;
}
static inline grape_memop_t grape__memcpy_op(uint64_t dst, uint64_t src, uint64_t n, const void* s,
                                             int ptds) {
  grape_memop_t m = grape__memop_on(GRAPE_OP_MEMCPY, s, ptds);
  m.p.cpy = (grape_memcpy_params_t){dst, src, n};
  return m;
}

/* The memop of an async copy of n bytes from device memory into page-locked
 * host memory (cudaMallocHost, cudaHostRegister): the host may read it only
 * after a sync, so it is an op of the region like a kernel. */
static inline grape_memop_t grape__memcpy_to_host_op(uint64_t dst, uint64_t src, uint64_t n,
                                                     const void* s, int ptds) {
  grape_memop_t m = grape__memcpy_op(dst, src, n, s, ptds);
  m.flags = GRAPE_SIG_TO_HOST;
  return m;
}

/* True when a copy of n bytes from src into dst may be an op of the region:
 * src is device memory the shim knows and [dst, dst + n) page-locked host
 * memory it knows (a copy into pageable memory returns only once done). */
int grape__copy_to_pinned(uint64_t dst, uint64_t src, uint64_t n);

/* Holds memop m (graph mode). @return 1 when held. */
int grape__hold_memop(const grape_memop_t* m);

/* Records memop m after the real call succeeded. */
void grape__on_memop(const grape_memop_t* m);

#endif
