/* Model fitting: the fit of all three models in both of grape's regimes,
 * their intervals and their behaviour beyond the training rows, on a data
 * set (dataset.c); cross-validation (crossval.c) calls the same fit. The
 * transfer regime, the harness and the extrapolation forms are fitted
 * here; the known regime's trees in known_fit.c, and intervals are turned
 * from residuals into bounds in interval_fit.c.
 *
 * DESIGN: the transfer regime's fits are closed form: weighted least squares with a
 * small ridge term on standardised features (lsq.c); grape's regression
 * adds a few rounds of iteratively reweighted least squares towards least
 * relative error. An inner leave-one-GPU-out picks each class's form and calibrates its
 * interval. The known regime fits boosted trees (boost.c) per (GPU, class)
 * on the residual of the transfer regime, and calibrates its interval on
 * shapes held out of trees fitted on the rest. Everything is sequential in
 * row order, so training is deterministic to the byte. A class with fewer
 * than MIN_ROWS rows gets the transfer fit over all rows (the "other" class
 * has no training data of its own in the NeuSight set). The caller's
 * options (grape_train_opts_t) are resolved once per call and reach every
 * fit through the row selector; nothing here reads the environment.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grape/predict.h"
#include "predict/train.h"
#include "predict/known_fit.h"
#include "util/grow.h"
#include "predict/kernel.h"
#include "predict/lsq.h"
#include "predict/model.h"
#include "predict/gpu.h"
#include "predict/interval_fit.h"

_Static_assert(GRAPE__NFEAT <= GRAPE__LS_MAX, "grape's features fit the least-squares solver");

#define MIN_ROWS GRAPE__MIN_ROWS
#define IRLS_ROUNDS 4
#define ALLFEAT ((1u << GRAPE__NFEAT) - 1)
#define LEVEL GRAPE__LEVEL
#define KNOWN_TREES 60
#define KNOWN_RATE 0.3
#define KNOWN_FOLDS 4

/* ---- Options ---- */

void grape_train_opts_init(grape_train_opts_t* o) {
  *o = (grape_train_opts_t){.sz = sizeof(*o), .trees = KNOWN_TREES, .rate = KNOWN_RATE,
                            .folds = KNOWN_FOLDS, .floor_p = 0, .ridge = 1e-4, .select = 1,
                            .crit = 0, .unit_slope = 0, .xform = -1, .fade = -1,
                            .sibling = -1, .align = 1, .calib = 1, .floor_split = -1,
                            .family_level = -1, .height_split = -1};
}

/* o with each value out of its range taken as grape_train_opts_t documents
 * (the defaults for NULL); -EINVAL when o is too old a layout. */
int grape__train_resolve(const grape_train_opts_t* o, grape_train_opts_t* k) {
  grape_train_opts_init(k);
  if (o == NULL)
    return 0;
  if (o->sz < sizeof(*o))
    return -EINVAL;
  *k = *o;
  k->trees = o->trees < 0 ? 0 : o->trees > GRAPE__MAXTREES ? GRAPE__MAXTREES : o->trees;
  k->rate = o->rate > 0 && o->rate <= 1 ? o->rate : KNOWN_RATE;
  k->folds = o->folds >= 2 && o->folds <= 20 ? o->folds : KNOWN_FOLDS;
  k->floor_p = o->floor_p >= 0 && o->floor_p <= 64 ? o->floor_p : 0;
  k->ridge = o->ridge >= 0 && o->ridge <= 100 ? o->ridge : 1e-4;
  k->fade = o->fade == -2 || (o->fade >= 0 && o->fade <= 1000) ? o->fade : -1;
  k->sibling = o->sibling >= -1 && o->sibling <= 1 ? o->sibling : -1;
  k->align = o->align != 0;
  k->calib = o->calib >= 0 && o->calib <= 2 ? o->calib : 1;
  k->floor_split = o->floor_split >= -1 && o->floor_split <= 1 ? o->floor_split : -1;
  k->family_level = o->family_level >= -1 && o->family_level <= 1 ? o->family_level : -1;
  k->height_split = o->height_split >= -1 && o->height_split <= 1 ? o->height_split : -1;
  return 0;
}

/* ---- Fitting ---- */

/* The work part of a measured time: what is left above the row's floor, or
 * -1 when the row sits on its floor (its work is not observable). */
static double work_ms(const sel_t* s, size_t i, double lat) {
  double f = s->floor[i];
  if (s->p == 0)
    return lat;
  if (lat < 1.15 * f)
    return -1;
  return pow(pow(lat, s->p) - pow(f, s->p), 1 / s->p);
}


/* The linear-time basis (grape__lin_basis) of row r; shared by the
 * least-squares and the IRLS fits. */
static void lin_basis(const row_t* r, int form, double v[3]) {
  double x[GRAPE__NFEAT];
  grape__roof_t rf;
  grape__features(&r->p, r->gpu, 0, x, &rf);
  grape__lin_basis(form, &rf, v);
}

/* Li et al. / roofline: linear in (Tc, Tm) or max(Tc, Tm), relative error. */
static int fit_linear(const grape_dataset_t* d, const sel_t* s, int cls, int roof,
                      double* out) {
  grape__ls_t l;
  int n = roof ? 2 : 3;
  grape__ls_init(&l, n);
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!grape__selected(r, s, cls))
      continue;
    double v[3];
    lin_basis(r, roof, v);
    grape__ls_add(&l, v, r->lat, 1 / (r->lat * r->lat));
  }
  if (l.sw == 0)
    return -ENODATA;
  return grape__ls_solve(&l, 1e-9, out);
}

/* A candidate form of grape's model: weights fitted on the features of
 * `fit` (bit j = x[j]), plus unit weights on those of `fixed` (an offset:
 * fixed 0x200 with fit 0x1 is the roofline's prediction rescaled for
 * relative error). */
