/* jobs.h: parsing many fatbin containers on several threads (jobs.c). */
#ifndef GRAPE_CUBIN_JOBS_H
#define GRAPE_CUBIN_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "grape/cubin.h"

/* A unit of parallel work: parse data[0, size) (one or more containers) into a
 * set of its own, merged into the caller's set in job order. */
typedef struct grape__job_s {
  const uint8_t* data;
  size_t size;
  size_t base_off;         /* offset of data in the file, for messages */
  int optional;            /* a scan candidate: failing means "not a container", not an error */
  grape_fatbin_t* out;     /* filled by the worker */
  int rc;
  grape_cubin_err_t err;
} grape__job_t;

/* Runs jobs on up to as many threads as there are CPUs (at most 4), then
 * moves their images into fb in job order. Returns the first non-optional
 * job's error in job order; failed optional jobs keep rc for the caller. */
int grape__fatbin_run_jobs(grape_fatbin_t* fb, grape__job_t* jobs, size_t n,
                           grape_cubin_err_t* err);

#endif
