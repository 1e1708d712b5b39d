/* Logging: format on the stack, one write(2) to the sink.
 *
 * DESIGN: the level and the log file are resolved lazily and cached in plain
 * words (benign races: every thread computes the same value). The default sink
 * writes to GRAPE_LOG_FILE (opened once with O_APPEND, "%p" = pid) or stderr.
 * Non-main threads get a "thread 0x...: " prefix, as in mimalloc. A thread-local
 * guard drops a message logged from inside the logger; a warning about GRAPE_LOG
 * itself, raised while the level is being read, is printed at the default
 * level. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "options.h"
#include "util/mkdirs.h"
#include "util/write_all.h"

int grape__log_level_cache = -1;     /* -1: not read yet */
static int log_fd = -1;            /* -1: not opened yet; 2 when stderr */
static long warnings;              /* warnings and errors printed so far */
static grape_output_fn* out_fn;
static void* out_arg;
static __thread int in_log __attribute__((tls_model("initial-exec")));
static __thread int reading_level __attribute__((tls_model("initial-exec")));

void grape__log_set_output(grape_output_fn* fn, void* arg) {
  out_arg = arg;
  __atomic_store_n(&out_fn, fn, __ATOMIC_RELEASE);
}

int grape__log_level_slow(void) {
  int l = __atomic_load_n(&grape__log_level_cache, __ATOMIC_RELAXED);
  if (__builtin_expect(l < 0, 0)) {
    /* A bad GRAPE_LOG warns while it is being read: that warning is printed
     * at the default level rather than dropped. */
    if (reading_level)
      return GRAPE_LOG_WARN;
    reading_level = 1;
    l = (int)grape__option_get(grape_option_log);
    reading_level = 0;
    __atomic_store_n(&grape__log_level_cache, l, __ATOMIC_RELAXED);
  }
  return l;
}

static int open_log_fd(void) {
  int fd = __atomic_load_n(&log_fd, __ATOMIC_RELAXED);
  if (fd >= 0)
    return fd;
  const char* path = grape__option_str(grape_option_log_file);
  fd = 2;
  if (path != NULL && *path) {
    /* Lines are appended: processes sharing one name share the file. A name
     * that cannot be opened is said on stderr, which gets the lines instead. */
    char buf[4096], msg[4800];
    int err = grape__option_path(path, buf, sizeof(buf)) ? ENAMETOOLONG : 0;
    if (err == 0) {
      (void)grape__mkdirs_for(buf);   /* its folders, as for a report or a trace */
      int f = open(buf, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (f >= 0)
        fd = f;
      else
        err = errno;
    }
    if (err != 0) {
      int n = snprintf(msg, sizeof(msg), "grape: warning: GRAPE_LOG_FILE=%s: cannot open %s: %s; "
                       "logging to stderr\n", path, err == ENAMETOOLONG ? path : buf, strerror(err));
      if (n > 0)
        (void)grape__write_all(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, NULL);
    }
  }
  int expected = -1;
  if (!__atomic_compare_exchange_n(&log_fd, &expected, fd, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    if (fd != 2)
      close(fd);
    fd = expected;
  }
  return fd;
}

void grape__output(const char* msg) {
  grape_output_fn* fn = __atomic_load_n(&out_fn, __ATOMIC_ACQUIRE);
  if (fn != NULL) {
    fn(msg, out_arg);
    return;
  }
  (void)grape__write_all(open_log_fd(), msg, strlen(msg), NULL);
}

static void log_vemit(int level, const char* fmt, va_list ap) {
  if (in_log)
    return;
  if (level <= GRAPE_LOG_WARN) {
    long max = grape__option_get(grape_option_max_warnings);
    long n = __atomic_add_fetch(&warnings, 1, __ATOMIC_RELAXED);
    if (max >= 0 && n > max) {
      if (n == max + 1)
        grape__output("grape: warning: further warnings suppressed (GRAPE_MAX_WARNINGS)\n");
      return;
    }
  }
  in_log = 1;
  char buf[512];
  size_t n = 0;
  const char* prefix = level == GRAPE_LOG_ERROR  ? "grape: error: "
                       : level == GRAPE_LOG_WARN ? "grape: warning: "
                                                 : "grape: ";
  n = strlen(prefix);
  memcpy(buf, prefix, n);
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (tid != getpid())
    n += (size_t)snprintf(buf + n, sizeof(buf) - n, "thread 0x%lx: ", (unsigned long)tid);
  int k = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  if (k > 0)
    n += (size_t)k < sizeof(buf) - n - 1 ? (size_t)k : sizeof(buf) - n - 2;
  buf[n++] = '\n';
  buf[n] = '\0';
  grape__output(buf);
  in_log = 0;
}

void grape__log_emit(int level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_vemit(level, fmt, ap);
  va_end(ap);
}

/* What options.c tells: a bad value, the values at start; at this log's level. */
__attribute__((format(printf, 2, 3))) static void hear_option(int level, const char* fmt, ...) {
  if (grape__log_level() < level)
    return;
  va_list ap;
  va_start(ap, fmt);
  log_vemit(level, fmt, ap);
  va_end(ap);
}

/* The log listens to the options from load on (before any option is read,
 * unless another library's constructor reads one first: that is said now). */
__attribute__((constructor)) static void listen_to_options(void) {
  grape__options_listen(hear_option);
}

void grape__log_open(void) {
  (void)open_log_fd();
}

void grape__log_reset(void) {
  grape__log_level_cache = -1;
  warnings = 0;
  /* A child keeps the parent's log file descriptor open: same file, same O_APPEND. */
}
