/* Options: parsing, defaults, one warning per bad value (interpose/options.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/report.h"
#include "log.h"
#include "options.h"

static char captured[4096];
static void capture(const char* msg, void* arg) {
  (void)arg;
  strncat(captured, msg, sizeof(captured) - strlen(captured) - 1);
}

static void setup(void) {
  captured[0] = '\0';
  grape__log_set_output(capture, NULL);
  grape__options_reset();
  grape__log_reset();
}

TestSuite(options, .init = setup);

Test(options, defaults_when_unset) {
  unsetenv("GRAPE_MODE");
  unsetenv("GRAPE_CHUNK");
  cr_expect_eq(grape__option_get(grape_option_mode), GRAPE_MODE_GRAPH);
  cr_expect_eq(grape__option_get(grape_option_chunk), 1024);
  cr_expect_null(grape__option_str(grape_option_report));
  cr_expect_str_empty(captured);
}

Test(options, enum_words_case_insensitive) {
  setenv("GRAPE_MODE", "OFF", 1);
  cr_expect_eq(grape__option_get(grape_option_mode), GRAPE_MODE_OFF);
  grape__options_reset();
  setenv("GRAPE_MODE", "graph", 1);
  cr_expect_eq(grape__option_get(grape_option_mode), GRAPE_MODE_GRAPH);
  grape__options_reset();
  setenv("GRAPE_LOG", "Debug", 1);
  cr_expect_eq(grape__option_get(grape_option_log), GRAPE_LOG_DEBUG);
}

Test(options, bad_value_warns_once_and_keeps_default) {
  setenv("GRAPE_LOG", "warn", 1);
  setenv("GRAPE_MODE", "fast", 1);
  cr_expect_eq(grape__option_get(grape_option_mode), GRAPE_MODE_GRAPH);
  cr_expect_eq(grape__option_get(grape_option_mode), GRAPE_MODE_GRAPH);
  cr_expect_not_null(strstr(captured, "GRAPE_MODE"));
  cr_expect_not_null(strstr(captured, "off | observe | graph"));
  cr_expect_null(strstr(strstr(captured, "GRAPE_MODE") + 1, "GRAPE_MODE"), "warned twice: %s", captured);
}

Test(options, numbers_must_be_whole) {
  setenv("GRAPE_LOG", "warn", 1);
  setenv("GRAPE_CHUNK", "12x", 1);
  cr_expect_eq(grape__option_get(grape_option_chunk), 1024);
  cr_expect_not_null(strstr(captured, "GRAPE_CHUNK"));
}

/* A number outside its range (options.def) is brought to the nearest bound,
 * with one warning naming the range and the value used. */
Test(options, out_of_range_numbers_warn_and_use_the_nearest_bound) {
  setenv("GRAPE_LOG", "warn", 1);
  setenv("GRAPE_CHUNK", "-3", 1);
  setenv("GRAPE_VARIANTS", "99", 1);
  cr_expect_eq(grape__option_get(grape_option_chunk), 1);
  cr_expect_eq(grape__option_get(grape_option_variants), 16);
  cr_expect_eq(grape__option_get(grape_option_variants), 16);
  cr_expect_not_null(strstr(captured, "GRAPE_CHUNK=-3 is out of range (accepted: a whole number from 1 to"),
                     "%s", captured);
  cr_expect_not_null(strstr(captured, "using 1\n"), "%s", captured);
  cr_expect_not_null(strstr(captured, "GRAPE_VARIANTS=99 is out of range (accepted: a whole number "
                                      "from 1 to 16); using 16"), "%s", captured);
  cr_expect_null(strstr(strstr(captured, "GRAPE_VARIANTS") + 1, "GRAPE_VARIANTS"), "warned twice");
  cr_expect_eq(grape__option_set(grape_option_variants, "0"), -ERANGE);
  cr_expect_eq(grape__option_get(grape_option_variants), 16, "a refused set keeps the value");
}

