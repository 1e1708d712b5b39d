/* Kernel images: fatbin containers, cubin ELF files and PTX, as the CUDA
 * toolchain produces them and as programs hand them to the driver.
 *
 * DESIGN: every parser here works on a bounded byte range (pointer + size) and
 * validates each length and offset before it reads, so malformed input gives a
 * negative errno and a message in grape_cubin_err_t naming what is wrong and at
 * which offset, never a crash. Parsed objects own copies of what they keep
 * (decompressed payloads, names), so the caller's buffer may go away after the
 * call. Nothing here is thread-safe per object; distinct objects are independent.
 */
#ifndef GRAPE_CUBIN_H
#define GRAPE_CUBIN_H

#include <stddef.h>
#include <stdint.h>

#include "grape/grape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error detail filled by every parser on failure (msg is always NUL-terminated). */
typedef struct grape_cubin_err_s {
  char msg[256];
} grape_cubin_err_t;

typedef enum grape_image_kind_e {
  GRAPE_IMAGE_ELF = 2,   /* SASS cubin (fatbin entry kind 2) */
  GRAPE_IMAGE_PTX = 1,   /* PTX text (fatbin entry kind 1) */
  GRAPE_IMAGE_LTOIR = 8, /* NVVM IR for JIT LTO (kind 8, e.g. cuFFT callbacks): no kernels parsed */
} grape_image_kind_t;

typedef enum grape_compression_e {
  GRAPE_COMPRESS_NONE = 0,
  GRAPE_COMPRESS_LZ4,
  GRAPE_COMPRESS_ZSTD,
} grape_compression_t;

/* One kernel parameter as the launch ABI lays it out in the parameter buffer. */
typedef struct grape_kparam_s {
  uint32_t offset;   /* byte offset in the parameter block */
  uint32_t size;     /* bytes */
} grape_kparam_t;

typedef struct grape_kernel_s {
  char* name;                 /* mangled name (owned) */
  char* demangled;            /* demangled name, or a copy of name for C kernels (owned) */
  uint32_t nparams;
  grape_kparam_t* params;     /* nparams entries ordered by ordinal (owned) */
  uint32_t param_bytes;       /* parameter block size (CBANK_PARAM_SIZE, else end of last param) */
  int registers;              /* per thread; -1 unknown */
  uint32_t shared_bytes;      /* static shared memory */
  int max_threads;            /* max threads per block from MAX_THREADS / reqntid; -1 unknown */
  int cuda_api_version;       /* EIATTR_CUDA_API_VERSION; -1 unknown */
} grape_kernel_t;

/* A variable of device memory the image defines (__device__ / __constant__:
 * PTX .global / .const at module scope, cubin objects of .nv.global* and
 * .nv.constantN, N > 0), which cuModuleGetGlobal finds by name. */
typedef struct grape_global_s {
  char* name;        /* mangled name (owned) */
  uint64_t size;     /* bytes */
  uint8_t* init;     /* its initial bytes (owned), or NULL: zero */
} grape_global_t;

/* One entry of a fatbin (or a bare cubin / PTX given on its own). */
typedef struct grape_image_s {
  grape_image_kind_t kind;
  grape_compression_t compression;   /* as stored in the container */
  int arch;                          /* SM number: 90 for sm_90 */
  const uint8_t* data;               /* decompressed payload (owned by the fatbin) */
  size_t size;
  uint32_t nkernels;                 /* ELF: kernels parsed from the cubin; PTX: from .entry lines */
  grape_kernel_t* kernels;
  char variant;                      /* 'a' arch-specific (sm_90a), 'f' family (sm_100f), else 0 */
  uint64_t flags;                    /* fatbin entry flags as stored (0 for a bare cubin/PTX) */
  size_t offset;                     /* entry header offset in the parsed input; 0 for bare images */
  uint32_t nglobals;                 /* variables of device memory the image defines */
  grape_global_t* globals;
} grape_image_t;

/* An ordered set of images: one or more fatbin containers, a cubin, or PTX. */
typedef struct grape_fatbin_s grape_fatbin_t;

/* Parses the fatbin container(s) that start at data and span at most size bytes
 * (several containers may follow each other, as in a host ELF .nv_fatbin section).
 * @return 0 and *out, or a negative errno with err filled. */
GRAPE_API int grape_fatbin_parse(const void* data, size_t size, grape_fatbin_t** out,
                                 grape_cubin_err_t* err);

