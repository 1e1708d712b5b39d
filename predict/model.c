/* Kernel-time models: features, prediction, and the versioned text model file.
 *
 * DESIGN: three models per kernel class, fitted together by train.c:
 *  - roofline: t = t0 + s * max(Tc, Tm), Tc = FLOPs / peak, Tm = bytes / BW;
 *  - Li et al. (MICRO'23): t = c0 + c1 * Tc + c2 * Tm, linear in op counts
 *    normalised by the GPU's peaks (which is how it transfers across GPUs);
 *  - grape: log t = w . x, a regression in log space on wave-aware,
 *    spec-normalised features: the wave-quantised compute time, the memory
 *    time, a smooth launch-floor basis log(1 + tau / T), occupancy, waves,
 *    tail utilisation, L2 fit, tile shape and kernel family (docs/predictor.md).
 * Features are computed per (kernel, GPU) from a prepared kernel, so the same
 * launch can be predicted on any GPU of the spec table. Each class has a
 * second weight vector for kernels without op dims (launch-only features).
 *
 * The model file is text: a version line, then one block per class. A file
 * of another version is refused with -EPROTO rather than misread.
 */
#include "predict/model.h"
#include "predict/gpu.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Features ---- */

static double lg(double v) {
  return log(v > 1e-30 ? v : 1e-30);
}

