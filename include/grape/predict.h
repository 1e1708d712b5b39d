/* grape predictor API: GPU spec table, kernel-time prediction, training data.
 *
 * Predicts how long a CUDA kernel takes on a target GPU from what the shim sees
 * at launch: the demangled kernel name, grid, block, dynamic shared memory,
 * registers per thread (when known) and, when known, the operation's
 * dimensions. Three models share one text model file: a roofline, Li et al.'s
 * per-class linear model (MICRO'23) as a baseline, and grape's own. grape's
 * has two regimes: on a GPU with measured rows in its training data, a model
 * learned from that GPU's rows ("known"); on any other GPU, a wave-aware,
 * spec-normalised log-space regression per kernel class that transfers
 * across GPUs ("transfer"). Each of its predictions carries an interval
 * (nominally 80%) calibrated on held-out data of the same regime
 * (docs/predictor.md).
 *
 * For the shim's exit report (GRAPE_PREDICT_GPU=<name>), these calls suffice:
 *
 *   grape_model_t* m;
 *   if (grape_model_load_default(&m) < 0) ...;            // built-in model
 *   const grape_gpu_spec_t* g = grape_gpu_find(getenv("GRAPE_PREDICT_GPU"));
 *   if (g == NULL) ... grape_gpu_list(stderr) ...;       // unknown name
 *   grape_kernel_desc_t k = {.name = "ampere_sgemm_128x64_tn",
 *                            .grid = {8, 16, 1}, .block = {128, 1, 1},
 *                            .regs = -1};              // op = GRAPE_OP_UNKNOWN
 *   double ms = grape_predict_kernel_ms(m, g, &k);
 *   grape_path_prediction_t pp;                          // times with bounds
 *   grape_predict_path_interval(m, g, kernels, n, &pp);
 *   grape_model_free(m);
 *
 * DESIGN: all functions are pure computations over read-only data, so they are
 * thread-safe, except grape_gpu_load_json(), which edits the process-wide GPU
 * table and must not race with lookups. Errors are negative errno values. A
 * kernel the model cannot place (no name, no grid) still gets a prediction:
 * the class "other" with launch-only features; predictions are never NaN and
 * never below the model's launch floor.
 */
#ifndef GRAPE_PREDICT_H
#define GRAPE_PREDICT_H

#include <stddef.h>
#include <stdio.h>

#include "grape/grape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a public struct below changes layout. */
#define GRAPE_PREDICT_API_VERSION 9
/* Version written on the first line of model files; others are refused. */
#define GRAPE_MODEL_FORMAT_VERSION 7

/* ---- GPU specs ---- */

/* One GPU's datasheet numbers. Read-only; pointers stay valid for the process
 * lifetime (entries loaded from JSON are never freed). Peaks are dense (no
 * sparsity), in TFLOP/s; 0 means the GPU has no such unit. */
typedef struct grape_gpu_spec_s {
  const char* name;          /* as nvidia-smi / torch.cuda.get_device_name() prints it */
  const char* arch;          /* "sm_80" */
  int sm_count;              /* streaming multiprocessors */
  int clock_mhz;             /* boost clock */
  double mem_bw_gbs;         /* DRAM bandwidth, GB/s */
  double l2_mb;              /* L2 cache, MiB */
  double mem_gb;             /* device memory, GB */
  double fp32_tflops;        /* non-tensor FP32 */
  double fp16_tflops;        /* FP16 tensor core (FP32 accumulate), else FP16 SIMT */
  double bf16_tflops;        /* BF16 tensor core */
  double tf32_tflops;        /* TF32 tensor core */
  int regs_per_sm;           /* 32-bit registers */
  int smem_per_sm_kb;        /* shared memory per SM usable by blocks, KiB */
  int smem_per_block_kb;     /* max shared memory per block, KiB */
  int max_threads_per_sm;
  int max_blocks_per_sm;
  const char* source;        /* where the numbers come from */
} grape_gpu_spec_t;

/* @return the GPU whose name matches, case-insensitive, ignoring spaces,
 * dashes and underscores ("Tesla T4", "tesla_t4", "T4"...); NULL if none. */
