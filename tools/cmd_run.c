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
#include "grape/report.h"
#include "interpose/options.h"
#include "json.h"
#include "locate.h"
#include "util/grow.h"
#include "util/pattern.h"

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
  for (int i = 0; i < grape_option_count; i++) {
    char env[64];
    grape__option_env((grape_option_t)i, env, sizeof(env));
    fprintf(to, "  %-20s default %s\n      %s\n", env, grape__option_default((grape_option_t)i),
            grape__option_doc((grape_option_t)i));
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

/* ---- The reports ----
 * Every process that loaded the shim writes a report (a launcher such as
 * `timeout`, `torchrun` or a Python parent runs the CUDA work in a child), so
 * the summary adds them all up and names the processes that did CUDA work.
 * Reports are read through grape/report.h's member names. */

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 0, len = 0;
  char* buf = NULL;
  for (;;) {
    char* nb = grape__grow(buf, &cap, len + 2, 1, 4096);   /* a byte to read, and the NUL */
    if (nb == NULL) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0)
      break;
  }
  fclose(f);
  if (buf != NULL)
    buf[len] = '\0';
  return buf;
}

typedef struct reports_s {
  json_t** v;          /* parsed reports */
  size_t n, cap;
  int forked_silent;   /* fork children that left no report (_exit) */
  char last[PATH_MAX]; /* path of the report added last */
} reports_t;

static void reports_add(reports_t* r, const char* path) {
  char* text = read_file(path);
  if (text == NULL)
    return;
  char err[256];
  json_t* j = json_parse(text, err, sizeof(err));
  free(text);
  if (j == NULL) {
    fprintf(stderr, "grape: ignoring a damaged report %s: %s\n", path, err);
    return;
  }
  json_t** v = grape__grow(r->v, &r->cap, r->n + 1, sizeof(*r->v), 8);
  if (v == NULL) {
    json_free(j);
    return;
  }
  r->v = v;
  r->v[r->n++] = j;
  snprintf(r->last, sizeof(r->last), "%s", path);
}

/* Every report the command's processes wrote under pattern (a path whose
 * file name holds %p: one report per process). A fork child's mark (its
 * report's name + ".forked") without its report counts as a silent child. */
static void reports_collect(reports_t* r, const char* pattern) {
  char folder[PATH_MAX];
  snprintf(folder, sizeof(folder), "%s", pattern);
  char* slash = strrchr(folder, '/');
  const char* base = slash ? pattern + (slash - folder) + 1 : pattern;
  if (slash == folder)
    folder[1] = '\0';   /* a report in / */
  else if (slash != NULL)
    *slash = '\0';
  else
    snprintf(folder, sizeof(folder), ".");
  DIR* d = opendir(folder);
  if (d == NULL)
    return;
  struct dirent* e;
  char path[PATH_MAX], name[sizeof(e->d_name)];
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    int mark = len > 7 && strcmp(e->d_name + len - 7, ".forked") == 0;
    snprintf(name, sizeof(name), "%.*s", (int)(len - (mark ? 7 : 0)), e->d_name);
    if (!grape__pattern_match(base, name) || grape__path_join(path, sizeof(path), folder, name))
      continue;
    if (!mark)
      reports_add(r, path);
    else
      r->forked_silent += !grape__path_exists(path);
  }
  closedir(d);
}

static void reports_free(reports_t* r) {
  for (size_t i = 0; i < r->n; i++)
    json_free(r->v[i]);
  free(r->v);
}

static double num(const json_t* o, const char* key) {
  return json_num(json_get(o, key), 0);
}

#define COUNTER_ENUM(name, doc) K_##name,
enum { GRAPE_REPORT_COUNTERS(COUNTER_ENUM) K_COUNT };
#define COUNTER_NAME(name, doc) #name,
static const char* const counter_names[K_COUNT] = {GRAPE_REPORT_COUNTERS(COUNTER_NAME)};
#define ROUTE_NAME(r) #r,
static const char* const route_names[] = {GRAPE_REPORT_ROUTES(ROUTE_NAME)};
#define NROUTES (sizeof(route_names) / sizeof(route_names[0]))