/* Every LONG option has a range that holds its default; no other kind has one. */
Test(options, every_long_option_has_a_range_holding_its_default) {
  for (int i = 0; i < grape_option_count; i++) {
    long lo, hi;
    int has = grape__option_range((grape_option_t)i, &lo, &hi) == 0;
    cr_expect_eq(has, grape__option_kind((grape_option_t)i) == GRAPE_OPT_LONG, "%s",
                 grape__option_name((grape_option_t)i));
    if (has) {
      long d = atol(grape__option_default((grape_option_t)i));
      cr_expect(lo <= d && d <= hi, "%s: default %ld outside %ld..%ld",
                grape__option_name((grape_option_t)i), d, lo, hi);
    }
  }
}

/* A bad GRAPE_LOG is said, at the default level, rather than dropped while
 * the logger reads its own level. */
Test(options, bad_log_level_is_said) {
  setenv("GRAPE_LOG", "loud", 1);
  cr_expect_eq(grape__log_level(), GRAPE_LOG_WARN);
  cr_expect_not_null(strstr(captured, "GRAPE_LOG has an invalid value 'loud' (accepted: error | warn | "
                                      "info | debug)"), "%s", captured);
}

/* Options sit below the log: a bad value read before anyone listens is said
 * to the first listener, once. */
static char heard[1024];
static void hear(int level, const char* fmt, ...) {
  size_t n = strlen(heard);
  n += (size_t)snprintf(heard + n, sizeof(heard) - n, "%d:", level);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(heard + n, sizeof(heard) - n, fmt, ap);
  va_end(ap);
}

Test(options, bad_value_waits_for_a_listener) {
  grape__options_listen(NULL);
  setenv("GRAPE_CHUNK", "12x", 1);
  cr_expect_eq(grape__option_get(grape_option_chunk), 1024);
  cr_expect_str_empty(captured);
  grape__options_listen(hear);
  cr_expect_not_null(strstr(heard, "1:environment option GRAPE_CHUNK has an invalid value '12x'"), "%s",
                     heard);
  heard[0] = '\0';
  grape__options_listen(hear);
  cr_expect_str_empty(heard, "said twice");
}

Test(options, booleans_take_the_usual_words) {
  setenv("GRAPE_OVERWRITE", "On", 1);
  cr_expect_eq(grape__option_get(grape_option_overwrite), 1);
  grape__options_reset();
  setenv("GRAPE_OVERWRITE", "false", 1);
  cr_expect_eq(grape__option_get(grape_option_overwrite), 0);
  grape__options_reset();
  setenv("GRAPE_OVERWRITE", "maybe", 1);
  cr_expect_eq(grape__option_get(grape_option_overwrite), 0);
  cr_expect_not_null(strstr(captured, "GRAPE_OVERWRITE"));
}

Test(options, set_wins_over_environment) {
  setenv("GRAPE_REPORT", "/tmp/x", 1);
  cr_expect_str_eq(grape__option_str(grape_option_report), "/tmp/x");
  cr_expect_eq(grape__option_set(grape_option_report, "stderr"), 0);
  cr_expect_str_eq(grape__option_str(grape_option_report), "stderr");
  cr_expect_neq(grape__option_set(grape_option_mode, "nope"), 0);
}

Test(options, every_option_has_name_doc_default) {
  for (int i = 0; i < grape_option_count; i++) {
    cr_expect_not_null(grape__option_name((grape_option_t)i));
    cr_expect_gt(strlen(grape__option_doc((grape_option_t)i)), 5);
    cr_expect_not_null(grape__option_default((grape_option_t)i));
  }
  cr_expect_str_eq(grape__option_default(grape_option_chunk), "1024");
  cr_expect_str_eq(grape__option_default(grape_option_mode), "graph");
}

