/* Parameter layouts, attributes and image selection on kernels that nvcc
 * compiles at build time (kernels.cu) for sm_80 and sm_90, in every
 * compression mode. Each parameter's offset and size is compared with the
 * host C layout: a struct mirroring the kernel's parameter list. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grape/cubin.h"
#include "layout.h"
#include "slurp.h"

#ifndef KDIR
#error KDIR (the folder of the nvcc outputs) must be defined
#endif

/* ---- Host mirrors of the parameter lists ---- */
struct p_ptrs { float* a; const int* b; double* c; };
struct p_scalars { int a; double b; char c; short d; char e; long long f; int* out; };
struct p_vec { vec4_t v; char c; vec4_t w; float* out; };
struct p_struct { struct pad_s p; char c; struct pad_s q; int* out; };
struct p_tmpl_d { double* out; double v; short s; };
struct p_tmpl_c { char* out; char v; short s; };
struct p_big { struct big_s b; int* out; };
struct p_smem { float* a; };

typedef struct field_s {
  size_t offset;
  size_t size;
} field_t;
#define F(st, m) {offsetof(struct st, m), sizeof(((struct st*)0)->m)}

typedef struct expect_s {
  const char* name;        /* mangled */
  const char* demangled;
  size_t nparams;
  field_t params[8];
} expect_t;

static const expect_t expected[] = {
  {"k_ptrs", "k_ptrs", 3, {F(p_ptrs, a), F(p_ptrs, b), F(p_ptrs, c)}},
  {"_Z9k_scalarsidcscxPi", "k_scalars(int, double, char, short, char, long long, int*)", 7,
   {F(p_scalars, a), F(p_scalars, b), F(p_scalars, c), F(p_scalars, d), F(p_scalars, e),
    F(p_scalars, f), F(p_scalars, out)}},
  {"_Z5k_vec6float4cS_Pf", "k_vec(float4, char, float4, float*)", 4,
   {F(p_vec, v), F(p_vec, c), F(p_vec, w), F(p_vec, out)}},
  {"_Z8k_struct5pad_scS_Pi", "k_struct(pad_s, char, pad_s, int*)", 4,
   {F(p_struct, p), F(p_struct, c), F(p_struct, q), F(p_struct, out)}},
  {"_Z6k_tmplIdLi4EEvPT_S0_s", "void k_tmpl<double, 4>(double*, double, short)", 3,
   {F(p_tmpl_d, out), F(p_tmpl_d, v), F(p_tmpl_d, s)}},
  {"_Z6k_tmplIcLi1EEvPT_S0_s", "void k_tmpl<char, 1>(char*, char, short)", 3,
   {F(p_tmpl_c, out), F(p_tmpl_c, v), F(p_tmpl_c, s)}},
  {"_Z5k_big5big_sPi", "k_big(big_s, int*)", 2, {F(p_big, b), F(p_big, out)}},
  {"_Z6k_smemPf", "k_smem(float*)", 1, {F(p_smem, a)}},
  {"k_noparams", "k_noparams", 0, {{0, 0}}},
};
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

static grape_fatbin_t* load_file(const char* name) {
  char path[512];
  grape_fatbin_t* fb = NULL;
  grape_cubin_err_t err = {{0}};
  snprintf(path, sizeof path, "%s/%s", KDIR, name);
  int rc = grape_fatbin_from_file(path, &fb, &err);
  cr_assert_eq(rc, 0, "%s: rc %d: %s", name, rc, err.msg);
  return fb;
}

/* Checks every expected kernel in img against the host layout. */
static void check_image(const grape_image_t* img, const char* what) {
  cr_assert_eq(img->nkernels, NEXPECTED, "%s: %u kernels", what, img->nkernels);
  for (size_t i = 0; i < NEXPECTED; i++) {
    const expect_t* e = &expected[i];
    const grape_kernel_t* k = grape_image_find_kernel(img, e->name);
    cr_assert_not_null(k, "%s: kernel %s missing", what, e->name);
    cr_expect_str_eq(k->demangled, e->demangled, "%s", what);
    cr_assert_eq(k->nparams, e->nparams, "%s %s: %u params", what, e->name, k->nparams);
    size_t end = 0;
    for (size_t p = 0; p < e->nparams; p++) {
      cr_expect_eq(k->params[p].offset, e->params[p].offset, "%s %s param %zu: offset %u, host %zu",
                   what, e->name, p, k->params[p].offset, e->params[p].offset);
      cr_expect_eq(k->params[p].size, e->params[p].size, "%s %s param %zu: size %u, host %zu",
                   what, e->name, p, k->params[p].size, e->params[p].size);
      end = e->params[p].offset + e->params[p].size;
    }
    cr_expect_eq(k->param_bytes, end, "%s %s: param_bytes %u, host %zu", what, e->name,
                 k->param_bytes, end);
  }
}