static int did_cuda(const json_t* rep) {
  return num(rep, "launches") > 0 || num(rep, "launches_captured") > 0;
}

/* The top paths and predicted times of one report. */
static void summarise_paths(const json_t* rep) {
  const json_t* top = json_get(rep, "top_paths");
  int shown = 0;
  for (const json_t* t = top ? top->child : NULL; t && shown < 8; t = t->next, shown++) {
    if (shown == 0)
      fprintf(stderr, "grape: most frequent paths (fingerprint, times seen, ops):\n");
    const char* fp = json_str(json_get(t, "fingerprint"));
    fprintf(stderr, "grape:   %s %6.0fx  %.0f ops:", fp ? fp : "?", num(t, "count"), num(t, "ops"));
    const json_t* k = json_get(t, "kernels");
    int width = 0;
    for (const json_t* e = k ? k->child : NULL; e && width < 90; e = e->next) {
      const char* name = json_str(e);
      if (name != NULL)
        width += fprintf(stderr, " %s", name);
    }
    if (width == 0)
      fputs(" -", stderr);
    const char* way = json_str(json_get(t, "ran_as"));
    if (way != NULL) {
      const char* why = json_str(json_get(t, "why"));
      fprintf(stderr, "  [%s%s%s; its graph key: %.0f hits]", way, why ? ": " : "", why ? why : "",
              num(t, "graph_hits"));
    }
    fputc('\n', stderr);
  }
  const json_t* pred = json_get(rep, "predicted");
  if (pred != NULL && pred->kind == JSON_NULL) {
    fprintf(stderr, "grape: predicted: none (unknown GPU)\n");
  } else if (pred != NULL && pred->kind == JSON_OBJ) {
    const char* gpu = json_str(json_get(pred, "gpu"));
    double e = num(pred, "total_eager_ms"), g = num(pred, "total_graph_ms");
    fprintf(stderr, "grape: predicted on %s: %.3f ms eager, %.3f ms as graphs (%.1f%% less)",
            gpu ? gpu : "?", e, g, e > 0 ? 100 * (e - g) / e : 0.0);
    const json_t* hi = json_get(pred, "total_eager_hi_ms");
    if (hi != NULL && hi->kind == JSON_NUM)
      fprintf(stderr, "; %.0f%% intervals: eager %.3f-%.3f ms, graphs %.3f-%.3f ms",
              100 * num(pred, "level"), num(pred, "total_eager_lo_ms"), json_num(hi, 0),
              num(pred, "total_graph_lo_ms"), num(pred, "total_graph_hi_ms"));
    fputc('\n', stderr);
  }
}

/* The summary of every report of the run (stderr: the command's stdout stays
 * its own). on_sim: the command ran on the simulated device. */
