/* Fatbin containers: walking their entries, decompressing LZ4 and zstd
 * payloads, detecting the form of an image handed to the driver, and
 * choosing the image a device would load. The set they fill and the error
 * messages are set.c's; cubin ELF and PTX images are parsed by cubin.c and
 * ptx.c.
 *
 * DESIGN: a parse first copies the caller's bytes into one buffer the set
 * owns, then walks that copy; uncompressed entries point into it and
 * compressed ones into their own decompressed buffers, all freed with the set.
 * Every header field that is a size or an offset is checked against the bytes
 * that remain before it is used, and a decompressed size must match what the
 * decompressor produced exactly, so a lying header is reported, never trusted.
 * The container layout (verified on nvcc 13 output, see docs/cubin.md):
 *   container: u32 magic 0xBA55ED50, u16 version 1, u16 header_size, u64 fat_size
 *   entry:     u16 kind, u16 version, u32 header_size, u64 payload_size,
 *              u32 compressed_size @16, u32 arch @28, u64 flags @40,
 *              u64 decompressed_size @56 (header_size 64, 80, 96 or 112).
 */
#include "fatbin.h"

#include <errno.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "bytes.h"
#include "cubin.h"
#include "ptx.h"
#include "set.h"
#include "util/grow.h"

#define ENTRY_MIN_HEADER 64u

/* Fatbin entry flags. */
#define GRAPE__FLAG_LZ4_OLD 0x1000u       /* an older scheme, not produced by nvcc 13 */
#define GRAPE__FLAG_LZ4 0x2000u           /* LZ4 block (-compress-mode=speed) */
#define GRAPE__FLAG_ZSTD 0x8000u          /* zstd frame (default, size) */
#define GRAPE__FLAG_ARCH_SPECIFIC 0x100000u   /* sm_90a */
#define GRAPE__FLAG_FAMILY 0x200000u          /* sm_100f */

/* The largest decompressed entry accepted: a lying header must not make us
 * allocate without bound (the largest cubin in libcublasLt is a few MB). */
#define GRAPE__MAX_ENTRY_BYTES ((uint64_t)512 << 20)

/* ---- Entries ---- */

/* Decompresses one entry payload into a buffer owned by fb. */
static int decompress(grape_fatbin_t* fb, ZSTD_DCtx** dctx, grape_image_t* img,
                      const uint8_t* src, uint64_t csize, uint64_t dsize,
                      grape_cubin_err_t* err) {
  if (dsize == 0 || dsize > GRAPE__MAX_ENTRY_BYTES) {
    grape__cubin_errf(err, "decompressed size %llu is %s", (unsigned long long)dsize,
                      dsize == 0 ? "zero" : "over the 512 MiB limit");
    return -EINVAL;
  }
  if (img->compression == GRAPE_COMPRESS_ZSTD) {
    unsigned long long fcs = ZSTD_getFrameContentSize(src, csize);
    if (fcs == ZSTD_CONTENTSIZE_ERROR) {
      grape__cubin_errf(err, "payload flagged zstd is not a zstd frame");
      return -EBADMSG;
    }
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != dsize) {
      grape__cubin_errf(err, "zstd frame holds %llu bytes, header says %llu", fcs,
                        (unsigned long long)dsize);
      return -EBADMSG;
    }
  } else if (dsize > csize * 255 + 16) {
    /* LZ4 cannot expand more than 255:1, so a larger claim is a lie. */
    grape__cubin_errf(err, "decompressed size %llu impossible for %llu LZ4 bytes",
                      (unsigned long long)dsize, (unsigned long long)csize);
    return -EBADMSG;
  }
  /* One spare NUL byte keeps PTX text terminated. Without payloads, one
   * scratch buffer serves every entry: no fresh pages to fault in each time. */
  int scratch = (fb->flags & GRAPE_FATBIN_NO_PAYLOADS) != 0;
  uint8_t* dst;
  if (scratch) {
    if (fb->scratch_cap < dsize + 1) {
      free(fb->scratch);
      fb->scratch_cap = 0;
      fb->scratch = malloc(dsize + 1 + dsize / 2);
      if (fb->scratch)
        fb->scratch_cap = dsize + 1 + dsize / 2;
    }
    dst = fb->scratch;
  } else {
    dst = malloc(dsize + 1);
  }
  if (dst == NULL) {
    grape__cubin_errf(err, "out of memory for %llu decompressed bytes", (unsigned long long)dsize);
    return -ENOMEM;
  }
  dst[dsize] = 0;
  if (img->compression == GRAPE_COMPRESS_ZSTD) {
    if (*dctx == NULL && (*dctx = ZSTD_createDCtx()) == NULL) {
      if (!scratch)
        free(dst);
      grape__cubin_errf(err, "out of memory for a zstd context");
      return -ENOMEM;
    }
    size_t r = ZSTD_decompressDCtx(*dctx, dst, dsize, src, csize);
    if (ZSTD_isError(r) || r != dsize) {
      if (ZSTD_isError(r))
        grape__cubin_errf(err, "zstd: %s", ZSTD_getErrorName(r));
      else
        grape__cubin_errf(err, "zstd payload gives %zu bytes, header says %llu", r,
                          (unsigned long long)dsize);
      if (!scratch)
        free(dst);
      return -EBADMSG;
    }
  } else {
    int r = LZ4_decompress_safe((const char*)src, (char*)dst, (int)csize, (int)dsize);
    if (r < 0 || (uint64_t)r != dsize) {
      if (r < 0)
        grape__cubin_errf(err, "LZ4 payload is corrupt");
      else
        grape__cubin_errf(err, "LZ4 payload gives %d bytes, header says %llu", r,
                          (unsigned long long)dsize);
      if (!scratch)
        free(dst);
      return -EBADMSG;
    }
  }
  if (!scratch) {
    int rc = grape__fatbin_own(fb, dst);
    if (rc) {
      grape__cubin_errf(err, "out of memory");
      return rc;
    }
  }
  img->data = dst;
  img->size = dsize;
  return 0;
}

