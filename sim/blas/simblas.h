/* simblas.h: a tiny BLAS (row-major sgemm, strided-batched sgemm, saxpy) that
 * stands in for cuBLASLt in the examples.
 *
 * It reaches the CUDA driver the way cuBLASLt does: dlopen("libcuda.so.1"),
 * raw dlsym of unsuffixed driver names, its own kernel image loaded with
 * cuModuleLoadData, launches with cuLaunchKernel / cuLaunchKernelEx. Its
 * kernels are real CUDA kernels (sm_90) with CPU bodies for the sim, so the
 * same library runs on a GPU and on sim/.
 *
 * Matrices are row-major: element (i, j) of an r x c matrix X with leading
 * dimension ldx is X[i * ldx + j]. trans_a means op(A) = A^T, where A is stored
 * k x m. Every product is accumulated in index order with fmaf, so results
 * are bit-identical on a GPU and on the sim. Streams are CUstream/cudaStream_t.
 * Functions return 0 or a CUDA driver error code.
 */
#ifndef SIMBLAS_H
#define SIMBLAS_H

#ifdef __cplusplus
extern "C" {
#endif

int simblas_init(void);

/* C = alpha * op(A) * op(B) + beta * C, with C m x n and k the inner size. */
int simblas_sgemm(void* stream, int trans_a, int trans_b, int m, int n, int k, float alpha,
                  const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);

/* batch products; matrix b of A, B, C starts stride_{a,b,c} floats after matrix b-1. */
int simblas_sgemm_strided_batched(void* stream, int trans_a, int trans_b, int m, int n, int k,
                                  float alpha, const float* A, int lda, long long stride_a,
                                  const float* B, int ldb, long long stride_b, float beta,
                                  float* C, int ldc, long long stride_c, int batch);

/* y = alpha * x + y */
int simblas_saxpy(void* stream, int n, float alpha, const float* x, float* y);

#ifdef __cplusplus
}
#endif
#endif
