/* bytes.h: little-endian readers over bounded byte ranges, for the parsers
 * of cubin/.
 *
 * DESIGN: every reader takes a pointer the caller has already bounded: the
 * caller checks the range first with in_range(); nothing here dereferences a
 * pointer it has not been told is in range. Offsets in messages are relative
 * to the start of what the caller handed in, so a user can find the bad byte
 * with xxd. memcpy makes unaligned reads defined.
 */
#ifndef GRAPE_CUBIN_BYTES_H
#define GRAPE_CUBIN_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int in_range(size_t size, uint64_t off, uint64_t len) {
  return off <= size && len <= size - off;
}
static inline uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline uint32_t rd32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline uint64_t rd64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

#endif
