/* Options of the shim: one table generated from options.def, one parser.
 *
 * DESIGN: the environment is read in this file only: the options in one
 * place (option_init), and the launcher's rank, which the report and the
 * trace both name (grape__process_rank). Each
 * option moves UNINIT -> DEFAULTED | SET on first use, so a getter works before
 * the constructor has run (a CUDA library's constructor may call into the shim
 * first). A bad value gives one warning naming the variable, the accepted
 * values and the value used: the default for a value that does not parse, the
 * nearest bound for a number outside its range (options.def), which is what
 * the number asked for as far as it can be had. Nothing here allocates except a STR value,
 * which is duplicated once and kept until exit. Values are plain words read
 * with relaxed atomics: two threads initialising the same option at once parse
 * the same environment and store the same value, so the race is benign.
 * Options sit below the log, which reads its own settings here: a warning or
 * the list of values goes to whoever listens (grape__options_listen; the log
 * from load on), and a bad value read before anyone listens is said when
 * one comes. */
#include "options.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/pattern.h"

typedef enum { UNINIT = 0, DEFAULTED, SET } option_state_t;

typedef struct option_desc_s {
  long value;                 /* current value (ENUM index, number, BOOL 0/1) */
  const char* str;            /* current value of a STR option (strdup'd, or the default) */
  int state;                  /* option_state_t */
  const char* name;           /* e.g. "mode" */
  grape_option_kind_t kind;
  long dflt_long;             /* default of a numeric option */
  const char* dflt_str;       /* default as text (ENUM or BOOL word / STR value) */
  const char* doc;
  long lo, hi;                /* range of a LONG (GRAPE_OPTION_RANGE); lo > hi: none */
  int bad_err;                /* the bad value's error (0: none), and the value */
  char bad[65];
  int unsaid;                 /* its warning waits for a listener */
} option_desc_t;

/* A row's default as a number (LONG) or as text (ENUM word, STR value). */
#define DFLT_LONG_ENUM(d) 0
#define DFLT_LONG_STR(d) 0
#define DFLT_LONG_LONG(d) (d)
#define DFLT_LONG_BOOL(d) 0
#define DFLT_STR_ENUM(d) (d)
#define DFLT_STR_STR(d) (d)
#define DFLT_STR_LONG(d) NULL
#define DFLT_STR_BOOL(d) (d)

static option_desc_t options[grape_option_count] = {
#define GRAPE_OPTION(name, kind, dflt, doc) \
  {0, NULL, UNINIT, #name, GRAPE_OPT_##kind, DFLT_LONG_##kind(dflt), DFLT_STR_##kind(dflt), doc, 1, 0, 0, "", 0},
#include "options.def"
#undef GRAPE_OPTION
};

/* The ranges of options.def, applied to the table once. */
static const struct {
  grape_option_t o;
  long lo, hi;
} ranges[] = {
#define GRAPE_OPTION(name, kind, dflt, doc)
#define GRAPE_OPTION_RANGE(name, lo, hi) {grape_option_##name, lo, hi},
#include "options.def"
#undef GRAPE_OPTION
};

static void ranges_apply(void) {
  for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
    options[ranges[i].o].lo = ranges[i].lo;
    options[ranges[i].o].hi = ranges[i].hi;
  }
}

static pthread_once_t ranges_once = PTHREAD_ONCE_INIT;

static int bool_word(const char* s) {
  static const char* const yes[] = {"1", "true", "yes", "on", ""};
  static const char* const no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
    if (strcasecmp(s, yes[i]) == 0)
      return 1;
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
    if (strcasecmp(s, no[i]) == 0)
      return 0;
  return -1;
}

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
    if (d->lo <= d->hi && (v < d->lo || v > d->hi)) {
      d->value = v < d->lo ? d->lo : d->hi;
      return -ERANGE;   /* brought into range: the caller warns */
    }
    return 0;
  case GRAPE_OPT_BOOL:
    v = bool_word(s);
    if (v < 0)
      return -EINVAL;
    d->value = v;
    return 0;
  }
  return -EINVAL;
}

/* Accepted values of d for a warning; ENUM lists are cut at their ';'.
 * A LONG's text is formatted once per option into a static slot. */
