/* Options of the shim, read from the environment once (see options.def). */
#ifndef GRAPE_INTERPOSE_OPTIONS_H
#define GRAPE_INTERPOSE_OPTIONS_H

#include <stddef.h>

typedef enum grape_option_e {
#define GRAPE_OPTION(name, kind, dflt, doc) grape_option_##name,
#include "options.def"
#undef GRAPE_OPTION
  grape_option_count
} grape_option_t;

typedef enum grape_option_kind_e {
  GRAPE_OPT_ENUM,   /* one word of the doc's "a | b | c" list; value = its index */
  GRAPE_OPT_STR,    /* a string; NULL when unset */
  GRAPE_OPT_LONG,   /* a decimal number, whole string */
  GRAPE_OPT_BOOL,   /* 1/true/yes/on/"" or 0/false/no/off */
  GRAPE_OPT_SIZE,   /* a number with an optional K/M/G suffix, in bytes */
} grape_option_kind_t;

/* Values of the enum options (indices into their word lists). */
enum { GRAPE_MODE_OFF = 0, GRAPE_MODE_OBSERVE = 1, GRAPE_MODE_GRAPH = 2 };
enum { GRAPE_LOG_ERROR = 0, GRAPE_LOG_WARN = 1, GRAPE_LOG_INFO = 2, GRAPE_LOG_DEBUG = 3 };

/* Value of an integer-like option (ENUM index, LONG, BOOL, SIZE). Initialises the
 * option from the environment on first use, so it works before the constructor.
 * Thread-safe: racing first readers parse the same environment to the same value. */
long grape__option_get(grape_option_t o);

/* Value of a STR option, or NULL when unset. The string lives until exit. */
const char* grape__option_str(grape_option_t o);

/* Sets an option programmatically; wins over the environment. s is parsed like
 * an environment value. @return 0, or -EINVAL (value kept) for a bad value. */
int grape__option_set(grape_option_t o, const char* s);

/* Forgets every value so the next get reads the environment again (tests, fork). */
void grape__options_reset(void);

/* Descriptor access for listings (`grape run --help`, docs). */
const char* grape__option_name(grape_option_t o);      /* e.g. "mode" */
const char* grape__option_doc(grape_option_t o);
const char* grape__option_default(grape_option_t o);   /* as text; "(unset)" for NULL */
grape_option_kind_t grape__option_kind(grape_option_t o);

/* Writes "GRAPE_MODE=observe (default)"-style lines for every option through the
 * log sink (used at GRAPE_LOG=info). */
void grape__options_print(void);

#endif
