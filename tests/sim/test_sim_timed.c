/* Tests of kernels run timed, not computed (SIMCU_KERNELS=timed, sim/timed.c):
 * kernels from an nvcc-built fatbin with no CPU body (timed_kernels.cu), as
 * a framework's. They run, write nothing, take the time of the documented
 * model (waves over the SMs at the occupancy their resources allow), get
 * CUDA's error codes for bad launches, and the mode says once, at cuInit,
 * that results are not computed. Without the mode they fail as before.
 *
 * Each test runs in its own process (Criterion forks), so SIMCU_KERNELS set
 * before the first driver call applies to that test alone. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "drv_setup.h"
#include "errcap.h"

enum {
#define ROW_DEFAULT(id, name, dflt) D_##id = dflt,
  SIM_COST_ROWS(ROW_DEFAULT)
#undef ROW_DEFAULT
};

#define SMS 132
#define FILL_BLOCK 128                          /* 16 blocks per SM: 64 warps / 4 */
#define FILL_WAVE (SMS * 16)                    /* blocks in one wave of k_fill */
#define N_FLOATS (8 * FILL_WAVE * FILL_BLOCK)   /* k_fill's buffer, for 8 waves */
#define BIG_SMEM (100 * 1024)                   /* 2 blocks per SM */

static CUmodule mod;
static CUfunction f_fill, f_greedy;
static const simcu_private_t* sim;

