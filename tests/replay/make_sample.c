/* Writes the format tests' sample trace (sample.h) to OUT: the golden file
 * tests/replay/sample.grape and the fuzz seed. Regenerate it, when the
 * format changes on purpose (with its version), by
 *   build/tests/replay/make_sample tests/replay/sample.grape
 * With NPATHS, NPATHS more paths of 64 kernel ops each (64 parameter bytes,
 * 4 pointer words) are added: the large trace of the reader's speed
 * measurement (docs/performance.md). */
#include "sample.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: make_sample OUT [NPATHS]\n");
    return 2;
  }
  grape_trace_t* t = trace_sample();
  long extra = argc == 3 ? atol(argv[2]) : 0;
  grape_trace_op_t ops[64];
  grape_trace_ptr_t ptrs[4] = {{0, 0, 0}, {8, 0, 64}, {16, 1, 0}, {24, 0, 128}};
  uint8_t params[64];
  for (int i = 0; i < 64; i++)
    params[i] = (uint8_t)i;
  for (int j = 0; j < 64; j++)
    ops[j] = (grape_trace_op_t){GRAPE_TRACE_OP_KERNEL, 0, 0x1111, {(uint32_t)j + 1, 1, 1},
                                {128, 1, 1}, 0, 0, 0, 64, 0, 4, params, NULL, ptrs};
  for (long i = 0; i < extra; i++) {
    grape_trace_path_t p = {0x5000000000000000ull + (uint64_t)i, 1 + (uint64_t)i % 7, 64, ops,
                            NULL, NULL};
    uint32_t idx;
    SAMPLE_EQ(grape_trace_add_path(t, &p, &idx), 0);
  }
  char err[512];
  int rc = grape_trace_save(t, argv[1], 0, NULL, err, sizeof(err));
  if (rc != 0)
    fprintf(stderr, "make_sample: %s\n", err);
  grape_trace_free(t);
  return rc != 0;
}
