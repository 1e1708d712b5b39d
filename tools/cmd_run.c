/* grape run: runs a command with libgrape.so preloaded and summarises what the
 * shim saw.
 *
 * DESIGN: grape itself never loads the shim or initialises CUDA in its own
 * process, except to probe for a device (--device auto), which happens in a
 * forked child so that a broken driver cannot take grape down. The command gets
 * LD_PRELOAD (libgrape.so prepended to any existing list, after sanitizer
 * runtimes, which must stay first), the GRAPE_* options given on the command
 * line (output names made absolute here, and checked before anything runs),
 * and GRAPE_RUN_DIR, a private folder where every process of the command
 * leaves its own copy of its report next to the user's (GRAPE_REPORT, kept as
 * the user set it unless --report replaces it, which grape says), and on the
 * sim its SIMCU_REPORT. The summary therefore covers exactly this run's
 * processes. grape passes termination signals on to the command (not a second
 * time when the terminal sent them to both), returns its exit status (128 +
 * signal when killed), then prints the summary (tools/summary.c) to stderr:
 * the command's stdout stays exactly what it would be without grape. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "grape/predict.h"
#include "interpose/options.h"
#include "interpose/outfile.h"
#include "util/json.h"
#include "locate.h"
#include "stats.h"
#include "summary.h"
#include "util/mkdirs.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape run [OPTIONS] [--] COMMAND [ARGS...]\n\n"
          "Runs COMMAND with libgrape.so preloaded, then prints a summary of what the\n"
          "shim saw in every process of COMMAND (to stderr). Returns COMMAND's exit status.\n\n"
          "  --mode M            GRAPE_MODE for the command\n"
          "  --report FILE       keep each process's JSON exit report (GRAPE_REPORT; %%p = pid,\n"
          "                      %%r = rank, %%h = host, %%q{VAR} = $VAR); relative to here\n"
          "  --trace FILE        GRAPE_TRACE: a trace per process, same escapes\n"
          "  --force-overwrite   GRAPE_OVERWRITE=yes: replace existing reports and traces\n"
          "                      (without it they go to numbered names: x.1.json)\n"
          "  --log LEVEL         GRAPE_LOG for the command\n"
          "  --predict-gpu NAME  GRAPE_PREDICT_GPU: predicted path and kernel times on GPU\n"
          "                      NAME in the report and the summary ('grape gpus' lists them)\n"
          "  --device D          auto (default): the real driver when it loads and reports a\n"
          "                      device, else the simulated device; cuda; sim\n"
          "  --sim-kernels K     on the simulated device, kernels without a CPU body (a\n"
          "                      framework's): fail (bodies, the default) or run timed, not\n"
          "                      computed (timed: SIMCU_KERNELS=timed, sim/README.md)\n"
          "  --kernels N         rows of the kernel table (default 10; 0 = none, -1 = all)\n"
          "  --sort KEY          order of the kernel table: time (default), calls, name, predicted\n"
          "  --kernels-csv FILE  write the whole kernel table as CSV\n"
          "  --stats             add the tables of 'grape report': CUDA API calls with their\n"
          "                      host time (every call timed: GRAPE_API_TIMES=every), memory\n"
          "                      operations, paths, NVTX ranges\n"
          "  --capture-range R   GRAPE_CAPTURE: cudaProfilerApi records the timeline and the\n"
          "                      statistics only between cudaProfilerStart and\n"
          "                      cudaProfilerStop (as nsys --capture-range); none (default)\n"
          "  --compare           run COMMAND twice: first with GRAPE_MODE=off (its output\n"
          "                      discarded), then as asked; print graph mode's effect on\n"
          "                      the run's simulated time (on the sim) or wall time\n\n"
          "Options take their value as '--opt value' or '--opt=value'. Environment options\n"
          "read by libgrape.so (see docs/configuration.md):\n");
  for (int i = 0; i < grape_option_count; i++) {
    char env[64], range[64] = "";
    long lo, hi;
    grape__option_env((grape_option_t)i, env, sizeof(env));
    if (grape__option_range((grape_option_t)i, &lo, &hi) == 0)
      snprintf(range, sizeof(range), ", range %ld..%ld", lo, hi);
    fprintf(to, "  %-20s default %s%s\n      %s\n", env, grape__option_default((grape_option_t)i),
            range, grape__option_doc((grape_option_t)i));
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

/* The sim's runtime and cuBLAS stand-ins go in LD_PRELOAD too: a library
 * linked with DT_RPATH (PyTorch's libtorch_cuda.so names NVIDIA's runtime
 * and cuBLAS in its wheel) finds its own copies before LD_LIBRARY_PATH, and
 * NVIDIA's runtime finds no device on the sim. A preloaded object of the same
 * soname satisfies the dependency. (Called before libgrape.so is put first.) */
