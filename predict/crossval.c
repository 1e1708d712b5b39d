/* Cross-validation: leave one GPU out, hold out shapes, and extrapolation
 * splits. The library measures and returns sums per held-out GPU and
 * evaluation group; the CLI prints the tables (tools/cmd_train.c).
 *
 * DESIGN: every fold is a fit by grape__train_sel on the rows a selector
 * keeps, the same code that fits the shipped model, so every inner choice
 * and calibration is redone without the held-out rows.
 */
#include "predict/train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predict/gpu.h"

/* ---- Cross-validation ---- */

#define NGROUP GRAPE_CV_GROUPS

const char* grape_cv_group_name(int g) {
  return g == GRAPE_KC_COUNT ? "linear" : g == GRAPE_KC_GEMM ? "bmm" : grape_kclass_name(g);
}

static void cell_add(grape_cv_cell_t* t, const grape_cv_cell_t* a) {
  t->n += a->n;
  for (int me = 0; me < GRAPE_METHOD_COUNT; me++) {
    t->ape[me] += a->ape[me];
    t->sum_pred[me] += a->sum_pred[me];
  }
  t->sum_meas += a->sum_meas;
  t->ape_launch += a->ape_launch;
  t->covered += a->covered;
  t->cover_launch += a->cover_launch;
  t->ape_known += a->ape_known;
  t->known += a->known;
  t->extrapolated += a->extrapolated;
  t->anchored += a->anchored;
  t->ape_anchored += a->ape_anchored;
  t->ape_alone += a->ape_alone;
  t->cover_known += a->cover_known;
  t->cover_extrapolated += a->cover_extrapolated;
}

void grape_cv_sum(const grape_cv_t* cv, int group, grape_cv_cell_t* out) {
  memset(out, 0, sizeof(*out));
  for (int g = 0; g < NGROUP; g++)
    if (group < 0 || g == group)
      for (int gi = 0; gi < cv->ngpu; gi++)
        cell_add(out, &cv->cell[gi][g]);
}

/* What a prediction says of row r: the kernel's time for a row timed as a
 * kernel, the harness-inclusive latency for one timed through a harness;
 * with its bounds. */
static double served(const row_t* r, const grape_prediction_t* p, double* lo, double* hi) {
  *lo = r->kernel_time ? p->lo_ms : p->harness_lo_ms;
  *hi = r->kernel_time ? p->hi_ms : p->harness_hi_ms;
  return r->kernel_time ? p->ms : p->harness_ms;
}

/* Whether grape's interval holds the measured time of r. */
static int covers(const row_t* r, const grape_prediction_t* p) {
  double lo, hi;
  served(r, p, &lo, &hi);
  return p->has_interval && lo <= r->lat && r->lat <= hi;
}

/* grape's absolute relative error on r. */
static double ape_of(const row_t* r, const grape_prediction_t* p) {
  double lo, hi;
  return fabs(served(r, p, &lo, &hi) - r->lat) / r->lat;
}

/* Starts a cross-validation of d over the GPUs of the data, which needs
 * `min` of them: out emptied and its GPUs listed, options resolved into k.
 * @return 0, -E2BIG (too many GPUs), -ENODATA (too few) or -EINVAL. */
static int cv_begin(const grape_dataset_t* d, const grape_train_opts_t* o, int min,
                    grape_train_opts_t* k, grape_cv_t* out) {
  int err = grape__train_resolve(o, k);
  if (err < 0)
    return err;
  memset(out, 0, sizeof(*out));
  sel_t all = {0};
  int n = grape__list_gpus(d, &all, -1, out->gpu);
  if (n > MAXGPU)
    return -E2BIG;
  if (n < min)
    return -ENODATA;
  out->ngpu = n;
  out->rows = d->n;
  return 0;
}

/* Whether a GPU of the data other than `gpu` is of its architecture: a fit
 * that holds `gpu` out then fits the known regime too, so that `gpu` can
 * take that GPU's trees (an unseen GPU's sibling, grape__sibling). */
static int has_sibling(const grape_dataset_t* d, const char* gpu, const grape_train_opts_t* k) {
  const grape_gpu_spec_t* g = grape_gpu_find(gpu);
  if (g == NULL || k->sibling == 0 || k->trees == 0)
    return 0;
  for (size_t i = 0; i < d->n; i++)
    if (d->rows[i].gpu != g && strcmp(d->rows[i].gpu->name, gpu) != 0 &&
        grape__gpu_same_arch(d->rows[i].gpu, g))
      return 1;
  return 0;
}

/* A held-out GPU's row that a known GPU of its architecture can serve:
 * grape with that GPU's trees and without them, into a (m's rule is left
 * as it was). */
