/* grape run: runs a command with libgrape.so preloaded and summarises what the
 * shim saw.
 *
 * DESIGN: grape itself never loads the shim or initialises CUDA in its own
 * process, except to probe for a device (--device auto), which happens in a
 * forked child so that a broken driver cannot take grape down. The command gets
 * LD_PRELOAD (libgrape.so prepended to any existing list, after sanitizer
 * runtimes, which must stay first), the GRAPE_* options
 * given on the command line, and GRAPE_REPORT pointing at a private directory
 * (or the --report path). grape forwards the usual termination signals to the
 * command, returns its exit status (128 + signal when killed), then prints a
 * short summary of the report to stderr: the command's stdout stays exactly
 * what it would be without grape. */
#include <errno.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "locate.h"

typedef struct option_row_s {
  const char* name;
  const char* dflt;
  const char* doc;
} option_row_t;

#define STR_ENUM(d) d
#define STR_STR(d) (d)
#define STR_LONG(d) #d
#define STR_BOOL(d) #d
#define STR_SIZE(d) #d
static const option_row_t option_rows[] = {
#define GRAPE_OPTION(name, kind, dflt, doc) {#name, STR_##kind(dflt), doc},
#include "interpose/options.def"
#undef GRAPE_OPTION
};

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape run [--mode off|observe|graph] [--report FILE] [--log LEVEL]\n"
          "                 [--device auto|cuda|sim] [--predict-gpu NAME] -- COMMAND [ARGS...]\n\n"
          "Runs COMMAND with libgrape.so preloaded, then prints a summary of what the\n"
          "shim saw (to stderr). Returns COMMAND's exit status.\n\n"
          "  --mode M      GRAPE_MODE for the command\n"
          "  --report FILE keep the JSON exit report at FILE (%%p = pid of the process)\n"
          "  --log LEVEL   GRAPE_LOG for the command\n"
          "  --predict-gpu NAME  GRAPE_PREDICT_GPU: predicted path times on GPU NAME\n"
          "                in the report and the summary ('grape gpus' lists them)\n"
          "  --device D    auto (default): the real driver when it loads and reports a\n"
          "                device, else the simulated device; cuda; sim\n\n"
          "Environment options read by libgrape.so (see docs/configuration.md):\n");
  for (size_t i = 0; i < sizeof(option_rows) / sizeof(option_rows[0]); i++) {
    char env[64] = "GRAPE_";
    size_t n = 6;
    for (const char* p = option_rows[i].name; *p && n + 1 < sizeof(env); p++)
      env[n++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    env[n] = '\0';
    fprintf(to, "  %-20s default %s\n      %s\n", env,
            option_rows[i].dflt ? option_rows[i].dflt : "(unset)", option_rows[i].doc);
  }
  fprintf(to, "\nGRAPE_LIB and GRAPE_SIM_DIR override where grape finds libgrape.so and the\n"
              "simulated device's libraries.\n");
}

static int prepend_env(const char* name, const char* value) {
  const char* old = getenv(name);
  if (old == NULL || *old == '\0')
    return setenv(name, value, 1);
  size_t n = strlen(value) + strlen(old) + 2;
  char* s = malloc(n);
  if (s == NULL)
    return -1;
  snprintf(s, n, "%s:%s", value, old);
  int rc = setenv(name, s, 1);
  free(s);
  return rc;
}

/* LD_PRELOAD with lib inserted first, but after any leading sanitizer
 * runtimes: ASan and TSan insist on coming first in the library list. */
static int preload_env(const char* lib) {
  const char* old = getenv("LD_PRELOAD");
  if (old == NULL || *old == '\0')
    return setenv("LD_PRELOAD", lib, 1);
  size_t keep = 0;   /* length of the leading sanitizer entries */
  for (const char* p = old; *p;) {
    const char* end = p + strcspn(p, ": ");
    const char* base = p;
    for (const char* q = p; q < end; q++)
      if (*q == '/')
        base = q + 1;
    if (strncmp(base, "libasan", 7) && strncmp(base, "libtsan", 7) && strncmp(base, "libubsan", 8) &&
        strncmp(base, "libclang_rt", 11))
      break;
    keep = (size_t)(end - old);
    p = *end ? end + 1 : end;
  }
  size_t n = strlen(old) + strlen(lib) + 2;
  char* s = malloc(n);
  if (s == NULL)
    return -1;
  if (keep == 0)
    snprintf(s, n, "%s:%s", lib, old);
  else if (old[keep] == '\0')
    snprintf(s, n, "%s:%s", old, lib);
  else
    snprintf(s, n, "%.*s:%s:%s", (int)keep, old, lib, old + keep + 1);
  int rc = setenv("LD_PRELOAD", s, 1);
  free(s);
  return rc;
}

