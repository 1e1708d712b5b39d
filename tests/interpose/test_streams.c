/* The stream table (interpose/streams.c): keys, growth past any fixed size,
 * reclaimed slots, and lookups racing with creation and destruction. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "streams.h"

Test(streams, null_stream_keys) {
  cr_expect_eq(grape__stream_key(NULL, 0), GRAPE_STREAM_LEGACY_KEY);
  cr_expect_eq(grape__stream_key((void*)1, 1), GRAPE_STREAM_LEGACY_KEY);
  uintptr_t mine = grape__stream_key(NULL, 1);
  cr_expect_eq(mine, grape__stream_key((void*)2, 0));
  cr_expect(grape__stream_key_is_per_thread(mine));
  cr_expect_neq(mine, 1);
  cr_expect_neq(mine, 2);
}

Test(streams, one_slot_per_stream_kept_until_forgotten) {
  grape_stream_t* a = grape__stream_of(0x1000);
  grape_stream_t* b = grape__stream_of(0x2000);
  cr_assert_not_null(a);
  cr_assert_not_null(b);
  cr_expect_neq(a, b);
  cr_expect_eq(grape__stream_of(0x1000), a);
  cr_expect_eq(grape__stream_peek(0x2000), b);
  cr_expect_eq(grape__streams_count(NULL), 2);
  grape__stream_forget(0x1000);
  cr_expect_eq(grape__streams_count(NULL), 1);
  cr_expect_null(grape__stream_peek(0x1000));
  /* The per-thread cache must not hand the forgotten slot back for its key. */
  grape_stream_t* a2 = grape__stream_of(0x1000);
  cr_expect_eq(grape__streams_count(NULL), 2);
  cr_expect_eq(a2, a, "the freed slot object is reused");
  cr_expect_eq(a2->key, 0x1000);
}

Test(streams, create_and_destroy_in_a_loop_never_fills_the_table) {
  size_t cap0 = 0, cap = 0;
  for (uintptr_t i = 0; i < 100000; i++) {
    uintptr_t key = 0x10000 + 16 * i;   /* a new handle value every time */
    cr_assert_not_null(grape__stream_of(key));
    grape__stream_forget(key);
    if (i == 100)
      grape__streams_count(&cap0);
  }
  cr_expect_eq(grape__streams_count(&cap), 0);
  cr_expect_eq(cap, cap0, "destroyed streams' slots are reclaimed: no growth");
}

Test(streams, grows_past_any_fixed_size) {
  for (uintptr_t i = 0; i < 20000; i++)
    cr_assert_not_null(grape__stream_of(0x10000 + 16 * i));
  size_t cap;
  cr_expect_eq(grape__streams_count(&cap), 20000);
  cr_expect_geq(cap, 40000);
  for (uintptr_t i = 0; i < 20000; i++) {
    grape_stream_t* s = grape__stream_peek(0x10000 + 16 * i);
    cr_assert_not_null(s);
    cr_assert_eq(s->key, 0x10000 + 16 * i);
  }
}

static void* churn(void* arg) {
  uintptr_t base = (uintptr_t)arg;
  for (int round = 0; round < 200; round++) {
    for (uintptr_t i = 0; i < 32; i++) {
      grape_stream_t* s = grape__stream_of(base + 16 * i);
      if (s == NULL || s->key != base + 16 * i)
        return (void*)1;
      spin_lock(&s->lock);
      s->region.cursor.held = 0;   /* touch it under its lock */
      spin_unlock(&s->lock);
    }
    for (uintptr_t i = 0; i < 32; i += 2)
      grape__stream_forget(base + 16 * i);
  }
  return NULL;
}

Test(streams, threads_create_use_and_destroy_their_streams) {
  pthread_t th[8];
  for (uintptr_t t = 0; t < 8; t++)
    pthread_create(&th[t], NULL, churn, (void*)(0x1000000 * (t + 1)));
  for (int t = 0; t < 8; t++) {
    void* r;
    pthread_join(th[t], &r);
    cr_expect_null(r, "a thread saw another stream's slot for its key");
  }
  cr_expect_eq(grape__streams_count(NULL), 8 * 16);
}
