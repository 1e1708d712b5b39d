/* Models (model.c) and their training (train.c): internal part. */
#ifndef GRAPE_PREDICT_MODEL_H
#define GRAPE_PREDICT_MODEL_H

#include "grape/predict.h"
#include "predict/kernel.h"

#include "predict/boost.h"

#define GRAPE__NFEAT 24     /* linear features of grape's model, x[0] = 1 */
#define GRAPE__NGF 29       /* features of the per-GPU trees (grape__gpu_features) */
/* The trees' alignment features: the last GRAPE__NALIGN of them (appended,
 * so a tree of an older model, which splits none of them, reads alike). */
#define GRAPE__NALIGN 5
#define GRAPE__MAXTREES 2000
/* Intervals are calibrated per class and, within a class, per bin: 0 for
 * most kernels, 1 for "_tn" GEMMs (nn.Linear's cuBLAS kernels, whose errors
 * differ from the batched GEMMs' in both regimes). Each bin holds {lo, hi},
 * quantiles of log(measured / predicted); lo > hi: not calibrated (bin 1
 * then falls back to bin 0). */
#define GRAPE__NIVB 2
/* The known regime's intervals per (GPU, class): GRAPE__NIVB for GEMM;
 * outside it, by a kernel's predicted latency against the GPU's harness
 * floor (grape__known_bin): 0 under the floor's split, 1 above it, 2 from
 * the fit's high_ms on, where the kernel stands well clear of the floor. */
#define GRAPE__NKIVB 3

/* What a fit's training range is measured on (grape__span_values): the op's
 * shape (4), elements, FLOPs and bytes, all sizes that do not depend on the
 * GPU (not its blocks: the same op runs other tiles, so other grids, on
 * another GPU). A fit's span holds the largest value of each over its
 * training rows, per interval bin (nn.Linear's GEMMs apart: they reach
 * sizes the batched ones do not); a query's distance from it is the
 * largest log ratio by which it exceeds one of them (0 inside). */
#define GRAPE__NSPAN 7

/* How a fit behaves beyond its span, calibrated on an extrapolation split
 * of its own training rows (train.c): at distance d the interval is
 * [lo + widen[0] d, hi + widen[1] d] (widen[0] <= 0 <= widen[1]), and a
 * correction learned in range fades as exp(-fade d) (the known regime's
 * trees; 0: kept whole). */
typedef struct grape__extrap_s {
  double span[GRAPE__NIVB][GRAPE__NSPAN]; /* largest training value per interval bin;
                                             0: not measured (an empty bin takes bin 0's) */
  double widen[2];                        /* interval slopes per unit of distance */
  double fade;                            /* the trees' correction fades as exp(-fade d) */
} grape__extrap_t;

/* The learned regime of one class on one GPU of the training data: boosted
 * trees on log(measured / transfer prediction) of its rows, and the
 * interval of log(measured / prediction) on shapes held out of them. */
typedef struct grape__known_class_s {
  double rows;                            /* training rows */
  int ntrees;                             /* 0: this class uses the transfer regime */
  grape__tree_t* trees;
  double iv[2 * GRAPE__NKIVB];            /* interval per bin (grape__known_bin) */
  /* The latency (ms, harness included) from which a kernel above the
   * harness's floor takes bin 2: the median of the calibration rows above
   * the floor; 0: no such bin (the class's rule off, or GEMM). */
  double high_ms;
  grape__extrap_t x;                      /* beyond its training rows */
} grape__known_class_t;

/* Which fit of a known class serves a kernel: with its op dims, or from
 * the launch alone (what the shim knows). */
#define GRAPE__KNOWN_DIMS 0
#define GRAPE__KNOWN_LAUNCH 1

