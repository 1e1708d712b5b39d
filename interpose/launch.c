/* The launch path shared by every route (see launch.h), and async memsets and
 * device-to-device copies.
 *
 * DESIGN: a launch that reaches the driver is recorded after the real launch
 * succeeded, so a failed launch is neither counted nor recorded, and the
 * report's launches equal the kernels the device ran. A held launch is
 * recorded instead of submitted (graph mode, launch.h). The only shared
 * writes are the stream's own region under its lock; counters are per thread. */
#include "launch.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "graphcache/fingerprint.h"
#include "grape/report.h"
#include "state.h"
#include "options.h"

#define ROUTE_NAME(r) #r,
static const char* const route_names[GRAPE_ROUTE_COUNT] = {GRAPE_REPORT_ROUTES(ROUTE_NAME)};

/* GRAPE_LOG=debug: one line per launch with its captured parameter bytes
 * (the first 96), which the integration tests compare with what was launched. */
void grape__log_launch(grape_route_t route, const grape_func_t* f, const grape_launch_t* l,
                       const uint8_t* p, size_t n) {
  char hex[2 * 96 + 1];
  static const char digits[] = "0123456789abcdef";
  size_t k = n < 96 ? n : 96;
  for (size_t i = 0; i < k; i++) {
    hex[2 * i] = digits[p[i] >> 4];
    hex[2 * i + 1] = digits[p[i] & 15];
  }
  hex[2 * k] = '\0';
  grape_log_debug("launch %s route=%s grid=%u,%u,%u block=%u,%u,%u shmem=%u stream=%p layout=%s params=%s",
                  f && f->name ? f->name : "(unnamed)", route_names[route], l->grid[0], l->grid[1],
                  l->grid[2], l->block[0], l->block[1], l->block[2], l->shmem, l->stream,
                  f ? f->layout_source : "none", hex);
}

/* Bytes of an attribute's value that its id uses (cuda.h's
 * CUlaunchAttributeValue); an id not listed keeps all 64. */
static size_t attr_value_bytes(CUlaunchAttributeID id) {
  const CUlaunchAttributeValue* v = NULL;
  switch (id) {
  case CU_LAUNCH_ATTRIBUTE_IGNORE: return 0;
  case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    return offsetof(CUaccessPolicyWindow, missProp) + sizeof(v->accessPolicyWindow.missProp);
  case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: return sizeof(v->cooperative);
  case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY: return sizeof(v->syncPolicy);
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: return sizeof(v->clusterDim);
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    return sizeof(v->clusterSchedulingPolicyPreference);
  case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    return sizeof(v->programmaticStreamSerializationAllowed);
  case CU_LAUNCH_ATTRIBUTE_PRIORITY: return sizeof(v->priority);
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: return sizeof(v->memSyncDomainMap);
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: return sizeof(v->memSyncDomain);
  case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION: return sizeof(v->preferredClusterDim);
  case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return sizeof(v->sharedMemCarveout);
  default: return sizeof(*v);
  }
}

void grape__attrs_canon(void* dst, const CUlaunchAttribute* src, size_t count) {
  for (size_t i = 0; i < count; i++) {
    CUlaunchAttribute a;
    memset(&a, 0, sizeof(a));
    a.id = src[i].id;
    memcpy(&a.value, &src[i].value, attr_value_bytes(src[i].id));
    memcpy((uint8_t*)dst + i * sizeof(a), &a, sizeof(a));
  }
}

long grape__chunk;

long grape__chunk_slow(void) {
  long c = grape__option_get(grape_option_chunk);
  if (c <= 0)
    c = 1;
  __atomic_store_n(&grape__chunk, c, __ATOMIC_RELAXED);
  return c;
}

