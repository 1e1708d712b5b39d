/* Kernel-time models: features, prediction, and the versioned text model file.
 *
 * DESIGN: three models per kernel class, fitted together by train.c:
 *  - roofline: t = t0 + s * max(Tc, Tm), Tc = FLOPs / peak, Tm = bytes / BW;
 *  - Li et al. (MICRO'23): t = c0 + c1 * Tc + c2 * Tm, linear in op counts
 *    normalised by the GPU's peaks (which is how it transfers across GPUs);
 *  - grape, in two regimes. The transfer regime, for any GPU: log t = w . x,
 *    a regression in log space on wave-aware, spec-normalised features (the
 *    wave-quantised compute time, the memory time, a smooth launch-floor
 *    basis log(1 + tau / T), stacked baseline predictions, a separate fit
 *    for "_tn" GEMMs; docs/predictor.md), or a linear-time form. The known
 *    regime, for a GPU with rows of the class in the training data: the
 *    transfer prediction times exp(oblivious boosted trees) learned from
 *    that GPU's own rows, on the op's dims, the launch and the transfer
 *    regime's view of them. Each prediction carries an interval, quantiles
 *    of log(measured / predicted) stored per regime and class.
 * Features are computed per (kernel, GPU) from a prepared kernel, so the same
 * launch can be predicted on any GPU of the spec table. Each class has a
 * second weight vector for kernels without op dims (launch-only features),
 * and a known GPU a second tree set fitted on the launch alone
 * (GRAPE__KNOWN_LAUNCH), kept only where it beats the transfer prediction.
 *
 * The model file is text: a version line, then one block per class, then
 * one block per known GPU. A file of another version is refused with
 * -EPROTO rather than misread.
 */
#include "predict/model.h"
#include "predict/gpu.h"
#include "util/grow.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Features ---- */

static double lg(double v) {
  return log(v > 1e-30 ? v : 1e-30);
}

void grape__features(const grape__kprep_t* p, const grape_gpu_spec_t* g, int launch_only,
                     double* x, grape__roof_t* r) {
  grape__occ_t o;
  grape__occupancy(p, g, &o);
  r->occ = o;
  double peak = grape__peak_tflops(p, g) * 1e9;     /* FLOP per ms */
  double bw = g->mem_bw_gbs * 1e6;                  /* bytes per ms */
  double tc = p->flops / peak, tm = p->bytes / bw;
  r->tc = tc;
  r->tm = tm;
  /* Wave-quantised compute: every wave costs a full wave of tiles. */
  double tcq = tc / o.util;
  if (p->blk_flops > 0)
    tcq = fmax(tc, o.waves * o.per_sm * p->blk_flops / (peak / g->sm_count));
  if (launch_only)
    tcq = 0;
  double t = fmax(fmax(tcq, tm), 1e-7);
  double lt = lg(t);
  x[0] = 1;
  x[1] = lt;
  x[2] = lg(fmax(tcq, 1e-7) / t);
  x[3] = lg(fmax(tm, 1e-7) / t);
  static const double tau[4] = {0.002, 0.006, 0.02, 0.06};
  for (int j = 0; j < 4; j++)
    x[4 + j] = log1p(tau[j] / t);
  /* x[8], x[9]: grape__stack(). x[10..19]: the same times "_tn": GEMMs in
   * that layout (nn.Linear's in PyTorch, with a bias epilogue, split-K on
   * long reductions and another launch path) get their own fit. */
  double tn = p->layout == 3;
  for (int j = 0; j < 8; j++)
    x[10 + j] = tn * x[j];
  /* nn.Linear GEMMs only (the same terms on the batched GEMMs did worse
   * held out; docs/predictor.md):
   * x[20]: board power: low-TDP boards (T4, P4) cannot hold their boost
   * clock through long kernels: log(250 W / TDP) times the share of the time
   * long enough to throttle, t / (t + 1 ms);
   * x[21..23]: the cuBLAS kernel generation named by the prefix, +1 for
   * maxwell_ (what Pascal GPUs run), -1 for volta_ (Volta and Turing), 0 for
   * any other, so a generation no training GPU ran gets their average: a
   * level, its share in long kernels and its slope in log T. The Pascal GPUs'
   * nn.Linear kernels run below what the spec says, the Volta/Turing ones
   * above, on both GPUs of each pair. */
  double tdp = grape__gpu_tdp_w(g);
  double lp = tdp > 0 ? log(250.0 / tdp) : 0;
  double gen = launch_only ? 0 : tn * ((p->gen == 1) - (p->gen == 2));
  x[20] = launch_only ? 0 : tn * lp * t / (t + 1.0);
  x[21] = gen;
  x[22] = gen * t / (t + 1.0);
  x[23] = gen * lt;
  /* Terms of the linear-time forms 2 and 3 (grape__lin_basis): the L2
   * re-read time, Tm x min(1, resident working set / L2): kernels that read
   * their input twice (layer norm's statistics pass, then the normalising
   * one) find it in L2 only while the blocks in flight fit; and the wave
   * latency, waves / clock: row reductions too short to stream at full
   * bandwidth cost about a fixed number of cycles per wave. */
  double resident = fmin(p->blocks, g->sm_count * o.per_sm);
  /* The input each resident block re-reads: half the traffic of a row op,
   * which writes as much as it reads. */
  double ws = p->blocks > 0 ? resident * 0.5 * p->bytes / p->blocks : 0;
  r->tre = tm * fmin(1, ws / (g->l2_mb * 1048576.0));
  r->tw = o.waves / g->clock_mhz;
}