typedef struct cand_s {
  unsigned fit, fixed;
  int lin;    /* k > 0: grape's linear-time form k - 1 instead (grape__lin_basis) */
} cand_t;

/* grape's linear-time form `form` (grape__lin_basis), fitted for least
 * absolute relative error (per-kernel MAPE) by IRLS rather than least
 * squares. */
static int fit_lin_l1(const grape_dataset_t* d, const sel_t* s, int cls, int form, double* g) {
  /* The rows' (1, v1, v2, t), computed once: features are the cost. */
  size_t n = 0;
  double* v = malloc((d->n + 1) * 4 * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!grape__selected(r, s, cls))
      continue;
    double* o = &v[4 * n++];
    lin_basis(r, form, o);
    o[3] = r->lat;
  }
  int nb = form == 1 ? 2 : 3;
  double w[3] = {0, 0, 0};
  int err = n ? 0 : -ENODATA;
  for (int round = 0; round < 2 * IRLS_ROUNDS && err == 0; round++) {
    grape__ls_t l;
    grape__ls_init(&l, nb);
    for (size_t i = 0; i < n; i++) {
      const double* o = &v[4 * i];
      double y = o[3], wt = 1 / (y * y);
      if (round > 0) {
        double p = w[0] + w[1] * o[1] + w[2] * o[2];
        wt = 1 / (y * fmax(fabs(p - y), 1e-3 * y));
      }
      grape__ls_add(&l, o, y, wt);
    }
    double nw[3] = {0, 0, 0};
    if ((err = grape__ls_solve(&l, 1e-9, nw)) == 0)
      memcpy(w, nw, sizeof(w));
    else if (round > 0) {
      err = 0;    /* a singular reweighted system: the previous round's fit stands */
      break;
    }
  }
  free(v);
  if (err < 0)
    return err;
  g[0] = form + 1;
  g[1] = w[0];
  g[2] = w[1];
  g[3] = w[2];
  return 0;
}

/* The regression with its slope in log T fixed at 1: log t = log T +
 * w8 (log Li - log T) + w9 (log roofline - log T) + ..., the same for the
 * `_tn` copies; fitted so, the weight of log T is 1 - w8 - w9 (and of its
 * `_tn` copy -w18 - w19), which fit_grape restores. x[1] joins the offset. */
static void unit_slope(double* x, double* off) {
  *off += x[1];
  x[8] -= x[1];
  x[9] -= x[1];
  x[18] -= x[11];
  x[19] -= x[11];
  x[1] = x[11] = 0;
}

/* grape's model: least relative error through IRLS. */
static int fit_grape(const grape_dataset_t* d, const sel_t* s, int cls, int launch_only,
                     const grape_model_t* m, int c, cand_t cd, double* w) {
  int err = 0;
  memset(w, 0, GRAPE__NFEAT * sizeof(double));
  if (cd.fit == 0) {
    for (int j = 0; j < GRAPE__NFEAT; j++)
      w[j] = cd.fixed >> j & 1;
    return 0;
  }
  /* The full regression keeps a unit slope in log T: it extrapolates as
   * time proportional to work beyond the floor (docs/predictor.md). */
  int unit = s->o->unit_slope && (cd.fit & 0x302) == 0x302 && cd.fixed == 0;
  grape__ls_t* l = malloc(sizeof(*l));
  if (l == NULL)
    return -ENOMEM;
  for (int round = 0; round < IRLS_ROUNDS; round++) {
    grape__ls_init(l, GRAPE__NFEAT);
    for (size_t i = 0; i < d->n; i++) {
      const row_t* r = &d->rows[i];
      if (!grape__selected(r, s, cls))
        continue;
      double x[GRAPE__NFEAT];
      grape__roof_t rf;
      grape__features(launch_only ? &r->pl : &r->p, r->gpu, launch_only, x, &rf);
      grape__stack(m, c, &rf, x);
      double off = 0;
      for (int j = 0; j < GRAPE__NFEAT; j++) {
        if (cd.fixed >> j & 1)
          off += x[j];
        if (!(cd.fit >> j & 1))
          x[j] = 0;
      }
      if (unit)
        unit_slope(x, &off);
      double wk = work_ms(s, i, r->lat);
      if (wk <= 0)
        continue;
      double y = log(wk) - off, wt = 1;
      if (round > 0) {
        double pred = 0;
        for (int j = 0; j < GRAPE__NFEAT; j++)
          pred += w[j] * x[j];
        double rr = pred - y;
        /* IRLS weight of the loss |exp(rr) - 1|: relative error. */
        wt = fabs(expm1(rr)) / fmax(rr * rr, 1e-3);
      }
      grape__ls_add(l, x, y, wt);
    }
    /* A reweighting round can leave no weight (every row fitted exactly:
     * timings of equal times, as the simulated device gives) or a singular
     * system: the previous round's fit stands. */
    if (l->sw == 0) {
      err = round > 0 ? 0 : -ENODATA;
      break;
    }
    double nw[GRAPE__NFEAT];
    err = grape__ls_solve(l, s->o->ridge, nw);
    if (err < 0) {
      err = round > 0 ? 0 : err;
      break;
    }
    memcpy(w, nw, sizeof(nw));
  }
  if (unit) {
    /* Back to the features' own weights: log T's is what the stacked
     * predictions leave of the unit slope. */
    w[1] = 1 - w[8] - w[9];
    w[11] = -w[18] - w[19];
  }
  for (int j = 0; j < GRAPE__NFEAT; j++)
    if (cd.fixed >> j & 1)
      w[j] += 1;
  free(l);
  return err;
}

