/* The model file: a versioned text form of a grape_model_t, written and
 * parsed here.
 *
 * DESIGN: text, one key a line: a version line, then one block per class,
 * then one block per known GPU with its trees. Numbers are written at 17
 * significant digits (trees' floats at 9), so a file reads back to the
 * same model bit for bit. A file of another version is refused with
 * -EPROTO rather than misread; a damaged one with -EINVAL naming its line.
 * Every value is range-checked as it is read: a model file is input.
 */
#include "predict/model.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict/gpu.h"
#include "util/grow.h"

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

/* A known class's interval record: its bins, then the latency from which
 * bin 2 serves. */
#define NKV (2 * GRAPE__NKIVB + 1)

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
    double sib = m->sibling[c];
    put_vec(f, "sibling", &sib, 1);
    put_vec(f, "shared", m->rho[c], 2);
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
        double v[NKV + NXV];
        memcpy(v, kc->iv, sizeof(kc->iv));
        v[2 * GRAPE__NKIVB] = kc->high_ms;
        extrap_to(&kc->x, v + NKV);
        put_vec(f, "", v, NKV + NXV);
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

/* Parser state: a cursor over the text, one line at a time. */
typedef struct parser_s {
  const char* s;
  const char* end;
  size_t line_no;
  char line[16384];
  char* err;
  size_t err_len;
  int ngf;             /* the trees' feature count the file declares */
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
    if (tv[2 * d] < 0 || tv[2 * d] >= p->ngf || tv[2 * d] != floor(tv[2 * d]))
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
    double v[2 + NKV + NXV];
    snprintf(key, sizeof(key), "%s %s", known_key[c % 2], grape_kclass_name(c / 2));
    int rc = get_vec(p, key, v, 2 + NKV + NXV);
    if (rc < 0)
      return rc;
    if (v[0] < 0 || v[1] < 0 || v[1] > GRAPE__MAXTREES || v[1] != floor(v[1]))
      return fail(p, -EINVAL, "bad known-GPU row or tree count");
    if (!(v[2 + 2 * GRAPE__NKIVB] >= 0))
      return fail(p, -EINVAL, "bad known interval split");
    kc->rows = v[0];
    memcpy(kc->iv, v + 2, sizeof(kc->iv));
    kc->high_ms = v[2 + 2 * GRAPE__NKIVB];
    if ((rc = extrap_from(p, v + 2 + NKV, &kc->x)) < 0)
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
  /* The trees' features only ever grow at the end: a file of an older
   * count reads alike (its trees split none of the later ones). */
  if (v[0] != GRAPE__NFEAT || v[1] < GRAPE__NGF - GRAPE__NALIGN || v[1] > GRAPE__NGF) {
    rc = fail(&p, -EINVAL, "feature count differs from this grape's");
    goto fail_parse;
  }
  p.ngf = (int)v[1];
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
    if ((rc = get_vec(&p, "sibling", xv, 1)) < 0)
      goto fail_parse;
    if (xv[0] != 0 && xv[0] != 1) {
      rc = fail(&p, -EINVAL, "bad sibling rule");
      goto fail_parse;
    }
    m->sibling[c] = (int)xv[0];
    if ((rc = get_vec(&p, "shared", m->rho[c], 2)) < 0)
      goto fail_parse;
    if (!(m->rho[c][0] >= 0 && m->rho[c][0] <= 1 && m->rho[c][1] >= 0 && m->rho[c][1] <= 1)) {
      rc = fail(&p, -EINVAL, "bad shared share");
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
  for (int i = 0; i < m->nknown; i++) {
    if ((rc = get_known(&p, &m->known[i])) < 0)
      goto fail_parse;
    m->known[i].cc = grape__gpu_cc(grape_gpu_find(m->known[i].name));
  }
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
