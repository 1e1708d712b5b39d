/* Options of the shim, read from the environment once (see options.def).
 * With log.h, the layer the shim and the CLI both link
 * (grape_interpose_base): `grape run` lists these options and checks its
 * --mode with the shim's own parser. */
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
  GRAPE_OPT_LONG,   /* a decimal number, whole string, within its range */
  GRAPE_OPT_BOOL,   /* 1/true/yes/on or 0/false/no/off (case-insensitive); value 1 or 0 */
} grape_option_kind_t;

/* Values of the enum options (indices into their word lists). */
enum { GRAPE_MODE_OFF = 0, GRAPE_MODE_OBSERVE = 1, GRAPE_MODE_GRAPH = 2 };
enum { GRAPE_CONC_OFF = 0, GRAPE_CONC_OBSERVE = 1, GRAPE_CONC_SAFE = 2, GRAPE_CONC_GO = 3 };
enum { GRAPE_LOG_ERROR = 0, GRAPE_LOG_WARN = 1, GRAPE_LOG_INFO = 2, GRAPE_LOG_DEBUG = 3 };

/* Value of an integer-like option (ENUM index, LONG). Initialises the
 * option from the environment on first use, so it works before the constructor.
 * Thread-safe: racing first readers parse the same environment to the same value. */
long grape__option_get(grape_option_t o);

/* Value of a STR option, or NULL when unset. The string lives until exit. */
const char* grape__option_str(grape_option_t o);

/* Sets an option programmatically; wins over the environment. s is parsed like
 * an environment value. @return 0, or -EINVAL / -ERANGE (value kept) for a
 * value that does not parse / is out of the option's range. */
int grape__option_set(grape_option_t o, const char* s);

/* 0 when s is a value option o accepts, else -EINVAL or -ERANGE; o keeps its value. */
int grape__option_check(grape_option_t o, const char* s);

/* Forgets every value so the next get reads the environment again (tests, fork). */
void grape__options_reset(void);

/* Descriptor access for listings (`grape run --help`, docs). */
const char* grape__option_name(grape_option_t o);      /* e.g. "mode" */
const char* grape__option_doc(grape_option_t o);
const char* grape__option_default(grape_option_t o);   /* as text; "(unset)" for NULL */
grape_option_kind_t grape__option_kind(grape_option_t o);

/* The option's environment variable, "GRAPE_" + upper(name), into out
 * (cut to cap >= 1 bytes). */
void grape__option_env(grape_option_t o, char* out, size_t cap);

/* The range [*lo, *hi] of a LONG option (options.def's GRAPE_OPTION_RANGE).
 * @return 0, or -ENOENT when o has none (not a LONG). */
int grape__option_range(grape_option_t o, long* lo, long* hi);

/* What o accepts, for messages: an ENUM's "a | b | c" (len bytes of the
 * returned text, which is not NUL-terminated there), else a description. */
const char* grape__option_accepted(grape_option_t o, int* len);

/* Reads every option now (at start), so that each bad value is warned about
 * once when the program starts, whether or not the run comes to use it. */
void grape__options_load(void);

/* Writes "GRAPE_MODE=observe (default)"-style lines for every option to the
 * listener, at GRAPE_LOG_INFO (used at GRAPE_LOG=info). */
void grape__options_print(void);

/* Who is told of a bad value, and of the values at start (level, printf
 * format and arguments): the log (log.c) listens from load on. Options sit
 * below the log, which reads its own settings here; a bad value read before
 * anyone listens is said when a listener comes. */
typedef void grape_option_say_fn(int level, const char* fmt, ...);
void grape__options_listen(grape_option_say_fn* say);

/* The process's rank as a launcher gives it: the first of RANK (torchrun),
 * OMPI_COMM_WORLD_RANK (Open MPI), PMI_RANK (MPICH, Intel MPI),
 * SLURM_PROCID (srun) and LOCAL_RANK that holds a whole number up to
 * INT32_MAX; -1 when none does. Read here, where the environment is read. */
long grape__process_rank(void);

/* The environment variable name, for "%q{NAME}" in output names (NULL when
 * unset). The one getenv of the shim outside the option table. */
const char* grape__env(const char* name);

/* An output file's name from its pattern (util/pattern.h: %p the pid, %r
 * the rank or 0, %h the host, %q{NAME} a variable of the environment) into
 * out. @return 0, or -ENAMETOOLONG. */
int grape__option_path(const char* pattern, char* out, size_t cap);

/* GRAPE_RUN_DIR: the folder `grape run` gave the command for its own copy of
 * every process's report (NULL when not under grape run). */
const char* grape__run_dir(void);

#endif