static void add_anchored(grape_cv_cell_t* a, grape_model_t* m, const row_t* r) {
  int c = (int)r->p.cls, keep = m->sibling[c];
  m->sibling[c] = 1;
  if (grape__sibling(m, r->gpu, c, GRAPE__KNOWN_DIMS) != NULL) {
    grape_prediction_t p;
    grape__predict_full(m, &r->p, r->gpu, &p);
    a->ape_anchored += ape_of(r, &p);
    m->sibling[c] = 0;
    grape__predict_full(m, &r->p, r->gpu, &p);
    a->ape_alone += ape_of(r, &p);
    a->anchored++;
  }
  m->sibling[c] = keep;
}

int grape_model_crossval(const grape_dataset_t* d, const grape_train_opts_t* o, grape_cv_t* out) {
  grape_train_opts_t k;
  int err = cv_begin(d, o, 2, &k, out);
  if (err < 0)
    return err;
  FILE* dump = k.cv_dump;
  for (int gi = 0; gi < out->ngpu; gi++) {
    sel_t s = {.skip = out->gpu[gi], .transfer_only = !has_sibling(d, out->gpu[gi], &k),
               .o = &k};
    grape_model_t* m;
    if ((err = grape__train_sel(d, &s, &m)) < 0)
      return err;
    out->level = m->level;
    for (size_t i = 0; i < d->n; i++) {
      const row_t* r = &d->rows[i];
      if (strcmp(r->gpu->name, out->gpu[gi]) != 0 || r->group < 0 || r->group >= NGROUP)
        continue;
      grape_cv_cell_t* a = &out->cell[gi][r->group];
      for (int me = 0; me < GRAPE_METHOD_COUNT; me++) {
        double p = grape__predict(m, me, &r->p, r->gpu);
        a->ape[me] += fabs(p - r->lat) / r->lat;
        a->sum_pred[me] += p;
      }
      grape_prediction_t pf, pl;
      grape__predict_full(m, &r->p, r->gpu, &pf);
      grape__predict_full(m, &r->pl, r->gpu, &pl);
      a->covered += covers(r, &pf);
      a->cover_launch += covers(r, &pl);
      a->ape_launch += ape_of(r, &pl);
      if (r->p.has_dims)
        add_anchored(a, m, r);
      if (dump != NULL)
        fprintf(dump, "%s,%d,%g,%g,%g,%g,%g,%g,%g,%g,%g\n", out->gpu[gi], r->group, r->lat,
                grape__predict(m, GRAPE_METHOD_ROOFLINE, &r->p, r->gpu),
                grape__predict(m, GRAPE_METHOD_LI, &r->p, r->gpu),
                grape__predict(m, GRAPE_METHOD_GRAPE, &r->p, r->gpu), r->p.flops, r->p.kred,
                r->p.blocks, r->p.tile_m * r->p.tile_n, r->p.variant);
      a->sum_meas += r->lat;
      a->n++;
    }
    grape_model_free(m);
  }
  return 0;
}

/* The cell of r's GPU (listed in out) and group. */
static grape_cv_cell_t* cell_of(grape_cv_t* out, const row_t* r) {
  int gi = 0;
  while (gi < out->ngpu && strcmp(out->gpu[gi], r->gpu->name) != 0)
    gi++;
  return &out->cell[gi][r->group];
}

/* Adds r, with op dims, as m serves it (into *pf) and as its transfer
 * regime alone predicts it, to cell a. */
static void add_served(grape_cv_cell_t* a, const grape_model_t* m, const row_t* r,
                       grape_prediction_t* pf) {
  grape__predict_full(m, &r->p, r->gpu, pf);
  double t0 = grape__predict(m, GRAPE_METHOD_GRAPE, &r->p, r->gpu);
  a->ape[GRAPE_METHOD_GRAPE] += fabs(t0 - r->lat) / r->lat;
  a->ape_known += ape_of(r, pf);
  int in = covers(r, pf);
  a->covered += in;
  a->cover_known += in && pf->regime == GRAPE_REGIME_KNOWN;
  a->cover_extrapolated += in && pf->regime == GRAPE_REGIME_KNOWN_EXTRAPOLATED;
  a->known += pf->regime != GRAPE_REGIME_TRANSFER;
  a->extrapolated += pf->regime == GRAPE_REGIME_KNOWN_EXTRAPOLATED;
  a->n++;
}

/* The least alignment (grape__align) over r's dims, the batch of GEMMs
 * and convolutions left out; 0 without op dims. */
static double row_align(const row_t* r) {
  if (!r->p.has_dims)
    return 0;
  int c = (int)r->p.cls;
  double a = 128;
  for (int i = c == GRAPE_KC_GEMM || c == GRAPE_KC_CONV; i < 4; i++)
    if (r->p.shape[i] >= 1)
      a = fmin(a, grape__align(r->p.shape[i]));
  return a;
}

/* Held-out shapes (by_family 0) or shape families (1): each fold of them
 * left out of a fit on the rest, on every GPU at once. */
