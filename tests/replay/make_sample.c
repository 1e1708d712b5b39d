/* Writes the format tests' sample trace (sample.h) to argv[1]: the golden
 * file tests/replay/sample.grape and the fuzz seed. Regenerate it, when the
 * format changes on purpose (with its version), by
 *   build/tests/replay/make_sample tests/replay/sample.grape */
#include "sample.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_sample OUT\n");
    return 2;
  }
  grape_trace_t* t = trace_sample();
  char err[512];
  int rc = grape_trace_save(t, argv[1], 0, NULL, err, sizeof(err));
  if (rc != 0)
    fprintf(stderr, "make_sample: %s\n", err);
  grape_trace_free(t);
  return rc != 0;
}
