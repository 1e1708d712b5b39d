/* GPU spec table: datasheet numbers of the GPUs grape can predict for.
 *
 * DESIGN: a static table of grape_gpu_spec_t, one row per product, each with
 * its source; plus a small growable list of entries loaded from NeuSight-format
 * device JSONs, searched first, so a JSON overrides a built-in entry of the
 * same name. Names compare case-insensitively with spaces, '-' and '_'
 * ignored, so "Tesla T4", "tesla_t4" and "TESLA-T4" all match; a short alias
 * ("T4", "H100") matches through the alias column. Loaded entries are never
 * freed: callers keep the pointers for the process lifetime.
 *
 * Per-SM limits come from the CUDA C++ Programming Guide, "Technical
 * Specifications per Compute Capability" (CUDA 12.x): 64 K registers per SM on
 * every architecture here; max resident threads 2048 (sm_60/61/70/80/90), 1024
 * (sm_75), 1536 (sm_86/89); max resident blocks 32 (sm_60..70, 80, 90), 16
 * (sm_75, 86), 24 (sm_89); shared memory per SM 64 KiB (sm_60, sm_75), 96 KiB
 * (sm_61, sm_70), 164 KiB (sm_80), 100 KiB (sm_86/89), 228 KiB (sm_90).
 */
#include "predict/gpu.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* ---- Built-in table ---- */

typedef struct builtin_s {
  grape_gpu_spec_t s;
  const char* alias;   /* short names separated by '|', or NULL */
} builtin_t;

