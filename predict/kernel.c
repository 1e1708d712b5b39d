/* Kernel records and features: from a launch (name, grid, block, shared
 * memory, registers, op dims) to what the models read.
 *
 * DESIGN: parsing the name (class, tile shape, data type, kernel family) is
 * the only string work and happens once, in grape__kernel_prep(); everything
 * per target GPU (occupancy, waves, roofline times) is a few arithmetic
 * operations on the resulting grape__kprep_t, so predicting one prepared
 * kernel costs well under a microsecond. Names are matched by substrings
 * (case-insensitive) rather than by a demangler, because what decides the
 * class is stable vocabulary ("gemm", "softmax", "layer_norm", "cudnn") that
 * survives the many spellings of cuBLAS, CUTLASS, cuDNN and PyTorch kernels.
 * When registers or static shared memory are unknown they are estimated from
 * the tile shape (GEMMs) or set to a typical 32 registers per thread.
 */
#include "predict/kernel.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(grape__kprep_t) <= sizeof(grape_kernel_prep_t),
               "grape_kernel_prep_t is too small for grape__kprep_t");

/* Substring test on a lower-cased name; `what` must be lower case. */
static int has(const char* s, const char* what) {
  return strstr(s, what) != NULL;
}

/* Lower-cases up to cap-1 bytes of s into buf: one pass, so the many
 * substring tests below can use plain (vectorised) strstr. */
static const char* lower(const char* s, char* buf, size_t cap) {
  size_t i = 0;
  for (; s[i] && i + 1 < cap; i++)
    buf[i] = (char)tolower((unsigned char)s[i]);
  buf[i] = '\0';
  return buf;
}

/* ---- Classification ---- */

static const char* const class_names[GRAPE_KC_COUNT] = {
    "gemm", "elementwise", "softmax", "layernorm", "conv", "other"};

const char* grape_kclass_name(grape_kclass_t c) {
  return (unsigned)c < GRAPE_KC_COUNT ? class_names[c] : "?";
}

static grape_kclass_t classify_lower(const char* n) {
  /* Not the math but the passes around it, named like the kernels they
   * serve: the transforms of non-fused Winograd and FFT convolutions (whose
   * GEMM is a kernel of its own) and the reductions that sum a split-K
   * GEMM's partial tiles (cuBLAS's splitKreduce_kernel, CUTLASS's
   * ReduceSplitK, xmma's ..._execute_split_k_kernel_...) stream memory once:
   * a convolution's or GEMM's time overprices them 4-20x
   * (docs/predictor.md, "Public kernel-level timings"). */
  if (has(n, "winograd_nonfused") || has(n, "winogradtiles") || has(n, "fft2d_") ||
      has(n, "fft1d_") || has(n, "reducesplitk") || has(n, "splitkreduce") ||
      has(n, "split_k_kernel"))
    return GRAPE_KC_OTHER;
  /* Convolutions before GEMMs: cuDNN's are often named "...sgemm..." too.
   * Not every cuDNN kernel is one: layout transforms, offset tables and
   * batch norm are not (a convolution's time, op-level in the training
   * data, would price a 3 us transpose at hundreds). */
  if (has(n, "conv") || has(n, "scudnn") || has(n, "winograd") || has(n, "fft") ||
      has(n, "gcgemm"))
    return GRAPE_KC_CONV;
  if (has(n, "layer_norm") || has(n, "layernorm") || has(n, "rms_norm") || has(n, "rmsnorm"))
    return GRAPE_KC_LAYERNORM;
  if (has(n, "softmax") || has(n, "reduce_kernel") || has(n, "reduction"))
    return GRAPE_KC_SOFTMAX;
  if (has(n, "gemm") || has(n, "cutlass") || has(n, "xmma") || has(n, "gemv") ||
      has(n, "matmul"))
    return GRAPE_KC_GEMM;
  if (has(n, "elementwise") || has(n, "pointwise") || has(n, "functor"))
    return GRAPE_KC_ELEMENTWISE;
  return GRAPE_KC_OTHER;
}

static grape_kclass_t classify_name(const char* name) {
  char buf[1024];
  if (name == NULL)
    return GRAPE_KC_OTHER;
  return classify_lower(lower(name, buf, sizeof(buf)));
}

grape_kclass_t grape_kernel_classify(const char* name, grape_op_t op) {
  switch (op) {
  case GRAPE_OP_GEMM: return GRAPE_KC_GEMM;
  case GRAPE_OP_ELEMENTWISE: return GRAPE_KC_ELEMENTWISE;
  case GRAPE_OP_SOFTMAX: return GRAPE_KC_SOFTMAX;
  case GRAPE_OP_LAYERNORM: return GRAPE_KC_LAYERNORM;
  case GRAPE_OP_CONV: return GRAPE_KC_CONV;
  default: return classify_name(name);
  }
}

