/* Bad input: truncation at every offset, bit flips, lying sizes, wrong
 * magic, unknown kinds and non-ELF payloads must give a negative errno and
 * a message naming the problem, never a crash or an out-of-bounds read (the
 * suite also runs under ASan+UBSan). The inputs are the small nvcc outputs
 * committed as the fuzz seed corpus, so these tests need no nvcc. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/cubin.h"
#include "slurp.h"

#ifndef SEEDDIR
#error SEEDDIR must be defined
#endif

/* Reads a whole seed, exactly its size (a parse of it that reads past the
 * end shows under ASan). */
static uint8_t* slurp(const char* name, size_t* size) {
  return slurp_in(SEEDDIR, name, size, 0);
}

/* Parses a private heap copy of exactly n bytes so ASan sees any overread. */
static int parse_exact(const uint8_t* data, size_t n, int as_image, grape_cubin_err_t* err) {
  uint8_t* copy = malloc(n ? n : 1);
  memcpy(copy, data, n);
  grape_fatbin_t* fb = NULL;
  memset(err->msg, 0, sizeof err->msg);
  int rc = as_image ? grape_image_load(copy, n, &fb, err) : grape_fatbin_parse(copy, n, &fb, err);
  if (rc == 0) {
    cr_assert_not_null(fb);
    /* Touch everything the set hands out. */
    for (size_t i = 0; i < grape_fatbin_count(fb); i++) {
      const grape_image_t* img = grape_fatbin_image(fb, i);
      for (uint32_t k = 0; k < img->nkernels; k++) {
        cr_assert_not_null(img->kernels[k].name);
        cr_assert_not_null(img->kernels[k].demangled);
        for (uint32_t p = 0; p < img->kernels[k].nparams; p++)
          (void)img->kernels[k].params[p].size;
      }
    }
    grape_fatbin_free(fb);
  } else {
    cr_assert_lt(rc, 0);
    cr_assert_null(fb);
    cr_assert_gt(strlen(err->msg), 0, "rc %d without a message", rc);
  }
  free(copy);
  return rc;
}

static const char* seeds[] = {"sm90_zstd.fatbin", "sm90_lz4.fatbin", "sm80_plain.fatbin"};

Test(cubin, seeds_parse) {
  grape_cubin_err_t err;
  for (size_t s = 0; s < 3; s++) {
    size_t n;
    uint8_t* d = slurp(seeds[s], &n);
    cr_expect_eq(parse_exact(d, n, 0, &err), 0, "%s: %s", seeds[s], err.msg);
    free(d);
  }
}

Test(cubin, truncated_fatbin_at_every_offset) {
  grape_cubin_err_t err;
  for (size_t s = 0; s < 3; s++) {
    size_t n;
    uint8_t* d = slurp(seeds[s], &n);
    size_t step = n > 8000 ? 7 : 1;
    for (size_t cut = 0; cut < n; cut += step) {
      int rc = parse_exact(d, cut, 0, &err);
      cr_assert_lt(rc, 0, "%s cut at %zu parsed", seeds[s], cut);
    }
    free(d);
  }
}

Test(cubin, truncated_cubin_and_ptx) {
  grape_cubin_err_t err;
  size_t n;
  uint8_t* d = slurp("sm90.cubin", &n);
  /* From 1: size 0 means "unknown" to grape_image_load (headers believed). */
  for (size_t cut = 1; cut < n; cut += 5) {
    int rc = parse_exact(d, cut, 1, &err);
    cr_assert_lt(rc, 0, "cubin cut at %zu parsed", cut);
  }
  free(d);
  /* PTX cut anywhere is either still valid text or an error: never a crash. */
  d = slurp("sm90.ptx", &n);
  for (size_t cut = 1; cut < n; cut += 3)
    parse_exact(d, cut, 1, &err);
  free(d);
}

Test(cubin, bit_flips) {
  grape_cubin_err_t err;
  const char* files[] = {"sm90_zstd.fatbin", "sm90_lz4.fatbin", "sm90.cubin"};
  unsigned seed = 12345;
  for (size_t s = 0; s < 3; s++) {
    size_t n;
    uint8_t* d = slurp(files[s], &n);
    /* Every bit of the first 256 bytes (headers), then random bits anywhere. */
    for (size_t bit = 0; bit < 256 * 8 + 3000; bit++) {
      size_t b = bit < 256 * 8 ? bit : (size_t)rand_r(&seed) % (n * 8);
      d[b / 8] ^= (uint8_t)(1u << (b % 8));
      parse_exact(d, n, s == 2, &err);
      d[b / 8] ^= (uint8_t)(1u << (b % 8));
    }
    free(d);
  }
}

