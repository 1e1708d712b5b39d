/* Logging of the shim: level-checked macros, one output sink.
 *
 * DESIGN: a message is formatted into a fixed stack buffer and written with one
 * write(2): no malloc, no stdio locks, so it is safe on the hook path and in a
 * forked child. The macros test the level before evaluating their arguments.
 * Warnings and errors stop after GRAPE_MAX_WARNINGS. */
#ifndef GRAPE_INTERPOSE_LOG_H
#define GRAPE_INTERPOSE_LOG_H

#include "options.h"

/* Output sink: every message (with its "grape: " prefix and newline) goes here. */
typedef void grape_output_fn(const char* msg, void* arg);

/* Replaces the sink (NULL restores the default: GRAPE_LOG_FILE or stderr). */
void grape__log_set_output(grape_output_fn* fn, void* arg);

/* Current level (GRAPE_LOG), cached after the first call. */
int grape__log_level_slow(void);
/* Threads: stored (relaxed) by the first threads that read GRAPE_LOG, loaded (relaxed) by every
 * log call: an initializing race resolves to the same value; reset only in a fork child. */
extern int grape__log_level_cache;   /* -1 until read */
static inline __attribute__((always_inline)) int grape__log_level(void) {
  int l = __atomic_load_n(&grape__log_level_cache, __ATOMIC_RELAXED);
  return __builtin_expect(l >= 0, 1) ? l : grape__log_level_slow();
}

__attribute__((format(printf, 2, 3)))
void grape__log_emit(int level, const char* fmt, ...);

/* Writes msg to the sink unchanged (no prefix, no limit): the exit report uses it
 * for 'stderr'. */
void grape__output(const char* msg);

/* Opens the log's sink now (at start), so that a GRAPE_LOG_FILE that cannot
 * be opened is said when the program starts. */
void grape__log_open(void);

/* Forgets the cached level, open log file and warning count (fork child, tests). */
void grape__log_reset(void);

#define grape_log_at(lvl, ...)                                        \
  do {                                                                \
    if (__builtin_expect(grape__log_level() >= (lvl), 0))             \
      grape__log_emit((lvl), __VA_ARGS__);                            \
  } while (0)
#define grape_log_error(...) grape_log_at(GRAPE_LOG_ERROR, __VA_ARGS__)
#define grape_log_warn(...) grape_log_at(GRAPE_LOG_WARN, __VA_ARGS__)
#define grape_log_info(...) grape_log_at(GRAPE_LOG_INFO, __VA_ARGS__)
#define grape_log_debug(...) grape_log_at(GRAPE_LOG_DEBUG, __VA_ARGS__)

/* Logs a warning the first time this line is reached, then never again. */
#define grape_log_warn_once(...)                                      \
  do {                                                                \
    static int warned_;                                               \
    if (!__atomic_exchange_n(&warned_, 1, __ATOMIC_RELAXED))          \
      grape_log_warn(__VA_ARGS__);                                    \
  } while (0)

#endif