static void preload_sim_libs(const char* simdir) {
  static const char* const libs[] = {"cublas/libcublasLt.so.13", "cublas/libcublas.so.13",
                                     "libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13"};
  for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
    char path[PATH_MAX];
    if (grape__path_join(path, sizeof(path), simdir, libs[i]) == 0 && grape__path_exists(path))
      preload_env(path);
  }
}

/* ---- Outputs ---- */

/* A path the user gave, made absolute against grape run's own folder (the
 * command may change its folder before it writes). */
static int absolute(const char* path, char* out, size_t cap) {
  char cwd[PATH_MAX];
  if (path[0] == '/' || strcmp(path, "stderr") == 0 || getcwd(cwd, sizeof(cwd)) == NULL)
    return snprintf(out, cap, "%s", path) < (int)cap ? 0 : -1;
  return grape__path_join(out, cap, cwd, path);
}

/* The output option o as the user set it, on the command line (flag) or in
 * the environment; made absolute and put in the environment. Says when the
 * command line replaces the environment's value. @return 0, or 2 (usage). */
static int output_env(grape_option_t o, const char* flag, const char* value) {
  char env[64], abs[PATH_MAX];
  grape__option_env(o, env, sizeof(env));
  const char* user = getenv(env);
  if (value == NULL)
    value = user;
  if (value == NULL || *value == '\0')
    return 0;
  if (absolute(value, abs, sizeof(abs)) != 0) {
    fprintf(stderr, "grape run: %s: the name is too long\n", value);
    return 2;
  }
  if (flag != NULL && user != NULL && *user && strcmp(user, value) != 0)
    fprintf(stderr, "grape: %s %s replaces %s=%s for this run\n", flag, value, env, user);
  /* Checked now, not when the command exits: a name given to grape run that
   * cannot be written is refused before anything runs (one set in the
   * environment is the shim's to warn about, at the start of each process).
   * The name is expanded as grape run's own; escapes in a folder name may
   * differ per process. */
  char path[PATH_MAX], why[PATH_MAX + 128];
  const char* slash = strrchr(abs, '/');
  int folder_escaped = slash != NULL && memchr(abs, '%', (size_t)(slash - abs)) != NULL;
  /* Its folders are made here when the name fixes them (run/r.%p.json); a
   * folder with escapes (run/rank%r/) differs per process, and each
   * process's shim makes its own and warns if it cannot. */
  if (flag != NULL && !folder_escaped && strcmp(abs, "stderr") != 0 &&
      grape__option_path(abs, path, sizeof(path)) == 0 &&
      (grape__mkdirs_for(path), grape__outfile_writable(path, why, sizeof(why)) != 0)) {
    fprintf(stderr, "grape run: error: %s %s: cannot write %s (%s)\n", flag ? flag : env, value, path,
            why);
    return 2;
  }
  setenv(env, abs, 1);
  return 0;
}

/* Every report the command's processes left in the run folder (grape run's
 * own copies, one per process, naming the user's file), their fork marks and
 * the simulated device's reports. */