#define KB 1
static const builtin_t builtin[] = {
  /* NVIDIA Tesla P4 datasheet: 2560 CUDA cores (20 SMs x 128; NeuSight's JSON
   * says 40x64, the profiler data implies 20), 1114 MHz boost (NeuSight: 1113),
   * 5.5 TFLOPS FP32, 192 GB/s GDDR5, 8 GB; GP104 whitepaper: 2 MB L2.
   * sm_61 FP16 runs at 1/64 rate. */
  {{"Tesla P4", "sm_61", 20, 1113, 192, 2, 8, 5.699, 0.089, 0, 0, 65536, 96 * KB, 48, 2048, 32,
    "Tesla P4 datasheet; GP104 whitepaper; NeuSight device JSON (SingleFLOPs 5699)"}, "P4"},
  /* NVIDIA Tesla P100 PCIe datasheet: 56 SMs, 9.3 TFLOPS FP32, 18.7 FP16,
   * 732 GB/s HBM2, 16 GB; GP100 whitepaper: 4 MB L2. NeuSight: 1380 MHz. */
  {{"Tesla P100-PCIE-16GB", "sm_60", 56, 1380, 732, 4, 16, 9.519, 19.04, 0, 0, 65536, 64 * KB,
    48, 2048, 32, "Tesla P100 PCIe datasheet; GP100 whitepaper; NeuSight device JSON"}, "P100"},
  /* NVIDIA V100 PCIe datasheet: 80 SMs, 1380 MHz, 14 TFLOPS FP32, 112 TFLOPS
   * tensor, 900 GB/s HBM2; GV100 whitepaper: 6 MB L2. */
  {{"Tesla V100-PCIE-32GB", "sm_70", 80, 1370, 900, 6, 32, 14.029, 112, 0, 0, 65536, 96 * KB, 96,
    2048, 32, "Tesla V100 PCIe datasheet; GV100 whitepaper; NeuSight device JSON"}, "V100"},
  {{"Tesla V100-PCIE-16GB", "sm_70", 80, 1370, 900, 6, 16, 14.029, 112, 0, 0, 65536, 96 * KB, 96,
    2048, 32, "Tesla V100 PCIe datasheet; GV100 whitepaper"}, NULL},
  /* NVIDIA V100 SXM2 datasheet: 1530 MHz, 15.7 TFLOPS FP32, 125 tensor. */
  {{"Tesla V100-SXM2-16GB", "sm_70", 80, 1530, 900, 6, 16, 15.67, 125, 0, 0, 65536, 96 * KB, 96,
    2048, 32, "Tesla V100 SXM2 datasheet; GV100 whitepaper"}, NULL},
  {{"Tesla V100-SXM2-32GB", "sm_70", 80, 1530, 900, 6, 32, 15.67, 125, 0, 0, 65536, 96 * KB, 96,
    2048, 32, "Tesla V100 SXM2 datasheet; GV100 whitepaper"}, NULL},
  /* NVIDIA T4 datasheet: 40 SMs (2560 cores), 1590 MHz, 8.1 TFLOPS FP32,
   * 65 TFLOPS FP16 tensor, 320 GB/s GDDR6, 16 GB (15 usable); Turing
   * whitepaper: 4 MB L2. */
  {{"Tesla T4", "sm_75", 40, 1590, 320, 4, 15, 8.141, 65, 0, 0, 65536, 64 * KB, 64, 1024, 16,
    "NVIDIA T4 datasheet; Turing whitepaper; NeuSight device JSON"}, "T4"},
  /* NVIDIA A100 datasheet (PCIe/SXM4 40 GB): 108 SMs, 1410 MHz, 19.5 TFLOPS
   * FP32, 156 TF32, 312 FP16/BF16, 1555 GB/s; 80 GB: 1935 (PCIe) / 2039 (SXM)
   * GB/s; GA100 whitepaper: 40 MB L2. */
  {{"NVIDIA A100-PCIE-40GB", "sm_80", 108, 1410, 1555, 40, 40, 19.492, 312, 312, 156, 65536,
    164 * KB, 163, 2048, 32, "NVIDIA A100 datasheet; GA100 whitepaper; NeuSight device JSON"},
   NULL},
  {{"NVIDIA A100-SXM4-40GB", "sm_80", 108, 1410, 1555, 40, 40, 19.492, 312, 312, 156, 65536,
    164 * KB, 163, 2048, 32, "NVIDIA A100 datasheet; GA100 whitepaper; NeuSight device JSON"},
   "A100|A100 SXM"},
  {{"NVIDIA A100 80GB PCIe", "sm_80", 108, 1410, 1935, 40, 80, 19.492, 312, 312, 156, 65536,
    164 * KB, 163, 2048, 32, "NVIDIA A100 datasheet; GA100 whitepaper; NeuSight device JSON"},
   NULL},
  {{"NVIDIA A100-SXM4-80GB", "sm_80", 108, 1410, 2039, 40, 80, 19.492, 312, 312, 156, 65536,
    164 * KB, 163, 2048, 32, "NVIDIA A100 datasheet; GA100 whitepaper"}, NULL},
  /* NVIDIA A10 datasheet: 72 SMs, 1695 MHz, 31.2 TFLOPS FP32, 125 FP16
   * tensor, 62.5 TF32, 600 GB/s, 6 MB L2 (GA102 whitepaper). */
  {{"NVIDIA A10", "sm_86", 72, 1695, 600, 6, 24, 31.2, 125, 125, 62.5, 65536, 100 * KB, 99, 1536,
    16, "NVIDIA A10 datasheet; GA102 whitepaper"}, "A10"},
  /* NVIDIA L4 datasheet: 7424 cores = 58 SMs (NeuSight's JSON says 60; the
   * data implies 58), 2040 MHz, 30.3 TFLOPS FP32, 121 FP16/BF16 and 60 TF32
   * dense tensor, 300 GB/s GDDR6, 24 GB; Ada whitepaper: 48 MB L2. */
  {{"NVIDIA L4", "sm_89", 58, 2040, 300, 48, 24, 30.29, 121, 121, 60, 65536, 100 * KB, 99, 1536,
    24, "NVIDIA L4 datasheet; Ada Lovelace whitepaper; NeuSight device JSON"}, "L4"},
  /* NVIDIA L40S datasheet: 142 SMs, 2520 MHz, 91.6 TFLOPS FP32, 362 FP16/BF16
   * and 183 TF32 dense tensor, 864 GB/s, 48 GB; 96 MB L2. */
  {{"NVIDIA L40S", "sm_89", 142, 2520, 864, 96, 48, 91.6, 362, 362, 183, 65536, 100 * KB, 99,
    1536, 24, "NVIDIA L40S datasheet; Ada Lovelace whitepaper"}, "L40S"},
  /* Ada Lovelace whitepaper (RTX 4090): 128 SMs, 2520 MHz, 82.6 TFLOPS FP32,
   * 165 FP16/BF16 tensor (FP32 accumulate), 82.6 TF32, 1008 GB/s, 72 MB L2. */
  {{"NVIDIA GeForce RTX 4090", "sm_89", 128, 2520, 1008, 72, 24, 82.6, 165, 165, 82.6, 65536,
    100 * KB, 99, 1536, 24, "NVIDIA Ada Lovelace GPU architecture whitepaper, RTX 4090"},
   "RTX 4090"},
  /* NVIDIA H100 datasheet, SXM5: 132 SMs, 1980 MHz, 66.9 TFLOPS FP32 (NeuSight
   * 66908), 494.7 TF32, 989.4 FP16/BF16 dense, 3350 GB/s HBM3 (NeuSight: 3430);
   * Hopper whitepaper: 50 MB L2. */
  {{"NVIDIA H100 80GB HBM3", "sm_90", 132, 1980, 3350, 50, 80, 66.908, 989.4, 989.4, 494.7, 65536,
    228 * KB, 227, 2048, 32, "NVIDIA H100 datasheet (SXM5); Hopper whitepaper; NeuSight JSON"},
   "H100|H100 SXM"},
  /* NVIDIA H100 datasheet, PCIe: 114 SMs, 1755 MHz, 51.2 TFLOPS FP32, 378
   * TF32, 756 FP16/BF16 dense, 2000 GB/s HBM2e, 50 MB L2. */
  {{"NVIDIA H100 PCIe", "sm_90", 114, 1755, 2000, 50, 80, 51.2, 756, 756, 378, 65536, 228 * KB,
    227, 2048, 32, "NVIDIA H100 datasheet (PCIe); Hopper whitepaper"}, "H100 PCIe"},
  /* NVIDIA H200 datasheet (SXM): the H100 SXM5 compute (132 SMs, 1980 MHz,
   * 66.9 FP32, 494.7 TF32, 989.4 FP16/BF16 dense) with 4.8 TB/s HBM3e, 141 GB. */
  {{"NVIDIA H200", "sm_90", 132, 1980, 4800, 50, 141, 66.908, 989.4, 989.4, 494.7, 65536,
    228 * KB, 227, 2048, 32, "NVIDIA H200 datasheet; Hopper whitepaper"}, "H200"},
};
#undef KB

