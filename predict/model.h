/* Models (model.c) and their training (train.c): internal part. */
#ifndef GRAPE_PREDICT_MODEL_H
#define GRAPE_PREDICT_MODEL_H

#include "grape/predict.h"
#include "predict/kernel.h"

#include "predict/boost.h"

#define GRAPE__NFEAT 24     /* linear features of grape's model, x[0] = 1 */
#define GRAPE__NTF 19       /* tree features of grape's model */
#define GRAPE__MAXTREES 200

struct grape_model_s {
  double roof[GRAPE_KC_COUNT][2];         /* t0 ms, scale of max(Tc, Tm) */
  double li[GRAPE_KC_COUNT][3];           /* c0 ms, c1 x Tc, c2 x Tm */
  double w[GRAPE_KC_COUNT][GRAPE__NFEAT]; /* log-space weights, with dims */
  double wl[GRAPE_KC_COUNT][GRAPE__NFEAT];/* log-space weights, launch only */
  /* grape's linear-time form, used instead of w when glin[c][0] is not 0:
   * {form + 1, c0, c1, c2}, t = c0 + c1 v1 + c2 v2 with v of
   * grape__lin_basis(form), fitted for relative error. */
  double glin[GRAPE_KC_COUNT][4];
  /* Where the regression w may go: log(its time / the roofline model's)
   * stays within the 0.5th..99.5th percentile of its training rows; lo ==
   * hi (0 0) for none. A fit on few rows must not extrapolate to 100x. */
  double range[GRAPE_KC_COUNT][2];
  double rows[GRAPE_KC_COUNT];            /* training rows of each class */
  double floor_ms[GRAPE_KC_COUNT];        /* launch-and-timing floor of an op */
  double floor_p;                         /* t = (floor^p + work^p)^(1/p) */
  int ntrees[GRAPE_KC_COUNT];             /* boosted trees on the residual */
  grape__tree_t trees[GRAPE_KC_COUNT][GRAPE__MAXTREES];
  double gap_eager_us;                    /* per kernel launched alone */
  double gap_graph_us;                    /* per kernel node in a graph */
  double graph_launch_us;                 /* per graph launch */
};

/* Roofline terms of a kernel on a GPU, in milliseconds. */
typedef struct grape__roof_s {
  double tc;      /* FLOPs / peak */
  double tm;      /* bytes / DRAM bandwidth */
  double tre;     /* the share of tm a second pass re-reads from DRAM, not L2 */
  double tw;      /* waves / clock (MHz): a fixed cost per wave */
} grape__roof_t;

/* Writes grape's features of p on g: linear ones to x[GRAPE__NFEAT], tree
 * ones to xt[GRAPE__NTF] (unless NULL); launch_only drops those that need op
 * dims. Also returns the roofline terms in *r. */
void grape__features(const grape__kprep_t* p, const grape_gpu_spec_t* g, int launch_only,
                     double* x, double* xt, grape__roof_t* r);
/* The basis (1, v1, v2) of linear-time form `form`: 0 (1, Tc, Tm), Li et
 * al.'s; 1 (1, max(Tc, Tm), 0), the roofline's; 2 (1, Tm, Tm re-read from
 * DRAM); 3 (1, Tm, waves / clock). */
void grape__lin_basis(int form, const grape__roof_t* r, double v[3]);
/* Stacking: x[8], x[9] = log of the Li and roofline predictions of m. */
void grape__stack(const grape_model_t* m, int c, const grape__roof_t* r, double* x);
double grape__predict(const grape_model_t* m, grape_method_t method, const grape__kprep_t* p,
                      const grape_gpu_spec_t* g);

#endif
