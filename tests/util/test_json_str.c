/* Writing a JSON string (util/json_str.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/json_str.h"

static char* written(const char* s) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  cr_assert_not_null(f);
  grape__json_put_str(f, s);
  fclose(f);
  return text;
}

Test(json_str, escapes_what_json_forbids) {
  char* t = written("a\"b\\c\n\x01\x1f z");
  cr_expect_str_eq(t, "\"a\\\"b\\\\c\\u000a\\u0001\\u001f z\"");
  free(t);
}

Test(json_str, passes_utf8_and_null) {
  char* t = written("caf\xc3\xa9 <\x7f>");
  cr_expect_str_eq(t, "\"caf\xc3\xa9 <\x7f>\"");
  free(t);
  t = written(NULL);
  cr_expect_str_eq(t, "\"\"");
  free(t);
}

Test(json_str, bytes_outside_utf8_are_escaped) {
  /* A lone 0xff, a cut sequence, an overlong '/', a surrogate: each byte as \u00XX. */
  char* t = written("a\xff" "b\xc3" "c\xc0\xaf\xed\xa0\x80 \xf0\x9f\x8d\x87");
  cr_expect_str_eq(t, "\"a\\u00ffb\\u00c3c\\u00c0\\u00af\\u00ed\\u00a0\\u0080 \xf0\x9f\x8d\x87\"");
  free(t);
}

static char* number(double v) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  cr_assert_not_null(f);
  grape__json_put_num(f, v);
  fclose(f);
  return text;
}

Test(json_str, numbers_in_their_shortest_form_that_reads_back) {
  static const struct {
    double v;
    const char* want;
  } cases[] = {{5.699, "5.699"}, {0.089, "0.089"}, {192, "192"}, {320, "320"}, {0.1 + 0.2, "0.30000000000000004"},
               {-1.5e-7, "-1.5e-07"}, {1e300, "1e+300"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char* t = number(cases[i].v);
    cr_expect_str_eq(t, cases[i].want);
    cr_expect(strtod(t, NULL) == cases[i].v, "%s must read back", t);
    free(t);
  }
  char* t = number(1.0 / 0.0);
  cr_expect_str_eq(t, "null");
  free(t);
}