GRAPE_API const grape_gpu_spec_t* grape_gpu_find(const char* name);
/* @return the number of known GPUs; grape_gpu_at(i) for i below it. */
GRAPE_API size_t grape_gpu_count(void);
GRAPE_API const grape_gpu_spec_t* grape_gpu_at(size_t i);
/* Writes the known names, one a line, to `to` (for "unknown GPU" errors). */
GRAPE_API void grape_gpu_list(FILE* to);
/* Adds or overrides a GPU from a NeuSight device JSON (Device, Mem_Bw GB/s,
 * Num_Sm, Core_Per_SM, Freq MHz, SingleFLOPs GFLOP/s, L2Cache MB, Dev_Mem GB).
 * Fields the JSON lacks keep the built-in values of the GPU it overrides, or
 * defaults from its nearest known generation. Not thread-safe.
 * @return 0 and *out, or -ENOENT / -EINVAL / -ENOMEM. */
GRAPE_API int grape_gpu_load_json(const char* path, const grape_gpu_spec_t** out);
/* The same, with what is wrong in err (errcap bytes, NUL-terminated; empty on
 * success) when the file is not a device JSON: the JSON reader's message with
 * its byte offset, or the field at fault ("\"Mem_Bw\" is not a positive
 * number"). API version 7. */
GRAPE_API int grape_gpu_load_json_err(const char* path, const grape_gpu_spec_t** out, char* err,
                                      size_t errcap);

/* ---- Kernels ---- */

/* What `dims` of a kernel describe. */
typedef enum grape_op_e {
  GRAPE_OP_UNKNOWN = 0,      /* no dims: predict from the launch alone */
  GRAPE_OP_GEMM,             /* dims: batch, M, N, K; C[b,M,N] = A[b,M,K]·B[b,K,N] */
  GRAPE_OP_ELEMENTWISE,      /* dims: numel, operands (inputs + outputs, 0 = from the name) */
  GRAPE_OP_SOFTMAX,          /* dims: rows, cols (reduces over cols) */
  GRAPE_OP_LAYERNORM,        /* dims: rows, cols (reduces over cols) */
  GRAPE_OP_CONV,             /* dims: batch, in ch, out ch, kernel size, input size, stride, padding */
} grape_op_t;

typedef struct grape_kernel_desc_s {
  const char* name;          /* demangled kernel name; NULL = unknown */
  unsigned grid[3];          /* 0 counts as 1 */
  unsigned block[3];
  size_t dyn_smem;           /* dynamic shared memory, bytes */
  int regs;                  /* registers per thread, -1 = unknown */
  grape_op_t op;
  double dims[8];
  int dtype_bytes;           /* element size; 0 = from the name, else 4 */
} grape_kernel_desc_t;

/* Kernel classes the models fit separately. */
typedef enum grape_kclass_e {
  GRAPE_KC_GEMM = 0,         /* cuBLAS / CUTLASS / xmma GEMMs */
  GRAPE_KC_ELEMENTWISE,
  GRAPE_KC_SOFTMAX,          /* softmax and other row reductions */
  GRAPE_KC_LAYERNORM,
  GRAPE_KC_CONV,             /* cuDNN convolutions (op-level: all their kernels) */
  GRAPE_KC_OTHER,
  GRAPE_KC_COUNT
} grape_kclass_t;

/* @return "gemm", "elementwise", ... for a class. */
GRAPE_API const char* grape_kclass_name(grape_kclass_t c);
/* @return the class of a kernel from its name, refined by `op` when known. */
GRAPE_API grape_kclass_t grape_kernel_classify(const char* name, grape_op_t op);

/* ---- Models ---- */

typedef struct grape_model_s grape_model_t;

typedef enum grape_method_e {
  GRAPE_METHOD_ROOFLINE = 0,  /* max(FLOPs/peak, bytes/bandwidth) x per-class scale */
  GRAPE_METHOD_LI,            /* Li et al.: per-class linear in FLOPs and bytes */
  GRAPE_METHOD_GRAPE,         /* grape's model (default) */
  GRAPE_METHOD_COUNT
} grape_method_t;

/* Loads the model built into the library (trained on the NeuSight data;
 * data/default_model.txt). @return 0 and *out (free with grape_model_free). */
GRAPE_API int grape_model_load_default(grape_model_t** out);
/* Loads a model file written by grape_model_save(). A file of another format
 * version fails with -EPROTO; a damaged one with -EINVAL (and a message
 * naming the line in `err` when err != NULL, err_len > 0). */