/* ---- Name parsing ---- */

/* Finds the first "AxB" with A, B >= 16 (a tile shape) after `from`. */
static int parse_tile(const char* s, double* tm, double* tn) {
  for (const char* p = s; *p; p++) {
    if (*p < '0' || *p > '9' || (p > s && p[-1] >= '0' && p[-1] <= '9'))
      continue;
    char* e;
    long a = strtol(p, &e, 10);
    if (*e != 'x' || e[1] < '0' || e[1] > '9')
      continue;
    long b = strtol(e + 1, &e, 10);
    if (a >= 16 && b >= 16 && a <= 512 && b <= 512) {
      *tm = (double)a;
      *tn = (double)b;
      return 1;
    }
  }
  return 0;
}

/* Math unit of a kernel: 0 FP32 SIMT, 1 TF32 tensor, 2 FP16, 3 BF16, 4 FP64. */
static int parse_math(const char* n, double* dtype) {
  if (has(n, "bf16") || has(n, "bfloat16") || has(n, "bfloat16")) {
    *dtype = 2;
    return 3;
  }
  if (has(n, "hgemm") || has(n, "f16") || has(n, "half") || has(n, "h1688") ||
      has(n, "h884") || has(n, "h16816")) {
    *dtype = 2;
    return 2;
  }
  if (has(n, "dgemm") || has(n, "double")) {
    *dtype = 8;
    return 4;
  }
  *dtype = 4;
  if (has(n, "tf32") || has(n, "s1688") || has(n, "s16816") || has(n, "tensorop"))
    return 1;
  return 0;
}

static int gemm_variant(const char* n) {
  if (has(n, "gemv"))
    return 2;
  if (has(n, "splitk") || has(n, "split_k"))
    return 3;
  if (has(n, "tensorop") || has(n, "xmma") || has(n, "wgmma") || has(n, "1688") ||
      has(n, "16816") || has(n, "884"))
    return 4;
  if (has(n, "sliced"))
    return 1;
  if (has(n, "cutlass"))
    return 5;
  return 0;
}

/* The cuBLAS kernel generation a name starts with: 1 maxwell_ (what Pascal
 * GPUs run), 2 volta_ or turing_, 3 ampere_, 0 any other. */
static int gemm_generation(const char* n) {
  if (!strncmp(n, "maxwell_", 8))
    return 1;
  if (!strncmp(n, "volta_", 6) || !strncmp(n, "turing_", 7))
    return 2;
  return !strncmp(n, "ampere_", 7) ? 3 : 0;
}

/* "_nn", "_nt", "_tn", "_tt" as a whole name part: cuBLAS operand layouts. */
static int gemm_layout(const char* n) {
  static const char* const l[4] = {"_nn", "_nt", "_tn", "_tt"};
  for (int i = 0; i < 4; i++)
    for (const char* p = n; (p = strstr(p, l[i])) != NULL; p++)
      if (p[3] == '\0' || p[3] == '_' || p[3] == '(')
        return i + 1;
  return 0;
}

/* Elementwise functor family. Costs below are FLOPs per element, rough. */
static int ew_variant(const char* n) {
  if (has(n, "pow"))
    return 3;
  if (has(n, "gelu") || has(n, "erf"))
    return 4;
  if (has(n, "tanh") || has(n, "exp") || has(n, "sigmoid") || has(n, "log") || has(n, "silu"))
    return 5;
  if (has(n, "clamp") || has(n, "relu") || has(n, "threshold") || has(n, "max") ||
      has(n, "min"))
    return 6;
  if (has(n, "div"))
    return 2;
  if (has(n, "mul"))
    return 1;
  if (has(n, "add") || has(n, "sub"))
    return 0;
  return 7;
}
static const double ew_cost[GRAPE__NVARIANT] = {1, 1, 4, 12, 20, 16, 1, 1};

static int softmax_variant(const char* n) {
  if (has(n, "softmax_warp"))
    return 0;
  if (has(n, "softmax") || has(n, "softmax"))
    return 1;
  return 2;
}

static int conv_variant(const char* n) {
  if (has(n, "winograd"))
    return 0;
  if (has(n, "implicit"))
    return 1;
  if (has(n, "explicit"))
    return 2;
  if (has(n, "fft") || has(n, "gcgemm"))
    return 3;
  if (has(n, "scudnn") || has(n, "cudnn"))
    return 4;
  if (has(n, "gemm"))
    return 5;
  return 6;
}

