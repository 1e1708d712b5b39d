/* stress_memops.c: two streams play ping-pong through stream memory
 * operations (each waits for the other's counter before raising its own, and
 * logs the counter it saw after its wait), while a host thread releases a
 * third stream through a flag in pinned memory. Every operation is queued
 * before any has run, so the waits really block the streams' workers. Exits 0
 * when every logged counter had reached its round, both counters the last
 * round, and the third stream ran only after the host's write; a plain program
 * so it also runs under TSan.
 * Not with SIMCU_SYNC=1: there a wait blocks the thread that submits it, and
 * the writes it waits for are submitted later by that same thread. */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define ROUNDS 200

#define CHECK(call)                                                                \
  do {                                                                             \
    CUresult r_ = (call);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                      \
      fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, r_);          \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

static uint32_t* host_flag;

static void* release(void* arg) {
  (void)arg;
  __atomic_store_n(host_flag, 1, __ATOMIC_RELEASE);
  return NULL;
}

int main(void) {
  CUcontext c;
  CUstream a, b, h;
  CUdeviceptr fa, fb, fh, loga, logb;
  CHECK(cuInit(0));
  CHECK(cuDevicePrimaryCtxRetain(&c, 0));
  CHECK(cuCtxSetCurrent(c));
  CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&h, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemAlloc(&fa, 4));
  CHECK(cuMemAlloc(&fb, 4));
  CHECK(cuMemAlloc(&fh, 4));
  CHECK(cuMemAlloc(&loga, 4 * (ROUNDS + 1)));
  CHECK(cuMemAlloc(&logb, 4 * (ROUNDS + 1)));
  CHECK(cuMemsetD32(fa, 0, 1));
  CHECK(cuMemsetD32(fb, 0, 1));
  CHECK(cuMemsetD32(fh, 0, 1));
  CHECK(cuMemAllocHost((void**)&host_flag, 4));
  *host_flag = 0;
  for (uint32_t i = 1; i <= ROUNDS; i++) {
    CHECK(cuStreamWaitValue32(a, fb, i, CU_STREAM_WAIT_VALUE_GEQ));   /* B's round i */
    CHECK(cuMemcpyDtoDAsync(loga + 4 * i, fb, 4, a));
    CHECK(cuStreamWriteValue32(a, fa, i, 0));
    CHECK(cuStreamWriteValue32(b, fb, i, 0));
    CHECK(cuStreamWaitValue32(b, fa, i, CU_STREAM_WAIT_VALUE_EQ));    /* A's round i */
    CHECK(cuMemcpyDtoDAsync(logb + 4 * i, fa, 4, b));
  }
  CHECK(cuStreamWaitValue32(h, (CUdeviceptr)(uintptr_t)host_flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  CHECK(cuStreamWriteValue32(h, fh, 1, 0));
  usleep(10000);
  uint32_t early = 0;
  CHECK(cuMemcpyDtoH(&early, fh, 4));   /* h is non-blocking: this does not wait for it */
  if (early != 0) {
    fprintf(stderr, "the third stream went on before the host wrote its flag\n");
    return 1;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, release, NULL) != 0)
    return 1;
  CHECK(cuStreamSynchronize(a));
  CHECK(cuStreamSynchronize(b));
  CHECK(cuStreamSynchronize(h));
  pthread_join(t, NULL);
  uint32_t va = 0, vb = 0, vh = 0;
  CHECK(cuMemcpyDtoH(&va, fa, 4));
  CHECK(cuMemcpyDtoH(&vb, fb, 4));
  CHECK(cuMemcpyDtoH(&vh, fh, 4));
  uint32_t la[ROUNDS + 1], lb[ROUNDS + 1];
  CHECK(cuMemcpyDtoH(la, loga, sizeof(la)));
  CHECK(cuMemcpyDtoH(lb, logb, sizeof(lb)));
  for (uint32_t i = 1; i <= ROUNDS; i++)
    if (la[i] < i || lb[i] < i) {
      fprintf(stderr, "round %u: A saw %u, B saw %u after their waits\n", i, la[i], lb[i]);
      return 1;
    }
  if (va != ROUNDS || vb != ROUNDS || vh != 1) {
    fprintf(stderr, "counters %u, %u and %u, want %u, %u and 1\n", va, vb, vh, ROUNDS, ROUNDS);
    return 1;
  }
  printf("%d rounds of ping-pong through stream memory operations\n", ROUNDS);
  return 0;
}