static size_t class_rows(const grape_dataset_t* d, const sel_t* s, int cls) {
  size_t n = 0;
  for (size_t i = 0; i < d->n; i++)
    n += grape__selected(&d->rows[i], s, cls);
  return n;
}




/* Floors: per (training GPU, class), the 1st percentile of its latencies,
 * written to s->floor per row; per class, the median over GPUs (what an
 * unseen GPU gets) to m->floor_ms. */
static int fit_floors(const grape_dataset_t* d, sel_t* s, grape_model_t* m) {
  const char* gpus[MAXGPU];
  int ngpu = grape__list_gpus(d, s, -1, gpus);
  ngpu = ngpu > MAXGPU ? MAXGPU : ngpu;
  double fl[MAXGPU][GRAPE_KC_COUNT];
  double* v = malloc((d->n + 1) * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  double all[MAXGPU * GRAPE_KC_COUNT];
  int nall = 0;
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    double med[MAXGPU];
    int nmed = 0;
    for (int g = 0; g < ngpu; g++) {
      size_t n = 0;
      for (size_t i = 0; i < d->n; i++)
        if (grape__selected(&d->rows[i], s, c) && strcmp(d->rows[i].gpu->name, gpus[g]) == 0)
          v[n++] = d->rows[i].lat;
      fl[g][c] = 0;
      if (n == 0)
        continue;
      qsort(v, n, sizeof(double), grape__cmp_double);
      fl[g][c] = v[n / 100];
      med[nmed++] = all[nall++] = fl[g][c];
    }
    qsort(med, (size_t)nmed, sizeof(double), grape__cmp_double);
    m->floor_ms[c] = nmed ? med[nmed / 2] : -1;
  }
  qsort(all, (size_t)nall, sizeof(double), grape__cmp_double);
  for (int c = 0; c < GRAPE_KC_COUNT; c++)
    if (m->floor_ms[c] < 0)
      m->floor_ms[c] = nall ? all[nall / 2] : 0;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    s->floor[i] = 0;
    for (int g = 0; g < ngpu; g++)
      if (strcmp(r->gpu->name, gpus[g]) == 0)
        s->floor[i] = fl[g][(int)r->p.cls];
  }
  m->floor_p = s->p;
  free(v);
  return 0;
}


/* ---- The timing harness ----
 * An op timed with events around one call of a framework (the NeuSight
 * rows) measures latency = max(floor, offset + kernel): the end event waits
 * for the host to finish its dispatch (the floor, 25-60 us), and the
 * kernel starts an offset after the start event. Per (GPU, class), the
 * floor is the 1st percentile of the latencies timed so; a line through
 * the rows between 1.3 and 4 floors (where the kernel just shows),
 * latency = c0 + slope x T (T: the
 * kernel's max(compute, memory) time, least relative squares), gives the
 * offset, c0 less the least kernel time, and the slope that prices work a
 * kernel hidden under the floor does. Rows timed as kernels (timing
 * "kernel") have no harness. */

#define KERNEL_CYCLES 2900  /* least kernel time, GPU clock cycles (docs/predictor.md) */
#define KERNEL_IV_LO -1.0   /* log quantiles of measured / hidden-kernel estimate: the 10th and */
#define KERNEL_IV_HI 0.85   /* 90th of the kernels under 10 us of the calibration trace */

/* The least kernel time on the GPU named gpu, ms. */
static double least_ms(const char* gpu) {
  const grape_gpu_spec_t* g = grape_gpu_find(gpu);
  return KERNEL_CYCLES / (g != NULL && g->clock_mhz > 0 ? g->clock_mhz * 1e3 : 1e6);
}

/* An upper bound of the harness offset of class c on gpu (floor F): no
 * kernel beats its roofline time T = max(FLOPs / peak, bytes / bandwidth),
 * so where it shows above the floor the offset is at most latency - T: the
 * 10th percentile of that over such rows
 * with op dims (a line through rows of ops of unlike efficiency, gelu's and
 * add's, puts its intercept above it); F - least without any. */
static double offset_bound(const grape_dataset_t* d, const sel_t* s, int c, const char* gpu,
                           double F) {
  double* v = malloc((d->n + 1) * sizeof(double));
  double b = fmax(F - least_ms(gpu), 0);
  if (v == NULL)
    return b;
  size_t n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!grape__selected(r, s, c) || r->kernel_time || !r->p.has_dims ||
        strcmp(r->gpu->name, gpu) != 0 || !(r->lat > 1.3 * F))
      continue;
    double x[GRAPE__NFEAT];
    grape__roof_t rf;
    grape__features(&r->p, r->gpu, 0, x, &rf);
    /* Peak FLOPs bound a convolution only by its direct FLOPs, which
     * Winograd and FFT need fewer of: its memory time alone. */
    v[n++] = r->lat - (c == GRAPE_KC_CONV ? rf.tm : fmax(rf.tc, rf.tm));
  }
  if (n >= 20) {
    qsort(v, n, sizeof(double), grape__cmp_double);
    b = fmin(b, fmax(v[n / 10], 0));
  }
  free(v);
  return b;
}

/* Per GPU gpus[g] and class: harness floor and offset (hf, ho; floor 0:
 * none), and the transfer regime's offset and hidden-kernel slopes in m. */