static void* read_fatbin(void) {
  const char* path = getenv("TIMED_FATBIN");
  cr_assert_not_null(path, "TIMED_FATBIN names the fatbin of timed_kernels.cu");
  FILE* f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* image = malloc((size_t)n);
  cr_assert(image != NULL && fread(image, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  return image;
}

/* cuInit under SIMCU_KERNELS=mode (unset when NULL), the context, the fatbin. */
static void start(const char* mode) {
  if (mode != NULL)
    setenv("SIMCU_KERNELS", mode, 1);
  else
    unsetenv("SIMCU_KERNELS");
  drv_setup();
  void* image = read_fatbin();
  OK(cuModuleLoadData(&mod, image));
  free(image);
  OK(cuModuleGetFunction(&f_fill, mod, "k_fill"));
  OK(cuModuleGetFunction(&f_greedy, mod, "k_greedy"));
  const void* t = NULL;
  CUuuid id = {SIMCU_PRIVATE_UUID};
  OK(cuGetExportTable(&t, &id));
  sim = t;
}

static CUresult fill(CUdeviceptr p, unsigned blocks, unsigned smem, CUstream s) {
  int n = N_FLOATS;
  float v = 42.0f;
  void* args[] = {&p, &n, &v};
  return cuLaunchKernel(f_fill, blocks, 1, 1, FILL_BLOCK, 1, 1, smem, s, args, NULL);
}

/* Simulated host ns of one launch of k_fill and the wait for it. */
static uint64_t fill_ns(CUdeviceptr p, unsigned blocks, unsigned smem) {
  OK(cuCtxSynchronize());
  uint64_t t0 = sim->host_ns();
  OK(fill(p, blocks, smem, NULL));
  OK(cuCtxSynchronize());
  return sim->host_ns() - t0;
}

static CUdeviceptr patterned_buffer(void) {
  CUdeviceptr p;
  OK(cuMemAlloc(&p, N_FLOATS * sizeof(float)));
  OK(cuMemsetD8(p, 0xab, N_FLOATS * sizeof(float)));
  return p;
}

static void assert_untouched(CUdeviceptr p) {
  unsigned char* host = malloc(N_FLOATS * sizeof(float));
  cr_assert_not_null(host);
  OK(cuMemcpyDtoH(host, p, N_FLOATS * sizeof(float)));
  for (size_t i = 0; i < N_FLOATS * sizeof(float); i++)
    cr_assert_eq(host[i], 0xab, "byte %zu was written by a timed kernel", i);
  free(host);
}

Test(sim_timed, without_the_mode_a_bodiless_kernel_still_fails) {
  start(NULL);
  CUdeviceptr p = patterned_buffer();
  cr_assert_eq(fill(p, 1, 0, NULL), CUDA_ERROR_NOT_FOUND);
}

Test(sim_timed, runs_writes_nothing_and_keeps_streams_and_copies) {
  start("timed");
  CUdeviceptr p = patterned_buffer();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(fill(p, 8 * FILL_WAVE, 0, s));
  OK(fill(p, 1, 0, NULL));
  OK(cuStreamSynchronize(s));
  OK(cuCtxSynchronize());
  assert_untouched(p);
  /* Copies and memsets around timed kernels keep their semantics. */
  OK(cuMemsetD32(p, 7, 4));
  OK(fill(p, 4, 0, s));
  unsigned got[4];
  OK(cuMemcpyDtoHAsync(got, p, sizeof(got), s));
  OK(cuStreamSynchronize(s));
  for (int i = 0; i < 4; i++)
    cr_assert_eq(got[i], 7u);
}

Test(sim_timed, the_mode_may_come_with_body_libraries) {
  start("/nonexistent/bodies.so:timed");
  CUdeviceptr p = patterned_buffer();
  OK(fill(p, 1, 0, NULL));
  OK(cuCtxSynchronize());
}

Test(sim_timed, time_is_waves_of_timed_block_with_a_floor) {
  start("timed");
  unsetenv("SIMCU_COSTS");
  CUdeviceptr p = patterned_buffer();
  (void)fill_ns(p, 1, 0);   /* the first launch binds the function */
  uint64_t one_block = fill_ns(p, 1, 0);
  uint64_t wave1 = fill_ns(p, FILL_WAVE, 0);
  uint64_t wave2 = fill_ns(p, FILL_WAVE + 1, 0);   /* one block more: a second wave */
  uint64_t wave4 = fill_ns(p, 4 * FILL_WAVE, 0);
  uint64_t wave8 = fill_ns(p, 8 * FILL_WAVE, 0);
  /* Within one wave, the floor: one block costs what a full wave costs. */
  cr_assert_eq(one_block, wave1, "1 block %lu ns, 1 wave %lu ns", (unsigned long)one_block,
               (unsigned long)wave1);
  cr_assert_eq(wave2 - wave1, 2 * D_TIMED_BLOCK - D_TIMED_FLOOR);
  cr_assert_eq(wave4 - wave2, 2 * D_TIMED_BLOCK);
  cr_assert_eq(wave8 - wave4, 4 * D_TIMED_BLOCK);
  /* Resources count: 100 KiB of shared memory leaves 2 blocks per SM, so
   * one wave of 128-thread blocks becomes 8. */
  OK(cuFuncSetAttribute(f_fill, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BIG_SMEM));
  uint64_t big_smem = fill_ns(p, FILL_WAVE, BIG_SMEM);
  cr_assert_eq(big_smem, wave8, "a wave at 2 blocks per SM: %lu ns, 8 waves: %lu ns",
               (unsigned long)big_smem, (unsigned long)wave8);
}

Test(sim_timed, per_stream_clocks_give_the_same_time_alone) {
  setenv("SIMCU_DEVICE_MODEL", "streams", 1);
  start("timed");
  CUdeviceptr p = patterned_buffer();
  (void)fill_ns(p, 1, 0);
  uint64_t wave4 = fill_ns(p, 4 * FILL_WAVE, 0);
  uint64_t wave8 = fill_ns(p, 8 * FILL_WAVE, 0);
  cr_assert_eq(wave8 - wave4, 4 * D_TIMED_BLOCK);
}

Test(sim_timed, a_graph_node_runs_timed_and_writes_nothing) {
  start("timed");
  CUdeviceptr p = patterned_buffer();
  CUstream s;
  CUgraph g;
  CUgraphExec ge;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(fill(p, 2 * FILL_WAVE, 0, s));
  OK(cuStreamEndCapture(s, &g));
  OK(cuGraphInstantiate(&ge, g, 0));
  OK(cuGraphLaunch(ge, s));
  OK(cuStreamSynchronize(s));
  assert_untouched(p);
}

Test(sim_timed, bad_launches_get_cudas_error_codes) {
  start("timed");
  CUdeviceptr p = patterned_buffer();
  int n = 64;
  float v = 1.0f;
  void* args[] = {&p, &n, &v};
  /* Block and grid limits. */
  cr_assert_eq(cuLaunchKernel(f_fill, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuLaunchKernel(f_fill, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuLaunchKernel(f_fill, 1, 65536, 1, 32, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuLaunchKernel(f_fill, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  /* Dynamic shared memory beyond the function's limit (48 KiB until raised). */
  cr_assert_eq(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 49153, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  OK(cuFuncSetAttribute(f_fill, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 49153));
  OK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 49153, NULL, args, NULL));
  /* A parameter buffer smaller than the cubin's 16 bytes (8 + 4 + 4). */
  char buf[16] = {0};
  size_t small = 12, exact = sizeof(buf);
  void* extra_small[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &small, CU_LAUNCH_PARAM_END};
  void* extra_exact[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &exact, CU_LAUNCH_PARAM_END};
  cr_assert_eq(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra_small),
               CUDA_ERROR_INVALID_VALUE);
  OK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra_exact));
  /* Too many threads for the kernel's registers (128 each: 512 fit, 1024 do not). */
  int regs = 0;
  OK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f_greedy));
  cr_assert_gt(regs, 64, "k_greedy was built with %d registers", regs);
  int max_threads = 0;
  OK(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f_greedy));
  cr_assert_eq(max_threads, 65536 / (regs * 32) * 32, "the attribute says what a launch allows");
  void* gargs[] = {&p, &n};
  cr_assert_eq(cuLaunchKernel(f_greedy, 1, 1, 1, 1024, 1, 1, 0, NULL, gargs, NULL),
               CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  OK(cuLaunchKernel(f_greedy, 1, 1, 1, 65536 / (regs * 32) * 32, 1, 1, 0, NULL, gargs, NULL));
  /* A function of an unloaded module is no longer loaded. */
  OK(cuCtxSynchronize());
  OK(cuModuleUnload(mod));
  cr_assert_eq(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_HANDLE);
  /* None of the launches wrote. */
  assert_untouched(p);
}

Test(sim_timed, says_once_at_cuinit_that_results_are_not_computed) {
  setenv("SIMCU_KERNELS", "timed", 1);
  int tok = errcap_begin();
  cr_assert_geq(tok, 0);
  CUresult r = cuInit(0);
  char* at_init = errcap_end(tok);
  OK(r);
  cr_assert_eq(errcap_count(at_init, "results are NOT computed"), 1, "at cuInit: %s", at_init);
  free(at_init);
  tok = errcap_begin();
  start("timed");
  CUdeviceptr p = patterned_buffer();
  OK(fill(p, 1, 0, NULL));
  OK(fill(p, 2, 0, NULL));
  OK(cuCtxSynchronize());
  char* later = errcap_end(tok);
  cr_assert_eq(later[0], '\0', "later: %s", later);
  free(later);
}

/* Triton and PyTorch's compiled-kernel launcher (torch.compile) load the
 * cubins they compile from a file: cuModuleLoad, and cuLibraryLoadFromFile
 * for libraries. The file's kernels run as those of the same bytes loaded
 * from memory; a missing file is CUDA_ERROR_FILE_NOT_FOUND. */
Test(sim_timed, modules_and_libraries_load_from_a_file) {
  start("timed");
  const char* path = getenv("TIMED_FATBIN");
  CUmodule from_file;
  OK(cuModuleLoad(&from_file, path));
  CUfunction f;
  OK(cuModuleGetFunction(&f, from_file, "k_fill"));
  int nparams = 0;
  size_t off, size;
  while (cuFuncGetParamInfo(f, (size_t)nparams, &off, &size) == CUDA_SUCCESS)
    nparams++;
  cr_assert_eq(nparams, 3, "k_fill's layout read from the file: %d parameters", nparams);
  CUdeviceptr p = patterned_buffer();
  int n = N_FLOATS;
  float v = 1.0f;
  void* args[] = {&p, &n, &v};
  OK(cuLaunchKernel(f, 4, 1, 1, FILL_BLOCK, 1, 1, 0, NULL, args, NULL));
  OK(cuCtxSynchronize());
  assert_untouched(p);
  OK(cuModuleUnload(from_file));

  CUlibrary lib;
  OK(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel k;
  OK(cuLibraryGetKernel(&k, lib, "k_greedy"));
  OK(cuLibraryUnload(lib));

  cr_assert_eq(cuModuleLoad(&from_file, "/nonexistent/kernels.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
  cr_assert_eq(cuModuleLoad(NULL, path), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuModuleLoad(&from_file, "/dev/null"), CUDA_ERROR_INVALID_IMAGE);
}
