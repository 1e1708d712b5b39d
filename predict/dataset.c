/* Training data: rows of measured kernel times from any number of CSVs.
 *
 * DESIGN: a data set keeps, per good row, the prepared kernel (with its op
 * dims and as its launch alone), its GPU, its latency, its evaluation
 * group and a hash of its shape; features are recomputed at fit time
 * (cheap), so nothing GPU-specific is cached. Rows of the simulated
 * device are counted and left out unless the caller accepts them.
 */
#include "predict/rows.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

void grape_dataset_accept_simulated(grape_dataset_t* d, int yes) {
  d->accept_simulated = yes != 0;
}

int grape_dataset_new(grape_dataset_t** out) {
  *out = calloc(1, sizeof(**out));
  return *out ? 0 : -ENOMEM;
}

void grape_dataset_free(grape_dataset_t* d) {
  if (d == NULL)
    return;
  free(d->rows);
  free(d);
}

size_t grape_dataset_size(const grape_dataset_t* d) {
  return d->n;
}

/* FNV-1a over the op's shape (its dims, the reduction length that holds a
 * conv's kernel size; for a row without dims, its launch) and the
 * evaluation group, with a final mix so that
 * its low bits and its high bits give independent folds. Shapes, not rows,
 * are what cross-validation holds out: the elementwise ops of one (B, H),
 * or one GEMM shape on every GPU, leave together. */
static uint32_t hash_key(const double* key, size_t n) {
  const unsigned char* b = (const unsigned char*)key;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n * sizeof(*key); i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return (uint32_t)h | 1;
}

static uint32_t shape_hash(const grape__kprep_t* p, int group) {
  /* A row without op dims (a launch timed alone) is its launch's shape. */
  double key[6] = {group, p->shape[0], p->shape[1], p->shape[2], p->shape[3], p->kred};
  if (!p->has_dims) {
    key[1] = p->blocks;
    key[2] = p->threads;
    key[3] = p->smem;
    key[4] = p->variant;
  }
  return hash_key(key, 6);
}

/* A shape's family: the range each dim lies in (factors of 4: 1-3, 4-15,
 * 16-63...) and whether every dim is a multiple of 8. Real models' shapes
 * are families the data holds few rows of (large, aligned), so what
 * holds out a family at a time measures how a fit does on shapes unlike
 * its rows, not on the neighbours of shapes it saw. A row without op dims
 * is its own family (its launch's shape). */
static uint32_t family_hash(const grape__kprep_t* p, int group, uint32_t shape, double per) {
  if (!p->has_dims)
    return shape;
  double key[6] = {group, 0, 0, 0, 0, 1};
  for (int i = 0; i < 4; i++) {
    key[1 + i] = p->shape[i] >= 1 ? floor(log2(p->shape[i]) / per) : -1;
    if (p->shape[i] >= 1 && grape__align(p->shape[i]) < 8 &&
        (i > 0 || (p->cls != GRAPE_KC_GEMM && p->cls != GRAPE_KC_CONV)))
      key[5] = 0;
  }
  return hash_key(key, 6);
}

int grape_dataset_add_file(grape_dataset_t* d, const char* path, const char* gpu_override,
                           grape_load_stats_t* st, FILE* diag, int max_named) {
  grape_csv_t* c;
  int err = grape_csv_open(path, gpu_override, 1, &c);
  if (err < 0)
    return err;
  grape_csv_row_t r;
  int named = 0;
  while ((err = grape_csv_next(c, &r)) > 0) {
    if (!r.ok) {
      if (r.group >= 0 && r.group < GRAPE_KC_COUNT)
        st->skipped[r.group]++;
      else
        st->skipped_unclassified++;
      if (diag != NULL && named++ < max_named)
        fprintf(diag, "grape: warning: %s:%zu: skipped: %s\n", path, r.line_no, r.why);
      continue;
    }
    if (r.simulated && !d->accept_simulated) {
      st->simulated++;
      continue;
    }
    if (d->n == d->cap) {
      row_t* nr = grape__grow(d->rows, &d->cap, d->n + 1, sizeof(*nr), 4096);
      if (nr == NULL) {
        err = -ENOMEM;
        break;
      }
      d->rows = nr;
    }
    row_t* w = &d->rows[d->n++];
    grape__kernel_prep(&r.desc, &w->p);
    grape_kernel_desc_t launch = r.desc;
    launch.op = GRAPE_OP_UNKNOWN;
    grape__kernel_prep(&launch, &w->pl);
    w->pl.cls = w->p.cls;  /* the class the dims say, not the name */
    w->gpu = r.gpu;
    w->lat = r.latency_ms;
    w->kernel_time = r.kernel_time;
    w->group = r.group;
    w->shape = shape_hash(&w->p, r.group);
    w->family = family_hash(&w->p, r.group, w->shape, 2);
    w->block = family_hash(&w->p, r.group, w->shape, 4);
    st->used[(int)w->p.cls]++;
  }
  grape_csv_close(c);
  return err < 0 ? err : 0;
}