/* Elements a thread of a PyTorch elementwise kernel handles: the vector
 * width of vectorized_elementwise_kernel<N, ...>, the work per thread of
 * elementwise_kernel<threads, N, ...>, 4 for unrolled_elementwise_kernel
 * (PyTorch's thread_work_size); 1 for any other kernel. */
static double ew_per_thread(const char* n) {
  const char* p;
  if ((p = strstr(n, "vectorized_elementwise_kernel<")) != NULL) {
    long v = strtol(p + 30, NULL, 10);
    return v >= 1 && v <= 16 ? (double)v : 1;
  }
  if (strstr(n, "unrolled_elementwise_kernel") != NULL)
    return 4;
  if ((p = strstr(n, "elementwise_kernel<")) != NULL && (p = strchr(p, ',')) != NULL) {
    long v = strtol(p + 1, NULL, 10);
    return v >= 1 && v <= 16 ? (double)v : 1;
  }
  return 1;
}

/* "Array<char*, 3>" in PyTorch's elementwise kernels: tensors touched. */
static double parse_operands(const char* n) {
  const char* p = strstr(n, "Array<char*, ");
  if (p == NULL)
    return 0;
  long v = strtol(p + 13, NULL, 10);
  return v >= 1 && v <= 16 ? (double)v : 0;
}

/* ---- Prepare ---- */

static double dim(const grape_kernel_desc_t* k, int i) {
  double v = k->dims[i];
  return isfinite(v) && v > 0 ? v : 0;
}

void grape__kernel_prep(const grape_kernel_desc_t* k, grape__kprep_t* p) {
  char buf[1024];
  const char* raw = k->name != NULL ? k->name : "";
  const char* n = lower(raw, buf, sizeof(buf));
  memset(p, 0, sizeof(*p));
  grape_kclass_t cls = k->op != GRAPE_OP_UNKNOWN ? grape_kernel_classify(NULL, k->op)
                                                 : classify_lower(n);
  p->cls = cls;
  p->blocks = 1;
  p->threads = 1;
  for (int i = 0; i < 3; i++) {
    p->blocks *= k->grid[i] ? k->grid[i] : 1;
    p->threads *= k->block[i] ? k->block[i] : 1;
  }
  double dt;
  p->math = parse_math(n, &dt);
  p->dtype = k->dtype_bytes > 0 ? k->dtype_bytes : dt;
  p->smem = (double)k->dyn_smem;
  double regs = 32;

  switch (cls) {
  case GRAPE_KC_GEMM:
    p->variant = gemm_variant(n);
    p->layout = gemm_layout(n);
    p->gen = gemm_generation(n);
    if (parse_tile(strstr(n, "tilesize") ? strstr(n, "tilesize") : n, &p->tile_m,
                   &p->tile_n)) {
      /* Accumulators per thread plus addressing; 8-deep double-buffered tiles. */
      regs = fmin(255, p->tile_m * p->tile_n / p->threads + 48);
      p->smem += (p->tile_m + p->tile_n) * 8 * p->dtype * 2;
    } else {
      regs = 96;
    }
    break;
  case GRAPE_KC_ELEMENTWISE:
    p->variant = ew_variant(n);
    p->operands = parse_operands(raw);
    break;
  case GRAPE_KC_SOFTMAX: p->variant = softmax_variant(n); break;
  case GRAPE_KC_LAYERNORM: p->variant = has(n, "vectorized") ? 0 : 1; break;
  case GRAPE_KC_CONV:
    p->variant = conv_variant(n);
    regs = 96;
    if (parse_tile(n, &p->tile_m, &p->tile_n))
      p->smem += (p->tile_m + p->tile_n) * 8 * p->dtype * 2;
    break;
  default: p->variant = 0; break;
  }
  p->regs = k->regs > 0 ? k->regs : regs;

  double d = p->dtype;
  switch (k->op) {
  case GRAPE_OP_GEMM: {
    double b = fmax(1, dim(k, 0)), m = dim(k, 1), nn = dim(k, 2), kk = dim(k, 3);
    if (m > 0 && nn > 0 && kk > 0) {
      p->flops = 2 * b * m * nn * kk;
      p->bytes = d * b * (m * kk + kk * nn + m * nn);
      p->kred = kk;
      p->numel = b * m * nn;
      p->has_dims = 1;
      p->shape[0] = b, p->shape[1] = m, p->shape[2] = nn, p->shape[3] = kk;
      if (p->tile_m > 0) {
        /* cuBLAS may swap M and N (column major): take the orientation whose
         * tile count is closer to the grid. Blocks beyond the tiles split K. */
        double ta = b * ceil(m / p->tile_m) * ceil(nn / p->tile_n);
        double tb = b * ceil(m / p->tile_n) * ceil(nn / p->tile_m);
        double tiles = fabs(log(ta / p->blocks)) <= fabs(log(tb / p->blocks)) ? ta : tb;
        p->blk_flops = 2 * p->tile_m * p->tile_n * kk * tiles / p->blocks;
      }
    }
    break;
  }
  case GRAPE_OP_ELEMENTWISE:
    if (dim(k, 0) > 0) {
      double ops = dim(k, 1) > 0 ? dim(k, 1) : (p->operands > 0 ? p->operands : 2);
      p->operands = ops;
      p->numel = dim(k, 0);
      p->bytes = d * p->numel * ops;
      p->flops = p->numel * ew_cost[(int)p->variant];
      p->has_dims = 1;
      p->shape[0] = p->numel;
    }
    break;
  case GRAPE_OP_SOFTMAX:
  case GRAPE_OP_LAYERNORM:
    if (dim(k, 0) > 0 && dim(k, 1) > 0) {
      p->numel = dim(k, 0) * dim(k, 1);
      p->cols = dim(k, 1);
      p->bytes = 2 * d * p->numel + (k->op == GRAPE_OP_LAYERNORM ? 2 * d * p->cols : 0);
      p->flops = (k->op == GRAPE_OP_LAYERNORM ? 8 : 5) * p->numel;
      p->has_dims = 1;
      p->shape[0] = dim(k, 0), p->shape[1] = dim(k, 1);
    }
    break;
  case GRAPE_OP_CONV: {
    double b = dim(k, 0), ci = dim(k, 1), co = dim(k, 2), ks = dim(k, 3), s = dim(k, 4);
    double st = dim(k, 5) > 0 ? dim(k, 5) : 1, pad = dim(k, 6);
    double o = floor((s + 2 * pad - ks) / st) + 1;
    if (b > 0 && ci > 0 && co > 0 && ks > 0 && s > 0 && o > 0) {
      p->flops = 2 * b * co * o * o * ci * ks * ks;
      p->bytes = d * (b * ci * s * s + co * ci * ks * ks + b * co * o * o);
      p->numel = b * co * o * o;
      p->kred = ci * ks * ks;
      p->has_dims = 1;
      p->shape[0] = b, p->shape[1] = ci, p->shape[2] = co, p->shape[3] = s;
    }
    break;
  }
  default: break;
  }
  if (!p->has_dims) {
    /* Launch-only estimates: one element per thread, in and out; a
     * PyTorch elementwise kernel's elements per thread and tensors touched
     * from its template arguments. */
    p->numel = p->blocks * p->threads;
    if (cls == GRAPE_KC_GEMM && p->tile_m > 0)
      p->numel = p->blocks * p->tile_m * p->tile_n;
    double touched = 2;
    if (cls == GRAPE_KC_ELEMENTWISE) {
      p->numel *= ew_per_thread(n);
      if (p->operands > 0)
        touched = p->operands;
    }
    p->bytes = touched * d * p->numel;
    p->flops = 0;
  }
}

