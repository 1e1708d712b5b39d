/* Internals shared by the files of cubin/: the fatbin object, error
 * formatting and little-endian readers over bounded byte ranges.
 *
 * DESIGN: every reader takes (base, size, offset) and the caller checks the
 * range first with in_range(); nothing here dereferences a pointer it has not
 * bounded. Offsets in messages are relative to the start of what the caller
 * handed in, so a user can find the bad byte with xxd.
 */
#ifndef GRAPE_CUBIN_INTERNAL_H
#define GRAPE_CUBIN_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "grape/cubin.h"

struct grape_fatbin_s {
  grape_image_t* images;   /* nimages entries, in container order */
  size_t nimages;
  size_t cap;
  void** bufs;             /* buffers owned by the set: input copies, decompressed payloads */
  size_t nbufs;
  size_t bufcap;
  unsigned flags;          /* GRAPE_FATBIN_* load flags */
  int select_arch;         /* > 0: per container, keep only grape_fatbin_select's choice */
  uint8_t* scratch;        /* NO_PAYLOADS: one reused decompression buffer */
  size_t scratch_cap;
  void* dctx;              /* ZSTD_DCtx reused across entries; freed by grape__fatbin_release */
};

/* One container found in a byte range: [off, off + len) with its header size. */
typedef struct grape__span_s {
  size_t off;
  size_t len;
  uint16_t hsize;
} grape__span_t;

/* A unit of parallel work: parse data[0, size) (one or more containers) into a
 * set of its own, merged into the caller's set in job order. */
typedef struct grape__job_s {
  const uint8_t* data;
  size_t size;
  size_t base_off;         /* offset of data in the file, for messages */
  int optional;            /* a scan candidate: failing means "not a container", not an error */
  grape_fatbin_t* out;     /* filled by the worker */
  int rc;
  grape_cubin_err_t err;
} grape__job_t;

/* Magic numbers (CUDA-NOTES.md, "Fatbin containers"). */
#define GRAPE__FATBIN_MAGIC 0xBA55ED50u
#define GRAPE__WRAPPER_MAGIC 0x466243B1u

/* Fatbin entry flags. */
#define GRAPE__FLAG_LZ4_OLD 0x1000u       /* an older scheme, not produced by nvcc 13 */
#define GRAPE__FLAG_LZ4 0x2000u           /* LZ4 block (-compress-mode=speed) */
#define GRAPE__FLAG_ZSTD 0x8000u          /* zstd frame (default, size) */
#define GRAPE__FLAG_ARCH_SPECIFIC 0x100000u   /* sm_90a */
#define GRAPE__FLAG_FAMILY 0x200000u          /* sm_100f */

/* The largest decompressed entry accepted: a lying header must not make us
 * allocate without bound (the largest cubin in libcublasLt is a few MB). */
#define GRAPE__MAX_ENTRY_BYTES ((uint64_t)512 << 20)

/* Fills err (which may be NULL) with a printf-style message. */
void grape__cubin_errf(grape_cubin_err_t* err, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Puts "<formatted>: " in front of the message already in err. */
void grape__cubin_err_prefix(grape_cubin_err_t* err, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* An empty set; NULL when out of memory. */
grape_fatbin_t* grape__fatbin_new(void);
/* Hands buf to fb (freed with it). On failure frees buf and returns -ENOMEM. */
int grape__fatbin_own(grape_fatbin_t* fb, void* buf);
/* Appends a zeroed image and returns it; NULL when out of memory. */
grape_image_t* grape__fatbin_push(grape_fatbin_t* fb);

/* Parses containers in data[0, size) into fb; base_off is added to offsets in
 * messages. data must stay valid as long as fb (the caller makes it owned). */
int grape__fatbin_parse_into(grape_fatbin_t* fb, const uint8_t* data, size_t size,
                             size_t base_off, grape_cubin_err_t* err);

/* Splits data[0, size) into containers (zero padding between them allowed),
 * validating each container header. *spans is malloc'd; *n may be 0 only
 * with an error. */
int grape__fatbin_split(const uint8_t* data, size_t size, size_t base_off, grape__span_t** spans,
                        size_t* n, grape_cubin_err_t* err);

/* Runs jobs on up to as many threads as there are CPUs (at most 4), then
 * moves their images into fb in job order. Returns the first non-optional
 * job's error in job order; failed optional jobs keep rc for the caller. */
int grape__fatbin_run_jobs(grape_fatbin_t* fb, grape__job_t* jobs, size_t n,
                           grape_cubin_err_t* err);

/* Frees fb's decompression context and scratch buffer (kept between entries
 * and containers of one call). */
void grape__fatbin_release(grape_fatbin_t* fb);

/* The extent of a cubin ELF from its headers (section and program header
 * tables and every section's end), or 0 if data does not start with a
 * plausible 64-bit ELF header. Reads only what the headers say exists. */
size_t grape__elf_extent(const uint8_t* data);

/* Kernel names and parameter layouts from PTX text data[0, size). */
int grape__ptx_parse(grape_image_t* img, grape_cubin_err_t* err);

void grape__image_clear(grape_image_t* img);

/* Sets libelf's version once per process (thread-safe). */
void grape__elf_init(void);

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