static int fit_harness(const grape_dataset_t* d, const sel_t* s, grape_model_t* m,
                       const char* const* gpus, int ngpu, double (*hf)[GRAPE_KC_COUNT],
                       double (*ho)[GRAPE_KC_COUNT]) {
  double* v = malloc((d->n + 1) * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  m->kernel_cycles = KERNEL_CYCLES;
  m->kernel_iv[0] = KERNEL_IV_LO;
  m->kernel_iv[1] = KERNEL_IV_HI;
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    double offs[MAXGPU], slopes[2][MAXGPU];
    int no = 0, ns[2] = {0, 0};
    for (int g = 0; g < ngpu; g++) {
      size_t n = 0;
      for (size_t i = 0; i < d->n; i++) {
        const row_t* r = &d->rows[i];
        if (grape__selected(r, s, c) && !r->kernel_time && strcmp(r->gpu->name, gpus[g]) == 0)
          v[n++] = r->lat;
      }
      hf[g][c] = ho[g][c] = 0;
      if (n < MIN_ROWS)
        continue;
      qsort(v, n, sizeof(double), grape__cmp_double);
      double F = hf[g][c] = v[n / 100], least = least_ms(gpus[g]);
      ho[g][c] = -1;
      for (int l = 0; l < 2; l++) {
        grape__ls_t ls;
        grape__ls_init(&ls, 2);
        size_t k = 0;
        for (size_t i = 0; i < d->n; i++) {
          const row_t* r = &d->rows[i];
          if (!grape__selected(r, s, c) || r->kernel_time || strcmp(r->gpu->name, gpus[g]) != 0 ||
              !(r->lat > 1.3 * F && r->lat < 4 * F) || (!l && !r->p.has_dims))
            continue;
          double x[GRAPE__NFEAT], b[2];
          grape__roof_t rf;
          grape__features(l ? &r->pl : &r->p, r->gpu, l, x, &rf);
          b[0] = 1;
          b[1] = exp(x[1]);
          grape__ls_add(&ls, b, r->lat, 1 / (r->lat * r->lat));
          k++;
        }
        double w[2];
        if (k < 20 || grape__ls_solve(&ls, 1e-9, w) < 0 || !(w[1] > 0))
          continue;
        slopes[l][ns[l]++] = w[1];
        if (!l)
          offs[no++] = ho[g][c] = fmin(fmax(w[0] - least, 0), offset_bound(d, s, c, gpus[g], F));
      }
    }
    qsort(offs, (size_t)no, sizeof(double), grape__cmp_double);
    m->hoff[c] = no ? offs[no / 2] : 0;
    for (int l = 0; l < 2; l++) {
      qsort(slopes[l], (size_t)ns[l], sizeof(double), grape__cmp_double);
      m->kslope[c][l] = ns[l] ? slopes[l][ns[l] / 2] : 1;
    }
    for (int g = 0; g < ngpu; g++)
      if (ho[g][c] < 0)
        ho[g][c] = fmin(m->hoff[c], hf[g][c]);
  }
  /* A class without harness rows of its own ("other") takes the median of
   * the others' offsets and slopes. */
  double mo[GRAPE_KC_COUNT], ms[2][GRAPE_KC_COUNT];
  int nm = 0;
  for (int c = 0; c < GRAPE_KC_COUNT; c++)
    if (m->rows[c] >= MIN_ROWS) {
      mo[nm] = m->hoff[c];
      ms[0][nm] = m->kslope[c][0];
      ms[1][nm++] = m->kslope[c][1];
    }
  if (nm > 0) {
    qsort(mo, (size_t)nm, sizeof(double), grape__cmp_double);
    qsort(ms[0], (size_t)nm, sizeof(double), grape__cmp_double);
    qsort(ms[1], (size_t)nm, sizeof(double), grape__cmp_double);
    for (int c = 0; c < GRAPE_KC_COUNT; c++)
      if (m->rows[c] < MIN_ROWS) {
        m->hoff[c] = mo[nm / 2];
        m->kslope[c][0] = ms[0][nm / 2];
        m->kslope[c][1] = ms[1][nm / 2];
      }
  }
  free(v);
  return 0;
}

/* ---- Model selection ---- */

/* Candidates for grape's linear part (see cand_t; bit j = x[j] of
 * grape__features and grape__stack). {0, 0x100} predicts exactly the Li et
 * al. model's time, {0, 0x200} the roofline's; {0, 0, k} is linear-time
 * form k - 1 fitted for relative error (0, 1: Li's and the roofline's
 * terms; 2: memory time plus its L2 re-read share; 3: memory time plus
 * waves / clock). Candidates tried and dropped, because the inner folds did not prefer
 * them, or their choice did worse on held-out GPUs: 0x301, 0x0ff, 0x3f1,
 * 0x303, 0x2f1. */
static const cand_t candidates[] = {
    {ALLFEAT, 0, 0}, {0, 0x100, 0}, {0, 0x200, 0}, {0, 0, 1}, {0, 0, 2}, {0, 0, 3}, {0, 0, 4}};
#define NCAND (sizeof(candidates) / sizeof(candidates[0]))
#define LAYERNORM_CAND 5    /* {0, 0, 3}: linear-time form 2 */
#define SOFTMAX_CAND 6      /* {0, 0, 4}: linear-time form 3 */

/* The candidate a class uses by design, or -1 (chosen by inner
 * cross-validation). Layer norm reads each row twice (statistics, then
 * normalising), so its time is the L2 re-read form's: on four GPUs in five
 * a floor-level inner choice missed it. Softmax's rows are too short to
 * stream at full bandwidth and cost a number of cycles per wave: the
 * inner choice took form 3 in every fold on all rows, but fitted on the
 * smaller half of the rows (floor-bound on the fast GPUs) it took the
 * regression, which does not extrapolate in waves (docs/predictor.md). */
static int fixed_form(int c) {
  return c == GRAPE_KC_LAYERNORM ? LAYERNORM_CAND : c == GRAPE_KC_SOFTMAX ? SOFTMAX_CAND : -1;
}

/* m->range[c]: the 0.5th and 99.5th percentile of log(regression's time /
 * roofline model's time) over the training rows (m->w[c], m->roof[c]
 * fitted). */
