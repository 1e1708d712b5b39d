/* occupancy.c: the occupancy queries of the simulated driver
 * (cuOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags],
 * cuOccupancyAvailableDynamicSMemPerBlock,
 * cuOccupancyMaxPotentialBlockSize[WithFlags]), answered for the sim's H200.
 *
 * DESIGN: the model is CUDA's occupancy calculator for compute capability 9.0:
 * a multiprocessor holds at most 32 blocks, 64 warps, 65,536 registers
 * (allocated per warp in units of 256) and 228 KiB of shared memory
 * (allocated per block in units of 128 bytes, plus 1 KiB the system reserves
 * per block); a block may use at most 227 KiB. The blocks that fit are the
 * fewest any one resource allows. A function's registers and static shared
 * memory come from its image (module.c); unknown registers count as 32, as
 * cuFuncGetAttribute reports them. The answers are what a real H200 gives for
 * the same function attributes, so templates such as
 * cudaOccupancyMaxPotentialBlockSize choose the same block sizes.
 */
#include "internal.h"

#define OCC_MAX_BLOCKS 32
#define OCC_MAX_WARPS 64
#define OCC_REGS 65536
#define OCC_REG_UNIT 256            /* registers allocated per warp in these units */
#define OCC_SMEM 233472             /* bytes per multiprocessor (228 KiB) */
#define OCC_SMEM_BLOCK_MAX 232448   /* bytes per block, opt-in (227 KiB) */
#define OCC_SMEM_RESERVED 1024      /* bytes reserved per block */
#define OCC_SMEM_UNIT 128

static struct CUfunc_st* as_func(CUfunction h) {
  return grape__sim_reg_has(h, K_FUNC) ? (struct CUfunc_st*)h : NULL;
}

static size_t round_up(size_t v, size_t unit) {
  return (v + unit - 1) / unit * unit;
}

/* Blocks of blockSize threads with dyn bytes of dynamic shared memory that
 * fit on one multiprocessor; 0 if such a block cannot be launched at all.
 * The device model (device.c) shares multiprocessors out by this count. */
int grape__sim_blocks_per_sm(const struct CUfunc_st* f, int block, size_t dyn) {
  int max_threads = f->max_threads > 0 ? f->max_threads : 1024;
  if (block <= 0 || block > max_threads)
    return 0;
  size_t smem = (size_t)(f->shared_bytes > 0 ? f->shared_bytes : 0) + dyn;
  if (smem > OCC_SMEM_BLOCK_MAX || (f->max_dyn_smem >= 0 && dyn > (size_t)f->max_dyn_smem))
    return 0;
  int warps = (block + 31) / 32;
  int n = OCC_MAX_BLOCKS;
  if (OCC_MAX_WARPS / warps < n)
    n = OCC_MAX_WARPS / warps;
  int regs = f->registers >= 0 ? f->registers : 32;
  if (regs > 0) {
    size_t per_warp = round_up((size_t)regs * 32, OCC_REG_UNIT);
    int by_regs = (int)(OCC_REGS / per_warp) / warps;
    if (by_regs < n)
      n = by_regs;
  }
  size_t per_block = round_up(smem + OCC_SMEM_RESERVED, OCC_SMEM_UNIT);
  int by_smem = (int)(OCC_SMEM / per_block);
  if (by_smem < n)
    n = by_smem;
  return n;
}

/* Whether a block of this many threads gets the registers it needs: the
 * launch is refused with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES otherwise
 * ("too many threads for the kernel's register count", cuda.h). */
int grape__sim_regs_fit(const struct CUfunc_st* f, unsigned threads) {
  if (f->registers <= 0)
    return 1;
  size_t per_warp = round_up((size_t)f->registers * 32, OCC_REG_UNIT);
  return per_warp * ((threads + 31) / 32) <= OCC_REGS;
}

/* The largest block a launch of f may have: its own bound (launch bounds)
 * or 1024, lowered to whole warps that its registers fit, as
 * CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK reports it. */
