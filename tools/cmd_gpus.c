/* grape gpus: lists the GPU spec table the predictor uses. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "grape/predict.h"

int cmd_gpus(int argc, char** argv) {
  int verbose = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: grape gpus [-v] [--device-json FILE]...\n\n"
             "Lists the GPUs the predictor knows (names as nvidia-smi prints them;\n"
             "lookups ignore case, spaces, '-' and '_'). -v adds per-SM limits and\n"
             "the source of each row; --device-json adds or overrides a GPU.\n");
      return 0;
    } else if (strcmp(argv[i], "-v") == 0) {
      verbose = 1;
    } else if (strcmp(argv[i], "--device-json") == 0 && i + 1 < argc) {
      const grape_gpu_spec_t* g;
      if (grape_gpu_load_json(argv[++i], &g) < 0) {
        fprintf(stderr, "grape: error: %s: not a readable device JSON\n", argv[i]);
        return 1;
      }
    } else {
      fprintf(stderr, "grape: error: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  printf("%-26s %-6s %4s %5s %7s %5s %7s %7s %7s %7s\n", "name", "arch", "SMs", "MHz",
         "GB/s", "L2MB", "FP32TF", "FP16TF", "BF16TF", "TF32TF");
  for (size_t i = 0; i < grape_gpu_count(); i++) {
    const grape_gpu_spec_t* g = grape_gpu_at(i);
    printf("%-26s %-6s %4d %5d %7.0f %5.0f %7.1f %7.1f %7.1f %7.1f\n", g->name, g->arch,
           g->sm_count, g->clock_mhz, g->mem_bw_gbs, g->l2_mb, g->fp32_tflops, g->fp16_tflops,
           g->bf16_tflops, g->tf32_tflops);
    if (verbose)
      printf("    regs/SM %d, smem/SM %d KiB, smem/block %d KiB, threads/SM %d, blocks/SM %d;"
             " %s\n",
             g->regs_per_sm, g->smem_per_sm_kb, g->smem_per_block_kb, g->max_threads_per_sm,
             g->max_blocks_per_sm, g->source);
  }
  return 0;
}