#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

/* Entries loaded from JSON; searched before the built-ins. */
static grape_gpu_spec_t** loaded;
static size_t nloaded;

/* ---- Lookup ---- */

/* Compares two names ignoring case, spaces, '-' and '_'. */
static int name_eq(const char* a, const char* b) {
  for (;;) {
    while (*a == ' ' || *a == '-' || *a == '_')
      a++;
    while (*b == ' ' || *b == '-' || *b == '_')
      b++;
    if (*a == '\0' || *b == '\0')
      return *a == *b;
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
    a++;
    b++;
  }
}

/* Matches name against each '|'-separated alias. */
static int alias_eq(const char* aliases, const char* name) {
  char one[64];
  while (aliases != NULL && *aliases) {
    const char* bar = strchr(aliases, '|');
    size_t n = bar ? (size_t)(bar - aliases) : strlen(aliases);
    if (n < sizeof(one)) {
      memcpy(one, aliases, n);
      one[n] = '\0';
      if (name_eq(one, name))
        return 1;
    }
    aliases = bar ? bar + 1 : NULL;
  }
  return 0;
}

const grape_gpu_spec_t* grape_gpu_find(const char* name) {
  if (name == NULL || *name == '\0')
    return NULL;
  for (size_t i = nloaded; i-- > 0;)
    if (name_eq(loaded[i]->name, name))
      return loaded[i];
  for (size_t i = 0; i < NBUILTIN; i++)
    if (name_eq(builtin[i].s.name, name) ||
        alias_eq(builtin[i].alias, name))
      return &builtin[i].s;
  return NULL;
}

/* Board power from the datasheets (kept apart from grape_gpu_spec_t so the
 * public struct keeps its layout): the low-power inference boards (T4, P4,
 * L4) cannot hold their boost clock through long kernels. */
