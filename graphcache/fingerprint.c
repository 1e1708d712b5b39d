/* Op signatures, graph keys and path fingerprints (see fingerprint.h). */
#include "fingerprint.h"

#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

_Static_assert(sizeof(grape_op_key_t) == 32, "grape_op_key_t must have no padding");
_Static_assert(sizeof(grape_op_dims_t) == 32, "grape_op_dims_t must have no padding");

/* GRAPE_FP_COLLIDE (a test build only): every graph key and every path of a
 * length share one fingerprint, so that the tables' op-by-op
 * confirmation is all that keeps different paths apart. */
#ifdef GRAPE_FP_COLLIDE
#define FP_OR_COLLIDE(fp, n) ((void)(fp), (void)(n), (uint64_t)0x5eed0000)
#else
#define FP_OR_COLLIDE(fp, n) (fp)
#endif

uint64_t grape__fp_keys(const grape_op_key_t* keys, size_t n) {
  return FP_OR_COLLIDE(XXH3_64bits(keys, n * sizeof(*keys)), n);
}

uint64_t grape__fp_path(uint64_t keyfp, const grape_op_dims_t* dims, size_t n) {
  return FP_OR_COLLIDE(XXH3_64bits_withSeed(dims, n * sizeof(*dims), keyfp), n);
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