GRAPE_API int grape_model_load(const char* path, grape_model_t** out, char* err, size_t err_len);
GRAPE_API int grape_model_parse(const char* text, size_t len, grape_model_t** out, char* err,
                                size_t err_len);
GRAPE_API int grape_model_save(const grape_model_t* m, const char* path);
GRAPE_API void grape_model_free(grape_model_t* m);

/* Predicted kernel time in milliseconds with grape's model. */
GRAPE_API double grape_predict_kernel_ms(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                                         const grape_kernel_desc_t* k);
GRAPE_API double grape_predict_kernel_ms_with(const grape_model_t* m, grape_method_t method,
                                              const grape_gpu_spec_t* gpu,
                                              const grape_kernel_desc_t* k);

/* A kernel with its name already parsed, for callers that predict the same
 * launch shape often (the shim: once per function). Plain data, no pointers. */
typedef struct grape_kernel_prep_s {
  double v[24];              /* opaque */
} grape_kernel_prep_t;
GRAPE_API void grape_kernel_prepare(const grape_kernel_desc_t* k, grape_kernel_prep_t* out);
GRAPE_API double grape_predict_prepared_ms(const grape_model_t* m, grape_method_t method,
                                           const grape_gpu_spec_t* gpu,
                                           const grape_kernel_prep_t* p);

/* A path's time: the sum of its kernels' predicted times plus launch gaps,
 * once launched one by one (eager) and once as one CUDA graph. Gaps are the
 * model's per-launch overheads (docs/predictor.md). @return 0, or -EINVAL. */
GRAPE_API int grape_predict_path(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                                 const grape_kernel_desc_t* k, size_t n, double* eager_ms,
                                 double* graph_ms);

/* ---- Regimes and intervals (grape's model) ---- */

/* Which part of grape's model served a prediction. */
typedef enum grape_regime_e {
  GRAPE_REGIME_TRANSFER = 0, /* spec-based transfer: no training rows of this GPU and class */
  GRAPE_REGIME_KNOWN,        /* learned from this GPU's own measured rows */
  GRAPE_REGIME_KNOWN_EXTRAPOLATED, /* a GPU with rows of the class, but a kernel beyond them
                                      (larger in some dimension or in work): the learned
                                      correction fades, the interval widens with the distance */
} grape_regime_t;

/* @return "transfer", "known" or "known-extrapolated". */
GRAPE_API const char* grape_regime_name(grape_regime_t r);

/* One kernel's prediction with its interval: the measured time falls within
 * [lo_ms, hi_ms] with probability `level` (0.8 in the default model), as
 * measured on held-out data of the same regime. When the model has no
 * calibrated interval for the regime (it was trained on one GPU only, so no
 * GPU could be held out), has_interval is 0, lo_ms 0 and hi_ms INFINITY.
 *
 * ms is the kernel's own time on the GPU (what a profiler or events around
 * the kernel in a stream measure); harness_ms is the latency of the op
 * through a timing harness like the training data's (events around one
 * PyTorch call: the host's dispatch floor included, about 25-60 us even for
 * the smallest op), for users who time with such a harness. */
typedef struct grape_prediction_s {
  double ms;
  double lo_ms, hi_ms;
  double level;
  int has_interval;
  grape_regime_t regime;
  double distance;           /* how far beyond the training rows of the fit that served it:
                                the largest log ratio by which one of the op's sizes exceeds
                                theirs (0 within them); the interval widens with it */
  double harness_ms;         /* the op's latency through a timing harness */
  double harness_lo_ms, harness_hi_ms;
  int kclass;                /* the kernel's grape_kclass_t */
  double shared;             /* the share of its log error's variance that is a level
                                shared by the class's kernels on this GPU (0..1), as
                                cross-validation measured it; a path combines with it */
} grape_prediction_t;

/* A kernel's prediction by any model: grape's (the same as
 * grape_predict_kernel) or a baseline's (its time as harness_ms, the kernel
 * time derived from it as grape's is, the transfer regime, no interval). */
GRAPE_API void grape_predict_with(const grape_model_t* m, grape_method_t method,
                                  const grape_gpu_spec_t* gpu, const grape_kernel_desc_t* k,
                                  grape_prediction_t* out);