/* Little-endian field writers for crafting lies. */
static void put32(uint8_t* p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t* p, uint64_t v) { memcpy(p, &v, 8); }

/* Runs one lie on a copy of the zstd seed and checks the message. */
static void lie(size_t off, int width, uint64_t value, int want_rc, const char* want_msg) {
  size_t n;
  grape_cubin_err_t err;
  uint8_t* d = slurp("sm90_zstd.fatbin", &n);
  if (width == 2) {
    uint16_t v = (uint16_t)value;
    memcpy(d + off, &v, 2);
  } else if (width == 4) {
    put32(d + off, (uint32_t)value);
  } else {
    put64(d + off, value);
  }
  int rc = parse_exact(d, n, 0, &err);
  cr_expect_eq(rc, want_rc, "field at %zu = %llu: rc %d (%s)", off, (unsigned long long)value, rc,
               err.msg);
  cr_expect(strstr(err.msg, want_msg) != NULL, "message '%s' lacks '%s'", err.msg, want_msg);
  free(d);
}

/* The first entry header starts at 16 (after the 16-byte container header). */
Test(cubin, lying_sizes) {
  lie(0, 4, 0x12345678, -ENOEXEC, "wrong magic");
  lie(8, 8, 1ull << 40, -EINVAL, "fat size");
  lie(6, 2, 4, -EINVAL, "header size");
  lie(16 + 4, 4, 8, -EINVAL, "header size 8 below 64");
  lie(16 + 8, 8, 1ull << 33, -EINVAL, "payload size");
  lie(16 + 16, 4, 0xffffff, -EINVAL, "compressed size");
  lie(16 + 16, 4, 0, -EINVAL, "compressed size 0");
  lie(16 + 56, 8, 1ull << 40, -EINVAL, "512 MiB");
  lie(16 + 56, 8, 0, -EINVAL, "zero");
  lie(16 + 0, 2, 7, -ENOTSUP, "unknown kind 7");
  lie(16 + 28, 4, 0, -EINVAL, "arch 0");
}

Test(cubin, decompressed_size_lies) {
  size_t n;
  uint8_t* d = slurp("sm90_zstd.fatbin", &n);
  uint64_t real;
  memcpy(&real, d + 16 + 56, 8);
  free(d);
  lie(16 + 56, 8, real + 1, -EBADMSG, "header says");
  lie(16 + 56, 8, real - 1, -EBADMSG, "header says");
  /* LZ4 keeps no size of its own: the decompressor's count must match. */
  d = slurp("sm90_lz4.fatbin", &n);
  grape_cubin_err_t err;
  memcpy(&real, d + 16 + 56, 8);
  for (int delta = -1; delta <= 1; delta += 2) {
    put64(d + 16 + 56, real + (uint64_t)delta);
    cr_expect_eq(parse_exact(d, n, 0, &err), -EBADMSG, "lz4 size %+d: %s", delta, err.msg);
  }
  free(d);
}

Test(cubin, zero_length_and_null) {
  grape_cubin_err_t err;
  grape_fatbin_t* fb = (grape_fatbin_t*)1;
  cr_expect_eq(grape_fatbin_parse("", 0, &fb, &err), -EINVAL);
  cr_expect_null(fb);
  cr_expect(strstr(err.msg, "zero length") != NULL, "%s", err.msg);
  cr_expect_eq(grape_image_load(NULL, 0, &fb, &err), -EINVAL);
  cr_expect_eq(grape_image_load("", 0, &fb, &err), -EINVAL);
  cr_expect(strstr(err.msg, "zero length") != NULL, "%s", err.msg);
}

/* A kind-2 entry whose payload is not ELF, with the offset of the entry. */
Test(cubin, non_elf_payload) {
  size_t n;
  grape_cubin_err_t err;
  uint8_t* d = slurp("sm80_plain.fatbin", &n);   /* uncompressed cubins */
  cr_assert_eq(d[16 + 64], 0x7f);
  memcpy(d + 16 + 64, "hello world", 11);
  cr_expect_eq(parse_exact(d, n, 0, &err), -ENOEXEC, "%s", err.msg);
  cr_expect(strstr(err.msg, "fatbin entry at 0x10") != NULL, "%s", err.msg);
  cr_expect(strstr(err.msg, "not an ELF") != NULL, "%s", err.msg);
  free(d);
  /* Binary garbage handed to cuModuleLoadData is neither ELF nor PTX. */
  uint8_t junk[64];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (uint8_t)(i * 37 + 1);
  cr_expect_lt(parse_exact(junk, sizeof junk, 1, &err), 0);
  cr_expect(strstr(err.msg, "not PTX") != NULL, "%s", err.msg);
}