/* Parses an image as handed to the driver or the runtime, detecting its form:
 * a __fatBinC_Wrapper_t (magic 0x466243B1, as given to __cudaRegisterFatBinary),
 * a fatbin container (0xBA55ED50), a cubin ELF, or NUL-terminated PTX text.
 * size may be 0 when unknown (cuModuleLoadData): the extent is then taken from
 * the headers (container fat_size, ELF section table, PTX terminator).
 * Trust: a wrapper's data pointer is followed as is, and with size 0 the
 * headers are believed (the driver does the same); with a size, every read is
 * bounded by it.
 * @return 0 and *out, or a negative errno with err filled. */
GRAPE_API int grape_image_load(const void* data, size_t size, grape_fatbin_t** out,
                               grape_cubin_err_t* err);

/* grape_image_load for a device of SM version arch (e.g. 90): from each fatbin
 * container only the image grape_fatbin_select(arch) would choose is
 * decompressed, parsed and kept (every entry header is still validated), so
 * registering a large multi-arch fatbin costs one image, not all. A bare cubin
 * or PTX is kept whatever its arch. The set is empty when nothing fits.
 * arch <= 0 keeps everything, as grape_image_load does. */
GRAPE_API int grape_image_load_arch(const void* data, size_t size, int arch, grape_fatbin_t** out,
                                    grape_cubin_err_t* err);

/* Reads a host ELF file (executable or shared library) and parses every fatbin
 * container in its .nv_fatbin section (falling back to .nvFatBinSegment wrappers);
 * a file that is itself a fatbin, cubin or PTX is loaded as grape_image_load would.
 * A host ELF without containers returns 0 with an empty set. Containers are
 * parsed on up to 4 threads; the result is in file order either way. */
GRAPE_API int grape_fatbin_from_file(const char* path, grape_fatbin_t** out,
                                     grape_cubin_err_t* err);

/* Flags of grape_fatbin_from_file_ex. */
#define GRAPE_FATBIN_NO_PAYLOADS 0x1u   /* parse, then drop payloads: every image's data is
                                           NULL (size kept). Lists kernels of a large library
                                           without holding its decompressed images in memory. */

#define GRAPE_FATBIN_SCAN_DATA 0x2u     /* host ELF: also find containers embedded in data
                                           sections (as cuFFT keeps them for cuModuleLoadData);
                                           a candidate that does not parse is skipped */

/* grape_fatbin_from_file with flags (GRAPE_FATBIN_*). */
GRAPE_API int grape_fatbin_from_file_ex(const char* path, unsigned flags, grape_fatbin_t** out,
                                        grape_cubin_err_t* err);

GRAPE_API size_t grape_fatbin_count(const grape_fatbin_t* fb);
GRAPE_API const grape_image_t* grape_fatbin_image(const grape_fatbin_t* fb, size_t i);

/* The best image to load on a device of SM version arch (e.g. 90): an ELF of
 * exactly that arch, else the newest compatible ELF (same major, not newer),
 * else the newest PTX not newer than arch. NULL when none fits. */
GRAPE_API const grape_image_t* grape_fatbin_select(const grape_fatbin_t* fb, int arch);

/* Finds a kernel by mangled name in an image; NULL if absent. */
GRAPE_API const grape_kernel_t* grape_image_find_kernel(const grape_image_t* img,
                                                        const char* name);

GRAPE_API void grape_fatbin_free(grape_fatbin_t* fb);

/* Parses one cubin ELF (already decompressed) into an image's kernel list. Used by
 * the functions above; exposed for tools and tests. img->data/size must be set;
 * img->arch is filled from the ELF header when 0. For an image of the caller's
 * own (not one of a set), free the kernel list with grape_image_release. */
GRAPE_API int grape_cubin_parse(grape_image_t* img, grape_cubin_err_t* err);

/* Frees the kernel list grape_cubin_parse put in an image of the caller's own;
 * never call it on an image of a set (grape_fatbin_free does that). */
GRAPE_API void grape_image_release(grape_image_t* img);

/* Demangles an Itanium C++ name into a malloc'd string; a copy of name when it is
 * not mangled. NULL only when out of memory. */
GRAPE_API char* grape_demangle(const char* name);

GRAPE_API const char* grape_compression_name(grape_compression_t c);

/* "elf", "ptx" or "ltoir". */
GRAPE_API const char* grape_image_kind_name(grape_image_kind_t k);

/* The total number of kernels over all images of fb. */
GRAPE_API size_t grape_fatbin_kernel_count(const grape_fatbin_t* fb);

#ifdef __cplusplus
}
#endif
#endif
