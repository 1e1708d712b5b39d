/* The trace at exit: walks what the shim recorded (the path table, the
 * function table, the kernel images, the allocation history) and hands it to
 * replay/'s writer (grape/trace.h), which owns the file format.
 *
 * DESIGN: everything happens once, in the destructor, never on the launch
 * path; the only cost while the program runs is the allocation history that
 * allocmap.c keeps when GRAPE_TRACE is set. Paths go in most frequent first,
 * so that a size limit keeps the paths that matter. Functions are keyed by
 * their id (the hash of the mangled name that op signatures carry); among
 * handles of one kernel (a host stub and the CUfunction fetched for it) the
 * one that knows its image and layout wins. An image is the one the device
 * loaded (the parsed set images.c keeps per registration), borrowed, not
 * copied. A parameter word is a pointer when the allocation history has an
 * interval containing it that was live when the path's parameters were
 * recorded. Kernel bodies of the simulated device are found the way the sim
 * finds them (an exported simcu_body_<name>) and named by the object that
 * holds them, so that a replaying process can load them. Any failure is
 * logged once and the program's exit goes on unchanged. */
#include "trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocmap.h"
#include "cuda_types.h"
#include "funcinfo.h"
#include "images.h"
#include "grape/cubin.h"
#include "grape/grape.h"
#include "grape/trace.h"
#include "state.h"
#include "log.h"
#include "nvtx.h"
#include "outfile.h"
#include "real.h"
#include "graph.h"
#include "timeline.h"
#include "util/grow.h"

typedef struct fentry_s {
  uint64_t id;
  const grape_func_t* f;
  uint32_t idx;                     /* in the trace, NONE until an op needs it */
  int tried;
} fentry_t;

typedef struct glue_s {
  grape_trace_t* t;
  grape_gc_path_t* paths;
  size_t npaths, cap_paths;
  fentry_t* funcs;                  /* sorted by id */
  size_t nfuncs, cap_funcs;
  grape_alloc_life_t* hist;         /* sorted by start */
  size_t nhist;
  uint64_t* maxend;                 /* maxend[j]: largest end among hist[0..j] */
  uint32_t* alloc_idx;              /* by allocation id - 1: index in the trace, or NONE */
  const void** handles;             /* every image registration, listed when first needed */
  size_t nhandles, cap_handles;
  int handles_listed;
  int oom;
  grape_trace_info_t dev;           /* device fields, asked first (image choice needs the arch) */
  char dev_name[256];
} glue_t;

/* ---- Collecting ---- */

static void take_path(const grape_gc_path_t* p, void* arg) {
  glue_t* g = arg;
  grape_gc_path_t* v = grape__grow(g->paths, &g->cap_paths, g->npaths + 1, sizeof(*p), 16);
  if (v == NULL) {
    g->oom = 1;
    return;
  }
  g->paths = v;
  g->paths[g->npaths++] = *p;
}

/* The better of two infos of one kernel: knows its image, then its layout. */
static int better(const grape_func_t* a, const grape_func_t* b) {
  int sa = (a->image != NULL) * 2 + (a->nparams >= 0), sb = (b->image != NULL) * 2 + (b->nparams >= 0);
  return sa > sb;
}

static void take_func(const grape_func_t* f, void* arg) {
  glue_t* g = arg;
  fentry_t* v = grape__grow(g->funcs, &g->cap_funcs, g->nfuncs + 1, sizeof(*g->funcs), 16);
  if (v == NULL) {
    g->oom = 1;
    return;
  }
  g->funcs = v;
  g->funcs[g->nfuncs++] = (fentry_t){f->id, f, GRAPE_TRACE_NONE, 0};
}

