/* Spreading a 64-bit key over a table's slots: the one mixer of the house's
 * open-addressing tables (the graph cache's keys and paths, the shim's
 * streams and handles).
 *
 * DESIGN: the first half of MurmurHash3's 64-bit finaliser (fmix64): one
 * multiply between two xor-shifts moves the high bits, where pointers and
 * XXH3 fingerprints differ, into the low bits a power-of-two mask keeps.
 * Header-only and libc-only (util/'s rule). */
#ifndef GRAPE_UTIL_HASH_MIX_H
#define GRAPE_UTIL_HASH_MIX_H

#include <stdint.h>

static inline uint64_t grape__hash_mix(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return x;
}

#endif
