/* The ops of one open region (or chunk of one): what a graph node needs.
 *
 * DESIGN: structure-of-arrays, so that the graph key and the path fingerprint
 * are one hash pass each over contiguous memory (fingerprint.h), and the
 * parameter blocks are copied once, straight from the launch into `params`.
 * Each op keeps the driver function to launch it with (not only the hash of
 * its name), so the region can be submitted eagerly, built into a graph or
 * compared with an executable graph without going back to the program.
 * Parameter blocks, by kind:
 *   kernel  the packed parameter block (alignment gaps zeroed), as the driver's
 *           CU_LAUNCH_PARAM_BUFFER_POINTER takes it; param_bytes of the key;
 *   memset  grape_memset_params_t;   memcpy  grape_memcpy_params_t.
 * A region is three parts: its ops (what was recorded), the graph-mode
 * cursor (where on a known path the ops are, what is held, what went in
 * graphs) and the timers of measured cycles. An op joins only through
 * grape__region_push_placed (the shim: grape__record_op) or
 * grape__region_push.
 * Not thread-safe: the owner (interpose/'s per-stream slot) locks it. */
#ifndef GRAPE_GRAPHCACHE_REGION_H
#define GRAPE_GRAPHCACHE_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "fingerprint.h"
#include "footprint.h"

enum {
  GRAPE_SIG_CUKERNEL = 1u << 2,   /* the op's function is a CUkernel, not a CUfunction */
  GRAPE_SIG_TO_HOST = 1u << 3,    /* a copy into page-locked host memory (else device to
                                     device): asynchronous for the host like a kernel */
};

typedef struct grape_memset_params_s {
  uint64_t dst;
  uint32_t value;         /* the element value (low esize bytes) */
  uint32_t esize;         /* 1, 2 or 4 */
  uint64_t count;         /* elements */
} grape_memset_params_t;

typedef struct grape_memcpy_params_s {
  uint64_t dst;
  uint64_t src;
  uint64_t bytes;
} grape_memcpy_params_t;

struct grape_gc_node_s;   /* graphcache/trie.c: a trie node of the known paths */

/* The ops themselves: what a graph node needs, structure of arrays. */
typedef struct grape_region_ops_s {
  uint32_t n, cap;             /* ops recorded, capacity of the per-op arrays */
  grape_op_key_t* keys;
  grape_op_dims_t* dims;
  void** fns;                  /* driver function per kernel op; NULL: not replayable */
  uint32_t* poff;              /* each op's offset into params */
  uint8_t* params;
  size_t plen, pcap;
  /* Footprints (footprint.h): each op's tag, and the footprints of the
   * library calls its ops came from (appended by the shim once per call and
   * region). `gen` counts the chunks the region held (a tag never outlives
   * its chunk). */
  uint32_t* grp;
  grape_foot_t* foot;
  uint32_t nfoot;
  size_t foot_cap;
  uint32_t gen;
  /* In-place recording: a slot keeps its op after a clear, so a chunk that
   * repeats the last one finds each op already there and need not write it
   * (grape__region_slot_held). Slots below `hw` hold an op of some earlier
   * chunk in these buffers; held[i] says where op i was held, for a launch
   * checked against its function's limits under `held_stamp` (the shim's
   * count of limit changes, unloads and functions registered again). */
  struct grape_region_held_s* held;
  uint32_t hw, held_stamp;
} grape_region_ops_t;

/* Where a slot's op was held: the trie node (NULL: not held), and the
 * caller's handle and info of the function it launched (opaque here: the
 * shim's in-place path reads the info of a launch of the same handle
 * instead of looking the function up). */
typedef struct grape_region_held_s {
  const struct grape_gc_node_s* at;
  const void* info;
  const void* handle;
} grape_region_held_t;

/* Graph mode (graphcache/entry.c): while `node` is not NULL the ops so far
 * follow a known path: the first `sub` of them were launched as segments,
 * ops [sub, held) are held back from the driver; NULL means the rest of the
 * chunk runs eagerly. `graphed` ops went to the device inside graphs, in
 * `segs` graph launches with `updates` node updates. `ctx` is what the
 * caller builds this region's graphs in (the shim's CUcontext). */
typedef struct grape_region_cursor_s {
  const struct grape_gc_node_s* node;
  uint32_t held, sub, graphed, segs, updates;
  void* ctx;
} grape_region_cursor_t;

/* Measured cycles (graph mode with a clock, verdict.c): when this chunk's
 * first op came (0: not timed), and whether that op had already gone to the
 * driver then (recorded after its submission: its launch is not in the
 * chunk's span), and the chunk before it: its key, whether
 * it was replayed, when it started, and whether its cycle is to be ignored
 * (a graph was built in it), and when it ended if it ran eagerly (0: not,
 * or its wait was measured). */
typedef struct grape_region_timers_s {
  uint64_t t_first;
  int first_sent;
  const void* prev_key;
  uint64_t prev_t, prev_end;
  int prev_replayed, prev_skip;
} grape_region_timers_t;

typedef struct grape_region_s {
  grape_region_ops_t ops;
  grape_region_cursor_t cursor;
  grape_region_timers_t timers;
} grape_region_t;

/* Makes room for one more op with up to max_bytes of parameters.
 * @return 0, or -ENOMEM (nothing changed). */
int grape__region_reserve(grape_region_t* r, size_t max_bytes);

/* Forgets the ops (keeps the memory). */
void grape__region_clear(grape_region_t* r);

/* Appends footprint f. @return its tag (grp value), or 0 when out of memory
 * (the ops it tags are then opaque). */
uint32_t grape__region_add_foot(grape_region_t* r, const grape_foot_t* f);