static int cv_folds(const grape_dataset_t* d, int folds, int by_family,
                    const grape_train_opts_t* o, grape_cv_t* out) {
  if (folds < 2)
    return -EINVAL;
  grape_train_opts_t k;
  int err = cv_begin(d, o, 1, &k, out);
  if (err < 0)
    return err;
  out->folds = folds;
  out->families = by_family;
  for (int f = 0; f < folds; f++) {
    sel_t s = {.folds = folds, .fold = f, .by_family = by_family, .o = &k};
    grape_model_t* m;
    if ((err = grape__train_sel(d, &s, &m)) < 0)
      return err;
    out->level = m->level;
    for (size_t i = 0; i < d->n; i++) {
      const row_t* r = &d->rows[i];
      if (!r->p.has_dims || grape__fold_key(r, by_family) % (uint32_t)folds != (uint32_t)f ||
          r->group < 0 || r->group >= NGROUP)
        continue;
      grape_cv_cell_t* a = cell_of(out, r);
      grape_prediction_t pf, pl;
      add_served(a, m, r, &pf);
      grape__predict_full(m, &r->pl, r->gpu, &pl);
      a->ape_launch += ape_of(r, &pl);
      a->cover_launch += covers(r, &pl);
      if (k.cv_dump != NULL) {
        double lo, hi, sv = served(r, &pf, &lo, &hi);
        fprintf(k.cv_dump, "%s,%d,%g,%g,%g,%g,%g,%g,%g,%d,%g,%g,%d,%g,%g,%g,%g\n", r->gpu->name,
                r->group, r->lat, grape__predict(m, GRAPE_METHOD_ROOFLINE, &r->p, r->gpu),
                grape__predict(m, GRAPE_METHOD_LI, &r->p, r->gpu),
                grape__predict(m, GRAPE_METHOD_GRAPE, &r->p, r->gpu), sv,
                pf.has_interval ? lo : 0, pf.has_interval ? hi : INFINITY, (int)pf.regime,
                pf.distance, row_align(r), f, r->p.shape[0], r->p.shape[1], r->p.shape[2],
                r->p.shape[3]);
      }
    }
    grape_model_free(m);
  }
  return 0;
}

int grape_model_crossval_shapes(const grape_dataset_t* d, int folds, const grape_train_opts_t* o,
                                grape_cv_t* out) {
  return cv_folds(d, folds, 0, o, out);
}

int grape_model_crossval_families(const grape_dataset_t* d, int folds,
                                  const grape_train_opts_t* o, grape_cv_t* out) {
  return cv_folds(d, folds, 1, o, out);
}

int grape_model_crossval_extrapolate(const grape_dataset_t* d, double q, int held_out_gpus,
                                     const grape_train_opts_t* o, grape_cv_t* out) {
  if (!(q > 0 && q < 1))
    return -EINVAL;
  grape_train_opts_t k;
  int err = cv_begin(d, o, held_out_gpus ? 2 : 1, &k, out);
  if (err < 0)
    return err;
  double thr[NGROUP];
  if ((err = grape__size_quantiles(d, NULL, q, thr)) < 0)
    return err;
  out->split_q = q;
  out->extrapolate = held_out_gpus ? 2 : 1;
  /* Known GPUs: one fit on the small rows of every GPU. Held-out GPUs: a
   * fit per GPU on the small rows of the others (transfer regime only). */
  int nfit = held_out_gpus ? out->ngpu : 1;
  for (int f = 0; f < nfit; f++) {
    sel_t s = {.size_max = thr, .o = &k};
    if (held_out_gpus) {
      s.skip = out->gpu[f];
      s.transfer_only = !has_sibling(d, out->gpu[f], &k);
    }
    grape_model_t* m;
    if ((err = grape__train_sel(d, &s, &m)) < 0)
      return err;
    out->level = m->level;
    for (size_t i = 0; i < d->n; i++) {
      const row_t* r = &d->rows[i];
      if (!r->p.has_dims || r->group < 0 || r->group >= NGROUP || grape__row_size(r) <= thr[r->group] ||
          (held_out_gpus && strcmp(r->gpu->name, out->gpu[f]) != 0))
        continue;
      grape_prediction_t pf;
      add_served(cell_of(out, r), m, r, &pf);
      if (held_out_gpus)
        add_anchored(cell_of(out, r), m, r);
      if (k.cv_dump != NULL)
        fprintf(k.cv_dump, "%s,%d,%g,%g,%g,%g,%g,%g,%g,%d,%g,%g,%g\n", r->gpu->name, r->group,
                r->lat, grape__predict(m, GRAPE_METHOD_ROOFLINE, &r->p, r->gpu),
                grape__predict(m, GRAPE_METHOD_LI, &r->p, r->gpu),
                grape__predict(m, GRAPE_METHOD_GRAPE, &r->p, r->gpu), pf.harness_ms,
                pf.harness_lo_ms, pf.harness_hi_ms, (int)pf.regime, grape__row_size(r), thr[r->group],
                pf.distance);
    }
    grape_model_free(m);
  }
  return 0;
}