void grape__gpu_features(const grape__kprep_t* p, const double* x, const grape__roof_t* r,
                         double t0, float* xf) {
  /* On one GPU nothing needs normalising by its spec: the trees split on the
   * op's own dims, the launch and the transfer regime's view of it. A tree
   * splits a monotone transform of a feature where it splits the feature,
   * so these are raw values, not logs: no log per prediction. */
  const grape__occ_t* o = &r->occ;
  double v[GRAPE__NGF] = {
      t0,           x[1],         x[2],           x[3],
      p->shape[0],  p->shape[1],  p->shape[2],    p->shape[3],
      p->blocks,    p->threads,   o->waves,       o->util,
      o->per_sm,    p->variant,   p->layout,      p->tile_m,
      p->tile_n,    p->kred,      p->cols,        p->operands,
      p->numel,     p->flops,     p->bytes,       p->gen,
  };
  for (int i = 0; i < GRAPE__NGF; i++)
    xf[i] = (float)v[i];
}


void grape__lin_basis(int form, const grape__roof_t* r, double v[3]) {
  v[0] = 1;
  switch (form) {
  case 0: v[1] = r->tc; v[2] = r->tm; break;
  case 1: v[1] = fmax(r->tc, r->tm); v[2] = 0; break;
  case 2: v[1] = r->tm; v[2] = r->tre; break;
  default: v[1] = r->tm; v[2] = r->tw; break;
  }
}

void grape__stack(const grape_model_t* m, int c, const grape__roof_t* r, double* x) {
  double li = m->li[c][0] + m->li[c][1] * r->tc + m->li[c][2] * r->tm;
  double rf = m->roof[c][0] + m->roof[c][1] * fmax(r->tc, r->tm);
  x[8] = lg(fmax(li, 1e-3));
  x[9] = lg(fmax(rf, 1e-3));
  x[18] = x[10] * x[8];     /* x[10] is 1 for "_tn" GEMMs */
  x[19] = x[10] * x[9];
}

double grape__predict(const grape_model_t* m, grape_method_t method, const grape__kprep_t* p,
                      const grape_gpu_spec_t* g) {
  double x[GRAPE__NFEAT];
  grape__roof_t r;
  return grape__predict_x(m, method, p, g, x, &r);
}

double grape__predict_x(const grape_model_t* m, grape_method_t method, const grape__kprep_t* p,
                        const grape_gpu_spec_t* g, double* x, grape__roof_t* rr) {
  int c = (int)p->cls;
  if (c < 0 || c >= GRAPE_KC_COUNT)
    c = GRAPE_KC_OTHER;
  grape__roof_t r;
  int launch_only = !p->has_dims;
  grape__features(p, g, launch_only, x, &r);
  grape__stack(m, c, &r, x);
  *rr = r;
  double t;
  switch (method) {
  case GRAPE_METHOD_ROOFLINE: t = m->roof[c][0] + m->roof[c][1] * fmax(r.tc, r.tm); break;
  case GRAPE_METHOD_LI: t = m->li[c][0] + m->li[c][1] * r.tc + m->li[c][2] * r.tm; break;
  default: {
    const double* gl = m->glin[c];
    if (!launch_only && gl[0] >= 1) {
      double v[3];
      grape__lin_basis((int)gl[0] - 1, &r, v);
      t = gl[1] + gl[2] * v[1] + gl[3] * v[2];
      break;
    }
    const double* w = launch_only ? m->wl[c] : m->w[c];
    double s = 0;
    for (int i = 0; i < GRAPE__NFEAT; i++)
      s += w[i] * x[i];
    if (!launch_only) {
      const double* rg = m->range[c];
      if (rg[0] < rg[1])
        s = fmin(fmax(s, x[9] + rg[0]), x[9] + rg[1]);
    }
    double wk = exp(fmin(fmax(s, -12), 14)), f = m->floor_ms[c], q = m->floor_p;
    t = q > 0 ? pow(pow(f, q) + pow(wk, q), 1 / q) : wk;
    break;
  }
  }
  /* No kernel beats peak FLOP/s (bandwidth is no hard bound: L2 residency
   * lifts it; nor are a convolution's direct FLOPs: Winograd and FFT need
   * fewer). A kernel
   * never takes less than a microsecond; a NaN from a broken model file must
   * not leak out either. */
  if (c != GRAPE_KC_CONV && !(t >= r.tc))
    t = r.tc;
  return t >= 1e-3 ? t : 1e-3;
}

const grape__known_t* grape__known_gpu(const grape_model_t* m, const grape_gpu_spec_t* g) {
  for (int i = 0; i < m->nknown; i++)
    if (strcmp(m->known[i].name, g->name) == 0)
      return &m->known[i];
  return NULL;
}

const grape__known_class_t* grape__known_class(const grape_model_t* m, const grape_gpu_spec_t* g,
                                               int c, int launch) {
  const grape__known_t* k = grape__known_gpu(m, g);
  return k != NULL && k->c[c][launch].ntrees > 0 ? &k->c[c][launch] : NULL;
}

/* ---- Kernel time and the timing harness ---- */

/* How far a kernel shows above the harness's floor, 0 (hidden: the latency
 * L says nothing of it) to 1: the hidden-kernel estimate kh reaches the
 * floor, or (by_l) the latency is well above it (for a GEMM known by its
 * launch alone the estimate has no reduction length to go by; 1.5 floors,
 * for an unseen GPU's latency is often a level above the median floor). */
static double shown(double L, double floor, double off, double kh, int by_l) {
  if (!(floor > 0))
    return 1;
  return fmax(fmin(fmax(((off + kh) / floor - 0.85) / 0.3, 0), 1),
              by_l ? fmin(fmax((L / floor - 1.5) / 0.5, 0), 1) : 0);
}

