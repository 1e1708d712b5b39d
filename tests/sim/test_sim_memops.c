/* Tests of the sim's stream memory operations (cuStreamWaitValue32/64,
 * cuStreamWriteValue32/64, cuStreamBatchMemOp): the flags frameworks pass
 * between streams.
 *
 * A wait whose condition does not hold can never finish, so "still blocked"
 * is checked after a short sleep without any race: the stream cannot be done
 * until this test writes the value. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "drv_setup.h"

TestSuite(memops, .init = drv_setup);

static CUstream stream(void) {
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  return s;
}

/* Not finished after a while, as a stream behind an unsatisfied wait must be. */
static void assert_blocked(CUstream s, const char* what) {
  usleep(30000);
  cr_assert_eq(cuStreamQuery(s), CUDA_ERROR_NOT_READY, "%s: the wait let the stream go on", what);
}

Test(memops, stream_a_waits_for_the_flag_stream_b_writes) {
  CUstream a = stream(), b = stream();
  CUdeviceptr flag, data;
  int* out;
  OK(cuMemAlloc(&flag, 4));
  OK(cuMemAlloc(&data, 4));
  OK(cuMemsetD32(flag, 0, 1));
  OK(cuMemsetD32(data, 0, 1));
  OK(cuMemAllocHost((void**)&out, 4));
  *out = -1;
  /* A: wait for flag == 1, then read the data B produced before raising it. */
  OK(cuStreamWaitValue32(a, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  OK(cuMemcpyDtoHAsync(out, data, 4, a));
  assert_blocked(a, "before B wrote");
  cr_assert_eq(*out, -1, "the copy behind the wait ran early");
  /* B: produce, then raise the flag, in stream order. */
  OK(cuMemsetD32Async(data, 42, 1, b));
  OK(cuStreamWriteValue32(b, flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  OK(cuStreamSynchronize(a));
  cr_assert_eq(*out, 42);
  OK(cuStreamSynchronize(b));
}

/* Runs one 32-bit wait on a device flag that starts at `initial`: blocked,
 * still blocked after a write of `still`, released by a write of `release`
 * from another stream. */
static void wait32(unsigned cond, uint32_t value, uint32_t initial, uint32_t still,
                   uint32_t release, const char* what) {
  CUstream a = stream(), b = stream();
  CUdeviceptr flag;
  OK(cuMemAlloc(&flag, 4));
  OK(cuMemsetD32(flag, initial, 1));
  OK(cuStreamWaitValue32_v2(a, flag, value, cond));
  assert_blocked(a, what);
  OK(cuStreamWriteValue32_v2(b, flag, still, 0));
  OK(cuStreamSynchronize(b));
  assert_blocked(a, what);
  OK(cuStreamWriteValue32_v2(b, flag, release, 0));
  OK(cuStreamSynchronize(a));
}

Test(memops, wait_geq_is_a_cyclic_comparison) {
  wait32(CU_STREAM_WAIT_VALUE_GEQ, 5, 3, 4, 5, "GEQ");
  /* (int32_t)(0xFFFFFFFF - 1) < 0: a wrapped counter is still behind. */
  wait32(CU_STREAM_WAIT_VALUE_GEQ, 1, 0, 0xFFFFFFFFu, 0x7FFFFFFFu, "GEQ wrapped");
}

Test(memops, wait_eq) {
  wait32(CU_STREAM_WAIT_VALUE_EQ, 7, 0, 8, 7, "EQ");
}

Test(memops, wait_and) {
  wait32(CU_STREAM_WAIT_VALUE_AND, 0xF0, 0x0F, 0x100, 0x10, "AND");
}

Test(memops, wait_nor) {
  /* ~(v | 0xFFFF0000) != 0 holds once a bit of the low half is clear. */
  wait32(CU_STREAM_WAIT_VALUE_NOR, 0xFFFF0000u, 0x0000FFFFu, 0xFFFFFFFFu, 0x0000FFFEu, "NOR");
}

Test(memops, wait64_on_pinned_memory_the_host_writes) {
  CUstream a = stream();
  uint64_t* flag;
  OK(cuMemAllocHost((void**)&flag, 8));
  *flag = 0;
  uint64_t big = 0x100000000ull;   /* differs from 0 only above bit 31 */
  OK(cuStreamWaitValue64_v2(a, (CUdeviceptr)(uintptr_t)flag, big, CU_STREAM_WAIT_VALUE_GEQ));
  assert_blocked(a, "64-bit GEQ");
  __atomic_store_n(flag, big, __ATOMIC_RELEASE);   /* the host, not a stream, writes it */
  OK(cuStreamSynchronize(a));
  OK(cuStreamWriteValue64_v2(a, (CUdeviceptr)(uintptr_t)flag, 0x1234567890ull, 0));
  OK(cuStreamSynchronize(a));
  cr_assert_eq(*flag, 0x1234567890ull);
}

/* A wait the host is to satisfy blocks its stream's worker on host memory:
 * queries of that stream and of events behind the wait answer NOT_READY at
 * once, as for a running host function, instead of waiting for the work to
 * finish (which only this thread's later store can bring about). */
Test(memops, queries_do_not_wait_for_a_stream_blocked_on_the_host) {
  CUstream a = stream();
  uint32_t* flag;
  CUevent e0, e1;
  float ms;
  OK(cuMemAllocHost((void**)&flag, 4));
  *flag = 0;
  OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  OK(cuEventRecord(e0, a));
  OK(cuStreamWaitValue32(a, (CUdeviceptr)(uintptr_t)flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  OK(cuEventRecord(e1, a));
  usleep(30000);   /* the worker now sits in the wait */
  cr_assert_eq(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
  cr_assert_eq(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
  cr_assert_eq(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_NOT_READY);
  __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
  OK(cuEventSynchronize(e1));
  OK(cuEventQuery(e1));
  OK(cuEventElapsedTime(&ms, e0, e1));
}

Test(memops, a_batch_runs_in_order_and_is_checked_before_anything_runs) {
  CUstream a = stream(), b = stream();
  CUdeviceptr flag, mark;
  uint32_t got = 0;
  OK(cuMemAlloc(&flag, 8));
  OK(cuMemAlloc(&mark, 4));
  OK(cuMemsetD32(flag, 0, 2));
  OK(cuMemsetD32(mark, 0, 1));
  CUstreamBatchMemOpParams ops[3];
  memset(ops, 0, sizeof(ops));
  ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  ops[0].waitValue.address = flag;
  ops[0].waitValue.value64 = 3;
  ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[2].writeValue.address = mark;
  ops[2].writeValue.value = 9;
  OK(cuStreamBatchMemOp_v2(a, 3, ops, 0));
  assert_blocked(a, "batch");
  OK(cuMemcpyDtoH(&got, mark, 4));
  cr_assert_eq(got, 0, "the write after the wait ran early");
  CUstreamBatchMemOpParams w;
  memset(&w, 0, sizeof(w));
  w.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  w.writeValue.address = flag;
  w.writeValue.value64 = 3;
  OK(cuStreamBatchMemOp(b, 1, &w, 0));
  OK(cuStreamSynchronize(a));
  OK(cuMemcpyDtoH(&got, mark, 4));
  cr_assert_eq(got, 9);
  /* One bad operation: nothing of the batch runs. */
  OK(cuMemsetD32(mark, 0, 1));
  ops[0].operation = (CUstreamBatchMemOpType)77;
  ops[0].waitValue.operation = (CUstreamBatchMemOpType)77;
  cr_assert_eq(cuStreamBatchMemOp_v2(a, 3, ops, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamSynchronize(a));
  OK(cuMemcpyDtoH(&got, mark, 4));
  cr_assert_eq(got, 0, "a batch with a bad operation queued its good ones");
  cr_assert_eq(cuStreamBatchMemOp_v2(a, 1, ops + 2, 1), CUDA_ERROR_INVALID_VALUE, "flags");
  cr_assert_eq(cuStreamBatchMemOp_v2(a, 257, ops, 0), CUDA_ERROR_INVALID_VALUE, "too many");
}

Test(memops, bad_arguments) {
  CUstream a = stream();
  CUdeviceptr d;
  uint32_t stack = 0;
  OK(cuMemAlloc(&d, 16));
  cr_assert_eq(cuStreamWaitValue32_v2(a, d + 2, 1, 0), CUDA_ERROR_INVALID_VALUE, "unaligned");
  cr_assert_eq(cuStreamWriteValue64_v2(a, d + 4, 1, 0), CUDA_ERROR_INVALID_VALUE, "unaligned 64");
  CUdeviceptr gone;
  OK(cuMemAlloc(&gone, 16));
  OK(cuMemFree(gone));
  cr_assert_eq(cuStreamWriteValue32_v2(a, gone, 1, 0), CUDA_ERROR_INVALID_VALUE, "freed memory");
  cr_assert_eq(cuStreamWriteValue32_v2(a, (CUdeviceptr)(uintptr_t)&stack, 1, 0),
               CUDA_ERROR_INVALID_VALUE, "memory the device cannot reach");
  cr_assert_eq(cuStreamWaitValue32_v2(a, d, 1, 4), CUDA_ERROR_INVALID_VALUE, "condition");
  cr_assert_eq(cuStreamWriteValue32_v2(a, d, 1, 2), CUDA_ERROR_INVALID_VALUE, "write flags");
  cr_assert_eq(cuStreamWaitValue32_v2((CUstream)&stack, d, 1, 0), CUDA_ERROR_INVALID_HANDLE);
  int v = 0;
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0));
  cr_assert_eq(v, 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 0));
  cr_assert_eq(v, 1);
}

Test(memops, per_thread_variants_through_cuGetProcAddress) {
  typedef CUresult (*write_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  write_fn w = NULL, w_pt = NULL;
  CUdriverProcAddressQueryResult st;
  OK(cuGetProcAddress_v2("cuStreamWriteValue32", (void**)&w, 12000, 0, &st));
  OK(cuGetProcAddress_v2("cuStreamWriteValue32", (void**)&w_pt, 12000,
                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  cr_assert_eq((void*)w, dlsym(RTLD_DEFAULT, "cuStreamWriteValue32_v2"));
  cr_assert_eq((void*)w_pt, dlsym(RTLD_DEFAULT, "cuStreamWriteValue32_v2_ptsz"));
  uint32_t* flag;
  OK(cuMemAllocHost((void**)&flag, 4));
  *flag = 0;
  OK(w_pt(NULL, (CUdeviceptr)(uintptr_t)flag, 5, 0));   /* NULL: this thread's own stream */
  OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  cr_assert_eq(*flag, 5);
}

Test(memops, captured_operations_run_at_every_graph_launch) {
  CUstream a = stream(), b = stream();
  CUdeviceptr flag, mark;
  OK(cuMemAlloc(&flag, 4));
  OK(cuMemAlloc(&mark, 4));
  CUgraph g;
  CUgraphExec x;
  OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuStreamWaitValue32_v2(a, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  OK(cuStreamWriteValue32_v2(a, mark, 2, 0));
  OK(cuStreamEndCapture(a, &g));
  OK(cuGraphInstantiate(&x, g, 0));
  for (int round = 0; round < 2; round++) {
    uint32_t got = 1;
    OK(cuMemsetD32(flag, 0, 1));
    OK(cuMemsetD32(mark, 0, 1));
    OK(cuGraphLaunch(x, a));
    assert_blocked(a, "graph");
    OK(cuStreamWriteValue32_v2(b, flag, 1, 0));
    OK(cuStreamSynchronize(a));
    OK(cuMemcpyDtoH(&got, mark, 4));
    cr_assert_eq(got, 2, "round %d", round);
  }
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
}
