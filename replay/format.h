/* The trace file's layout (docs/trace-format.md) and the in-memory model shared
 * by the writer (write.c), the reader (read.c) and the model (trace.c).
 *
 * DESIGN: a file is a 16-byte header (magic, format version, flags) followed
 * by sections. Each section is a 24-byte header (type, flags, payload length,
 * checksum) and its payload; the checksum is XXH3-64 of the payload seeded
 * with XXH3-64 of the first 16 header bytes, so a flipped bit in the type or
 * length is caught as surely as one in the payload. Sections come in a fixed
 * order (HEAD, IMAG*, FUNC, ALOC, PATH*, GRPH?, TIME?, TLIN?, TLAR?, NVTX?, END), so every index a
 * record holds points backwards and is checked as it is read: one pass. An
 * unknown section is skipped unless its REQUIRED flag is set. All integers
 * are little-endian, doubles are IEEE-754 bit patterns, strings are a u32
 * length and that many bytes (no NUL inside). */
#ifndef GRAPE_REPLAY_FORMAT_H
#define GRAPE_REPLAY_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "grape/trace.h"

#define TRACE_MAGIC "GRAPETRC"
#define TRACE_FILE_HEADER 16u
#define TRACE_SECTION_HEADER 24u

/* Section types: four ASCII letters read as a little-endian u32. */
#define TRACE_TYPE(a, b, c, d) \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
enum {
  SEC_HEAD = TRACE_TYPE('H', 'E', 'A', 'D'),
  SEC_IMAG = TRACE_TYPE('I', 'M', 'A', 'G'),
  SEC_FUNC = TRACE_TYPE('F', 'U', 'N', 'C'),
  SEC_ALOC = TRACE_TYPE('A', 'L', 'O', 'C'),
  SEC_PATH = TRACE_TYPE('P', 'A', 'T', 'H'),
  SEC_GRPH = TRACE_TYPE('G', 'R', 'P', 'H'),
  SEC_TIME = TRACE_TYPE('T', 'I', 'M', 'E'),
  SEC_TLIN = TRACE_TYPE('T', 'L', 'I', 'N'),
  SEC_TLAR = TRACE_TYPE('T', 'L', 'A', 'R'),
  SEC_NVTX = TRACE_TYPE('N', 'V', 'T', 'X'),
  SEC_END = TRACE_TYPE('E', 'N', 'D', ' '),
};
#define SEC_REQUIRED 0x1u   /* a reader that does not know the type must refuse the file */

/* Fixed sizes of records (what a count is checked against before allocating). */
#define REC_IMAGE 24u       /* hash, kind, arch, size */
#define REC_FUNC 40u        /* id, image, regs, smem, max threads, param bytes, nparams, 2 string lengths */
#define REC_PARAM 8u
#define REC_ALLOC 32u
#define REC_OP 68u
#define REC_PTR 16u
#define REC_PATH 20u        /* fp, count, nops */
#define REC_GRAPH 24u       /* path, built, ran, hits, string length */
#define REC_TIMES 28u       /* path, iters, path_ms, nops, string length */
#define REC_TL_HEAD 24u     /* clock string length, origin, dropped, count */
#define REC_TL_OP 72u       /* kind, how, func, thread, stream, what, 4 times, seq */
#define REC_TL_ARGS 36u     /* api, dir, grid, block, shmem */
#define REC_NVTX_RANGE 32u  /* kind, name, thread, parent, start, end */

/* ---- The model ---- */

typedef struct image_s {
  grape_trace_image_t r;
  uint8_t* owned;             /* the bytes when copied; NULL when borrowed or mapped */
} image_t;

typedef struct func_s {
  grape_trace_func_t r;
  char* name;                 /* owned copies behind r's strings */
  char* bodies;
  grape_trace_param_t* params;
} func_t;

typedef struct path_s {
  grape_trace_path_t r;       /* r.graph and r.times point into the boxes below */
  void* block;                /* ops, pointer words (and copied parameters) in one allocation */
  void* graph_box;            /* grape_trace_graph_t + its string, one allocation */
  void* times_box;            /* grape_trace_times_t + op times + device name */
} path_t;

struct grape_trace_s {
  grape_trace_info_t info;
  char* info_strings[3];      /* owned: grape_version, device_name, program */
  image_t* images;
  size_t nimages, cap_images;
  func_t* funcs;
  size_t nfuncs, cap_funcs;
  grape_trace_alloc_t* allocs;
  size_t nallocs, cap_allocs;
  path_t* paths;
  size_t npaths, cap_paths;
  grape_trace_timeline_t* tl;  /* NULL, or one allocation: header, ops, clock name */
  grape_trace_nvtx_t* nvtx;   /* NULL, or one allocation: header, name pointers, ranges, names */
  void* map;                  /* a loaded file: mapped (or read) bytes */
  size_t map_len;
  int map_is_mmap;
};

/* Grows *v (element size sz) to hold one more element. @return 0 or -ENOMEM. */
int grape__trace_grow(void** v, size_t* cap, size_t len, size_t sz);

/* Copies a path's ops into one block (ops, pointer words, and, with
 * copy_bytes, the parameters and attributes). @return 0 or -ENOMEM. */
int grape__trace_path_copy(path_t* dst, const grape_trace_path_t* src, int copy_bytes);

/* Checks NVTX record i of n. @return NULL when good, else what is wrong. */
const char* grape__trace_range_check(const grape_trace_nvtx_t* n, uint32_t i);

/* Frees what a path owns. */
void grape__trace_path_release(path_t* p);

/* ---- Little-endian fields ---- */

static inline void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t get_u32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get_u64(const uint8_t* p) {
  return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static inline uint64_t f64_bits(double d) {
  uint64_t v;
  memcpy(&v, &d, 8);
  return v;
}

static inline double bits_f64(uint64_t v) {
  double d;
  memcpy(&d, &v, 8);
  return d;
}

/* Checksum of a section: header bytes 0..16 and the payload. */
uint64_t grape__trace_checksum(const uint8_t* header16, const uint8_t* payload, size_t len);

/* Name of a section type for messages ("PATH"; "?" bytes shown as '.'). */
void grape__trace_type_name(uint32_t type, char out[5]);

#endif
