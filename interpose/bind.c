/* Libraries that would bind past the shim (see bind.h for the design). */
#include "bind.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "graph.h"
#include "state.h"
#include "log.h"
#include "real.h"

typedef void* (*dlopen_fn)(const char*, int);
typedef void* (*dlmopen_fn)(Lmid_t, const char*, int);

/* Read by the exported dlopen/dlmopen below before they jump: set once, in
 * the shim's constructor or by the first slow call, to libc's functions. */
__attribute__((visibility("hidden"))) void* grape__libc_dlopen;
__attribute__((visibility("hidden"))) void* grape__libc_dlmopen;

static long stat_objects, stat_slots, stat_bypasses;   /* relaxed atomics */

void grape__bind_stats(grape_bind_stats_t* out) {
  out->objects = __atomic_load_n(&stat_objects, __ATOMIC_RELAXED);
  out->slots = __atomic_load_n(&stat_slots, __ATOMIC_RELAXED);
  out->bypasses = __atomic_load_n(&stat_bypasses, __ATOMIC_RELAXED);
}

static void* libc_fn(const char* name) {
  void* p = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  return p != NULL ? p : dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
}

void grape__bind_init(void) {
  if (__atomic_load_n(&grape__libc_dlopen, __ATOMIC_RELAXED) == NULL)
    __atomic_store_n(&grape__libc_dlopen, libc_fn("dlopen"), __ATOMIC_RELAXED);
  if (__atomic_load_n(&grape__libc_dlmopen, __ATOMIC_RELAXED) == NULL)
    __atomic_store_n(&grape__libc_dlmopen, libc_fn("dlmopen"), __ATOMIC_RELAXED);
}

/* ---- The loaded objects ---- */

typedef struct object_s {
  ElfW(Addr) base;
  const char* name;
  const ElfW(Phdr)* phdr;   /* NULL for an object of another namespace (link map only) */
  ElfW(Half) phnum;
  const ElfW(Dyn)* dyn;
} object_t;

typedef struct objects_s {
  object_t* v;
  size_t n, cap;
  int failed;   /* out of memory */
} objects_t;

static int collect(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  objects_t* o = arg;
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 64;
    object_t* v = realloc(o->v, cap * sizeof(*v));
    if (v == NULL) {
      o->failed = 1;
      return 1;
    }
    o->v = v;
    o->cap = cap;
  }
  const ElfW(Dyn)* dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  o->v[o->n++] =
      (object_t){info->dlpi_addr, info->dlpi_name, info->dlpi_phdr, info->dlpi_phnum, dyn};
  return 0;
}

static int known(const objects_t* before, const object_t* x) {
  for (size_t i = 0; i < before->n; i++)
    if (before->v[i].base == x->base && before->v[i].phdr == x->phdr)
      return 1;
  return 0;
}

/* ---- Rewriting one object ---- */

/* Where the shim itself is mapped: its own definitions are the targets. */
static const void* self_base(void) {
  static const void* base;
  const void* b = __atomic_load_n(&base, __ATOMIC_RELAXED);
  if (b == NULL) {
    Dl_info info;
    if (dladdr((void*)&grape__bind_init, &info) != 0)
      b = info.dli_fbase;
    __atomic_store_n(&base, b, __ATOMIC_RELAXED);
  }
  return b;
}

/* Whether an imported name reaches CUDA or a way to look it up: the names the
 * shim may define (CUDA's entry points, dlsym, dlopen, dlmopen). */
static int routed_name(const char* n) {
  return strncmp(n, "cu", 2) == 0 || strncmp(n, "__cuda", 6) == 0 || strcmp(n, "dlsym") == 0 ||
         strcmp(n, "dlopen") == 0 || strcmp(n, "dlmopen") == 0;
}

/* The shim's definition of an imported name that the global scope would have
 * bound to the shim, else NULL. */