static void collect(summary_t* s, const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent* e;
  char path[PATH_MAX];
  while ((e = readdir(d)) != NULL) {
    const char* n = e->d_name;
    size_t len = strlen(n);
    if (grape__path_join(path, sizeof(path), dir, n) != 0)
      continue;
    if (len > 7 && strcmp(n + len - 7, ".forked") == 0) {
      path[strlen(path) - 7] = '\0';
      s->forked_silent += !grape__path_exists(path);
    } else if (len > 5 && strcmp(n + len - 5, ".json") == 0 &&
               (strncmp(n, "report.", 7) == 0 || strncmp(n, "sim.", 4) == 0)) {
      summary_add_file(s, path);
    }
  }
  closedir(d);
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

/* Where the user's reports and traces went (the members each process's copy
 * names), one line each; a long list is cut. */
static void print_files(const summary_t* s, const char* member, const char* what) {
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) {
    const char* f = grape__json_str(grape__json_get(s->rep[i], member));
    if (f == NULL || strcmp(f, "stderr") == 0)
      continue;
    if (n < 8)
      fprintf(stderr, "grape: %s: %s\n", what, f);
    n++;
  }
  if (n > 8)
    fprintf(stderr, "grape: ... and %zu more %ss\n", n - 8, what);
}

/* ---- Running ---- */

static volatile pid_t child_pid;
static volatile sig_atomic_t passed_on;   /* the last signal passed on to the command */

/* Passes a signal sent to grape run on to the command. A signal the terminal
 * generated (Ctrl-C: si_code SI_KERNEL) went to the command's process group
 * as well, and is not sent a second time. */
static void forward(int sig, siginfo_t* info, void* ctx) {
  (void)ctx;
  passed_on = sig;
  if (child_pid > 0 && (info == NULL || info->si_code != SI_KERNEL))
    kill(child_pid, sig);
}

/* Runs cmd with the current environment, passing signals on, and waits for
 * it: its wait status into *st, its wall time into *ms. quiet: its stdout
 * and stderr go to /dev/null. @return 0, or -1 when it could not start. */
static int spawn(char** cmd, int quiet, int* st, double* ms) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "grape run: error: fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    if (quiet) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
      }
    }
    execvp(cmd[0], cmd);
    fprintf(stderr, "grape run: error: cannot run %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++)
    sigaction(sigs[k], &sa, NULL);
  *st = 0;
  while (waitpid(pid, st, 0) < 0) {
    if (errno != EINTR) {
      *st = 0;
      break;
    }
  }
  child_pid = 0;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  return 0;
}

enum { OPT_MODE = 256, OPT_REPORT, OPT_TRACE, OPT_LOG, OPT_DEVICE, OPT_PREDICT, OPT_FORCE,
       OPT_KERNELS, OPT_SORT, OPT_CSV, OPT_COMPARE, OPT_SIM_KERNELS, OPT_STATS, OPT_CAPTURE };