/* One validated entry header: the image fields known before decompression,
 * and where its payload is. */
typedef struct entry_s {
  grape_image_t img;        /* kind, arch, variant, flags, offset, compression */
  const uint8_t* payload;
  uint64_t psize;           /* stored bytes */
  uint32_t csize;           /* compressed bytes (compressed entries) */
  uint64_t dsize;           /* decompressed bytes (compressed entries) */
} entry_t;

/* Validates the entry header at data[off, end) (end is the container end). */
static int entry_header(const uint8_t* data, size_t off, size_t end, size_t base_off, entry_t* e,
                        grape_cubin_err_t* err) {
  size_t at = base_off + off;
  memset(e, 0, sizeof(*e));
  if (end - off < 16) {
    grape__cubin_errf(err, "fatbin entry at 0x%zx: header truncated (%zu bytes left)", at,
                      end - off);
    return -EINVAL;
  }
  const uint8_t* h = data + off;
  uint16_t kind = rd16(h);
  uint32_t hsize = rd32(h + 4);
  uint64_t psize = rd64(h + 8);
  if (hsize < ENTRY_MIN_HEADER || hsize > end - off) {
    grape__cubin_errf(err, "fatbin entry at 0x%zx: header size %u %s", at, hsize,
                      hsize < ENTRY_MIN_HEADER ? "below 64" : "runs past the container end");
    return -EINVAL;
  }
  if (psize > end - off - hsize) {
    grape__cubin_errf(err,
                      "fatbin entry at 0x%zx: payload size %llu runs past the container end "
                      "(%zu bytes left)",
                      at, (unsigned long long)psize, end - off - hsize);
    return -EINVAL;
  }
  if (kind != GRAPE_IMAGE_ELF && kind != GRAPE_IMAGE_PTX && kind != GRAPE_IMAGE_LTOIR) {
    grape__cubin_errf(err, "fatbin entry at 0x%zx: unknown kind %u (1 PTX, 2 ELF, 8 LTO IR)", at,
                      kind);
    return -ENOTSUP;
  }
  uint32_t arch = rd32(h + 28);
  uint64_t flags = rd64(h + 40);
  if (arch == 0 || arch > 10000) {
    grape__cubin_errf(err, "fatbin entry at 0x%zx: implausible arch %u", at, arch);
    return -EINVAL;
  }
  int ncomp = !!(flags & GRAPE__FLAG_LZ4) + !!(flags & GRAPE__FLAG_ZSTD) +
              !!(flags & GRAPE__FLAG_LZ4_OLD);
  if (ncomp > 1) {
    grape__cubin_errf(err, "fatbin entry at 0x%zx: flags 0x%llx name several compressions", at,
                      (unsigned long long)flags);
    return -EINVAL;
  }
  if (flags & GRAPE__FLAG_LZ4_OLD) {
    grape__cubin_errf(err, "fatbin entry at 0x%zx: old compression scheme (flag 0x1000) "
                      "is not supported", at);
    return -ENOTSUP;
  }
  e->img.kind = (grape_image_kind_t)kind;
  e->img.arch = (int)arch;
  e->img.flags = flags;
  e->img.offset = at;
  e->img.variant = (flags & GRAPE__FLAG_ARCH_SPECIFIC) ? 'a' : (flags & GRAPE__FLAG_FAMILY) ? 'f' : 0;
  e->img.compression = (flags & GRAPE__FLAG_LZ4)    ? GRAPE_COMPRESS_LZ4
                       : (flags & GRAPE__FLAG_ZSTD) ? GRAPE_COMPRESS_ZSTD
                                                    : GRAPE_COMPRESS_NONE;
  e->img.size = psize;
  e->payload = h + hsize;
  e->psize = psize;
  e->csize = rd32(h + 16);
  e->dsize = rd64(h + 56);
  if (e->img.compression != GRAPE_COMPRESS_NONE && (e->csize == 0 || e->csize > psize)) {
    grape__cubin_errf(err, "fatbin entry at 0x%zx: compressed size %u %s payload size %llu", at,
                      e->csize, e->csize ? "exceeds" : "is zero with", (unsigned long long)psize);
    return -EINVAL;
  }
  return 0;
}

