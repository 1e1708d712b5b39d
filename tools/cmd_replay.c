/* grape replay: a trace's paths rebuilt as CUDA graphs and run on a device,
 * optionally timed; the timings go to a CSV that grape train and grape
 * predict --csv read, and (--save) back into a copy of the trace.
 *
 * DESIGN: thin: picks the driver (the real one, or the simulated device's
 * found beside grape, tools/locate.c), calls grape_replay_run
 * (replay/engine.c), writes the results. grape links no CUDA library; the
 * driver is dlopen'd. The CSV's device column is the predictor's name for
 * the device, so that grape train needs no --gpu for it; on the sim, the
 * sim's own name ("NVIDIA H200 (simcu)"), which marks the rows simulated. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "grape/predict.h"
#include "grape/trace.h"
#include "locate.h"
#include "progress.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape replay TRACE [--path FP]... [--all] [--iters N] [--warmup N] [--time]\n"
          "                    [-o TIMINGS.csv] [--save OUT] [--device auto|cuda|sim] [--bodies LIB]...\n"
          "                    [--sim-kernels bodies|timed]\n"
          "\n"
          "Loads the trace's kernel images on a device, allocates its recorded buffers\n"
          "(zero-filled), rewrites pointer parameters to them, builds each path as a CUDA\n"
          "graph and launches it N times. Memsets and copies run on scratch buffers of\n"
          "their recorded size.\n"
          "\n"
          "  --path FP      replay this path (16 hex digits, as grape inspect shows);\n"
          "                 repeatable. Default, or --all: every path\n"
          "  --iters N      launches per path (default 10)\n"
          "  --warmup N     untimed launches first (default 1 with --time, else 0)\n"
          "  --time         time each path (its graph, stream events around the launch)\n"
          "                 and each op (a second graph with event-record nodes between\n"
          "                 the ops); each iteration then launches both graphs\n"
          "  -o FILE        with --time: timings CSV (kernel, grid, block, smem, regs,\n"
          "                 device, time_ms, path, position) for grape train / predict --csv\n"
          "  --save OUT     with --time: write the trace again with the measured times\n"
          "                 (grape export uses them)\n"
          "  --device D     auto (default): the real driver when it reports a device, else\n"
          "                 the simulated one; cuda; sim\n"
          "  --bodies LIB   sim: a shared object with CPU bodies of kernels (besides\n"
          "                 <program>_sim.so beside the traced program and the objects the\n"
          "                 trace names)\n"
          "  --sim-kernels K sim: bodies (default): every kernel needs a CPU body; timed:\n"
          "                 kernels without one (a framework's, such as PyTorch's) run\n"
          "                 timed, not computed (SIMCU_KERNELS=timed, as grape run's)\n");
}

/* The predictor's name for device (the sim says "NVIDIA H200 (simcu)"), or NULL. */
static const char* known_gpu(const char* device) {
  const grape_gpu_spec_t* g = grape_gpu_find(device);
  if (g == NULL) {
    char base[256];
    snprintf(base, sizeof(base), "%s", device);
    char* paren = strstr(base, " (");
    if (paren != NULL) {
      *paren = '\0';
      g = grape_gpu_find(base);
    }
  }
  return g ? g->name : NULL;
}

static int parse_long(const char* s, long min, long* out) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || v < min)
    return -1;
  *out = v;
  return 0;
}

/* grape_replay_opts_t.progress: on a terminal, the path being replayed. */
static void show_path(void* arg, size_t path, size_t total, int running) {
  progress_t* p = arg;
  if (running)
    progress_say(p, 0, "grape: replaying path %zu of %zu...", path + 1, total);
  else
    progress_clear(p);
}

