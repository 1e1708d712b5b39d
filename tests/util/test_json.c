/* The JSON reader (util/json.h) of the CLI and predict/: well-formed reports
 * read back member by member, and every kind of damage refused with what is
 * wrong and its byte offset, never a crash (the suite also runs under
 * ASan+UBSan). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

Test(json, reads_nested_members) {
  char err[128];
  grape_json_t* j = grape__json_parse(" {\"a\": 1.5, \"b\": [true, null, \"x\\u00e9\\n\"], \"c\": {\"d\": -2e3}} ",
                         err, sizeof(err));
  cr_assert_not_null(j, "%s", err);
  cr_expect_eq(grape__json_num(grape__json_get(j, "a"), 0), 1.5);
  const grape_json_t* b = grape__json_get(j, "b");
  cr_assert_eq(b->kind, GRAPE_JSON_ARR);
  cr_expect_eq(b->len, 3);
  cr_expect_eq(b->child->kind, GRAPE_JSON_BOOL);
  cr_expect_eq(b->child->next->kind, GRAPE_JSON_NULL);
  cr_expect_str_eq(grape__json_str(b->child->next->next), "x\xc3\xa9\n");
  cr_expect_eq(grape__json_num(grape__json_get(grape__json_get(j, "c"), "d"), 0), -2000);
  cr_expect_null(grape__json_get(j, "missing"));
  cr_expect_eq(grape__json_num(grape__json_get(j, "missing"), 7), 7);
  cr_expect_null(grape__json_str(grape__json_get(j, "a")), "a number is not a string");
  grape__json_free(j);
}

Test(json, decodes_surrogate_pairs) {
  char err[128];
  grape_json_t* j = grape__json_parse("\"\\ud83d\\ude00\"", err, sizeof(err));
  cr_assert_not_null(j, "%s", err);
  cr_expect_str_eq(grape__json_str(j), "\xf0\x9f\x98\x80");
  grape__json_free(j);
}

Test(json, reads_numbers_as_json_writes_them) {
  static const struct {
    const char* text;
    double v;
  } good[] = {{"0", 0}, {"-0", 0}, {"12", 12}, {"-3.25", -3.25}, {"1e3", 1000}, {"2.5E-1", 0.25},
              {"1e+2", 100}, {"[7]", 7}, {" 1e-400 ", 0}};
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    char err[128];
    grape_json_t* j = grape__json_parse(good[i].text, err, sizeof(err));
    cr_assert_not_null(j, "refused '%s': %s", good[i].text, err);
    const grape_json_t* v = j->kind == GRAPE_JSON_ARR ? j->child : j;
    cr_expect_eq(grape__json_num(v, -1), good[i].v, "'%s'", good[i].text);
    grape__json_free(j);
  }
}

/* Each damaged text, and the words its message must hold: what is wrong,
 * then where. */
Test(json, refuses_damage_saying_what_and_where) {
  static const struct {
    const char* text;
    const char* what;
  } bad[] = {
    {"-inf", "malformed number at byte 0"}, {"NaN", "unexpected character at byte 0"},
    {"[0x10]", "expected ',' or ']' at byte 2"}, {"01", "malformed number"}, {"1.", "malformed number"},
    {"{\"Mem_Bw\": -infinity}", "malformed number at byte 11"}, {"1e", "malformed number"},
    {"[1e999]", "number out of range at byte 1"}, {"{\"a\" 1}", "expected ':' at byte 5"},
    {"{\"a\":1,}", "expected a member name at byte 7"}, {"", "unexpected end of text at byte 0"},
    {"[1 2]", "expected ',' or ']' at byte 3"}, {"\"abc", "unterminated string at byte 4"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char err[128] = "";
    grape_json_t* j = grape__json_parse(bad[i].text, err, sizeof(err));
    cr_expect_null(j, "accepted damaged text '%s'", bad[i].text);
    grape__json_free(j);
    cr_expect(strstr(err, bad[i].what) != NULL, "'%s': message '%s' lacks '%s'", bad[i].text, err,
              bad[i].what);
  }
}

Test(json, refuses_damage_with_an_offset) {
  static const char* const bad[] = {
    "", "{", "{\"a\":}", "{\"a\" 1}", "[1,]", "[1 2]", "\"abc", "\"\\q\"", "\"\\u12\"",
    "{\"a\":1} x", "tru", "{1:2}", "\"a\x01\"", "-", "[\"\\u\"]",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char err[128] = "";
    grape_json_t* j = grape__json_parse(bad[i], err, sizeof(err));
    cr_expect_null(j, "accepted damaged text '%s'", bad[i]);
    grape__json_free(j);
    cr_expect(strstr(err, "at byte ") != NULL, "no offset for '%s': %s", bad[i], err);
  }
}

Test(json, bounds_nesting) {
  char deep[201];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  deep[200] = '\0';
  char err[128];
  grape_json_t* j = grape__json_parse(deep, err, sizeof(err));
  cr_expect_null(j);
  cr_expect(strstr(err, "nested deeper") != NULL, "%s", err);
}

Test(json, every_truncation_of_a_report_is_refused) {
  const char* text = "{\"pid\":12,\"mode\":\"graph\",\"launches_by_route\":{\"runtime\":4},"
                     "\"top_paths\":[{\"fingerprint\":\"00ff\",\"kernels\":[\"a\",\"b\"]}]}";
  char err[128];
  grape_json_t* whole = grape__json_parse(text, err, sizeof(err));
  cr_assert_not_null(whole, "%s", err);
  grape__json_free(whole);
  for (size_t n = 0; n < strlen(text); n++) {
    char* cut = strndup(text, n);
    grape_json_t* j = grape__json_parse(cut, err, sizeof(err));
    cr_expect_null(j, "accepted the first %zu bytes", n);
    grape__json_free(j);
    free(cut);
  }
}
