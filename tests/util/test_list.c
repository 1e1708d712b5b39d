/* The intrusive list (util/list.h) and the small numeric helpers
 * (util/hash_mix.h, util/backoff.h, util/moving_avg.h). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "util/backoff.h"
#include "util/hash_mix.h"
#include "util/list.h"
#include "util/moving_avg.h"

typedef struct item_s {
  int v;
  grape_list_t link;
} item_t;

static void expect_order(grape_list_t* head, const int* want, int n) {
  int i = 0;
  for (grape_list_t* q = grape__list_first(head); q != head; q = q->next, i++) {
    cr_assert_lt(i, n, "more elements than %d", n);
    cr_expect_eq(GRAPE_LIST_DATA(q, item_t, link)->v, want[i], "element %d", i);
    cr_expect_eq(q->next->prev, q, "links agree both ways");
  }
  cr_expect_eq(i, n);
}

Test(list, inserts_at_both_ends_and_removes_anywhere) {
  grape_list_t head;
  grape__list_init(&head);
  cr_expect(grape__list_empty(&head));
  item_t it[4] = {{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}};
  cr_expect(!grape__list_linked(&it[0].link), "a zeroed link is on no list");
  grape__list_insert_tail(&head, &it[1].link);
  grape__list_insert_tail(&head, &it[2].link);
  grape__list_insert_head(&head, &it[0].link);
  grape__list_insert_tail(&head, &it[3].link);
  expect_order(&head, (int[]){0, 1, 2, 3}, 4);
  cr_expect_eq(GRAPE_LIST_DATA(grape__list_last(&head), item_t, link), &it[3]);
  grape__list_remove(&it[2].link);
  cr_expect(!grape__list_linked(&it[2].link), "removed: its link is cleared");
  expect_order(&head, (int[]){0, 1, 3}, 3);
  grape__list_remove(&it[0].link);
  grape__list_remove(&it[3].link);
  expect_order(&head, (int[]){1}, 1);
  grape__list_remove(&it[1].link);
  cr_expect(grape__list_empty(&head));
}

Test(list, move_tail_makes_least_recently_used_order) {
  static grape_list_t lru = GRAPE_LIST_INIT(lru);
  item_t it[3] = {{0, {0}}, {1, {0}}, {2, {0}}};
  for (int i = 0; i < 3; i++)
    grape__list_insert_tail(&lru, &it[i].link);
  grape__list_move_tail(&lru, &it[0].link);   /* 0 used now */
  expect_order(&lru, (int[]){1, 2, 0}, 3);
  grape__list_move_tail(&lru, &it[0].link);   /* already last: unchanged */
  expect_order(&lru, (int[]){1, 2, 0}, 3);
  grape__list_move_tail(&lru, &it[2].link);
  expect_order(&lru, (int[]){1, 0, 2}, 3);
}

Test(list, move_all_appends_in_order_and_empties_the_source) {
  grape_list_t to, from;
  grape__list_init(&to);
  grape__list_init(&from);
  item_t it[5] = {{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}, {4, {0}}};
  grape__list_move_all(&from, &to);   /* both empty: nothing moves */
  cr_expect(grape__list_empty(&to) && grape__list_empty(&from));
  for (int i = 0; i < 3; i++)
    grape__list_insert_tail(&from, &it[i].link);
  grape__list_move_all(&from, &to);   /* into an empty list */
  cr_expect(grape__list_empty(&from));
  expect_order(&to, (int[]){0, 1, 2}, 3);
  grape__list_insert_tail(&from, &it[3].link);
  grape__list_insert_tail(&from, &it[4].link);
  grape__list_move_all(&from, &to);   /* behind what is there */
  cr_expect(grape__list_empty(&from));
  expect_order(&to, (int[]){0, 1, 2, 3, 4}, 5);
  grape__list_remove(&it[4].link);   /* the links are whole both ways */
  grape__list_insert_tail(&from, &it[4].link);
  expect_order(&to, (int[]){0, 1, 2, 3}, 4);
  expect_order(&from, (int[]){4}, 1);
}

Test(hash_mix, moves_high_bits_into_low_bits) {
  cr_expect_eq(grape__hash_mix(0), 0);
  /* Pointers 4 KiB apart differ in their low 12 bits after mixing. */
  uint64_t a = grape__hash_mix(0x7f0000001000), b = grape__hash_mix(0x7f0000002000);
  cr_expect_neq(a & 0xfff, b & 0xfff);
  cr_expect_eq(grape__hash_mix(1), UINT64_C(0xff51afd7ed558ccd) ^ (UINT64_C(0xff51afd7ed558ccd) >> 33));
}

Test(backoff, doubles_up_to_sixty_four_times) {
  uint32_t tries = 0;
  uint64_t want[] = {10, 20, 40, 80, 160, 320, 640, 640};
  for (int i = 0; i < 8; i++)
    cr_expect_eq(grape__backoff(1000, 10, &tries), 1000 + want[i], "try %d", i);
  cr_expect_eq(tries, 8);
}

Test(moving_avg, plain_mean_first_then_fading) {
  double avg = 0;
  uint32_t n = 0;
  grape__avg_add(&avg, &n, 10, 4);
  grape__avg_add(&avg, &n, 20, 4);
  grape__avg_add(&avg, &n, 30, 4);
  cr_expect_float_eq(avg, 20.0, 1e-12, "the mean of the first samples");
  grape__avg_add(&avg, &n, 40, 4);
  cr_expect_float_eq(avg, 25.0, 1e-12);
  grape__avg_add(&avg, &n, 125, 4);   /* weight 1/4 from the window on */
  cr_expect_float_eq(avg, 50.0, 1e-12);
  cr_expect_eq(n, 5);
}