/* Adds the entry's image to fb: decompresses it and parses its kernels. */
static int entry_load(grape_fatbin_t* fb, ZSTD_DCtx** dctx, const entry_t* e,
                      grape_cubin_err_t* err) {
  grape_image_t* img = grape__fatbin_push(fb);
  int rc;
  if (img == NULL) {
    grape__cubin_errf(err, "out of memory");
    return -ENOMEM;
  }
  *img = e->img;
  /* LTO IR is kept as stored: cuFFT's (flag 0x10000) carry the LZ4 flag but
   * their payload is no raw LZ4 block, likely obfuscated; nothing here reads it. */
  if (img->compression != GRAPE_COMPRESS_NONE && img->kind != GRAPE_IMAGE_LTOIR) {
    rc = decompress(fb, dctx, img, e->payload, e->csize, e->dsize, err);
  } else {
    img->data = e->payload;
    img->size = e->psize;
    rc = 0;
  }
  /* LTO IR is NVVM bitcode: listed, not parsed. */
  if (rc == 0 && img->kind == GRAPE_IMAGE_ELF)
    rc = grape_cubin_parse(img, err);
  else if (rc == 0 && img->kind == GRAPE_IMAGE_PTX)
    rc = grape__ptx_parse(img, err);
  if (rc) {
    grape__cubin_err_prefix(err, "fatbin entry at 0x%zx (sm_%d %s)", img->offset, img->arch,
                            grape_image_kind_name(img->kind));
    return rc;
  }
  if (fb->flags & GRAPE_FATBIN_NO_PAYLOADS)
    img->data = NULL;
  return 0;
}

static const grape_image_t* select_in(const grape_image_t* imgs, size_t n, size_t stride,
                                      int arch);

/* Walks the entries of one container, data[off, end): all of them, or with
 * fb->select_arch set only the one a device of that arch would load (every
 * header is still validated). */
static int parse_container(grape_fatbin_t* fb, ZSTD_DCtx** dctx, const uint8_t* data, size_t off,
                           size_t end, size_t base_off, grape_cubin_err_t* err) {
  entry_t one, *all = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  while (off < end) {
    entry_t* e = &one;
    if (fb->select_arch) {
      if (n == cap) {
        entry_t* a = grape__grow(all, &cap, n + 1, sizeof(*a), 8);
        if (a == NULL) {
          grape__cubin_errf(err, "out of memory");
          rc = -ENOMEM;
          break;
        }
        all = a;
      }
      e = &all[n];
    }
    rc = entry_header(data, off, end, base_off, e, err);
    if (rc)
      break;
    off = (size_t)(e->payload - data) + e->psize;
    if (fb->select_arch)
      n++;
    else if ((rc = entry_load(fb, dctx, e, err)) != 0)
      break;
  }
  if (rc == 0 && fb->select_arch && n) {
    const grape_image_t* best = select_in(&all[0].img, n, sizeof(entry_t), fb->select_arch);
    if (best)
      rc = entry_load(fb, dctx, (const entry_t*)(const void*)best, err);
  }
  free(all);
  return rc;
}