void grape__kernel_time(const grape_model_t* m, const grape__known_t* kg, int c, int launch,
                        const grape_gpu_spec_t* g, double T, grape_prediction_t* out) {
  int own = kg != NULL && kg->hfloor[c] > 0;
  double F = own ? kg->hfloor[c] : m->floor_ms[c], a = own ? kg->hoff[c] : m->hoff[c];
  double least = m->kernel_cycles / (g->clock_mhz > 0 ? g->clock_mhz * 1e3 : 1e6);
  double kh = least + m->kslope[c][launch] * T;
  /* A convolution's latency from its launch alone is a whole cuDNN op's
   * (the training rows time ops of several kernels): it tells nothing of
   * one kernel's, a winograd transform's or a GEMM's. */
  double w = shown(out->harness_ms, F, a, kh, !(c == GRAPE_KC_CONV && launch));
  out->ms = fmax(w * (out->harness_ms - a) + (1 - w) * kh, least);
  if (!out->has_interval) {
    out->lo_ms = 0;
    out->hi_ms = INFINITY;
    return;
  }
  /* The bounds, as much shown as the time: the harness bounds less the
   * offset, the hidden-kernel estimate and the least time widened by their
   * own calibrated spread. */
  double lo = exp(m->kernel_iv[0]), hi = exp(m->kernel_iv[1]);
  out->lo_ms = fmin(fmax(w * (out->harness_lo_ms - a) + (1 - w) * kh * lo, least * lo), out->ms);
  out->hi_ms = fmax(fmax(w * (out->harness_hi_ms - a) + (1 - w) * kh * hi, least * hi), out->ms);
}

void grape__span_values(const grape__kprep_t* p, double* v) {
  v[0] = p->shape[0];
  v[1] = p->shape[1];
  v[2] = p->shape[2];
  v[3] = p->shape[3];
  v[4] = p->numel;
  v[5] = p->flops;
  v[6] = p->bytes;
}

double grape__span_distance(const grape__kprep_t* p, const grape__extrap_t* x) {
  double v[GRAPE__NSPAN], worst = 1;
  const double* span = x->span[grape__interval_bin(p)];
  int empty = 1;
  for (int j = 0; j < GRAPE__NSPAN; j++)
    empty &= span[j] == 0;
  if (empty)
    span = x->span[0];
  grape__span_values(p, v);
  for (int j = 0; j < GRAPE__NSPAN; j++)
    if (span[j] > 0 && v[j] > span[j] * worst)
      worst = v[j] / span[j];
  return worst > 1 ? log(worst) : 0;
}

int grape__interval_bin(const grape__kprep_t* p) {
  return p->cls == GRAPE_KC_GEMM && p->layout == 3;
}

/* The interval of bin `bin` of ivb around out->ms, widened for a distance d
 * beyond the fit's span by x's slopes. */
static void interval(grape_prediction_t* out, const double* ivb, int bin, double level,
                     const grape__extrap_t* x, double d) {
  const double* iv = ivb[2 * bin] <= ivb[2 * bin + 1] ? &ivb[2 * bin] : ivb;
  out->level = level;
  out->distance = d;
  out->has_interval = iv[0] <= iv[1];
  /* Bounded like the trees' correction: no interval is a fit of data
   * beyond e^+-8. */
  double lo = fmax(iv[0] + x->widen[0] * d, -8), hi = fmin(iv[1] + x->widen[1] * d, 8);
  out->harness_ms = out->ms;
  out->harness_lo_ms = out->lo_ms = out->has_interval ? out->ms * exp(lo) : 0;
  out->harness_hi_ms = out->hi_ms = out->has_interval ? out->ms * exp(hi) : INFINITY;
}

/* The transfer regime beyond the class's span: from the in-range form's
 * time t0 toward the extrapolation regression's (a unit slope in work where
 * the extrapolation split chose it), over about half a unit of distance. */
static double extrapolate(const grape_model_t* m, int c, const grape__kprep_t* p, const double* x,
                          const grape__roof_t* r, double t0, double d) {
  if (d <= 0 || !m->xform[c] || !p->has_dims)
    return t0;
  double s = 0;
  for (int i = 0; i < GRAPE__NFEAT; i++)
    s += m->xw[c][i] * x[i];
  double tx = exp(fmin(fmax(s, -12), 14));
  if (c != GRAPE_KC_CONV && !(tx >= r->tc))
    tx = r->tc;
  double b = 1 - exp(-2 * d);
  double t = exp((1 - b) * log(t0) + b * log(fmax(tx, 1e-3)));
  return t >= 1e-3 ? t : 1e-3;
}

double grape__predict_transfer(const grape_model_t* m, const grape__kprep_t* p,
                               const grape_gpu_spec_t* g, double* x, grape__roof_t* r,
                               double* t0, double* d) {
  int c = (int)p->cls;
  if (c < 0 || c >= GRAPE_KC_COUNT)
    c = GRAPE_KC_OTHER;
  *t0 = grape__predict_x(m, GRAPE_METHOD_GRAPE, p, g, x, r);
  *d = grape__span_distance(p, &m->xt[c][p->has_dims ? GRAPE__KNOWN_DIMS : GRAPE__KNOWN_LAUNCH]);
  return extrapolate(m, c, p, x, r, *t0, *d);
}

double grape__known_time(const grape__known_class_t* k, double t0, double tx, double cr,
                         double dk) {
  double t = dk > 0 ? tx * exp(cr * exp(-k->x.fade * dk)) : t0 * exp(cr);
  return t >= 1e-3 ? t : 1e-3;
}

