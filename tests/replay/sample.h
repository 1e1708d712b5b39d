/* The trace of the format tests: every kind of record, fixed values (also
 * written by make_sample.c as tests/replay/sample.grape, the golden file and
 * fuzz seed). */
#ifndef GRAPE_TESTS_REPLAY_SAMPLE_H
#define GRAPE_TESTS_REPLAY_SAMPLE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/trace.h"

#define SAMPLE_EQ(a, b)                                                   \
  do {                                                                    \
    if ((a) != (b)) {                                                     \
      fprintf(stderr, "%s:%d: %s != %s\n", __FILE__, __LINE__, #a, #b);   \
      abort();                                                            \
    }                                                                     \
  } while (0)

/* A trace with every kind of record: two images (one added twice), three
 * functions (layout known, unknown, no image), two allocations, two paths
 * (pointer words, a memset, launch attributes, graph outcome, times). */
static grape_trace_t* trace_sample(void) {
  grape_trace_t* t;
  SAMPLE_EQ(grape_trace_new(&t), 0);
  grape_trace_info_t in = {"0.1.0", "NVIDIA H100 80GB HBM3", 9, 0, 13000, 1700000000123456789ull,
                           4242, 1, "/opt/prog", 12, 30, 0, 0};
  SAMPLE_EQ(grape_trace_set_info(t, &in), 0);
  uint8_t elf[300], ptx[64];
  for (int i = 0; i < 300; i++)
    elf[i] = (uint8_t)(i * 7);
  memset(ptx, 'p', sizeof(ptx));
  uint32_t im0, im1, again;
  SAMPLE_EQ(grape_trace_add_image(t, GRAPE_TRACE_IMAGE_ELF, 90, elf, sizeof(elf), 0, &im0), 0);
  SAMPLE_EQ(grape_trace_add_image(t, GRAPE_TRACE_IMAGE_PTX, 80, ptx, sizeof(ptx), 0, &im1), 0);
  SAMPLE_EQ(grape_trace_add_image(t, GRAPE_TRACE_IMAGE_ELF, 90, elf, sizeof(elf), 0, &again), 0);
  SAMPLE_EQ(again, im0);   /* the same bytes are stored once */
  grape_trace_param_t pl[2] = {{0, 8}, {8, 4}};
  grape_trace_func_t f0 = {"_Z1kPfi", 0x1111, im0, 32, 1024, 256, 16, 2, pl, "/opt/prog"};
  grape_trace_func_t f1 = {"_Z2k2v", 0x2222, im1, -1, 0, -1, 0, GRAPE_TRACE_NONE, NULL, ""};
  grape_trace_func_t f2 = {"", 0x3333, GRAPE_TRACE_NONE, -1, 0, -1, 8, GRAPE_TRACE_NONE, NULL, ""};
  uint32_t fi;
  SAMPLE_EQ(grape_trace_add_func(t, &f0, &fi), 0);
  SAMPLE_EQ(grape_trace_add_func(t, &f1, &fi), 0);
  SAMPLE_EQ(grape_trace_add_func(t, &f2, &fi), 0);
  grape_trace_alloc_t a0 = {3, 0x7f0000001000ull, 4096, GRAPE_TRACE_ALLOC_DEVICE};
  grape_trace_alloc_t a1 = {9, 0x7f0000100000ull, 64, GRAPE_TRACE_ALLOC_HOST_PINNED};
  uint32_t ai;
  SAMPLE_EQ(grape_trace_add_alloc(t, &a0, &ai), 0);
  SAMPLE_EQ(grape_trace_add_alloc(t, &a1, &ai), 0);
  uint8_t params0[16] = {0x10, 0x10, 0, 0, 0, 0x7f, 0, 0, 5, 0, 0, 0, 0xee, 0xee, 0xee, 0xee};
  uint8_t attrs[72];
  memset(attrs, 0xab, sizeof(attrs));
  grape_trace_ptr_t w0 = {0, 0, 16};
  grape_trace_ptr_t w1 = {0, 1, 8};
  uint8_t params2[8] = {8, 0, 0x10, 0, 0, 0x7f, 0, 0};
  grape_trace_op_t ops_a[3] = {
      {GRAPE_TRACE_OP_KERNEL, 0, 0x1111, {4, 1, 1}, {64, 1, 1}, 0, 0, 0, 16, 0, 1, params0, NULL, &w0},
      {GRAPE_TRACE_OP_MEMSET, GRAPE_TRACE_NONE, 4096, {4, 0, 0}, {0, 0, 0}, 0, 0, 0, 0, 0, 0, NULL,
       NULL, NULL},
      {GRAPE_TRACE_OP_KERNEL, 1, 0x2222, {1, 2, 3}, {32, 4, 1}, 512, 1, 0x99, 0, 72, 0, NULL, attrs,
       NULL},
  };
  grape_trace_graph_t g = {41, 1, 1, "replayed"};
  double ms[3] = {0.25, -1, 1.5};
  grape_trace_times_t tm = {10, 2.0, ms, "NVIDIA H100 80GB HBM3"};
  grape_trace_path_t pa = {0xfeedfacecafebeefull, 9, 3, ops_a, &g, &tm};
  grape_trace_op_t ops_b[1] = {
      {GRAPE_TRACE_OP_KERNEL, 2, 0x3333, {1, 1, 1}, {1, 1, 1}, 0, 2, 0, 8, 0, 1, params2, NULL, &w1}};
  grape_trace_path_t pb = {0x0123456789abcdefull, 3, 1, ops_b, NULL, NULL};
  uint32_t pi;
  SAMPLE_EQ(grape_trace_add_path(t, &pa, &pi), 0);
  SAMPLE_EQ(grape_trace_add_path(t, &pb, &pi), 0);
  return t;
}

#endif
