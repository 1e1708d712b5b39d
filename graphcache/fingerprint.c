/* Op signatures and path fingerprints (see fingerprint.h). */
#include "fingerprint.h"

#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

_Static_assert(sizeof(grape_op_sig_t) == 56, "grape_op_sig_t must have no padding");

uint64_t grape__fp_ops(const grape_op_sig_t* s, size_t n) {
  return XXH3_64bits(s, n * sizeof(*s));
}

uint64_t grape__fp_name(const char* name) {
  return XXH3_64bits(name, strlen(name));
}

uint64_t grape__fp_bytes(const void* p, size_t n) {
  return XXH3_64bits(p, n);
}

void grape__fp_hex(uint64_t fp, char out[17]) {
  XXH64_canonical_t c;
  XXH64_canonicalFromHash(&c, fp);
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 8; i++) {
    out[2 * i] = digits[c.digest[i] >> 4];
    out[2 * i + 1] = digits[c.digest[i] & 15];
  }
  out[16] = '\0';
}