static const struct {
  const char* name;
  double w;
} tdp[] = {
    {"Tesla P4", 75},           {"Tesla P100-PCIE-16GB", 250},  {"Tesla V100-PCIE-32GB", 250},
    {"Tesla V100-PCIE-16GB", 250}, {"Tesla V100-SXM2-16GB", 300}, {"Tesla V100-SXM2-32GB", 300},
    {"Tesla T4", 70},           {"NVIDIA A100-PCIE-40GB", 250}, {"NVIDIA A100-SXM4-40GB", 400},
    {"NVIDIA A100 80GB PCIe", 300}, {"NVIDIA A100-SXM4-80GB", 400}, {"NVIDIA A10", 150},
    {"NVIDIA L4", 72},          {"NVIDIA L40S", 350},           {"NVIDIA GeForce RTX 4090", 450},
    {"NVIDIA H100 80GB HBM3", 700}, {"NVIDIA H100 PCIe", 350},  {"NVIDIA H200", 700},
};

double grape__gpu_tdp_w(const grape_gpu_spec_t* g) {
  for (size_t i = 0; i < sizeof(tdp) / sizeof(tdp[0]); i++)
    if (strcmp(g->name, tdp[i].name) == 0)
      return tdp[i].w;
  return 0;
}

long grape__gpu_cc(const grape_gpu_spec_t* g) {
  const char* arch = g != NULL ? g->arch : NULL;
  if (arch == NULL || strncmp(arch, "sm_", 3) != 0 || !isdigit((unsigned char)arch[3]))
    return -1;
  long cc = strtol(arch + 3, NULL, 10);
  return cc >= 10 && cc <= 999 ? cc : -1;
}

int grape__gpu_same_arch(const grape_gpu_spec_t* a, const grape_gpu_spec_t* b) {
  long ca = grape__gpu_cc(a);
  return ca >= 0 && ca == grape__gpu_cc(b);
}

size_t grape_gpu_count(void) {
  size_t n = NBUILTIN;
  for (size_t i = 0; i < nloaded; i++) {
    int dup = 0;
    for (size_t j = 0; j < NBUILTIN && !dup; j++)
      dup = name_eq(builtin[j].s.name, loaded[i]->name);
    n += !dup;
  }
  return n;
}

/* Built-ins first (a loaded override replaces its row), then new loaded ones. */
const grape_gpu_spec_t* grape_gpu_at(size_t i) {
  if (i < NBUILTIN)
    return grape_gpu_find(builtin[i].s.name);
  i -= NBUILTIN;
  for (size_t k = 0; k < nloaded; k++) {
    int dup = 0;
    for (size_t j = 0; j < NBUILTIN && !dup; j++)
      dup = name_eq(builtin[j].s.name, loaded[k]->name);
    if (dup)
      continue;
    if (i == 0)
      return loaded[k];
    i--;
  }
  return NULL;
}

void grape_gpu_list(FILE* to) {
  for (size_t i = 0; i < grape_gpu_count(); i++)
    fprintf(to, "  %s\n", grape_gpu_at(i)->name);
}

/* ---- NeuSight device JSON ---- */

/* The number of member key of device JSON o into *out: 1 when present, 0
 * when absent, -EINVAL (with a message in err) when not a number in (0, 1e12]. */
static int spec_num(const grape_json_t* o, const char* key, double* out, char* err, size_t errcap) {
  const grape_json_t* v = grape__json_get(o, key);
  if (v == NULL)
    return 0;
  if (v->kind != GRAPE_JSON_NUM || !(v->num > 0) || v->num > 1e12) {
    snprintf(err, errcap, "\"%s\" is not a positive number", key);
    return -EINVAL;
  }
  *out = v->num;
  return 1;
}

/* Per-SM limits of a new GPU, guessed from its clock and core count when no
 * built-in entry provides them: the most common modern values (sm_80). */
static void default_limits(grape_gpu_spec_t* s) {
  s->arch = "unknown";
  s->regs_per_sm = 65536;
  s->smem_per_sm_kb = 100;
  s->smem_per_block_kb = 99;
  s->max_threads_per_sm = 1536;
  s->max_blocks_per_sm = 16;
  s->source = "device JSON (per-SM limits defaulted)";
}

/* The fields of a NeuSight device JSON: member name and where its number goes. */
enum { F_MEM_BW, F_NUM_SM, F_CORES, F_FREQ, F_FLOPS, F_L2, F_MEM, NFIELDS };
static const char* const field_name[NFIELDS] = {"Mem_Bw", "Num_Sm", "Core_Per_SM", "Freq",
                                                "SingleFLOPs", "L2Cache", "Dev_Mem"};

