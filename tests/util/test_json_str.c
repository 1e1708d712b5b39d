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
