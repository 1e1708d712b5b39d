/* Tests of kernel classification and features (predict/kernel.c). */
#include <criterion/criterion.h>
#include <math.h>

#include "grape/predict.h"
#include "predict/kernel.h"
#include "predict/model.h"

Test(predict, kernel_names_classify) {
  static const struct {
    const char* name;
    grape_kclass_t cls;
  } cases[] = {
      {"ampere_sgemm_128x64_tn", GRAPE_KC_GEMM},
      {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1", GRAPE_KC_GEMM},
      {"void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>"
       "(Params)", GRAPE_KC_GEMM},
      {"gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false>",
       GRAPE_KC_GEMM},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3>)", GRAPE_KC_ELEMENTWISE},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>"
       "(float*, float const*, int, int, int, bool const*, int, bool)", GRAPE_KC_SOFTMAX},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
       "float, float const*, float const*, float const*, float*, float*, float*)",
       GRAPE_KC_LAYERNORM},
      {"void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>",
       GRAPE_KC_CONV},
      {"cudnn_infer_maxwell_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148n_nt_v1", GRAPE_KC_CONV},
      {"my_custom_kernel", GRAPE_KC_OTHER},
      /* cuDNN's helpers are not convolutions: a transpose is priced as one. */
      {"void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, "
       "(cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)",
       GRAPE_KC_OTHER},
      {"cask_cudnn_infer::computeBOffsetsKernel(cask_cudnn_infer::ComputeBOffsetsParams)",
       GRAPE_KC_OTHER},
      {"ampere_gcgemm_64x64_nt", GRAPE_KC_CONV},
      /* ...nor are the transforms of a non-fused Winograd or FFT convolution
       * or the reduction of a split-K GEMM's partial tiles. */
      {"void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>"
       "(cudnn::winograd_nonfused::WinogradDataParams<float, float>)", GRAPE_KC_OTHER},
      {"void cudnn::winograd::generateWinogradTilesKernel<0, float, float>"
       "(cudnn::winograd::GenerateWinogradTilesParams<float, float>)", GRAPE_KC_OTHER},
      {"void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, int, "
       "int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)", GRAPE_KC_OTHER},
      {"void splitKreduce_kernel<float, float, float, float, true, false, false>"
       "(cublasSplitKParams<float>, float const*, float const*, float*, float const*, "
       "float const*, float const*, float const*, float*, void*, long, float*, int*)",
       GRAPE_KC_OTHER},
      {"void cutlass_cudnn_train::Kernel<cutlass_cudnn_train::reduction::kernel::ReduceSplitK<"
       "cutlass_cudnn_train::MatrixShape<4, 128>, cutlass_cudnn_train::epilogue::thread::"
       "LinearCombination<float, 4, float, float> > >", GRAPE_KC_OTHER},
      {"sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_"
       "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_split_k_kernel_cudnn_train", GRAPE_KC_OTHER},
      {"sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_"
       "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train", GRAPE_KC_GEMM},
      {"cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", GRAPE_KC_CONV},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    cr_expect_eq(grape_kernel_classify(cases[i].name, GRAPE_OP_UNKNOWN), cases[i].cls, "%s -> %s",
                 cases[i].name, grape_kclass_name(grape_kernel_classify(cases[i].name, 0)));
  cr_expect_eq(grape_kernel_classify("volta_sgemm_64x64_nn", GRAPE_OP_CONV), GRAPE_KC_CONV,
               "op dims override the name");
  cr_expect_eq(grape_kernel_classify(NULL, GRAPE_OP_UNKNOWN), GRAPE_KC_OTHER);
}

static grape__kprep_t prep(const char* name, grape_op_t op, double d0, double d1, double d2,
                           double d3) {
  grape_kernel_desc_t k = {.name = name, .grid = {4, 2, 1}, .block = {256, 1, 1}, .regs = -1,
                           .op = op, .dims = {d0, d1, d2, d3}};
  grape__kprep_t p;
  grape__kernel_prep(&k, &p);
  return p;
}

