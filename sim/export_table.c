/* export_table.c: cuGetExportTable: the sim's private table (simcu_private.h:
 * host work, clocks, statistics), and the one line that names each library
 * whose NVIDIA runtime asks for the driver's private tables.
 *
 * DESIGN: the private table sits above what it gathers (the host clocks of
 * cost.c, the lower bound of bound.c, the statistics of kstats.c, the streams'
 * end): those files know nothing of it.
 *
 * cuGetExportTable hands NVIDIA's closed runtime (libcudart.so of a toolkit
 * or a wheel, and the copy linked statically into cuDNN, cuSOLVER, cuFFT,
 * cuSPARSE, NCCL and CuPy) the driver's private interfaces, such as
 * 6bd5fb6c-... "CUDART_INTERFACE". The sim has only its own private table
 * (SIMCU_PRIVATE_UUID, cost.h: the sim's runtime and libsimblas charge
 * simulated host work through it), checked first; such a runtime cannot work
 * on it. Every other id gets CUDA_ERROR_NO_DEVICE, which that runtime turns
 * into cudaErrorNoDevice: the program falls back exactly as on a machine
 * without a GPU (torch.cuda.is_available() is False) instead of failing with
 * "operation not supported". cuInit and cuDeviceGetCount keep answering one
 * device: that runtime asks for its tables right after cuInit, before it
 * counts devices, so the table alone decides its answer, and the driver's own
 * answers stay the same for the whole process (driver-API code in it can
 * still use the simulated device).
 *
 * A statically linked runtime has no file of its own, so the line names the
 * object that called: the first frame of the call stack outside the sim and
 * outside any interposer (an object that itself defines cuGetExportTable,
 * such as libgrape.so, whose hook forwards the call). Each such object is
 * named once; a caller the stack cannot show gets the generic line once.
 */
#include "internal.h"
#include "cost.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

enum { STACK_FRAMES = 32, NAMED_MAX = 64 };

static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;
static const void* named[NAMED_MAX];   /* load bases of the objects already named */
static int named_n;
static int generic_said;

/* Whether the object loaded at base defines cuGetExportTable itself: the sim
 * or an interposer that forwards the call, never the runtime that asks. */
static int defines_export_table(const char* file, const void* base) {
  void* h = dlopen(file != NULL && file[0] != '\0' ? file : NULL, RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL)
    return 0;
  void* sym = dlsym(h, "cuGetExportTable");
  Dl_info si;
  int own = sym != NULL && dladdr(sym, &si) != 0 && si.dli_fbase == base;
  dlclose(h);
  return own;
}

/* The object whose code asked for the table: its load base and file. */
static int asking_object(const void** base, const char** file) {
  void* frames[STACK_FRAMES];
  int n = backtrace(frames, STACK_FRAMES);
  Dl_info self;
  if (dladdr((void*)&asking_object, &self) == 0)
    return 0;
  int in_sim = 0;   /* frames before the sim's own are backtrace's (libasan intercepts it) */
  for (int i = 0; i < n; i++) {
    Dl_info fi;
    /* A return address may sit one past its call: look just before it. */
    if (dladdr((char*)frames[i] - 1, &fi) == 0)
      continue;
    if (fi.dli_fbase == self.dli_fbase) {
      in_sim = 1;
      continue;
    }
    if (!in_sim)
      continue;
    if (defines_export_table(fi.dli_fname, fi.dli_fbase))
      continue;
    *base = fi.dli_fbase;
    *file = fi.dli_fname != NULL && fi.dli_fname[0] != '\0' ? fi.dli_fname : "the program";
    return 1;
  }
  return 0;
}

/* Says once per asking object (or once in all, when none is found) why its
 * CUDA calls find no device. */
static void say_no_device(void) {
  const void* base = NULL;
  const char* file = NULL;
  int found = asking_object(&base, &file);
  pthread_mutex_lock(&named_lock);
  int say = 0;
  if (found) {
    say = 1;
    for (int i = 0; i < named_n; i++)
      if (named[i] == base)
        say = 0;
    if (say && named_n < NAMED_MAX)
      named[named_n++] = base;
  } else if (!generic_said) {
    say = generic_said = 1;
  }
  pthread_mutex_unlock(&named_lock);
  if (!say)
    return;
  char path[PATH_MAX];   /* torch/lib/../../nvidia/... as the loader found it, made plain */
  if (found && realpath(file, path) != NULL)
    file = path;
  grape__sim_logf("%s%s NVIDIA's CUDA runtime (its own copy, linked statically, or NVIDIA's "
                  "libcudart), which needs the driver's private export tables: the simulated "
                  "device has none, so its CUDA calls find no device (cudaErrorNoDevice). Such "
                  "a library needs a real GPU; the sim runs programs against its own "
                  "libcudart.so.13, and driver-API programs (sim/README.md).",
                  found ? file : "", found ? " carries" : "This program uses");
}

/* ---- The sim's private table (simcu_private.h) ---- */

static void host_work(int kind) {
  uint64_t ns = grape__sim_host_work(kind);
  if (kind == SIMCU_WORK_OP)
    grape__sim_bound_host(ns);   /* the framework's side of the lower bound (bound.c) */
}

/* The kernels, memory operations and clocks, as one JSON object. */
static char* stats_json(void) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (f == NULL)
    return NULL;
  fprintf(f, "{\"end_ns\":%llu,\"host_ns\":%llu,\"kernels\":",
          (unsigned long long)grape__sim_end_ns(), (unsigned long long)grape__sim_host_total());
  grape__sim_kstat_write(f);
  fputs(",\"memops\":", f);
  grape__sim_mstat_write(f);
  fputs("}", f);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

static const simcu_private_t private_table = {
  sizeof(simcu_private_t), host_work, grape__sim_host_now, grape__sim_end_ns,
  grape__sim_host_handoff, stats_json, grape__sim_stats_gate,
};

static int private_table_of(const CUuuid* id, const void** table) {
  static const unsigned char want[16] = SIMCU_PRIVATE_UUID;
  if (id == NULL || table == NULL || memcmp(id->bytes, want, sizeof(want)) != 0)
    return 0;
  *table = &private_table;
  return 1;
}

SIM_EXPORT CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  SIM_COUNT(cuGetExportTable);
  if (private_table_of(id, table))   /* the sim's own table */
    return CUDA_SUCCESS;
  if (table != NULL)
    *table = NULL;
  say_no_device();
  return CUDA_ERROR_NO_DEVICE;
}
