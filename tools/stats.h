/* The statistics tables beside the kernel table (stats.c): CUDA API calls
 * with their host time, memory operations by kind and direction, and paths;
 * as text or CSV. */
#ifndef GRAPE_TOOLS_STATS_H
#define GRAPE_TOOLS_STATS_H

#include <stdio.h>

#include "summary.h"

typedef enum stats_table_e {
  STATS_KERNELS, STATS_API, STATS_MEMOPS, STATS_PATHS, STATS_NVTX, STATS_NVTX_KERNELS
} stats_table_t;

/* Parses "kernels", "api", "memops", "paths", "nvtx" or "nvtx-kernels".
 * @return 0, or -1. */
int stats_table_parse(const char* name, stats_table_t* out);

/* Prints the API, memory-operation and path tables of s (those that have
 * rows), each line starting with prefix. */
void stats_print(const summary_t* s, FILE* to, const char* prefix);

/* The NVTX tables (stats_nvtx.c): the ranges, and the kernels by range;
 * printed only when a report has NVTX ranges. */
void stats_nvtx_print(const summary_t* s, FILE* to, const char* prefix);
/* kernels = 0: the ranges; 1: the kernels by range. @return 0, or -1. */
int stats_nvtx_csv(const summary_t* s, FILE* to, int kernels);

/* Writes one table as CSV: a header line, then its rows (the kernels in
 * sort order). @return 0, or -1 when a write failed. */
int stats_csv(const summary_t* s, FILE* to, stats_table_t table, summary_sort_t sort);

#endif