/* grape's prediction of one kernel (the same ms as grape_predict_kernel_ms). */
GRAPE_API void grape_predict_kernel(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                                    const grape_kernel_desc_t* k, grape_prediction_t* out);
GRAPE_API void grape_predict_prepared(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                                      const grape_kernel_prep_t* p, grape_prediction_t* out);

/* A path's predicted times with bounds, composed as a GPU runs it. Eager,
 * the host issues kernel after kernel (a launch gap each, or the measured
 * host gaps of grape_path_combine_gaps) while the device runs them through
 * its queue: a kernel starts when it has been issued and the previous one
 * has ended, so the path costs about the larger of host issue and device
 * time, not their sum. As a graph, one graph launch replaces the per-kernel
 * issue, plus a small per-node gap on the device. The bounds combine the
 * kernels' errors as cross-validation measured them: per class a level
 * shared by all its kernels on the GPU (moving together), plus independent
 * errors per distinct launch (repeats of one launch share theirs); the
 * classes' levels are independent of each other. Never the sum of bounds
 * (docs/predictor.md). */
typedef struct grape_path_prediction_s {
  double eager_ms, eager_lo_ms, eager_hi_ms;
  double graph_ms, graph_lo_ms, graph_hi_ms;
  double level;              /* nominal coverage of each kernel's interval */
  int has_interval;          /* 0 when a kernel had none: lo 0, hi INFINITY */
  size_t kernels;            /* kernels in the path */
  size_t known;              /* of them, served by the known regime */
} grape_path_prediction_t;

/* The whole path in one call: every kernel's prediction and interval, the
 * launch gaps, eager and graph. @return 0, or -EINVAL (m or gpu NULL, or k
 * NULL with n > 0). */
GRAPE_API int grape_predict_path_interval(const grape_model_t* m, const grape_gpu_spec_t* gpu,
                                          const grape_kernel_desc_t* k, size_t n,
                                          grape_path_prediction_t* out);
/* The same from kernel predictions made earlier (a caller that caches one
 * prediction per launch shape): k[0..n) in launch order, repeats included.
 * @return 0, or -EINVAL. */
GRAPE_API int grape_path_combine(const grape_model_t* m, const grape_prediction_t* k, size_t n,
                                 grape_path_prediction_t* out);
/* The same with the host's time to issue each kernel measured (host_ms[i]:
 * from the previous launch call, or the path's start, to kernel i's; NULL,
 * or a negative entry: the model's eager launch gap). @return 0, -EINVAL,
 * or -ENOMEM. */
GRAPE_API int grape_path_combine_gaps(const grape_model_t* m, const grape_prediction_t* k,
                                      const double* host_ms, size_t n,
                                      grape_path_prediction_t* out);
/* A run's paths: one path's kernel predictions (launch order, repeats
 * included), its host gaps (NULL: the model's), and how many times it ran. */
typedef struct grape_run_path_s {
  const grape_prediction_t* k;
  const double* host_ms;
  size_t n;
  double count;
} grape_run_path_t;
/* A whole run, paths[0..npaths) each run count times: times are the sums of
 * the paths' times; the bounds combine every kernel's error across paths
 * as a path's do (a level per class and regime shared by all of the run's
 * kernels of it, an error per distinct launch shared by its repeats in
 * every path, distinct launches and classes independent), never the sum of
 * the paths' bounds. kernels and known count every run of every path.
 * @return 0, -EINVAL, or -ENOMEM. */
GRAPE_API int grape_run_combine(const grape_model_t* m, const grape_run_path_t* paths,
                                size_t npaths, grape_path_prediction_t* out);
/* The GPUs with a known regime in m (for at least one class): 0 <= i <
 * grape_model_known_count(m). Names as in the spec table. */
GRAPE_API size_t grape_model_known_count(const grape_model_t* m);
GRAPE_API const char* grape_model_known_gpu(const grape_model_t* m, size_t i);

/* ---- Measured timings (training and evaluation data) ---- */

/* A CSV of measured kernel times: NeuSight's format or grape's own timings
 * (docs/predictor.md lists the columns). Plain or gzip, read through zlib. */
typedef struct grape_csv_s grape_csv_t;