static void* shim_definition(const char* name) {
  if (!routed_name(name))
    return NULL;
  void* p = grape__real_dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  if (p == NULL || dladdr(p, &info) == 0 || info.dli_fbase != self_base())
    return NULL;
  return p;
}

typedef struct dyn_s {
  const char* strtab;
  const ElfW(Sym)* symtab;
  const ElfW(Rela)* rela[2];
  size_t rela_size[2];
  int rel;   /* the object uses REL records (not on x86-64) */
} dyn_t;

static uintptr_t dyn_ptr(const object_t* o, ElfW(Addr) p) {
  /* glibc relocates these entries in place where the dynamic section is
   * writable; elsewhere they are still link-time addresses. */
  return p < o->base ? o->base + p : p;
}

static int read_dynamic(const object_t* o, dyn_t* d) {
  memset(d, 0, sizeof(*d));
  const ElfW(Dyn)* dyn = o->dyn;
  if (dyn == NULL)
    return 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
      case DT_STRTAB: d->strtab = (const char*)dyn_ptr(o, dyn->d_un.d_ptr); break;
      case DT_SYMTAB: d->symtab = (const ElfW(Sym)*)dyn_ptr(o, dyn->d_un.d_ptr); break;
      case DT_JMPREL: d->rela[0] = (const ElfW(Rela)*)dyn_ptr(o, dyn->d_un.d_ptr); break;
      case DT_PLTRELSZ: d->rela_size[0] = dyn->d_un.d_val; break;
      case DT_PLTREL: d->rel |= dyn->d_un.d_val == DT_REL; break;
      case DT_RELA: d->rela[1] = (const ElfW(Rela)*)dyn_ptr(o, dyn->d_un.d_ptr); break;
      case DT_RELASZ: d->rela_size[1] = dyn->d_un.d_val; break;
      case DT_REL: d->rel = 1; break;
      default: break;
    }
  }
  return d->strtab != NULL && d->symtab != NULL;
}

#if defined(__x86_64__)
#define R_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB R_X86_64_GLOB_DAT
#define R_ABS R_X86_64_64
#elif defined(__aarch64__)
#define R_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB R_AARCH64_GLOB_DAT
#define R_ABS R_AARCH64_ABS64
#endif

/* Whether [p, p+8) lies in a segment the object may write, or in its RELRO
 * part (read-only once relocated): 1 writable, 2 RELRO, 0 neither. */
static int slot_kind(const object_t* o, uintptr_t p) {
  for (int i = 0; i < o->phnum; i++) {
    const ElfW(Phdr)* h = &o->phdr[i];
    uintptr_t lo = o->base + h->p_vaddr, hi = lo + h->p_memsz;
    if (p >= lo && p + sizeof(void*) <= hi && h->p_type == PT_GNU_RELRO)
      return 2;
  }
  for (int i = 0; i < o->phnum; i++) {
    const ElfW(Phdr)* h = &o->phdr[i];
    uintptr_t lo = o->base + h->p_vaddr, hi = lo + h->p_memsz;
    if (p >= lo && p + sizeof(void*) <= hi && h->p_type == PT_LOAD && (h->p_flags & PF_W))
      return 1;
  }
  return 0;
}

static int write_slot(const object_t* o, uintptr_t p, void* value) {
  int kind = slot_kind(o, p);
  if (kind == 0)
    return -1;
  if (kind == 2) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = p & ~(uintptr_t)(page - 1);
    if (mprotect((void*)lo, (size_t)page, PROT_READ | PROT_WRITE) != 0)
      return -1;
    __atomic_store_n((void**)p, value, __ATOMIC_RELAXED);
    mprotect((void*)lo, (size_t)page, PROT_READ);
    return 0;
  }
  __atomic_store_n((void**)p, value, __ATOMIC_RELAXED);
  return 0;
}

/* Calls fn for each relocation of d (o's) against a symbol o imports (not
 * one it defines itself, as a CUDA library does), until fn returns nonzero.
 * @return what fn returned last, or 0. */