void grape_kernel_prepare(const grape_kernel_desc_t* k, grape_kernel_prep_t* out) {
  memset(out, 0, sizeof(*out));
  grape__kernel_prep(k, (grape__kprep_t*)(void*)out);
}

/* ---- Occupancy ---- */

void grape__occupancy(const grape__kprep_t* p, const grape_gpu_spec_t* g, grape__occ_t* o) {
  double warps = ceil(p->threads / 32);
  double per = g->max_blocks_per_sm;
  per = fmin(per, floor(g->max_threads_per_sm / (warps * 32)));
  double regs_warp = ceil(p->regs * 32 / 256) * 256;  /* allocation unit: 256 registers */
  per = fmin(per, floor(g->regs_per_sm / (regs_warp * warps)));
  if (p->smem > 0)
    per = fmin(per, floor(g->smem_per_sm_kb * 1024.0 / p->smem));
  if (!(per >= 1))
    per = 1;
  double slots = per * g->sm_count;
  o->per_sm = per;
  o->waves = ceil(p->blocks / slots);
  o->util = p->blocks / (o->waves * slots);
  o->fill = fmin(1, p->blocks * warps * 32 / ((double)g->max_threads_per_sm * g->sm_count));
}

double grape__peak_tflops(const grape__kprep_t* p, const grape_gpu_spec_t* g) {
  double t = 0;
  switch ((int)p->math) {
  case 1: t = g->tf32_tflops; break;
  case 2: t = g->fp16_tflops; break;
  case 3: t = g->bf16_tflops; break;
  case 4: t = g->fp32_tflops / 2; break;  /* datacenter FP64 rate, an upper bound */
  default: break;
  }
  return t > 0 ? t : g->fp32_tflops;
}
