/* Writing a CSV field (util/csv_str.h) and a whole buffer (util/write_all.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/csv_str.h"
#include "util/write_all.h"

Test(csv_str, quotes_every_field_and_doubles_quotes) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  cr_assert_not_null(f);
  grape__csv_put_str(f, "a \"b\", c\nd");
  fputc(',', f);
  grape__csv_put_str(f, NULL);
  fclose(f);
  cr_expect_str_eq(text, "\"a \"\"b\"\", c\nd\",\"\"");
  free(text);
}

Test(write_all, writes_everything_and_says_how_much) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  size_t done = 0;
  cr_expect_eq(grape__write_all(p[1], "hello", 5, &done), 0);
  cr_expect_eq(done, 5);
  char buf[8] = {0};
  cr_expect_eq(read(p[0], buf, sizeof(buf)), 5);
  cr_expect_str_eq(buf, "hello");
  close(p[0]);
  cr_expect_lt(grape__write_all(p[0], "x", 1, &done), 0, "a closed descriptor is an error");
  cr_expect_eq(done, 0);
  close(p[1]);
}
