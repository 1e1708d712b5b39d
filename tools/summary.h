/* The summary of a run's reports, shared by `grape run` (its own processes)
 * and `grape report` (reports a job left, e.g. one per rank under Slurm):
 * totals, one line per process and per rank, the busiest process's paths, and
 * a kernel table like `nsys stats`'s GPU kernel summary (summary.c). */
#ifndef GRAPE_TOOLS_SUMMARY_H
#define GRAPE_TOOLS_SUMMARY_H

#include <stddef.h>
#include <stdio.h>

#include "util/json.h"

typedef struct summary_s {
  grape_json_t** rep;      /* the shim's exit reports (GRAPE_REPORT) */
  size_t n, cap;
  grape_json_t** sim;      /* the simulated device's reports (SIMCU_REPORT), paired by pid */
  size_t nsim, capsim;
  int forked_silent;       /* fork children that left no report (grape run's marks) */
  const char* interrupted; /* "SIGINT" when grape run passed the user's signal on, else NULL */
  struct summary_meas_s* meas;   /* measured kernel times (grape replay --time -o CSV) */
  size_t nmeas, capmeas;
} summary_t;

/* The kernel table's order. */
typedef enum summary_sort_e { SORT_TIME, SORT_CALLS, SORT_NAME, SORT_PREDICTED } summary_sort_t;

/* Parses "time", "calls", "name" or "predicted". @return 0, or -1. */
int summary_sort_parse(const char* s, summary_sort_t* out);

/* Reads one report file: the shim's or the sim's, told apart by their
 * members. @return 0, or -1 with a message naming path on stderr. */
int summary_add_file(summary_t* s, const char* path);

/* Reads the timings CSV of `grape replay --time -o FILE` (columns kernel and
 * time_ms): each kernel's measured time per launch joins the kernel table.
 * @return rows read, or -1 with a message naming path on stderr. */
long summary_add_timings(summary_t* s, const char* path);

void summary_free(summary_t* s);

typedef struct summary_opts_s {
  FILE* to;                /* where the text goes */
  const char* prefix;      /* each line's start ("grape: " on stderr) */
  int on_sim;              /* the command ran on the simulated device */
  int kernel_rows;         /* rows of the kernel table; 0 = none, -1 = all */
  summary_sort_t sort;
  int command_failed;      /* the command exited non-zero or by a signal (said already):
                              no hint that it ran no kernels */
} summary_opts_t;

/* Prints the summary of every report in s. */
void summary_print(const summary_t* s, const summary_opts_t* o);

/* Writes the whole kernel table as CSV (a header line, then one row per
 * kernel name in o->sort order). @return 0, or -1 when a write failed. */
int summary_kernels_csv(const summary_t* s, FILE* to, summary_sort_t sort);

#endif
