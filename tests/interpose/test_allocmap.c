/* Allocation map: intervals, stale overlaps, pointer words (interpose/allocmap.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "allocmap.h"

TestSuite(allocmap, .init = NULL, .fini = NULL);

Test(allocmap, find_inside_and_outside) {
  cr_assert_eq(grape__alloc_add(0x1000, 0x100, GRAPE_ALLOC_DEVICE), 0);
  cr_assert_eq(grape__alloc_add(0x3000, 0x10, GRAPE_ALLOC_ASYNC), 0);
  grape_alloc_t a;
  cr_expect_eq(grape__alloc_find(0x1000, &a), 0);
  cr_expect_eq(a.start, 0x1000);
  cr_expect_eq(grape__alloc_find(0x10ff, &a), 0);
  cr_expect_neq(grape__alloc_find(0x1100, &a), 0);
  cr_expect_neq(grape__alloc_find(0xfff, &a), 0);
  cr_expect_eq(grape__alloc_find(0x300f, &a), 0);
  cr_expect_eq(a.kind, GRAPE_ALLOC_ASYNC);
}

Test(allocmap, remove_and_stale_overlap) {
  grape__alloc_add(0x1000, 0x100, GRAPE_ALLOC_DEVICE);
  grape__alloc_add(0x2000, 0x100, GRAPE_ALLOC_DEVICE);
  cr_expect_eq(grape__alloc_remove(0x1000), 0);
  cr_expect_neq(grape__alloc_remove(0x1000), 0);
  /* A new allocation over a range whose free was not seen replaces it. */
  grape__alloc_add(0x1f80, 0x100, GRAPE_ALLOC_DEVICE);
  grape_alloc_t a;
  cr_expect_eq(grape__alloc_find(0x2050, &a), 0);
  cr_expect_eq(a.start, 0x1f80);
  cr_expect_eq(grape__alloc_count(), 1);
}

Test(allocmap, unmap_range) {
  grape__alloc_add(0x10000, 0x1000, GRAPE_ALLOC_MAPPED);
  grape__alloc_add(0x11000, 0x1000, GRAPE_ALLOC_MAPPED);
  grape__alloc_add(0x20000, 0x1000, GRAPE_ALLOC_MAPPED);
  cr_expect_eq(grape__alloc_remove_range(0x10000, 0x2000), 2);
  cr_expect_eq(grape__alloc_count(), 1);
}

Test(allocmap, pointer_words) {
  grape__alloc_add(0x7f0000001000, 0x1000, GRAPE_ALLOC_DEVICE);
  uint64_t block[4] = {0x7f0000001800, 42, 0x7f0000002000, 0x7f0000001000};
  uint64_t mask[1];
  cr_expect_eq(grape__alloc_pointer_words(block, sizeof(block), mask), 2);
  cr_expect_eq(mask[0], 0x9);
}

Test(allocmap, many_in_random_order) {
  for (int i = 0; i < 1000; i++) {
    uint64_t k = (uint64_t)((i * 7919) % 1000);
    cr_assert_eq(grape__alloc_add(0x100000 + k * 0x100, 0x80, GRAPE_ALLOC_DEVICE), 0);
  }
  cr_expect_eq(grape__alloc_count(), 1000);
  grape_alloc_t a;
  for (uint64_t k = 0; k < 1000; k++) {
    cr_assert_eq(grape__alloc_find(0x100000 + k * 0x100 + 0x7f, &a), 0);
    cr_assert_neq(grape__alloc_find(0x100000 + k * 0x100 + 0x80, &a), 0);
  }
}

Test(allocmap, shared_ranges_are_pinned_registered_and_foreign_memory) {
  cr_expect_not(grape__alloc_shared_any());
  grape__alloc_add(0x10000, 0x1000, GRAPE_ALLOC_DEVICE);
  cr_expect_not(grape__alloc_shared_any());
  grape__alloc_add(0x20000, 0x1000, GRAPE_ALLOC_HOST_PINNED);
  grape__alloc_add(0x30000, 0x1000, GRAPE_ALLOC_HOST_REGISTERED);
  grape__alloc_add(0x40000, 0x1000, GRAPE_ALLOC_FOREIGN);
  cr_expect(grape__alloc_shared_any());
  cr_expect_not(grape__alloc_is_shared(0x10800));
  cr_expect(grape__alloc_is_shared(0x20000));
  cr_expect(grape__alloc_is_shared(0x30fff));
  cr_expect_not(grape__alloc_is_shared(0x31000));
  cr_expect(grape__alloc_is_shared(0x40010));
  cr_expect_not(grape__alloc_is_shared(0x1ffff));
  /* Freed, or replaced by device memory at the same place: no longer shared. */
  grape__alloc_remove(0x20000);
  cr_expect_not(grape__alloc_is_shared(0x20000));
  grape__alloc_add(0x30000, 0x1000, GRAPE_ALLOC_DEVICE);
  cr_expect_not(grape__alloc_is_shared(0x30010));
  grape__alloc_remove_range(0x40000, 0x1000);
  cr_expect_not(grape__alloc_shared_any());
}
