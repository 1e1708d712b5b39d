/* Options of the shim: one table generated from options.def, one parser.
 *
 * DESIGN: the environment is read in this file only: the options in one
 * place (option_init), and the launcher's rank, which the report and the
 * trace both name (grape__process_rank). Each
 * option moves UNINIT -> DEFAULTED | SET on first use, so a getter works before
 * the constructor has run (a CUDA library's constructor may call into the shim
 * first). A bad value gives one warning naming the variable and the accepted
 * values, and the default stays. Nothing here allocates except a STR value,
 * which is duplicated once and kept until exit. Values are plain words read
 * with relaxed atomics: two threads initialising the same option at once parse
 * the same environment and store the same value, so the race is benign. */
#include "options.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

typedef enum { UNINIT = 0, DEFAULTED, SET } option_state_t;

typedef struct option_desc_s {
  long value;                 /* current value (ENUM index, number) */
  const char* str;            /* current value of a STR option (strdup'd, or the default) */
  int state;                  /* option_state_t */
  const char* name;           /* e.g. "mode" */
  grape_option_kind_t kind;
  long dflt_long;             /* default of a numeric option */
  const char* dflt_str;       /* default as text (ENUM word / STR value) */
  const char* doc;
} option_desc_t;

/* A row's default as a number (LONG) or as text (ENUM word, STR value). */
#define DFLT_LONG_ENUM(d) 0
#define DFLT_LONG_STR(d) 0
#define DFLT_LONG_LONG(d) (d)
#define DFLT_STR_ENUM(d) (d)
#define DFLT_STR_STR(d) (d)
#define DFLT_STR_LONG(d) NULL

static option_desc_t options[grape_option_count] = {
#define GRAPE_OPTION(name, kind, dflt, doc) \
  {0, NULL, UNINIT, #name, GRAPE_OPT_##kind, DFLT_LONG_##kind(dflt), DFLT_STR_##kind(dflt), doc},
#include "options.def"
#undef GRAPE_OPTION
};

/* ---- Parsing ---- */

/* Index of word (length n) in an ENUM doc "a | b | c; rest", or -1. */
static long enum_index(const char* doc, const char* word, size_t n) {
  long idx = 0;
  const char* p = doc;
  for (;;) {
    while (*p == ' ')
      p++;
    const char* start = p;
    while (*p && *p != ' ' && *p != '|' && *p != ';')
      p++;
    if ((size_t)(p - start) == n && n > 0 && strncasecmp(start, word, n) == 0)
      return idx;
    while (*p == ' ')
      p++;
    if (*p != '|')
      return -1;
    p++;
    idx++;
  }
}

/* Length of the "a | b | c" part of an ENUM doc (for messages). */
static int enum_list_len(const char* doc) {
  const char* semi = strchr(doc, ';');
  return semi ? (int)(semi - doc) : (int)strlen(doc);
}

static int parse_long(const char* s, long* out) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || errno != 0 || *end)
    return -EINVAL;
  *out = v;
  return 0;
}

/* Parses s for option d into its value. @return 0 or -EINVAL. */
static int parse_value(option_desc_t* d, const char* s) {
  long v;
  switch (d->kind) {
  case GRAPE_OPT_ENUM:
    v = enum_index(d->doc, s, strlen(s));
    if (v < 0)
      return -EINVAL;
    d->value = v;
    return 0;
  case GRAPE_OPT_STR: {
    char* copy = strdup(s);
    if (copy == NULL)
      return -ENOMEM;
    d->str = copy;   /* the previous copy leaks on a second set: options change rarely */
    return 0;
  }
  case GRAPE_OPT_LONG:
    if (parse_long(s, &v))
      return -EINVAL;
    d->value = v;
    return 0;
  }
  return -EINVAL;
}

/* Accepted values of d for a warning; ENUM lists are cut at their ';'. */
static const char* accepted(const option_desc_t* d, int* len) {
  const char* s = "any text";
  switch (d->kind) {
  case GRAPE_OPT_ENUM: *len = enum_list_len(d->doc); return d->doc;
  case GRAPE_OPT_LONG: s = "a whole number"; break;
  case GRAPE_OPT_STR: break;
  }
  *len = (int)strlen(s);
  return s;
}

/* "GRAPE_" + upper(d's name) into out, cut to cap >= 1 bytes. */
static void env_name(const option_desc_t* d, char* out, size_t cap) {
  static const char prefix[] = "GRAPE_";
  size_t n = sizeof(prefix) - 1 < cap ? sizeof(prefix) - 1 : cap - 1;
  memcpy(out, prefix, n);
  for (const char* p = d->name; *p && n + 1 < cap; p++)
    out[n++] = (char)toupper((unsigned char)*p);
  out[n] = '\0';
}