static int fit_range(const grape_dataset_t* d, const sel_t* s, int cls, int c, grape_model_t* m) {
  size_t n = 0;
  double* v = malloc((d->n + 1) * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  m->range[c][0] = m->range[c][1] = 0;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (grape__selected(r, s, cls))
      v[n++] = log(grape__predict(m, GRAPE_METHOD_GRAPE, &r->p, r->gpu) /
                   grape__predict(m, GRAPE_METHOD_ROOFLINE, &r->p, r->gpu));
  }
  if (n >= MIN_ROWS) {
    qsort(v, n, sizeof(double), grape__cmp_double);
    m->range[c][0] = v[n / 200];
    m->range[c][1] = v[n - 1 - n / 200];
  }
  free(v);
  return 0;
}

/* Fits candidate `cd` of class c (rows of class `cls`, -1 all) into m. */
static int fit_cand(const grape_dataset_t* d, const sel_t* s, int cls, int c, grape_model_t* m,
                    cand_t cd) {
  memset(m->glin[c], 0, sizeof(m->glin[c]));
  m->range[c][0] = m->range[c][1] = 0;
  if (cd.lin)
    return fit_lin_l1(d, s, cls, cd.lin - 1, m->glin[c]);
  int err = fit_grape(d, s, cls, 0, m, c, cd, m->w[c]);
  /* A class fitted on all rows (too few of its own) has none to bound by. */
  return err < 0 || cls < 0 ? err : fit_range(d, s, cls, c, m);
}

/* Picks the candidate with the lowest per-kernel MAPE in an inner
 * leave-one-GPU-out over the GPUs `s` selects, so that the choice never sees
 * a held-out GPU; `only` >= 0 takes that candidate without a choice. The
 * same folds calibrate the transfer regime's intervals (grape__level_interval):
 * the chosen candidate's held-out residuals give iv, those of the
 * launch-only fit ivl (both uncalibrated with fewer than two GPUs).
 * @return the candidate's index, or a negative errno. */
static int select_cand(const grape_dataset_t* d, const sel_t* s, int c, int only, double* iv,
                       double* ivl, double* rho) {
  const char* gpus[MAXGPU];
  int ngpu = grape__list_gpus(d, s, c, gpus);
  ngpu = ngpu > MAXGPU ? MAXGPU : ngpu;
  for (int j = 0; j < 2 * GRAPE__NIVB; j++)
    iv[j] = ivl[j] = j % 2 ? -1 : 1;
  if (ngpu < 2)
    return only >= 0 ? only : 0;
  /* With two GPUs an inner choice would rest on one held-out GPU: the
   * regression is kept, but the intervals are still calibrated. */
  size_t first = only >= 0 ? (size_t)only : 0;
  size_t last = only >= 0 ? (size_t)only + 1 : ngpu < 3 ? 1 : NCAND;
  size_t nrows = class_rows(d, s, c) + 1;
  grape_model_t* tm = calloc(1, sizeof(*tm));
  grape__resid_t cur, best_r, lr;
  int pick = (int)first, err = 0;
  if ((grape__resid_alloc(&cur, nrows) | grape__resid_alloc(&best_r, nrows) |
       grape__resid_alloc(&lr, nrows)) != 0 ||
      tm == NULL) {
    err = -ENOMEM;
    goto done;
  }
  double best = INFINITY;
  double score[NCAND] = {0};
  for (size_t k = first; k < last; k++) {
    double ape = 0, n = 0, worst = 0;
    cur.n = 0;
    for (int h = 0; h < ngpu; h++) {
      double fape = 0, fn = 0;
      sel_t in = *s;
      in.skip2 = gpus[h];
      if ((err = fit_linear(d, &in, c, 1, tm->roof[c])) < 0 ||
          (err = fit_linear(d, &in, c, 0, tm->li[c])) < 0 ||
          (err = fit_cand(d, &in, c, c, tm, candidates[k])) < 0 ||
          (k == first && (err = fit_grape(d, &in, c, 1, tm, c, candidates[0], tm->wl[c])) < 0))
        goto done;
      for (size_t i = 0; i < d->n; i++) {
        const row_t* r = &d->rows[i];
        if (!grape__selected(r, s, c) || strcmp(r->gpu->name, gpus[h]) != 0)
          continue;
        double t = grape__predict(tm, GRAPE_METHOD_GRAPE, &r->p, r->gpu);
        fape += fabs(t - r->lat) / r->lat;
        fn++;
        grape__resid_add(&cur, log(r->lat / t), &r->p, (uint32_t)h);
        if (k == first)
          grape__resid_add(&lr,
                           log(r->lat / grape__predict(tm, GRAPE_METHOD_GRAPE, &r->pl, r->gpu)),
                           &r->pl, (uint32_t)h);
      }
      ape += fape;
      n += fn;
      if (fn > 0 && fape / fn > worst)
        worst = fape / fn;
    }
    score[k] = n == 0 ? INFINITY : s->o->crit ? worst : ape / n;
    if (score[k] < best) {
      best = score[k];
      pick = (int)k;
      grape__resid_t t = best_r;
      best_r = cur;
      cur = t;
    }
  }
  /* With op dims, one interval per class (bin 1 falls back to it): for
   * `_tn` GEMMs alone, the shifts of inner folds that lack one of the two
   * Pascal GPUs (which the generation terms learn from) overstate a new
   * GPU's spread (nn.Linear 87.6% coverage against 83.4% pooled with the
   * other GEMMs). From the launch alone, nn.Linear's errors are spread far
   * wider than the batched GEMMs' (no K to tell them apart) and the bins
   * are needed (pooled: 63% and 86% coverage). */
  if ((err = grape__level_interval(&best_r, -1, iv)) < 0 ||
      (err = grape__level_share(best_r.v, best_r.key, best_r.n, rho)) < 0)
    goto done;
  for (int b = 0; b < GRAPE__NIVB; b++)
    if ((err = grape__level_interval(&lr, b, &ivl[2 * b])) < 0)
      goto done;
  if (s->o->log != NULL)
    for (size_t k = first; k < last; k++)
      fprintf(s->o->log, "grape: %s: inner MAPE of candidate {%#x, %#x, %d}: %.4f%s\n",
              grape_kclass_name(c), candidates[k].fit, candidates[k].fixed, candidates[k].lin,
              score[k], (int)k == pick ? " (chosen)" : "");
done:
  free(tm);
  grape__resid_free(&cur);
  grape__resid_free(&best_r);
  grape__resid_free(&lr);
  return err < 0 ? err : pick;
}