/* Forgets the ops and gives the buffers back to a small pool that the next
 * region to need buffers takes them from, so that a stream between regions
 * (an idle one) holds no buffers, and a busy one reuses the same ones. */
void grape__region_release(grape_region_t* r);

/* Frees the memory; r is empty afterwards. */
void grape__region_free(grape_region_t* r);

/* Where the next op's parameter block goes (reserve first): a launch packs
 * its parameters there, then pushes the op with grape__region_push_placed. */
static inline __attribute__((always_inline)) uint8_t* grape__region_next_params(grape_region_t* r) {
  return r->ops.params + r->ops.plen;
}

/* Appends one op whose n parameter bytes are in place at
 * grape__region_next_params(r), with footprint tag 0 (a tag is made from the
 * op once it is in: the shim's grape__record_op). Reserve first: the one way
 * an op joins a region. @return its index. */
static inline __attribute__((always_inline)) uint32_t
grape__region_push_placed(grape_region_t* r, const grape_op_key_t* key, const grape_op_dims_t* dims,
                          void* fn, size_t n) {
  grape_region_ops_t* o = &r->ops;
  uint32_t i = o->n;
  o->keys[i] = *key;
  o->dims[i] = *dims;
  o->fns[i] = fn;
  o->poff[i] = (uint32_t)o->plen;
  o->plen += n;
  o->n = i + 1;
  o->grp[i] = 0;
  o->held[i].at = NULL;
  if (i >= o->hw)
    o->hw = i + 1;
  return i;
}

/* The trie node at which the slot of the next op was held in an earlier
 * chunk when that op had function fn and its parameters at the next offset,
 * with footprint tag 0; NULL otherwise. With grape__region_slot_same, the
 * slot holds exactly the op about to be recorded, so recording it needs only
 * its parameter bytes written over the slot's (grape__region_take_slot):
 * every reader of the ops then reads it from the slot, as if it had been
 * pushed. These checks come first because they need no parameter bytes. */
static inline __attribute__((always_inline)) const struct grape_gc_node_s*
grape__region_slot_held(const grape_region_t* r, const void* fn) {
  const grape_region_ops_t* o = &r->ops;
  uint32_t i = o->n;
  if (i >= o->hw || o->fns[i] != fn || o->poff[i] != o->plen || o->grp[i] != 0)
    return NULL;
  return o->held[i].at;
}

/* The caller's info for the op the next slot held in an earlier chunk when
 * that op was launched as handle (grape_region_held_t), else NULL. */
static inline __attribute__((always_inline)) const void*
grape__region_slot_info(const grape_region_t* r, const void* handle) {
  const grape_region_ops_t* o = &r->ops;
  uint32_t i = o->n;
  return i < o->hw && o->held[i].at != NULL && o->held[i].handle == handle ? o->held[i].info : NULL;
}

/* True when the next slot's op has this key and these dimensions. */
static inline __attribute__((always_inline)) int
grape__region_slot_same(const grape_region_t* r, const grape_op_key_t* key,
                        const grape_op_dims_t* dims) {
  const grape_region_ops_t* o = &r->ops;
  /* Word by word against the fields, so that a caller's key and dims stay
   * in registers (built from scalars, never stored to be compared). */
  const uint8_t* sk = (const uint8_t*)&o->keys[o->n];
  const uint8_t* sd = (const uint8_t*)&o->dims[o->n];
  uint64_t diff = (grape__word(sk, 0) ^ grape__pair32(key->kind, key->param_bytes)) |
                  (grape__word(sk, 1) ^ key->func) |
                  (grape__word(sk, 2) ^ grape__pair32(key->flags, key->attrs_bytes)) |
                  (grape__word(sk, 3) ^ key->attrs) |
                  (grape__word(sd, 0) ^ grape__pair32(dims->grid[0], dims->grid[1])) |
                  (grape__word(sd, 1) ^ grape__pair32(dims->grid[2], dims->block[0])) |
                  (grape__word(sd, 2) ^ grape__pair32(dims->block[1], dims->block[2])) |
                  (grape__word(sd, 3) ^ grape__pair32(dims->shmem, dims->zero));
  return diff == 0;
}

/* Takes the next slot as it is (grape__region_slot_held), its n parameter
 * bytes written at grape__region_next_params(r). */
static inline __attribute__((always_inline)) void grape__region_take_slot(grape_region_t* r,
                                                                          size_t n) {
  r->ops.plen += n;
  r->ops.n++;
}

/* Marks op i, just pushed, held at trie node at under stamp, launched as
 * handle with the caller's info (grape_region_held_t); a new stamp forgets
 * what the slots' earlier ops were held at. */
void grape__region_held_restamp(grape_region_t* r, uint32_t stamp);
static inline __attribute__((always_inline)) void
grape__region_mark_held(grape_region_t* r, uint32_t i, const struct grape_gc_node_s* at,
                        const void* info, const void* handle, uint32_t stamp) {
  if (__builtin_expect(r->ops.held_stamp != stamp, 0))
    grape__region_held_restamp(r, stamp);
  r->ops.held[i] = (grape_region_held_t){at, info, handle};
}

/* Appends one op, copying its n parameter bytes (params may be NULL when n
 * is 0), with footprint tag 0. Reserve first. */
static inline void grape__region_push(grape_region_t* r, const grape_op_key_t* key,
                                      const grape_op_dims_t* dims, void* fn, const void* params,
                                      size_t n) {
  uint8_t* dst = grape__region_next_params(r);
  for (size_t k = 0; k < n; k++)
    dst[k] = ((const uint8_t*)params)[k];
  grape__region_push_placed(r, key, dims, fn, n);
}

#endif
