/* grape gpus: lists the GPU spec table the predictor uses, as text or JSON. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "grape/predict.h"
#include "util/json_str.h"

static void usage(FILE* to) {
  fprintf(to, "usage: grape gpus [-v] [--json] [--device-json FILE]...\n\n"
              "Lists the GPUs the predictor knows (names as nvidia-smi prints them;\n"
              "lookups ignore case, spaces, '-' and '_'). -v adds per-SM limits and\n"
              "the source of each row; --json prints every field as a JSON array;\n"
              "--device-json adds or overrides a GPU.\n");
}

static void print_json(void) {
  printf("[");
  for (size_t i = 0; i < grape_gpu_count(); i++) {
    const grape_gpu_spec_t* g = grape_gpu_at(i);
    printf("%s\n {\"name\":", i ? "," : "");
    grape__json_put_str(stdout, g->name);
    printf(",\"arch\":");
    grape__json_put_str(stdout, g->arch);
    printf(",\"sm_count\":%d,\"clock_mhz\":%d", g->sm_count, g->clock_mhz);
    const struct {
      const char* key;
      double v;
    } nums[] = {{"mem_bw_gbs", g->mem_bw_gbs},   {"l2_mb", g->l2_mb},
                {"mem_gb", g->mem_gb},           {"fp32_tflops", g->fp32_tflops},
                {"fp16_tflops", g->fp16_tflops}, {"bf16_tflops", g->bf16_tflops},
                {"tf32_tflops", g->tf32_tflops}};
    for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
      printf(",\"%s\":", nums[k].key);
      grape__json_put_num(stdout, nums[k].v);   /* shortest form that reads back the same */
    }
    printf(",\"regs_per_sm\":%d,\"smem_per_sm_kb\":%d,\"smem_per_block_kb\":%d,"
           "\"max_threads_per_sm\":%d,\"max_blocks_per_sm\":%d,\"source\":",
           g->regs_per_sm, g->smem_per_sm_kb, g->smem_per_block_kb, g->max_threads_per_sm,
           g->max_blocks_per_sm);
    grape__json_put_str(stdout, g->source);
    printf("}");
  }
  printf("\n]\n");
}

int cmd_gpus(int argc, char** argv) {
  int verbose = 0, json = 0;
  static const struct option longs[] = {{"json", no_argument, NULL, 'j'},
                                        {"device-json", required_argument, NULL, 'd'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  optind = 0;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "hv", longs, NULL)) != -1;) {
    const grape_gpu_spec_t* g;
    switch (c) {
    case 'h': usage(stdout); return 0;
    case 'v': verbose = 1; break;
    case 'j': json = 1; break;
    case 'd':
      char why[256];
      if (grape_gpu_load_json_err(optarg, &g, why, sizeof(why)) < 0) {
        fprintf(stderr, "grape: error: %s: not a readable device JSON: %s\n", optarg, why);
        return 1;
      }
      break;
    default:
      fprintf(stderr, "grape: error: %s '%s'\n", optopt ? "option needs a value:" : "unknown argument",
              argv[optind - 1]);
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "grape: error: unknown argument '%s'\n", argv[optind]);
    return 2;
  }
  if (json) {
    print_json();
    return 0;
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