typedef struct grape_csv_row_s {
  const char* line;          /* the raw line, without its newline; valid until the next call */
  size_t line_no;            /* 1-based; the header is line 1 */
  int ok;                    /* 1 if desc/gpu/latency below are usable */
  const char* why;           /* when !ok: what is wrong */
  grape_kernel_desc_t desc;  /* desc.name points into the reader; valid until the next call */
  const grape_gpu_spec_t* gpu;
  double latency_ms;         /* measured; 0 when the file has none (prediction input) */
  int group;                 /* evaluation group: a grape_kclass_t, or GEMM split by op name */
  char op_name[32];          /* NeuSight OPName, or "" */
  int simulated;             /* 1: measured on the simulated device (Device "NAME (simcu)") */
  int kernel_time;           /* 1: latency is the kernel's own time (grape's time_ms, or a
                                timing column "kernel"); 0: an op's latency through a timing
                                harness (NeuSight's Latency, or timing "op") */
} grape_csv_row_t;

/* Opens a CSV. `gpu_override`, when not NULL, is the GPU of every row (the
 * Device column is then ignored); without it the file needs a Device column.
 * `need_latency`: the file needs a latency column and rows without a positive
 * latency are bad. @return 0; -ENOENT (or another errno) if the file cannot be
 * opened; -EINVAL if the header lacks a kernel name, device or latency column
 * that is needed; -ENODEV for an unknown `gpu_override`. */
GRAPE_API int grape_csv_open(const char* path, const char* gpu_override, int need_latency,
                             grape_csv_t** out);
/* The same, with what is wrong written to err on -EINVAL (which column is
 * missing, and the columns found). Besides the kernel name and device, a
 * file needs its launches' grid and block columns (x at least). */
GRAPE_API int grape_csv_open_err(const char* path, const char* gpu_override, int need_latency,
                                 grape_csv_t** out, char* err, size_t err_len);
/* The header line as read. */
GRAPE_API const char* grape_csv_header(const grape_csv_t* c);
/* Reads the next row: 1 and *row, 0 at the end, or a negative errno. */
GRAPE_API int grape_csv_next(grape_csv_t* c, grape_csv_row_t* row);
GRAPE_API void grape_csv_close(grape_csv_t* c);

/* Training data: rows from any number of CSVs. */
typedef struct grape_dataset_s grape_dataset_t;

typedef struct grape_load_stats_s {
  size_t used[GRAPE_KC_COUNT];
  size_t skipped[GRAPE_KC_COUNT];   /* bad rows whose class is known */
  size_t skipped_unclassified;      /* bad rows with no usable kernel name */
  size_t simulated;                 /* good rows of a simulated device, left out (not in
                                       skipped) unless grape_dataset_accept_simulated */
} grape_load_stats_t;

GRAPE_API int grape_dataset_new(grape_dataset_t** out);
GRAPE_API void grape_dataset_free(grape_dataset_t* d);
/* Whether rows measured on the simulated device join d (0 by default:
 * their times are a clock model's, not a GPU's). Set before adding files. */
GRAPE_API void grape_dataset_accept_simulated(grape_dataset_t* d, int yes);
/* Adds a file's good rows; counts bad ones in *st (accumulates) and writes
 * the first `max_named` of them, with line numbers, to `diag` (may be NULL). */
GRAPE_API int grape_dataset_add_file(grape_dataset_t* d, const char* path,
                                     const char* gpu_override, grape_load_stats_t* st,
                                     FILE* diag, int max_named);
GRAPE_API size_t grape_dataset_size(const grape_dataset_t* d);

/* How training fits the models. The defaults (grape_train_opts_init) are
 * the best configuration found (docs/predictor.md); the other values are
 * for experiments. A value out of its range is taken as noted. */