static int fentry_cmp(const void* a, const void* b) {
  const fentry_t* x = a;
  const fentry_t* y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorts the functions by id, keeping the best info of each id. */
static void funcs_index(glue_t* g) {
  qsort(g->funcs, g->nfuncs, sizeof(*g->funcs), fentry_cmp);
  size_t k = 0;
  for (size_t i = 0; i < g->nfuncs; i++) {
    if (k > 0 && g->funcs[k - 1].id == g->funcs[i].id) {
      if (better(g->funcs[i].f, g->funcs[k - 1].f))
        g->funcs[k - 1].f = g->funcs[i].f;
      continue;
    }
    g->funcs[k++] = g->funcs[i];
  }
  g->nfuncs = k;
}

static int life_cmp(const void* a, const void* b) {
  const grape_alloc_life_t* x = a;
  const grape_alloc_life_t* y = b;
  return x->a.start < y->a.start ? -1 : x->a.start > y->a.start;
}

/* The history, sorted by start, with running maximum ends for the search. */
static int history_index(glue_t* g) {
  int rc = grape__alloc_history(&g->hist, &g->nhist);
  if (rc == -ENOENT)
    return 0;
  if (rc)
    return rc;
  g->maxend = malloc((g->nhist + 1) * sizeof(*g->maxend));
  g->alloc_idx = malloc((g->nhist + 1) * sizeof(*g->alloc_idx));
  if (g->maxend == NULL || g->alloc_idx == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < g->nhist; i++)
    g->alloc_idx[i] = GRAPE_TRACE_NONE;
  qsort(g->hist, g->nhist, sizeof(*g->hist), life_cmp);
  uint64_t m = 0;
  for (size_t i = 0; i < g->nhist; i++) {
    uint64_t end = g->hist[i].a.start + g->hist[i].a.size;
    m = end > m ? end : m;
    g->maxend[i] = m;
  }
  return 0;
}

/* The interval that held addr at epoch, or NULL. */
static const grape_alloc_life_t* find_alloc(const glue_t* g, uint64_t addr, uint64_t epoch) {
  size_t lo = 0, hi = g->nhist;
  while (lo < hi) {   /* first interval starting after addr */
    size_t mid = lo + (hi - lo) / 2;
    if (g->hist[mid].a.start <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t j = lo; j-- > 0 && g->maxend[j] > addr;) {
    const grape_alloc_life_t* h = &g->hist[j];
    if (addr - h->a.start < h->a.size && h->born <= epoch && (h->died == 0 || h->died > epoch))
      return h;
  }
  return NULL;
}

/* ---- Functions and images ---- */

static void take_handle(const void* h, void* arg) {
  glue_t* g = arg;
  const void** v = grape__grow(g->handles, &g->cap_handles, g->nhandles + 1, sizeof(*g->handles), 16);
  if (v != NULL) {
    g->handles = v;
    g->handles[g->nhandles++] = h;
  }
}

/* The image of fb holding kernel name: the one a device of SM version arch
 * loads (grape_fatbin_select) when it holds the kernel, else an ELF, else
 * PTX. Only that image is parsed when the arch was known at registration;
 * when it was not (the driver could not be asked), fb holds every entry. */
static const grape_image_t* find_in(const grape_fatbin_t* fb, const char* name, int arch,
                                    const grape_kernel_t** k) {
  if (fb == NULL)
    return NULL;
  const grape_image_t* sel = arch > 0 ? grape_fatbin_select(fb, arch) : NULL;
  if (sel != NULL && sel->data != NULL && (*k = grape_image_find_kernel(sel, name)) != NULL)
    return sel;
  const grape_image_t* best = NULL;
  for (size_t i = 0; i < grape_fatbin_count(fb); i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    if (img->data == NULL || (img->kind != GRAPE_IMAGE_ELF && img->kind != GRAPE_IMAGE_PTX))
      continue;
    const grape_kernel_t* kk = grape_image_find_kernel(img, name);
    if (kk != NULL && (best == NULL || (best->kind != GRAPE_IMAGE_ELF && img->kind == GRAPE_IMAGE_ELF))) {
      best = img;
      *k = kk;
    }
  }
  return best;
}

/* The loaded image holding f: its own registration first, else any. */
static const grape_image_t* image_of(glue_t* g, const grape_func_t* f, const grape_kernel_t** k) {
  int arch = (int)(g->dev.cc_major * 10 + g->dev.cc_minor);
  const grape_image_t* img = f->image ? find_in(grape__image_get(f->image), f->name, arch, k) : NULL;
  if (img != NULL)
    return img;
  if (!g->handles_listed) {
    grape__image_each(take_handle, g);
    g->handles_listed = 1;
  }
  for (size_t i = 0; i < g->nhandles && img == NULL; i++)
    if (g->handles[i] != f->image)
      img = find_in(grape__image_get(g->handles[i]), f->name, arch, k);
  return img;
}

/* The object exporting name's CPU body for the simulated device, into out. */
static void bodies_of(const char* name, char* out, size_t cap) {
  char sym[1100];
  out[0] = '\0';
  if (snprintf(sym, sizeof(sym), "simcu_body_%s", name) >= (int)sizeof(sym))
    return;
  void* p = grape__real_dlsym(RTLD_DEFAULT, sym);
  Dl_info di;
  if (p == NULL || dladdr(p, &di) == 0 || di.dli_fname == NULL)
    return;
  if (realpath(di.dli_fname, out) == NULL || strlen(out) >= cap)
    snprintf(out, cap, "%s", di.dli_fname);
}

/* The trace index of the function with signature id, added on first use. */
static uint32_t func_index(glue_t* g, uint64_t id) {
  fentry_t key = {id, NULL, 0, 0};
  fentry_t* e = g->nfuncs ? bsearch(&key, g->funcs, g->nfuncs, sizeof(key), fentry_cmp) : NULL;
  if (e == NULL || e->tried)
    return e ? e->idx : GRAPE_TRACE_NONE;
  e->tried = 1;
  const grape_func_t* f = e->f;
  const char* name = f->name ? f->name : "";
  const grape_kernel_t* k = NULL;
  const grape_image_t* img = name[0] ? image_of(g, f, &k) : NULL;
  grape_trace_func_t tf = {name, f->id, GRAPE_TRACE_NONE, -1, 0, -1, 0, GRAPE_TRACE_NONE, NULL, ""};
  if (img != NULL &&
      grape_trace_add_image(g->t, img->kind == GRAPE_IMAGE_ELF ? GRAPE_TRACE_IMAGE_ELF
                                                              : GRAPE_TRACE_IMAGE_PTX,
                            (uint32_t)img->arch, img->data, img->size, GRAPE_TRACE_BORROW,
                            &tf.image) != 0)
    tf.image = GRAPE_TRACE_NONE;
  grape_trace_param_t stackp[64];
  grape_trace_param_t* params = stackp;
  if (f->nparams >= 0) {
    if (f->nparams > 64 && (params = malloc((size_t)f->nparams * sizeof(*params))) == NULL)
      return GRAPE_TRACE_NONE;
    for (int i = 0; i < f->nparams; i++)
      params[i] = (grape_trace_param_t){f->params[i].offset, f->params[i].size};
    tf.nparams = (uint32_t)f->nparams;
    tf.param_bytes = f->param_bytes;
  } else if (k != NULL) {
    if (k->nparams > 64 && (params = malloc(k->nparams * sizeof(*params))) == NULL)
      return GRAPE_TRACE_NONE;
    for (uint32_t i = 0; i < k->nparams; i++)
      params[i] = (grape_trace_param_t){k->params[i].offset, k->params[i].size};
    tf.nparams = k->nparams;
    tf.param_bytes = k->param_bytes;
  }
  tf.params = params;
  if (k != NULL) {
    tf.registers = k->registers;
    tf.static_smem = k->shared_bytes;
    tf.max_threads = k->max_threads;
  }
  char bodies[PATH_MAX];
  if (name[0])
    bodies_of(name, bodies, sizeof(bodies));
  else
    bodies[0] = '\0';
  tf.bodies = bodies;
  if (grape_trace_add_func(g->t, &tf, &e->idx) != 0)
    e->idx = GRAPE_TRACE_NONE;
  if (params != stackp)
    free(params);
  return e->idx;
}

/* ---- Paths ---- */

/* The trace index of the allocation behind a history entry, added on first use. */
static uint32_t alloc_index(glue_t* g, const grape_alloc_life_t* h) {
  uint64_t id = h->a.id;
  if (id == 0 || id > g->nhist)
    return GRAPE_TRACE_NONE;
  if (g->alloc_idx[id - 1] == GRAPE_TRACE_NONE) {
    grape_trace_alloc_t a = {id, h->a.start, h->a.size, (uint32_t)h->a.kind};
    if (grape_trace_add_alloc(g->t, &a, &g->alloc_idx[id - 1]) != 0)
      g->alloc_idx[id - 1] = GRAPE_TRACE_NONE;
  }
  return g->alloc_idx[id - 1];
}

typedef struct scratch_s {
  grape_trace_op_t* ops;
  size_t cap_ops;
  grape_trace_ptr_t* ptrs;
  size_t cap_ptrs;
} scratch_t;

/* Adds path v. @return 0, or -ENOMEM. */
static int add_path(glue_t* g, const grape_gc_path_t* v, scratch_t* s) {
  size_t nptr = 0;
  /* Every op's words are scanned (a memset's or copy's addresses too), so
   * every op's words count: counting kernels' only overran the buffer on a
   * long path of memsets and copies into known allocations. */
  for (uint32_t i = 0; i < v->nops; i++)
    nptr += v->keys[i].param_bytes / 8;
  if (v->nops > s->cap_ops) {
    grape_trace_op_t* ops = grape__grow(s->ops, &s->cap_ops, v->nops, sizeof(*ops), 16);
    if (ops == NULL)
      return -ENOMEM;
    s->ops = ops;
  }
  if (nptr > s->cap_ptrs) {
    grape_trace_ptr_t* ptrs = grape__grow(s->ptrs, &s->cap_ptrs, nptr, sizeof(*ptrs), 16);
    if (ptrs == NULL)
      return -ENOMEM;
    s->ptrs = ptrs;
  }
  grape_trace_ptr_t* w = s->ptrs;
  for (uint32_t i = 0; i < v->nops; i++) {
    const grape_op_key_t* key = &v->keys[i];
    const grape_op_dims_t* dims = &v->dims[i];
    grape_trace_op_t* op = &s->ops[i];
    memset(op, 0, sizeof(*op));
    op->kind = key->kind;
    op->sig_func = key->func;
    memcpy(op->grid, dims->grid, sizeof(op->grid));
    memcpy(op->block, dims->block, sizeof(op->block));
    if (key->kind != GRAPE_OP_KERNEL) {
      /* The format's memset/copy: byte count in sig_func, a memset's element
       * width in grid[0] (the shim keeps them in dims and key.func). */
      op->sig_func = (uint64_t)dims->grid[0] | (uint64_t)dims->grid[1] << 32;
      op->grid[0] = key->kind == GRAPE_OP_MEMSET ? (uint32_t)key->func : 1;
      op->grid[1] = 0;
    }
    op->shmem = dims->shmem;
    op->flags = key->flags;
    op->attrs_hash = key->attrs;
    op->func = key->kind == GRAPE_OP_KERNEL ? func_index(g, key->func) : GRAPE_TRACE_NONE;
    op->param_bytes = key->param_bytes;
    op->attr_bytes = key->attrs_bytes;
    op->params = v->params ? v->params + v->poff[i] : NULL;
    op->attrs = op->params ? op->params + op->param_bytes : NULL;
    op->ptrs = w;
    /* Pointer words of kernels only: a memset's or copy's are replayed on
     * scratch buffers (and nptr has no room for them). */
    for (uint32_t off = 0; key->kind == GRAPE_OP_KERNEL && g->nhist && off + 8 <= op->param_bytes;
         off += 8) {
      uint64_t word;
      memcpy(&word, op->params + off, 8);
      const grape_alloc_life_t* h = word ? find_alloc(g, word, v->stamp) : NULL;
      uint32_t a = h ? alloc_index(g, h) : GRAPE_TRACE_NONE;
      if (a == GRAPE_TRACE_NONE)
        continue;
      *w++ = (grape_trace_ptr_t){off, a, word - h->a.start};
      op->nptrs++;
    }
  }
  /* Graph mode's outcome for the path's key. */
  grape_trace_graph_t gr = {v->key_hits, (uint32_t)v->key_built, v->way == GRAPE_GC_WAY_GRAPH,
                            v->why};
  grape_trace_path_t p = {v->fp, v->count, v->nops, s->ops,
                          grape__mode == GRAPE_MODE_GRAPH ? &gr : NULL, NULL};
  uint32_t idx;
  return grape_trace_add_path(g->t, &p, &idx) == -ENOMEM ? -ENOMEM : 0;
}

/* ---- The timeline (GRAPE_TIMELINE) ---- */

typedef struct tl_glue_s {
  glue_t* g;
  grape_trace_tl_op_t* ops;
  size_t n, cap;
  uint32_t api_of_row[GRAPE_HOOK_COUNT];   /* 1 + the row's index in apis; 0: not yet named */
  const char* apis[GRAPE_HOOK_COUNT];
  uint32_t napis;
} tl_glue_t;

static void count_tl(const grape_trace_tl_op_t* op, const grape_func_t* f, void* arg) {
  (void)op, (void)f;
  ((tl_glue_t*)arg)->cap++;
}

/* A record with its kernel named the way the paths name it: the function's
 * index in the trace, and its id (known by exit, if ever). */
static void take_tl(const grape_trace_tl_op_t* op, const grape_func_t* f, void* arg) {
  tl_glue_t* tg = arg;
  if (tg->n == tg->cap)
    return;
  grape_trace_tl_op_t* o = &tg->ops[tg->n++];
  *o = *op;
  o->func = GRAPE_TRACE_NONE;
  if (op->kind == GRAPE_TRACE_OP_KERNEL && f != NULL) {
    o->what = f->id;
    o->func = func_index(tg->g, f->id);
  }
  /* The hook row that recorded it (1 + row) becomes its entry point's name. */
  o->api = 0;
  if (op->api >= 1 && op->api <= GRAPE_HOOK_COUNT) {
    uint32_t row = op->api - 1;
    if (tg->api_of_row[row] == 0) {
      tg->apis[tg->napis++] = grape__hooks[row].name;
      tg->api_of_row[row] = tg->napis;
    }
    o->api = tg->api_of_row[row];
  }
}

/* Sorts ops by host start, keeping the slot order of equal starts (a call
 * and the submission it made inside itself can start at one simulated
 * instant): a bottom-up merge sort through tmp. */
static void tl_sort(grape_trace_tl_op_t* ops, grape_trace_tl_op_t* tmp, size_t n) {
  grape_trace_tl_op_t *a = ops, *b = tmp;
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        b[k++] = a[j].host_start < a[i].host_start ? a[j++] : a[i++];
      while (i < mid)
        b[k++] = a[i++];
      while (j < hi)
        b[k++] = a[j++];
    }
    grape_trace_tl_op_t* t = a;
    a = b;
    b = t;
  }
  if (a != ops)
    memcpy(ops, a, n * sizeof(*ops));
}

