/* File name patterns (util/pattern.h): %p, %r, %h, %q{VAR} and %%, each
 * expanded only where its value is given, and the numbered names of outputs
 * that must not replace a file. */
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

static const char* fake_env(const char* name) {
  return strcmp(name, "JOB") == 0 ? "j7" : NULL;
}

Test(pattern, host_and_environment_like_nsys) {
  char out[128];
  long rank = 2;
  grape_pattern_vars_t v = {99, &rank, "node1", fake_env};
  cr_assert_eq(grape__pattern_expand_vars("%q{JOB}/%h.%r.%p.%q{NOPE}x", &v, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "j7/node1.2.99.x", "an unset variable expands to nothing");
  cr_assert_eq(grape__pattern_expand_vars("a%q{JOB", &v, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "a%q{JOB", "an unclosed %%q{ stays as written");
  grape_pattern_vars_t none = {5, NULL, NULL, NULL};
  cr_assert_eq(grape__pattern_expand_vars("%h-%q{JOB}-%p", &none, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "%h-%q{JOB}-5", "what is not supplied stays as written");
  cr_expect_eq(grape__pattern_expand_vars("%q{JOB}%q{JOB}", &v, out, 4), -ENAMETOOLONG);
}

Test(pattern, numbered_names_keep_the_extension) {
  char out[64];
  cr_assert_eq(grape__pattern_numbered("/d.x/r.json", 1, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "/d.x/r.1.json");
  cr_assert_eq(grape__pattern_numbered("/d.x/trace", 12, out, sizeof(out)), 0);
  cr_expect_str_eq(out, "/d.x/trace.12", "a dot in a folder is not an extension");
  cr_assert_eq(grape__pattern_numbered(".hidden", 2, out, sizeof(out)), 0);
  cr_expect_str_eq(out, ".hidden.2");
  cr_expect_eq(grape__pattern_numbered("/a/long-name.json", 3, out, 8), -ENAMETOOLONG);
}
