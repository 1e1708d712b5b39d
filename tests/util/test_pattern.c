/* File name patterns (util/pattern.h): what the shim writes for
 * GRAPE_REPORT / GRAPE_LOG_FILE is what `grape run` finds, and GRAPE_TRACE's
 * %r is expanded only where a rank is given. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util/pattern.h"

Test(pattern, expands_pid_and_percent) {
  char out[64];
  cr_assert_eq(grape__pattern_expand("/tmp/r.%p.json", 4242, NULL, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "/tmp/r.4242.json");
  cr_assert_eq(grape__pattern_expand("100%%-%p-%x%", 7, NULL, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "100%-7-%x%");
  cr_expect_eq(grape__pattern_expand("%p%p%p", 123456, NULL, out, 10), -ENAMETOOLONG);
  cr_expect_eq(grape__pattern_expand("", 1, NULL, out, 0), -ENAMETOOLONG);
}

Test(pattern, rank_only_where_given) {
  char out[64];
  long rank = 3;
  cr_assert_eq(grape__pattern_expand("t.%p.%r.grape", 12, &rank, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "t.12.3.grape");
  cr_assert_eq(grape__pattern_expand("t.%p.%r.json", 12, NULL, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "t.12.%r.json", "a report has no rank: %%r stays");
}

Test(pattern, per_process_only_with_an_unescaped_p) {
  cr_expect(grape__pattern_per_process("r.%p.json"));
  cr_expect(grape__pattern_per_process("%p"));
  cr_expect_not(grape__pattern_per_process("r.json"));
  cr_expect_not(grape__pattern_per_process("r.%%p.json"));
  cr_expect_not(grape__pattern_per_process("r.%"));
}

Test(pattern, matches_what_it_expands_to) {
  const char* pats[] = {"report.%p.json", "%p", "r%p1.json", "a%%b.%p", "x%py%p"};
  long pids[] = {1, 42, 123456789};
  for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
    for (size_t j = 0; j < sizeof(pids) / sizeof(pids[0]); j++) {
      char name[64];
      cr_assert_eq(grape__pattern_expand(pats[i], pids[j], NULL, name, sizeof(name)), 0);
      cr_expect(grape__pattern_match(pats[i], name), "%s does not match %s", name, pats[i]);
    }
}

Test(pattern, refuses_other_names) {
  cr_expect_not(grape__pattern_match("report.%p.json", "report..json"));
  cr_expect_not(grape__pattern_match("report.%p.json", "report.12a.json"));
  cr_expect_not(grape__pattern_match("report.%p.json", "report.12.json.tmp12"));
  cr_expect_not(grape__pattern_match("report.%p.json", "report.12.json.forked"));
  cr_expect_not(grape__pattern_match("report.%p.json", "xreport.12.json"));
  cr_expect_not(grape__pattern_match("a%%b.%p", "a%%b.1"));
  cr_expect(grape__pattern_match("a%%b.%p", "a%b.1"));
  cr_expect_not(grape__pattern_match("x%py%p", "x12y13"), "two pids in one name");
  cr_expect(grape__pattern_match("x%py%p", "x12y12"));
}
