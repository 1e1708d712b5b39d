/* engine.c: the GEMM engine of libcublasLt.so.13's stand-in (see engine.h):
 * driver binding, checks, the heuristic and the launches.
 *
 * DESIGN: like cuBLASLt, the engine keeps its own table of driver entry
 * points, filled by raw dlsym of unsuffixed names from its own
 * dlopen("libcuda.so.1"), loads its kernels from an embedded fatbin with
 * cuModuleLoadData and launches them with cuLaunchKernelEx, so a shim sees
 * these launches only through its dlsym route. The heuristic imitates
 * cuBLAS's on Hopper where it matters to the device model: tensor-op
 * kernels take one 128x256 (or smaller, for small m or n) tile per block
 * and a whole SM each; when the tiles outnumber the SMs the kernel is
 * persistent, one block per SM looping over tiles (pytorch#143988), and
 * CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET (or cublasSetSmCountTarget) asks for
 * that many blocks instead; a problem of few tiles with a long k splits k
 * over idle SMs when a workspace allows (split-K: partial sums in the
 * workspace, then a reduce kernel). SIMT kernels (fp32 without TF32, fp64)
 * are never persistent. Initialisation happens once; afterwards the table and
 * the functions are read-only, so calls are thread-safe.
 *
 * On the sim, every GEMM call charges the program's host work per op
 * (SIMCU_HOST_NS) through the driver's private table, as libsimblas does.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include "engine.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "cost.h"
#include "gemm_math.h"
#include "lt_internal.h"
#include "vendor.h"

extern const unsigned char grape__simcublas_image[];

#define SC_SMS 132
#define SC_TENSOR_THREADS 384
#define SC_TENSOR_SMEM (192 * 1024)   /* a stage-4 128x256x64 tile: one block per SM */
#define SC_SIMT_THREADS 256
#define SC_SIMT_SMEM (96 * 1024)      /* two blocks per SM */
#define SC_REDUCE_THREADS 256

static struct {
  simcu_vendor_drv_t ctx;
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*LaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
} cu;
static const simcu_private_t* sim_priv;   /* the sim driver's private table, or NULL */

enum { F_TENSOR, F_PERSISTENT, F_SIMT, F_REDUCE, F__COUNT };
static const char* const fnames[F__COUNT] = {
  "simcublas_sm90_gemm_tensorop", "simcublas_sm90_gemm_tensorop_persistent",
  "simcublas_sm90_gemm_simt", "simcublas_sm90_splitk_reduce"};