void grape__predict_full(const grape_model_t* m, const grape__kprep_t* p,
                         const grape_gpu_spec_t* g, grape_prediction_t* out) {
  int c = (int)p->cls;
  if (c < 0 || c >= GRAPE_KC_COUNT)
    c = GRAPE_KC_OTHER;
  double x[GRAPE__NFEAT];
  grape__roof_t r;
  double t0, dt;
  double tx = grape__predict_transfer(m, p, g, x, &r, &t0, &dt);
  int launch = p->has_dims ? GRAPE__KNOWN_DIMS : GRAPE__KNOWN_LAUNCH;
  const grape__extrap_t* xt = &m->xt[c][launch];
  const grape__known_t* kg = grape__known_gpu(m, g);
  const grape__known_class_t* k =
      kg != NULL && kg->c[c][launch].ntrees > 0 ? &kg->c[c][launch] : NULL;
  double T = exp(x[1]);   /* max(compute, memory) time, the hidden kernel's work */
  if (k == NULL) {
    out->ms = tx;
    out->regime = GRAPE_REGIME_TRANSFER;
    interval(out, p->has_dims ? m->iv[c] : m->ivl[c], grape__interval_bin(p), m->level, xt, dt);
    grape__kernel_time(m, kg, c, launch, g, T, out);
    return;
  }
  float xf[GRAPE__NGF];
  grape__gpu_features(p, x, &r, t0, xf);
  /* A correction beyond e^±8 (3000x) is no fit of measured data; a
   * damaged model file must not give an infinite time. */
  double cr = fmin(fmax(grape__boost_eval(k->trees, k->ntrees, xf), -8), 8);
  double dk = grape__span_distance(p, &k->x);
  out->ms = grape__known_time(k, t0, tx, cr, dk);
  out->regime = dk > 0 ? GRAPE_REGIME_KNOWN_EXTRAPOLATED : GRAPE_REGIME_KNOWN;
  interval(out, k->iv, grape__interval_bin(p), m->level, &k->x, dk);
  grape__kernel_time(m, kg, c, launch, g, T, out);
}

/* ---- Public prediction ---- */

const char* grape_regime_name(grape_regime_t r) {
  return r == GRAPE_REGIME_KNOWN                ? "known"
         : r == GRAPE_REGIME_KNOWN_EXTRAPOLATED ? "known-extrapolated"
                                                : "transfer";
}

void grape_predict_prepared(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                            const grape_kernel_prep_t* p, grape_prediction_t* out) {
  grape__predict_full(m, (const grape__kprep_t*)(const void*)p, gpu, out);
}

void grape_predict_kernel(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                          const grape_kernel_desc_t* k, grape_prediction_t* out) {
  grape__kprep_t p;
  grape__kernel_prep(k, &p);
  grape__predict_full(m, &p, gpu, out);
}

/* A baseline's prediction: its time as the harness-inclusive one, the
 * kernel time derived from it. */
static void predict_baseline(const grape_model_t* m, grape_method_t method,
                             const grape__kprep_t* p, const grape_gpu_spec_t* g,
                             grape_prediction_t* out) {
  double x[GRAPE__NFEAT];
  grape__roof_t r;
  int c = (int)p->cls;
  if (c < 0 || c >= GRAPE_KC_COUNT)
    c = GRAPE_KC_OTHER;
  memset(out, 0, sizeof(*out));
  out->harness_ms = grape__predict_x(m, method, p, g, x, &r);
  out->level = m->level;
  out->regime = GRAPE_REGIME_TRANSFER;
  grape__kernel_time(m, grape__known_gpu(m, g), c, p->has_dims ? 0 : 1, g, exp(x[1]), out);
  out->harness_lo_ms = 0;
  out->harness_hi_ms = INFINITY;
}

double grape_predict_prepared_ms(const grape_model_t* m, grape_method_t method,
                                 const grape_gpu_spec_t* gpu, const grape_kernel_prep_t* p) {
  grape_prediction_t r;
  if (method != GRAPE_METHOD_GRAPE)
    predict_baseline(m, method, (const grape__kprep_t*)(const void*)p, gpu, &r);
  else
    grape_predict_prepared(m, gpu, p, &r);
  return r.ms;
}

void grape_predict_with(const grape_model_t* m, grape_method_t method,
                        const grape_gpu_spec_t* gpu, const grape_kernel_desc_t* k,
                        grape_prediction_t* out) {
  grape__kprep_t p;
  grape__kernel_prep(k, &p);
  if (method != GRAPE_METHOD_GRAPE)
    predict_baseline(m, method, &p, gpu, out);
  else
    grape__predict_full(m, &p, gpu, out);
}

double grape_predict_kernel_ms_with(const grape_model_t* m, grape_method_t method,
                                    const grape_gpu_spec_t* gpu, const grape_kernel_desc_t* k) {
  grape_kernel_prep_t p;
  grape_kernel_prepare(k, &p);
  return grape_predict_prepared_ms(m, method, gpu, &p);
}

double grape_predict_kernel_ms(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                               const grape_kernel_desc_t* k) {
  return grape_predict_kernel_ms_with(m, GRAPE_METHOD_GRAPE, gpu, k);
}

/* Sums of a path's kernels, as grape_path_combine and
 * grape_predict_path_interval collect them. */
typedef struct path_acc_s {
  double sum, lo, hi;
  int has_interval;
  size_t n, known;
} path_acc_t;

static void path_add(path_acc_t* a, const grape_prediction_t* k) {
  a->sum += k->ms;
  a->lo += k->lo_ms;
  a->hi += k->hi_ms;
  a->has_interval &= k->has_interval;
  a->known += k->regime != GRAPE_REGIME_TRANSFER;
  a->n++;
}

