/* Measured-timing CSV reader: NeuSight's operator latency files and grape's
 * own timings, plain or gzip (zlib's gzread reads both).
 *
 * DESIGN: columns are found by header name (with aliases), so the same reader
 * serves NeuSight's per-op layouts and grape's kernel-timing layout
 * (docs/predictor.md). Each row is split into a private copy of the line with
 * RFC 4180 quoting; the caller gets the raw line back unchanged (for
 * `grape predict --csv`, which must echo it) plus the parsed kernel. A row is
 * bad, never fatal, when its column count differs from the header's, a number
 * does not parse or is out of range, the GPU is unknown, or (when a latency
 * is required) the latency is not positive; `why` says which. A header
 * without the columns every row needs (kernel name, grid, block, device
 * unless one is given, latency for training) fails the whole file with a
 * message naming what is missing, so that a file of unknown columns is
 * never read as launches of 1x1x1 blocks. Lines may be arbitrarily long
 * (PyTorch kernel names run to kilobytes).
 *
 * Two row attributes come from conventions: a Device named "GPU (simcu)"
 * is the simulated device standing in for GPU (its times are the sim's
 * clock model: training refuses them unless asked), and a row's time is
 * the kernel's own (grape's time_ms, events around one kernel) or an op's
 * latency through a timing harness (NeuSight's Latency), unless a `timing`
 * column says `kernel` or `op`.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "grape/predict.h"
#include "util/grow.h"

enum {
  C_LAT, C_DEV, C_NAME, C_OP, C_GX, C_GY, C_GZ, C_BX, C_BY, C_BZ, C_SMEM, C_REGS, C_DIMS,
  C_B, C_M, C_N, C_K, C_H, C_CI, C_CO, C_KS, C_IS, C_ST, C_PAD, C_NUMEL, C_TIMING, C_NCOLS
};

/* Header names of each column; the first match wins. */
static const char* const col_names[C_NCOLS][3] = {
    {"Latency", "time_ms", "latency_ms"}, {"Device", "gpu", NULL},
    {"Kernel Name", "kernel", "name"},    {"OPName", "op", NULL},
    {"Grid x", "grid_x", NULL},           {"Grid y", "grid_y", NULL},
    {"Grid z", "grid_z", NULL},           {"Block x", "block_x", NULL},
    {"Block y", "block_y", NULL},         {"Block z", "block_z", NULL},
    {"smem", "dyn_smem", NULL},           {"regs", "registers", NULL},
    {"dims", NULL, NULL},                 {"B", NULL, NULL},
    {"M", NULL, NULL},                    {"N", NULL, NULL},
    {"K", NULL, NULL},                    {"H", NULL, NULL},
    {"Input_Channel", NULL, NULL},        {"Output_Channel", NULL, NULL},
    {"Kernel_Szie", "Kernel_Size", NULL}, {"Input_Size", NULL, NULL},
    {"Stride", NULL, NULL},               {"Padding", NULL, NULL},
    {"numel", NULL, NULL},                {"timing", NULL, NULL},
};

/* What a Device column says of a simulated device (the sim names itself
 * "NVIDIA H200 (simcu)"): its times are the sim's clock model, not a GPU's. */
static const char sim_suffix[] = " (simcu)";

/* Measured times below 1 ns or above 10^7 ms (almost three hours) are no
 * kernel's: a unit or a parsing mistake, which would make the fits singular. */
#define LAT_MIN_MS 1e-6
#define LAT_MAX_MS 1e7

struct grape_csv_s {
  gzFile f;
  char* line;            /* current raw line */
  size_t cap;
  char* work;            /* split copy of the line */
  size_t work_cap;
  char** field;
  size_t nfield_cap;
  char* header;
  size_t line_no;
  int ncol;
  int col[C_NCOLS];      /* field index, or -1 */
  int kernel_time;       /* default of rows without a timing column: 1 for time_ms */
  const grape_gpu_spec_t* gpu_override;
  int need_latency;
};

/* Reads one line (any length) into c->line without its newline.
 * @return 1, 0 at the end, or -EIO / -ENOMEM. */
static int read_line(grape_csv_t* c) {
  size_t len = 0;
  for (;;) {
    if (c->cap - len < 2) {
      char* nl = grape__grow(c->line, &c->cap, len + 2, 1, 4096);
      if (nl == NULL)
        return -ENOMEM;
      c->line = nl;
    }
    if (gzgets(c->f, c->line + len, (int)(c->cap - len > 1 << 30 ? 1 << 30 : c->cap - len)) ==
        NULL) {
      int zerr;
      gzerror(c->f, &zerr);
      if (zerr != Z_OK && zerr != Z_BUF_ERROR)
        return -EIO;
      if (len == 0)
        return 0;
      break;
    }
    len += strlen(c->line + len);
    if (len > 0 && c->line[len - 1] == '\n')
      break;
    if (gzeof(c->f))
      break;
  }
  while (len > 0 && (c->line[len - 1] == '\n' || c->line[len - 1] == '\r'))
    c->line[--len] = '\0';
  c->line_no++;
  return 1;
}

