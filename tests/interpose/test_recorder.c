/* Regions and paths (interpose/recorder.c). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "options.h"
#include "recorder.h"

static grape_op_sig_t op(uint64_t func) {
  grape_op_sig_t s;
  memset(&s, 0, sizeof(s));
  s.kind = GRAPE_OP_KERNEL;
  s.func = func;
  return s;
}

Test(recorder, regions_paths_counts) {
  uintptr_t a = grape__stream_key((void*)0x100, 0), b = grape__stream_key((void*)0x200, 0);
  for (int it = 0; it < 4; it++) {
    grape_op_sig_t x = op(1), y = op(2);
    grape__rec_op(a, &x, "abcd", 4);
    grape__rec_op(b, &y, NULL, 0);
    if (it % 2)
      grape__rec_op(a, &y, NULL, 0);
    grape__rec_end_stream(a);
  }
  grape__rec_end_all();
  grape_rec_stats_t st;
  grape_path_info_t top[4];
  size_t k = grape__rec_stats(&st, top, 4);
  cr_expect_eq(st.regions, 5);   /* 4 on a, 1 on b (4 ops) */
  cr_expect_eq(st.paths, 3);
  cr_expect_eq(st.ops, 10);
  cr_assert_eq(k, 3);
  cr_expect_eq(top[0].count, 2);
  cr_expect_eq(top[2].count, 1);
  cr_expect_eq(top[2].nops, 4);
}

Test(recorder, chunk_ends_long_regions) {
  grape__option_set(grape_option_chunk, "3");
  uintptr_t a = grape__stream_key((void*)0x100, 0);
  for (int i = 0; i < 7; i++) {
    grape_op_sig_t x = op(1);
    grape__rec_op(a, &x, NULL, 0);
  }
  grape__rec_end_all();
  grape_rec_stats_t st;
  grape_path_info_t top[2];
  grape__rec_stats(&st, top, 2);
  cr_expect_eq(st.regions, 3);   /* 3 + 3 + 1 */
  cr_expect_eq(st.paths, 2);
}

Test(recorder, null_stream_keys) {
  cr_expect_eq(grape__stream_key(NULL, 0), 1);
  cr_expect_eq(grape__stream_key((void*)1, 1), 1);
  uintptr_t mine = grape__stream_key(NULL, 1);
  cr_expect_eq(mine, grape__stream_key((void*)2, 0));
  cr_expect_neq(mine, 1);
  cr_expect_neq(mine, 2);
}

static void* stress(void* arg) {
  uintptr_t key = (uintptr_t)arg;
  for (int i = 0; i < 2000; i++) {
    grape_op_sig_t x = op((uint64_t)(i % 3));
    grape__rec_op(key + (uintptr_t)(i % 4) * 8, &x, &i, sizeof(i));
    if (i % 50 == 49)
      grape__rec_end_stream(key + (uintptr_t)(i % 4) * 8);
  }
  return NULL;
}

Test(recorder, threads_count_every_op, .description = "8 threads, 32 streams") {
  pthread_t th[8];
  for (uintptr_t t = 0; t < 8; t++)
    pthread_create(&th[t], NULL, stress, (void*)(0x10000 + t * 0x100));
  for (int t = 0; t < 8; t++)
    pthread_join(th[t], NULL);
  grape__rec_end_all();
  grape_rec_stats_t st;
  grape_path_info_t top[1];
  grape__rec_stats(&st, top, 1);
  cr_expect_eq(st.ops, 8 * 2000);
}