int grape__gpu_parse_json(const char* js, const grape_gpu_spec_t** out, char* err, size_t errcap) {
  char scratch[1];
  if (err == NULL || errcap == 0) {
    err = scratch;
    errcap = sizeof(scratch);
  }
  err[0] = '\0';
  int rc = -EINVAL;
  grape_json_t* root = grape__json_parse(js, err, errcap);
  if (root == NULL)
    return -EINVAL;   /* err says what and where */
  if (root->kind != GRAPE_JSON_OBJ) {
    snprintf(err, errcap, "not a JSON object");
    goto fail_parse;
  }
  const char* dev = grape__json_str(grape__json_get(root, "Device"));
  if (dev == NULL || *dev == '\0' || strlen(dev) > 128) {
    snprintf(err, errcap, "no \"Device\" name (a string of 1-128 bytes)");
    goto fail_parse;
  }
  double f[NFIELDS];
  int have[NFIELDS];
  for (int i = 0; i < NFIELDS; i++)
    if ((have[i] = spec_num(root, field_name[i], &f[i], err, errcap)) < 0)
      goto fail_parse;
  char* name = strdup(dev);
  grape_gpu_spec_t* s = calloc(1, sizeof(*s));
  if (name == NULL || s == NULL) {
    snprintf(err, errcap, "out of memory");
    rc = -ENOMEM;
    goto fail_alloc;
  }
  const grape_gpu_spec_t* base = grape_gpu_find(name);
  if (base != NULL)
    *s = *base;
  else
    default_limits(s);
  s->name = name;
  s->source = "device JSON";
  if (have[F_MEM_BW])
    s->mem_bw_gbs = f[F_MEM_BW];
  if (have[F_NUM_SM])
    s->sm_count = (int)f[F_NUM_SM];
  if (have[F_FREQ])
    s->clock_mhz = (int)f[F_FREQ];
  if (have[F_FLOPS])
    s->fp32_tflops = f[F_FLOPS] / 1000;
  if (have[F_L2])
    s->l2_mb = f[F_L2];
  if (have[F_MEM])
    s->mem_gb = f[F_MEM];
  if (!have[F_FLOPS] && have[F_CORES])
    s->fp32_tflops = 2.0 * f[F_CORES] * s->sm_count * s->clock_mhz / 1e6;
  if (s->sm_count <= 0 || s->clock_mhz <= 0 || !(s->mem_bw_gbs > 0) || !(s->fp32_tflops > 0)) {
    snprintf(err, errcap, "a new GPU needs \"Num_Sm\", \"Freq\", \"Mem_Bw\" and \"SingleFLOPs\" "
                          "or \"Core_Per_SM\"");
    goto fail_alloc;
  }
  if (!(s->l2_mb > 0))
    s->l2_mb = 4;
  grape_gpu_spec_t** nl = realloc(loaded, (nloaded + 1) * sizeof(*nl));
  if (nl == NULL) {
    snprintf(err, errcap, "out of memory");
    rc = -ENOMEM;
    goto fail_alloc;
  }
  loaded = nl;
  loaded[nloaded++] = s;
  *out = s;
  grape__json_free(root);
  return 0;
fail_alloc:
  free(s);
  free(name);
fail_parse:
  grape__json_free(root);
  return rc;
}

int grape_gpu_load_json_err(const char* path, const grape_gpu_spec_t** out, char* err,
                            size_t errcap) {
  char scratch[1];
  if (err == NULL || errcap == 0) {
    err = scratch;
    errcap = sizeof(scratch);
  }
  err[0] = '\0';
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    snprintf(err, errcap, "%s", strerror(e));
    return -e;
  }
  char buf[8192];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  int bad = ferror(f) || !feof(f);  /* a device JSON is small */
  fclose(f);
  if (bad) {
    snprintf(err, errcap, "unreadable, or larger than %zu bytes", sizeof(buf) - 1);
    return -EINVAL;
  }
  buf[n] = '\0';
  return grape__gpu_parse_json(buf, out, err, errcap);
}

int grape_gpu_load_json(const char* path, const grape_gpu_spec_t** out) {
  return grape_gpu_load_json_err(path, out, NULL, 0);
}