int grape__fatbin_split(const uint8_t* data, size_t size, size_t base_off, grape__span_t** spans,
                        size_t* n, grape_cubin_err_t* err) {
  size_t off = 0, cap = 0;
  int rc = 0;
  *spans = NULL;
  *n = 0;
  while (off < size) {
    /* Containers in a host ELF section follow each other, padded with zeros. */
    if (*n > 0 && data[off] == 0) {
      off++;
      continue;
    }
    size_t at = base_off + off;
    if (size - off < 16) {
      grape__cubin_errf(err, "fatbin container at 0x%zx: header truncated (%zu bytes left)", at,
                        size - off);
      rc = -EINVAL;
      break;
    }
    const uint8_t* h = data + off;
    uint32_t magic = rd32(h);
    uint16_t hsize = rd16(h + 6);
    uint64_t fat = rd64(h + 8);
    if (magic != GRAPE__FATBIN_MAGIC) {
      grape__cubin_errf(err, "fatbin container at 0x%zx: wrong magic 0x%08x (want 0x%08x)", at,
                        magic, GRAPE__FATBIN_MAGIC);
      rc = -ENOEXEC;
      break;
    }
    if (hsize < 16 || hsize > size - off) {
      grape__cubin_errf(err, "fatbin container at 0x%zx: header size %u is %s", at, hsize,
                        hsize < 16 ? "below 16" : "past the end");
      rc = -EINVAL;
      break;
    }
    if (fat > size - off - hsize) {
      grape__cubin_errf(err,
                        "fatbin container at 0x%zx: fat size %llu runs past the end "
                        "(%zu bytes left)",
                        at, (unsigned long long)fat, size - off - hsize);
      rc = -EINVAL;
      break;
    }
    if (*n == cap) {
      grape__span_t* sp = grape__grow(*spans, &cap, *n + 1, sizeof(*sp), 16);
      if (sp == NULL) {
        grape__cubin_errf(err, "out of memory");
        rc = -ENOMEM;
        break;
      }
      *spans = sp;
    }
    (*spans)[*n].off = off;
    (*spans)[*n].len = hsize + (size_t)fat;
    (*spans)[*n].hsize = hsize;
    (*n)++;
    off += hsize + (size_t)fat;
  }
  if (rc == 0 && *n == 0) {
    grape__cubin_errf(err, "fatbin: empty input");
    rc = -EINVAL;
  }
  if (rc) {
    free(*spans);
    *spans = NULL;
    *n = 0;
  }
  return rc;
}

int grape__fatbin_parse_into(grape_fatbin_t* fb, const uint8_t* data, size_t size,
                             size_t base_off, grape_cubin_err_t* err) {
  grape__span_t* spans;
  size_t n;
  int rc = grape__fatbin_split(data, size, base_off, &spans, &n, err);
  ZSTD_DCtx* dctx = fb->dctx;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = parse_container(fb, &dctx, data, spans[i].off + spans[i].hsize,
                         spans[i].off + spans[i].len, base_off, err);
  fb->dctx = dctx;   /* kept for the next call; grape__fatbin_release frees it */
  free(spans);
  return rc;
}

/* ---- Public entry points ---- */

/* Makes fb own a copy of data[0, size). */
static int own_copy(grape_fatbin_t* fb, const void* data, size_t size, uint8_t** out,
                    grape_cubin_err_t* err) {
  uint8_t* copy = malloc(size + 1);
  if (copy == NULL || grape__fatbin_own(fb, copy)) {   /* own() frees copy on failure */
    grape__cubin_errf(err, "out of memory copying %zu bytes", size);
    return -ENOMEM;
  }
  memcpy(copy, data, size);
  copy[size] = 0;
  *out = copy;
  return 0;
}