int cmd_run(int argc, char** argv) {
  const char* mode = NULL;
  const char* report = NULL;
  const char* trace = NULL;
  const char* log = NULL;
  const char* predict_gpu = NULL;
  const char* device = "auto";
  const char* csv = NULL;
  const char* sim_kernels = "bodies";
  const char* capture = NULL;
  int force = 0, compare = 0, stats = 0;
  summary_opts_t so = {stderr, "grape: ", 0, 10, SORT_TIME, 0};
  static const struct option longs[] = {
      {"mode", required_argument, NULL, OPT_MODE},
      {"report", required_argument, NULL, OPT_REPORT},
      {"trace", required_argument, NULL, OPT_TRACE},
      {"log", required_argument, NULL, OPT_LOG},
      {"device", required_argument, NULL, OPT_DEVICE},
      {"predict-gpu", required_argument, NULL, OPT_PREDICT},
      {"force-overwrite", no_argument, NULL, OPT_FORCE},
      {"kernels", required_argument, NULL, OPT_KERNELS},
      {"sort", required_argument, NULL, OPT_SORT},
      {"kernels-csv", required_argument, NULL, OPT_CSV},
      {"compare", no_argument, NULL, OPT_COMPARE},
      {"sim-kernels", required_argument, NULL, OPT_SIM_KERNELS},
      {"stats", no_argument, NULL, OPT_STATS},
      {"capture-range", required_argument, NULL, OPT_CAPTURE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  optind = 0;   /* "+": stop at the command, whose own options are its own */
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "+h", longs, NULL)) != -1;) {
    char* end;
    switch (c) {
    case 'h': usage(stdout); return 0;
    case OPT_MODE: mode = optarg; break;
    case OPT_REPORT: report = optarg; break;
    case OPT_TRACE: trace = optarg; break;
    case OPT_LOG: log = optarg; break;
    case OPT_DEVICE: device = optarg; break;
    case OPT_PREDICT: predict_gpu = optarg; break;
    case OPT_FORCE: force = 1; break;
    case OPT_COMPARE: compare = 1; break;
    case OPT_STATS: stats = 1; break;
    case OPT_CAPTURE: capture = optarg; break;
    case OPT_CSV: csv = optarg; break;
    case OPT_SIM_KERNELS: sim_kernels = optarg; break;
    case OPT_KERNELS:
      so.kernel_rows = (int)strtol(optarg, &end, 10);
      if (*end || end == optarg || so.kernel_rows < -1) {
        fprintf(stderr, "grape run: --kernels takes a whole number, -1 or more\n");
        return 2;
      }
      break;
    case OPT_SORT:
      if (summary_sort_parse(optarg, &so.sort) != 0) {
        fprintf(stderr, "grape run: --sort must be time, calls, name or predicted\n");
        return 2;
      }
      break;
    default:
      if (optopt != 0 && optopt < 256)
        fprintf(stderr, "grape run: unknown option '-%c'\n", optopt);
      else if (optopt != 0)
        fprintf(stderr, "grape run: %s needs a value\n", argv[optind - 1]);
      else
        fprintf(stderr, "grape run: unknown option '%s'\n", argv[optind - 1]);
      usage(stderr);
      return 2;
    }
  }
  int i = optind;
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
  if (capture && grape__option_check(grape_option_capture, capture) != 0) {
    int len;
    const char* words = grape__option_accepted(grape_option_capture, &len);
    fprintf(stderr, "grape run: --capture-range must be one of %.*s\n", len, words);
    return 2;
  }
  if (log && grape__option_check(grape_option_log, log) != 0) {
    int len;
    const char* words = grape__option_accepted(grape_option_log, &len);
    fprintf(stderr, "grape run: --log must be one of %.*s\n", len, words);
    return 2;
  }
  /* An unknown GPU is refused now: the shim would say so only after the
   * whole run. */
  if (predict_gpu != NULL && grape_gpu_find(predict_gpu) == NULL) {
    fprintf(stderr, "grape run: --predict-gpu: unknown GPU '%s'; the known ones:\n", predict_gpu);
    grape_gpu_list(stderr);
    return 2;
  }
  if (strcmp(device, "auto") && strcmp(device, "cuda") && strcmp(device, "sim")) {
    fprintf(stderr, "grape run: --device must be auto, cuda or sim\n");
    return 2;
  }
  int timed = strcmp(sim_kernels, "timed") == 0;
  if (!timed && strcmp(sim_kernels, "bodies") != 0) {
    fprintf(stderr, "grape run: --sim-kernels must be bodies or timed\n");
    return 2;
  }
  if (timed && strcmp(device, "cuda") == 0) {
    fprintf(stderr, "grape run: --sim-kernels applies to the simulated device, not --device cuda\n");
    return 2;
  }
  if (force)
    setenv("GRAPE_OVERWRITE", "yes", 1);
  int bad = output_env(grape_option_report, report ? "--report" : NULL, report);
  if (bad == 0)
    bad = output_env(grape_option_trace, trace ? "--trace" : NULL, trace);
  if (bad == 0)
    bad = output_env(grape_option_log_file, NULL, NULL);
  if (bad)
    return bad;
  FILE* csv_file = NULL;
  if (csv != NULL && (csv_file = fopen(csv, "w")) == NULL) {
    fprintf(stderr, "grape run: error: --kernels-csv %s: %s\n", csv, strerror(errno));
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
    /* Every library of the sim goes on the path: a build tree keeps its
     * cuBLAS stand-ins in cublas/ (a program linked to cuBLAS would load
     * NVIDIA's, which finds no device); an install has them beside libcuda. */
    char cublas[PATH_MAX];
    if (grape__path_join(cublas, sizeof(cublas), simdir, "cublas/libcublas.so.13") == 0 &&
        grape__path_exists(cublas)) {
      cublas[strlen(cublas) - strlen("/libcublas.so.13")] = '\0';
      prepend_env("LD_LIBRARY_PATH", cublas);
    }
    prepend_env("LD_LIBRARY_PATH", simdir);
    preload_sim_libs(simdir);
    if (timed)   /* the sim's word for the mode, beside any body libraries already named */
      prepend_env("SIMCU_KERNELS", "timed");
  } else if (timed) {
    fprintf(stderr, "grape: warning: --sim-kernels timed is ignored: the command runs on the "
                    "CUDA device\n");
  }

  /* The run folder: each process of the command leaves its own copy of its
   * report here (GRAPE_RUN_DIR), so that the summary covers exactly this
   * run's processes, whatever the user's report names are. */
  char dir[] = "/tmp/grape-run.XXXXXX";
  if (mkdtemp(dir) == NULL) {
    fprintf(stderr, "grape run: error: mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  setenv("GRAPE_RUN_DIR", dir, 1);
  int sim_set = 0;   /* grape run set SIMCU_REPORT */
  if (use_sim) {
    const char* user_sim = getenv("SIMCU_REPORT");
    if (user_sim == NULL || *user_sim == '\0') {
      sim_set = 1;
      char sim_pattern[PATH_MAX];
      snprintf(sim_pattern, sizeof(sim_pattern), "%s/sim.%%p.json", dir);
      setenv("SIMCU_REPORT", sim_pattern, 1);
    } else {
      fprintf(stderr, "grape: SIMCU_REPORT is set (%s): the summary has no simulated times\n",
              user_sim);
    }
  }
  preload_env(lib);
  /* NVTX (header-only in the program) loads the injection library this
   * names and hands it its ranges, as it does nsys's: an absolute path, since
   * the command may change folders. One the user set is kept. */
  const char* nvtx = getenv("NVTX_INJECTION64_PATH");
  char lib_abs[PATH_MAX];
  if ((nvtx == NULL || *nvtx == '\0') && realpath(lib, lib_abs) != NULL)
    setenv("NVTX_INJECTION64_PATH", lib_abs, 1);
  if (capture)
    setenv("GRAPE_CAPTURE", capture, 1);
  if (mode)
    setenv("GRAPE_MODE", mode, 1);
  if (log)
    setenv("GRAPE_LOG", log, 1);
  if (predict_gpu)
    setenv("GRAPE_PREDICT_GPU", predict_gpu, 1);
  /* The API table of --stats times every call, not a sample (a value the
   * user set is kept). */
  if (stats && getenv("GRAPE_API_TIMES") == NULL)
    setenv("GRAPE_API_TIMES", "every", 1);

  double base_ms = -1, base_wall = 0, wall = 0;
  int base_sim = 0;
  if (compare) {
    /* The command once without grape's graphs first: GRAPE_MODE=off, its
     * output discarded, no user report or trace, its own run folder. */
    char bdir[] = "/tmp/grape-base.XXXXXX";
    char* saved[3] = {NULL, NULL, NULL};
    static const char* const vars[3] = {"GRAPE_REPORT", "GRAPE_TRACE", "GRAPE_MODE"};
    if (mkdtemp(bdir) == NULL) {
      fprintf(stderr, "grape run: error: mkdtemp: %s\n", strerror(errno));
      remove_dir(dir);
      return 1;
    }
    for (int k = 0; k < 3; k++) {
      const char* v = getenv(vars[k]);
      saved[k] = v ? strdup(v) : NULL;
      unsetenv(vars[k]);
    }
    setenv("GRAPE_MODE", "off", 1);
    setenv("GRAPE_RUN_DIR", bdir, 1);
    if (sim_set) {
      char sim_pattern[PATH_MAX];
      snprintf(sim_pattern, sizeof(sim_pattern), "%s/sim.%%p.json", bdir);
      setenv("SIMCU_REPORT", sim_pattern, 1);
    }
    fprintf(stderr, "grape: --compare: running the command with GRAPE_MODE=off first (output "
                    "discarded)\n");
    int bst = 0;
    if (spawn(argv + i, 1, &bst, &base_wall) == 0 && WIFEXITED(bst) && WEXITSTATUS(bst) == 0) {
      summary_t b;
      memset(&b, 0, sizeof(b));
      collect(&b, bdir);
      for (size_t k = 0; k < b.nsim; k++) {
        double e = grape__json_num(grape__json_get(b.sim[k], "sim_end_ns"), 0) / 1e6;
        base_ms = e > base_ms ? e : base_ms;
        base_sim = 1;
      }
      summary_free(&b);
    } else {
      fprintf(stderr, "grape: --compare: the run with GRAPE_MODE=off failed; no comparison\n");
    }
    remove_dir(bdir);
    for (int k = 0; k < 3; k++) {
      if (saved[k] != NULL)
        setenv(vars[k], saved[k], 1);
      else
        unsetenv(vars[k]);
      free(saved[k]);
    }
    setenv("GRAPE_RUN_DIR", dir, 1);
    if (sim_set) {
      char sim_pattern[PATH_MAX];
      snprintf(sim_pattern, sizeof(sim_pattern), "%s/sim.%%p.json", dir);
      setenv("SIMCU_REPORT", sim_pattern, 1);
    }
  }
  int st = 0;
  if (spawn(argv + i, 0, &st, &wall) != 0) {
    remove_dir(dir);
    return 1;
  }
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;

  summary_t sum;
  memset(&sum, 0, sizeof(sum));
  collect(&sum, dir);
  remove_dir(dir);
  char signame[32] = "";
  int sig = passed_on ? (int)passed_on : WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  if (sig > 0)
    snprintf(signame, sizeof(signame), "SIG%s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
  if (passed_on)
    sum.interrupted = signame;
  so.on_sim = use_sim;
  /* How the command ended comes first: a failed command must not read like a
   * run that merely launched no kernels. */
  if (WIFEXITED(st) && rc != 0 && rc != 127)
    fprintf(stderr, "grape: the command exited with status %d\n", rc);
  else if (WIFSIGNALED(st) && !passed_on)
    fprintf(stderr, "grape: the command was killed by %s\n", signame);
  so.command_failed = rc != 0;
  if (sum.n > 0) {
    summary_print(&sum, &so);
    if (stats)
      stats_print(&sum, stderr, so.prefix);
    print_files(&sum, "report_file", "report");
    print_files(&sum, "trace_file", "trace");
  } else if (WIFSIGNALED(st)) {
    fprintf(stderr, "grape: no report: the command was killed by %s before the shim could write "
                    "one (SIGINT, SIGTERM and SIGHUP leave reports; SIGKILL cannot)\n", signame);
  } else if (rc != 127) {
    fprintf(stderr, "grape: no report from the command (it may have exited through _exit or exec'd "
                    "a static binary)\n");
  }
  if (compare && (base_sim || base_wall > 0) && WIFEXITED(st) && rc == 0) {
    double now = -1;
    for (size_t k = 0; base_sim && k < sum.nsim; k++) {
      double e = grape__json_num(grape__json_get(sum.sim[k], "sim_end_ns"), 0) / 1e6;
      now = e > now ? e : now;
    }
    const char* what = "simulated time";
    if (!base_sim || now < 0 || base_ms < 0) {
      what = "wall time";
      base_ms = base_wall;
      now = wall;
    }
    fprintf(stderr, "grape: graph mode's effect (--compare): %.3f ms with GRAPE_MODE=off, %.3f ms "
                    "with GRAPE_MODE=%s (%.1f%% %s %s)\n", base_ms, now, mode ? mode : "graph",
            base_ms > 0 ? 100 * (base_ms > now ? base_ms - now : now - base_ms) / base_ms : 0.0,
            now <= base_ms ? "less" : "more", what);
  }
  if (csv_file != NULL) {
    if (summary_kernels_csv(&sum, csv_file, so.sort) != 0 || fclose(csv_file) != 0)
      fprintf(stderr, "grape: error: --kernels-csv %s: write failed\n", csv);
  }
  summary_free(&sum);
  return rc;
}