typedef struct grape__known_s {
  char name[128];                         /* the GPU's spec-table name */
  long cc;                                /* its compute capability (grape__gpu_cc) */
  grape__known_class_t c[GRAPE_KC_COUNT][2];  /* [class][GRAPE__KNOWN_*] */
  /* Its timing harness per class (grape__kernel_time): the floor of an op's
   * latency and the offset before the kernel starts, ms; floor 0: no rows
   * timed through a harness (the class's transfer values apply). */
  double hfloor[GRAPE_KC_COUNT], hoff[GRAPE_KC_COUNT];
} grape__known_t;

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
  /* The transfer regime's interval: quantiles of log(measured / predicted)
   * on GPUs left out of the fit, for kernels with op dims (iv) and without
   * (ivl). lo > hi: not calibrated (fewer than two training GPUs). */
  double iv[GRAPE_KC_COUNT][2 * GRAPE__NIVB];
  double ivl[GRAPE_KC_COUNT][2 * GRAPE__NIVB];
  /* Beyond the class's training rows (span over every GPU's), with op dims
   * and without: the intervals widen, and with op dims the prediction
   * moves from the in-range form to the extrapolation regression xw when
   * xform is 1 (chosen on an extrapolation split; 0: the in-range form
   * extrapolates best). */
  grape__extrap_t xt[GRAPE_KC_COUNT][2];  /* [class][GRAPE__KNOWN_*] */
  int xform[GRAPE_KC_COUNT];
  double xw[GRAPE_KC_COUNT][GRAPE__NFEAT];
  /* A GPU with no rows of a class takes the trees of a known GPU of its
   * architecture (grape__gpu_same_arch), evaluated on its own spec sheet,
   * where sibling[c] is 1 (decided per class, train.c's sibling_rule);
   * never across architectures. */
  int sibling[GRAPE_KC_COUNT];
  /* The share of a kernel's log error that is a level shared by every
   * kernel of the class on one GPU, per regime (0 transfer, 1 known), as
   * cross-validation measures it; the rest is independent per shape. A
   * path's interval combines its kernels' errors with it. */
  double rho[GRAPE_KC_COUNT][2];
  double level;                           /* the intervals' nominal coverage */
  int nknown;                             /* GPUs with a learned regime */
  grape__known_t* known;
  /* Kernel time from an op's latency through a timing harness, latency =
   * max(floor, offset + kernel) (grape__kernel_time): the transfer regime's
   * offset per class (its floor is floor_ms); for kernels the harness
   * hides, time = least + kslope x T (T: max(compute, memory) time) with
   * log(measured / that) in kernel_iv; a kernel's least time is
   * kernel_cycles of the GPU's clock. */
  double hoff[GRAPE_KC_COUNT];            /* ms */
  double kslope[GRAPE_KC_COUNT][2];       /* [class][GRAPE__KNOWN_*] */
  double kernel_cycles;
  double kernel_iv[2];
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
  grape__occ_t occ;
} grape__roof_t;

/* Writes grape's features of p on g to x[GRAPE__NFEAT]; launch_only drops
 * those that need op dims. Also returns the roofline terms in *r. */
void grape__features(const grape__kprep_t* p, const grape_gpu_spec_t* g, int launch_only,
                     double* x, grape__roof_t* r);
/* The per-GPU trees' features of p (with op dims), from its features x and
 * roofline terms r on the GPU and the transfer regime's prediction t0 (ms). */
void grape__gpu_features(const grape__kprep_t* p, const double* x, const grape__roof_t* r,
                         double t0, float* xf);
/* The largest power of two (at most 128) that divides dimension v, 0 when
 * v is unknown or not a positive whole number. */
double grape__align(double v);
/* The span values of p (GRAPE__NSPAN), 0 where unknown. */
void grape__span_values(const grape__kprep_t* p, double* v);
/* The distance of p beyond x's span (of p's interval bin): the largest
 * log(value / span value) over the values both know, 0 when none exceeds
 * its span. */
double grape__span_distance(const grape__kprep_t* p, const grape__extrap_t* x);
/* The interval bin of a prepared kernel (GRAPE__NIVB). */
int grape__interval_bin(const grape__kprep_t* p);
/* A predicted latency at or above this many harness floors shows the
 * kernel above the floor (the known regime's interval bin 1 outside GEMMs). */