Test(predict, kernel_tiles_and_types_parse) {
  grape__kprep_t p = prep("ampere_sgemm_128x64_tn", GRAPE_OP_UNKNOWN, 0, 0, 0, 0);
  cr_expect_eq(p.tile_m, 128);
  cr_expect_eq(p.tile_n, 64);
  cr_expect_eq(p.layout, 3, "tn");
  cr_expect_eq(p.dtype, 4);
  p = prep("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1",
           GRAPE_OP_UNKNOWN, 0, 0, 0, 0);
  cr_expect_eq(p.tile_m, 256);
  cr_expect_eq(p.tile_n, 128);
  cr_expect_eq(p.math, 3, "bf16 tensor cores");
  cr_expect_eq(p.dtype, 2);
  p = prep("volta_sgemm_32x32_sliced1x4_tn", GRAPE_OP_UNKNOWN, 0, 0, 0, 0);
  cr_expect_eq(p.tile_m, 32, "sliced1x4 is not the tile");
  cr_expect_eq(p.tile_n, 32);
  p = prep("vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl, "
           "at::detail::Array<char*, 2> >", GRAPE_OP_ELEMENTWISE, 1000, 0, 0, 0);
  cr_expect_eq(p.operands, 2);
  cr_expect_eq(p.bytes, 8000, "one input, one output, fp32");
}

Test(predict, kernel_op_counts) {
  grape__kprep_t p = prep("volta_sgemm_128x64_nn", GRAPE_OP_GEMM, 2, 64, 32, 100);
  cr_expect_eq(p.flops, 2.0 * 2 * 64 * 32 * 100);
  cr_expect_eq(p.bytes, 4.0 * 2 * (64 * 100 + 100 * 32 + 64 * 32));
  cr_expect_eq(p.kred, 100);
  cr_expect(p.blk_flops > 0);
  p = prep("softmax_warp_forward", GRAPE_OP_SOFTMAX, 10, 100, 0, 0);
  cr_expect_eq(p.numel, 1000);
  cr_expect_eq(p.bytes, 8000);
  grape_kernel_desc_t c = {.name = "conv", .grid = {1, 1, 1}, .block = {128, 1, 1}, .regs = -1,
                           .op = GRAPE_OP_CONV, .dims = {2, 3, 8, 3, 10, 1, 1}};
  grape__kernel_prep(&c, &p);
  cr_expect_eq(p.flops, 2.0 * 2 * 8 * 10 * 10 * 3 * 9, "same-size output with padding 1");
}

Test(predict, kernel_occupancy_and_waves) {
  const grape_gpu_spec_t* a100 = grape_gpu_find("NVIDIA A100-SXM4-40GB");
  const grape_gpu_spec_t* t4 = grape_gpu_find("Tesla T4");
  grape_kernel_desc_t k = {.name = "elementwise", .grid = {108 * 16 + 1, 1, 1},
                           .block = {128, 1, 1}, .regs = 32};
  grape__kprep_t p;
  grape__occ_t o;
  grape__kernel_prep(&k, &p);
  grape__occupancy(&p, a100, &o);
  cr_expect_eq(o.per_sm, 16, "2048 threads / 128, and 64K regs / (32 x 128)");
  cr_expect_eq(o.waves, 2, "one block past a full wave");
  cr_expect_float_eq(o.util, (108.0 * 16 + 1) / (2 * 108 * 16), 1e-12);
  k.regs = 255;
  grape__kernel_prep(&k, &p);
  grape__occupancy(&p, a100, &o);
  cr_expect_eq(o.per_sm, 2, "registers limit: 65536 / (256 x 128)");
  k.block[0] = 1024;
  k.regs = 16;
  grape__kernel_prep(&k, &p);
  grape__occupancy(&p, t4, &o);
  cr_expect_eq(o.per_sm, 1, "T4 holds 1024 threads per SM");
  k.dyn_smem = 40 * 1024;
  k.block[0] = 64;
  grape__kernel_prep(&k, &p);
  grape__occupancy(&p, t4, &o);
  cr_expect_eq(o.per_sm, 1, "64 KiB of shared memory per SM on T4");
}

/* nn.Linear GEMMs ("_tn") carry the board's power and their cuBLAS kernel
 * generation (+1 maxwell_, -1 volta_, 0 otherwise); other GEMMs and
 * launch-only features do not. */