int grape_fatbin_parse(const void* data, size_t size, grape_fatbin_t** out,
                       grape_cubin_err_t* err) {
  uint8_t* copy;
  int rc;
  if (out == NULL || (data == NULL && size)) {
    grape__cubin_errf(err, "fatbin: invalid argument");
    return -EINVAL;
  }
  *out = NULL;
  if (size == 0) {
    grape__cubin_errf(err, "fatbin: zero length");
    return -EINVAL;
  }
  grape_fatbin_t* fb = grape__fatbin_new(err);
  if (fb == NULL)
    return -ENOMEM;
  rc = own_copy(fb, data, size, &copy, err);
  if (rc == 0)
    rc = grape__fatbin_parse_into(fb, copy, size, 0, err);
  return grape__fatbin_finish(fb, rc, out);
}

/* Arch of a bare cubin from e_flags (bits 8-15 hold the SM number). */
static int elf_arch(const uint8_t* data) {
  return (int)((rd32(data + 48) >> 8) & 0xff);
}

static int load_bare(grape_fatbin_t* fb, const uint8_t* data, size_t size, grape_image_kind_t kind,
                     grape_cubin_err_t* err) {
  uint8_t* copy;
  int rc = own_copy(fb, data, size, &copy, err);
  if (rc)
    return rc;
  grape_image_t* img = grape__fatbin_push(fb);
  if (img == NULL) {
    grape__cubin_errf(err, "out of memory");
    return -ENOMEM;
  }
  img->kind = kind;
  img->compression = GRAPE_COMPRESS_NONE;
  img->data = copy;
  img->size = size;
  if (kind == GRAPE_IMAGE_ELF) {
    img->arch = elf_arch(copy);
    return grape_cubin_parse(img, err);
  }
  return grape__ptx_parse(img, err);
}

/* Whether p starts with the 4 little-endian bytes of m (see grape_image_load). */
static int has_magic(const uint8_t* p, size_t size, uint32_t m) {
  if (size != 0 && size < 4)
    return 0;
  for (int i = 0; i < 4; i++)
    if (p[i] != (uint8_t)(m >> (8 * i)))
      return 0;
  return 1;
}

int grape_image_load(const void* data, size_t size, grape_fatbin_t** out, grape_cubin_err_t* err) {
  return grape_image_load_arch(data, size, 0, out, err);
}