/* Codes grape does not know are skipped: rename one and the result is unchanged. */
Test(cubin, unknown_attribute_codes_skipped) {
  size_t n;
  grape_cubin_err_t err;
  uint8_t* d = slurp("sm90.cubin", &n);
  size_t changed = 0;
  /* EIATTR_SPARSE_MMA_MASK (fmt 3, code 0x50) records become code 0x7e. */
  for (size_t i = 0; i + 4 <= n; i++)
    if (d[i] == 0x03 && d[i + 1] == 0x50 && d[i + 2] == 0 && d[i + 3] == 0) {
      d[i + 1] = 0x7e;
      changed++;
    }
  cr_assert_gt(changed, 0);
  grape_fatbin_t* fb;
  cr_assert_eq(grape_image_load(d, n, &fb, &err), 0, "%s", err.msg);
  const grape_kernel_t* k =
      grape_image_find_kernel(grape_fatbin_image(fb, 0), "_Z9k_scalarsidcscxPi");
  cr_assert_not_null(k);
  cr_expect_eq(k->nparams, 7);
  grape_fatbin_free(fb);
  free(d);
}

Test(cubin, demangle) {
  char* s = grape_demangle("_Z6k_tmplIdLi4EEvPT_S0_s");
  cr_expect_str_eq(s, "void k_tmpl<double, 4>(double*, double, short)");
  free(s);
  s = grape_demangle("k_plain");
  cr_expect_str_eq(s, "k_plain");
  free(s);
  s = grape_demangle("_Zbogus");   /* not valid: returned as is */
  cr_expect_str_eq(s, "_Zbogus");
  free(s);
}

/* Containers embedded in data sections are found only when asked, and a
 * decoy magic with garbage after it is skipped, not an error. */
Test(cubin, scan_data_sections) {
  grape_fatbin_t* fb;
  grape_cubin_err_t err;
  cr_assert_eq(grape_fatbin_from_file(EMBEDDED_LIB, &fb, &err), 0, "%s", err.msg);
  cr_expect_eq(grape_fatbin_count(fb), 0);
  grape_fatbin_free(fb);
  cr_assert_eq(grape_fatbin_from_file_ex(EMBEDDED_LIB, GRAPE_FATBIN_SCAN_DATA, &fb, &err), 0,
               "%s", err.msg);
  cr_assert_eq(grape_fatbin_count(fb), 5, "%zu images", grape_fatbin_count(fb));
  size_t lz4 = 0, zstd = 0;
  for (size_t i = 0; i < 5; i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    lz4 += img->compression == GRAPE_COMPRESS_LZ4;
    zstd += img->compression == GRAPE_COMPRESS_ZSTD;
    cr_expect_eq(img->nkernels, 9);
    cr_expect_not_null(grape_image_find_kernel(img, "_Z5k_big5big_sPi"));
    /* Payloads stay valid after the file's sections are unmapped (ASan checks). */
    cr_assert_not_null(img->data);
    cr_expect(img->kind == GRAPE_IMAGE_ELF ? img->data[0] == 0x7f : img->data[img->size - 1] != 1);
  }
  cr_expect(lz4 == 2 && zstd == 2, "lz4 %zu zstd %zu", lz4, zstd);   /* and one raw sm_80 */
  grape_fatbin_free(fb);
}

/* grape_cubin_parse on an image of the caller's own, released by the caller
 * (ASan's leak check fails the test if the kernel list is not freed). */
Test(cubin, parse_own_image) {
  size_t n;
  grape_cubin_err_t err;
  uint8_t* d = slurp("sm90.cubin", &n);
  grape_image_t img = {0};
  img.kind = GRAPE_IMAGE_ELF;
  img.data = d;
  img.size = n;
  cr_assert_eq(grape_cubin_parse(&img, &err), 0, "%s", err.msg);
  cr_expect_eq(img.arch, 90);
  cr_expect_eq(img.nkernels, 9);
  grape_image_release(&img);
  cr_expect_eq(img.nkernels, 0);
  cr_expect_null(img.kernels);
  free(d);
}

