/* The ops of one open region (see region.h). */
#include "region.h"

#include <errno.h>
#include <stdlib.h>

#include "util/grow.h"

/* First capacities: what a stream that launches a few kernels per sync needs.
 * A program may hold work on 100,000 streams at once (each launches a few
 * kernels, then the device is synchronised), so a region starts small and
 * doubles: 64 ops and 4 KiB of parameters each cost such a stream 9 KiB. */
#define FIRST_OPS 4
#define FIRST_PARAM_BYTES 64

/* Grows one per-op array to ncap elements of size sz; NULL on failure (the
 * old array stays valid). */
static void* grow(void* p, uint32_t ncap, size_t sz) {
  return realloc(p, (size_t)ncap * sz);
}

/* Buffers of regions between two chunks: a handful, reused by whichever
 * region starts next (a test-and-set lock: held for a few stores). */
#define POOL 8
typedef struct bufs_s {
  grape_op_key_t* keys;
  grape_op_dims_t* dims;
  void** fns;
  uint32_t* poff;
  uint32_t* grp;
  uint8_t* params;
  grape_foot_t* foot;
  grape_region_held_t* held;
  const grape_region_t* owner;   /* the region that gave them back */
  uint32_t hw;
  uint32_t cap;
  size_t pcap, foot_cap;
} bufs_t;
static bufs_t pool[POOL];
static int npool, pool_lock;

static void pool_lock_take(void) {
  while (__atomic_exchange_n(&pool_lock, 1, __ATOMIC_ACQUIRE))
    ;
}

static void pool_lock_give(void) {
  __atomic_store_n(&pool_lock, 0, __ATOMIC_RELEASE);
}

void grape__region_release(grape_region_t* r) {
  grape__region_clear(r);
  if (r->ops.cap == 0 && r->ops.pcap == 0)
    return;
  bufs_t b = {r->ops.keys, r->ops.dims, r->ops.fns, r->ops.poff, r->ops.grp, r->ops.params, r->ops.foot, r->ops.held, r, r->ops.hw, r->ops.cap, r->ops.pcap, r->ops.foot_cap};
  pool_lock_take();
  int kept = npool < POOL;
  if (kept) { /* npool is stored atomically: grape__region_reserve peeks at it unlocked */
    pool[npool] = b;
    __atomic_store_n(&npool, npool + 1, __ATOMIC_RELAXED);
  }
  pool_lock_give();
  if (!kept) {
    free(b.keys);
    free(b.dims);
    free(b.fns);
    free(b.poff);
    free(b.grp);
    free(b.params);
    free(b.foot);
    free(b.held);
  }
  r->ops.keys = NULL;
  r->ops.dims = NULL;
  r->ops.fns = NULL;
  r->ops.poff = NULL;
  r->ops.grp = NULL;
  r->ops.params = NULL;
  r->ops.foot = NULL;
  r->ops.held = NULL;
  r->ops.hw = 0;
  r->ops.cap = 0;
  r->ops.pcap = 0;
  r->ops.foot_cap = 0;
}

int grape__region_reserve(grape_region_t* r, size_t max_bytes) {
  if (r->ops.cap == 0 && r->ops.pcap == 0 && __atomic_load_n(&npool, __ATOMIC_RELAXED) > 0) {
    pool_lock_take();
    if (npool > 0) {
      bufs_t b = pool[npool - 1];
      __atomic_store_n(&npool, npool - 1, __ATOMIC_RELAXED);
      r->ops.keys = b.keys;
      r->ops.dims = b.dims;
      r->ops.fns = b.fns;
      r->ops.poff = b.poff;
      r->ops.grp = b.grp;
      r->ops.params = b.params;
      r->ops.foot = b.foot;
      r->ops.held = b.held;
      /* The region's own last buffers (the pool is a stack: a stream that
       * ends a chunk and starts the next gets them back) keep its slots. */
      r->ops.hw = b.owner == r ? b.hw : 0;
      r->ops.cap = b.cap;
      r->ops.pcap = b.pcap;
      r->ops.foot_cap = b.foot_cap;
    }
    pool_lock_give();
  }
  if (r->ops.n == r->ops.cap) {
    uint32_t ncap = (uint32_t)grape__grow_cap(r->ops.cap, (size_t)r->ops.n + 1, FIRST_OPS);
    void* k = grow(r->ops.keys, ncap, sizeof(*r->ops.keys));
    if (k == NULL)
      return -ENOMEM;
    r->ops.keys = k;
    void* d = grow(r->ops.dims, ncap, sizeof(*r->ops.dims));
    if (d == NULL)
      return -ENOMEM;
    r->ops.dims = d;
    void* f = grow(r->ops.fns, ncap, sizeof(*r->ops.fns));
    if (f == NULL)
      return -ENOMEM;
    r->ops.fns = f;
    void* o = grow(r->ops.poff, ncap, sizeof(*r->ops.poff));
    if (o == NULL)
      return -ENOMEM;
    r->ops.poff = o;
    void* g = grow(r->ops.grp, ncap, sizeof(*r->ops.grp));
    if (g == NULL)
      return -ENOMEM;
    r->ops.grp = g;
    void* h = grow(r->ops.held, ncap, sizeof(*r->ops.held));
    if (h == NULL)
      return -ENOMEM;
    r->ops.held = h;
    r->ops.cap = ncap;   /* only once every array has the new size */
  }
  if (r->ops.plen + max_bytes > r->ops.pcap) {
    uint8_t* p = grape__grow(r->ops.params, &r->ops.pcap, r->ops.plen + max_bytes, 1, FIRST_PARAM_BYTES);
    if (p == NULL)
      return -ENOMEM;
    r->ops.params = p;
  }
  return 0;
}

void grape__region_clear(grape_region_t* r) {
  r->ops.n = 0;
  r->ops.plen = 0;
  r->cursor.held = r->cursor.sub = r->cursor.graphed = r->cursor.segs = r->cursor.updates = 0;
  r->timers.t_first = 0;
  r->ops.nfoot = 0;
  r->ops.gen++;
}

uint32_t grape__region_add_foot(grape_region_t* r, const grape_foot_t* f) {
  if (r->ops.nfoot >= GRAPE_GRP_SPECIAL - 1)
    return 0;
  if (r->ops.nfoot == r->ops.foot_cap) {
    grape_foot_t* v = grape__grow(r->ops.foot, &r->ops.foot_cap, (size_t)r->ops.nfoot + 1, sizeof(*v), 8);
    if (v == NULL)
      return 0;
    r->ops.foot = v;
  }
  r->ops.foot[r->ops.nfoot++] = *f;
  return r->ops.nfoot;
}

void grape__region_held_restamp(grape_region_t* r, uint32_t stamp) {
  for (uint32_t i = 0; i < r->ops.hw; i++)
    r->ops.held[i].at = NULL;
  r->ops.held_stamp = stamp;
}

void grape__region_free(grape_region_t* r) {
  free(r->ops.keys);
  free(r->ops.dims);
  free(r->ops.fns);
  free(r->ops.poff);
  free(r->ops.params);
  free(r->ops.grp);
  free(r->ops.foot);
  free(r->ops.held);
  *r = (grape_region_t){0};
}