static void set_default(option_desc_t* d) {
  if (d->kind == GRAPE_OPT_ENUM)
    d->value = enum_index(d->doc, d->dflt_str, strlen(d->dflt_str));
  else if (d->kind == GRAPE_OPT_STR)
    d->str = d->dflt_str;
  else
    d->value = d->dflt_long;
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* Reads GRAPE_<NAME> for option d: the one place that reads the environment.
 * Serialised by init_lock (first use only); the warning for a bad value is
 * printed after the lock is released, since the logger reads options too. */
static void option_init(option_desc_t* d) {
  char env[64];
  env_name(d, env, sizeof(env));
  char bad[65];
  bad[0] = '\0';
  pthread_mutex_lock(&init_lock);
  if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != UNINIT) {
    pthread_mutex_unlock(&init_lock);
    return;
  }
  set_default(d);
  const char* s = getenv(env);
  int state = DEFAULTED;
  if (s != NULL) {
    if (parse_value(d, s) == 0) {
      state = SET;
    } else {
      set_default(d);
      snprintf(bad, sizeof(bad), "%s", s);
    }
  }
  __atomic_store_n(&d->state, state, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&init_lock);
  if (s != NULL && state != SET) {
    int len;
    const char* acc = accepted(d, &len);
    grape_log_warn("environment option %s has an invalid value '%s' (accepted: %.*s); using the default '%s'",
                   env, bad, len, acc, grape__option_default((grape_option_t)(d - options)));
  }
}

static inline option_desc_t* desc(grape_option_t o) {
  option_desc_t* d = &options[o];
  if (__builtin_expect(__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == UNINIT, 0))
    option_init(d);
  return d;
}

/* ---- Access ---- */

long grape__option_get(grape_option_t o) {
  return desc(o)->value;
}

const char* grape__option_str(grape_option_t o) {
  return desc(o)->str;
}

int grape__option_set(grape_option_t o, const char* s) {
  option_desc_t* d = desc(o);
  option_desc_t tmp = *d;
  int err = parse_value(&tmp, s);
  if (err)
    return err;
  d->value = tmp.value;
  d->str = tmp.str;
  __atomic_store_n(&d->state, SET, __ATOMIC_RELEASE);
  return 0;
}

int grape__option_check(grape_option_t o, const char* s) {
  option_desc_t tmp = options[o];
  int err = parse_value(&tmp, s);
  if (err == 0 && tmp.kind == GRAPE_OPT_STR)
    free((char*)tmp.str);
  return err;
}

void grape__options_reset(void) {
  pthread_mutex_init(&init_lock, NULL);
  for (int i = 0; i < grape_option_count; i++)
    __atomic_store_n(&options[i].state, UNINIT, __ATOMIC_RELEASE);
}

const char* grape__option_name(grape_option_t o) { return options[o].name; }
const char* grape__option_doc(grape_option_t o) { return options[o].doc; }
grape_option_kind_t grape__option_kind(grape_option_t o) { return options[o].kind; }

void grape__option_env(grape_option_t o, char* out, size_t cap) {
  env_name(&options[o], out, cap);
}

const char* grape__option_accepted(grape_option_t o, int* len) {
  return accepted(&options[o], len);
}

const char* grape__option_default(grape_option_t o) {
  static char buf[grape_option_count][24];
  const option_desc_t* d = &options[o];
  if (d->kind == GRAPE_OPT_ENUM || d->kind == GRAPE_OPT_STR)
    return d->dflt_str ? d->dflt_str : "(unset)";
  if (buf[o][0] == '\0') {
    /* Formatted by hand: snprintf is fine too, but this runs inside the logger. */
    char tmp[24];
    long v = d->dflt_long;
    int neg = v < 0, n = 0;
    unsigned long u = neg ? 0UL - (unsigned long)v : (unsigned long)v;
    do
      tmp[n++] = (char)('0' + u % 10);
    while ((u /= 10) && n < 22);
    int k = 0;
    if (neg)
      buf[o][k++] = '-';
    while (n)
      buf[o][k++] = tmp[--n];
    buf[o][k] = '\0';
  }
  return buf[o];
}

void grape__options_print(void) {
  for (int i = 0; i < grape_option_count; i++) {
    option_desc_t* d = desc((grape_option_t)i);
    const char* how = d->state == SET ? "set" : "default";
    char env[64];
    env_name(d, env, sizeof(env));
    if (d->kind == GRAPE_OPT_STR)
      grape_log_info("option %s=%s (%s)", env, d->str ? d->str : "(unset)", how);
    else if (d->kind == GRAPE_OPT_ENUM) {
      /* Print the word at index value. */
      const char* p = d->doc;
      for (long k = 0; k < d->value; k++)
        p = strchr(p, '|') + 1;
      while (*p == ' ')
        p++;
      int len = 0;
      while (p[len] && p[len] != ' ' && p[len] != '|' && p[len] != ';')
        len++;
      grape_log_info("option %s=%.*s (%s)", env, len, p, how);
    } else
      grape_log_info("option %s=%ld (%s)", env, d->value, how);
  }
}

/* ---- The launcher's rank ---- */

long grape__process_rank(void) {
  static const char* const vars[] = {"RANK", "LOCAL_RANK"};
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char* v = getenv(vars[i]);
    char* end;
    if (v == NULL || *v == '\0')
      continue;
    long r = strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r <= INT32_MAX)
      return r;
  }
  return -1;
}
