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
  if (r->cap == 0 && r->pcap == 0)
    return;
  bufs_t b = {r->keys, r->dims, r->fns, r->poff, r->grp, r->params, r->foot, r->cap, r->pcap, r->foot_cap};
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
  }
  r->keys = NULL;
  r->dims = NULL;
  r->fns = NULL;
  r->poff = NULL;
  r->grp = NULL;
  r->params = NULL;
  r->foot = NULL;
  r->cap = 0;
  r->pcap = 0;
  r->foot_cap = 0;
}

int grape__region_reserve(grape_region_t* r, size_t max_bytes) {
  if (r->cap == 0 && r->pcap == 0 && __atomic_load_n(&npool, __ATOMIC_RELAXED) > 0) {
    pool_lock_take();
    if (npool > 0) {
      bufs_t b = pool[npool - 1];
      __atomic_store_n(&npool, npool - 1, __ATOMIC_RELAXED);
      r->keys = b.keys;
      r->dims = b.dims;
      r->fns = b.fns;
      r->poff = b.poff;
      r->grp = b.grp;
      r->params = b.params;
      r->foot = b.foot;
      r->cap = b.cap;
      r->pcap = b.pcap;
      r->foot_cap = b.foot_cap;
    }
    pool_lock_give();
  }
  if (r->nops == r->cap) {
    uint32_t ncap = (uint32_t)grape__grow_cap(r->cap, (size_t)r->nops + 1, FIRST_OPS);
    void* k = grow(r->keys, ncap, sizeof(*r->keys));
    if (k == NULL)
      return -ENOMEM;
    r->keys = k;
    void* d = grow(r->dims, ncap, sizeof(*r->dims));
    if (d == NULL)
      return -ENOMEM;
    r->dims = d;
    void* f = grow(r->fns, ncap, sizeof(*r->fns));
    if (f == NULL)
      return -ENOMEM;
    r->fns = f;
    void* o = grow(r->poff, ncap, sizeof(*r->poff));
    if (o == NULL)
      return -ENOMEM;
    r->poff = o;
    void* g = grow(r->grp, ncap, sizeof(*r->grp));
    if (g == NULL)
      return -ENOMEM;
    r->grp = g;
    r->cap = ncap;   /* only once every array has the new size */
  }
  if (r->plen + max_bytes > r->pcap) {
    uint8_t* p = grape__grow(r->params, &r->pcap, r->plen + max_bytes, 1, FIRST_PARAM_BYTES);
    if (p == NULL)
      return -ENOMEM;
    r->params = p;
  }
  return 0;
}

void grape__region_clear(grape_region_t* r) {
  r->nops = 0;
  r->plen = 0;
  r->held = r->sub = r->graphed = r->segs = r->updates = 0;
  r->t_first = 0;
  r->nfoot = 0;
  r->gen++;
}

uint32_t grape__region_add_foot(grape_region_t* r, const grape_foot_t* f) {
  if (r->nfoot >= GRAPE_GRP_SPECIAL - 1)
    return 0;
  if (r->nfoot == r->foot_cap) {
    grape_foot_t* v = grape__grow(r->foot, &r->foot_cap, (size_t)r->nfoot + 1, sizeof(*v), 8);
    if (v == NULL)
      return 0;
    r->foot = v;
  }
  r->foot[r->nfoot++] = *f;
  return r->nfoot;
}

void grape__region_free(grape_region_t* r) {
  free(r->keys);
  free(r->dims);
  free(r->fns);
  free(r->poff);
  free(r->params);
  free(r->grp);
  free(r->foot);
  *r = (grape_region_t){0};
}
