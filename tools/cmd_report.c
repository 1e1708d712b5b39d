/* grape report: the summary of report files a job left behind, e.g. one per
 * rank of a job that a launcher (srun, mpirun, torchrun) started without
 * `grape run`: totals, a line per process and per rank, the busiest process's
 * paths, the kernel table and the statistics tables of stats.c (text, or
 * one table as CSV for a spreadsheet). Reports keep their simulated times;
 * the sim's SIMCU_REPORT files may be given too, for reports that do not.
 * Nothing here runs the job. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "locate.h"
#include "stats.h"
#include "summary.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape report [--sort KEY] [--top N] [--csv [--table T]] [--timings CSV]...\n"
          "                    [-o FILE] REPORT|FOLDER...\n\n"
          "Merges the exit reports (GRAPE_REPORT) of a job's processes, e.g. one per rank,\n"
          "and prints one summary: totals, a line per process and per rank, the busiest\n"
          "process's paths, the kernels with their calls and times (total, avg, med, min,\n"
          "max, stddev), the CUDA API calls with their host time, the memory operations by\n"
          "kind and direction, and every process's paths. A FOLDER stands for every .json\n"
          "file in it. Simulated times are kept in the reports themselves; SIMCU_REPORT\n"
          "files of the simulated device (paired with the reports by pid) fill them in for\n"
          "reports that lack them.\n\n"
          "  --sort KEY   kernel order: time (default), calls, name, predicted\n"
          "  --top N      kernel rows in the text (default 20; -1 = all)\n"
          "  --csv        one whole table as CSV instead of the summary (--format csv)\n"
          "  --table T    which: kernels (default), api, memops, paths, nvtx (NVTX ranges),\n"
          "               nvtx-kernels (the kernels by NVTX range)\n"
          "  --timings CSV  measured kernel times of 'grape replay --time -o CSV': each\n"
          "               kernel's mean time per launch joins the table (meas(us))\n"
          "  -o FILE      write to FILE instead of stdout\n");
}

/* One argument: a report file, or a folder of them. @return files read. */
static int add_arg(summary_t* s, const char* arg) {
  struct stat st;
  if (stat(arg, &st) != 0) {
    fprintf(stderr, "grape report: %s: %s\n", arg, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode))
    return summary_add_file(s, arg) == 0 ? 1 : 0;
  struct dirent** names;
  int n = scandir(arg, &names, NULL, alphasort), read = 0;
  if (n < 0) {
    fprintf(stderr, "grape report: %s: %s\n", arg, strerror(errno));
    return -1;
  }
  for (int i = 0; i < n; i++) {
    const char* f = names[i]->d_name;
    size_t len = strlen(f);
    char path[PATH_MAX];
    if (len > 5 && strcmp(f + len - 5, ".json") == 0 &&
        grape__path_join(path, sizeof(path), arg, f) == 0)
      read += summary_add_file(s, path) == 0;
    free(names[i]);
  }
  free(names);
  return read;
}

int cmd_report(int argc, char** argv) {
  summary_opts_t so = {stdout, "", 0, 20, SORT_TIME, 0};
  int csv = 0, ntimings = 0;
  stats_table_t table = STATS_KERNELS;
  const char* timings[64];
  const char* out = NULL;
  static const struct option longs[] = {{"sort", required_argument, NULL, 's'},
                                        {"top", required_argument, NULL, 't'},
                                        {"csv", no_argument, NULL, 'c'},
                                        {"format", required_argument, NULL, 'f'},
                                        {"table", required_argument, NULL, 'b'},
                                        {"timings", required_argument, NULL, 'T'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  optind = 0;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "ho:", longs, NULL)) != -1;) {
    char* end;
    switch (c) {
    case 'h': usage(stdout); return 0;
    case 'c': csv = 1; break;
    case 'f':
      if (strcmp(optarg, "csv") != 0 && strcmp(optarg, "text") != 0) {
        fprintf(stderr, "grape report: --format must be text or csv\n");
        return 2;
      }
      csv = strcmp(optarg, "csv") == 0;
      break;
    case 'b':
      if (stats_table_parse(optarg, &table) != 0) {
        fprintf(stderr, "grape report: --table must be kernels, api, memops, paths, nvtx or nvtx-kernels\n");
        return 2;
      }
      break;
    case 'o': out = optarg; break;
    case 'T':
      if (ntimings == (int)(sizeof(timings) / sizeof(timings[0]))) {
        fprintf(stderr, "grape report: at most 64 --timings files\n");
        return 2;
      }
      timings[ntimings++] = optarg;
      break;
    case 's':
      if (summary_sort_parse(optarg, &so.sort) != 0) {
        fprintf(stderr, "grape report: --sort must be time, calls, name or predicted\n");
        return 2;
      }
      break;
    case 't':
      so.kernel_rows = (int)strtol(optarg, &end, 10);
      if (*end || end == optarg || so.kernel_rows < -1) {
        fprintf(stderr, "grape report: --top takes a whole number, -1 or more\n");
        return 2;
      }
      break;
    default:
      fprintf(stderr, "grape report: %s '%s'\n", optopt ? "option needs a value:" : "unknown option",
              argv[optind - 1]);
      usage(stderr);
      return 2;
    }
  }
  if (optind >= argc) {
    usage(stderr);
    return 2;
  }
  summary_t s;
  memset(&s, 0, sizeof(s));
  int rc = 0;
  for (int i = optind; i < argc; i++)
    if (add_arg(&s, argv[i]) < 0)
      rc = 1;
  for (int i = 0; i < ntimings; i++)
    if (summary_add_timings(&s, timings[i]) < 0)
      rc = 1;
  if (s.n == 0) {
    fprintf(stderr, "grape report: no grape report among the files given\n");
    summary_free(&s);
    return 1;
  }
  FILE* to = stdout;
  if (out != NULL && (to = fopen(out, "w")) == NULL) {
    fprintf(stderr, "grape report: -o %s: %s\n", out, strerror(errno));
    summary_free(&s);
    return 1;
  }
  so.to = to;
  if (csv) {
    rc |= stats_csv(&s, to, table, so.sort) != 0;
  } else {
    summary_print(&s, &so);
    stats_print(&s, to, so.prefix);
  }
  if (to != stdout && fclose(to) != 0) {
    fprintf(stderr, "grape report: -o %s: %s\n", out, strerror(errno));
    rc = 1;
  }
  summary_free(&s);
  return rc;
}