void grape__features(const grape__kprep_t* p, const grape_gpu_spec_t* g, int launch_only,
                     double* x, double* xt, grape__roof_t* r) {
  grape__occ_t o;
  grape__occupancy(p, g, &o);
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
  if (xt == NULL)
    return;
  int i = 0;
  xt[i++] = lt;
  xt[i++] = x[2];
  xt[i++] = x[3];
  xt[i++] = lg(fmax(tc, 1e-7) / t);
  xt[i++] = o.util;
  xt[i++] = lg(o.waves);
  xt[i++] = lg(o.per_sm);
  xt[i++] = lg(o.fill);
  xt[i++] = log1p(p->bytes / (g->l2_mb * 1048576.0));
  xt[i++] = p->tile_m > 0 ? lg(p->tile_m * p->tile_n) : 0;
  xt[i++] = p->kred > 0 && !launch_only ? lg(p->kred) : 0;
  xt[i++] = p->variant;
  xt[i++] = p->cols > 0 && !launch_only ? lg(p->cols) : 0;
  xt[i++] = p->operands;
  xt[i++] = lg(p->threads);
  xt[i++] = lg(p->blocks);
  xt[i++] = lg(p->blocks / g->sm_count);
  xt[i++] = p->math;
  xt[i++] = p->layout;
  /* i == GRAPE__NTF here. */
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
  int c = (int)p->cls;
  if (c < 0 || c >= GRAPE_KC_COUNT)
    c = GRAPE_KC_OTHER;
  double x[GRAPE__NFEAT], xt[GRAPE__NTF];
  grape__roof_t r;
  int launch_only = !p->has_dims;
  grape__features(p, g, launch_only, x, launch_only ? NULL : xt, &r);
  grape__stack(m, c, &r, x);
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
      s += grape__boost_eval(m->trees[c], m->ntrees[c], xt);
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

/* ---- Public prediction ---- */

double grape_predict_prepared_ms(const grape_model_t* m, grape_method_t method,
                                 const grape_gpu_spec_t* gpu, const grape_kernel_prep_t* p) {
  return grape__predict(m, method, (const grape__kprep_t*)(const void*)p, gpu);
}

double grape_predict_kernel_ms_with(const grape_model_t* m, grape_method_t method,
                                    const grape_gpu_spec_t* gpu, const grape_kernel_desc_t* k) {
  grape__kprep_t p;
  grape__kernel_prep(k, &p);
  return grape__predict(m, method, &p, gpu);
}

double grape_predict_kernel_ms(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                               const grape_kernel_desc_t* k) {
  return grape_predict_kernel_ms_with(m, GRAPE_METHOD_GRAPE, gpu, k);
}

int grape_predict_path(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                       const grape_kernel_desc_t* k, size_t n, double* eager_ms,
                       double* graph_ms) {
  if (m == NULL || gpu == NULL || (k == NULL && n > 0))
    return -EINVAL;
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += grape_predict_kernel_ms(m, gpu, &k[i]);
  if (eager_ms)
    *eager_ms = sum + n * m->gap_eager_us / 1000;
  if (graph_ms)
    *graph_ms = sum + (n ? m->graph_launch_us / 1000 + n * m->gap_graph_us / 1000 : 0);
  return 0;
}

/* ---- Model file ---- */

static const char magic[] = "grape-predict-model";

static void put_vec(FILE* f, const char* key, const double* v, int n) {
  fprintf(f, "%s", key);
  for (int i = 0; i < n; i++)
    fprintf(f, " %.17g", v[i]);
  fputc('\n', f);
}

int grape__model_write(const grape_model_t* m, FILE* f) {
  fprintf(f, "%s %d\n", magic, GRAPE_MODEL_FORMAT_VERSION);
  fprintf(f, "# grape kernel-time model; see docs/predictor.md. Times in ms.\n");
  fprintf(f, "features %d\n", GRAPE__NFEAT);
  fprintf(f, "launch_us %.17g %.17g %.17g\n", m->gap_eager_us, m->gap_graph_us,
          m->graph_launch_us);
  for (int c = 0; c < GRAPE_KC_COUNT; c++) {
    fprintf(f, "class %s %.17g\n", grape_kclass_name(c), m->rows[c]);
    fprintf(f, "floor %.17g %.17g\n", m->floor_ms[c], m->floor_p);
    put_vec(f, "roofline", m->roof[c], 2);
    put_vec(f, "li", m->li[c], 3);
    put_vec(f, "grape", m->w[c], GRAPE__NFEAT);
    put_vec(f, "grape_launch", m->wl[c], GRAPE__NFEAT);
    put_vec(f, "grape_lin", m->glin[c], 4);
    put_vec(f, "grape_range", m->range[c], 2);
    fprintf(f, "trees %d\n", m->ntrees[c]);
    for (int k = 0; k < m->ntrees[c]; k++) {
      const grape__tree_t* t = &m->trees[c][k];
      fprintf(f, "tree");
      for (int d = 0; d < GRAPE__TREE_DEPTH; d++)
        fprintf(f, " %d %.9g", t->feat[d], t->thr[d]);
      for (int l = 0; l < GRAPE__TREE_LEAVES; l++)
        fprintf(f, " %.9g", t->leaf[l]);
      fputc('\n', f);
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

void grape_model_free(grape_model_t* m) {
  free(m);
}

/* Parser state: a cursor over the text, one line at a time. */
typedef struct parser_s {
  const char* s;
  const char* end;
  size_t line_no;
  char line[4096];
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
  double v[3];
  int rc;
  if ((rc = get_vec(&p, "features", v, 1)) < 0)
    goto fail_parse;
  if (v[0] != GRAPE__NFEAT) {
    rc = fail(&p, -EINVAL, "feature count differs from this grape's");
    goto fail_parse;
  }
  if ((rc = get_vec(&p, "launch_us", v, 3)) < 0)
    goto fail_parse;
  m->gap_eager_us = v[0];
  m->gap_graph_us = v[1];
  m->graph_launch_us = v[2];
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
        (rc = get_vec(&p, "grape_range", m->range[c], 2)) < 0 ||
        (rc = get_vec(&p, "trees", v, 1)) < 0)
      goto fail_parse;
    if (v[0] < 0 || v[0] > GRAPE__MAXTREES || v[0] != floor(v[0])) {
      rc = fail(&p, -EINVAL, "bad tree count");
      goto fail_parse;
    }
    m->ntrees[c] = (int)v[0];
    if (!(m->range[c][0] <= m->range[c][1]) || !isfinite(m->range[c][0]) ||
        !isfinite(m->range[c][1])) {
      rc = fail(&p, -EINVAL, "bad grape_range");
      goto fail_parse;
    }
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
    for (int k = 0; k < m->ntrees[c]; k++) {
      double tv[2 * GRAPE__TREE_DEPTH + GRAPE__TREE_LEAVES];
      grape__tree_t* t = &m->trees[c][k];
      if ((rc = get_vec(&p, "tree", tv, 2 * GRAPE__TREE_DEPTH + GRAPE__TREE_LEAVES)) < 0)
        goto fail_parse;
      for (int d = 0; d < GRAPE__TREE_DEPTH; d++) {
        if (tv[2 * d] < 0 || tv[2 * d] >= GRAPE__NTF || tv[2 * d] != floor(tv[2 * d])) {
          rc = fail(&p, -EINVAL, "bad tree feature index");
          goto fail_parse;
        }
        t->feat[d] = (int)tv[2 * d];
        t->thr[d] = tv[2 * d + 1];
      }
      memcpy(t->leaf, tv + 2 * GRAPE__TREE_DEPTH, sizeof(t->leaf));
    }
  }
  r = next_line(&p);
  if (r <= 0 || strcmp(p.line, "end") != 0) {
    rc = fail(&p, -EINVAL, "missing 'end'");
    goto fail_parse;
  }
  *out = m;
  return 0;
fail_parse:
  free(m);
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
    char* nb = realloc(buf, cap * 2);
    if (nb == NULL)
      goto fail_read;
    buf = nb;
    cap *= 2;
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
