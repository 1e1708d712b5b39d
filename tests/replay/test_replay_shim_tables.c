/* What the shim hands the trace writer (interpose/): the path table walk
 * (grape_gc_each_path, stamped with the allocation epoch) and the allocation history that resolves pointer
 * words recorded before their allocation was freed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "graphcache/cache.h"
#include "options.h"

/* A path cache with graphs off, stamping each new path with the allocation
 * epoch, as the shim makes it (interpose/graph.c). */
static grape_gc_t* observe_cache(void) {
  grape_gc_config_t cfg = {.sz = sizeof(cfg), .graphs = 0, .warmup = 2, .min_ops = 2,
                           .variants = 1, .max_graphs = 1, .max_bytes = 1, .recheck = 1,
                           .stamp = grape__alloc_epoch};
  grape_gc_t* c;
  cr_assert_eq(grape_gc_create(&cfg, NULL, &c), 0);
  return c;
}

static void kernel(grape_region_t* r, uint64_t func, const void* params, uint32_t n) {
  grape_op_key_t k = {.kind = GRAPE_OP_KERNEL, .param_bytes = n, .func = func};
  grape_op_dims_t d = {.grid = {1, 1, 1}, .block = {32, 1, 1}};
  cr_assert_eq(grape__region_reserve(r, n), 0);
  grape__region_push(r, &k, &d, NULL, params, n);
}

static void region_end(grape_gc_t* c, grape_region_t* r) {
  int err;
  cr_assert_eq(grape_gc_end(c, r, NULL, NULL, &err), 0);
}

typedef struct seen_s {
  grape_gc_path_t v[8];
  size_t n;
} seen_t;

static void take(const grape_gc_path_t* p, void* arg) {
  seen_t* s = arg;
  if (s->n < 8)
    s->v[s->n++] = *p;
}

Test(replay_shim_tables, each_path_gives_ops_params_and_offsets) {
  grape_gc_t* c = observe_cache();
  grape_region_t r = {0};
  for (int it = 0; it < 3; it++) {
    uint8_t px[16], py[8];
    memset(px, 0x10 + it, sizeof(px));   /* only the first sighting's bytes are kept */
    memset(py, 0x20 + it, sizeof(py));
    kernel(&r, 7, px, sizeof(px));
    kernel(&r, 8, py, sizeof(py));
    region_end(c, &r);
  }
  seen_t s = {0};
  cr_assert_eq(grape_gc_each_path(c, take, &s), 1);
  cr_assert_eq(s.n, 1);
  const grape_gc_path_t* v = &s.v[0];
  cr_expect_eq(v->count, 3);
  cr_assert_eq(v->nops, 2);
  cr_expect_eq(v->keys[1].func, 8);
  cr_expect_eq(v->poff[0], 0);
  cr_expect_eq(v->poff[1], 16);
  cr_expect_eq(v->keys[1].param_bytes, 8);
  cr_expect_eq(v->params[0], 0x10);
  cr_expect_eq(v->params[16], 0x20);
  grape__region_free(&r);
  grape_gc_destroy(c, 0);
}

Test(replay_shim_tables, history_resolves_words_recorded_before_a_free) {
  cr_assert_eq(grape__option_set(grape_option_trace, "/tmp/unused.grape"), 0);
  grape_gc_t* c = observe_cache();
  grape_region_t r = {0};
  const uint64_t base = 0x7f0000000000ull;
  cr_assert_eq(grape__alloc_add(base, 256, GRAPE_ALLOC_DEVICE), 0);   /* A */
  uint64_t word = base + 32;
  kernel(&r, 7, &word, 8);
  region_end(c, &r);   /* the path's bytes are stamped now */
  cr_assert_eq(grape__alloc_remove(base), 0);
  cr_assert_eq(grape__alloc_add(base, 4096, GRAPE_ALLOC_MANAGED), 0);   /* B, same address */

  seen_t seen = {0};
  grape_gc_each_path(c, take, &seen);
  cr_assert_eq(seen.n, 1);
  uint64_t epoch = seen.v[0].stamp;
  grape_alloc_life_t* h;
  size_t n;
  cr_assert_eq(grape__alloc_history(&h, &n), 0);
  cr_assert_eq(n, 2);
  int live = 0;
  for (size_t i = 0; i < n; i++) {
    int alive = h[i].born <= epoch && (h[i].died == 0 || h[i].died > epoch);
    if (alive) {
      live++;
      cr_expect_eq(h[i].a.size, 256, "the word names A, live when it was recorded, not B");
    }
  }
  cr_expect_eq(live, 1);
  cr_expect_eq(h[0].died != 0 && h[1].died == 0, 1);
  cr_expect_eq(h[1].a.id, 2);
  free(h);
  grape__region_free(&r);
  grape_gc_destroy(c, 0);
}

Test(replay_shim_tables, no_history_without_a_trace) {
  cr_assert_eq(grape__alloc_add(0x1000, 16, GRAPE_ALLOC_DEVICE), 0);
  grape_alloc_life_t* h;
  size_t n;
  cr_expect_eq(grape__alloc_history(&h, &n), -ENOENT);
}