/* Adds the launch gaps: eager, one per kernel; a graph, one launch plus a
 * smaller one per node. */
static void path_finish(const grape_model_t* m, const path_acc_t* a,
                        grape_path_prediction_t* out) {
  double ge = (double)a->n * m->gap_eager_us / 1000;
  double gg = a->n ? m->graph_launch_us / 1000 + (double)a->n * m->gap_graph_us / 1000 : 0;
  double lo = a->has_interval ? a->lo : 0, hi = a->has_interval ? a->hi : INFINITY;
  memset(out, 0, sizeof(*out));
  out->level = m->level;
  out->has_interval = a->has_interval;
  out->kernels = a->n;
  out->known = a->known;
  out->eager_ms = a->sum + ge;
  out->eager_lo_ms = lo + ge;
  out->eager_hi_ms = hi + ge;
  out->graph_ms = a->sum + gg;
  out->graph_lo_ms = lo + gg;
  out->graph_hi_ms = hi + gg;
}

int grape_path_combine(const grape_model_t* m, const grape_prediction_t* k, size_t n,
                       grape_path_prediction_t* out) {
  if (m == NULL || out == NULL || (k == NULL && n > 0))
    return -EINVAL;
  path_acc_t a = {.has_interval = 1};
  for (size_t i = 0; i < n; i++)
    path_add(&a, &k[i]);
  path_finish(m, &a, out);
  return 0;
}

int grape_predict_path_interval(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                                const grape_kernel_desc_t* k, size_t n,
                                grape_path_prediction_t* out) {
  if (m == NULL || gpu == NULL || out == NULL || (k == NULL && n > 0))
    return -EINVAL;
  path_acc_t a = {.has_interval = 1};
  for (size_t i = 0; i < n; i++) {
    grape_prediction_t r;
    grape_predict_kernel(m, gpu, &k[i], &r);
    path_add(&a, &r);
  }
  path_finish(m, &a, out);
  return 0;
}

int grape_predict_path(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                       const grape_kernel_desc_t* k, size_t n, double* eager_ms,
                       double* graph_ms) {
  grape_path_prediction_t pp;
  int err = grape_predict_path_interval(m, gpu, k, n, &pp);
  if (err < 0)
    return err;
  if (eager_ms)
    *eager_ms = pp.eager_ms;
  if (graph_ms)
    *graph_ms = pp.graph_ms;
  return 0;
}

size_t grape_model_known_count(const grape_model_t* m) {
  return m != NULL ? (size_t)m->nknown : 0;
}

const char* grape_model_known_gpu(const grape_model_t* m, size_t i) {
  return m != NULL && i < (size_t)m->nknown ? m->known[i].name : NULL;
}

/* ---- Model file ---- */

static const char magic[] = "grape-predict-model";

static void put_vec(FILE* f, const char* key, const double* v, int n) {
  fprintf(f, "%s", key);
  for (int i = 0; i < n; i++)
    fprintf(f, " %.17g", v[i]);
  fputc('\n', f);
}

static void put_tree(FILE* f, const grape__tree_t* t) {
  fprintf(f, "tree");
  for (int d = 0; d < GRAPE__TREE_DEPTH; d++)
    fprintf(f, " %d %.9g", t->feat[d], (double)t->thr[d]);
  for (int l = 0; l < GRAPE__TREE_LEAVES; l++)
    fprintf(f, " %.9g", (double)t->leaf[l]);
  fputc('\n', f);
}

/* An extrapolation record as numbers: widen lo, widen hi, fade, then the
 * span of each interval bin. */
#define NXV (3 + GRAPE__NIVB * GRAPE__NSPAN)
static void extrap_to(const grape__extrap_t* x, double* v) {
  v[0] = x->widen[0];
  v[1] = x->widen[1];
  v[2] = x->fade;
  memcpy(v + 3, x->span, sizeof(x->span));
}

static void put_extrap(FILE* f, const char* key, const grape__extrap_t* x) {
  double v[NXV];
  extrap_to(x, v);
  put_vec(f, key, v, NXV);
}

/* The keys of a known class's two fits (GRAPE__KNOWN_DIMS, _LAUNCH). */
static const char* const known_key[2] = {"known", "known_launch"};