int grape_image_load_arch(const void* data, size_t size, int arch, grape_fatbin_t** out,
                          grape_cubin_err_t* err) {
  const uint8_t* p = data;
  int rc;
  if (out == NULL || data == NULL) {
    grape__cubin_errf(err, "image: invalid argument (NULL)");
    return -EINVAL;
  }
  *out = NULL;
  /* Compared a byte at a time: with size 0 (unknown) the first mismatch stops
   * the reads, and no magic has a NUL byte, so a short string is never overrun. */
  uint32_t magic = 0;
  if (has_magic(p, size, GRAPE__WRAPPER_MAGIC))
    magic = GRAPE__WRAPPER_MAGIC;
  else if (has_magic(p, size, GRAPE__FATBIN_MAGIC))
    magic = GRAPE__FATBIN_MAGIC;
  grape_fatbin_t* fb = grape__fatbin_new(err);
  if (fb == NULL)
    return -ENOMEM;
  fb->select_arch = arch > 0 ? arch : 0;

  if (magic == GRAPE__WRAPPER_MAGIC) {
    /* __fatBinC_Wrapper_t {int magic; int version; const u64* data; void* filename_or_fatbins} */
    if (size != 0 && size < 24) {
      grape__cubin_errf(err, "fatbin wrapper: truncated (%zu of 24 bytes)", size);
      rc = -EINVAL;
      goto done;
    }
    const uint8_t* inner = (const uint8_t*)(uintptr_t)rd64(p + 8);
    if (inner == NULL) {
      grape__cubin_errf(err, "fatbin wrapper: NULL data pointer");
      rc = -EINVAL;
      goto done;
    }
    p = inner;
    size = 0;
    if (!has_magic(p, 0, GRAPE__FATBIN_MAGIC)) {
      grape__cubin_errf(err, "fatbin wrapper: data does not start with the container magic "
                        "0x%08x", GRAPE__FATBIN_MAGIC);
      rc = -ENOEXEC;
      goto done;
    }
    magic = GRAPE__FATBIN_MAGIC;
  }

  if (magic == GRAPE__FATBIN_MAGIC) {
    if (size == 0) {
      /* Extent from the header: one container, as the driver reads it. */
      uint64_t ext = (uint64_t)rd16(p + 6) + rd64(p + 8);
      if (rd16(p + 6) < 16 || ext > ((uint64_t)4 << 30)) {
        grape__cubin_errf(err, "fatbin container: implausible header (header size %u, fat size %llu)",
                          rd16(p + 6), (unsigned long long)rd64(p + 8));
        rc = -EINVAL;
        goto done;
      }
      size = (size_t)ext;
    }
    if (size < 16) {
      grape__cubin_errf(err, "fatbin container: truncated (%zu of 16 header bytes)", size);
      rc = -EINVAL;
      goto done;
    }
    uint8_t* copy;
    rc = own_copy(fb, p, size, &copy, err);
    if (rc == 0)
      rc = grape__fatbin_parse_into(fb, copy, size, 0, err);
  } else if (has_magic(p, size, 0x464c457fu)) {   /* "\x7fELF" */
    if (size == 0) {
      size = grape__elf_extent(p);
      if (size == 0) {
        grape__cubin_errf(err, "cubin: not a 64-bit little-endian ELF header");
        rc = -ENOEXEC;
        goto done;
      }
    }
    if (size < 64) {
      grape__cubin_errf(err, "cubin: truncated ELF header (%zu of 64 bytes)", size);
      rc = -EINVAL;
      goto done;
    }
    rc = load_bare(fb, p, size, GRAPE_IMAGE_ELF, err);
  } else {
    /* PTX is text: it ends at its NUL (or at size). */
    size_t n = size ? strnlen((const char*)p, size) : strlen((const char*)p);
    if (n == 0) {
      grape__cubin_errf(err, "image: zero length (empty, or a NUL first byte)");
      rc = -EINVAL;
      goto done;
    }
    rc = load_bare(fb, p, n, GRAPE_IMAGE_PTX, err);
    if (rc == -ENOEXEC)
      grape__cubin_err_prefix(err, "not a fatbin, cubin or PTX image (no magic number)");
  }
done:
  return grape__fatbin_finish(fb, rc, out);
}

/* ---- Choosing an image ---- */

/* Whether a SASS image built for img->arch runs on a device of arch dev. */
static int sass_runs_on(const grape_image_t* img, int dev) {
  if (img->arch == dev)
    return 1;
  if (img->variant == 'a')
    return 0;   /* arch-specific: that SM only */
  return img->arch / 10 == dev / 10 && img->arch < dev;
}

/* The best of n images laid out stride bytes apart (see grape_fatbin_select). */
static const grape_image_t* select_in(const grape_image_t* imgs, size_t n, size_t stride,
                                      int arch) {
  const grape_image_t *exact = NULL, *compat = NULL, *ptx = NULL;
  for (size_t i = 0; i < n; i++) {
    const grape_image_t* img =
        (const grape_image_t*)(const void*)((const char*)imgs + i * stride);
    if (img->kind == GRAPE_IMAGE_ELF) {
      if (img->arch == arch) {
        /* Prefer the generic build over sm_XXa when both exist: same SASS family. */
        if (exact == NULL || (exact->variant && !img->variant))
          exact = img;
      } else if (sass_runs_on(img, arch) && (compat == NULL || img->arch > compat->arch)) {
        compat = img;
      }
    } else if (img->kind == GRAPE_IMAGE_PTX && img->arch <= arch &&
               (img->variant == 0 || img->arch == arch ||
                (img->variant == 'f' && img->arch / 10 == arch / 10)) &&
               (ptx == NULL || img->arch > ptx->arch)) {
      ptx = img;
    }
  }
  return exact ? exact : compat ? compat : ptx;
}

const grape_image_t* grape_fatbin_select(const grape_fatbin_t* fb, int arch) {
  if (fb == NULL || fb->nimages == 0)
    return NULL;
  return select_in(fb->images, fb->nimages, sizeof(grape_image_t), arch);
}
