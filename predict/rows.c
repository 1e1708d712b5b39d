/* Which training rows a fit sees: the row selector of cross-validation and
 * the extrapolation splits, and the sizes, GPUs and spans of the rows it
 * selects. Shared by every fit (train.c, known_fit.c, interval_fit.c) and
 * cross-validation (crossval.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predict/rows.h"

/* The size of a row's op, what an extrapolation split orders rows by: a
 * GEMM's or convolution's FLOPs, the elements of any other op; 0 without
 * op dims (such rows are never held out by size). */
double grape__row_size(const row_t* r) {
  if (!r->p.has_dims)
    return 0;
  int c = (int)r->p.cls;
  return c == GRAPE_KC_GEMM || c == GRAPE_KC_CONV ? r->p.flops : r->p.numel;
}

int grape__selected(const row_t* r, const sel_t* s, int cls) {
  if (s->size_max != NULL && r->group >= 0 && r->group < GRAPE_CV_GROUPS &&
      grape__row_size(r) > s->size_max[r->group])
    return 0;
  if (s->skip != NULL && strcmp(r->gpu->name, s->skip) == 0)
    return 0;
  if (s->skip2 != NULL && strcmp(r->gpu->name, s->skip2) == 0)
    return 0;
  if (s->folds > 0 && grape__fold_key(r, s->by_family) % (uint32_t)s->folds == (uint32_t)s->fold)
    return 0;
  return cls < 0 || (int)r->p.cls == cls;
}

/* The distinct GPUs of the rows `s` selects of class `cls` (-1 all), in
 * first-seen order, at most MAXGPU of them into gpus. @return how many there
 * are, MAXGPU + 1 when there are more. */
int grape__list_gpus(const grape_dataset_t* d, const sel_t* s, int cls, const char** gpus) {
  int ngpu = 0;
  for (size_t i = 0; i < d->n; i++) {
    if (!grape__selected(&d->rows[i], s, cls))
      continue;
    int k = 0;
    while (k < ngpu && strcmp(gpus[k], d->rows[i].gpu->name) != 0)
      k++;
    if (k < ngpu)
      continue;
    if (ngpu == MAXGPU)
      return MAXGPU + 1;
    gpus[ngpu++] = d->rows[i].gpu->name;
  }
  return ngpu;
}

/* The q-quantile of the op size (row_size) of each evaluation group's rows
 * with op dims that s selects (NULL: all), into thr[GRAPE_CV_GROUPS]
 * (infinity for a group without any). */
int grape__size_quantiles(const grape_dataset_t* d, const sel_t* s, double q, double* thr) {
  double* v = malloc((d->n + 1) * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  for (int g = 0; g < GRAPE_CV_GROUPS; g++) {
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
      if (d->rows[i].group == g && d->rows[i].p.has_dims &&
          (s == NULL || grape__selected(&d->rows[i], s, -1)))
        v[n++] = grape__row_size(&d->rows[i]);
    thr[g] = INFINITY;
    if (n > 0) {
      qsort(v, n, sizeof(double), grape__cmp_double);
      thr[g] = v[(size_t)(q * (double)(n - 1))];
    }
  }
  free(v);
  return 0;
}

/* The span, per interval bin, of the rows s selects of class c on GPU gpu
 * (NULL any): their launches alone (launch), or the rows with op dims. */
void grape__span_of(const grape_dataset_t* d, const sel_t* s, int c, int launch, const char* gpu,
                    grape__extrap_t* x) {
  memset(x->span, 0, sizeof(x->span));
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!grape__selected(r, s, c) || (!launch && !r->p.has_dims) ||
        (gpu != NULL && strcmp(r->gpu->name, gpu) != 0))
      continue;
    const grape__kprep_t* p = launch ? &r->pl : &r->p;
    double v[GRAPE__NSPAN], *span = x->span[grape__interval_bin(p)];
    grape__span_values(p, v);
    for (int j = 0; j < GRAPE__NSPAN; j++)
      span[j] = fmax(span[j], v[j]);
  }
}

/* Whether row r of the rows s selects lies beyond the inner split lo. */
int grape__upper(const row_t* r, const sel_t* s, const sel_t* lo, int c) {
  return r->p.has_dims && grape__selected(r, s, c) && !grape__selected(r, lo, c);
}