int grape__model_write(const grape_model_t* m, FILE* f) {
  fprintf(f, "%s %d\n", magic, GRAPE_MODEL_FORMAT_VERSION);
  fprintf(f, "# grape kernel-time model; see docs/predictor.md. Times in ms.\n");
  fprintf(f, "features %d %d\n", GRAPE__NFEAT, GRAPE__NGF);
  fprintf(f, "launch_us %.17g %.17g %.17g\n", m->gap_eager_us, m->gap_graph_us,
          m->graph_launch_us);
  fprintf(f, "interval_level %.17g\n", m->level);
  fprintf(f, "kernel_least %.17g %.17g %.17g\n", m->kernel_cycles, m->kernel_iv[0],
          m->kernel_iv[1]);
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    fprintf(f, "class %s %.17g\n", grape_kclass_name(c), m->rows[c]);
    fprintf(f, "floor %.17g %.17g\n", m->floor_ms[c], m->floor_p);
    put_vec(f, "roofline", m->roof[c], 2);
    put_vec(f, "li", m->li[c], 3);
    put_vec(f, "grape", m->w[c], GRAPE__NFEAT);
    put_vec(f, "grape_launch", m->wl[c], GRAPE__NFEAT);
    put_vec(f, "grape_lin", m->glin[c], 4);
    put_vec(f, "grape_range", m->range[c], 2);
    put_vec(f, "interval", m->iv[c], 2 * GRAPE__NIVB);
    put_vec(f, "interval_launch", m->ivl[c], 2 * GRAPE__NIVB);
    double kv[3] = {m->hoff[c], m->kslope[c][0], m->kslope[c][1]};
    put_vec(f, "harness", kv, 3);
    double xf = m->xform[c];
    fprintf(f, "extrap_form");
    put_vec(f, "", &xf, 1);
    put_vec(f, "grape_extrap", m->xw[c], GRAPE__NFEAT);
    for (int l = 0; l < 2; l++)
      put_extrap(f, l ? "extrap_launch" : "extrap", &m->xt[c][l]);
  }
  fprintf(f, "known_gpus %d\n", m->nknown);
  for (int i = 0; i < m->nknown; i++) {
    const grape__known_t* k = &m->known[i];
    fprintf(f, "gpu %s\n", k->name);
    double hv[2 * GRAPE_KC_COUNT];
    for (int c = 0; c < GRAPE_KC_COUNT; c++)
      hv[2 * c] = k->hfloor[c], hv[2 * c + 1] = k->hoff[c];
    put_vec(f, "harness", hv, 2 * GRAPE_KC_COUNT);
    for (int c = 0; c < GRAPE_KC_COUNT; c++)
      for (int l = 0; l < 2; l++) {
        const grape__known_class_t* kc = &k->c[c][l];
        fprintf(f, "%s %s %.17g %d", known_key[l], grape_kclass_name(c), kc->rows, kc->ntrees);
        double v[2 * GRAPE__NIVB + NXV];
        memcpy(v, kc->iv, sizeof(kc->iv));
        extrap_to(&kc->x, v + 2 * GRAPE__NIVB);
        put_vec(f, "", v, 2 * GRAPE__NIVB + NXV);
        for (int t = 0; t < kc->ntrees; t++)
          put_tree(f, &kc->trees[t]);
      }
  }
  fprintf(f, "end\n");
  return ferror(f) ? -EIO : 0;
}

int grape_model_save(const grape_model_t* m, const char* path) {
  FILE* f = fopen(path, "w");
  if (f == NULL)
    return -errno;
  int err = grape__model_write(m, f);
  if (fclose(f) != 0 && err == 0)
    err = -EIO;
  return err;
}

void grape__known_free(grape_model_t* m) {
  for (int i = 0; i < m->nknown; i++)
    for (int c = 0; c < GRAPE_KC_COUNT; c++)
      for (int l = 0; l < 2; l++)
        free(m->known[i].c[c][l].trees);
  free(m->known);
  m->known = NULL;
  m->nknown = 0;
}

void grape_model_free(grape_model_t* m) {
  if (m == NULL)
    return;
  grape__known_free(m);
  free(m);
}

/* Parser state: a cursor over the text, one line at a time. */
typedef struct parser_s {
  const char* s;
  const char* end;
  size_t line_no;
  char line[16384];
  char* err;
  size_t err_len;
} parser_t;

static int fail(parser_t* p, int code, const char* what) {
  if (p->err != NULL && p->err_len > 0)
    snprintf(p->err, p->err_len, "line %zu: %s", p->line_no, what);
  return code;
}

/* Copies the next non-comment line into p->line. @return 1, 0 at end, -1 too long. */
static int next_line(parser_t* p) {
  while (p->s < p->end) {
    const char* e = memchr(p->s, '\n', (size_t)(p->end - p->s));
    if (e == NULL)
      e = p->end;
    size_t n = (size_t)(e - p->s);
    p->line_no++;
    const char* s = p->s;
    p->s = e < p->end ? e + 1 : e;
    if (n >= sizeof(p->line))
      return -1;
    memcpy(p->line, s, n);
    p->line[n] = '\0';
    if (n > 0 && p->line[n - 1] == '\r')
      p->line[n - 1] = '\0';
    if (p->line[0] == '#' || p->line[0] == '\0')
      continue;
    return 1;
  }
  return 0;
}

/* Parses "key v1 ... vn" with exactly n finite numbers. */
static int get_vec(parser_t* p, const char* key, double* v, int n) {
  int r = next_line(p);
  if (r <= 0)
    return fail(p, -EINVAL, r < 0 ? "line too long" : "unexpected end of file");
  size_t kl = strlen(key);
  if (strncmp(p->line, key, kl) != 0 || (p->line[kl] != ' ' && p->line[kl] != '\0'))
    return fail(p, -EINVAL, "unexpected key");
  char* s = p->line + kl;
  for (int i = 0; i < n; i++) {
    char* e;
    v[i] = strtod(s, &e);
    if (e == s || !isfinite(v[i]) || (*e != ' ' && *e != '\0'))
      return fail(p, -EINVAL, "bad or missing number");
    s = e;
  }
  while (*s == ' ')
    s++;
  if (*s != '\0')
    return fail(p, -EINVAL, "extra values");
  return 0;
}

#define MAX_KNOWN 64

/* An extrapolation record from numbers (extrap_to), checked. */
static int extrap_from(parser_t* p, const double* v, grape__extrap_t* x) {
  if (!(v[0] <= 0 && v[1] >= 0 && v[2] >= 0))
    return fail(p, -EINVAL, "bad extrapolation slopes or fade");
  for (int j = 0; j < GRAPE__NIVB * GRAPE__NSPAN; j++)
    if (v[3 + j] < 0)
      return fail(p, -EINVAL, "bad extrapolation span");
  x->widen[0] = v[0];
  x->widen[1] = v[1];
  x->fade = v[2];
  memcpy(x->span, v + 3, sizeof(x->span));
  return 0;
}

