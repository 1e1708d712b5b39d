/* Growing by doubling (util/grow.h). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/grow.h"

Test(grow, capacity_doubles_from_first) {
  cr_expect_eq(grape__grow_cap(0, 1, 16), 16);
  cr_expect_eq(grape__grow_cap(0, 17, 16), 32);
  cr_expect_eq(grape__grow_cap(16, 16, 64), 16, "a capacity that holds need stays");
  cr_expect_eq(grape__grow_cap(16, 17, 64), 32);
  cr_expect_eq(grape__grow_cap(24, 100, 1), 192);
  cr_expect_eq(grape__grow_cap(SIZE_MAX / 2 + 1, SIZE_MAX, 1), 0, "doubling would overflow");
}

Test(grow, keeps_contents_and_typed_pointer) {
  size_t cap = 0, len = 0;
  int* v = NULL;
  for (int i = 0; i < 1000; i++) {
    int* n = grape__grow(v, &cap, len + 1, sizeof(*v), 8);
    cr_assert_not_null(n);
    v = n;
    v[len++] = i;
  }
  cr_expect_eq(cap, 1024);
  for (int i = 0; i < 1000; i++)
    cr_assert_eq(v[i], i);
  cr_expect_eq(grape__grow(v, &cap, 10, sizeof(*v), 8), v, "room enough: the same array");
  free(v);
}

Test(grow, failure_leaves_array_and_capacity) {
  size_t cap = 4;
  char* v = malloc(cap);
  cr_assert_not_null(v);
  cr_expect_null(grape__grow(v, &cap, 5, SIZE_MAX / 2, 4), "the size in bytes overflows");
  cr_expect_eq(cap, 4);
  v[3] = 'x';   /* still ours */
  free(v);
}