/* The timeline's records, by host start. @return 0 or -ENOMEM. */
static int add_timeline(glue_t* g) {
  if (!__atomic_load_n(&grape__timeline_on, __ATOMIC_RELAXED))
    return 0;
  grape__timeline_close();
  tl_glue_t* tg = calloc(1, sizeof(*tg));   /* (its name tables are too big for the stack) */
  if (tg == NULL)
    return -ENOMEM;
  tg->g = g;
  grape__timeline_each(count_tl, tg);
  tg->ops = malloc((tg->cap + 1) * sizeof(*tg->ops));
  grape_trace_tl_op_t* tmp = malloc((tg->cap + 1) * sizeof(*tmp));
  if (tg->ops == NULL || tmp == NULL) {
    free(tg->ops);
    free(tmp);
    free(tg);
    return -ENOMEM;
  }
  grape__timeline_each(take_tl, tg);
  tl_sort(tg->ops, tmp, tg->n);   /* across threads, slots are claimed in no clock's order */
  free(tmp);
  grape_trace_timeline_t tl;
  grape__timeline_meta(&tl.dropped, &tl.clock, &tl.origin_ns);
  tl.count = (uint32_t)tg->n;
  tl.ops = tg->ops;
  tl.napis = tg->napis;
  tl.apis = tg->apis;
  int rc = grape_trace_set_timeline(g->t, &tl);
  if (rc == -EINVAL)
    grape_log_warn("GRAPE_TIMELINE: a record was inconsistent; no timeline in the trace");
  grape_trace_nvtx_t nv;
  if (rc == 0 && grape__nvtx_trace(&nv) && (rc = grape_trace_set_nvtx(g->t, &nv)) == -EINVAL) {
    grape_log_warn("GRAPE_TIMELINE: an NVTX record was inconsistent; no NVTX ranges in the trace");
    grape_trace_set_nvtx(g->t, NULL);
    rc = 0;
  }
  free(tg->ops);
  free(tg);
  if (tl.dropped > 0)
    grape_log_warn("GRAPE_TIMELINE: %llu calls left out past GRAPE_TIMELINE_MAX_MB",
                   (unsigned long long)tl.dropped);
  return rc == -ENOMEM ? rc : 0;
}