/* Parses one "tree" line into t. */
static int get_tree(parser_t* p, grape__tree_t* t) {
  double tv[2 * GRAPE__TREE_DEPTH + GRAPE__TREE_LEAVES];
  int rc = get_vec(p, "tree", tv, 2 * GRAPE__TREE_DEPTH + GRAPE__TREE_LEAVES);
  if (rc < 0)
    return rc;
  for (int i = 0; i < 2 * GRAPE__TREE_DEPTH + GRAPE__TREE_LEAVES; i++)
    if (fabs(tv[i]) > FLT_MAX)
      return fail(p, -EINVAL, "tree value out of range");
  for (int d = 0; d < GRAPE__TREE_DEPTH; d++) {
    if (tv[2 * d] < 0 || tv[2 * d] >= GRAPE__NGF || tv[2 * d] != floor(tv[2 * d]))
      return fail(p, -EINVAL, "bad tree feature index");
    t->feat[d] = (uint8_t)tv[2 * d];
    t->thr[d] = (float)tv[2 * d + 1];
  }
  for (int l = 0; l < GRAPE__TREE_LEAVES; l++)
    t->leaf[l] = (float)tv[2 * GRAPE__TREE_DEPTH + l];
  return 0;
}

/* Parses a "gpu NAME" block: per class a "known" and a "known_launch"
 * line, each followed by its trees. */
static int get_known(parser_t* p, grape__known_t* k) {
  int r = next_line(p);
  if (r <= 0)
    return fail(p, -EINVAL, r < 0 ? "line too long" : "unexpected end of file");
  size_t nl = strlen(p->line);
  if (strncmp(p->line, "gpu ", 4) != 0 || nl == 4 || nl - 4 >= sizeof(k->name))
    return fail(p, -EINVAL, "expected 'gpu NAME'");
  memcpy(k->name, p->line + 4, nl - 3);
  double hv[2 * GRAPE_KC_COUNT];
  int hr = get_vec(p, "harness", hv, 2 * GRAPE_KC_COUNT);
  if (hr < 0)
    return hr;
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    if (!(hv[2 * c] >= 0 && hv[2 * c + 1] >= 0))
      return fail(p, -EINVAL, "bad harness floor or offset");
    k->hfloor[c] = hv[2 * c];
    k->hoff[c] = hv[2 * c + 1];
  }
  for (int c = 0; c < 2 * GRAPE_KC_COUNT; c++) {
    grape__known_class_t* kc = &k->c[c / 2][c % 2];
    char key[64];
    double v[2 + 2 * GRAPE__NIVB + NXV];
    snprintf(key, sizeof(key), "%s %s", known_key[c % 2], grape_kclass_name(c / 2));
    int rc = get_vec(p, key, v, 2 + 2 * GRAPE__NIVB + NXV);
    if (rc < 0)
      return rc;
    if (v[0] < 0 || v[1] < 0 || v[1] > GRAPE__MAXTREES || v[1] != floor(v[1]))
      return fail(p, -EINVAL, "bad known-GPU row or tree count");
    kc->rows = v[0];
    memcpy(kc->iv, v + 2, sizeof(kc->iv));
    if ((rc = extrap_from(p, v + 2 + 2 * GRAPE__NIVB, &kc->x)) < 0)
      return rc;
    if (v[1] > 0 && (kc->trees = malloc((size_t)v[1] * sizeof(*kc->trees))) == NULL)
      return -ENOMEM;
    kc->ntrees = (int)v[1];
    for (int t = 0; t < kc->ntrees; t++)
      if ((rc = get_tree(p, &kc->trees[t])) < 0)
        return rc;
  }
  return 0;
}