typedef long (*import_fn)(const object_t* o, const ElfW(Rela)* r, const char* name, void* arg);
static long each_import(const object_t* o, const dyn_t* d, import_fn fn, void* arg) {
  for (int t = 0; t < 2; t++) {
    size_t count = d->rela_size[t] / sizeof(ElfW(Rela));
    for (size_t i = 0; i < count; i++) {
      const ElfW(Rela)* r = &d->rela[t][i];
      size_t sym = ELF64_R_SYM(r->r_info);
      if (sym == 0 || d->symtab[sym].st_shndx != SHN_UNDEF)
        continue;
      long rc = fn(o, r, d->strtab + d->symtab[sym].st_name, arg);
      if (rc != 0)
        return rc;
    }
  }
  return 0;
}

#ifdef R_SLOT
/* An import the global scope would have bound to the shim gets the shim's
 * definition (counted in *arg). @return 0, or -1 when it cannot be written. */
static long point_at_shim(const object_t* o, const ElfW(Rela)* r, const char* name, void* arg) {
  unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
  if (type != R_SLOT && type != R_GLOB && type != R_ABS)
    return 0;
  void* ours = shim_definition(name);
  if (ours == NULL)
    return 0;
  void* value = type == R_ABS ? (char*)ours + r->r_addend : ours;
  uintptr_t p = o->base + r->r_offset;
  if (*(void**)p == value)
    return 0;
  if (write_slot(o, p, value) != 0)
    return -1;
  ++*(long*)arg;
  return 0;
}
#endif

/* Points o's imports of CUDA entry points and of dlsym/dlopen/dlmopen at the
 * shim. @return slots rewritten (>= 0), or -1 when one could not be. */
static long rewrite(const object_t* o) {
#ifndef R_SLOT
  (void)o;
  return -1;
#else
  dyn_t d;
  if (!read_dynamic(o, &d))
    return 0;   /* no dynamic symbols: imports nothing */
  if (d.rel)
    return -1;
  long n = 0;
  return each_import(o, &d, point_at_shim, &n) != 0 ? -1 : n;
#endif
}

static long is_routed(const object_t* o, const ElfW(Rela)* r, const char* name, void* arg) {
  (void)o, (void)r, (void)arg;
  return routed_name(name);
}

/* Whether o may reach CUDA: it is a CUDA library, or imports a CUDA name or
 * a way to look one up. */
static int reaches_cuda(const object_t* o) {
  const char* base = strrchr(o->name, '/');
  base = base != NULL ? base + 1 : o->name;
  if (strncmp(base, "libcuda.so", 10) == 0 || strncmp(base, "libcudart.so", 12) == 0)
    return 1;
  dyn_t d;
  return read_dynamic(o, &d) && each_import(o, &d, is_routed, NULL) != 0;
}

static void bypass(const char* what, const char* name) {
  __atomic_add_fetch(&stat_bypasses, 1, __ATOMIC_RELAXED);
  char why[PATH_MAX + 160];
  snprintf(why, sizeof(why), "%s %s bypasses the shim", what, name);
  grape__graphs_stop(why);
}

/* A namespace of its own is never rewritten: the shim is not loaded there,
 * and its libcuda (if any) is another copy. dl_iterate_phdr lists only the
 * caller's namespace, so the handle's link map is walked. */
static void other_namespace(void* handle, const char* file) {
  struct link_map* lm = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
    bypass("in a link-map namespace of its own (dlmopen), unreadable:", file ? file : "(null)");
    return;
  }
  while (lm->l_prev != NULL)
    lm = lm->l_prev;
  for (; lm != NULL; lm = lm->l_next) {
    object_t o = {lm->l_addr, lm->l_name, NULL, 0, lm->l_ld};
    if (reaches_cuda(&o)) {
      bypass("in a link-map namespace of its own (dlmopen),",
             lm->l_name[0] != '\0' ? lm->l_name : (file ? file : "(null)"));
      return;
    }
  }
}