/* ---- Beyond the training range ----
 * Every fit records its span (the largest op sizes of its rows) and how it
 * behaves beyond it, calibrated on an inner extrapolation split of its own
 * rows: the rows up to the median op size of each group are fitted, the
 * larger ones predicted. The transfer regime chooses there the form it
 * moves to beyond its span (the in-range form, or a regression free or
 * with a unit slope in work), and the slopes by which its interval widens
 * with the distance; the known regime, per GPU and class, how fast its
 * trees' correction fades and the slopes of its own interval. */

#define EXTRAP_Q 0.75      /* the inner split: rows up to this quantile of op size are fitted */

/* The widening a unit of distance, per class, of the intervals of kernels
 * with op dims beyond the span: transfer regime here, known regime
 * (widen_known) in known_fit.c. The inner
 * split cannot calibrate it: its predicted rows lie at distances of 0.1-0.9,
 * where the error beyond the span grows fastest (at the outer 50% split, in
 * the floor-to-bandwidth transition, 2-4x faster than farther out), so its
 * slopes over-covered the outer splits' rows (92-99% for elementwise,
 * softmax and layer norm). The slope that holds 80% of the rows is instead
 * nearly the same at the outer 50% and 75% splits (docs/predictor.md), a
 * property of the class: these are the 75% split's (`grape train --cv
 * extrapolate`, GRAPE_CV_SPLIT=0.75), tested on the 50% split's rows. A
 * class whose in-range interval already holds more beyond the span than
 * within (elementwise, softmax and conv in the transfer regime; conv in the
 * known one) keeps it: no interval narrows with distance. Launch-only fits,
 * which no outer split measures, keep the inner split's slopes. */
static const double widen_transfer[GRAPE_KC_COUNT] = {0.015, 0, 0, 0.093, 0, 0};

/* Per class, whether a GPU with no rows of it takes the trees of a known
 * GPU of its architecture (grape__gpu_same_arch: the same compute
 * capability), on its own spec sheet. Leave-one-GPU-out and the
 * extrapolation splits onto left-out GPUs (`grape train --cv`, `--cv
 * extrapolate` print them) decide it where the training data holds such a
 * pair; the NeuSight training rows hold none (the P100, sm_60, and the P4,
 * sm_61, are two chips: with them as a pair it helped no class). So it is
 * decided on the half of NeuSight's held-out real-model rows that decides
 * (bench/predict/real_rows.py), whose one such GPU is the A100 80GB (the
 * A100-40GB's sm_80): unseen GPUs' MAPE with / without, bmm 16.5 -> 13.6,
 * linear 16.4 -> 15.5, elementwise 10.2 -> 4.5, softmax 12.6 -> 11.0,
 * layer norm 19.6 -> 13.1 (the scoring half: 17.8 -> 13.5, 15.8 -> 15.0,
 * 10.6 -> 4.5, 12.1 -> 10.1, 19.4 -> 14.6; docs/predictor.md). Conv, not
 * measured, stays off. */
static const int sibling_rule[GRAPE_KC_COUNT] = {1, 1, 1, 1, 0, 0};


/* The lower half of an inner extrapolation split: s restricted to the rows
 * up to the median op size of their group (thr holds the sizes). */
static int inner_split(const grape_dataset_t* d, const sel_t* s, double* thr, sel_t* lo) {
  int err = grape__size_quantiles(d, s, EXTRAP_Q, thr);
  *lo = *s;
  lo->size_max = thr;
  return err;
}


/* The transfer regime's time of r (launch: its launch alone) by m, with
 * the distance beyond m's span. */
static double transfer_time(const grape_model_t* m, const row_t* r, int launch, double* dist) {
  double x[GRAPE__NFEAT], t0;
  grape__roof_t rf;
  return grape__predict_transfer(m, launch ? &r->pl : &r->p, r->gpu, x, &rf, &t0, dist);
}

/* Per-kernel MAPE, over the upper rows of class c, of m's in-range form
 * (w NULL) or of the regression w. */
static double upper_mape(const grape_dataset_t* d, const sel_t* s, const sel_t* lo, int c,
                         const grape_model_t* m, const double* w) {
  double ape = 0, n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!grape__upper(r, s, lo, c))
      continue;
    double x[GRAPE__NFEAT];
    grape__roof_t rf;
    double t = grape__predict_x(m, GRAPE_METHOD_GRAPE, &r->p, r->gpu, x, &rf);
    if (w != NULL) {
      double v = 0;
      for (int j = 0; j < GRAPE__NFEAT; j++)
        v += w[j] * x[j];
      t = fmax(exp(fmin(fmax(v, -12), 14)), 1e-3);
    }
    ape += fabs(t - r->lat) / r->lat;
    n++;
  }
  return n > 0 ? ape / n : INFINITY;
}

/* Fits the regression (candidate 0) of class c on the rows s selects, with
 * its slope in log T free (unit 0) or 1, into w; m holds the class's Li and
 * roofline fits (stacked features). */
