/* What the shim hands the trace writer (interpose/): the path table walk
 * (grape__rec_each_path) and the allocation history that resolves pointer
 * words recorded before their allocation was freed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "options.h"
#include "recorder.h"

static grape_op_sig_t kernel(uint64_t func, uint32_t nbytes) {
  grape_op_sig_t s;
  memset(&s, 0, sizeof(s));
  s.kind = GRAPE_OP_KERNEL;
  s.func = func;
  s.param_bytes = nbytes;
  return s;
}

typedef struct seen_s {
  grape_rec_path_view_t v[8];
  size_t n;
} seen_t;

static void take(const grape_rec_path_view_t* p, void* arg) {
  seen_t* s = arg;
  if (s->n < 8)
    s->v[s->n++] = *p;
}

Test(replay_shim_tables, each_path_gives_ops_params_and_offsets) {
  uintptr_t a = grape__stream_key((void*)0x100, 0);
  for (int it = 0; it < 3; it++) {
    grape_op_sig_t x = kernel(7, 16), y = kernel(8, 8);
    uint8_t px[16], py[8];
    memset(px, 0x10 + it, sizeof(px));   /* only the first sighting's bytes are kept */
    memset(py, 0x20 + it, sizeof(py));
    grape__rec_op(a, &x, px, sizeof(px));
    grape__rec_op(a, &y, py, sizeof(py));
    grape__rec_end_stream(a);
  }
  seen_t s = {0};
  cr_assert_eq(grape__rec_each_path(take, &s), 1);
  cr_assert_eq(s.n, 1);
  const grape_rec_path_view_t* v = &s.v[0];
  cr_expect_eq(v->count, 3);
  cr_assert_eq(v->nops, 2);
  cr_expect_eq(v->sigs[1].func, 8);
  cr_expect_eq(v->poff[0], 0);
  cr_expect_eq(v->poff[1], 16);
  cr_expect_eq(v->poff[2], 24, "poff has nops + 1 entries: the last is the end");
  cr_expect_eq(v->params[0], 0x10);
  cr_expect_eq(v->params[16], 0x20);
}

Test(replay_shim_tables, history_resolves_words_recorded_before_a_free) {
  cr_assert_eq(grape__option_set(grape_option_trace, "/tmp/unused.grape"), 0);
  const uint64_t base = 0x7f0000000000ull;
  cr_assert_eq(grape__alloc_add(base, 256, GRAPE_ALLOC_DEVICE), 0);   /* A */
  uintptr_t s = grape__stream_key((void*)0x300, 0);
  grape_op_sig_t x = kernel(7, 8);
  uint64_t word = base + 32;
  grape__rec_op(s, &x, &word, 8);
  grape__rec_end_stream(s);   /* the path's bytes are stamped now */
  cr_assert_eq(grape__alloc_remove(base), 0);
  cr_assert_eq(grape__alloc_add(base, 4096, GRAPE_ALLOC_MANAGED), 0);   /* B, same address */

  seen_t seen = {0};
  grape__rec_each_path(take, &seen);
  cr_assert_eq(seen.n, 1);
  uint64_t epoch = seen.v[0].alloc_epoch;
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
}

Test(replay_shim_tables, no_history_without_a_trace) {
  cr_assert_eq(grape__alloc_add(0x1000, 16, GRAPE_ALLOC_DEVICE), 0);
  grape_alloc_life_t* h;
  size_t n;
  cr_expect_eq(grape__alloc_history(&h, &n), -ENOENT);
}