static void summarise(const reports_t* r, const char* where, int on_sim) {
  double tot[K_COUNT] = {0}, routes[NROUTES] = {0};
  const json_t* busiest = NULL;
  size_t cuda_procs = 0;
  for (size_t i = 0; i < r->n; i++) {
    const json_t* rep = r->v[i];
    for (int k = 0; k < K_COUNT; k++)
      tot[k] += num(rep, counter_names[k]);
    const json_t* br = json_get(rep, "launches_by_route");
    for (size_t k = 0; k < NROUTES; k++)
      routes[k] += num(br, route_names[k]);
    cuda_procs += did_cuda(rep);
    if (busiest == NULL || num(rep, "launches") > num(busiest, "launches"))
      busiest = rep;
  }
  const char* mode = busiest ? json_str(json_get(busiest, "mode")) : NULL;
  fprintf(stderr, "grape: mode %s: %.0f kernel launches (", mode ? mode : "?", tot[K_launches]);
  for (size_t k = 0; k < NROUTES; k++)
    fprintf(stderr, "%s%s %.0f", k ? ", " : "", route_names[k], routes[k]);
  fprintf(stderr, ")");
  if (r->n > 1)
    fprintf(stderr, " in %zu processes", r->n);
  fputc('\n', stderr);
  /* One line per process that did CUDA work, when a launcher ran it. */
  if (r->n > 1) {
    for (size_t i = 0; i < r->n; i++) {
      const json_t* rep = r->v[i];
      if (!did_cuda(rep))
        continue;
      const char* cmd = json_str(json_get(rep, "command"));
      const json_t* rank = json_get(rep, "rank");
      fprintf(stderr, "grape:   pid %.0f", num(rep, "pid"));
      if (rank != NULL && rank->kind == JSON_NUM)
        fprintf(stderr, " (rank %.0f)", rank->num);
      fprintf(stderr, " %s: %.0f launches, %.0f regions", cmd ? cmd : "?", num(rep, "launches"),
              num(rep, "regions"));
      if (num(rep, "graph_hits") > 0)
        fprintf(stderr, ", %.0f graph hits", num(rep, "graph_hits"));
      fputc('\n', stderr);
    }
    if (r->n > cuda_procs)
      fprintf(stderr, "grape:   %zu other process%s did no CUDA work\n", r->n - cuda_procs,
              r->n - cuda_procs == 1 ? "" : "es");
  }
  if (r->forked_silent)
    fprintf(stderr, "grape: %d forked process%s exited without a report (through _exit, or by exec "
                    "of a program the shim is not in): CUDA work there is not counted\n",
            r->forked_silent, r->forked_silent == 1 ? "" : "es");
  fprintf(stderr, "grape: %.0f regions, %.0f distinct paths, %.0f ops recorded\n", tot[K_regions],
          tot[K_paths], tot[K_ops]);
  if (mode != NULL && strcmp(mode, "graph") == 0)
    fprintf(stderr, "grape: graph replay: %.0f hits, %.0f eager regions of built keys, %.0f graphs "
                    "built, %.0f node updates; %.0f driver submissions for %.0f ops\n",
            tot[K_graph_hits], tot[K_graph_misses], tot[K_graphs_built], tot[K_node_updates],
            tot[K_submission_calls], tot[K_ops]);
  if (busiest != NULL && did_cuda(busiest)) {
    if (cuda_procs > 1)
      fprintf(stderr, "grape: paths of pid %.0f, the busiest:\n", num(busiest, "pid"));
    summarise_paths(busiest);
  }
  if (on_sim && tot[K_launches] == 0 && tot[K_launches_captured] == 0)
    fprintf(stderr, "grape: the command ran no kernels on the simulated device, which runs only "
                    "programs built against it (nvcc -cudart shared, with CPU bodies for their "
                    "kernels: sim/README.md). Kernels built for GPUs alone, such as PyTorch's, "
                    "need a real GPU, and so does a program that loads NVIDIA's own CUDA runtime "
                    "(it finds no device here)\n");
  if (where != NULL)
    fprintf(stderr, "grape: report: %s\n", where);
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
  if (mode && grape__option_check(grape_option_mode, mode) != 0) {
    int len;
    const char* words = grape__option_accepted(grape_option_mode, &len);
    fprintf(stderr, "grape run: --mode must be one of %.*s\n", len, words);
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
  if (strcmp(device, "auto") == 0 && !grape__real_device_present())
    use_sim = 1;
  else if (strcmp(device, "cuda") == 0 && !grape__real_device_present())
    fprintf(stderr, "grape: warning: --device cuda, but no CUDA driver loaded or reported a device "
                    "(libcuda.so.1, cuInit, cuDeviceGetCount); the command will not find a GPU\n");
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

  reports_t reps = {0};
  char where[PATH_MAX];
  if (own_dir) {
    reports_collect(&reps, report_pattern);
    remove_dir(tmpdir);
  } else if (grape__pattern_per_process(report)) {
    reports_collect(&reps, report);
    if (reps.n == 1)
      snprintf(where, sizeof(where), "%s", reps.last);
    else
      snprintf(where, sizeof(where), "%s (one per process)", report);
  } else if (grape__pattern_expand(report, 0, NULL, where, sizeof(where)) == 0) {
    reports_add(&reps, where);   /* the file the shim wrote ("%%" is a '%') */
  }
  if (reps.n > 0)
    summarise(&reps, own_dir ? NULL : where, use_sim);
  else if (rc != 127)
    fprintf(stderr, "grape: no report from the command (it may have exited through _exit or exec'd "
                    "a static binary)\n");
  reports_free(&reps);
  return rc;
}
