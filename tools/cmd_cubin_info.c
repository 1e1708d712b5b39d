/* grape cubin-info: lists the kernel images in a host ELF (executable or
 * shared library), a fatbin, a cubin or a PTX file, and their kernels with
 * parameter layouts, registers and static shared memory.
 *
 * DESIGN: all parsing is cubin/'s (grape_fatbin_from_file); this file only
 * filters and prints. --json prints one object, schema in docs/cubin.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "grape/cubin.h"
#include "util/json_str.h"

typedef struct opts_s {
  const char* path;
  const char* kernel;   /* only kernels with this mangled, demangled or base name */
  int arch;             /* only images of this SM (0 = all) */
  int json;
  int summary;          /* one line per arch, kind and compression */
  int images;           /* one line per image */
} opts_t;

/* Rows of the --summary table at most: a library holds a few archs, each in
 * a few kinds and compressions, so more means something unusual and the
 * rest is said in one line. */
#define SUMMARY_ROWS 32

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape cubin-info FILE [--kernel NAME] [--arch SM] [--summary|--images] [--json]\n"
          "\n"
          "Lists the kernel images (arch, kind, compression) in FILE -- a host\n"
          "executable or shared library, a fatbin, a cubin or PTX -- and each\n"
          "image's kernels with registers, static shared memory and parameter\n"
          "layout (offset:size in bytes).\n"
          "\n"
          "  --kernel NAME  only kernels whose mangled name, demangled name or\n"
          "                 unqualified function name is NAME\n"
          "  --arch SM      only images for that SM (e.g. 90)\n"
          "  --summary      one line per arch, kind and compression: images, bytes,\n"
          "                 kernels (at most 32 lines)\n"
          "  --images       one line per image, no kernels\n"
          "  --json         one JSON object {\"images\":[...]} (docs/cubin.md)\n");
}

/* Whether kernel k is the one --kernel asked for. */
static int kernel_matches(const grape_kernel_t* k, const char* want) {
  if (want == NULL)
    return 1;
  if (strcmp(k->name, want) == 0 || strcmp(k->demangled, want) == 0)
    return 1;
  /* The function name without return type and parameters: "ns::f<int, 4>" of
   * "void ns::f<int, 4>(int*)". Spaces inside <...> belong to the name. */
  const char* d = k->demangled;
  const char* paren = strchr(d, '(');
  const char* end = paren ? paren : d + strlen(d);
  const char* start = end;
  int depth = 0;
  while (start > d) {
    char c = start[-1];
    if (c == '>')
      depth++;
    else if (c == '<')
      depth--;
    else if (c == ' ' && depth == 0)
      break;
    start--;
  }
  size_t n = (size_t)(end - start);
  return strlen(want) == n && strncmp(start, want, n) == 0;
}

static int image_wanted(const grape_image_t* img, const opts_t* o) {
  if (o->arch && img->arch != o->arch)
    return 0;
  if (o->kernel == NULL)
    return 1;
  for (uint32_t k = 0; k < img->nkernels; k++)
    if (kernel_matches(&img->kernels[k], o->kernel))
      return 1;
  return 0;
}

static void json_int(FILE* f, long v) {
  if (v < 0)
    fputs("null", f);
  else
    fprintf(f, "%ld", v);
}

static void print_json(const grape_fatbin_t* fb, const opts_t* o) {
  FILE* f = stdout;
  int first_img = 1;
  fputs("{\"images\":[", f);
  for (size_t i = 0; i < grape_fatbin_count(fb); i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    if (!image_wanted(img, o))
      continue;
    fprintf(f, "%s\n{\"arch\":%d,\"variant\":\"%s\",\"kind\":\"%s\",\"compression\":\"%s\","
               "\"size\":%zu,\"kernels\":[",
            first_img ? "" : ",", img->arch, img->variant == 'a' ? "a" : img->variant == 'f' ? "f" : "",
            grape_image_kind_name(img->kind), grape_compression_name(img->compression), img->size);
    first_img = 0;
    int first_k = 1;
    for (uint32_t k = 0; k < img->nkernels; k++) {
      const grape_kernel_t* kr = &img->kernels[k];
      if (!kernel_matches(kr, o->kernel))
        continue;
      fputs(first_k ? "{\"name\":" : ",{\"name\":", f);
      first_k = 0;
      grape__json_put_str(f, kr->name);
      fputs(",\"demangled\":", f);
      grape__json_put_str(f, kr->demangled);
      fputs(",\"params\":[", f);
      for (uint32_t p = 0; p < kr->nparams; p++)
        fprintf(f, "%s{\"offset\":%u,\"size\":%u}", p ? "," : "", kr->params[p].offset,
                kr->params[p].size);
      fprintf(f, "],\"param_bytes\":%u,\"registers\":", kr->param_bytes);
      json_int(f, kr->registers);
      fprintf(f, ",\"shared_bytes\":%u,\"max_threads\":", kr->shared_bytes);
      json_int(f, kr->max_threads);
      fputs(",\"cuda_api_version\":", f);
      json_int(f, kr->cuda_api_version);
      fputc('}', f);
    }
    fputs("]}", f);
  }
  fputs("\n]}\n", f);
}