/* The image of a kind and arch in a set that has kernels: a host ELF also
 * carries a container of the CUDA runtime's own, with none. */
static const grape_image_t* find_image(const grape_fatbin_t* fb, grape_image_kind_t kind,
                                       int arch) {
  for (size_t i = 0; i < grape_fatbin_count(fb); i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    if (img->kind == kind && img->arch == arch && img->nkernels > 0)
      return img;
  }
  return NULL;
}

static void check_file(const char* name, int arch, grape_compression_t elf_c,
                       grape_compression_t ptx_c, int has_ptx) {
  grape_fatbin_t* fb = load_file(name);
  const grape_image_t* elf = find_image(fb, GRAPE_IMAGE_ELF, arch);
  cr_assert_not_null(elf, "%s: no sm_%d cubin", name, arch);
  cr_expect_eq(elf->compression, elf_c, "%s: cubin compression %s", name,
               grape_compression_name(elf->compression));
  check_image(elf, name);
  const grape_image_t* ptx = find_image(fb, GRAPE_IMAGE_PTX, arch);
  if (has_ptx) {
    cr_assert_not_null(ptx, "%s: no PTX", name);
    cr_expect_eq(ptx->compression, ptx_c, "%s: ptx compression %s", name,
                 grape_compression_name(ptx->compression));
    check_image(ptx, name);   /* the PTX .param layout must agree as well */
  } else {
    cr_expect_null(ptx);
  }
  grape_fatbin_free(fb);
}

Test(cubin, layout_sm80_cubin) { check_file("kernels_sm80.cubin", 80, GRAPE_COMPRESS_NONE, 0, 0); }
Test(cubin, layout_sm90_cubin) { check_file("kernels_sm90.cubin", 90, GRAPE_COMPRESS_NONE, 0, 0); }
Test(cubin, layout_default_fatbin) {
  check_file("kernels_default.fatbin", 80, GRAPE_COMPRESS_NONE, 0, 0);
  check_file("kernels_default.fatbin", 90, GRAPE_COMPRESS_NONE, GRAPE_COMPRESS_ZSTD, 1);
}
/* nvcc 13: -compress-mode=speed leaves cubins raw and LZ4-compresses PTX only. */
Test(cubin, layout_speed_fatbin) {
  check_file("kernels_speed.fatbin", 80, GRAPE_COMPRESS_NONE, 0, 0);
  check_file("kernels_speed.fatbin", 90, GRAPE_COMPRESS_NONE, GRAPE_COMPRESS_LZ4, 1);
}
Test(cubin, layout_speed_compress_all_lz4) {
  check_file("kernels_speedall.fatbin", 80, GRAPE_COMPRESS_LZ4, 0, 0);
  check_file("kernels_speedall.fatbin", 90, GRAPE_COMPRESS_LZ4, GRAPE_COMPRESS_LZ4, 1);
}
Test(cubin, layout_size_zstd) {
  check_file("kernels_size.fatbin", 80, GRAPE_COMPRESS_ZSTD, 0, 0);
  check_file("kernels_size.fatbin", 90, GRAPE_COMPRESS_ZSTD, GRAPE_COMPRESS_ZSTD, 1);
}
Test(cubin, host_shared_library) {
  check_file("libkernels.so", 80, GRAPE_COMPRESS_NONE, 0, 0);
  check_file("libkernels.so", 90, GRAPE_COMPRESS_NONE, GRAPE_COMPRESS_ZSTD, 1);
}

Test(cubin, big_params_use_v2_records) {
  grape_fatbin_t* fb = load_file("kernels_sm90.cubin");
  const grape_kernel_t* k = grape_image_find_kernel(grape_fatbin_image(fb, 0), "_Z5k_big5big_sPi");
  cr_assert_not_null(k);
  cr_expect_eq(k->params[0].size, sizeof(struct big_s));
  cr_expect_gt(k->params[0].size, 4096);
  grape_fatbin_free(fb);
}