#define GRAPE__FLOOR_SPLIT 1.2
/* The known regime's interval bin of p, predicted at latency ms (harness
 * included) on a GPU whose harness floor in p's class is floor_ms (0: no
 * harness): a GEMM's grape__interval_bin (nn.Linear's kernels apart), any
 * other kernel's 1 when ms is GRAPE__FLOOR_SPLIT floors or more, and 2
 * when it is also high_ms or more (high_ms 0: never). A bin that is not
 * calibrated (its class's rule off) serves the one below it. */
int grape__known_bin(const grape__kprep_t* p, double ms, double floor_ms, double high_ms);
/* The learned regime of class c on g for kernels with op dims or without
 * (GRAPE__KNOWN_*), or NULL when g is not a known GPU of m or that fit has
 * no trees there. */
const grape__known_class_t* grape__known_class(const grape_model_t* m, const grape_gpu_spec_t* g,
                                               int c, int launch);
/* The basis (1, v1, v2) of linear-time form `form`: 0 (1, Tc, Tm), Li et
 * al.'s; 1 (1, max(Tc, Tm), 0), the roofline's; 2 (1, Tm, Tm re-read from
 * DRAM); 3 (1, Tm, waves / clock). */
void grape__lin_basis(int form, const grape__roof_t* r, double v[3]);
/* Stacking: x[8], x[9] = log of the Li and roofline predictions of m. */
void grape__stack(const grape_model_t* m, int c, const grape__roof_t* r, double* x);
/* The transfer regime's (or a baseline's) time of p on g, ms. */
double grape__predict(const grape_model_t* m, grape_method_t method, const grape__kprep_t* p,
                      const grape_gpu_spec_t* g);
/* The same, leaving the features it computed in x[GRAPE__NFEAT] and *r. */
double grape__predict_x(const grape_model_t* m, grape_method_t method, const grape__kprep_t* p,
                        const grape_gpu_spec_t* g, double* x, grape__roof_t* r);
/* The transfer regime's time of p on g: t0 of the in-range form, and
 * beyond the class's span (distance *d) moved toward the extrapolation
 * form, which is what it returns; x and r as grape__predict_x fills them. */
double grape__predict_transfer(const grape_model_t* m, const grape__kprep_t* p,
                               const grape_gpu_spec_t* g, double* x, grape__roof_t* r,
                               double* t0, double* d);
/* The known regime's time from the transfer regime's in-range time t0 and
 * extrapolated time tx, the trees' correction cr (log) and the distance dk
 * beyond the fit's span: within it t0 e^cr; beyond it tx with the
 * correction fading (the extrapolation record's fade). */
double grape__known_time(const grape__known_class_t* k, double t0, double tx, double cr,
                         double dk);
/* The known GPU whose trees of class c (fit `launch`) an unseen GPU g
 * takes: one of g's architecture with trees there, when the class's rule
 * says so (m->sibling); NULL otherwise. */
const grape__known_t* grape__sibling(const grape_model_t* m, const grape_gpu_spec_t* g, int c,
                                     int launch);
/* The known-GPU record of g in m, or NULL. */
const grape__known_t* grape__known_gpu(const grape_model_t* m, const grape_gpu_spec_t* g);
/* Fills out's kernel time (ms, lo_ms, hi_ms) from its harness-inclusive
 * time (harness_ms and bounds, set): latency = max(floor, offset +
 * kernel), so a kernel that shows above the floor takes latency - offset,
 * and one the floor hides takes the hidden-kernel estimate least + kslope
 * x T (T: max(compute, memory) time of p on g, ms), which also tells
 * which of the two it is (blended near the floor); never less than the
 * GPU's least kernel time. kg: g's known record (NULL: the transfer
 * values). */
void grape__kernel_time(const grape_model_t* m, const grape__known_t* kg, int c, int launch,
                        const grape_gpu_spec_t* g, double T, grape_prediction_t* out);
/* grape's prediction with its regime and interval. */
void grape__predict_full(const grape_model_t* m, const grape__kprep_t* p,
                         const grape_gpu_spec_t* g, grape_prediction_t* out);
/* Frees the known-GPU part of m (its trees) and resets it to none. */
void grape__known_free(grape_model_t* m);
/* Writes m as the text of a model file (grape_model_save writes it to a
 * path). @return 0, or -EIO. */
int grape__model_write(const grape_model_t* m, FILE* f);

#endif