/* ---- Header ---- */

/* Device name, compute capability and driver version from the driver, when
 * it is loaded (it is never loaded here). The current context's device, else
 * device 0: at exit the runtime may already have released its context. */
static void device_info(grape_trace_info_t* in, char* name, size_t cap) {
  typedef CUresult (*ctx_dev_fn)(CUdevice*);
  typedef CUresult (*dev_get_fn)(CUdevice*, int);
  typedef CUresult (*name_fn)(char*, int, CUdevice);
  typedef CUresult (*attr_fn)(int*, CUdevice_attribute, CUdevice);
  typedef CUresult (*ver_fn)(int*);
  ctx_dev_fn ctx_dev = (ctx_dev_fn)grape__real_driver("cuCtxGetDevice");
  dev_get_fn dev_get = (dev_get_fn)grape__real_driver("cuDeviceGet");
  name_fn get_name = (name_fn)grape__real_driver("cuDeviceGetName");
  attr_fn attr = (attr_fn)grape__real_driver("cuDeviceGetAttribute");
  ver_fn ver = (ver_fn)grape__real_driver("cuDriverGetVersion");
  CUdevice dev;
  int major = 0, minor = 0, v = 0;
  name[0] = '\0';
  GRAPE_NO_REENTRY({
    if (ver != NULL && ver(&v) == CUDA_SUCCESS)
      in->driver_version = v;
    if ((ctx_dev != NULL && ctx_dev(&dev) == CUDA_SUCCESS) ||
        (dev_get != NULL && dev_get(&dev, 0) == CUDA_SUCCESS)) {
      if (get_name != NULL && get_name(name, (int)cap, dev) != CUDA_SUCCESS)
        name[0] = '\0';
      if (attr != NULL && attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
          attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS) {
        in->cc_major = (uint32_t)major;
        in->cc_minor = (uint32_t)minor;
      }
    }
  });
}