Test(cubin, attributes) {
  for (int arch = 80; arch <= 90; arch += 10) {
    grape_fatbin_t* fb = load_file(arch == 80 ? "kernels_sm80.cubin" : "kernels_sm90.cubin");
    const grape_image_t* img = grape_fatbin_image(fb, 0);
    cr_expect_eq(img->arch, arch);
    const grape_kernel_t* k = grape_image_find_kernel(img, "_Z6k_smemPf");
    cr_assert_not_null(k);
    cr_expect_eq(k->max_threads, SMEM_THREADS);
    /* sm_90 places static shared memory after a 1 KB reserved area. */
    cr_expect_eq(k->shared_bytes, SMEM_FLOATS * sizeof(float) + (arch == 90 ? 1024 : 0),
                 "sm_%d shared %u", arch, k->shared_bytes);
    for (uint32_t i = 0; i < img->nkernels; i++) {
      cr_expect(img->kernels[i].registers > 0 && img->kernels[i].registers <= 255, "%s regs %d",
                img->kernels[i].name, img->kernels[i].registers);
      cr_expect_eq(img->kernels[i].cuda_api_version, 130, "%s: api %d", img->kernels[i].name,
                   img->kernels[i].cuda_api_version);
    }
    const grape_kernel_t* np = grape_image_find_kernel(img, "k_noparams");
    cr_expect_eq(np->shared_bytes, 0);
    cr_expect_eq(np->max_threads, -1);
    grape_fatbin_free(fb);
  }
}

/* __device__ and __constant__ variables, from the cubin's symbols and, for
 * the PTX, from its .global / .const declarations: the same names, sizes
 * and initial bytes either way. */
static void check_variables(const grape_image_t* img, const char* what) {
  static const int32_t inited[2] = {7, 9};
  static const float cf[3] = {1.f, 2.f, 3.f};
  int seen = 0;
  for (uint32_t i = 0; i < img->nglobals; i++) {
    const grape_global_t* g = &img->globals[i];
    if (strcmp(g->name, "layout_counter") == 0) {
      cr_expect(g->size == 16 && g->init == NULL, "%s: layout_counter %llu bytes", what,
                (unsigned long long)g->size);
      seen |= 1;
    } else if (strcmp(g->name, "layout_inited") == 0) {
      cr_expect(g->size == 8 && g->init != NULL && memcmp(g->init, inited, 8) == 0,
                "%s: layout_inited", what);
      seen |= 2;
    } else if (strcmp(g->name, "layout_cf") == 0) {
      cr_expect(g->size == 12 && g->init != NULL && memcmp(g->init, cf, 12) == 0,
                "%s: layout_cf", what);
      seen |= 4;
    }
  }
  cr_expect_eq(seen, 7, "%s: variables found %#x of 0x7 (%u in all)", what, seen, img->nglobals);
}

Test(cubin, variables) {
  grape_fatbin_t* fb = load_file("kernels_default.fatbin");
  check_variables(find_image(fb, GRAPE_IMAGE_ELF, 90), "sm_90 cubin");
  check_variables(find_image(fb, GRAPE_IMAGE_PTX, 90), "sm_90 PTX");
  grape_fatbin_free(fb);
}

/* Reads a whole nvcc output, NUL-terminated. */
static uint8_t* slurp(const char* name, size_t* size) {
  return slurp_in(KDIR, name, size, 1);
}

/* What __cudaRegisterFatBinary receives: the wrapper, size unknown (0). */
Test(cubin, load_wrapper_with_unknown_size) {
  size_t n;
  uint8_t* fat = slurp("kernels_size.fatbin", &n);
  struct {
    int magic, version;
    const void* data;
    void* filename_or_fatbins;
  } wrapper = {0x466243B1, 1, fat, NULL};
  grape_fatbin_t* fb = NULL;
  grape_cubin_err_t err;
  int rc = grape_image_load(&wrapper, 0, &fb, &err);
  cr_assert_eq(rc, 0, "%s", err.msg);
  free(fat);   /* the set owns copies: the caller's bytes may go */
  const grape_image_t* img = grape_fatbin_select(fb, 90);
  cr_assert_not_null(img);
  cr_expect_eq(img->kind, GRAPE_IMAGE_ELF);
  check_image(img, "wrapper");
  cr_expect_eq(img->data[0], 0x7f);
  grape_fatbin_free(fb);
}