/* PTX from older toolchains (cuRAND's) marks pointers ".ptr .align 1": that
 * is the pointee's alignment; the parameter is still 8-aligned. */
Test(cubin, ptx_ptr_align_is_pointee_alignment) {
  static const char ptx[] =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(\n"
      ".param .u64 k_param_0,\n"
      ".param .u32 k_param_1,\n"
      ".param .u64 .ptr .align 1 k_param_2,\n"
      ".param .align 4 .b8 k_param_3[60],\n"
      ".param .u64 .ptr .global .align 16 k_param_4\n"
      ")\n{\nret;\n}\n";
  static const grape_kparam_t want[] = {{0, 8}, {8, 4}, {16, 8}, {24, 60}, {88, 8}};
  grape_fatbin_t* fb;
  grape_cubin_err_t err;
  cr_assert_eq(grape_image_load(ptx, 0, &fb, &err), 0, "%s", err.msg);
  const grape_kernel_t* k = grape_image_find_kernel(grape_fatbin_image(fb, 0), "k");
  cr_assert_not_null(k);
  cr_assert_eq(k->nparams, 5);
  for (uint32_t i = 0; i < 5; i++)
    cr_expect(k->params[i].offset == want[i].offset && k->params[i].size == want[i].size,
              "param %u: %u:%u, want %u:%u", i, k->params[i].offset, k->params[i].size,
              want[i].offset, want[i].size);
  cr_expect_eq(grape_fatbin_image(fb, 0)->arch, 90);
  grape_fatbin_free(fb);
}

/* Module-scope variables of PTX (__device__ is .global, __constant__ .const):
 * size from type, vector lanes and dimensions, initial bytes from the
 * initialiser (integers, PTX's float bits, nested braces, [] sized by it);
 * a pointer parameter's ".global", an .extern declaration and an initialiser
 * of addresses (which the sim cannot give) are none. */
Test(cubin, ptx_variables) {
  static const char ptx[] =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".extern .global .align 4 .u32 elsewhere;\n"
      ".visible .global .align 4 .b8 counter[16];\n"
      ".global .align 4 .u32 inited[2] = {7, -1};\n"
      ".visible .const .align 4 .f32 cf[3] = {0f3F800000, 0f40000000, 0f40400000};\n"
      ".global .align 8 .v2 .u32 pairs[2][3];\n"
      ".global .align 2 .u16 open[] = {{1, 2}, {3}};\n"
      ".global .align 8 .u64 where = generic(counter);\n"
      ".visible .entry k(\n"
      ".param .u64 .ptr .global .align 16 k_param_0\n"
      ")\n{\n ld.global.u32 %r1, [counter];\n ret;\n}\n";
  grape_fatbin_t* fb;
  grape_cubin_err_t err;
  cr_assert_eq(grape_image_load(ptx, 0, &fb, &err), 0, "%s", err.msg);
  const grape_image_t* img = grape_fatbin_image(fb, 0);
  static const struct { const char* name; uint64_t size; } want[] = {
      {"counter", 16}, {"inited", 8}, {"pairs", 48}, {"open", 6}, {"cf", 12}};
  cr_assert_eq(img->nglobals, 5);
  for (uint32_t i = 0; i < 5; i++)
    cr_expect(strcmp(img->globals[i].name, want[i].name) == 0 && img->globals[i].size == want[i].size,
              "variable %u: %s of %llu bytes, want %s of %llu", i, img->globals[i].name,
              (unsigned long long)img->globals[i].size, want[i].name,
              (unsigned long long)want[i].size);
  cr_expect_null(img->globals[0].init);
  int32_t iv[2];
  memcpy(iv, img->globals[1].init, 8);
  cr_expect(iv[0] == 7 && iv[1] == -1, "inited = {%d, %d}", iv[0], iv[1]);
  uint16_t ov[3];
  memcpy(ov, img->globals[3].init, 6);
  cr_expect(ov[0] == 1 && ov[1] == 2 && ov[2] == 3, "open = {%u, %u, %u}", ov[0], ov[1], ov[2]);
  float fv[3];
  memcpy(fv, img->globals[4].init, 12);
  cr_expect(fv[0] == 1.0f && fv[1] == 2.0f && fv[2] == 3.0f, "cf = {%g, %g, %g}", fv[0], fv[1], fv[2]);
  grape_fatbin_free(fb);
}