int grape__room_slow(grape_stream_t* s, size_t max_bytes) {
  if (grape__chunk_done(s)) {
    grape__chunk_phase_note(s);
    grape__end_locked(s);
  }
  if (grape__region_reserve(&s->region, max_bytes) != 0) {
    spin_unlock(&s->lock);
    grape_log_warn_once("out of memory while recording a region; ops go unrecorded");
    return -ENOMEM;
  }
  return 0;
}

void grape__held_chunk_end(grape_stream_t* s) {
  grape__chunk_phase_note(s);
  grape__end_locked(s);
}

void grape__held_cut(grape_stream_t* s) {
  grape__cut_locked(s);
}

void grape__diverge(grape_stream_t* s, grape_gc_cause_t cause) {
  grape__flush_held_locked(s, cause);
}

const grape_gc_node_t* grape__hold_walk(grape_stream_t* s, grape_func_t* f,
                                        const grape_launch_t* l, int extra_form, uint8_t* dst,
                                        size_t room, uint32_t stamp, size_t* n) {
  grape_region_t* r = &s->region;
  grape_op_dims_t d = grape__launch_dims(l);
  /* (A cooperative launch is a barrier: it never gets here.) */
  int eligible = f != NULL && f->drv != NULL && (extra_form || f->nparams >= 0) &&
                 grape__attrs_node_safe(l);
  if (__builtin_expect(!eligible || !grape__launch_fits(f, l->grid, l->block, l->shmem), 0)) {
    grape__diverge(s, GRAPE_GC_INVALID_LAUNCH);
    return NULL;
  }
  grape_op_key_t k;
  *n = grape__launch_params(f, l, extra_form, dst, room);
  grape__launch_key(f, l->fn, (uint32_t)*n, extra_form ? GRAPE_SIG_EXTRA : 0, &k);
  grape__launch_attrs(l, dst, *n, room, &k);
  const grape_gc_node_t* nx = grape_gc_step(r->cursor.node, &k);
  if (nx == NULL) {
    grape__diverge(s, GRAPE_GC_DIVERGENCE);
    return NULL;
  }
  grape__record_op(r, &k, &d, f->drv, *n + k.attrs_bytes);
  grape__region_mark_held(r, r->ops.n - 1, nx, f, l->fn, stamp);
  return nx;
}

int grape__barrier_begin(grape_stream_t* s, size_t room) {
  grape__end_locked(s);   /* gives the buffers back: room is reserved again */
  return grape__room_slow(s, room);
}

void grape__barrier_end(grape_stream_t* s, int cooperative) {
  grape_region_t* r = &s->region;
  r->ops.grp[r->ops.n - 1] = GRAPE_GRP_SPECIAL + (cooperative ? GRAPE_WHY_COOPERATIVE : GRAPE_WHY_COLLECTIVE);
  r->ops.fns[r->ops.n - 1] = NULL;   /* never a graph node */
  grape__end_locked(s);
}

/* ---- Async memsets and device-to-device copies ---- */

static void memop_sig(const grape_memop_t* m, grape_op_key_t* k, grape_op_dims_t* d) {
  uint64_t bytes = m->kind == GRAPE_OP_MEMSET ? m->p.set.count * m->p.set.esize : m->p.cpy.bytes;
  *k = (grape_op_key_t){.kind = (uint32_t)m->kind,
                        .param_bytes = (uint32_t)sizeof(grape_memset_params_t),
                        .func = m->kind == GRAPE_OP_MEMSET ? m->p.set.esize : 0,
                        .flags = m->flags};
  _Static_assert(sizeof(grape_memset_params_t) == sizeof(grape_memcpy_params_t),
                 "memsets and copies share one parameter block size");
  *d = (grape_op_dims_t){{(uint32_t)bytes, (uint32_t)(bytes >> 32), 0}, {0, 0, 0}, 0, 0};
}

/* True when [addr, addr + n) lies inside one allocation the shim knows,
 * which *a then is. */
static int range_in(uint64_t addr, uint64_t n, grape_alloc_t* a) {
  return grape__alloc_find(addr, a) == 0 && n <= a->start + a->size - addr;
}

