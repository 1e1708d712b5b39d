/* Kernel-time models: features, prediction, paths.
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
 * The model file (model_file.c) holds all of it.
 */
#include "predict/model.h"
#include "predict/gpu.h"
#include "util/grow.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
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
   * long reductions and another launch path) get their own fit, with op
   * dims only. From the launch alone (no K), a fit of its own learns the
   * training sweep's reduction lengths (NeuSight's nn.Linear rows: median
   * K 2,056; its batched GEMMs': 133), not the kernel: in a training step
   * backward's nn and nt GEMMs run the long reductions (docs/predictor.md,
   * "Public kernel-level timings"). */
  double tn = p->layout == 3 && !launch_only;
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

double grape__align(double v) {
  if (!(v >= 1 && v < 9.0e15) || v != floor(v))
    return 0;
  double a = 1;
  while (a < 128 && fmod(v, 2 * a) == 0)
    a *= 2;
  return a;
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
      /* Alignment: cuBLAS and the vectorised elementwise kernels take
       * wider loads and other kernels on dims that are multiples of 4, 8,
       * 64...; real models' dims mostly are, the training data's mostly
       * not, so the trees learn it from the rows where it happens. */
      grape__align(p->shape[0]), grape__align(p->shape[1]), grape__align(p->shape[2]),
      grape__align(p->shape[3]),
      /* Tile quantisation: the share of a GEMM's padded tiles' work that
       * is useful (1: the dims fill the tiles). */
      p->blk_flops > 0 && p->flops > 0 ? p->flops / (p->blk_flops * p->blocks) : 0,
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

/* No kernel beats peak FLOP/s (bandwidth is no hard bound: L2 residency
 * lifts it; nor are a convolution's direct FLOPs: Winograd and FFT need
 * fewer): neither the transfer regime's fit nor a known GPU's correction of
 * it, which beyond the GPU's rows can price a kernel it never ran faster
 * than the GPU computes (docs/predictor.md, *End to end*). NaN gives the
 * bound. */
static double no_faster_than_peak(int c, const grape__roof_t* r, double t) {
  return c != GRAPE_KC_CONV && !(t >= r->tc) ? r->tc : t;
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
  /* A kernel never takes less than a microsecond; a NaN from a broken model
   * file must not leak out either. */
  t = no_faster_than_peak(c, &r, t);
  return t >= 1e-3 ? t : 1e-3;
}

const grape__known_t* grape__known_gpu(const grape_model_t* m, const grape_gpu_spec_t* g) {
  for (int i = 0; i < m->nknown; i++)
    if (strcmp(m->known[i].name, g->name) == 0)
      return &m->known[i];
  return NULL;
}

const grape__known_t* grape__sibling(const grape_model_t* m, const grape_gpu_spec_t* g, int c,
                                     int launch) {
  if (!m->sibling[c])
    return NULL;
  /* The known GPUs' compute capabilities were resolved when the model was
   * built or read: no spec-table search in a prediction. */
  long cc = grape__gpu_cc(g);
  for (int i = 0; i < m->nknown; i++)
    if (cc >= 0 && m->known[i].cc == cc && m->known[i].c[c][launch].ntrees > 0 &&
        strcmp(m->known[i].name, g->name) != 0)
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
  /* The part that shows takes the latency interval's relative spread, not
   * its bounds less the offset: the harness's own spread (the host's
   * dispatch, 25-60 us) is no error of a kernel of a few microseconds. */
  double ks = fmax(out->harness_ms - a, least), H = out->harness_ms > 0 ? out->harness_ms : 1;
  out->lo_ms = fmin(fmax(w * ks * (out->harness_lo_ms / H) + (1 - w) * kh * lo, least * lo),
                    out->ms);
  out->hi_ms = fmax(fmax(w * ks * (out->harness_hi_ms / H) + (1 - w) * kh * hi, least * hi),
                    out->ms);
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

int grape__known_bin(const grape__kprep_t* p, double ms, double floor_ms, double high_ms) {
  if (p->cls == GRAPE_KC_GEMM)
    return grape__interval_bin(p);
  if (!(floor_ms > 0 && ms >= GRAPE__FLOOR_SPLIT * floor_ms))
    return 0;
  return high_ms > 0 && ms >= high_ms ? 2 : 1;
}

/* The interval of bin `bin` of ivb around out->ms, widened for a distance d
 * beyond the fit's span by x's slopes. */
static void interval(grape_prediction_t* out, const double* ivb, int bin, double level,
                     const grape__extrap_t* x, double d) {
  while (bin > 0 && !(ivb[2 * bin] <= ivb[2 * bin + 1]))
    bin--;   /* not calibrated: the bin below */
  const double* iv = &ivb[2 * bin];
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
  tx = no_faster_than_peak(c, r, tx);
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
  out->kclass = c;
  out->shared = m->rho[c][k != NULL];
  if (k == NULL && (kg == NULL || !(kg->c[c][launch].rows > 0))) {
    /* A GPU unseen in this class: the trees of a known GPU of its architecture, on its
     * own spec sheet (its features, its transfer prediction), where the
     * class's rule allows; the transfer regime's interval, which was
     * calibrated on GPUs nothing was learned of. */
    const grape__known_t* sib = grape__sibling(m, g, c, launch);
    const grape__known_class_t* ks = sib != NULL ? &sib->c[c][launch] : NULL;
    double ms = tx;
    if (ks != NULL) {
      float xf[GRAPE__NGF];
      grape__gpu_features(p, x, &r, t0, xf);
      double cr = fmin(fmax(grape__boost_eval(ks->trees, ks->ntrees, xf), -8), 8);
      ms = no_faster_than_peak(c, &r,
                               grape__known_time(ks, t0, tx, cr, grape__span_distance(p, &ks->x)));
    }
    out->ms = ms;
    out->regime = GRAPE_REGIME_TRANSFER;
    interval(out, p->has_dims ? m->iv[c] : m->ivl[c], grape__interval_bin(p), m->level, xt, dt);
    grape__kernel_time(m, kg, c, launch, g, T, out);
    return;
  }
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
  out->ms = no_faster_than_peak(c, &r, grape__known_time(k, t0, tx, cr, dk));
  out->regime = dk > 0 ? GRAPE_REGIME_KNOWN_EXTRAPOLATED : GRAPE_REGIME_KNOWN;
  interval(out, k->iv, grape__known_bin(p, out->ms, kg->hfloor[c], k->high_ms), m->level, &k->x, dk);
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
  out->kclass = c;
  out->shared = m->rho[c][0];
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

/* ---- Paths ---- */

/* A path's time at device-time scale f (every kernel's time times f):
 * eager, the host issues kernel i host[i] ms after kernel i-1 (the model's
 * launch gap where host is NULL or the entry negative) while the device
 * runs the queue, a kernel starting once issued and once the previous one
 * ended; as a graph, one graph launch, then the kernels back to back with
 * the model's per-node gap. */
static void path_times(const grape_model_t* m, const grape_prediction_t* k, const double* host,
                       size_t n, double f, double* eager, double* graph) {
  double issued = 0, end = 0, dev = 0, gap = m->gap_eager_us / 1000;
  for (size_t i = 0; i < n; i++) {
    issued += host != NULL && host[i] >= 0 ? host[i] : gap;
    end = fmax(issued, end) + f * k[i].ms;
    dev += f * k[i].ms + m->gap_graph_us / 1000;
  }
  *eager = end;
  *graph = n ? m->graph_launch_us / 1000 + dev : 0;
}

/* A distinct launch's independent error (repeats of one launch, the same
 * prediction, share theirs): the sums of its kernels' deviations at their
 * bounds. */
typedef struct dev_slot_s {
  const grape_prediction_t* k;   /* NULL: free */
  double up, down;
} dev_slot_t;

static int same_pred(const grape_prediction_t* a, const grape_prediction_t* b) {
  return a->ms == b->ms && a->lo_ms == b->lo_ms && a->hi_ms == b->hi_ms &&
         a->kclass == b->kclass && a->regime == b->regime;
}

static size_t pred_hash(const grape_prediction_t* k) {
  double v[3] = {k->ms, k->lo_ms, k->hi_ms};
  uint64_t h = 1469598103934665603ull;
  const unsigned char* b = (const unsigned char*)v;
  for (size_t i = 0; i < sizeof(v); i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return (size_t)(h ^ (h >> 29) ^ (uint64_t)k->kclass);
}

int grape_run_combine(const grape_model_t* m, const grape_run_path_t* paths, size_t npaths,
                      grape_path_prediction_t* out) {
  if (m == NULL || out == NULL || (paths == NULL && npaths > 0))
    return -EINVAL;
  size_t n = 0;
  for (size_t q = 0; q < npaths; q++) {
    if ((paths[q].k == NULL && paths[q].n > 0) || !(paths[q].count >= 0))
      return -EINVAL;
    n += paths[q].n;
  }
  memset(out, 0, sizeof(*out));
  out->level = m->level;
  out->has_interval = 1;
  double sum = 0, sum_lo = 0;
  /* Levels: one per class and regime (known GPUs' levels are not the
   * transfer regime's), each kernel's shared part moving with it. */
  double lev_up[GRAPE_KC_COUNT][2] = {{0}}, lev_down[GRAPE_KC_COUNT][2] = {{0}};
  size_t cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  dev_slot_t* slot = n ? calloc(cap, sizeof(*slot)) : NULL;
  if (n && slot == NULL)
    return -ENOMEM;
  for (size_t q = 0; q < npaths; q++) {
    double w = paths[q].count;   /* a path's runs are its kernels again, with their errors */
    for (size_t i = 0; i < paths[q].n; i++) {
      const grape_prediction_t* p = &paths[q].k[i];
      sum += w * p->ms;
      out->kernels += (size_t)w;
      out->known += p->regime != GRAPE_REGIME_TRANSFER ? (size_t)w : 0;
      if (!p->has_interval || !(p->lo_ms > 0) || !isfinite(p->hi_ms) || !(p->ms > 0)) {
        out->has_interval = 0;
        continue;
      }
      sum_lo += w * p->lo_ms;
      int c = p->kclass >= 0 && p->kclass < GRAPE_KC_COUNT ? p->kclass : GRAPE_KC_OTHER;
      int r = p->regime != GRAPE_REGIME_TRANSFER;
      double sh = fmin(fmax(p->shared, 0), 1);
      /* The kernel's deviations at its bounds split into the shared level's
       * and its own as their variances do: a kernel alone keeps its own
       * interval (sqrt(sh)^2 + sqrt(1 - sh)^2 = 1). */
      double up = p->hi_ms - p->ms, down = p->ms - p->lo_ms;
      lev_up[c][r] += w * sqrt(sh) * up;
      lev_down[c][r] += w * sqrt(sh) * down;
      size_t j = pred_hash(p) & (cap - 1);
      while (slot[j].k != NULL && !same_pred(slot[j].k, p))
        j = (j + 1) & (cap - 1);
      slot[j].k = p;
      slot[j].up += w * sqrt(1 - sh) * up;
      slot[j].down += w * sqrt(1 - sh) * down;
    }
  }
  double vu = 0, vd = 0;
  for (size_t j = 0; j < (n ? cap : 0); j++)
    if (slot[j].k != NULL) {
      vu += slot[j].up * slot[j].up;
      vd += slot[j].down * slot[j].down;
    }
  free(slot);
  for (int c = 0; c < GRAPE_KC_COUNT; c++)
    for (int r = 0; r < 2; r++) {
      vu += lev_up[c][r] * lev_up[c][r];
      vd += lev_down[c][r] * lev_down[c][r];
    }
  /* Independent parts add in quadrature, as their standard deviations do;
   * no lower than every kernel at its lower bound at once. The run's device
   * time at a bound scales every kernel alike, and each path is composed
   * at that scale. */
  double dlo = fmax(sum - sqrt(vd), sum_lo), dhi = sum + sqrt(vu);
  double f[3] = {1, 0, INFINITY};
  if (out->has_interval && sum > 0) {
    f[1] = dlo / sum;
    f[2] = dhi / sum;
  } else if (out->has_interval) {
    f[1] = f[2] = 1;
  }
  double* eag[3] = {&out->eager_ms, &out->eager_lo_ms, &out->eager_hi_ms};
  double* gra[3] = {&out->graph_ms, &out->graph_lo_ms, &out->graph_hi_ms};
  for (int b = 0; b < 3; b++) {
    if (!isfinite(f[b])) {
      *eag[b] = *gra[b] = INFINITY;
      continue;
    }
    for (size_t q = 0; q < npaths; q++) {
      double e, g;
      path_times(m, paths[q].k, paths[q].host_ms, paths[q].n, f[b], &e, &g);
      *eag[b] += paths[q].count * e;
      *gra[b] += paths[q].count * g;
    }
  }
  return 0;
}

int grape_path_combine_gaps(const grape_model_t* m, const grape_prediction_t* k,
                            const double* host, size_t n, grape_path_prediction_t* out) {
  if (m == NULL || out == NULL || (k == NULL && n > 0))
    return -EINVAL;
  grape_run_path_t one = {.k = k, .host_ms = host, .n = n, .count = 1};
  return grape_run_combine(m, &one, 1, out);
}

int grape_path_combine(const grape_model_t* m, const grape_prediction_t* k, size_t n,
                       grape_path_prediction_t* out) {
  return grape_path_combine_gaps(m, k, NULL, n, out);
}

int grape_predict_path_interval(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                                const grape_kernel_desc_t* k, size_t n,
                                grape_path_prediction_t* out) {
  if (m == NULL || gpu == NULL || out == NULL || (k == NULL && n > 0))
    return -EINVAL;
  grape_prediction_t* p = n ? malloc(n * sizeof(*p)) : NULL;
  if (n && p == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    grape_predict_kernel(m, gpu, &k[i], &p[i]);
  int err = grape_path_combine(m, p, n, out);
  free(p);
  return err;
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

/* ---- Lifetime ---- */

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
