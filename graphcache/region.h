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
 * Not thread-safe: the owner (interpose/'s per-stream slot) locks it. */
#ifndef GRAPE_GRAPHCACHE_REGION_H
#define GRAPE_GRAPHCACHE_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "fingerprint.h"
#include "footprint.h"

enum {
  GRAPE_SIG_CUKERNEL = 1u << 2,   /* the op's function is a CUkernel, not a CUfunction */
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

typedef struct grape_region_s {
  uint32_t nops, cap;          /* ops recorded, capacity of the per-op arrays */
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
  /* Graph mode (graphcache/entry.c): while `cur` is not NULL the ops so far
   * follow a known path: the first `sub` of them were launched as segments,
   * ops [sub, held) are held back from the driver; NULL means the rest of the
   * chunk runs eagerly. `graphed` ops went to the device inside graphs, in
   * `segs` graph launches with `updates` node updates. `ctx` is what the
   * caller builds this region's graphs in (the shim's CUcontext). */
  const struct grape_gc_node_s* cur;
  uint32_t held, sub, graphed, segs, updates;
  void* ctx;
  /* Measured cycles (graph mode with a clock, verdict.c): when this chunk's
   * first op came (0: not timed), and the chunk before it: its key, whether
   * it was replayed, when it started, and whether its cycle is to be ignored
   * (a graph was built in it), and when it ended if it ran eagerly (0: not,
   * or its wait was measured). */
  uint64_t t_first;
  const void* prev_key;
  uint64_t prev_t, prev_end;
  int prev_replayed, prev_skip;
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

/* Appends one op (params may be NULL when n is 0). Reserve first. */
static inline void grape__region_push(grape_region_t* r, const grape_op_key_t* key,
                                      const grape_op_dims_t* dims, void* fn, const void* params,
                                      size_t n) {
  uint32_t i = r->nops;
  r->keys[i] = *key;
  r->dims[i] = *dims;
  r->fns[i] = fn;
  r->grp[i] = 0;
  r->poff[i] = (uint32_t)r->plen;
  for (size_t k = 0; k < n; k++)
    r->params[r->plen + k] = ((const uint8_t*)params)[k];
  r->plen += n;
  r->nops = i + 1;
}

#endif