static int fit_regression(const grape_dataset_t* d, const sel_t* s, int c, const grape_model_t* m,
                          int unit, double* w) {
  grape_train_opts_t o = *s->o;
  o.unit_slope = unit;
  sel_t su = *s;
  su.o = &o;
  return fit_grape(d, &su, c, 0, m, c, candidates[0], w);
}

/* The transfer regime beyond its span, per class with MIN_ROWS rows: the
 * spans of m (fitted on the rows s selects, class c's candidate ci[c]), the
 * extrapolation form and the widening slopes, from an inner split whose
 * lower half is fitted into *mlo (the same forms; the known regime's
 * calibration reuses it, with the split in lo). */
static int fit_extrap_transfer(const grape_dataset_t* d, const sel_t* s, grape_model_t* m,
                               const int* ci, sel_t* lo, grape_model_t** mlo) {
  int err;
  *mlo = malloc(sizeof(**mlo));
  if (*mlo == NULL)
    return -ENOMEM;
  grape_model_t* ml = *mlo;
  memcpy(ml, m, sizeof(*ml));
  ml->known = NULL;
  ml->nknown = 0;
  grape__beyond_t b = {0};
  double* wr = malloc(2 * GRAPE__NFEAT * sizeof(double));
  if (wr == NULL || grape__beyond_alloc(&b, d->n) < 0) {
    err = -ENOMEM;
    goto done;
  }
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    for (int l = 0; l < 2; l++) {
      grape__span_of(d, s, c, l, NULL, &m->xt[c][l]);
      grape__span_of(d, lo, c, l, NULL, &ml->xt[c][l]);
    }
    if (m->rows[c] < MIN_ROWS)
      continue;
    /* The in-range form and the two regressions, fitted on the lower half,
     * predict the upper half: the best is the form beyond the span. */
    if ((err = fit_linear(d, lo, c, 1, ml->roof[c])) < 0 ||
        (err = fit_linear(d, lo, c, 0, ml->li[c])) < 0 ||
        (err = fit_cand(d, lo, c, c, ml, candidates[ci[c]])) < 0 ||
        (err = fit_grape(d, lo, c, 1, ml, c, candidates[0], ml->wl[c])) < 0 ||
        (err = fit_regression(d, lo, c, ml, 1, wr)) < 0)
      goto done;
    double e[2] = {upper_mape(d, s, lo, c, ml, NULL), upper_mape(d, s, lo, c, ml, wr)};
    /* Beyond the span, time grows as work: the classes whose form is
     * chosen (a regression whose slope in work was fitted, or a linear form
     * fitted where the floor hides the slope) move to the unit-slope
     * regression; those with a linear-time form by design keep it. (Letting
     * this inner split choose picked the form the outer extrapolation split
     * liked less for two classes of six: e[] is logged for that.) */
    int best = s->o->xform >= 0 ? s->o->xform : fixed_form(c) < 0;
    m->xform[c] = ml->xform[c] = best;
    if (best) {
      memcpy(ml->xw[c], wr, sizeof(ml->xw[c]));
      if ((err = fit_regression(d, s, c, m, 1, m->xw[c])) < 0)
        goto done;
    }
    if (s->o->log != NULL)
      fprintf(s->o->log, "grape: %s: beyond the span, MAPE of the in-range form %.4f, "
              "unit-slope regression %.4f: %s\n", grape_kclass_name(c), e[0], e[1],
              best ? "unit slope" : "in-range form");
    /* The widening: with op dims the class's (widen_transfer); from the
     * launch alone, how the upper half's residuals, less each GPU's level
     * (an unseen GPU's level is already in the interval), outgrow the
     * lower half's own spread. */
    m->xt[c][0].widen[0] = ml->xt[c][0].widen[0] = -widen_transfer[c];
    m->xt[c][0].widen[1] = ml->xt[c][0].widen[1] = widen_transfer[c];
    {
      const int l = 1;
      const char* gpus[MAXGPU];
      int ngpu = grape__list_gpus(d, lo, c, gpus);
      ngpu = ngpu > MAXGPU ? MAXGPU : ngpu;
      double shift[MAXGPU], spread[2] = {0, 0};
      double* v = b.r;   /* scratch, before b fills */
      size_t nall = 0;
      for (int g = 0; g < ngpu; g++) {
        size_t n = 0;
        for (size_t i = 0; i < d->n; i++) {
          const row_t* r = &d->rows[i];
          if (grape__selected(r, lo, c) && (l || r->p.has_dims) && strcmp(r->gpu->name, gpus[g]) == 0) {
            double dist;
            v[nall + n++] = log(r->lat / transfer_time(ml, r, l, &dist));
          }
        }
        shift[g] = 0;
        if (n > 0) {
          qsort(v + nall, n, sizeof(double), grape__cmp_double);
          shift[g] = v[nall + n / 2];
          for (size_t i = 0; i < n; i++)
            v[nall + i] -= shift[g];
        }
        nall += n;
      }
      if (nall >= MIN_ROWS) {
        double q[2];
        grape__quantiles(v, nall, q);
        spread[0] = q[0];
        spread[1] = q[1];
      }
      b.n = 0;
      for (size_t i = 0; i < d->n; i++) {
        const row_t* r = &d->rows[i];
        if (!grape__upper(r, s, lo, c))
          continue;
        int g = 0;
        while (g < ngpu && strcmp(gpus[g], r->gpu->name) != 0)
          g++;
        double dist, t = transfer_time(ml, r, l, &dist);
        grape__beyond_add(&b, log(r->lat / t) - (g < ngpu ? shift[g] : 0), spread[0], spread[1], dist);
      }
      if ((err = grape__widen_slopes(&b, m->xt[c][l].widen)) < 0)
        goto done;
      if (s->o->log != NULL)
        fprintf(s->o->log, "grape: %s%s: transfer regime beyond its rows (%zu): widening %.4f a "
                "unit of distance\n", grape_kclass_name(c), l ? " (launch only)" : "", b.n,
                m->xt[c][l].widen[1]);
      memcpy(ml->xt[c][l].widen, m->xt[c][l].widen, sizeof(m->xt[c][l].widen));
    }
  }
  err = 0;