/* ---- The report ---- */

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 4096, len = 0;
  char* buf = malloc(cap);
  while (buf != NULL) {
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0)
      break;
    if (len + 1 == cap) {
      char* nb = realloc(buf, cap * 2);
      if (nb == NULL) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf != NULL)
    buf[len] = '\0';
  return buf;
}

/* The number after "key": in the flat JSON the shim writes, or -1. */
static long long json_num(const char* json, const char* key) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char* p = strstr(json, pat);
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void summarise(const char* json, const char* where) {
  const char* m = strstr(json, "\"mode\":\"");
  char mode[16] = "?";
  if (m != NULL)
    sscanf(m + 8, "%15[a-z]", mode);
  static const char* const routes[] = {"runtime", "driver", "dlsym", "getprocaddress", "entrypoint"};
  const char* byroute = strstr(json, "\"launches_by_route\":");
  fprintf(stderr, "grape: mode %s: %lld kernel launches", mode, json_num(json, "launches"));
  if (byroute != NULL) {
    fprintf(stderr, " (");
    for (int i = 0; i < 5; i++)
      fprintf(stderr, "%s%s %lld", i ? ", " : "", routes[i], json_num(byroute, routes[i]));
    fprintf(stderr, ")");
  }
  fprintf(stderr, "\ngrape: %lld regions, %lld distinct paths, %lld ops recorded\n",
          json_num(json, "regions"), json_num(json, "paths"), json_num(json, "ops"));
  const char* p = strstr(json, "\"top_paths\":[");
  int shown = 0;
  while (p != NULL && (p = strstr(p, "{\"fingerprint\":\"")) != NULL && shown < 8) {
    char fp[17] = "";
    sscanf(p + 16, "%16[0-9a-f]", fp);
    long long ops = json_num(p, "ops"), count = json_num(p, "count");
    if (shown++ == 0)
      fprintf(stderr, "grape: most frequent paths (fingerprint, times seen, ops):\n");
    fprintf(stderr, "grape:   %s %6lldx  %lld ops:", fp, count, ops);
    /* The kernel names: "kernels":["a","b",...] up to the closing bracket. */
    const char* k = strstr(p, "\"kernels\":[");
    const char* end = k ? strchr(k, ']') : NULL;
    const char* next = strstr(p + 16, "{\"fingerprint\"");
    if (k != NULL && end != NULL && (next == NULL || k < next)) {
      int width = 0;
      fputc(' ', stderr);
      for (const char* q = k + 11; q < end && width < 90; q++)
        if (*q != '"') {
          fputc(*q == ',' ? ' ' : *q, stderr);
          width++;
        }
      if (width == 0)
        fputs(" -", stderr);
    }
    fputc('\n', stderr);
    p += 16;
  }
  const char* pred = strstr(json, "\"predicted\":");
  if (pred != NULL && strncmp(pred + 12, "null", 4) == 0) {
    fprintf(stderr, "grape: predicted: none (unknown GPU)\n");
  } else if (pred != NULL) {
    char gpu[128] = "?";
    const char* g = strstr(pred, "\"gpu\":\"");
    if (g != NULL)
      sscanf(g + 7, "%127[^\"]", gpu);
    const char* te = strstr(pred, "\"total_eager_ms\":");
    const char* tg = strstr(pred, "\"total_graph_ms\":");
    double e = te ? strtod(te + 17, NULL) : 0, gr = tg ? strtod(tg + 17, NULL) : 0;
    fprintf(stderr, "grape: predicted on %s: %.3f ms eager, %.3f ms as graphs (%.1f%% less)\n",
            gpu, e, gr, e > 0 ? 100 * (e - gr) / e : 0.0);
  }
  if (where != NULL)
    fprintf(stderr, "grape: report: %s\n", where);
}

/* The report of process pid in dir, else the one with the most launches. */
static char* pick_report(const char* dir, pid_t pid) {
  char path[PATH_MAX], name[64];
  snprintf(name, sizeof(name), "report.%ld.json", (long)pid);
  char* json = grape__path_join(path, sizeof(path), dir, name) == 0 ? read_file(path) : NULL;
  if (json != NULL)
    return json;
  DIR* d = opendir(dir);
  if (d == NULL)
    return NULL;
  char* best = NULL;
  long long best_n = -1;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "report.", 7) != 0 || grape__path_join(path, sizeof(path), dir, e->d_name))
      continue;
    char* j = read_file(path);
    if (j == NULL)
      continue;
    long long n = json_num(j, "launches");
    if (n > best_n) {
      free(best);
      best = j;
      best_n = n;
    } else {
      free(j);
    }
  }
  closedir(d);
  return best;
}

