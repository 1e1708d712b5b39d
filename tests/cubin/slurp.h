/* Reading a test input file whole, shared by the cubin tests. */
#ifndef GRAPE_TEST_SLURP_H
#define GRAPE_TEST_SLURP_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* dir/name in malloc'd memory of exactly its size, so that ASan sees a read
 * past the end, or with a NUL after it where nul is set (for callers that pass
 * text without a size); fails the test where the file cannot be read. */
static inline uint8_t* slurp_in(const char* dir, const char* name, size_t* size, int nul) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* buf = malloc((size_t)n + (nul ? 1 : 0));
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  if (nul)
    buf[n] = 0;
  fclose(f);
  *size = (size_t)n;
  return buf;
}

#endif