typedef struct grape_train_opts_s {
  size_t sz;            /* sizeof(grape_train_opts_t) */
  int trees;            /* boosted trees per (known GPU, class) (60); 0 turns the known regime
                           off; clamped to [0, 2000] */
  double rate;          /* their shrinkage, in (0, 1] (0.3; else 0.3) */
  int folds;            /* shape folds that calibrate the known regime's intervals, 2..20 (4;
                           else 4) */
  double floor_p;       /* 0: no explicit floor; else t = (floor^p + work^p)^(1/p), p in
                           [0, 64] (0; else 0) */
  double ridge;         /* ridge on standardised linear features, [0, 100] (1e-4; else 1e-4) */
  int select;           /* non-zero: choose grape's form per class by inner cross-validation
                           (1); 0: the regression everywhere */
  int crit;             /* inner-CV score: 0 the pooled MAPE (0), non-zero the worst inner
                           GPU's MAPE */
  int unit_slope;       /* non-zero: the in-range regression's slope in log T (with its
                           stacked baselines) is fixed at 1, time proportional to work (0;
                           beyond the training range a regression with a unit slope is
                           one of the forms an extrapolation split chooses from) */
  int xform;            /* beyond the training range, the transfer regime moves to a
                           regression with a unit slope in work: -1 where an inner
                           extrapolation split prefers it (-1), 0 never, 1 always */
  FILE* log;            /* NULL (NULL), or where the inner-CV choice per class is written */
  FILE* cv_dump;        /* leave-one-GPU-out only: NULL (NULL), or where every held-out
                           prediction is written as CSV (gpu, group, measured, roofline, Li,
                           grape, flops, reduction length, blocks, tile area, variant) */
  double fade;          /* beyond a known GPU's rows its trees' correction fades as
                           exp(-fade d): -1 the class's rule (-1; kept whole unless
                           extrapolation splits showed fading helps the class), -2 the
                           inner extrapolation split's choice for every class, >= 0 that
                           fade everywhere */
  int sibling;          /* an unseen GPU takes the trees of a known GPU of its architecture
                           (the same compute capability): -1 the class's rule (-1; decided
                           on held-out real-model rows, train.c), 0 never, 1 every class */
  int align;            /* the known regime's trees see the dims' alignment (multiples of
                           2..128) and GEMM tile quantisation: 1 (1), 0 not (the features
                           read 0) */
  int calib;            /* the known regime's intervals are calibrated on folds of: 1 shape
                           families, coarse ranges of every dim held out together (1), 0
                           single shapes */
  int floor_split;      /* the known regime's interval of a class other than GEMM is two,
                           one for kernels the harness's floor hides and one for those
                           above it: -1 the class's rule (decided by cross-validation), 0
                           never, 1 every class (API version 7) */
  int family_level;     /* the known regime's interval is a level per held-out shape family
                           plus the spread within one, not the pooled residuals' quantiles:
                           -1 the class's rule (decided on held-out shape families and
                           real-model rows, train.c), 0 never, 1 every class (API version 8) */
  int height_split;     /* where the floor splits a class's known interval, the kernels above
                           the floor split again at their median latency, so that kernels
                           well clear of the floor get their own interval: -1 the class's
                           rule (decided on held-out real-model rows, train.c), 0 never, 1
                           every such class (API version 9) */
} grape_train_opts_t;

/* Fills o with the defaults (and sz). */
GRAPE_API void grape_train_opts_init(grape_train_opts_t* o);

/* Fits all three models on every row with the default options. Deterministic. */
GRAPE_API int grape_model_train(const grape_dataset_t* d, grape_model_t** out);
/* The same with options o (NULL: the defaults). @return 0, -EINVAL (o->sz too
 * small), -ENOMEM. */
GRAPE_API int grape_model_train_opts(const grape_dataset_t* d, const grape_train_opts_t* o,
                                     grape_model_t** out);

/* ---- Cross-validation ---- */

#define GRAPE_CV_MAX_GPUS 32
/* Evaluation groups: the kernel classes, with GEMM rows split by op name into
 * "bmm" (group GRAPE_KC_GEMM) and "linear" (group GRAPE_KC_COUNT). */
#define GRAPE_CV_GROUPS (GRAPE_KC_COUNT + 1)
GRAPE_API const char* grape_cv_group_name(int group);

/* The held-out rows of one GPU and group: sums over rows, which a table
 * divides by n. */
