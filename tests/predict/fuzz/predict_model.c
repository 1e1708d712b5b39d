/* libFuzzer target: the model file parser. Whatever parses must predict
 * finite, positive times for a few kernels of every class, on a GPU of the
 * seed's known regime and on one it does not know, with ordered bounds. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "grape/predict.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grape_model_t* m;
  char err[128];
  if (grape_model_parse((const char*)data, size, &m, err, sizeof(err)) < 0)
    return 0;
  static const char* const gpus[] = {"NVIDIA A100-PCIE-40GB", "Tesla T4", "H200"};
  static const char* const names[] = {"ampere_sgemm_128x64_tn", "elementwise_kernel",
                                      "softmax_warp_forward", "layer_norm", "cudnn", "k"};
  for (int gi = 0; gi < 3; gi++) {
    const grape_gpu_spec_t* g = grape_gpu_find(gpus[gi]);
    grape_kernel_desc_t k[6];
    for (int i = 0; i < 6; i++) {
      grape_kernel_desc_t d = {.name = names[i], .grid = {100, 2, 1}, .block = {128, 1, 1},
                               .regs = -1, .op = i == 0 ? GRAPE_OP_GEMM : GRAPE_OP_UNKNOWN,
                               .dims = {1, 512, 512, 512}};
      k[i] = d;
      for (int me = 0; me < GRAPE_METHOD_COUNT; me++) {
        double t = grape_predict_kernel_ms_with(m, me, g, &k[i]);
        if (!(t > 0) || !isfinite(t))
          abort();
      }
      grape_prediction_t p;
      grape_predict_kernel(m, g, &k[i], &p);
      if (!(p.ms > 0) || !isfinite(p.ms) || (p.has_interval && !(p.lo_ms <= p.hi_ms)))
        abort();
    }
    grape_path_prediction_t pp;
    if (grape_predict_path_interval(m, g, k, 6, &pp) < 0 || !isfinite(pp.eager_ms) ||
        !(pp.graph_ms > 0))
      abort();
  }
  grape_model_free(m);
  return 0;
}