/* Rewrites the objects that are not in before. */
static void after_load(const objects_t* before, const char* file) {
  objects_t now = {0};
  dl_iterate_phdr(collect, &now);
  if (now.failed) {
    bypass("a library loaded while the shim was out of memory:", file ? file : "(null)");
    free(now.v);
    return;
  }
  for (size_t i = 0; i < now.n; i++) {
    const object_t* o = &now.v[i];
    if (known(before, o))
      continue;
    const char* name = o->name[0] != '\0' ? o->name : (file ? file : "(main)");
    long n = rewrite(o);
    if (n < 0) {
      bypass("deep-bound (RTLD_DEEPBIND) and not rewritable,", name);
      continue;
    }
    if (n > 0) {
      __atomic_add_fetch(&stat_objects, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&stat_slots, n, __ATOMIC_RELAXED);
      grape_log_info("%s: opened RTLD_DEEPBIND; %ld CUDA and dlsym references pointed at the shim",
                     name, n);
    }
  }
  free(now.v);
}

/* ---- The caller's search path ---- */

/* file as the loader would find it for caller, when caller's own RUNPATH or
 * RPATH decides: the shim calls libc's dlopen, which would otherwise search
 * the shim's (none). NULL: leave the name to libc. */
static char* caller_path(const char* file, const void* caller) {
  if (file == NULL || strchr(file, '/') != NULL)
    return NULL;
  Dl_info info;
  struct link_map* lm = NULL;
  if (caller == NULL || dladdr1(caller, &info, (void**)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL)
    return NULL;
  const char *strtab = NULL, *runpath = NULL, *rpath = NULL;
  ElfW(Addr) run_off = 0, r_off = 0;
  int has_run = 0, has_r = 0;
  const object_t caller_obj = {lm->l_addr, lm->l_name, NULL, 0, lm->l_ld};
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_STRTAB)
      strtab = (const char*)dyn_ptr(&caller_obj, d->d_un.d_ptr);
    else if (d->d_tag == DT_RUNPATH)
      run_off = d->d_un.d_val, has_run = 1;
    else if (d->d_tag == DT_RPATH)
      r_off = d->d_un.d_val, has_r = 1;
  }
  if (strtab == NULL || (!has_run && !has_r))
    return NULL;
  if (has_run)
    runpath = strtab + run_off;
  else
    rpath = strtab + r_off;
  /* Already loaded: libc matches the name as is. */
  dlopen_fn real = (dlopen_fn)__atomic_load_n(&grape__libc_dlopen, __ATOMIC_RELAXED);
  void* h = real(file, RTLD_LAZY | RTLD_NOLOAD);
  if (h != NULL) {
    dlclose(h);
    return NULL;
  }
  char candidate[PATH_MAX];
  if (runpath != NULL) {
    /* RUNPATH comes after LD_LIBRARY_PATH. */
    const char* llp = getenv("LD_LIBRARY_PATH");
    while (llp != NULL && *llp != '\0') {
      size_t len = strcspn(llp, ":;");
      if (len > 0 && snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)len, llp, file) <
                         (int)sizeof(candidate) &&
          access(candidate, R_OK) == 0)
        return NULL;
      llp += len + (llp[len] != '\0');
    }
  }
  const char* dirs = runpath != NULL ? runpath : rpath;
  char origin[PATH_MAX];
  const char* obj = lm->l_name[0] != '\0' ? lm->l_name : NULL;
  char exe[PATH_MAX];
  if (obj == NULL) {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
      return NULL;
    exe[n] = '\0';
    obj = exe;
  }
  snprintf(origin, sizeof(origin), "%s", obj);
  char* slash = strrchr(origin, '/');
  if (slash == NULL)
    return NULL;
  *slash = '\0';
  while (*dirs != '\0') {
    size_t len = strcspn(dirs, ":");
    const char* dir = dirs;
    int origin_len = 0;
    if (strncmp(dir, "$ORIGIN", 7) == 0)
      origin_len = 7;
    else if (strncmp(dir, "${ORIGIN}", 9) == 0)
      origin_len = 9;
    int n = origin_len ? snprintf(candidate, sizeof(candidate), "%s%.*s/%s", origin,
                                  (int)(len - (size_t)origin_len), dir + origin_len, file)
                       : snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)len, dir, file);
    if (len > 0 && n > 0 && n < (int)sizeof(candidate) && access(candidate, R_OK) == 0)
      return strdup(candidate);
    dirs += len + (dirs[len] != '\0');
  }
  return NULL;
}