typedef struct grape_cv_cell_s {
  double n;                             /* rows */
  double ape[GRAPE_METHOD_COUNT];       /* |predicted - measured| / measured; by shape folds
                                           grape's transfer regime only */
  double sum_pred[GRAPE_METHOD_COUNT];  /* leave-one-GPU-out: predicted times, ms */
  double sum_meas;                      /* leave-one-GPU-out: measured times, ms */
  double ape_launch;                    /* grape's from the launch alone (no op dims) */
  double covered;                       /* rows whose measured time lies in grape's interval */
  double cover_launch;                  /* the same from the launch alone */
  double ape_known;                     /* shape folds: grape as served (known regime) */
  double known;                         /* shape folds: rows the known regime served
                                           (extrapolated or not) */
  double extrapolated;                  /* of them, beyond the GPU's own rows */
  double anchored;                      /* leave-one-GPU-out and extrapolation onto left-out
                                           GPUs: rows a known GPU of the held-out GPU's
                                           architecture could serve (its trees) */
  double ape_anchored;                  /* on those rows: grape with that GPU's trees */
  double ape_alone;                     /* on those rows: grape without them */
  double cover_known;                   /* shape and extrapolation splits: rows the known
                                           regime served within its rows, covered */
  double cover_extrapolated;            /* the same beyond its rows (extrapolated) */
} grape_cv_cell_t;

/* What a cross-validation measured, per held-out GPU and evaluation group. */
typedef struct grape_cv_s {
  int folds;                            /* 0: leave one GPU out; else shape folds */
  int families;                         /* the folds are of shape families */
  int extrapolate;                      /* extrapolation split: 0 none, 1 onto the fit's GPUs,
                                           2 onto GPUs left out of the fit */
  double split_q;                       /* its quantile of op size (the fit's share of rows) */
  size_t rows;                          /* rows of the data set */
  double level;                         /* nominal coverage of grape's intervals */
  int ngpu;
  const char* gpu[GRAPE_CV_MAX_GPUS];   /* names, in the data's first-seen order */
  grape_cv_cell_t cell[GRAPE_CV_MAX_GPUS][GRAPE_CV_GROUPS];
} grape_cv_t;

/* The cells of one evaluation group summed over the GPUs, in GPU order
 * (group -1: of every group, group by group). */
GRAPE_API void grape_cv_sum(const grape_cv_t* cv, int group, grape_cv_cell_t* out);

/* Leave-one-GPU-out cross-validation of all three models: for each GPU in the
 * data, fit on the others (options o, NULL: the defaults) and predict its
 * rows (grape's transfer regime). @return 0, -ENODATA (fewer than two GPUs),
 * -E2BIG (more than GRAPE_CV_MAX_GPUS), -EINVAL, -ENOMEM. */
GRAPE_API int grape_model_crossval(const grape_dataset_t* d, const grape_train_opts_t* o,
                                   grape_cv_t* out);
/* Cross-validation over shapes: the rows' shapes (an op's dims, whatever its
 * GPU) are split into `folds` groups; each group is held out of a fit on
 * the rest and predicted on every GPU: grape as served (its known regime)
 * next to its transfer regime on the same rows. Rows without op dims are
 * not used. @return 0, -EINVAL (folds < 2), -ENODATA, -E2BIG, -ENOMEM. */
GRAPE_API int grape_model_crossval_shapes(const grape_dataset_t* d, int folds,
                                          const grape_train_opts_t* o, grape_cv_t* out);
/* The same over shape families: coarse ranges of every dim (factors of 4)
 * and whether each is a multiple of 8 are held out together, so a fold's
 * shapes are unlike the fit's rows, as real models' shapes are unlike the
 * training data's. With o->cv_dump set, both write every held-out
 * prediction as CSV: gpu, group, measured, roofline, Li, transfer regime,
 * served (harness or kernel time, as the row was timed), its bounds,
 * regime, distance, the dims' least alignment. */
GRAPE_API int grape_model_crossval_families(const grape_dataset_t* d, int folds,
                                            const grape_train_opts_t* o, grape_cv_t* out);
/* Cross-validation beyond the training range: per evaluation group, the
 * rows whose op size (a GEMM's or convolution's FLOPs, other ops' elements)
 * is at most the group's q-quantile are fitted, the larger ones predicted:
 * on the GPUs of the fit (held_out_gpus 0: the known regime, extrapolated),
 * or, held_out_gpus 1, each GPU's large rows by a fit on the other GPUs'
 * small rows (the transfer regime, extrapolated). Cells as for shape folds
 * (ape_known: grape as served). @return 0, -EINVAL (q not in (0, 1)),
 * -ENODATA, -E2BIG, -ENOMEM. */
GRAPE_API int grape_model_crossval_extrapolate(const grape_dataset_t* d, double q,
                                               int held_out_gpus, const grape_train_opts_t* o,
                                               grape_cv_t* out);

#ifdef __cplusplus
}
#endif
#endif