static void arch_name(const grape_image_t* img, char* out, size_t cap) {
  snprintf(out, cap, "sm_%d%s", img->arch,
           img->variant == 'a' ? "a" : img->variant == 'f' ? "f" : "");
}

static const char* kind_name(const grape_image_t* img) {
  return img->kind == GRAPE_IMAGE_ELF ? "cubin" : grape_image_kind_name(img->kind);
}

typedef struct group_s {
  char arch[16];
  int sm;                 /* for the order: by SM, then name, kind, compression */
  const char* kind;
  const char* comp;
  size_t images, bytes, kernels;
} group_t;

static int group_order(const void* a, const void* b) {
  const group_t* x = a;
  const group_t* y = b;
  int c = x->sm != y->sm ? (x->sm < y->sm ? -1 : 1) : strcmp(x->arch, y->arch);
  if (c == 0)
    c = strcmp(x->kind, y->kind);
  return c ? c : strcmp(x->comp, y->comp);
}

/* --summary: the wanted images grouped by arch, kind and compression. */
static void print_groups(const grape_fatbin_t* fb, const opts_t* o) {
  group_t g[SUMMARY_ROWS];
  size_t ng = 0, other_images = 0;
  for (size_t i = 0; i < grape_fatbin_count(fb); i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    if (!image_wanted(img, o))
      continue;
    char arch[16];
    arch_name(img, arch, sizeof arch);
    const char* kind = kind_name(img);
    const char* comp = grape_compression_name(img->compression);
    size_t k = 0;
    while (k < ng && !(strcmp(g[k].arch, arch) == 0 && g[k].kind == kind && g[k].comp == comp))
      k++;
    if (k == ng) {
      if (ng == SUMMARY_ROWS) {
        other_images++;
        continue;
      }
      memset(&g[ng], 0, sizeof(g[ng]));
      snprintf(g[ng].arch, sizeof g[ng].arch, "%s", arch);
      g[ng].sm = img->arch;
      g[ng].kind = kind;
      g[ng].comp = comp;
      ng++;
    }
    g[k].images++;
    g[k].bytes += img->size;
    for (uint32_t j = 0; j < img->nkernels; j++)
      g[k].kernels += kernel_matches(&img->kernels[j], o->kernel);
  }
  qsort(g, ng, sizeof(g[0]), group_order);
  printf("\n  arch     kind   compression   images         bytes  kernels\n");
  for (size_t k = 0; k < ng; k++)
    printf("  %-7s  %-5s  %-11s  %6zu  %12zu  %7zu\n", g[k].arch, g[k].kind, g[k].comp,
           g[k].images, g[k].bytes, g[k].kernels);
  if (other_images)
    printf("  ... %zu more images in other groups\n", other_images);
  printf("('--images' lists every image, and no flag every kernel)\n");
}

