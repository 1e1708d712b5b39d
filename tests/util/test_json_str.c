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