static void remove_dir(const char* dir) {
  DIR* d = opendir(dir);
  if (d != NULL) {
    struct dirent* e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.' || grape__path_join(path, sizeof(path), dir, e->d_name))
        continue;
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* ---- Running ---- */

static volatile pid_t child_pid;

static void forward(int sig) {
  if (child_pid > 0)
    kill(child_pid, sig);
}

int cmd_run(int argc, char** argv) {
  const char* mode = NULL;
  const char* report = NULL;
  const char* log = NULL;
  const char* predict_gpu = NULL;
  const char* device = "auto";
  int i = 1;
  for (; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    const char** dst = strcmp(a, "--mode") == 0     ? &mode
                       : strcmp(a, "--report") == 0 ? &report
                       : strcmp(a, "--log") == 0    ? &log
                       : strcmp(a, "--device") == 0 ? &device
                       : strcmp(a, "--predict-gpu") == 0 ? &predict_gpu
                                                    : NULL;
    if (dst != NULL) {
      if (i + 1 >= argc) {
        fprintf(stderr, "grape run: %s needs a value\n", a);
        return 2;
      }
      *dst = argv[++i];
      continue;
    }
    if (a[0] == '-') {
      fprintf(stderr, "grape run: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
    break;   /* the command starts here (the "--" is optional) */
  }
  if (i >= argc) {
    usage(stderr);
    return 2;
  }
  if (mode && strcmp(mode, "off") && strcmp(mode, "observe") && strcmp(mode, "graph")) {
    fprintf(stderr, "grape run: --mode must be off, observe or graph\n");
    return 2;
  }
  if (strcmp(device, "auto") && strcmp(device, "cuda") && strcmp(device, "sim")) {
    fprintf(stderr, "grape run: --device must be auto, cuda or sim\n");
    return 2;
  }

  char lib[PATH_MAX];
  if (grape__find_libgrape(lib, sizeof(lib))) {
    fprintf(stderr, "grape run: error: libgrape.so not found (set GRAPE_LIB)\n");
    return 1;
  }
  int use_sim = strcmp(device, "sim") == 0;
  if (strcmp(device, "auto") == 0 && !grape__real_device_present()) {
    use_sim = 1;
  }
  if (use_sim) {
    char simdir[PATH_MAX];
    if (grape__find_simdir(simdir, sizeof(simdir))) {
      fprintf(stderr, "grape run: error: the simulated device's libraries were not found "
                      "(set GRAPE_SIM_DIR)\n");
      return 1;
    }
    if (strcmp(device, "auto") == 0)
      fprintf(stderr, "grape: no CUDA device found; running on the simulated device (%s)\n", simdir);
    prepend_env("LD_LIBRARY_PATH", simdir);
  }

  char tmpdir[] = "/tmp/grape-run.XXXXXX";
  int own_dir = report == NULL;
  char report_pattern[PATH_MAX];
  if (own_dir) {
    if (mkdtemp(tmpdir) == NULL) {
      fprintf(stderr, "grape run: error: mkdtemp: %s\n", strerror(errno));
      return 1;
    }
    snprintf(report_pattern, sizeof(report_pattern), "%s/report.%%p.json", tmpdir);
  } else {
    snprintf(report_pattern, sizeof(report_pattern), "%s", report);
  }
  preload_env(lib);
  setenv("GRAPE_REPORT", report_pattern, 1);
  if (mode)
    setenv("GRAPE_MODE", mode, 1);
  if (log)
    setenv("GRAPE_LOG", log, 1);
  if (predict_gpu)
    setenv("GRAPE_PREDICT_GPU", predict_gpu, 1);

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "grape run: error: fork: %s\n", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    execvp(argv[i], argv + i);
    fprintf(stderr, "grape run: error: cannot run %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++)
    sigaction(sigs[k], &sa, NULL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) {
      st = 0;
      break;
    }
  }
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;

  char* json = NULL;
  char where[PATH_MAX];
  if (own_dir) {
    json = pick_report(tmpdir, pid);
    remove_dir(tmpdir);
  } else {
    /* Expand %p with the command's pid. */
    size_t n = 0;
    for (const char* p = report; *p && n + 24 < sizeof(where); p++) {
      if (p[0] == '%' && p[1] == 'p') {
        n += (size_t)snprintf(where + n, sizeof(where) - n, "%ld", (long)pid);
        p++;
      } else {
        where[n++] = *p;
      }
    }
    where[n] = '\0';
    json = read_file(where);
  }
  if (json != NULL) {
    summarise(json, own_dir ? NULL : where);
    free(json);
  } else if (rc != 127) {
    fprintf(stderr, "grape: no report from the command (it may have exited through _exit or exec'd "
                    "a static binary)\n");
  }
  return rc;
}