static CUfunction fn[F__COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static CUresult init_err = CUDA_ERROR_NOT_INITIALIZED;
static CUcontext lib_ctx;

/* ---- Driver binding ---- */

#define BIND(field, name)                                                          \
  do {                                                                             \
    *(void**)&cu.field = dlsym(h, name);                                           \
    if (cu.field == NULL)                                                          \
      return CUDA_ERROR_NOT_FOUND;                                                 \
  } while (0)

static CUresult bind(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    return CUDA_ERROR_NO_DEVICE;
  BIND(ctx.Init, "cuInit");
  BIND(ctx.CtxGetCurrent, "cuCtxGetCurrent");
  BIND(ctx.CtxSetCurrent, "cuCtxSetCurrent");
  BIND(ctx.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  BIND(ModuleLoadData, "cuModuleLoadData");
  BIND(ModuleGetFunction, "cuModuleGetFunction");
  BIND(FuncSetAttribute, "cuFuncSetAttribute");
  BIND(LaunchKernelEx, "cuLaunchKernelEx");
  sim_priv = simcu_vendor_private(h);
  return CUDA_SUCCESS;
}

static void init(void) {
  CUresult r = bind();
  if (r == CUDA_SUCCESS)
    r = simcu_vendor_start(&cu.ctx, &lib_ctx);
  CUmodule mod;
  if (r == CUDA_SUCCESS)
    r = cu.ModuleLoadData(&mod, grape__simcublas_image);
  for (int i = 0; i < F__COUNT && r == CUDA_SUCCESS; i++)
    r = cu.ModuleGetFunction(&fn[i], mod, fnames[i]);
  if (r == CUDA_SUCCESS)
    r = cu.FuncSetAttribute(fn[F_TENSOR], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            SC_TENSOR_SMEM);
  if (r == CUDA_SUCCESS)
    r = cu.FuncSetAttribute(fn[F_PERSISTENT], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            SC_TENSOR_SMEM);
  if (r == CUDA_SUCCESS)
    r = cu.FuncSetAttribute(fn[F_SIMT], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            SC_SIMT_SMEM);
  init_err = r;
}

static _Thread_local int thread_ready;   /* this thread has a current context */

/* As a vendor library: the caller's context, or the library's own when the
 * calling thread has none. */
cublasStatus_t simcublas__enter(void) {
  pthread_once(&once, init);
  if (init_err != CUDA_SUCCESS)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!thread_ready) {
    if (simcu_vendor_thread(&cu.ctx, lib_ctx) != CUDA_SUCCESS)
      return CUBLAS_STATUS_NOT_INITIALIZED;
    thread_ready = 1;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- Checks ---- */

static int is_float_type(int t) {
  return t == SC_F32 || t == SC_F64 || t == SC_F16 || t == SC_BF16;
}

/* A matrix as stored: its leading dimension covers its rows (or columns). */
static int layout_ok(const simcublas_mat_t* x) {
  if (x->rows < 0 || x->cols < 0 || x->batch < 1)
    return 0;
  int64_t need = x->row_major ? x->cols : x->rows;
  return x->ld >= (need > 1 ? need : 1);
}

/* Operand types, compute type and scale type as cuBLAS accepts them; the
 * accumulation mode and kernel family they give. */
static cublasStatus_t classify(const simcublas_gemm_t* g, int* acc, int* kind) {
  int ta = g->a.type, tb = g->b.type, tc = g->c.type, td = g->d.type, ts = g->scale_type;
  if (!is_float_type(ta) || ta != tb || tc != td)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  switch (g->compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    if (ta != SC_F16 || tc != SC_F16 || ts != SC_F16)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    *acc = SC_ACC_F16;
    *kind = SC_KIND_TENSOR16;
    return CUBLAS_STATUS_SUCCESS;
  case CUBLAS_COMPUTE_32F:
  case CUBLAS_COMPUTE_32F_PEDANTIC:
    if (ts != SC_F32 || ta == SC_F64 || (tc != SC_F32 && tc != ta))
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ta != SC_F32) {
      *acc = SC_ACC_F32;
      *kind = SC_KIND_TENSOR16;
    } else if (g->tf32 && g->compute == CUBLAS_COMPUTE_32F) {
      *acc = SC_ACC_F32_TF32;
      *kind = SC_KIND_TF32;
    } else {
      *acc = SC_ACC_F32;
      *kind = SC_KIND_SIMT32;
    }
    return CUBLAS_STATUS_SUCCESS;
  case CUBLAS_COMPUTE_32F_FAST_TF32:
  case CUBLAS_COMPUTE_32F_FAST_16F:
  case CUBLAS_COMPUTE_32F_FAST_16BF:
    if (ta != SC_F32 || tc != SC_F32 || ts != SC_F32)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    *acc = g->compute == CUBLAS_COMPUTE_32F_FAST_TF32  ? SC_ACC_F32_TF32
           : g->compute == CUBLAS_COMPUTE_32F_FAST_16F ? SC_ACC_F32_F16
                                                       : SC_ACC_F32_BF16;
    *kind = g->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? SC_KIND_TF32 : SC_KIND_TENSOR16;
    return CUBLAS_STATUS_SUCCESS;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    if (ta != SC_F64 || tc != SC_F64 || ts != SC_F64)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    *acc = SC_ACC_F64;
    *kind = SC_KIND_SIMT64;
    return CUBLAS_STATUS_SUCCESS;
  default:   /* integer and emulated compute types are not simulated */
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t simcublas__check(const simcublas_gemm_t* g, simcublas_shape_t* s, int pointers) {
  if ((g->trans_a != CUBLAS_OP_N && g->trans_a != CUBLAS_OP_T && g->trans_a != CUBLAS_OP_C) ||
      (g->trans_b != CUBLAS_OP_N && g->trans_b != CUBLAS_OP_T && g->trans_b != CUBLAS_OP_C))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!layout_ok(&g->a) || !layout_ok(&g->b) || !layout_ok(&g->c) || !layout_ok(&g->d))
    return CUBLAS_STATUS_INVALID_VALUE;
  int64_t m = g->d.rows, n = g->d.cols;
  int64_t k = g->trans_a == CUBLAS_OP_N ? g->a.cols : g->a.rows;
  int64_t am = g->trans_a == CUBLAS_OP_N ? g->a.rows : g->a.cols;
  int64_t bk = g->trans_b == CUBLAS_OP_N ? g->b.rows : g->b.cols;
  int64_t bn = g->trans_b == CUBLAS_OP_N ? g->b.cols : g->b.rows;
  if (am != m || bk != k || bn != n || g->c.rows != m || g->c.cols != n)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  int batch = g->d.batch;
  if (g->a.batch != batch || g->b.batch != batch || g->c.batch != batch)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (g->epilogue != CUBLASLT_EPILOGUE_DEFAULT && g->epilogue != CUBLASLT_EPILOGUE_RELU &&
      g->epilogue != CUBLASLT_EPILOGUE_BIAS && g->epilogue != CUBLASLT_EPILOGUE_RELU_BIAS)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if ((g->epilogue & CUBLASLT_EPILOGUE_BIAS) &&
      (g->bias == NULL || !is_float_type(g->bias_type)))
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasStatus_t st = classify(g, &s->acc, &s->kind);
  if (st != CUBLAS_STATUS_SUCCESS)
    return st;
  s->m = (int)m;
  s->n = (int)n;
  s->k = (int)k;
  s->batch = batch;
  if (!pointers)
    return CUBLAS_STATUS_SUCCESS;
  if (g->alpha == NULL || g->beta == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0)
    return CUBLAS_STATUS_SUCCESS;
  if (g->d.ptr == NULL || (k > 0 && (g->a.ptr == NULL || g->b.ptr == NULL)))
    return CUBLAS_STATUS_INVALID_VALUE;
  /* C is read unless beta is a host zero. */
  if (g->c.ptr == NULL && (g->device_scalars || sc_load(g->beta, 0, g->scale_type) != 0.0))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- The heuristic ---- */

static int ceil_div(int64_t a, int64_t b) {
  return (int)((a + b - 1) / b);
}

static size_t acc_size(int acc) {
  return acc == SC_ACC_F64 ? 8 : 4;
}

/* cublasLtMatmulTile_t of a tile shape. */
static uint32_t tile_id(int tm, int tn) {
  static const struct {
    int m, n;
    uint32_t id;
  } t[] = {{64, 64, CUBLASLT_MATMUL_TILE_64x64},     {64, 128, CUBLASLT_MATMUL_TILE_64x128},
           {64, 256, CUBLASLT_MATMUL_TILE_64x256},   {128, 64, CUBLASLT_MATMUL_TILE_128x64},
           {128, 128, CUBLASLT_MATMUL_TILE_128x128}, {128, 256, CUBLASLT_MATMUL_TILE_128x256}};
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (t[i].m == tm && t[i].n == tn)
      return t[i].id;
  return CUBLASLT_MATMUL_TILE_UNDEFINED;
}

void simcublas__plan(const simcublas_shape_t* s, int sm_target, size_t ws_max, int no_split,
                     simcublas_algo_t* a, size_t* ws_needed) {
  int sms = sm_target > 0 && sm_target < SC_SMS ? sm_target : SC_SMS;
  int tensor = s->kind == SC_KIND_TENSOR16 || s->kind == SC_KIND_TF32;
  memset(a, 0, sizeof(*a));
  a->magic = SIMCUBLAS_ALGO_MAGIC;
  a->kind = s->kind;
  a->tile_m = s->m <= 64 ? 64 : 128;
  a->tile_n = s->n <= 64 ? 64 : (s->n <= 128 || !tensor ? 128 : 256);
  a->splits = 1;
  int64_t tiles = (int64_t)ceil_div(s->m, a->tile_m) * ceil_div(s->n, a->tile_n) * s->batch;
  if (tensor && tiles > sms)
    a->grid = sms;   /* persistent: one block per SM */
  *ws_needed = 0;
  /* Few tiles, long k: split k over idle SMs, as far as the workspace allows. */
  if (!no_split && a->grid == 0 && tiles * 2 <= sms && s->k >= 2048) {
    int splits = (int)(sms / tiles);
    if (splits > s->k / 1024)
      splits = s->k / 1024;
    if (splits > 16)
      splits = 16;
    for (; splits >= 2; splits--) {
      size_t need = (size_t)splits * s->m * s->n * s->batch * acc_size(s->acc);
      if (need <= ws_max) {
        a->splits = splits;
        *ws_needed = need;
        break;
      }
    }
  }
  a->tile = tile_id(a->tile_m, a->tile_n);
  a->id = (tensor ? 1 : 2) + (a->grid > 0 ? 10 : 0) + (a->splits > 1 ? 20 : 0);
}

float simcublas__waves(const simcublas_shape_t* s, const simcublas_algo_t* a) {
  int tensor = a->kind == SC_KIND_TENSOR16 || a->kind == SC_KIND_TF32;
  int64_t blocks = a->grid > 0 ? a->grid
                               : (int64_t)ceil_div(s->m, a->tile_m) * ceil_div(s->n, a->tile_n) *
                                     s->batch * a->splits;
  return (float)blocks / (float)(SC_SMS * (tensor ? 1 : 2));
}

/* ---- Launches ---- */

static int64_t rs(const simcublas_mat_t* x) {
  return x->row_major ? x->ld : 1;
}
static int64_t cs(const simcublas_mat_t* x) {
  return x->row_major ? 1 : x->ld;
}

static cublasStatus_t launch(CUfunction f, unsigned gx, unsigned gz, unsigned threads,
                             unsigned smem, cudaStream_t stream, simcublas_params_t* p) {
  void* args[] = {p};
  CUlaunchConfig cfg = {.gridDimX = gx, .gridDimY = 1, .gridDimZ = gz, .blockDimX = threads,
                        .blockDimY = 1, .blockDimZ = 1, .sharedMemBytes = smem,
                        .hStream = (CUstream)stream};
  CUresult r = cu.LaunchKernelEx(&cfg, f, args, NULL);
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

SIMCUBLAS_EXPORT cublasStatus_t simcublasLt_gemm(const simcublas_gemm_t* g, cudaStream_t stream) {
  cublasStatus_t st = simcublas__enter();
  if (st != CUBLAS_STATUS_SUCCESS)
    return st;
  if (sim_priv != NULL)
    sim_priv->host_work(SIMCU_WORK_OP);
  simcublas_shape_t s;
  if ((st = simcublas__check(g, &s, 1)) != CUBLAS_STATUS_SUCCESS)
    return st;
  if (s.m == 0 || s.n == 0)
    return CUBLAS_STATUS_SUCCESS;
  simcublas_algo_t a;
  size_t need = 0;
  if (g->algo != NULL) {
    memcpy(&a, g->algo, sizeof(a));
    if (a.magic != SIMCUBLAS_ALGO_MAGIC || a.kind != s.kind)
      return CUBLAS_STATUS_INVALID_VALUE;
    if (a.splits > 1)
      need = (size_t)a.splits * s.m * s.n * s.batch * acc_size(s.acc);
  } else {
    simcublas__plan(&s, g->sm_target, g->workspace != NULL ? g->workspace_size : 0, 0, &a, &need);
  }
  if (need > 0 && (g->workspace == NULL || g->workspace_size < need))
    return CUBLAS_STATUS_INVALID_VALUE;

  simcublas_params_t p;
  memset(&p, 0, sizeof(p));
  int ta = g->trans_a != CUBLAS_OP_N, tb = g->trans_b != CUBLAS_OP_N;
  p.A = g->a.ptr;
  p.B = g->b.ptr;
  p.C = g->c.ptr;
  p.D = (void*)g->d.ptr;
  p.a_rs = ta ? cs(&g->a) : rs(&g->a);
  p.a_cs = ta ? rs(&g->a) : cs(&g->a);
  p.b_rs = tb ? cs(&g->b) : rs(&g->b);
  p.b_cs = tb ? rs(&g->b) : cs(&g->b);
  p.c_rs = rs(&g->c);
  p.c_cs = cs(&g->c);
  p.d_rs = rs(&g->d);
  p.d_cs = cs(&g->d);
  p.ptr_array = g->ptr_array;   /* then the batch strides are 0: each entry has its pointer */
  p.a_bs = g->ptr_array ? 0 : g->a.batch_stride;
  p.b_bs = g->ptr_array ? 0 : g->b.batch_stride;
  p.c_bs = g->ptr_array ? 0 : g->c.batch_stride;
  p.d_bs = g->ptr_array ? 0 : g->d.batch_stride;
  if (g->device_scalars) {
    p.alpha_ptr = g->alpha;
    p.beta_ptr = g->beta;
  } else {
    p.alpha = sc_load(g->alpha, 0, g->scale_type);
    p.beta = sc_load(g->beta, 0, g->scale_type);
  }
  p.epilogue = (g->epilogue & CUBLASLT_EPILOGUE_RELU ? SC_EPI_RELU : 0) |
               (g->epilogue & CUBLASLT_EPILOGUE_BIAS ? SC_EPI_BIAS : 0);
  p.bias = (p.epilogue & SC_EPI_BIAS) ? g->bias : NULL;
  p.type_bias = g->bias_type;
  p.bias_bs = g->bias_batch_stride;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.batch = s.batch;
  p.type_a = g->a.type;
  p.type_b = g->b.type;
  p.type_c = g->c.type;
  p.type_d = g->d.type;
  p.type_scale = g->scale_type;
  p.acc = s.acc;
  p.kind = s.kind;
  p.tile_m = a.tile_m;
  p.tile_n = a.tile_n;
  p.tiles_m = ceil_div(s.m, a.tile_m);
  p.tiles_n = ceil_div(s.n, a.tile_n);
  p.splits = a.splits > 1 ? a.splits : 1;
  p.persistent = a.grid > 0;
  p.workspace = p.splits > 1 ? g->workspace : NULL;
  int tensor = s.kind == SC_KIND_TENSOR16 || s.kind == SC_KIND_TF32;
  p.occupancy = tensor ? 1 : 2;
  int64_t tiles = (int64_t)p.tiles_m * p.tiles_n * p.batch;
  if (tiles > 0x7fffffff)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  CUfunction f = !tensor ? fn[F_SIMT] : (p.persistent ? fn[F_PERSISTENT] : fn[F_TENSOR]);
  unsigned gx = p.persistent ? (unsigned)a.grid : (unsigned)tiles;
  st = launch(f, gx, (unsigned)p.splits, tensor ? SC_TENSOR_THREADS : SC_SIMT_THREADS,
              tensor ? SC_TENSOR_SMEM : SC_SIMT_SMEM, stream, &p);
  if (st != CUBLAS_STATUS_SUCCESS || p.splits == 1)
    return st;
  int64_t elems = (int64_t)s.m * s.n * s.batch;
  p.occupancy = 8;
  return launch(fn[F_REDUCE], (unsigned)((elems + SC_REDUCE_THREADS - 1) / SC_REDUCE_THREADS), 1,
                SC_REDUCE_THREADS, 0, stream, &p);
}