/* ---- The exports ---- */

static void* load(Lmid_t lmid, const char* file, int flags, const void* caller, int m) {
  grape__bind_init();
  dlopen_fn real_open = (dlopen_fn)__atomic_load_n(&grape__libc_dlopen, __ATOMIC_RELAXED);
  dlmopen_fn real_mopen = (dlmopen_fn)__atomic_load_n(&grape__libc_dlmopen, __ATOMIC_RELAXED);
  int other_ns = m && lmid != LM_ID_BASE;
  if (!(flags & RTLD_DEEPBIND) && !other_ns)
    return m ? real_mopen(lmid, file, flags) : real_open(file, flags);
  char* path = caller_path(file, caller);
  const char* f = path != NULL ? path : file;
  objects_t before = {0};
  dl_iterate_phdr(collect, &before);
  void* h = m ? real_mopen(lmid, f, flags) : real_open(f, flags);
  if (h != NULL && grape__state != GRAPE_STATE_OFF) {
    if (other_ns)
      other_namespace(h, file);
    else if (before.failed)
      bypass("a library loaded while the shim was out of memory:", file ? file : "(null)");
    else
      after_load(&before, file);
  }
  free(before.v);
  free(path);
  return h;
}

/* Reached by a jump from dlopen/dlmopen: the return address is the program's. */
__attribute__((visibility("hidden"), noinline)) void* grape__dlopen_slow(const char* file,
                                                                         int flags) {
  return load(LM_ID_BASE, file, flags, __builtin_return_address(0), 0);
}

__attribute__((visibility("hidden"), noinline)) void* grape__dlmopen_slow(Lmid_t lmid,
                                                                          const char* file,
                                                                          int flags) {
  return load(lmid, file, flags, __builtin_return_address(0), 1);
}

/* dlopen and dlmopen: an ordinary call jumps to libc's, so glibc sees the
 * program's return address (its RUNPATH, its namespace) as without the shim.
 * Only x86-64 has the jump; elsewhere the shim exports neither (bind.h). */
#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl dlopen\n"
    ".type dlopen, @function\n"
    "dlopen:\n"
    "  testl $8, %esi\n"                       /* RTLD_DEEPBIND */
    "  jnz grape__dlopen_slow\n"
    "  movq grape__libc_dlopen(%rip), %rax\n"
    "  testq %rax, %rax\n"
    "  jz grape__dlopen_slow\n"
    "  jmp *%rax\n"
    ".size dlopen, .-dlopen\n"
    ".globl dlmopen\n"
    ".type dlmopen, @function\n"
    "dlmopen:\n"
    "  testq %rdi, %rdi\n"                     /* LM_ID_BASE is 0 */
    "  jnz grape__dlmopen_slow\n"
    "  testl $8, %edx\n"
    "  jnz grape__dlmopen_slow\n"
    "  movq grape__libc_dlmopen(%rip), %rax\n"
    "  testq %rax, %rax\n"
    "  jz grape__dlmopen_slow\n"
    "  jmp *%rax\n"
    ".size dlmopen, .-dlmopen\n");
#endif
