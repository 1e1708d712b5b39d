/* grape report: the summary of report files a job left behind, e.g. one per
 * rank of a job that a launcher (srun, mpirun, torchrun) started without
 * `grape run`: totals, a line per process and per rank, the busiest process's
 * paths and the kernel table (text, or CSV for a spreadsheet). The sim's
 * SIMCU_REPORT files may be given too: the kernel table then has simulated
 * times. Nothing here runs the job. */
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
#include "summary.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape report [--sort KEY] [--top N] [--csv] [--timings CSV]... [-o FILE]\n"
          "                    REPORT|FOLDER...\n\n"
          "Merges the exit reports (GRAPE_REPORT) of a job's processes, e.g. one per rank,\n"
          "and prints one summary: totals, a line per process and per rank, the busiest\n"
          "process's paths, and the kernels with their calls and times. A FOLDER stands\n"
          "for every .json file in it. SIMCU_REPORT files of the simulated device (paired\n"
          "with the reports by pid) give the kernels' simulated times.\n\n"
          "  --sort KEY   kernel order: time (default), calls, name, predicted\n"
          "  --top N      kernel rows in the text (default 20; -1 = all)\n"
          "  --csv        the whole kernel table as CSV instead of the summary\n"
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
  const char* timings[64];
  const char* out = NULL;
  static const struct option longs[] = {{"sort", required_argument, NULL, 's'},
                                        {"top", required_argument, NULL, 't'},
                                        {"csv", no_argument, NULL, 'c'},
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
  if (csv)
    rc |= summary_kernels_csv(&s, to, so.sort) != 0;
  else
    summary_print(&s, &so);
  if (to != stdout && fclose(to) != 0) {
    fprintf(stderr, "grape report: -o %s: %s\n", out, strerror(errno));
    rc = 1;
  }
  summary_free(&s);
  return rc;
}