done:
  free(wr);
  grape__beyond_free(&b);
  return err;
}

int grape__train_sel(const grape_dataset_t* d, sel_t* s, grape_model_t** out) {
  grape_model_t* ml = NULL;   /* the inner extrapolation split's lower-half fit */
  grape_model_t* m = calloc(1, sizeof(*m));
  if (m == NULL)
    return -ENOMEM;
  int err = -ENOMEM;
  s->p = s->o->floor_p;
  s->floor = malloc((d->n + 1) * sizeof(double));
  if (s->floor == NULL)
    goto fail_fit;
  if ((err = fit_floors(d, s, m)) < 0)
    goto fail_fit;
  /* Launch gaps: typical CUDA 12 costs of cudaLaunchKernel on the host (~4 us
   * per kernel), of a graph kernel node (~1 us) and of cudaGraphLaunch (~5 us). */
  m->gap_eager_us = 4;
  m->gap_graph_us = 1;
  m->graph_launch_us = 5;
  m->level = LEVEL;
  int ci[GRAPE_KC_COUNT] = {0};
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    size_t n = class_rows(d, s, c);
    int fc = n >= MIN_ROWS ? c : -1;
    m->rows[c] = (double)n;
    for (int j = 0; j < 2 * GRAPE__NIVB; j++)
      m->iv[c][j] = m->ivl[c][j] = j % 2 ? -1 : 1;
    int only = fixed_form(c) >= 0 ? fixed_form(c) : s->o->select ? -1 : 0;
    m->sibling[c] = s->o->sibling < 0 ? sibling_rule[c] : s->o->sibling;
    if (fc >= 0 && (ci[c] = select_cand(d, s, c, only, m->iv[c], m->ivl[c], &m->rho[c][0])) < 0) {
      err = ci[c];
      goto fail_fit;
    }
    if ((err = fit_linear(d, s, fc, 1, m->roof[c])) < 0 ||
        (err = fit_linear(d, s, fc, 0, m->li[c])) < 0 ||
        (err = fit_cand(d, s, fc, c, m, candidates[ci[c]])) < 0 ||
        (err = fit_grape(d, s, fc, 1, m, c, candidates[0], m->wl[c])) < 0)
      goto fail_fit;
  }
  /* A class fitted on all rows (none of its own: "other") gets the widest
   * interval of the others: its kernels could be any of them. */
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    if (m->rows[c] >= MIN_ROWS)
      continue;
    for (int o = 0; o < GRAPE_KC_COUNT; o++) {
      if (m->rows[o] < MIN_ROWS)
        continue;
      m->rho[c][0] = fmax(m->rho[c][0], m->rho[o][0]);
      double* a[2] = {m->iv[c], m->ivl[c]};
      const double* b[2] = {m->iv[o], m->ivl[o]};  /* bin 0 of each */
      for (int j = 0; j < 2; j++) {
        if (!(b[j][0] <= b[j][1]))
          continue;
        int had = a[j][0] <= a[j][1];
        a[j][0] = had ? fmin(a[j][0], b[j][0]) : b[j][0];
        a[j][1] = had ? fmax(a[j][1], b[j][1]) : b[j][1];
      }
    }
  }
  /* Beyond the training rows: an inner extrapolation split calibrates the
   * transfer regime, and with it (ml, its fit on the lower half) the known
   * regime. */
  sel_t lo;
  double thr[GRAPE_CV_GROUPS];
  if ((err = inner_split(d, s, thr, &lo)) < 0 ||
      (err = fit_extrap_transfer(d, s, m, ci, &lo, &ml)) < 0)
    goto fail_fit;
  {
    /* The harness of each GPU, known to the model or not (before the
     * known regime, whose interval bins go by its floor). */
    const char* gpus[MAXGPU];
    int ngpu = grape__list_gpus(d, s, -1, gpus);
    ngpu = ngpu > MAXGPU ? MAXGPU : ngpu;
    double hf[MAXGPU][GRAPE_KC_COUNT], ho[MAXGPU][GRAPE_KC_COUNT];
    if ((err = fit_harness(d, s, m, gpus, ngpu, hf, ho)) < 0)
      goto fail_fit;
    if (!s->transfer_only && (err = grape__fit_known(d, s, &lo, ml, (const double(*)[GRAPE_KC_COUNT])hf, m)) < 0)
      goto fail_fit;
    for (int i = 0; i < m->nknown; i++)
      for (int g = 0; g < ngpu; g++)
        if (strcmp(m->known[i].name, gpus[g]) == 0) {
          memcpy(m->known[i].hfloor, hf[g], sizeof(hf[g]));
          memcpy(m->known[i].hoff, ho[g], sizeof(ho[g]));
        }
  }
  free(ml);
  free(s->floor);
  *out = m;
  return 0;
fail_fit:
  free(ml);
  free(s->floor);
  grape_model_free(m);
  return err;
}

int grape_model_train_opts(const grape_dataset_t* d, const grape_train_opts_t* o,
                           grape_model_t** out) {
  grape_train_opts_t k;
  int err = grape__train_resolve(o, &k);
  if (err < 0)
    return err;
  sel_t s = {.o = &k};
  return grape__train_sel(d, &s, out);
}

int grape_model_train(const grape_dataset_t* d, grape_model_t** out) {
  return grape_model_train_opts(d, NULL, out);
}