int grape__sim_max_threads(const struct CUfunc_st* f) {
  int n = f->max_threads > 0 ? f->max_threads : 1024;
  if (f->registers > 0) {
    size_t per_warp = round_up((size_t)f->registers * 32, OCC_REG_UNIT);
    int by_regs = (int)(OCC_REGS / per_warp) * 32;
    if (by_regs < n)
      n = by_regs;
  }
  return n;
}

static CUresult max_active(int* n, CUfunction h, int block, size_t dyn, unsigned flags) {
  SIM_TRY(grape__sim_check_init());
  if (n == NULL || (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  *n = grape__sim_blocks_per_sm(f, block, dyn);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, CUfunction f, int block,
                                                                size_t dyn) {
  SIM_COUNT(cuOccupancyMaxActiveBlocksPerMultiprocessor);
  return max_active(n, f, block, dyn, 0);
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, CUfunction f,
                                                                         int block, size_t dyn,
                                                                         unsigned int flags) {
  SIM_COUNT(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags);
  return max_active(n, f, block, dyn, flags);
}

SIM_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* out, CUfunction h, int nblocks,
                                                            int block) {
  SIM_COUNT(cuOccupancyAvailableDynamicSMemPerBlock);
  SIM_TRY(grape__sim_check_init());
  if (out == NULL || nblocks <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  *out = 0;
  /* The other resources must allow nblocks blocks before shared memory is shared out. */
  if (grape__sim_blocks_per_sm(f, block, 0) < nblocks)
    return CUDA_SUCCESS;
  size_t stat = (size_t)(f->shared_bytes > 0 ? f->shared_bytes : 0);
  size_t per_block = (OCC_SMEM / (size_t)nblocks) / OCC_SMEM_UNIT * OCC_SMEM_UNIT;
  if (per_block <= OCC_SMEM_RESERVED + stat)
    return CUDA_SUCCESS;
  size_t dyn = per_block - OCC_SMEM_RESERVED - stat;
  if (dyn > OCC_SMEM_BLOCK_MAX - stat)
    dyn = OCC_SMEM_BLOCK_MAX - stat;
  if (f->max_dyn_smem >= 0 && dyn > (size_t)f->max_dyn_smem)
    dyn = (size_t)f->max_dyn_smem;
  *out = dyn;
  return CUDA_SUCCESS;
}

/* The block size (a multiple of the warp size, up to limit) that keeps the
 * most threads resident, preferring the larger size on ties, as CUDA's
 * cudaOccupancyMaxPotentialBlockSize does. */
static CUresult potential(int* grid, int* block, CUfunction h, CUoccupancyB2DSize b2d, size_t dyn,
                          int limit, unsigned flags) {
  SIM_TRY(grape__sim_check_init());
  if (grid == NULL || block == NULL ||
      (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  int max = f->max_threads > 0 ? f->max_threads : 1024;
  if (limit > 0 && limit < max)
    max = limit;
  int best = 0, best_threads = 0;
  for (int b = max / 32 * 32; b > 0; b -= 32) {
    size_t d = b2d != NULL ? b2d(b) : dyn;
    int threads = grape__sim_blocks_per_sm(f, b, d) * b;
    if (threads > best_threads) {
      best_threads = threads;
      best = b;
    }
  }
  *block = best;
  *grid = best > 0 ? best_threads / best * 132 : 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int* grid, int* block, CUfunction f,
                                                     CUoccupancyB2DSize b2d, size_t dyn,
                                                     int limit) {
  SIM_COUNT(cuOccupancyMaxPotentialBlockSize);
  return potential(grid, block, f, b2d, dyn, limit, 0);
}

SIM_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* grid, int* block, CUfunction f,
                                                              CUoccupancyB2DSize b2d, size_t dyn,
                                                              int limit, unsigned int flags) {
  SIM_COUNT(cuOccupancyMaxPotentialBlockSizeWithFlags);
  return potential(grid, block, f, b2d, dyn, limit, flags);
}