static int range_known(uint64_t addr, uint64_t n) {
  grape_alloc_t a;
  return range_in(addr, n, &a);
}

int grape__copy_to_pinned(uint64_t dst, uint64_t src, uint64_t n) {
  grape_alloc_t a;
  if (n == 0 || !range_in(src, n, &a) || a.kind > GRAPE_ALLOC_MAPPED)
    return 0;
  return range_in(dst, n, &a) &&
         (a.kind == GRAPE_ALLOC_HOST_PINNED || a.kind == GRAPE_ALLOC_HOST_REGISTERED);
}

/* True when the driver would take memop m: only such a memop is held, since a
 * held call returns success (a misaligned memset or a copy out of range goes
 * to the driver, which returns its own error). */
static int memop_valid(const grape_memop_t* m) {
  if (m->kind == GRAPE_OP_MEMSET)
    return m->p.set.dst % m->p.set.esize == 0 &&
           range_known(m->p.set.dst, m->p.set.count * m->p.set.esize);
  return range_known(m->p.cpy.dst, m->p.cpy.bytes) && range_known(m->p.cpy.src, m->p.cpy.bytes);
}

int grape__hold_memop(const grape_memop_t* m) {
  if (__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) > 0 &&
      grape__stream_capturing(m->stream, m->ptds))
    return 0;
  if (grape__passing())
    return 0;
  uint64_t t0 = grape__shim_time_start();
  uintptr_t key = grape__stream_key(m->stream, m->ptds);
  grape_stream_t* s = grape__stream_of(key);
  grape__order_stream(s, key);
  if (s == NULL || !grape__may_hold(s))
    return 0;
  if (grape__lock_room(s, sizeof(m->p), 0) != 0)
    return 0;
  grape_region_t* r = &s->region;
  grape__hold_check_first(s);
  grape_op_key_t k;
  grape_op_dims_t d;
  memop_sig(m, &k, &d);
  if (r->cursor.node != NULL && !memop_valid(m))
    grape__diverge(s, GRAPE_GC_INVALID_LAUNCH);
  if (r->cursor.node != NULL) {
    const grape_gc_node_t* nx = grape_gc_step(r->cursor.node, &k);
    if (nx != NULL) {
      memcpy(grape__region_next_params(r), &m->p, sizeof(m->p));
      grape__record_op(r, &k, &d, NULL, sizeof(m->p));
      grape__charge_op();
      if (t0 != 0)
        grape__shim_time_end(t0);   /* before the cut it may reach (grape__hold_launch) */
      grape__held_unlock(s, nx);
      return 1;
    }
    grape__diverge(s, GRAPE_GC_DIVERGENCE);
  }
  r->cursor.node = NULL;
  spin_unlock(&s->lock);
  return 0;
}

static void record_memop(const grape_memop_t* m);

void grape__on_memop(const grape_memop_t* m) {
  if (__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) > 0 &&
      grape__stream_capturing(m->stream, m->ptds) == 1)
    return;
  GRAPE_COUNT(submissions);
  if (grape__passed())
    return;
  uint64_t t0 = grape__shim_time_start();
  record_memop(m);
  if (t0 != 0)
    grape__shim_time_end(t0);
}

static void record_memop(const grape_memop_t* m) {
  grape__charge_op();
  grape_stream_t* s = grape__stream_of(grape__stream_key(m->stream, m->ptds));
  if (s == NULL || grape__lock_room(s, sizeof(m->p), 1) != 0)
    return;
  grape_op_key_t k;
  grape_op_dims_t d;
  memop_sig(m, &k, &d);
  memcpy(grape__region_next_params(&s->region), &m->p, sizeof(m->p));
  grape__record_op(&s->region, &k, &d, NULL, sizeof(m->p));
  s->region.cursor.node = NULL;
  spin_unlock(&s->lock);
}
