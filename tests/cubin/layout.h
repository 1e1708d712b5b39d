/* Types shared by the test kernels (kernels.cu) and the host-side layout
 * checks (test_cubin_layout.c): the host mirrors each kernel's parameter
 * list as a C struct, and the parsed .nv.info layout must match it. */
#ifndef GRAPE_TEST_LAYOUT_H
#define GRAPE_TEST_LAYOUT_H

#ifdef __CUDACC__
typedef float4 vec4_t;
#else
typedef struct {
  float x, y, z, w;
} __attribute__((aligned(16))) vec4_t;   /* CUDA's float4: 16 bytes, 16-aligned */
#endif

/* Padding inside: 1 + 7 pad + 8 + 2 + 6 pad = 24 bytes. */
struct pad_s {
  char c;
  double d;
  short s;
};

/* Over 4 KB of parameters: nvcc switches to KPARAM_INFO_V2 records. */
#define BIG_BYTES 5120
struct big_s {
  char bytes[BIG_BYTES];
  int tail;
};

#define SMEM_FLOATS 300       /* static shared memory of k_smem */
#define SMEM_THREADS 128      /* __launch_bounds__ of k_smem */

#endif
