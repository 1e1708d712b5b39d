/* common.h: helpers shared by the examples' host code (C and CUDA C). */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,         \
              cudaGetErrorString(e_));                                             \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

/* Deterministic pseudo-random numbers (64-bit LCG, top bits). */
static inline uint32_t ex_rand(uint64_t* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(*s >> 33);
}

/* FNV-1a over bytes, chained through h. */
static inline uint64_t ex_fnv(uint64_t h, const void* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}
#define EX_FNV_INIT 1469598103934665603ULL

/* --iters N (default dflt). */
static inline int ex_iters(int argc, char** argv, int dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--iters") == 0)
      return atoi(argv[i + 1]);
  return dflt;
}

/* 1 if flag is among the arguments. */
static inline int ex_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], flag) == 0)
      return 1;
  return 0;
}

#endif
