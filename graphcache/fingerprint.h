/* Op signatures and region path fingerprints.
 *
 * DESIGN: an op's signature is everything that fixes the shape of a graph node
 * (kind, function identity, grid, block, dynamic shared memory, launch
 * attributes, parameter block size), never parameter values, so two iterations
 * of the same control-flow path have equal signature arrays. A region's path
 * fingerprint is XXH3-64 of its signature array, taken in one pass when the
 * region ends: the array is contiguous, and one pass over it costs a few
 * instructions per op where chaining a hash per op costs fifty (the launch
 * path's budget is a few hundred). Signatures are plain fixed-size structs
 * with no padding, hashed as bytes. The canonical text form
 * of a fingerprint is 16 lower-case hex digits of the big-endian value, as in
 * tests/vectors/ and the exit report. */
#ifndef GRAPE_GRAPHCACHE_FINGERPRINT_H
#define GRAPE_GRAPHCACHE_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

typedef enum grape_op_kind_e {
  GRAPE_OP_KERNEL = 1,
  GRAPE_OP_MEMSET = 2,
  GRAPE_OP_MEMCPY = 3,   /* device-to-device */
} grape_op_kind_t;

typedef struct grape_op_sig_s {
  uint32_t kind;          /* grape_op_kind_t */
  uint32_t param_bytes;   /* kernel: parameter block size; memset/memcpy: 0 */
  uint64_t func;          /* kernel: grape__fp_name(mangled name), or the handle when unknown;
                             memset/memcpy: byte count */
  uint32_t grid[3];       /* memset: value width in bytes in grid[0] */
  uint32_t block[3];
  uint32_t shmem;         /* dynamic shared memory, bytes */
  uint32_t flags;         /* GRAPE_SIG_* */
  uint64_t attrs;         /* hash of launch attributes (cuLaunchKernelEx), 0 when none */
} grape_op_sig_t;

enum {
  GRAPE_SIG_COOPERATIVE = 1u << 0,
  GRAPE_SIG_EXTRA = 1u << 1,   /* parameters came as one 'extra' buffer */
};

/* Fingerprint of the region made of the n ops s[0..n). */
uint64_t grape__fp_ops(const grape_op_sig_t* s, size_t n);

/* Identity of a kernel by its mangled name, stable across runs. */
uint64_t grape__fp_name(const char* name);

/* Hash of arbitrary bytes (launch attributes). */
uint64_t grape__fp_bytes(const void* p, size_t n);

/* Canonical text: 16 hex digits + NUL into out[17]. */
void grape__fp_hex(uint64_t fp, char out[17]);

#endif
