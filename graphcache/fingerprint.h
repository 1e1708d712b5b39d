/* Op signatures, graph keys and path fingerprints.
 *
 * DESIGN: an op's signature has two halves. Its key holds what fixes the kind
 * of a graph node and the function behind it (kind, function identity,
 * parameter block size, flags, launch attributes); its dims hold what an
 * executable graph can re-bind on every replay (grid, block, dynamic shared
 * memory; a memset's or copy's byte count). Neither holds parameter values, so
 * two iterations of the same control-flow path have equal signatures. A
 * region's graph key is XXH3-64 of its key array: paths that differ only in
 * launch dimensions (a batch that shrinks, a sequence that grows) share it and
 * replay one graph. Its path fingerprint, which observe mode reports and the
 * predictor needs, is XXH3-64 of its dims array seeded with the graph key.
 * Both are taken in one pass over contiguous arrays when the region ends: one
 * pass costs a few instructions per op where chaining a hash per op costs
 * fifty. Keys and dims are fixed-size structs without padding, hashed as
 * bytes. The canonical text form of a fingerprint is 16 lower-case hex digits
 * of the big-endian value, as in the exit report and the golden vectors of
 * tests/graphcache/test_fingerprint.c. */
#ifndef GRAPE_GRAPHCACHE_FINGERPRINT_H
#define GRAPE_GRAPHCACHE_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

typedef enum grape_op_kind_e {
  GRAPE_OP_KERNEL = 1,
  GRAPE_OP_MEMSET = 2,
  GRAPE_OP_MEMCPY = 3,   /* device-to-device */
} grape_op_kind_t;

typedef struct grape_op_key_s {
  uint32_t kind;          /* grape_op_kind_t */
  uint32_t param_bytes;   /* size of the op's parameter block (see graphcache/region.h) */
  uint64_t func;          /* kernel: grape__fp_name(mangled name), or the handle when unknown;
                             memset: element size in bytes; memcpy: 0 */
  uint32_t flags;         /* GRAPE_SIG_* */
  uint32_t attrs_bytes;   /* launch attributes kept after the parameter block, bytes */
  uint64_t attrs;         /* hash of those attributes (cuLaunchKernelEx), 0 when none */
} grape_op_key_t;

typedef struct grape_op_dims_s {
  uint32_t grid[3];       /* memset/memcpy: the byte count in grid[0] (low) and grid[1] (high) */
  uint32_t block[3];
  uint32_t shmem;         /* dynamic shared memory, bytes */
  uint32_t zero;          /* always 0 */
} grape_op_dims_t;

/* Word i (8 bytes, unaligned) of p, and the word whose low half is lo: a key
 * or dims compared word by word (cache.h, region.h). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a word's low half comes first");
_Static_assert(offsetof(grape_op_key_t, param_bytes) == 4 && offsetof(grape_op_key_t, func) == 8 &&
                   offsetof(grape_op_key_t, flags) == 16 &&
                   offsetof(grape_op_key_t, attrs_bytes) == 20 &&
                   offsetof(grape_op_key_t, attrs) == 24 && sizeof(grape_op_key_t) == 32,
               "an op key is four words: kind|param_bytes, func, flags|attrs_bytes, attrs");
_Static_assert(offsetof(grape_op_dims_t, block) == 12 && offsetof(grape_op_dims_t, shmem) == 24 &&
                   offsetof(grape_op_dims_t, zero) == 28 && sizeof(grape_op_dims_t) == 32,
               "dims are four words: grid 0-1, grid 2|block 0, block 1-2, shmem|zero");
static inline __attribute__((always_inline)) uint64_t grape__word(const uint8_t* p, size_t i) {
  uint64_t v;
  __builtin_memcpy(&v, p + 8 * i, sizeof(v));
  return v;
}
static inline __attribute__((always_inline)) uint64_t grape__pair32(uint32_t lo, uint32_t hi) {
  return (uint64_t)lo | (uint64_t)hi << 32;
}

/* One op's whole signature: the element of a path. */
typedef struct grape_op_sig_s {
  grape_op_key_t key;
  grape_op_dims_t dims;
} grape_op_sig_t;

enum {
  GRAPE_SIG_COOPERATIVE = 1u << 0,
  GRAPE_SIG_EXTRA = 1u << 1,   /* parameters came as one 'extra' buffer */
};

/* Graph key of the n ops keys[0..n). */
uint64_t grape__fp_keys(const grape_op_key_t* keys, size_t n);

/* Path fingerprint of n ops with graph key keyfp and dims dims[0..n). */
uint64_t grape__fp_path(uint64_t keyfp, const grape_op_dims_t* dims, size_t n);

/* Identity of a kernel by its mangled name, stable across runs. */
uint64_t grape__fp_name(const char* name);

/* Hash of arbitrary bytes (launch attributes). */
uint64_t grape__fp_bytes(const void* p, size_t n);

/* Canonical text: 16 hex digits + NUL into out[17]. */
void grape__fp_hex(uint64_t fp, char out[17]);

#endif
