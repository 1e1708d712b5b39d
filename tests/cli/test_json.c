/* The CLI's JSON reader (tools/json.c): well-formed reports read back member by
 * member, and every kind of damage refused with its byte offset, never a crash
 * (the suite also runs under ASan+UBSan). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

Test(json, reads_nested_members) {
  char err[128];
  json_t* j = json_parse(" {\"a\": 1.5, \"b\": [true, null, \"x\\u00e9\\n\"], \"c\": {\"d\": -2e3}} ",
                         err, sizeof(err));
  cr_assert_not_null(j, "%s", err);
  cr_expect_eq(json_num(json_get(j, "a"), 0), 1.5);
  const json_t* b = json_get(j, "b");
  cr_assert_eq(b->kind, JSON_ARR);
  cr_expect_eq(b->len, 3);
  cr_expect_eq(b->child->kind, JSON_BOOL);
  cr_expect_eq(b->child->next->kind, JSON_NULL);
  cr_expect_str_eq(json_str(b->child->next->next), "x\xc3\xa9\n");
  cr_expect_eq(json_num(json_get(json_get(j, "c"), "d"), 0), -2000);
  cr_expect_null(json_get(j, "missing"));
  cr_expect_eq(json_num(json_get(j, "missing"), 7), 7);
  cr_expect_null(json_str(json_get(j, "a")), "a number is not a string");
  json_free(j);
}

Test(json, decodes_surrogate_pairs) {
  char err[128];
  json_t* j = json_parse("\"\\ud83d\\ude00\"", err, sizeof(err));
  cr_assert_not_null(j, "%s", err);
  cr_expect_str_eq(json_str(j), "\xf0\x9f\x98\x80");
  json_free(j);
}

Test(json, refuses_damage_with_an_offset) {
  static const char* const bad[] = {
    "", "{", "{\"a\":}", "{\"a\" 1}", "[1,]", "[1 2]", "\"abc", "\"\\q\"", "\"\\u12\"",
    "{\"a\":1} x", "tru", "{1:2}", "\"a\x01\"", "-", "[\"\\u\"]",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char err[128] = "";
    json_t* j = json_parse(bad[i], err, sizeof(err));
    cr_expect_null(j, "accepted damaged text '%s'", bad[i]);
    json_free(j);
    cr_expect(strstr(err, "at byte ") != NULL, "no offset for '%s': %s", bad[i], err);
  }
}

Test(json, bounds_nesting) {
  char deep[201];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  deep[200] = '\0';
  char err[128];
  json_t* j = json_parse(deep, err, sizeof(err));
  cr_expect_null(j);
  cr_expect(strstr(err, "nested deeper") != NULL, "%s", err);
}

Test(json, every_truncation_of_a_report_is_refused) {
  const char* text = "{\"pid\":12,\"mode\":\"graph\",\"launches_by_route\":{\"runtime\":4},"
                     "\"top_paths\":[{\"fingerprint\":\"00ff\",\"kernels\":[\"a\",\"b\"]}]}";
  char err[128];
  json_t* whole = json_parse(text, err, sizeof(err));
  cr_assert_not_null(whole, "%s", err);
  json_free(whole);
  for (size_t n = 0; n < strlen(text); n++) {
    char* cut = strndup(text, n);
    json_t* j = json_parse(cut, err, sizeof(err));
    cr_expect_null(j, "accepted the first %zu bytes", n);
    json_free(j);
    free(cut);
  }
}