int grape_model_parse(const char* text, size_t len, grape_model_t** out, char* err,
                      size_t err_len) {
  parser_t p = {.s = text, .end = text + len, .err = err, .err_len = err_len};
  if (text == NULL)
    return -EINVAL;
  int r = next_line(&p);
  if (r <= 0)
    return fail(&p, -EINVAL, "empty model file");
  size_t ml = strlen(magic);
  if (strncmp(p.line, magic, ml) != 0 || p.line[ml] != ' ')
    return fail(&p, -EINVAL, "not a grape model file");
  char* e;
  long ver = strtol(p.line + ml + 1, &e, 10);
  if (e == p.line + ml + 1 || *e != '\0')
    return fail(&p, -EINVAL, "bad version number");
  if (ver != GRAPE_MODEL_FORMAT_VERSION) {
    char msg[128];
    snprintf(msg, sizeof(msg), "model format version %ld, this grape reads version %d", ver,
             GRAPE_MODEL_FORMAT_VERSION);
    return fail(&p, -EPROTO, msg);
  }
  grape_model_t* m = calloc(1, sizeof(*m));
  if (m == NULL)
    return -ENOMEM;
  double v[5];
  int rc;
  if ((rc = get_vec(&p, "features", v, 2)) < 0)
    goto fail_parse;
  if (v[0] != GRAPE__NFEAT || v[1] != GRAPE__NGF) {
    rc = fail(&p, -EINVAL, "feature count differs from this grape's");
    goto fail_parse;
  }
  if ((rc = get_vec(&p, "launch_us", v, 3)) < 0)
    goto fail_parse;
  m->gap_eager_us = v[0];
  m->gap_graph_us = v[1];
  m->graph_launch_us = v[2];
  if ((rc = get_vec(&p, "interval_level", &m->level, 1)) < 0)
    goto fail_parse;
  if (!(m->level > 0 && m->level < 1)) {
    rc = fail(&p, -EINVAL, "interval level not in (0, 1)");
    goto fail_parse;
  }
  if ((rc = get_vec(&p, "kernel_least", v, 3)) < 0)
    goto fail_parse;
  if (!(v[0] >= 0 && v[0] < 1e9 && v[1] <= 0 && v[2] >= 0 && v[2] < 20 && v[1] > -20)) {
    rc = fail(&p, -EINVAL, "bad kernel_least");
    goto fail_parse;
  }
  m->kernel_cycles = v[0];
  m->kernel_iv[0] = v[1];
  m->kernel_iv[1] = v[2];
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    char key[64];
    snprintf(key, sizeof(key), "class %s", grape_kclass_name(c));
    double fv[2];
    if ((rc = get_vec(&p, key, &m->rows[c], 1)) < 0 || (rc = get_vec(&p, "floor", fv, 2)) < 0 ||
        (rc = get_vec(&p, "roofline", m->roof[c], 2)) < 0 ||
        (rc = get_vec(&p, "li", m->li[c], 3)) < 0 ||
        (rc = get_vec(&p, "grape", m->w[c], GRAPE__NFEAT)) < 0 ||
        (rc = get_vec(&p, "grape_launch", m->wl[c], GRAPE__NFEAT)) < 0 ||
        (rc = get_vec(&p, "grape_lin", m->glin[c], 4)) < 0 ||
        (rc = get_vec(&p, "grape_range", m->range[c], 2)) < 0)
      goto fail_parse;
    if (!(m->range[c][0] <= m->range[c][1])) {
      rc = fail(&p, -EINVAL, "bad grape_range");
      goto fail_parse;
    }
    if ((rc = get_vec(&p, "interval", m->iv[c], 2 * GRAPE__NIVB)) < 0 ||
        (rc = get_vec(&p, "interval_launch", m->ivl[c], 2 * GRAPE__NIVB)) < 0)
      goto fail_parse;
    double xv[NXV];
    if ((rc = get_vec(&p, "harness", xv, 3)) < 0)
      goto fail_parse;
    if (!(xv[0] >= 0 && xv[1] >= 0 && xv[2] >= 0)) {
      rc = fail(&p, -EINVAL, "bad harness offset or kernel slope");
      goto fail_parse;
    }
    m->hoff[c] = xv[0];
    m->kslope[c][0] = xv[1];
    m->kslope[c][1] = xv[2];
    if ((rc = get_vec(&p, "extrap_form", xv, 1)) < 0)
      goto fail_parse;
    if (xv[0] != 0 && xv[0] != 1) {
      rc = fail(&p, -EINVAL, "bad extrap_form");
      goto fail_parse;
    }
    m->xform[c] = (int)xv[0];
    if ((rc = get_vec(&p, "grape_extrap", m->xw[c], GRAPE__NFEAT)) < 0)
      goto fail_parse;
    for (int l = 0; l < 2; l++)
      if ((rc = get_vec(&p, l ? "extrap_launch" : "extrap", xv, NXV)) < 0 ||
          (rc = extrap_from(&p, xv, &m->xt[c][l])) < 0)
        goto fail_parse;
    if (!(m->glin[c][0] >= 0 && m->glin[c][0] <= 4 && m->glin[c][0] == floor(m->glin[c][0]))) {
      rc = fail(&p, -EINVAL, "bad grape_lin form");
      goto fail_parse;
    }
    if (fv[0] < 0 || fv[1] < 0 || fv[1] > 64) {
      rc = fail(&p, -EINVAL, "bad floor");
      goto fail_parse;
    }
    m->floor_ms[c] = fv[0];
    m->floor_p = fv[1];
  }
  if ((rc = get_vec(&p, "known_gpus", v, 1)) < 0)
    goto fail_parse;
  if (v[0] < 0 || v[0] > MAX_KNOWN || v[0] != floor(v[0])) {
    rc = fail(&p, -EINVAL, "bad known GPU count");
    goto fail_parse;
  }
  if (v[0] > 0 && (m->known = calloc((size_t)v[0], sizeof(*m->known))) == NULL) {
    rc = -ENOMEM;
    goto fail_parse;
  }
  m->nknown = (int)v[0];
  for (int i = 0; i < m->nknown; i++)
    if ((rc = get_known(&p, &m->known[i])) < 0)
      goto fail_parse;
  r = next_line(&p);
  if (r <= 0 || strcmp(p.line, "end") != 0) {
    rc = fail(&p, -EINVAL, "missing 'end'");
    goto fail_parse;
  }
  *out = m;
  return 0;
fail_parse:
  grape_model_free(m);
  return rc;
}

int grape_model_load(const char* path, grape_model_t** out, char* err, size_t err_len) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    if (err && err_len)
      snprintf(err, err_len, "%s", strerror(e));
    return -e;
  }
  size_t cap = 1 << 16, n = 0;
  char* buf = malloc(cap);
  int rc = -ENOMEM;
  if (buf == NULL)
    goto fail_read;
  for (;;) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    if (cap >= (size_t)1 << 26) {
      rc = -EFBIG;
      goto fail_read;
    }
    char* nb = grape__grow(buf, &cap, cap + 1, 1, cap);
    if (nb == NULL)
      goto fail_read;
    buf = nb;
  }
  if (ferror(f)) {
    rc = -EIO;
    goto fail_read;
  }
  rc = grape_model_parse(buf, n, out, err, err_len);
fail_read:
  free(buf);
  fclose(f);
  return rc;
}

/* The default model: data/default_model.txt, embedded at build time. */
extern const char grape__default_model[];
extern const size_t grape__default_model_len;

int grape_model_load_default(grape_model_t** out) {
  return grape_model_parse(grape__default_model, grape__default_model_len, out, NULL, 0);
}