Test(predict, kernel_linear_gemm_power_and_generation_features) {
  grape_kernel_desc_t k = {.name = "maxwell_sgemm_32x128_tn", .grid = {8, 32, 1},
                           .block = {256, 1, 1}, .regs = -1, .op = GRAPE_OP_GEMM,
                           .dims = {1, 4096, 1024, 8192}};
  grape__kprep_t p;
  grape__kernel_prep(&k, &p);
  double x[GRAPE__NFEAT];
  grape__roof_t r[1];
  const grape_gpu_spec_t* t4 = grape_gpu_find("T4");
  grape__features(&p, t4, 0, x, r);
  cr_expect(x[20] > 0.5 * log(250.0 / 70) && x[20] < log(250.0 / 70), "%g", x[20]);
  cr_expect_float_eq(x[21], 1, 1e-12, "maxwell_");
  cr_expect(x[22] > 0.5 && x[22] < 1, "long kernel: %g", x[22]);
  cr_expect_float_eq(x[23], x[1], 1e-12, "the generation's slope in log T");
  grape__features(&p, grape_gpu_find("NVIDIA A100-PCIE-40GB"), 0, x, r);
  cr_expect_float_eq(x[20], 0, 1e-12, "a 250 W board does not throttle");
  grape__features(&p, t4, 1, x, r);
  cr_expect(x[20] == 0 && x[21] == 0 && x[22] == 0 && x[23] == 0, "launch-only: %g %g", x[20],
            x[21]);
  k.name = "volta_sgemm_128x64_tn";
  grape__kernel_prep(&k, &p);
  grape__features(&p, t4, 0, x, r);
  cr_expect_float_eq(x[21], -1, 1e-12, "volta_");
  k.name = "ampere_sgemm_128x64_tn";
  grape__kernel_prep(&k, &p);
  grape__features(&p, t4, 0, x, r);
  cr_expect_float_eq(x[21], 0, 1e-12, "a generation between the two");
  k.name = "maxwell_sgemm_32x128_nn";
  grape__kernel_prep(&k, &p);
  grape__features(&p, t4, 0, x, r);
  cr_expect(x[20] == 0 && x[21] == 0 && x[23] == 0, "not _tn: %g %g", x[20], x[21]);
}

/* The terms of the linear-time forms 2 and 3: the L2 re-read share of a row
 * op's memory time grows with the input its resident blocks hold, up to all
 * of it; the wave term is waves / clock. */
Test(predict, kernel_l2_reread_and_wave_terms) {
  grape_kernel_desc_t k = {.name = "vectorized_layer_norm_kernel", .grid = {64, 1, 1},
                           .block = {32, 4, 1}, .regs = -1, .op = GRAPE_OP_LAYERNORM,
                           .dims = {64, 1024}};
  grape__kprep_t p;
  grape__kernel_prep(&k, &p);
  double x[GRAPE__NFEAT];
  grape__roof_t r[1];
  const grape_gpu_spec_t* a100 = grape_gpu_find("NVIDIA A100-PCIE-40GB");
  const grape_gpu_spec_t* p4 = grape_gpu_find("P4");
  grape__features(&p, a100, 0, x, r);
  /* 64 resident rows of 4 KiB in a 40 MiB L2. */
  cr_expect_float_eq(r->tre / r->tm, 64 * 4096.0 / (40 * 1048576.0), 0.03 * r->tre / r->tm,
                     "plus the affine vectors' share");
  cr_expect_float_eq(r->tw, 1.0 / 1410, 1e-12, "one wave");
  k.grid[0] = k.dims[0] = 65536;
  grape__kernel_prep(&k, &p);
  grape__features(&p, p4, 0, x, r);
  double part = r->tre / r->tm;
  cr_expect(part > 0.6 && part < 0.7, "20 SMs x 16 rows of 4 KiB: 1.25 of 2 MiB: %g", part);
  cr_expect_float_eq(r->tw, ceil(65536.0 / (20 * 16)) / 1113, 1e-12);
  k.dims[1] = 4096;
  grape__kernel_prep(&k, &p);
  grape__features(&p, p4, 0, x, r);
  cr_expect_float_eq(r->tre, r->tm, 1e-12, "rows of 16 KiB overflow the L2");
  double v[3];
  grape__lin_basis(2, r, v);
  cr_expect(v[0] == 1 && v[1] == r->tm && v[2] == r->tre);
  grape__lin_basis(3, r, v);
  cr_expect(v[0] == 1 && v[1] == r->tm && v[2] == r->tw);
  grape__lin_basis(1, r, v);
  cr_expect(v[1] == fmax(r->tc, r->tm) && v[2] == 0);
}