/* What cuModuleLoadData receives: a fatbin, a cubin or PTX, size unknown. */
Test(cubin, load_data_forms_with_unknown_size) {
  static const struct {
    const char* file;
    grape_image_kind_t kind;
  } forms[] = {{"kernels_speedall.fatbin", GRAPE_IMAGE_ELF},
               {"kernels_sm90.cubin", GRAPE_IMAGE_ELF},
               {"kernels_sm90.ptx", GRAPE_IMAGE_PTX}};
  for (size_t i = 0; i < 3; i++) {
    size_t n;
    uint8_t* buf = slurp(forms[i].file, &n);
    grape_fatbin_t* fb = NULL;
    grape_cubin_err_t err;
    int rc = grape_image_load(buf, 0, &fb, &err);
    cr_assert_eq(rc, 0, "%s: %s", forms[i].file, err.msg);
    const grape_image_t* img = grape_fatbin_select(fb, 90);
    cr_assert_not_null(img, "%s", forms[i].file);
    cr_expect_eq(img->kind, forms[i].kind, "%s", forms[i].file);
    cr_expect_eq(img->arch, 90, "%s", forms[i].file);
    check_image(img, forms[i].file);
    grape_fatbin_free(fb);
    /* The same bytes with their size give the same result. */
    rc = grape_image_load(buf, n, &fb, &err);
    cr_assert_eq(rc, 0, "%s: %s", forms[i].file, err.msg);
    check_image(grape_fatbin_select(fb, 90), forms[i].file);
    grape_fatbin_free(fb);
    free(buf);
  }
}

Test(cubin, select_best_image) {
  grape_fatbin_t* fb = load_file("kernels_default.fatbin");   /* sm_80, sm_90, compute_90 */
  const grape_image_t* img = grape_fatbin_select(fb, 90);
  cr_assert_not_null(img);
  cr_expect(img->kind == GRAPE_IMAGE_ELF && img->arch == 90, "exact SASS");
  img = grape_fatbin_select(fb, 86);
  cr_assert_not_null(img);
  cr_expect(img->kind == GRAPE_IMAGE_ELF && img->arch == 80, "compatible SASS (8.0 on 8.6)");
  img = grape_fatbin_select(fb, 100);
  cr_assert_not_null(img);
  cr_expect(img->kind == GRAPE_IMAGE_PTX && img->arch == 90, "PTX for a newer major");
  cr_expect_null(grape_fatbin_select(fb, 75), "nothing runs on sm_75");
  grape_fatbin_free(fb);
}

Test(cubin, no_payloads_flag_drops_data) {
  char path[512];
  grape_fatbin_t* fb = NULL;
  grape_cubin_err_t err;
  snprintf(path, sizeof path, "%s/%s", KDIR, "kernels_size.fatbin");
  cr_assert_eq(grape_fatbin_from_file_ex(path, GRAPE_FATBIN_NO_PAYLOADS, &fb, &err), 0, "%s",
               err.msg);
  for (size_t i = 0; i < grape_fatbin_count(fb); i++) {
    cr_expect_null(grape_fatbin_image(fb, i)->data);
    cr_expect_gt(grape_fatbin_image(fb, i)->size, 0);
  }
  check_image(find_image(fb, GRAPE_IMAGE_ELF, 90), "no payloads");
  grape_fatbin_free(fb);
}

/* Registration of a multi-arch fatbin for one device: only its image is kept. */
Test(cubin, load_for_one_arch) {
  static const struct {
    int dev;
    grape_image_kind_t kind;
    int arch;
  } cases[] = {{90, GRAPE_IMAGE_ELF, 90}, {86, GRAPE_IMAGE_ELF, 80}, {100, GRAPE_IMAGE_PTX, 90}};
  size_t n;
  uint8_t* fat = slurp("kernels_size.fatbin", &n);
  grape_fatbin_t* fb;
  grape_cubin_err_t err;
  for (size_t i = 0; i < 3; i++) {
    cr_assert_eq(grape_image_load_arch(fat, n, cases[i].dev, &fb, &err), 0, "%s", err.msg);
    cr_assert_eq(grape_fatbin_count(fb), 1, "sm_%d: %zu images", cases[i].dev,
                 grape_fatbin_count(fb));
    const grape_image_t* img = grape_fatbin_image(fb, 0);
    cr_expect(img->kind == cases[i].kind && img->arch == cases[i].arch, "sm_%d got sm_%d %s",
              cases[i].dev, img->arch, grape_image_kind_name(img->kind));
    check_image(img, "load_arch");
    grape_fatbin_free(fb);
  }
  cr_assert_eq(grape_image_load_arch(fat, n, 75, &fb, &err), 0, "%s", err.msg);
  cr_expect_eq(grape_fatbin_count(fb), 0, "nothing runs on sm_75");
  grape_fatbin_free(fb);
  /* A damaged header of an entry that is not chosen is still an error. */
  uint32_t bad = 7;
  memcpy(fat + 16, &bad, 2);   /* first entry (sm_80) gets kind 7 */
  cr_expect_eq(grape_image_load_arch(fat, n, 90, &fb, &err), -ENOTSUP, "%s", err.msg);
  free(fat);
}