int cmd_replay(int argc, char** argv) {
  progress_t progress;
  const char *path = NULL, *csv = NULL, *save = NULL, *device = "auto", *sim_kernels = "bodies";
  long iters = 10, warmup = -1;
  int time = 0, rc = 1;
  uint64_t* fps = calloc((size_t)argc, sizeof(*fps));
  const char** bodies = calloc((size_t)argc, sizeof(*bodies));
  size_t nfps = 0, nbodies = 0;
  if (fps == NULL || bodies == NULL)
    goto done;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    int has = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      rc = 0;
      goto done;
    } else if (strcmp(a, "--all") == 0) {
      continue;
    } else if (strcmp(a, "--time") == 0) {
      time = 1;
    } else if (strcmp(a, "--path") == 0 && has) {
      char* end;
      const char* s = argv[++i];
      errno = 0;
      fps[nfps++] = strtoull(s, &end, 16);
      if (*s == '\0' || *end != '\0' || errno || strlen(s) > 16) {
        fprintf(stderr, "grape: error: --path wants a fingerprint of 16 hex digits, not '%s'\n", s);
        rc = 2;
        goto done;
      }
    } else if ((strcmp(a, "--iters") == 0 && has && parse_long(argv[i + 1], 1, &iters) == 0) ||
               (strcmp(a, "--warmup") == 0 && has && parse_long(argv[i + 1], 0, &warmup) == 0)) {
      i++;
    } else if (strcmp(a, "--iters") == 0 || strcmp(a, "--warmup") == 0) {
      fprintf(stderr, "grape: error: %s wants a number (%s)\n", a,
              strcmp(a, "--iters") == 0 ? "1 or more" : "0 or more");
      rc = 2;
      goto done;
    } else if (strcmp(a, "-o") == 0 && has) {
      csv = argv[++i];
    } else if (strcmp(a, "--save") == 0 && has) {
      save = argv[++i];
    } else if (strcmp(a, "--device") == 0 && has) {
      device = argv[++i];
    } else if (strcmp(a, "--sim-kernels") == 0 && has) {
      sim_kernels = argv[++i];
    } else if (strcmp(a, "--bodies") == 0 && has) {
      bodies[nbodies++] = argv[++i];
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "grape: error: unknown option or missing value: '%s'\n", a);
      usage(stderr);
      rc = 2;
      goto done;
    } else if (path == NULL) {
      path = a;
    } else {
      fprintf(stderr, "grape: error: one trace at a time ('%s' and '%s')\n", path, a);
      rc = 2;
      goto done;
    }
  }
  if (path == NULL) {
    usage(stderr);
    rc = 2;
    goto done;
  }
  if ((csv || save) && !time) {
    fprintf(stderr, "grape: error: -o and --save write measured times: add --time\n");
    rc = 2;
    goto done;
  }
  if (strcmp(device, "auto") && strcmp(device, "cuda") && strcmp(device, "sim")) {
    fprintf(stderr, "grape: error: --device must be auto, cuda or sim\n");
    rc = 2;
    goto done;
  }
  int timed = strcmp(sim_kernels, "timed") == 0;
  if (!timed && strcmp(sim_kernels, "bodies") != 0) {
    fprintf(stderr, "grape: error: --sim-kernels must be bodies or timed\n");
    rc = 2;
    goto done;
  }
  int sim = strcmp(device, "sim") == 0 ||
            (strcmp(device, "auto") == 0 && !grape__real_device_present());
  char driver[PATH_MAX] = "libcuda.so.1";
  if (sim) {
    char simdir[PATH_MAX];
    if (grape__find_simdir(simdir, sizeof(simdir)) ||
        grape__path_join(driver, sizeof(driver), simdir, "libcuda.so.1")) {
      fprintf(stderr, "grape: error: the simulated device's libraries were not found "
                      "(set GRAPE_SIM_DIR)\n");
      goto done;
    }
    if (strcmp(device, "auto") == 0)
      fprintf(stderr, "grape: no CUDA device found; replaying on the simulated device (%s)\n",
              simdir);
    /* The sim reads its mode when it loads (grape_replay_run dlopens it):
     * its word, beside any body libraries SIMCU_KERNELS names already. */
    const char* old = getenv("SIMCU_KERNELS");
    char kernels[PATH_MAX];
    if (timed && (snprintf(kernels, sizeof(kernels), "timed%s%s", old && *old ? ":" : "",
                           old ? old : "") >= (int)sizeof(kernels) ||
                  setenv("SIMCU_KERNELS", kernels, 1) != 0)) {
      fprintf(stderr, "grape: error: SIMCU_KERNELS is too long\n");
      goto done;
    }
  } else if (timed) {
    fprintf(stderr, "grape: warning: --sim-kernels timed is ignored: replaying on the CUDA "
                    "device\n");
    timed = 0;
  }

  grape_trace_t* t;
  char err[1024];
  if (grape_trace_load(path, &t, err, sizeof(err)) < 0) {
    fprintf(stderr, "grape: error: %s\n", err);
    goto done;
  }
  grape_replay_opts_t o = {.sz = sizeof(o), .driver = driver, .sim = sim, .bodies = bodies,
                           .nbodies = nbodies, .paths = nfps ? fps : NULL, .npaths = nfps,
                           .iters = iters, .warmup = warmup >= 0 ? warmup : time ? 1 : 0,
                           .time = time, .log = stderr, .sim_timed = timed,
                           .progress = show_path, .progress_arg = &progress};
  progress_start(&progress);
  grape_replay_stats_t st;
  if (grape_replay_run(t, &o, &st, err, sizeof(err)) < 0) {
    fprintf(stderr, "grape: error: %s\n", err);
    goto done_trace;
  }
  fprintf(stderr, "grape: replayed %zu of %zu paths on %s, %ld times each: %" PRIu64
          " kernels run\n", st.paths_replayed, st.paths_replayed + st.paths_failed, st.device,
          iters, st.kernels_launched);
  if (time) {
    printf("%-16s %10s %5s %14s\n", "path", "count", "ops", "graph_ms");
    for (size_t i = 0; i < grape_trace_path_count(t); i++) {
      const grape_trace_path_t* p = grape_trace_path(t, i);
      if (p->times != NULL)
        printf("%016" PRIx64 " %10" PRIu64 " %5u %14.6f\n", p->fp, p->count, p->nops,
               p->times->path_ms);
    }
  }
  if (csv != NULL) {
    const char* dev = known_gpu(st.device);
    /* On the sim the device keeps its own name, "NVIDIA H200 (simcu)": the
     * predictor reads it as the GPU it stands for, and grape train refuses
     * its rows unless asked (the times are the sim's clock model). */
    if (sim && dev != NULL)
      dev = st.device;
    if (dev == NULL)
      fprintf(stderr, "grape: warning: the predictor does not know the GPU '%s': give grape "
                      "train --gpu NAME (or --device-json) for these timings\n", st.device);
    FILE* f = fopen(csv, "w");
    long rows = f ? grape_replay_write_csv(t, dev ? dev : st.device, f) : -errno;
    if (f != NULL && fclose(f) != 0)
      rows = -EIO;
    if (rows < 0) {
      fprintf(stderr, "grape: error: %s: %s\n", csv, strerror((int)-rows));
      goto done_trace;
    }
    fprintf(stderr, "grape: timings: %s (%ld kernel rows)\n", csv, rows);
  }
  if (save != NULL && grape_trace_save(t, save, 0, NULL, err, sizeof(err)) < 0) {
    fprintf(stderr, "grape: error: %s\n", err);
    goto done_trace;
  }
  rc = st.paths_failed ? 1 : 0;
done_trace:
  grape_trace_free(t);
done:
  free(fps);
  free(bodies);
  return rc;
}