static const char* accepted(const option_desc_t* d, int* len) {
  static char ranges_text[grape_option_count][64];
  const char* s = "any text";
  switch (d->kind) {
  case GRAPE_OPT_ENUM: *len = enum_list_len(d->doc); return d->doc;
  case GRAPE_OPT_LONG: {
    char* t = ranges_text[d - options];
    if (d->lo > d->hi)
      s = "a whole number";
    else {
      if (t[0] == '\0')
        snprintf(t, sizeof(ranges_text[0]), "a whole number from %ld to %ld", d->lo, d->hi);
      s = t;
    }
    break;
  }
  case GRAPE_OPT_BOOL: s = "1, true, yes, on | 0, false, no, off"; break;
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
  else if (d->kind == GRAPE_OPT_BOOL)
    d->value = bool_word(d->dflt_str);
  else if (d->kind == GRAPE_OPT_STR)
    d->str = d->dflt_str;
  else
    d->value = d->dflt_long;
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* Threads: stored once by the listener (the log, at load), loaded by any thread that warns. */
static grape_option_say_fn* listener;

/* Says option d's bad value to the listener, or leaves it for the next one. */
static void warn_bad(option_desc_t* d) {
  grape_option_say_fn* say = __atomic_load_n(&listener, __ATOMIC_ACQUIRE);
  if (say == NULL) {
    d->unsaid = 1;
    return;
  }
  d->unsaid = 0;
  char env[64];
  env_name(d, env, sizeof(env));
  int len;
  const char* acc = accepted(d, &len);
  if (d->bad_err == -ERANGE)
    say(GRAPE_LOG_WARN, "environment option %s=%s is out of range (accepted: %.*s); using %ld", env,
        d->bad, len, acc, d->value);
  else
    say(GRAPE_LOG_WARN, "environment option %s has an invalid value '%s' (accepted: %.*s); using the "
        "default '%s'", env, d->bad, len, acc, grape__option_default((grape_option_t)(d - options)));
}

void grape__options_listen(grape_option_say_fn* say) {
  __atomic_store_n(&listener, say, __ATOMIC_RELEASE);
  for (int i = 0; i < grape_option_count; i++)
    if (__atomic_load_n(&options[i].state, __ATOMIC_ACQUIRE) != UNINIT && options[i].unsaid)
      warn_bad(&options[i]);
}

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
  int state = DEFAULTED, err = 0;
  if (s != NULL) {
    err = parse_value(d, s);
    if (err == 0 || err == -ERANGE)
      state = SET;
    else
      set_default(d);
    if (err)
      snprintf(bad, sizeof(bad), "%s", s);
  }
  d->bad_err = err;
  memcpy(d->bad, bad, sizeof(d->bad));
  __atomic_store_n(&d->state, state, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&init_lock);
  if (err)
    warn_bad(d);
}

static inline option_desc_t* desc(grape_option_t o) {
  option_desc_t* d = &options[o];
  if (__builtin_expect(__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == UNINIT, 0)) {
    pthread_once(&ranges_once, ranges_apply);
    option_init(d);
  }
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
  pthread_once(&ranges_once, ranges_apply);
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
  pthread_once(&ranges_once, ranges_apply);
  return accepted(&options[o], len);
}

int grape__option_range(grape_option_t o, long* lo, long* hi) {
  pthread_once(&ranges_once, ranges_apply);
  if (options[o].lo > options[o].hi)
    return -ENOENT;
  *lo = options[o].lo;
  *hi = options[o].hi;
  return 0;
}

const char* grape__option_default(grape_option_t o) {
  static char buf[grape_option_count][24];
  const option_desc_t* d = &options[o];
  if (d->kind != GRAPE_OPT_LONG)
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

void grape__options_load(void) {
  for (int i = 0; i < grape_option_count; i++)
    (void)desc((grape_option_t)i);
}

void grape__options_print(void) {
  grape_option_say_fn* say = __atomic_load_n(&listener, __ATOMIC_ACQUIRE);
  if (say == NULL)
    return;
  for (int i = 0; i < grape_option_count; i++) {
    option_desc_t* d = desc((grape_option_t)i);
    const char* how = d->state == SET ? "set" : "default";
    char env[64];
    env_name(d, env, sizeof(env));
    if (d->kind == GRAPE_OPT_STR)
      say(GRAPE_LOG_INFO, "option %s=%s (%s)", env, d->str ? d->str : "(unset)", how);
    else if (d->kind == GRAPE_OPT_BOOL)
      say(GRAPE_LOG_INFO, "option %s=%s (%s)", env, d->value ? "yes" : "no", how);
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
      say(GRAPE_LOG_INFO, "option %s=%.*s (%s)", env, len, p, how);
    } else
      say(GRAPE_LOG_INFO, "option %s=%ld (%s)", env, d->value, how);
  }
}

/* ---- The launcher's rank, and other names of the environment ---- */

long grape__process_rank(void) {
  static const char* const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                     "LOCAL_RANK"};
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

const char* grape__env(const char* name) {
  return getenv(name);
}

const char* grape__run_dir(void) {
  const char* d = getenv("GRAPE_RUN_DIR");
  return d != NULL && *d ? d : NULL;
}

int grape__option_path(const char* pattern, char* out, size_t cap) {
  long rank = grape__process_rank();
  if (rank < 0)
    rank = 0;   /* a name's rank is a number: 0 without a launcher */
  char host[256];
  if (gethostname(host, sizeof(host)) != 0)
    snprintf(host, sizeof(host), "localhost");
  host[sizeof(host) - 1] = '\0';
  grape_pattern_vars_t v = {(long)getpid(), &rank, host, grape__env};
  return grape__pattern_expand_vars(pattern, &v, out, cap);
}
