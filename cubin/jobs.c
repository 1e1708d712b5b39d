/* Parallel parsing of many fatbin containers (a large library's .nv_fatbin
 * and the containers found in its data sections).
 *
 * DESIGN: each job parses into a set of its own on a worker thread, with the
 * worker's zstd context and scratch buffer lent to it, so workers share
 * nothing but the job counter; the sets are then moved into the caller's set
 * in job order, so the result (image order, first error) is the same as a
 * sequential parse. Decompression dominates (cuBLASLt: 2.3 GB of zstd), and
 * it parallelises per container. Used by the file readers only: the shim's
 * single-image loads stay on the caller's thread.
 */
#include "jobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fatbin.h"
#include "set.h"
#include "util/grow.h"

#define MAX_THREADS 4

typedef struct pool_s {
  grape__job_t* jobs;
  size_t n;
  atomic_size_t next;
  unsigned flags;
} pool_t;

static void* worker(void* arg) {
  pool_t* p = arg;
  grape_fatbin_t lend = {0};   /* the worker's zstd context and scratch, lent to each job */
  size_t i;
  while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
    grape__job_t* j = &p->jobs[i];
    j->out = grape__fatbin_new(&j->err);
    if (j->out == NULL) {
      j->rc = -ENOMEM;
      continue;
    }
    j->out->flags = p->flags;
    j->out->dctx = lend.dctx;
    j->out->scratch = lend.scratch;
    j->out->scratch_cap = lend.scratch_cap;
    j->rc = grape__fatbin_parse_into(j->out, j->data, j->size, j->base_off, &j->err);
    lend.dctx = j->out->dctx;
    lend.scratch = j->out->scratch;
    lend.scratch_cap = j->out->scratch_cap;
    j->out->dctx = NULL;
    j->out->scratch = NULL;
    j->out->scratch_cap = 0;
  }
  grape__fatbin_release(&lend);
  return NULL;
}

/* Moves src's images and buffers to the end of dst; src is left empty. */
static int merge(grape_fatbin_t* dst, grape_fatbin_t* src) {
  if (dst->nimages + src->nimages > dst->cap) {
    grape_image_t* im =
        grape__grow(dst->images, &dst->cap, dst->nimages + src->nimages, sizeof(*im), 8);
    if (im == NULL)
      return -ENOMEM;
    dst->images = im;
  }
  if (dst->nbufs + src->nbufs > dst->bufcap) {
    void** b = grape__grow(dst->bufs, &dst->bufcap, dst->nbufs + src->nbufs, sizeof(*b), 8);
    if (b == NULL)
      return -ENOMEM;
    dst->bufs = b;
  }
  if (src->nimages)
    memcpy(dst->images + dst->nimages, src->images, src->nimages * sizeof(*src->images));
  if (src->nbufs)
    memcpy(dst->bufs + dst->nbufs, src->bufs, src->nbufs * sizeof(*src->bufs));
  dst->nimages += src->nimages;
  dst->nbufs += src->nbufs;
  src->nimages = 0;
  src->nbufs = 0;
  return 0;
}

int grape__fatbin_run_jobs(grape_fatbin_t* fb, grape__job_t* jobs, size_t n,
                           grape_cubin_err_t* err) {
  pool_t p = {.jobs = jobs, .n = n, .flags = fb->flags};
  pthread_t th[MAX_THREADS];
  size_t nth = 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t want = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (size_t)cpus;
  int rc = 0;
  atomic_init(&p.next, 0);
  for (size_t i = 0; i < n; i++) {
    jobs[i].out = NULL;
    jobs[i].rc = 0;
    jobs[i].err.msg[0] = '\0';
  }
  /* Helpers beyond the calling thread, which works too. */
  while (nth + 1 < want && nth + 1 < n && pthread_create(&th[nth], NULL, worker, &p) == 0)
    nth++;
  worker(&p);
  for (size_t t = 0; t < nth; t++)
    pthread_join(th[t], NULL);

  for (size_t i = 0; i < n; i++) {
    grape__job_t* j = &jobs[i];
    if (rc == 0 && j->rc == 0) {
      rc = merge(fb, j->out);
      if (rc)
        grape__cubin_errf(err, "out of memory");
    } else if (rc == 0 && !j->optional) {
      rc = j->rc;
      if (err)
        *err = j->err;
    }
    grape_fatbin_free(j->out);
    j->out = NULL;
  }
  return rc;
}