/* Splits c->line into c->field[]; quotes removed. @return field count or -ENOMEM. */
static int split(grape_csv_t* c) {
  size_t len = strlen(c->line);
  if (c->work_cap < len + 1) {
    char* w = realloc(c->work, len + 1);
    if (w == NULL)
      return -ENOMEM;
    c->work = w;
    c->work_cap = len + 1;
  }
  int n = 0;
  const char* s = c->line;
  char* o = c->work;
  for (;;) {
    if ((size_t)n == c->nfield_cap) {
      char** nf = grape__grow(c->field, &c->nfield_cap, (size_t)n + 1, sizeof(*nf), 32);
      if (nf == NULL)
        return -ENOMEM;
      c->field = nf;
    }
    c->field[n++] = o;
    int quoted = *s == '"';
    if (quoted)
      s++;
    for (; *s; s++) {
      if (quoted && *s == '"') {
        if (s[1] == '"') {
          *o++ = '"';
          s++;
          continue;
        }
        quoted = 0;
        continue;
      }
      if (!quoted && *s == ',')
        break;
      *o++ = *s;
    }
    *o++ = '\0';
    if (*s != ',')
      return n;
    s++;
  }
}

static void trim(char* s) {
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
}

/* Writes "what; columns found: a, b, ..." to err (when it has room). */
static void header_error(grape_csv_t* c, const char* what, char* err, size_t err_len) {
  if (err == NULL || err_len == 0)
    return;
  size_t n = (size_t)snprintf(err, err_len, "%s; columns found:", what);
  for (int i = 0; i < c->ncol && n < err_len; i++)
    n += (size_t)snprintf(err + n, err_len - n, "%s %s", i ? "," : "",
                          c->field[i][0] ? c->field[i] : "(empty)");
}

int grape_csv_open_err(const char* path, const char* gpu_override, int need_latency,
                       grape_csv_t** out, char* err, size_t err_len) {
  int e;
  grape_csv_t* c = calloc(1, sizeof(*c));
  if (err != NULL && err_len > 0)
    err[0] = '\0';
  if (c == NULL)
    return -ENOMEM;
  c->need_latency = need_latency;
  if (gpu_override != NULL) {
    c->gpu_override = grape_gpu_find(gpu_override);
    if (c->gpu_override == NULL) {
      e = -ENODEV;
      goto fail_gpu;
    }
  }
  c->f = gzopen(path, "rb");
  if (c->f == NULL) {
    e = errno ? -errno : -ENOMEM;
    goto fail_gpu;
  }
  gzbuffer(c->f, 1 << 17);
  e = read_line(c);
  if (e <= 0) {
    if (e == 0 && err != NULL && err_len > 0)
      snprintf(err, err_len, "empty file: no header line");
    e = e == 0 ? -EINVAL : e;
    goto fail_header;
  }
  c->header = strdup(c->line);
  if (c->header == NULL) {
    e = -ENOMEM;
    goto fail_header;
  }
  e = split(c);
  if (e < 0)
    goto fail_split;
  c->ncol = e;
  for (int j = 0; j < C_NCOLS; j++) {
    c->col[j] = -1;
    for (int a = 0; a < 3 && col_names[j][a] != NULL && c->col[j] < 0; a++)
      for (int i = 0; i < c->ncol; i++) {
        trim(c->field[i]);
        if (strcasecmp(c->field[i], col_names[j][a]) == 0) {
          c->col[j] = i;
          if (j == C_LAT)
            c->kernel_time = a == 1;   /* grape's time_ms: a kernel timed alone */
          break;
        }
      }
  }
  /* Without a kernel name, its launch (grid and block), a GPU and (for
   * training) a latency, no row can be used: say so once instead of
   * rejecting every line, and never read a launch whose grid is not in the
   * file as a 1x1x1 one. */
  const char* missing =
      c->col[C_NAME] < 0 ? "no kernel name column (Kernel Name, kernel or name)"
      : c->col[C_GX] < 0 ? "no grid column (Grid x or grid_x; y and z may be absent)"
      : c->col[C_BX] < 0 ? "no block column (Block x or block_x; y and z may be absent)"
      : c->col[C_DEV] < 0 && c->gpu_override == NULL
          ? "no device column (Device or gpu) and no GPU given (--gpu NAME)"
      : need_latency && c->col[C_LAT] < 0
          ? "no measured time column (Latency, time_ms or latency_ms)"
          : NULL;
  if (missing != NULL) {
    header_error(c, missing, err, err_len);
    e = -EINVAL;
    goto fail_split;
  }
  *out = c;
  return 0;
fail_split:
  free(c->header);
fail_header:
  gzclose(c->f);
fail_gpu:
  free(c->line);
  free(c->work);
  free(c->field);
  free(c);
  return e;
}