static void print_text(const grape_fatbin_t* fb, const opts_t* o) {
  size_t nimg = grape_fatbin_count(fb), shown = 0, kernels = 0, elf = 0, lto = 0;
  char lto_s[48];
  for (size_t i = 0; i < nimg; i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    elf += img->kind == GRAPE_IMAGE_ELF;
    lto += img->kind == GRAPE_IMAGE_LTOIR;
    if (!image_wanted(img, o))
      continue;
    shown++;
    for (uint32_t k = 0; k < img->nkernels; k++)
      kernels += kernel_matches(&img->kernels[k], o->kernel);
  }
  snprintf(lto_s, sizeof lto_s, ", %zu ltoir", lto);
  printf("%s: %zu image%s (%zu cubin, %zu ptx%s), %zu kernel%s", o->path, nimg,
         nimg == 1 ? "" : "s", elf, nimg - elf - lto, lto ? lto_s : "", grape_fatbin_kernel_count(fb),
         grape_fatbin_kernel_count(fb) == 1 ? "" : "s");
  if (o->kernel || o->arch)
    printf("; %zu image%s and %zu kernel%s match", shown, shown == 1 ? "" : "s", kernels,
           kernels == 1 ? "" : "s");
  printf("\n");
  if (shown && o->summary) {
    print_groups(fb, o);
    return;
  }
  if (shown && o->images)
    printf("\n  image  arch     kind   compression       bytes  kernels\n");
  for (size_t i = 0; i < nimg; i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    if (!image_wanted(img, o))
      continue;
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%s", img->arch,
             img->variant == 'a' ? "a" : img->variant == 'f' ? "f" : "");
    const char* kind = img->kind == GRAPE_IMAGE_ELF ? "cubin" : grape_image_kind_name(img->kind);
    if (o->images) {
      printf("  %5zu  %-7s  %-5s  %-11s  %10zu  %7u\n", i, arch, kind,
             grape_compression_name(img->compression), img->size, img->nkernels);
      continue;
    }
    printf("\nimage %zu: %s %s, %s, %zu bytes, %u kernel%s\n", i, arch, kind,
           grape_compression_name(img->compression), img->size, img->nkernels,
           img->nkernels == 1 ? "" : "s");
    for (uint32_t k = 0; k < img->nkernels; k++) {
      const grape_kernel_t* kr = &img->kernels[k];
      if (!kernel_matches(kr, o->kernel))
        continue;
      printf("  %s\n", kr->demangled);
      if (strcmp(kr->name, kr->demangled) != 0)
        printf("      mangled  %s\n", kr->name);
      /* PTX has no registers or shared memory before ptxas: no line for them. */
      if (img->kind == GRAPE_IMAGE_ELF) {
        printf("      ");
        if (kr->registers >= 0)
          printf("%d regs, ", kr->registers);
        printf("%u B shared", kr->shared_bytes);
        if (kr->max_threads >= 0)
          printf(", max %d threads", kr->max_threads);
        printf("\n");
      }
      printf("      params   %u B:", kr->param_bytes);
      if (kr->nparams == 0)
        printf(" none");
      for (uint32_t p = 0; p < kr->nparams; p++)
        printf(" %u:%u", kr->params[p].offset, kr->params[p].size);
      printf("\n");
    }
  }
}

int cmd_cubin_info(int argc, char** argv) {
  opts_t o = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--json") == 0) {
      o.json = 1;
    } else if (strcmp(argv[i], "--summary") == 0) {
      o.summary = 1;
    } else if (strcmp(argv[i], "--images") == 0) {
      o.images = 1;
    } else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
      o.kernel = argv[++i];
    } else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {
      char* end;
      const char* a = argv[++i];
      if (strncmp(a, "sm_", 3) == 0)
        a += 3;
      long v = strtol(a, &end, 10);
      if (*end != '\0' || v <= 0 || v > 1000) {
        fprintf(stderr, "grape: error: cubin-info: bad --arch '%s'\n", argv[i]);
        return 2;
      }
      o.arch = (int)v;
    } else if (argv[i][0] == '-' || o.path != NULL) {
      fprintf(stderr, "grape: error: cubin-info: unexpected argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    } else {
      o.path = argv[i];
    }
  }
  if (o.path == NULL) {
    usage(stderr);
    return 2;
  }
  if (o.summary && o.images) {
    fprintf(stderr, "grape: error: cubin-info: --summary and --images are two views; give one\n");
    return 2;
  }
  grape_fatbin_t* fb;
  grape_cubin_err_t err;
  int rc = grape_fatbin_from_file_ex(o.path, GRAPE_FATBIN_NO_PAYLOADS | GRAPE_FATBIN_SCAN_DATA, &fb, &err);
  if (rc) {
    fprintf(stderr, "grape: error: %s\n", err.msg);
    return 1;
  }
  static char outbuf[1 << 16];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  if (o.json)
    print_json(fb, &o);
  else
    print_text(fb, &o);
  int found = 1;
  if (o.kernel) {
    found = 0;
    for (size_t i = 0; i < grape_fatbin_count(fb) && !found; i++)
      found = image_wanted(grape_fatbin_image(fb, i), &o);
    if (!found)
      fprintf(stderr, "grape: error: cubin-info: no kernel named '%s'\n", o.kernel);
  }
  grape_fatbin_free(fb);
  if (fflush(stdout) != 0) {
    fprintf(stderr, "grape: error: cubin-info: writing output: %s\n", strerror(errno));
    return 1;
  }
  return found ? 0 : 1;
}