/* Without .nv_fatbin, the .nvFatBinSegment wrappers lead to the containers;
 * with SCAN_DATA the renamed section is not listed a second time. */
Test(cubin, host_elf_through_wrappers) {
#if HAVE_OBJCOPY
  char path[512];
  grape_fatbin_t* fb;
  grape_cubin_err_t err;
  snprintf(path, sizeof path, "%s/%s", KDIR, "prog_wrappers_only");
  for (unsigned flags = 0; flags <= GRAPE_FATBIN_SCAN_DATA; flags += GRAPE_FATBIN_SCAN_DATA) {
    cr_assert_eq(grape_fatbin_from_file_ex(path, flags, &fb, &err), 0, "%s", err.msg);
    size_t with_kernels = 0;
    for (size_t i = 0; i < grape_fatbin_count(fb); i++)
      with_kernels += grape_fatbin_image(fb, i)->nkernels > 0;
    /* The runtime's kernel-less cubin, then sm_90 SASS and PTX: each once. */
    cr_expect_eq(grape_fatbin_count(fb), 3, "flags %u: %zu images", flags, grape_fatbin_count(fb));
    cr_expect_eq(with_kernels, 2, "flags %u: %zu images with kernels", flags, with_kernels);
    const grape_image_t* img = find_image(fb, GRAPE_IMAGE_ELF, 90);
    cr_assert_not_null(img);
    check_image(img, "wrappers");
    grape_fatbin_free(fb);
  }
#else
  cr_skip_test("objcopy not found");
#endif
}

/* Containers are parsed on several threads: the images still come in file
 * order, and a damaged container is reported as a sequential parse would. */
Test(cubin, library_order_and_first_error) {
  char path[512];
  grape_fatbin_t* fb;
  grape_cubin_err_t err;
  snprintf(path, sizeof path, "%s/%s", KDIR, "libkernels.so");
  cr_assert_eq(grape_fatbin_from_file(path, &fb, &err), 0, "%s", err.msg);
  size_t n = grape_fatbin_count(fb);
  cr_assert_geq(n, 4);
  for (size_t i = 1; i < n; i++)
    cr_expect_lt(grape_fatbin_image(fb, i - 1)->offset, grape_fatbin_image(fb, i)->offset,
                 "image %zu out of file order", i);
  /* The runtime's container comes first, ours last: damage one entry in each. */
  size_t bad2 = grape_fatbin_image(fb, 1)->offset, bad1 = grape_fatbin_image(fb, n - 1)->offset;
  cr_assert_eq(grape_fatbin_image(fb, 1)->nkernels, 0);
  cr_assert_gt(grape_fatbin_image(fb, n - 1)->nkernels, 0);
  grape_fatbin_free(fb);

  /* The earlier container's error is reported, whichever thread got there first. */
  size_t size;
  uint8_t* lib = slurp("libkernels.so", &size);
  lib[bad1] = 9;
  lib[bad2] = 7;
  char tmp[] = "/tmp/grape_test_libXXXXXX";
  int fd = mkstemp(tmp);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, lib, size), (ssize_t)size);
  close(fd);
  free(lib);
  int rc = grape_fatbin_from_file(tmp, &fb, &err);
  unlink(tmp);
  cr_expect_eq(rc, -ENOTSUP, "%s", err.msg);
  char want[64];
  snprintf(want, sizeof want, "entry at 0x%zx: unknown kind 7", bad2);
  cr_expect(strstr(err.msg, want) != NULL, "'%s' lacks '%s'", err.msg, want);
}