int grape_csv_open(const char* path, const char* gpu_override, int need_latency,
                   grape_csv_t** out) {
  return grape_csv_open_err(path, gpu_override, need_latency, out, NULL, 0);
}

const char* grape_csv_header(const grape_csv_t* c) {
  return c->header;
}

void grape_csv_close(grape_csv_t* c) {
  if (c == NULL)
    return;
  gzclose(c->f);
  free(c->header);
  free(c->line);
  free(c->work);
  free(c->field);
  free(c);
}

/* ---- Rows ---- */

/* Parses column j as a finite number in [lo, hi]. Absent columns give dflt.
 * @return 0 or -1 with *why set. */
static int num(grape_csv_t* c, int j, double lo, double hi, double dflt, double* v,
               const char** why) {
  if (c->col[j] < 0) {
    *v = dflt;
    return 0;
  }
  const char* s = c->field[c->col[j]];
  char* e;
  errno = 0;
  double x = strtod(s, &e);
  while (isspace((unsigned char)*e))
    e++;
  if (e == s || *e != '\0' || errno == ERANGE || !isfinite(x)) {
    *why = "non-numeric field";
    return -1;
  }
  if (x < lo || x > hi) {
    *why = "number out of range";
    return -1;
  }
  *v = x;
  return 0;
}

static grape_op_t op_of(const char* op) {
  static const struct {
    const char* name;
    grape_op_t op;
  } map[] = {
      {"bmm", GRAPE_OP_GEMM},        {"linear", GRAPE_OP_GEMM},     {"gemm", GRAPE_OP_GEMM},
      {"matmul", GRAPE_OP_GEMM},     {"softmax", GRAPE_OP_SOFTMAX}, {"ln", GRAPE_OP_LAYERNORM},
      {"layernorm", GRAPE_OP_LAYERNORM}, {"conv", GRAPE_OP_CONV},
      {"elementwise", GRAPE_OP_ELEMENTWISE},
  };
  static const char* const ew[] = {"add", "addu", "mul", "mulu", "div", "divu", "pow",
                                   "powu", "relu", "gelu", "tanh", "sub", "subu"};
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (strcasecmp(op, map[i].name) == 0)
      return map[i].op;
  for (size_t i = 0; i < sizeof(ew) / sizeof(ew[0]); i++)
    if (strcasecmp(op, ew[i]) == 0)
      return GRAPE_OP_ELEMENTWISE;
  return GRAPE_OP_UNKNOWN;
}

/* Fills r->desc.op/dims from the dims columns. @return 0 or -1 with *why. */
static int parse_dims(grape_csv_t* c, grape_csv_row_t* r, const char** why) {
  grape_kernel_desc_t* k = &r->desc;
  double* d = k->dims;
  const double big = 1e12;
  if (c->col[C_OP] < 0) {
    k->op = GRAPE_OP_UNKNOWN;
    return 0;
  }
  const char* op = c->field[c->col[C_OP]];
  snprintf(r->op_name, sizeof(r->op_name), "%s", op);
  k->op = op_of(op);
  if (c->col[C_DIMS] >= 0 && c->field[c->col[C_DIMS]][0] != '\0') {
    /* grape's own format: "d0xd1x..." */
    char* s = c->field[c->col[C_DIMS]];
    for (int i = 0; i < 8 && *s; i++) {
      char* e;
      double v = strtod(s, &e);
      if (e == s || !isfinite(v) || v < 0 || v > big || (*e != 'x' && *e != '\0')) {
        *why = "bad dims field";
        return -1;
      }
      d[i] = v;
      s = *e ? e + 1 : e;
    }
    return 0;
  }
  switch (k->op) {
  case GRAPE_OP_GEMM: {
    /* NeuSight: bmm(B,M,N)x(B,N,K) and Linear(N->K) on (B,M,N): reduce N. */
    double b, m, n, kk;
    if (num(c, C_B, 1, big, 1, &b, why) || num(c, C_M, 1, big, 0, &m, why) ||
        num(c, C_N, 1, big, 0, &n, why) || num(c, C_K, 1, big, 0, &kk, why))
      return -1;
    d[0] = b, d[1] = m, d[2] = kk, d[3] = n;
    if (m == 0 || n == 0 || kk == 0) {
      *why = "missing GEMM dims";
      return -1;
    }
    return 0;
  }
  case GRAPE_OP_CONV:
    for (int j = C_B, i = 0; j <= C_PAD; j++) {
      if (j >= C_M && j <= C_H)
        continue;
      if (num(c, j, 0, big, j == C_ST ? 1 : 0, &d[i++], why))
        return -1;
    }
    if (d[0] < 1 || d[1] < 1 || d[2] < 1 || d[3] < 1 || d[4] < 1) {
      *why = "missing conv dims";
      return -1;
    }
    return 0;
  case GRAPE_OP_ELEMENTWISE:
  case GRAPE_OP_SOFTMAX:
  case GRAPE_OP_LAYERNORM: {
    double b, h;
    if (c->col[C_NUMEL] >= 0) {
      if (num(c, C_NUMEL, 1, big, 0, &d[0], why))
        return -1;
      d[1] = 0;
      return 0;
    }
    if (num(c, C_B, 1, big, 0, &b, why) || num(c, C_H, 1, big, 0, &h, why))
      return -1;
    if (b == 0 || h == 0) {
      *why = "missing B/H dims";
      return -1;
    }
    if (k->op == GRAPE_OP_ELEMENTWISE)
      d[0] = b * h, d[1] = 0;
    else
      d[0] = b, d[1] = h;
    return 0;
  }
  default: return 0;
  }
}

