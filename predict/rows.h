/* Training rows and the selector that says which of them a fit sees
 * (rows.c): the data set (dataset.c), the fits (train.c, known_fit.c,
 * interval_fit.c) and cross-validation (crossval.c) share them. */
#ifndef GRAPE_PREDICT_ROWS_H
#define GRAPE_PREDICT_ROWS_H

#include <stdint.h>

#include "grape/predict.h"
#include "predict/kernel.h"
#include "predict/model.h"

#define MAXGPU GRAPE_CV_MAX_GPUS

/* qsort's order of doubles, ascending. */
static inline int grape__cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}



typedef struct row_s {
  grape__kprep_t p;          /* with op dims */
  grape__kprep_t pl;         /* the same launch without them */
  const grape_gpu_spec_t* gpu;
  double lat;                /* ms */
  int kernel_time;           /* 1: lat is the kernel's own time; 0: through a timing harness */
  int group;
  uint32_t shape;            /* hash of the op's shape (or launch) and group, never 0 */
  uint32_t family;           /* hash of its shape family (dataset.c), never 0 */
  uint32_t block;            /* hash of its coarse family (ranges of factors of 16), never 0 */
} row_t;

struct grape_dataset_s {
  row_t* rows;
  size_t n, cap;
  int accept_simulated;      /* rows of the simulated device join too */
};

/* Row selector for cross-validation: rows of `skip` GPU are left out, and
 * with folds > 0 the rows of shapes whose fold is `fold`. */
typedef struct sel_s {
  const char* skip;         /* GPU name, or NULL */
  const char* skip2;        /* a second one (inner folds of model selection) */
  int folds, fold;          /* shape folds: fold = shape hash % folds */
  int by_family;            /* the folds are of shape families (row_t.family) */
  const double* size_max;   /* per evaluation group: rows of a larger size (row_size) are
                               left out (an extrapolation split); NULL none */
  int transfer_only;        /* fit no known regime (leave-one-GPU-out needs none) */
  double* floor;            /* per row: its (GPU, class) floor, ms */
  double p;                 /* floor combination exponent */
  const grape_train_opts_t* o;   /* resolved options */
} sel_t;

/* The hash a fold of s is taken by: r's shape, or its family. */
static inline uint32_t grape__fold_key(const row_t* r, int by_family) {
  return by_family == 2 ? r->block : by_family ? r->family : r->shape;
}
/* The size of a row's op, what an extrapolation split orders rows by: a
 * GEMM's or convolution's FLOPs, the elements of any other op; 0 without
 * op dims. */
double grape__row_size(const row_t* r);
/* The GPUs of the rows s selects (of class cls; -1 any), in first-seen
 * order, at most MAXGPU of them into gpus. @return how many there are,
 * MAXGPU + 1 when there are more. */
int grape__list_gpus(const grape_dataset_t* d, const sel_t* s, int cls, const char** gpus);
/* The q-quantile of the op size of each evaluation group's rows with op
 * dims that s selects (NULL: all) into thr[GRAPE_CV_GROUPS]. */
int grape__size_quantiles(const grape_dataset_t* d, const sel_t* s, double q, double* thr);
/* Whether r is one of the rows s selects of class cls (-1 any). */
int grape__selected(const row_t* r, const sel_t* s, int cls);
/* The span, per interval bin, of the rows s selects of class c on GPU gpu
 * (NULL any) into x: their launches alone (launch), or the rows with op dims. */
void grape__span_of(const grape_dataset_t* d, const sel_t* s, int c, int launch, const char* gpu,
                    grape__extrap_t* x);
/* Whether row r of the rows s selects lies beyond the inner split lo. */
int grape__upper(const row_t* r, const sel_t* s, const sel_t* lo, int c);

#endif