/* The trace's header: who wrote it, when, on which device, and what the
 * path table could not keep. */
static int fill_info(glue_t* g, long rank) {
  char ver[32], prog[PATH_MAX] = "";
  unsigned v = grape_version();
  snprintf(ver, sizeof(ver), "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
  grape_trace_info_t in = g->dev;
  ssize_t n = readlink("/proc/self/exe", prog, sizeof(prog) - 1);
  prog[n > 0 ? n : 0] = '\0';
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  grape_gc_stats_t st = {0};
  grape_gc_t* cache = grape__gc_peek();
  if (cache != NULL)
    grape_gc_stats(cache, &st);
  in.grape_version = ver;
  in.device_name = g->dev_name;
  in.program = prog;
  in.created_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  in.pid = (int64_t)getpid();
  in.rank = (int32_t)rank;
  in.regions = st.regions;
  in.ops = st.ops;
  /* Paths the table could not keep or the trace could not take (out of memory). */
  size_t added = grape_trace_path_count(g->t);
  in.paths_omitted = st.paths > added ? st.paths - added : 0;
  return grape_trace_set_info(g->t, &in);
}

/* ---- Writing ---- */

static void glue_free(glue_t* g) {
  grape_trace_free(g->t);
  free(g->paths);
  free(g->funcs);
  free(g->hist);
  free(g->maxend);
  free(g->alloc_idx);
  free(g->handles);
}

static char written[4200];   /* the file the trace went to, for the report */

const char* grape__trace_written(void) {
  return written[0] ? written : NULL;
}

int grape__trace_write(void) {
  const char* pattern = grape__option_str(grape_option_trace);
  if (pattern == NULL || *pattern == '\0' || grape__mode == GRAPE_MODE_OFF)
    return 0;
  long rank = grape__process_rank();
  if (rank < 0)
    rank = 0;   /* a trace's rank is a number: 0 without a launcher */
  char path[4200], stage[4300], err[4400];
  if (grape__option_path(pattern, path, sizeof(path)) != 0) {
    grape_log_warn("GRAPE_TRACE=%s: the name is too long; no trace", pattern);
    return -ENAMETOOLONG;
  }
  glue_t g;
  memset(&g, 0, sizeof(g));
  scratch_t s = {0};
  int rc = grape_trace_new(&g.t);
  if (rc == 0) {
    grape_gc_t* cache = grape__gc_peek();
    if (cache != NULL)
      grape_gc_each_path(cache, take_path, &g);
    grape__func_each(take_func, &g);
    rc = g.oom ? -ENOMEM : history_index(&g);
  }
  if (rc == 0 && g.npaths == 0) {
    /* A process that ran no CUDA work (a launcher, a forked helper) leaves
     * no empty trace behind. */
    grape_log_info("no CUDA work recorded: no trace written to %s", path);
    glue_free(&g);
    return 0;
  }
  if (rc == 0) {
    device_info(&g.dev, g.dev_name, sizeof(g.dev_name));
    funcs_index(&g);
    qsort(g.paths, g.npaths, sizeof(*g.paths), grape_gc_path_order);   /* most frequent first */
    for (size_t i = 0; i < g.npaths && rc == 0; i++)
      rc = add_path(&g, &g.paths[i], &s);
  }
  if (rc == 0)
    rc = add_timeline(&g);
  if (rc == 0)
    rc = fill_info(&g, rank);
  free(s.ops);
  free(s.ptrs);
  if (rc != 0) {
    grape_log_warn("out of memory while collecting the trace: no trace written to %s", path);
    glue_free(&g);
    return rc;
  }
  long max_mb = grape__option_get(grape_option_trace_max_mb);
  grape_trace_save_stats_t st;
  /* Saved under a name of this process's own, then put in place without
   * replacing a trace of another process or run (outfile.c). */
  snprintf(stage, sizeof(stage), "%s.part%ld", path, (long)getpid());
  rc = grape_trace_save(g.t, stage, max_mb > 0 ? (uint64_t)max_mb << 20 : 0, &st, err, sizeof(err));
  if (rc == 0 && (rc = grape__outfile_place("GRAPE_TRACE", stage, path, written, sizeof(written))) != 0)
    unlink(stage);
  if (rc != 0)   /* named by the user's file, not by the temporary one */
    snprintf(err, sizeof(err), "%s: %s", path, strerror(-rc));
  if (rc == 0)
    memcpy(path, written, sizeof(written));
  if (rc != 0)
    grape_log_warn("no trace written: %s", err);
  else if (st.paths_omitted > 0)
    grape_log_warn("trace %s: %llu of %zu paths left out to stay within GRAPE_TRACE_MAX_MB=%ld",
                   path, (unsigned long long)st.paths_omitted, g.npaths, max_mb);
  else
    grape_log_info("trace written to %s: %llu bytes, %llu paths, %llu images", path,
                   (unsigned long long)st.bytes, (unsigned long long)st.paths_written,
                   (unsigned long long)st.images_written);
  glue_free(&g);
  return rc;
}