int grape_csv_next(grape_csv_t* c, grape_csv_row_t* r) {
  int err = read_line(c);
  if (err <= 0)
    return err;
  memset(r, 0, sizeof(*r));
  r->line = c->line;
  r->line_no = c->line_no;
  r->desc.regs = -1;
  const char* why = NULL;
  int n = split(c);
  if (n < 0)
    return n;
  if (n != c->ncol) {
    why = n < c->ncol ? "missing columns" : "extra columns";
    goto bad;
  }
  r->desc.name = c->field[c->col[C_NAME]];
  if (r->desc.name[0] == '\0') {
    why = "empty kernel name";
    goto bad;
  }
  double v[6], smem, regs;
  for (int i = 0; i < 6; i++)
    if (num(c, C_GX + i, 1, 2147483647.0, 1, &v[i], &why))
      goto bad;
  for (int i = 0; i < 3; i++) {
    r->desc.grid[i] = (unsigned)v[i];
    r->desc.block[i] = (unsigned)v[3 + i];
  }
  if (v[3] * v[4] * v[5] > 1024) {
    why = "block over 1024 threads";
    goto bad;
  }
  if (num(c, C_SMEM, 0, 1 << 30, 0, &smem, &why) || num(c, C_REGS, -1, 255, -1, &regs, &why))
    goto bad;
  r->desc.dyn_smem = (size_t)smem;
  r->desc.regs = (int)regs;
  if (parse_dims(c, r, &why))
    goto bad;
  r->group = grape_kernel_classify(r->desc.name, r->desc.op);
  if (strcasecmp(r->op_name, "linear") == 0)
    r->group = GRAPE_KC_COUNT;
  if (c->col[C_DEV] >= 0) {
    /* "NAME (simcu)": the simulated device standing in for GPU NAME. */
    char* dev = c->field[c->col[C_DEV]];
    size_t dl = strlen(dev), sl = sizeof(sim_suffix) - 1;
    if (dl > sl && strcmp(dev + dl - sl, sim_suffix) == 0) {
      r->simulated = 1;
      dev[dl - sl] = '\0';
    }
  }
  if (c->gpu_override != NULL) {
    r->gpu = c->gpu_override;
  } else {
    r->gpu = grape_gpu_find(c->field[c->col[C_DEV]]);
    if (r->gpu == NULL) {
      why = "unknown GPU";
      goto bad;
    }
  }
  r->kernel_time = c->kernel_time;
  if (c->col[C_TIMING] >= 0) {
    const char* tk = c->field[c->col[C_TIMING]];
    if (strcasecmp(tk, "kernel") == 0)
      r->kernel_time = 1;
    else if (strcasecmp(tk, "op") == 0)
      r->kernel_time = 0;
    else if (tk[0] != '\0') {
      why = "timing is neither 'kernel' nor 'op'";
      goto bad;
    }
  }
  if (c->col[C_LAT] >= 0 && (c->need_latency || c->field[c->col[C_LAT]][0] != '\0')) {
    if (num(c, C_LAT, -INFINITY, INFINITY, 0, &r->latency_ms, &why))
      goto bad;
    if (!(r->latency_ms > 0)) {
      why = "latency not positive";
      goto bad;
    }
    if (r->latency_ms < LAT_MIN_MS || r->latency_ms > LAT_MAX_MS) {
      why = "latency out of range (1e-6 to 1e7 ms)";
      goto bad;
    }
  }
  r->ok = 1;
  return 1;
bad:
  r->ok = 0;
  r->why = why;
  if (r->desc.name == NULL || r->desc.name[0] == '\0')
    r->group = -1;
  else
    r->group = grape_kernel_classify(r->desc.name, r->desc.op);
  return 1;
}