Test(options, check_parses_without_setting) {
  unsetenv("GRAPE_MODE");
  cr_expect_eq(grape__option_check(grape_option_mode, "Observe"), 0);
  cr_expect_eq(grape__option_check(grape_option_mode, "fast"), -EINVAL);
  cr_expect_eq(grape__option_check(grape_option_chunk, "12x"), -EINVAL);
  cr_expect_eq(grape__option_check(grape_option_report, "/tmp/r.%p.json"), 0);
  cr_expect_eq(grape__option_get(grape_option_mode), GRAPE_MODE_GRAPH, "check must not set");
  cr_expect_null(grape__option_str(grape_option_report));
  int len;
  const char* words = grape__option_accepted(grape_option_mode, &len);
  cr_expect_eq(strncmp(words, "off | observe | graph", (size_t)len), 0);
  cr_expect_eq(len, (int)strlen("off | observe | graph"));
}

Test(options, env_names_are_grape_and_upper_name) {
  char env[64];
  grape__option_env(grape_option_cache_mb, env, sizeof(env));
  cr_expect_str_eq(env, "GRAPE_CACHE_MB");
  grape__option_env(grape_option_mode, env, 8);
  cr_expect_str_eq(env, "GRAPE_M", "cut to the buffer");
}

Test(options, rank_from_rank_then_local_rank) {
  unsetenv("RANK");
  unsetenv("LOCAL_RANK");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMI_RANK");
  unsetenv("SLURM_PROCID");
  cr_expect_eq(grape__process_rank(), -1);
  setenv("LOCAL_RANK", "3", 1);
  cr_expect_eq(grape__process_rank(), 3);
  setenv("RANK", "7", 1);
  cr_expect_eq(grape__process_rank(), 7);
  setenv("RANK", "x7", 1);
  cr_expect_eq(grape__process_rank(), 3, "a bad RANK falls back to LOCAL_RANK");
  setenv("RANK", "-2", 1);
  unsetenv("LOCAL_RANK");
  cr_expect_eq(grape__process_rank(), -1);
}

/* Open MPI, MPICH/Intel MPI and Slurm name the rank in their own variables;
 * a global rank comes before the node-local LOCAL_RANK. */
Test(options, rank_from_mpi_and_slurm) {
  unsetenv("RANK");
  setenv("LOCAL_RANK", "1", 1);
  setenv("SLURM_PROCID", "5", 1);
  cr_expect_eq(grape__process_rank(), 5);
  setenv("PMI_RANK", "4", 1);
  cr_expect_eq(grape__process_rank(), 4);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  cr_expect_eq(grape__process_rank(), 3);
  setenv("RANK", "2", 1);
  cr_expect_eq(grape__process_rank(), 2);
}

/* The report names modes by GRAPE_REPORT_MODES (include/grape/report.h), the
 * option parser by the words of GRAPE_MODE's doc string: the same words, in
 * the order of the GRAPE_MODE_* values. */
Test(options, mode_words_are_the_report_modes_in_order) {
#define MODE_WORD(m) " | " #m
  const char* report = GRAPE_REPORT_MODES(MODE_WORD) + 3;
#undef MODE_WORD
  int len = 0;
  const char* accepted = grape__option_accepted(grape_option_mode, &len);
  cr_expect_eq((size_t)len, strlen(report), "'%.*s' against '%s'", len, accepted, report);
  cr_expect_eq(strncmp(accepted, report, strlen(report)), 0, "'%.*s' against '%s'", len, accepted,
               report);
  static const char* const words[] = {"off", "observe", "graph"};
  for (int i = 0; i < 3; i++) {
    setenv("GRAPE_MODE", words[i], 1);
    grape__options_reset();
    cr_expect_eq(grape__option_get(grape_option_mode),
                 i == 0 ? GRAPE_MODE_OFF : i == 1 ? GRAPE_MODE_OBSERVE : GRAPE_MODE_GRAPH);
  }
}

